#!/usr/bin/env bash
# project_validate_counts.sh — the projection's validation across GPU counts: each 4-GPU
# result file (a 1-, 2- and 4-GPU sweep on one machine) projected from its 1-GPU run
# onto the allreduce curves measured on the same machine at 4 GPUs, against the 4-GPU
# efficiency it measured:
#   own n4     the interference and imbalance its own 4-GPU run measured (the timeline check)
#   from n2    those its 2-GPU run measured (--interference-gpus 2): the 4-GPU step predicted
#              from 1 and 2 GPUs and the 4-GPU curve, the way a buyer would use a 2-GPU box
#   none       neither (--no-interference)
#   other n2   those of the OTHER model's 2-GPU run of the same path and overlap
#              (--interference-from OTHER --interference-gpus 2)
#   tools/project_validate_counts.sh [FILES...]   default: results/h200x4-mlp-*.h5
#   COMM_NVLINK=F COMM_HOST=F: the 4-GPU comm files (default: results/h200x4-comm-{nvlink,pcie}.h5)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
DPSCALE=${DPSCALE:-bin/dpscale}
COMM_NVLINK=${COMM_NVLINK:-results/h200x4-comm-nvlink.h5}
COMM_HOST=${COMM_HOST:-results/h200x4-comm-pcie.h5}
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(results/h200x4-mlp-*.h5)
# the 4-GPU row's projected efficiency and error: "projected error"
at4() { "$DPSCALE" project "$@" 2>/dev/null | awk '$1 == 4 && NF == 7 {print $5, $7}'; }
printf '%-48s %8s %8s | %14s %14s %14s %14s\n' file "meas n2" "meas n4" "own n4" "from n2" none "other n2"
for f in "${files[@]}"; do
    comm=$COMM_NVLINK
    case $f in *pcie* | *host*) comm=$COMM_HOST ;; esac
    other=${f/comm-bound/gemm-heavy}
    [ "$other" = "$f" ] && other=${f/gemm-heavy/comm-bound}
    n2=$("$DPSCALE" project "$f" --comm "$comm" 2>/dev/null | awk '$1 == 2 && NF == 7 {print $6}')
    read -r p_own e_own m4 < <("$DPSCALE" project "$f" --comm "$comm" 2>/dev/null | awk '$1 == 4 && NF == 7 {print $5, $7, $6}')
    [ -n "${p_own:-}" ] || continue
    read -r p2 e2 < <(at4 "$f" --comm "$comm" --interference-gpus 2)
    read -r p0 e0 < <(at4 "$f" --comm "$comm" --no-interference)
    read -r pc ec < <(at4 "$f" --comm "$comm" --interference-from "$other" --interference-gpus 2)
    printf '%-48s %8s %8s | %6s %7s %6s %7s %6s %7s %6s %7s\n' "$(basename "$f")" "$n2" "$m4" "$p_own" "$e_own" \
        "$p2" "$e2" "$p0" "$e0" "${pc:--}" "${ec:--}"
done

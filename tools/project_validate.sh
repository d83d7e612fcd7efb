#!/usr/bin/env bash
# project_validate.sh — the projection's validation on committed files: every 2 x H200 result
# file with a 1-GPU and a 2-GPU run is projected from its 1-GPU run onto the same
# machine's measured allreduce curves (results/h200x2-comm-nvlink.h5, or
# results/h200x2-comm-p2p-disabled.h5 for the host path: through host memory, which
# files before schema 6 call pcie), and the projected 2-GPU efficiency is set beside the
# measured one: with the interference and imbalance that the file's 2-GPU run measured;
# without them (the projection from the 1-GPU run and the comm curve alone); and, with
# CAL_NVLINK / CAL_HOST set, with them taken from that other file of the same path
# (--interference-from: one run calibrates the transport, the others are predicted; the
# calibration file itself is left out of that column).
#   tools/project_validate.sh [FILES...]      default: results/h200x2-*.h5 and the issue folders
#   COMM_NVLINK=F COMM_HOST=F COMM_PCIE=F COMM_NET=F: the comm files to project onto (default:
#       the committed ones; none for pcie, peer-to-peer over PCIe, and net, NCCL's network
#       transport, whose files are then skipped)
#   CAL_NVLINK=F CAL_HOST=F CAL_PCIE=F CAL_NET=F: the calibration runs (default: none, no such column)
#   CAL_SET="F..." instead: each file is calibrated on the others of the set that share its
#       path and overlap, the median of their terms (leave one out: another model's runs of
#       the same transport predict this one's slowdown)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
DPSCALE=${DPSCALE:-bin/dpscale}
COMM_NVLINK=${COMM_NVLINK:-results/h200x2-comm-nvlink.h5}
COMM_HOST=${COMM_HOST:-results/h200x2-comm-p2p-disabled.h5} COMM_PCIE=${COMM_PCIE:-} COMM_NET=${COMM_NET:-}
CAL_NVLINK=${CAL_NVLINK:-} CAL_HOST=${CAL_HOST:-} CAL_PCIE=${CAL_PCIE:-} CAL_NET=${CAL_NET:-} CAL_SET=${CAL_SET:-}
files=("$@")
# "PATH OVERLAP" of a result file, or nothing: the path in today's names (the report reads a
# file's pcie before schema 6 as host)
describe() {
    local head path ovl
    head=$("$DPSCALE" project "$1" --comm "$COMM_NVLINK" 2>/dev/null | head -3) || return
    path=$(sed -n 's|.*(runs/[^/]*/\([^/]*\)/n1).*|\1|p' <<<"$head")
    ovl=$(sed -n 's|.*, overlap \([a-z]*\),.*|\1|p' <<<"$head")
    [ -n "$path" ] || return
    [ "$path" = pcie ] && "$DPSCALE" report --format csv "$1" 2>/dev/null | cut -d, -f7 | grep -qx host && path=host
    echo "$path $ovl"
}
declare -A kind_of
for c in $CAL_SET; do kind_of[$c]=$(describe "$c"); done
[ ${#files[@]} -gt 0 ] || files=(results/h200x2-*.h5 results/h200x2-mlp-step-vs-ddp/*.h5 results/h200x2-transformers/*.h5)
printf '%-58s %-6s %-4s %9s %10s %8s %10s %8s %10s %8s\n' file path ovl measured projected error "no-interf" error \
    calibrated error
for f in "${files[@]}"; do
    read -r path ovl <<<"$(describe "$f")"
    [ -n "${path:-}" ] || continue
    case "$path" in
    host) comm=$COMM_HOST cal=$CAL_HOST ;;
    pcie) comm=$COMM_PCIE cal=$CAL_PCIE ;;
    net) comm=$COMM_NET cal=$CAL_NET ;;
    *) comm=$COMM_NVLINK cal=$CAL_NVLINK ;;
    esac
    [ -n "$comm" ] || continue
    with=$("$DPSCALE" project "$f" --comm "$comm" 2>/dev/null | awk '$1 == 2 {print $6, $5, $7}')
    without=$("$DPSCALE" project "$f" --comm "$comm" --no-interference 2>/dev/null | awk '$1 == 2 {print $5, $7}')
    [ -n "$with" ] || continue
    read -r measured projected error <<<"$with"
    read -r projected0 error0 <<<"$without"
    projected1=- error1=-
    cals=()
    if [ -n "$CAL_SET" ]; then
        for c in $CAL_SET; do
            [ "${kind_of[$c]}" = "$path $ovl" ] && [ "$(realpath "$c")" != "$(realpath "$f")" ] && cals+=(--interference-from "$c")
        done
    elif [ -n "$cal" ] && [ "$(realpath "$cal")" != "$(realpath "$f")" ]; then
        cals=(--interference-from "$cal")
    fi
    if [ ${#cals[@]} -gt 0 ]; then
        read -r projected1 error1 < <("$DPSCALE" project "$f" --comm "$comm" "${cals[@]}" 2>/dev/null |
            awk '$1 == 2 {print $5, $7}')
    fi
    printf '%-58s %-6s %-4s %9s %10s %8s %10s %8s %10s %8s\n' "$f" "$path" "$ovl" "$measured" "$projected" "$error" \
        "$projected0" "$error0" "${projected1:--}" "${error1:--}"
done

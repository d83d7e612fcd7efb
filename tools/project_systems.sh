#!/usr/bin/env bash
# project_systems.sh — the README's table of projected efficiencies: each result file's
# 1-GPU step projected onto the catalog's systems (configs/systems/), largest GPU count
# of each, as Markdown. Reads files only.
#   tools/project_systems.sh [RESULT.h5 ...]    default: the presets' NVLink runs of results/h200x2-projection-checks/session7 (2 x H200)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
DPSCALE=${DPSCALE:-bin/dpscale}
files=("$@")
S7=results/h200x2-projection-checks/session7
[ ${#files[@]} -gt 0 ] || files=(results/h200x2-bert-large.h5 $S7/callB/gpt2-small-nvlink-on.h5 $S7/callB/resnet50-nvlink-on.h5
    $S7/callA/gemm-heavy-nvlink-on.h5 $S7/callA/comm-bound-nvlink-on.h5)
systems=(a100-sxm-8 h100-sxm-8 rtx5090-pcie-8 l40s-pcie-8 ib100-nodes ib200-nodes ib400-nodes)
printf '| measured on 2 x H200 |'; for s in "${systems[@]}"; do printf ' %s |' "$s"; done; echo
printf '|---|'; for _ in "${systems[@]}"; do printf -- '---:|'; done; echo
for f in "${files[@]}"; do
    printf '| `%s` |' "${f#results/}"
    for s in "${systems[@]}"; do
        cell=$("$DPSCALE" project "$f" --system "configs/systems/$s.ini" 2>/dev/null |
            awk '$1 ~ /^[0-9]+$/ && NF == 7 {n = $1; e = $5} END {if (n) printf "%s (%d GPUs)", e, n; else printf "error"}')
        printf ' %s |' "$cell"
    done
    echo
done

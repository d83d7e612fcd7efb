#!/usr/bin/env bash
# project_validate_presets.sh — the projection's validation table: every model preset over every
# transport of the 2 x H200 machine, overlap on and off (the fresh runs of one session,
# each call's folder with its own allreduce curves comm-{nvlink,host,net}.h5), projected
# from its 1-GPU run and set beside the 2-GPU efficiency it measured, as Markdown:
#   own:           the interference, forward change and imbalance of the file's own 2-GPU run
#   none:          the 1-GPU profile and the curve alone (--no-interference)
#   other models:  the median of the other presets' runs of the same path and overlap
#                  (--interference-from each: leave one out)
# and the count within the bar (0.03) of each column. Reads files only.
#   tools/project_validate_presets.sh [DIR]      default: results/h200x2-projection-checks/session7
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
DIR=${1:-results/h200x2-projection-checks/session7}
calls=("$DIR"/call*/)
runs() { ls "$1"/*.h5 2>/dev/null | grep -v "/comm-[a-z]*\.h5$"; }
set_all=$(for c in "${calls[@]}"; do [ -f "$c/comm-nvlink.h5" ] && runs "$c"; done | tr '\n' ' ')
echo "| run | path | overlap | measured | own run's terms | error | none | error | other models | error |"
echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"
for c in "${calls[@]}"; do
    [ -f "$c/comm-nvlink.h5" ] || continue
    COMM_NVLINK="$c/comm-nvlink.h5" COMM_HOST="$c/comm-host.h5" COMM_NET="$c/comm-net.h5" CAL_SET="$set_all" \
        tools/project_validate.sh $(runs "$c") | tail -n +2
done | awk 'function within(e) { return e ~ /^[-+]?[0-9.]+$/ && e + 0 <= 0.03 && e + 0 >= -0.03 }
{
    n++; name = $1; sub(".*/", "", name); sub("\\.h5$", "", name)
    printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", name, $2, $3, $4, $5, $6, $7, $8, $9, $10
    if (within($6)) a++
    if (within($8)) b++
    if ($10 != "-") { m++; if (within($10)) c++ }
} END { printf "\nwithin 0.03: own run'"'"'s terms %d / %d, none %d / %d, other models %d / %d\n", a, n, b, n, c, m }'

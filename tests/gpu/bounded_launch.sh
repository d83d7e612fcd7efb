# bounded_launch.sh — sourced by the projection's GPU scripts (calibrate_projection.sh,
# validate_projection.sh): their common start (the repo root, OUT made from $1, the
# environment the GPU machine needs) and run(), one 2-rank launch on the cuda backend
# into $OUT/LABEL.h5, bounded by 120 s and by what is left of BUDGET_S (less MARGIN_S
# for what follows the launches); a launch the budget has no room for is SKIPPED, said so.
#   source tests/gpu/bounded_launch.sh SCRIPT_NAME OUTDIR    (with BUDGET_S and MARGIN_S set)
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
[ -n "${2:-}" ] || { echo "usage: tests/gpu/$1 OUTDIR" >&2; exit 2; }
mkdir -p "$2" || exit 2
OUT=$(cd "$2" && pwd)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
run() { # LABEL ARGS...: 2 ranks, bounded
    local label=$1; shift
    local left=$((BUDGET_S - SECONDS - MARGIN_S))
    ((left > 20)) || { echo "== $label: SKIPPED (budget spent)"; return; }
    echo "== $label [t=${SECONDS}s]"
    timeout -k 10 $((left < 120 ? left : 120)) mpirun -np 2 --bind-to none bin/dpscale "$@" --run.backend=cuda \
        --run.output_dir="$OUT" --run.output="$label.h5" </dev/null 2>&1 | grep -E "^nccl|error" || true
}

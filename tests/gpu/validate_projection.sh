#!/usr/bin/env bash
# validate_projection.sh — the projection against fresh runs on the 2-GPU machine: this
# machine's allreduce curves (dpscale comm over each path the groups use), then every
# model preset on 1 and 2 GPUs over each transport, overlap on and off — files that hold
# the measured bucket ready times — and tools/project_validate.sh on them (projected
# against measured 2-GPU efficiency; the calibrated column takes the terms from the other
# models' runs of the same path and overlap, their median: leave one out).
#   tests/gpu/validate_projection.sh OUTDIR [GROUP...]   from the repo root, bin/dpscale prebuilt
# GROUPs (default: mlp models):
#   mlp     mlp-gemm-heavy, mlp-comm-bound  x  nvlink, host  x  overlap on, off
#   models  bert-large, gpt2-small, resnet50  x  nvlink, host  x  overlap on, off
#   net     NCCL's network transport (sockets here): the models of the other groups, 10 steps,
#           overlap on (and the comm-bound MLP with overlap off)
# The curves: comm-nvlink and comm-host (SM copies) for mlp and models, comm-net for net
# (dpscale comm refuses the copy engines, comm.shm_copy = ce: NCCL stalls its sweep).
# Each launch is bounded by 120 s; the whole by PROJECTION_BUDGET_S (default 540 s).
set -uo pipefail
BUDGET_S=${PROJECTION_BUDGET_S:-540} MARGIN_S=30
source "$(dirname "$0")/bounded_launch.sh" validate_projection.sh "${1:-}"
shift
groups=("$@")
[ ${#groups[@]} -gt 0 ] || groups=(mlp models)
has() { [[ " ${groups[*]} " == *" $1 "* ]]; }
preset() { # NAME: the config and the step count of a launch (the transformers and the ResNet: 20 steps)
    case $1 in
    mlp-*) echo "--config configs/$1.ini" ;;
    *) echo "--config configs/$1.ini --train.iters=20" ;;
    esac
}
{
    if has mlp || has models; then
        run comm-nvlink comm --comm.path=nvlink
        run comm-host comm --comm.path=host
    fi
    has net && run comm-net comm --comm.path=net --collective.max_mib=256
    models=()
    has mlp && models+=(mlp-gemm-heavy mlp-comm-bound)
    has models && models+=(bert-large gpt2-small resnet50)
    for path in nvlink host; do
        for ov in on off; do
            for m in "${models[@]}"; do
                # shellcheck disable=SC2046
                run "${m#mlp-}-$path-$ov" run $(preset "$m") --comm.path=$path --comm.overlap=$ov --run.sweep=1,2
            done
        done
    done
    if has net; then # the selected models over the network transport, overlap on (the comm-bound MLP: and off)
        for m in "${models[@]}"; do
            # shellcheck disable=SC2046
            run "${m#mlp-}-net-on" run $(preset "$m") --train.iters=10 --comm.path=net --run.sweep=1,2
        done
        has mlp && run comm-bound-net-off run --config configs/mlp-comm-bound.ini --train.iters=10 --comm.path=net \
            --comm.overlap=off --run.sweep=1,2
    fi
    echo "== projected against measured (this machine's curves of this call)"
    runs=$(ls "$OUT"/*.h5 | grep -vE "/comm-(nvlink|host|net)\.h5$")
    # shellcheck disable=SC2086
    COMM_NVLINK="$OUT/comm-nvlink.h5" COMM_HOST="$OUT/comm-host.h5" COMM_NET="$OUT/comm-net.h5" \
        CAL_SET="$(echo $runs)" tools/project_validate.sh $runs
    echo "== ${SECONDS} s"
} 2>&1 | tee "$OUT/validate-projection.log"
# one archive: the device tool returns a limited number of files
tar -cf "$OUT/validate-projection-h5.tar" -C "$OUT" $(cd "$OUT" && ls *.h5) && rm -f "$OUT"/*.h5

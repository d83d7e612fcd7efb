#!/usr/bin/env bash
# memory_plan.sh — the device side of the memory plan, on a GPU machine:
# each rank's planned device bytes (the "memory plan per rank" line dpscale prints)
# against the device memory the run really held, sampled by nvidia-smi every 20 ms.
# The CUDA context, cuBLAS's workspaces and NCCL's buffers are no buffer of the
# plan's: a small run of the same launch (a tiny model) measures them, and
#   (peak used - tiny run's peak used) / (plan - tiny run's plan) - 1
# is the plan's error on what it plans. Prints one line per case; exits 1 when a
# case is off by more than 10 %.
#   tests/gpu/memory_plan.sh OUTDIR
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
OUT=${1:?usage: tests/gpu/memory_plan.sh OUTDIR}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
bad=0
# peak of the sum over GPUs 0..NP-1 of memory.used (MiB) while the command runs; plan (GiB, device, rank 0)
measure() { # NP LABEL ARGS...
    local np=$1 label=$2; shift 2
    local log="$OUT/$label.smi"
    nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits -lms 20 >"$log" 2>/dev/null &
    local smi=$!
    sleep 0.5
    timeout 150 mpirun -np "$np" --bind-to none bin/dpscale run "$@" --run.backend=cuda --run.output_dir="$OUT" \
        --run.output="$label.h5" >"$OUT/$label.log" 2>&1
    local rc=$?
    kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
    local plan peak
    plan=$(sed -n 's/.*plan per rank n=[0-9]* [0-9.]* GiB (device \([0-9.]*\),.*/\1/p' "$OUT/$label.log" | head -1)
    # the largest per-GPU reading less that GPU's first (idle) reading
    peak=$(awk -F', ' '!($1 in first) {first[$1] = $2} {d = $2 - first[$1]; if (d > m) m = d} END {print m + 0}' "$log")
    echo "$label $rc $plan $peak"
}
report() { # LABEL BASE: the plan's error on the bytes it plans
    read -r l rc plan peak <<<"$1"
    read -r _ rc0 plan0 peak0 <<<"$2"
    if [ "$rc" != 0 ] || [ "$rc0" != 0 ] || [ -z "$plan" ] || [ -z "$plan0" ]; then
        echo "$l: FAIL (exit $rc / $rc0; see $OUT/$l.log)"; bad=1; return
    fi
    awk -v l="$l" -v p="$plan" -v p0="$plan0" -v k="$peak" -v k0="$peak0" 'BEGIN {
        planned = (p - p0) * 1024; held = k - k0; err = held / planned - 1
        printf "%s: planned %.0f MiB more than the tiny run, held %.0f MiB more (peak %.0f MiB per GPU): %+.1f%% %s\n",
            l, planned, held, k, 100 * err, (err <= 0.10 && err >= -0.10) ? "PASS" : "FAIL"
        exit (err <= 0.10 && err >= -0.10) ? 0 : 1 }' || bad=1
}
T="--train.warmup=2 --train.iters=3"
base=$(measure 1 tiny-n1 --config configs/mlp-tiny.ini --run.sweep=1 $T)
report "$(measure 1 mlp-gemm-heavy-n1 --config configs/mlp-gemm-heavy.ini --run.sweep=1 $T)" "$base"
report "$(measure 1 bert-large-n1 --config configs/bert-large.ini --run.sweep=1 $T)" "$base"
report "$(measure 1 resnet50-n1 --config configs/resnet50.ini --run.sweep=1 $T)" "$base"
report "$(measure 2 gpt2-small-n2 --config configs/gpt2-small.ini --run.sweep=2 $T)" \
    "$(measure 2 tiny-n2 --config configs/mlp-tiny.ini --run.sweep=2 $T)"
report "$(measure 2 gpt2-small-zero1-n2 --config configs/gpt2-small.ini --run.sweep=2 --comm.shard_optimizer=on \
    --train.optimizer=adamw $T)" "$(measure 2 tiny-zero1-n2 --config configs/mlp-tiny.ini --run.sweep=2 \
    --comm.shard_optimizer=on --train.optimizer=adamw $T)"
rm -f "$OUT"/*.h5
exit $bad

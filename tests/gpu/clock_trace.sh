#!/usr/bin/env bash
# clock_trace.sh — SM clock and power of every GPU, sampled every 100 ms by
# nvidia-smi, around one 2-GPU run of the GEMM-heavy preset (overlap on), to see
# whether the backward pass slows beside NCCL because the GPUs are at their power
# limit (the clock drops in the real pass, not in the compute-only pass).
#   tests/gpu/clock_trace.sh OUTDIR
set -u
cd "$(dirname "$0")/../.."
OUT=${1:?usage: clock_trace.sh OUTDIR}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,utilization.gpu --format=csv,noheader,nounits \
    -lms 100 >"$OUT/clock.csv" &
sampler=$!
sleep 1
date -u +"start %H:%M:%S.%N" | tee "$OUT/marks.txt"
mpirun --bind-to none -np 2 bin/dpscale run --config configs/mlp-gemm-heavy.ini --sweep=2 --train.iters=60 \
    --run.output_dir="$OUT" --run.output=clock-run.h5 | tee "$OUT/run.log" | grep -E "^nccl/auto +2"
date -u +"end %H:%M:%S.%N" | tee -a "$OUT/marks.txt"
kill $sampler

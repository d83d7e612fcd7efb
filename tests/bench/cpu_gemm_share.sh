#!/usr/bin/env bash
# cpu_gemm_share.sh — the CPU benchmark of the training step (make bench).
# Prints, for the default model (configs/mlp-small.ini) on one rank, the step split
# by phase and the share of the step that OpenBLAS's sgemm takes, measured against
# the same GEMMs alone on the same shapes in the same process. Target: >= 0.85.
#
# OpenBLAS 0.3.21 takes some virtualised AVX-512 CPUs for a Prescott and runs its
# SSE3 kernels; when it does, this script names the right core type for it and
# says so, since the GEMM floor is what the share is measured against.
set -euo pipefail
cd "$(dirname "$0")/../.."
CONFIG=${CONFIG:-configs/mlp-small.ini}
export OMPI_MCA_btl_vader_single_copy_mechanism=none
if [ -z "${OPENBLAS_CORETYPE:-}" ] && grep -q avx2 /proc/cpuinfo; then
    probe=$(bin/dpscale bench --config "$CONFIG" --train.iters=1 --train.warmup=0 2>&1 || true)
    if [[ $probe == *Prescott* ]]; then
        core=Haswell; grep -q avx512f /proc/cpuinfo && core=SkylakeX
        echo "note: OpenBLAS misdetected this CPU as Prescott; running with OPENBLAS_CORETYPE=$core"
        export OPENBLAS_CORETYPE=$core
    fi
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
for threads in 0 1; do
    echo
    echo "== bin/dpscale bench --config $CONFIG --run.threads=$threads   (0 = all cores of the machine)"
    bin/dpscale bench --config "$CONFIG" --run.threads=$threads --train.iters=30 "$@"
done

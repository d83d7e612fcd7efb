#!/usr/bin/env bash
# cpu_gemm_share.sh — the CPU benchmark of the training step (make bench).
# Prints, for the default model (configs/mlp-small.ini) on one rank, the step split
# by phase and the share of the step that OpenBLAS's sgemm takes, measured against
# the same GEMMs alone on the same shapes in the same process. Target: >= 0.85.
#
# Where OpenBLAS 0.3.21 takes a virtualised AVX-512 CPU for a Prescott, dpscale starts
# itself again with the right OPENBLAS_CORETYPE (backend.h); the core it ran is in the
# library string of the header line.
set -euo pipefail
cd "$(dirname "$0")/../.."
CONFIG=${CONFIG:-configs/mlp-small.ini}
export OMPI_MCA_btl_vader_single_copy_mechanism=none
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
for threads in 0 1; do
    echo
    echo "== bin/dpscale bench --config $CONFIG --run.threads=$threads   (0 = all cores of the machine)"
    bin/dpscale bench --config "$CONFIG" --run.threads=$threads --train.iters=30 "$@"
done

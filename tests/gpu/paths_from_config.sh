#!/usr/bin/env bash
# paths_from_config.sh — the launcher reads comm.paths from a config and runs one
# launch per path (comm.path), each proven by the NVLink counters, on a GPU node.
#   tests/gpu/paths_from_config.sh OUTDIR
set -eu
cd "$(dirname "$0")/../.."
OUT=${1:?usage: paths_from_config.sh OUTDIR}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
{ cat configs/mlp-medium.ini; printf '\n[comm]\npaths = nvlink,host\n'; } >"$OUT/two.ini"
unset PATHS TRANSPORTS
OUTDIR=$OUT NAME=cfg LAUNCHER="mpirun --bind-to none -np 2" jobs/lib/sweep.sh --config "$OUT/two.ini" \
    --backend=cuda --precision=bf16 --train.batch_per_gpu=4096 --sweep=1,2
for p in nvlink host; do
    bin/dpscale config --config "$OUT/two.ini" --get comm.paths
    # schema 2: /runs/<library>/<path>/n<N>
    python3 -c "import h5py,sys; g=h5py.File(sys.argv[1])['runs']['nccl'][sys.argv[2]]['n2']; print(sys.argv[2], g.attrs['path_proof'])" \
        "$OUT/cfg-$p.h5" "$p"
done

#!/usr/bin/env bash
# scale_node.sh — the measurements of one whole GPU node, through the job
# scripts, with mpirun standing in for srun (for a lent machine outside Slurm):
#   tests/gpu/scale_node.sh OUTDIR
# 1. dpscale topo; 2. dpscale comm over NVLink and through host memory (comm.path host;
# on a node without NVLink, peer-to-peer over PCIe and host memory); 3. jobs/scale8.sh
# on the largest preset (mlp-gemm-heavy) and a mid-size one (mlp-comm-bound), its default
# paths (nvlink,host; pcie,host without NVLink; files <preset>-overlap-<on|off>-<path>.h5),
# overlap on and off; then the report of everything, as tables and a plot. The files of
# results/h200x4-*-pcie.h5 were made by this script when host was called pcie.
set -u
cd "$(dirname "$0")/../.."
OUT=${1:?usage: scale_node.sh OUTDIR}
mkdir -p "$OUT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 LAUNCH=mpirun OUTDIR=$OUT
ngpus=$(nvidia-smi -L | wc -l)
echo "== 1. topology"; bin/dpscale topo --backend=cuda --run.output_dir="$OUT" --run.output=topo.h5
source jobs/lib/common.sh
paths="nvlink host"
[ "$(nvlink_on_node)" = no ] && paths="pcie host"
for p in $paths; do
    echo "== 2. allreduce bandwidth, path $p"
    mpirun --bind-to none -np "$ngpus" bin/dpscale comm --backend=cuda --comm.path=$p \
        --run.output_dir="$OUT" --run.output=comm-$p.h5
done
for preset in mlp-gemm-heavy mlp-comm-bound; do
    for overlap in on off; do
        echo "== 3. $preset, overlap $overlap"
        CONFIG=configs/$preset.ini NAME=$preset-overlap-$overlap jobs/scale8.sh --comm.overlap=$overlap
    done
done
echo "== report"
bin/dpscale report --compare --plot "$OUT/scale.png" "$OUT"/mlp-gemm-heavy-overlap-on-*.h5 "$OUT"/mlp-gemm-heavy-overlap-off-*.h5
bin/dpscale report --compare "$OUT"/mlp-comm-bound-overlap-*.h5
bin/dpscale report --format csv "$OUT"/mlp-*.h5 > "$OUT/scale.csv"

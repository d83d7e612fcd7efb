#!/usr/bin/env bash
# session 7, call E (2 x H200): why the network transport's dpscale comm sweep (2.8 GB/s at
# 64 MiB) is slower than the comm-bound MLP's own allreduces alone (3.3 GB/s, 67 MB buckets):
# NCCL's socket and channel setup of each, and the sweep at the buckets' exact size.
set -u
OUT=$1
exec > >(tee $OUT/callE.log) 2>&1
T0=$(date +%s)
tar xJf .scratch/bins.tar.xz || exit 3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
L() { # LABEL ARGS...
    local label=$1; shift
    NCCL_DEBUG=INFO timeout -k 5 60 mpirun -np 2 --bind-to none bin/dpscale "$@" --run.backend=cuda \
        --run.output_dir=$OUT/e --run.output=$label.h5 </dev/null >$OUT/e/$label.log 2>&1
    echo "== $label: rc=$? at $(( $(date +%s) - T0 )) s"
    grep -E "NET/Socket|nchannels|coll channels|Channel 00|^nccl|^ +[0-9]+ +[0-9]+ " $OUT/e/$label.log | sort | uniq -c | head -20
}
mkdir -p $OUT/e
# 16781312 fp32 elements = 67,125,248 bytes = 64.0156 MiB, the MLP's bucket
L comm-net-64 comm --comm.path=net --collective.min_mib=64.015625 --collective.max_mib=64.015625 --collective.iters=10
L comm-bound-net-on run --config configs/mlp-comm-bound.ini --train.iters=5 --train.warmup=2 --comm.path=net --run.sweep=2
L comm-net-64-oop comm --comm.path=net --collective.min_mib=64.015625 --collective.max_mib=64.015625 --collective.iters=10 --collective.in_place=off
tar czf $OUT/e.tgz -C $OUT e && rm -rf $OUT/e
echo "done at $(( $(date +%s) - T0 )) s"

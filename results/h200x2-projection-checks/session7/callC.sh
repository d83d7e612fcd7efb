#!/usr/bin/env bash
# session 7, call C (2 x H200): where the copy-engine allreduce stops (sizes, NCCL's
# protocols), the copy-engine curve over the sizes that run, and memory_plan.sh (with the
# ResNet-50 case added).
set -u
OUT=$1
exec > >(tee $OUT/callC.log) 2>&1
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
tar xJf .scratch/bins.tar.xz || exit 3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
mkdir -p $OUT/probe
probe() { # LABEL ENV... -- ARGS...: dpscale comm through host memory, copy engines, bounded by 15 s
    local label=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
    env "${envs[@]}" timeout -k 3 15 mpirun -np 2 --bind-to none bin/dpscale comm --comm.path=host --comm.shm_copy=ce \
        --run.backend=cuda --run.output_dir=$OUT/probe --run.output=$label.h5 "$@" >$OUT/probe/$label.log 2>&1
    echo "== $label ($*) ${envs[*]}: rc=$? at $(el) s"
    grep -E "^ +[0-9]+ +[0-9]+ " $OUT/probe/$label.log | head -8
}
probe p6-simple-1-4 NCCL_DEBUG=WARN NCCL_PROTO=Simple -- --collective.max_mib=4
probe p7-8mib NCCL_DEBUG=WARN -- --collective.min_mib=8 --collective.max_mib=8
probe p8-16mib NCCL_DEBUG=WARN -- --collective.min_mib=16 --collective.max_mib=16
probe p9-ll128 NCCL_DEBUG=WARN NCCL_PROTO=LL128 -- --collective.min_mib=1 --collective.max_mib=1
probe p10-ll NCCL_DEBUG=WARN NCCL_PROTO=LL -- --collective.min_mib=1 --collective.max_mib=1
probe comm-host-ce-16m-1g NCCL_DEBUG=WARN -- --collective.min_mib=16 --collective.max_mib=1024
probe comm-host-ce-simple NCCL_DEBUG=WARN NCCL_PROTO=Simple -- --collective.max_mib=1024
timeout 250 tests/gpu/memory_plan.sh $OUT/mem >$OUT/memory-plan.log 2>&1
echo "memory_plan rc=$? at $(el) s"; cat $OUT/memory-plan.log | grep -E "PASS|FAIL|planned" | head
rm -f $OUT/mem/*.smi
tar czf $OUT/probe.tgz -C $OUT probe mem && rm -rf $OUT/probe $OUT/mem
echo "done at $(el) s"

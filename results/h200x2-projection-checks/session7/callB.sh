#!/usr/bin/env bash
# session 7, call B (2 x H200): issue 13's fresh sweep of the transformers and the ResNet
# (NVLink and host memory, overlap on and off; and over NCCL's network transport), then
# variants of the copy-engine dpscale comm that hangs, each bounded by 15 s, with the
# ranks' thread states from /proc (no gdb there).
set -u
OUT=$1
exec > >(tee $OUT/callB.log) 2>&1
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
tar xJf .scratch/bins.tar.xz || exit 3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
bin/dpscale --version | head -1
ISSUE13_BUDGET_S=${CALLB_SWEEP_S:-455} tests/gpu/issue13_validate.sh $OUT/v models net >/dev/null 2>&1
echo "issue13_validate models net rc=$? at $(el) s"; tail -40 $OUT/v/issue13.log
mkdir -p $OUT/probe
probe() { # LABEL ENV... -- ARGS...: dpscale comm through host memory, copy engines, bounded by 15 s
    local label=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
    ( env "${envs[@]}" timeout -k 3 15 mpirun -np 2 --bind-to none bin/dpscale comm --comm.path=host --comm.shm_copy=ce \
        --run.backend=cuda --run.output_dir=$OUT/probe --run.output=$label.h5 "$@" >$OUT/probe/$label.log 2>&1
      echo "rc=$?" >>$OUT/probe/$label.log ) &
    local pid=$! t=0
    while kill -0 $pid 2>/dev/null && ((t < 10)); do sleep 1; t=$((t + 1)); done
    if kill -0 $pid 2>/dev/null; then
        for p in $(pgrep -x dpscale); do
            for tk in /proc/$p/task/*; do
                echo "pid $p tid ${tk##*/} $(cat $tk/comm) state $(awk '{print $3}' $tk/stat) wchan $(cat $tk/wchan) utime $(awk '{print $14}' $tk/stat)"
            done
        done >$OUT/probe/$label-threads.txt 2>&1
    fi
    wait $pid
    echo "== $label ($*) ${envs[*]}: $(tail -1 $OUT/probe/$label.log) after ${t}s"
    grep -E "^ +[0-9]+ +[0-9]+ " $OUT/probe/$label.log | head -8
    [ -f $OUT/probe/$label-threads.txt ] && grep -v "state S" $OUT/probe/$label-threads.txt | head -12
}
probe p1-default NCCL_DEBUG=WARN -- --collective.max_mib=4
probe p2-bf16 NCCL_DEBUG=WARN -- --collective.max_mib=4 --collective.dtype=bf16
probe p3-outofplace NCCL_DEBUG=WARN -- --collective.max_mib=4 --collective.in_place=off
probe p4-mode1 NCCL_DEBUG=WARN NCCL_SHM_USE_CUDA_MEMCPY=1 NCCL_SHM_MEMCPY_MODE=1 -- --comm.shm_copy=sm --collective.max_mib=4
probe p5-64mib NCCL_DEBUG=WARN -- --collective.min_mib=64 --collective.max_mib=64 --collective.warmup=1 --collective.iters=2
echo "== probes done at $(el) s"
tar czf $OUT/probe.tgz -C $OUT probe && rm -rf $OUT/probe
echo "done at $(el) s"

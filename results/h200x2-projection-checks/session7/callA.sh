#!/usr/bin/env bash
# session 7, call A (2 x H200): the copy-engine hang of dpscale comm, old binary against
# the fixed one (stacks of a hung rank); the ResNet's GPU tests not yet run (test_resnet_cuda's
# C = 4096 and in-place cases, resnet.sh correctness); issue 13's fresh MLP and network sweeps.
set -u
OUT=$1
exec > >(tee $OUT/callA.log) 2>&1
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
tar xJf .scratch/bins.tar.xz || exit 3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
bin/dpscale --version | head -1; bin/dpscale-old --version | head -1
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv
which gdb eu-stack 2>&1 | head -2
mkdir -p $OUT/probe
probe() { # BIN LABEL: dpscale comm through host memory with copy-engine copies, 1-4 MiB, bounded by 40 s
    local bin=$1 label=$2
    ( NCCL_DEBUG=INFO timeout -k 5 40 mpirun -np 2 --bind-to none $bin comm --comm.path=host --comm.shm_copy=ce \
        --collective.max_mib=4 --run.backend=cuda --run.output_dir=$OUT/probe --run.output=$label.h5 \
        >$OUT/probe/$label.log 2>&1; echo "rc=$?" >>$OUT/probe/$label.log ) &
    local pid=$! t=0
    while kill -0 $pid 2>/dev/null && ((t < 25)); do sleep 1; t=$((t + 1)); done
    if kill -0 $pid 2>/dev/null; then
        echo "$label: still running after 25 s; stacks:"
        for p in $(pgrep -x "$(basename $bin)"); do
            echo "--- pid $p"
            timeout 20 gdb -p $p -batch -ex "thread apply all bt 12" 2>/dev/null | grep -E "^#|^Thread" | head -80
        done >$OUT/probe/$label-stacks.txt
        head -60 $OUT/probe/$label-stacks.txt
    fi
    wait $pid
    echo "$label after ${t}s:"; grep -E "allreduce over|^ +[0-9]+ |rc=|error|SHM|via" $OUT/probe/$label.log | head -20
}
probe bin/dpscale-old old
probe bin/dpscale new
echo "== probes done at $(el) s"
timeout 60 bin/tests/test_resnet_cuda 2>&1 | tail -15; echo "test_resnet_cuda rc=$? at $(el) s"
RESNET_SHORT_S=60 timeout 200 tests/gpu/resnet.sh $OUT/c correctness >$OUT/resnet-correctness.log 2>&1
echo "resnet.sh correctness rc=$? at $(el) s"; grep -E "PASS|FAIL|INFO" $OUT/resnet-correctness.log | cut -c1-200 | tail -40
[ -d $OUT/c ] && tar czf $OUT/resnet-c.tgz -C $OUT c && rm -rf $OUT/c
LEFT=$(( 575 - $(el) ))
ISSUE13_BUDGET_S=$LEFT tests/gpu/issue13_validate.sh $OUT/v mlp net >/dev/null 2>&1
echo "issue13_validate mlp net rc=$? at $(el) s"; cat $OUT/v/issue13.log | tail -60
tar czf $OUT/probe.tgz -C $OUT probe && rm -rf $OUT/probe
echo "done at $(el) s"

#!/usr/bin/env bash
# session 6, call 5: issue 12's BERT-Large over NVLink again (sections B and W of issue12_bench.sh:
# how the 0.95 bar holds from call to call), and the host-memory allreduce curve with the copies on
# the copy engines up to 256 MiB (issue 13's calibration: call 4's full curve ran past its 120 s bound)
set -u
OUT=$1
exec > >(tee $OUT/call5.log) 2>&1
tar xJf .scratch/bins.tar.xz || exit 3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
bin/dpscale --version | head -1
timeout 110 mpirun --bind-to none -np 2 bin/dpscale comm --comm.path=host --comm.shm_copy=ce --collective.max_mib=256 \
    --run.output_dir=$OUT -o comm-host-ce.h5
echo "comm rc=$?"
mkdir -p $OUT/b12; ISSUE12_BUDGET_S=330 timeout 360 tests/gpu/issue12_bench.sh $OUT/b12 BW
echo "issue12 rc=$?"
ls -la $OUT $OUT/b12

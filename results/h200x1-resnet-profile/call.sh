#!/usr/bin/env bash
# call 4: where ResNet-50's step goes, dpscale and torch.compile (for the next change)
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 PYTHON=python3
python3 -c "import tarfile; tarfile.open('build/gpu/bins.tar.xz').extractall('build/gpu')" || exit 3
L=/tmp/c4; mkdir -p $L
date -u
timeout 100 build/gpu/bin/dpscale bench --config configs/resnet50.ini > $L/bench-resnet50.log 2>&1; echo "== bench rc=$?"
grep -E "^step|GEMM" $L/bench-resnet50.log | head -5; sed -n '/where the step goes/,/largest/p' $L/bench-resnet50.log | head -24
timeout 200 python3 tests/gpu/torch_step_profile.py resnet50 --batch 256 --steps 5 --top 40 > $L/torch-profile-resnet50.log 2>&1; echo "== torch profile rc=$?"
tail -70 $L/torch-profile-resnet50.log
tar -C /tmp -czf $OUT/call4-logs.tar.gz c4
date -u

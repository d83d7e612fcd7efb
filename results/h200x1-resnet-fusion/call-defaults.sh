#!/usr/bin/env bash
# The defaults after call.sh: the implicit weight gradient off (opt-in), the staged LayerNorm
# backward on; dpscale bench of ResNet-50, GPT-2 small and BERT-Large (all positions) on one H200.
# Binaries: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-resnet-fusion/call-defaults.sh
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
python3 -c "import tarfile; tarfile.open('build/gpu/bins.tar.xz').extractall('build/gpu')" || exit 3
D=build/gpu/bin/dpscale
L=/tmp/defaults; mkdir -p $L
date -u; $D --version 2>&1 | head -1
bench() { local n=$1; shift; timeout 120 "$@" --run.output_dir=$L > $L/bench-$n.log 2>&1; echo "== bench $n rc=$?"; grep -E "^step|GEMM FLOP rate" $L/bench-$n.log; sed -n '/where the step goes/,/largest/p' $L/bench-$n.log | head -14; }
bench resnet50 $D bench --config configs/resnet50.ini
bench gpt2-small $D bench --config configs/gpt2-small.ini
bench bert-large $D bench --config configs/bert-large.ini --model.mask_fraction=1
rm -f $L/*.h5
tar -C /tmp -czf $OUT/defaults-logs.tar.gz defaults
date -u

#!/usr/bin/env bash
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 PYTHON=python3
python3 -c "import tarfile; tarfile.open('build/gpu/bins.tar.xz').extractall('build/gpu')" || exit 3
L=$OUT/tests; mkdir -p $L
ok() { local t=$1 n=$2; shift 2; local t0=$SECONDS; if timeout $t "$@" > $L/$n.log 2>&1; then echo "== $n: PASS ($((SECONDS-t0)) s)"; else echo "== $n: FAIL ($?)"; tail -6 $L/$n.log; fi; }
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ok 60 transformer_cuda build/gpu/bin/tests/test_transformer_cuda; grep -iE " us|floor|passed|FAIL" $L/transformer_cuda.log | head -12
ok 40 resnet_cuda build/gpu/bin/tests/test_resnet_cuda; grep -iE "passed|FAIL" $L/resnet_cuda.log | head -6
ok 90 fa_cuda build/gpu/bin/tests/test_flash_attention_cuda; grep -iE "TFLOP|err|passed|FAIL" $L/fa_cuda.log | head -30
left=$((585 - SECONDS))
echo "== bench_peers with $left s"
DPSCALE=build/gpu/bin/dpscale BENCH_PEERS_BUDGET_S=$left BENCH_PEERS_TORCH_XL=off LLMC_DIR=build/peers-src/llm.c CUDNN_FRONTEND_DIR=build/peers-src/cudnn-frontend tests/gpu/bench_peers.sh $OUT/peers > $OUT/peers.stdout 2>&1
echo "== bench_peers rc=$?"
grep -E "^== |^PEERS|^\|" $OUT/peers.stdout | grep -vE "^== .*(libraries)" | tail -40
rm -rf $OUT/peers/h5
date -u

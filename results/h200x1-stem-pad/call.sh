#!/usr/bin/env bash
# The stem's im2col rows padded from 147 to 152 elements (16-byte aligned rows for its GEMMs),
# on one H200: the ResNet kernels against the CPU's bits (padded shapes among them), the ResNet
# GPU correctness suite (tests/gpu/resnet.sh correctness: loss curves, gradcheck, PyTorch),
# dpscale bench of ResNet-50, then ResNet-50 beside torch.compile in one call
# (tests/gpu/bench_peers.sh with BENCH_PEERS_MODELS=resnet50).
# Carried: build/gpu/bins.tar.xz (bin/dpscale, bin/tests/*); from the repository root:
# bash results/h200x1-stem-pad/call.sh
source tests/gpu/lent_call.sh /tmp/stem-pad/tests
ok 150 resnet_kernels $T/test_resnet_cuda; grep -E "FAILED|passed|^FAIL" $L/resnet_kernels.log | head -20
ok 300 resnet_correctness bash tests/gpu/resnet.sh $L/suite correctness
grep -E "PASS|FAIL|INFO|SKIP" $L/suite/results.txt 2>/dev/null | head -40
bench resnet50 $D bench --config configs/resnet50.ini
grep -E " (147|152) |im2col|row copy" $L/bench-resnet50.log | head -20
left=$((560 - SECONDS - 15))
echo "== bench_peers with $left s"
DPSCALE=$D BENCH_PEERS_BUDGET_S=$left BENCH_PEERS_MODELS=resnet50 tests/gpu/bench_peers.sh /tmp/stem-pad/peers > /tmp/stem-pad/peers.stdout 2>&1
echo "== bench_peers rc=$?"
grep -E "^PEERS|^\|" /tmp/stem-pad/peers.stdout | tail -6
rm -rf /tmp/stem-pad/peers/h5 $L/*.h5 $L/suite/*.h5
tar -C /tmp -czf "$OUT/stem-pad-logs.tar.gz" stem-pad
date -u

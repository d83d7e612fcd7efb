#!/usr/bin/env bash
# Batch norm's statistics from the forward convolutions' epilogues (CUTLASS 3 epilogue visitor
# trees: the implicit GEMMs and a GEMM for the 1x1s and the cols), and the statistics' partial
# passes taking their chunks last to first (the L2's rows), on one H200: the ResNet kernels'
# tests (test_conv_sm90_cuda with the sums' checks and timings, test_resnet_cuda,
# test_conv_wgrad_cuda), the ResNet GPU correctness suite, dpscale bench of ResNet-50 with both
# changes, without the sums (DPSCALE_BN_STATS=pass) and with the passes in ascending order
# (DPSCALE_BN_ORDER=ascending), twice interleaved, then ResNet-50 beside torch.compile.
# Carried: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-bn-stats-epilogue/call.sh
source tests/gpu/lent_call.sh /tmp/bn-stats/tests
ok 150 conv_sm90 $T/test_conv_sm90_cuda; grep -vE "^ok " $L/conv_sm90.log | head -40
ok 150 resnet_kernels $T/test_resnet_cuda; grep -E "FAILED|passed|^FAIL|differ" $L/resnet_kernels.log | head -20
ok 200 conv_wgrad $T/test_conv_wgrad_cuda; grep -E "FAILED|passed|^FAIL" $L/conv_wgrad.log | head -10
ok 200 resnet_correctness bash tests/gpu/resnet.sh $L/suite correctness
grep -E "FAIL|INFO|SKIP" $L/suite/results.txt 2>/dev/null | head -20; grep -c PASS $L/suite/results.txt
for round in 1 2; do
    bench "resnet50-$round" $D bench --config configs/resnet50.ini | grep -E "^step|batchnorm|convolution|^gemm "
    bench "resnet50-pass-$round" env DPSCALE_BN_STATS=pass $D bench --config configs/resnet50.ini | grep -E "^step|batchnorm|convolution|^gemm "
    bench "resnet50-ascending-$round" env DPSCALE_BN_ORDER=ascending $D bench --config configs/resnet50.ini | grep -E "^step|batchnorm|convolution|^gemm "
done
left=$((560 - SECONDS - 15))
echo "== bench_peers with $left s"
if ((left > 90)); then
    DPSCALE=$D BENCH_PEERS_BUDGET_S=$left BENCH_PEERS_MODELS=resnet50 tests/gpu/bench_peers.sh /tmp/bn-stats/peers > /tmp/bn-stats/peers.stdout 2>&1
    echo "== bench_peers rc=$?"
    grep -E "^PEERS|^\|" /tmp/bn-stats/peers.stdout | tail -6
fi
rm -rf /tmp/bn-stats/peers/h5 $L/*.h5 $L/suite/*.h5
tar -C /tmp -czf "$OUT/bn-stats-logs.tar.gz" bn-stats
date -u

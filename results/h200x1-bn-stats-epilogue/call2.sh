#!/usr/bin/env bash
# The second call: the sums' epilogue opt-in (DPSCALE_BN_STATS=epilogue), its test with the
# plain forward's output fixed; the partial passes' chunk order as an A/B in one call (main:
# descending; DPSCALE_BN_ORDER=ascending), twice interleaved; the ResNet GPU suite on main's
# defaults; then ResNet-50 beside torch.compile.
# Carried: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-bn-stats-epilogue/call2.sh
source tests/gpu/lent_call.sh /tmp/bn-stats2/tests
ok 150 conv_sm90 $T/test_conv_sm90_cuda; grep -vE "^ok " $L/conv_sm90.log | grep -v "^    [a-z]* *[0-9]*x[0-9]*x" | head -30
ok 150 resnet_kernels $T/test_resnet_cuda; grep -E "FAILED|passed|^FAIL" $L/resnet_kernels.log | head -10
for round in 1 2; do
    bench "resnet50-$round" $D bench --config configs/resnet50.ini | grep -E "^step|batchnorm|convolution|^gemm "
    bench "resnet50-ascending-$round" env DPSCALE_BN_ORDER=ascending $D bench --config configs/resnet50.ini | grep -E "^step|batchnorm|convolution|^gemm "
done
ok 200 resnet_correctness bash tests/gpu/resnet.sh $L/suite correctness
grep -E "FAIL|INFO|SKIP" $L/suite/results.txt 2>/dev/null | head -20; grep -c PASS $L/suite/results.txt
left=$((560 - SECONDS - 15))
echo "== bench_peers with $left s"
if ((left > 90)); then
    DPSCALE=$D BENCH_PEERS_BUDGET_S=$left BENCH_PEERS_MODELS=resnet50 tests/gpu/bench_peers.sh /tmp/bn-stats2/peers > /tmp/bn-stats2/peers.stdout 2>&1
    echo "== bench_peers rc=$?"
    grep -E "^PEERS|^\|" /tmp/bn-stats2/peers.stdout | tail -6
fi
rm -rf /tmp/bn-stats2/peers/h5 $L/*.h5 $L/suite/*.h5
tar -C /tmp -czf "$OUT/bn-stats2-logs.tar.gz" bn-stats2
date -u

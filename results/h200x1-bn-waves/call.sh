#!/usr/bin/env bash
# Batch norm's partial passes in whole waves of blocks (the chunk count from the GPU's SMs and
# what an SM holds of each partial kernel) and its dx pass at 3 blocks an SM, on one H200: the
# ResNet kernels' tests, the ResNet GPU correctness suite, and dpscale bench of ResNet-50 with
# this build and with main's before it (bin/dpscale-main, 4ea6a7c), twice, interleaved.
# Carried: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-bn-waves/call.sh
source tests/gpu/lent_call.sh /tmp/bn-waves/tests
ok 100 resnet_kernels $T/test_resnet_cuda; grep -E "FAILED|passed" $L/resnet_kernels.log | head -6
ok 150 resnet_correctness bash tests/gpu/resnet.sh $L/suite correctness
grep -E "FAIL|INFO|SKIP" $L/suite/results.txt 2>/dev/null | head -10; grep -c PASS $L/suite/results.txt
for round in 1 2; do
    for v in "" -main; do
        bench "resnet50$v-$round" bin/dpscale$v bench --config configs/resnet50.ini | grep -E "^step|batchnorm"
    done
done
rm -f $L/*.h5 $L/suite/*.h5
tar -C /tmp -czf "$OUT/bn-waves-logs.tar.gz" bn-waves
date -u

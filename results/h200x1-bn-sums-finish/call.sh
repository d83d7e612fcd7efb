#!/usr/bin/env bash
# Batch norm's finish in two passes where there are many chunks (splits over ~256 blocks;
# DPSCALE_BN_SPLITS=off: the one-pass finish), its passes launched as programmatic
# dependents (DPSCALE_BN_PDL=off: the ordinary way), and the sums' epilogue with its own unrolled
# reduce (no stack frame at the 128-wide tile), on one H200: the ResNet kernels' and the
# convolution kernels' tests; ResNet-50 with each finish and with the sums' epilogue at the
# 128-wide and the 64-wide tile, twice interleaved; Nsight Compute's time of every kernel of
# one timed step (DPSCALE_PROFILE=step, ncu --profile-from-start off), main's and the sums';
# the ResNet GPU suite's correctness.
# Carried: build/gpu/bins.tar.xz (bin/dpscale; bin/tests/test_resnet_cuda, test_conv_sm90_cuda,
# test_transformer_cuda, test_flash_attention_cuda: the last two for the switches read through
# kernels/env_switch.h); from the repository root: bash results/h200x1-bn-sums-finish/call.sh
source tests/gpu/lent_call.sh /tmp/sums-finish/tests
ok 100 resnet_kernels $T/test_resnet_cuda; grep -E "FAILED|passed|^FAIL" $L/resnet_kernels.log | head -6
ok 150 conv_sm90 $T/test_conv_sm90_cuda; grep -E "FAIL|passed" $L/conv_sm90.log | head -6
for t in transformer flash_attention; do ok 150 $t $T/test_${t}_cuda; grep -E "FAIL|passed" $L/$t.log | tail -2; done
SUMS="DPSCALE_BN_STATS=epilogue"
for round in 1 2; do
    bench "resnet50-$round" $D bench --config configs/resnet50.ini | grep -E "^step|batchnorm|convolution"
    bench "resnet50-one-pass-$round" env DPSCALE_BN_SPLITS=off $D bench --config configs/resnet50.ini | grep -E "^step|batchnorm|convolution"
    bench "resnet50-no-pdl-$round" env DPSCALE_BN_PDL=off $D bench --config configs/resnet50.ini | grep -E "^step|batchnorm|convolution"
    bench "resnet50-sums-$round" env $SUMS $D bench --config configs/resnet50.ini | grep -E "^step|batchnorm|convolution"
    bench "resnet50-sums-narrow-$round" env $SUMS DPSCALE_BN_STATS_TILE=narrow $D bench --config configs/resnet50.ini | grep -E "^step|batchnorm|convolution"
done
if command -v ncu > /dev/null; then
    STEP="run --config configs/resnet50.ini --run.backend=cuda --train.iters=1 --train.warmup=1 --run.sweep=1"
    M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread
    for v in main sums; do
        e=DPSCALE_PROFILE=step; [ $v = sums ] && e="$e $SUMS"
        ok 120 "census_$v" env $e ncu --profile-from-start off --metrics $M --csv --print-units base $D $STEP $O --run.output="census-$v.h5"
        python3 results/h200x1-step-census/census_table.py $L/census_$v.log | head -25
    done
fi
left=$((560 - SECONDS))
echo "== $left s left for the suite"
if ((left > 200)); then
    ok $((left - 10)) resnet_correctness bash tests/gpu/resnet.sh $L/suite correctness
    grep -E "FAIL|INFO|SKIP" $L/suite/results.txt 2> /dev/null | head -20; grep -c PASS $L/suite/results.txt
fi
rm -rf $L/*.h5 $L/suite/*.h5
xz -9 $L/census_*.log 2> /dev/null
tar -C /tmp -czf "$OUT/sums-finish-logs.tar.gz" sums-finish
date -u

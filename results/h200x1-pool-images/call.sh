#!/usr/bin/env bash
# The synthetic images at one mix an element (their keys once a block, the class's colours in
# shared memory) and max pooling's argmax a byte (the window's tap, not an int position), on
# one H200: the ResNet kernels against the CPU's bits, with the poolings and the images timed
# at ResNet-50's shapes beside a device-to-device copy; the convolution kernels' tests; the
# ResNet GPU correctness suite; ResNet-50 twice, and with batch norm's one-pass finish
# (DPSCALE_BN_SPLITS=off) and its passes launched the ordinary way (DPSCALE_BN_PDL=off);
# ResNet-50 beside torch.compile; then, with what is left, Nsight Compute's time of every
# kernel of one timed step (DPSCALE_PROFILE=step).
# Carried: build/gpu/bins.tar.xz (bin/dpscale, bin/tests/test_resnet_cuda, test_conv_sm90_cuda);
# from the repository root: bash results/h200x1-pool-images/call.sh
source tests/gpu/lent_call.sh /tmp/pool-images/tests
ok 150 resnet_kernels $T/test_resnet_cuda; grep -E "FAIL|passed|  +[a-z].* us |copy of" $L/resnet_kernels.log | head -20
ok 150 conv_sm90 $T/test_conv_sm90_cuda; grep -E "FAIL|passed" $L/conv_sm90.log | head -4
ok 240 resnet_correctness bash tests/gpu/resnet.sh $L/suite correctness
grep -E "FAIL|INFO|SKIP" $L/suite/results.txt 2> /dev/null | head -20; grep -c PASS $L/suite/results.txt
for round in 1 2; do
    bench "resnet50-$round" $D bench --config configs/resnet50.ini
    grep -E "pooling|synthetic|batchnorm" $L/bench-resnet50-$round.log
done
bench resnet50-one-pass env DPSCALE_BN_SPLITS=off $D bench --config configs/resnet50.ini
bench resnet50-no-pdl env DPSCALE_BN_PDL=off $D bench --config configs/resnet50.ini
left=$((420 - SECONDS))
echo "== bench_peers with $left s"
DPSCALE=$D BENCH_PEERS_BUDGET_S=$left BENCH_PEERS_MODELS=resnet50 tests/gpu/bench_peers.sh /tmp/pool-images/peers > /tmp/pool-images/peers.stdout 2>&1
echo "== bench_peers rc=$?"
grep -E "^PEERS|^\|" /tmp/pool-images/peers.stdout | tail -6
left=$((570 - SECONDS))
if command -v ncu > /dev/null && ((left > 60)); then
    STEP="run --config configs/resnet50.ini --run.backend=cuda --train.iters=1 --train.warmup=1 --run.sweep=1"
    M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
    ok $((left - 5)) census env DPSCALE_PROFILE=step ncu --profile-from-start off --metrics $M --csv --print-units base $D $STEP $O --run.output=census.h5
    python3 results/h200x1-step-census/census_table.py $L/census.log | head -30
    xz -9 $L/census.log 2> /dev/null
fi
rm -rf /tmp/pool-images/peers/h5 $L/*.h5 $L/suite/*.h5
tar -C /tmp -czf "$OUT/pool-images-logs.tar.gz" pool-images
date -u

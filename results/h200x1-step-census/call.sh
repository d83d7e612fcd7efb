#!/usr/bin/env bash
# Where ResNet-50's step goes, kernel by kernel, on one H200: Nsight Compute's time, DRAM bytes
# and throughput, SM throughput, grid and registers of every kernel of one training step
# (main's defaults, then with batch norm's sums in the convolutions' epilogues), the full set
# on the first forward kernels that carry the sums; the sums' 64-wide tile at every width as
# an A/B (DPSCALE_BN_STATS_TILE=narrow); the convolution kernels' tests (the review's mends).
# Carried: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-step-census/call.sh
source tests/gpu/lent_call.sh /tmp/census/tests
ok 150 conv_sm90 $T/test_conv_sm90_cuda; grep -vE "^ok " $L/conv_sm90.log | grep -v "^    [a-z]* *[0-9]*x[0-9]*x" | head -20
ok 100 resnet_kernels $T/test_resnet_cuda; grep -E "FAILED|passed|^FAIL" $L/resnet_kernels.log | head -6
STATS="DPSCALE_BN_STATS=epilogue"
for round in 1 2; do
    bench "resnet50-$round" $D bench --config configs/resnet50.ini | grep -E "^step|batchnorm|convolution|^gemm "
    bench "resnet50-sums-$round" env $STATS $D bench --config configs/resnet50.ini | grep -E "^step|batchnorm|convolution|^gemm "
    bench "resnet50-sums-narrow-$round" env $STATS DPSCALE_BN_STATS_TILE=narrow $D bench --config configs/resnet50.ini | grep -E "^step|batchnorm|convolution|^gemm "
done
command -v ncu > /dev/null || { echo "no ncu"; tar -C /tmp -czf "$OUT/census-logs.tar.gz" census; exit 0; }
ncu --version | tail -1
STEP="run --config configs/resnet50.ini --run.backend=cuda --train.iters=1 --train.warmup=0 --run.sweep=1"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size,launch__registers_per_thread,launch__occupancy_limit_registers
census() { # NAME ENV...: every kernel of one step, as CSV
    local n=$1
    shift
    ok 150 "census_$n" env "$@" ncu --metrics $M --csv --print-units base $D $STEP $O --run.output="census-$n.h5"
}
census main DPSCALE_BN_ORDER=descending
census sums $STATS
census sums_narrow $STATS DPSCALE_BN_STATS_TILE=narrow
full() { # NAME COUNT ENV...: the full set and the SASS with stall samples of the kernels that carry the sums
    local n=$1 c=$2
    shift 2
    ok 200 "ncu_$n" env "$@" ncu --kernel-name-base mangled -k regex:bn_stats_epilogue -c "$c" --set full \
        --import-source no -f -o "$L/$n" $D $STEP $O --run.output="full-$n.h5"
    ncu -i "$L/$n.ncu-rep" --page details --print-details all > "$L/details_$n.txt" 2>&1
    ncu -i "$L/$n.ncu-rep" --page source --csv --print-source sass > "$L/source_$n.csv" 2>&1
    grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Local|Achieved Occupancy|No Eligible" "$L/details_$n.txt" | head -40
}
left=$((540 - SECONDS))
echo "== $left s left for the full set"
if ((left > 120)); then full sums 5 $STATS; fi
rm -f $L/*.h5
xz -9 $L/*.csv $L/*.ncu-rep 2> /dev/null
ls -la $L | head -40
tar -C /tmp -czf "$OUT/census-logs.tar.gz" census
date -u

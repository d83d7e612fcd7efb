#!/usr/bin/env bash
# Batch norm's passes at higher occupancy: the same kernels with their registers capped so that
# an SM holds 3 or 4 blocks of 256 threads (BN_MIN_BLOCKS, an A/B build of batchnorm.cu; main
# holds 1 to 2 where a pass takes 64-101 registers), on one H200: the ResNet kernels' tests with
# each build, dpscale bench of ResNet-50 with each (twice, interleaved), Nsight Compute's DRAM
# throughput and occupancy of main's batch norm kernels at ResNet-50's first shapes, then
# ResNet-50 beside torch.compile with the fastest build (tests/gpu/bench_peers.sh).
# Carried: build/gpu/bins.tar.xz (bin/dpscale, bin/dpscale-bn3, bin/dpscale-bn4, bin/tests/*);
# from the repository root: bash results/h200x1-bn-occupancy/call.sh
source tests/gpu/lent_call.sh /tmp/bn-occupancy/tests
for v in "" -bn3 -bn4; do
    ok 100 "resnet_kernels$v" $T/test_resnet_cuda$v; grep -E "FAILED|passed" $L/resnet_kernels$v.log | head -6
done
for round in 1 2; do
    for v in "" -bn3 -bn4; do
        bench "resnet50$v-$round" bin/dpscale$v bench --config configs/resnet50.ini | grep -E "^step|batchnorm"
    done
done
best="" best_ms=1e9
for v in "" -bn3 -bn4; do
    ms=$(cat $L/bench-resnet50$v-[12].log | awk '/^step /{ s += $2; n++ } END { if (n) printf "%.3f", s / n }')
    echo "== mean step of bin/dpscale$v: $ms ms"
    if awk -v a="$ms" -v b="$best_ms" 'BEGIN { exit !(a < b) }'; then best=$v best_ms=$ms; fi
done
echo "== fastest: bin/dpscale$best ($best_ms ms)"
if command -v ncu > /dev/null; then
    ok 150 ncu_bn ncu -k "regex:bn_(partials|apply|add_relu_apply|apply_backward)" -c 10 \
        --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers \
        $D run --config configs/resnet50.ini --run.backend=cuda --train.iters=1 --train.warmup=0 --run.sweep=1 $O --run.output=ncu.h5
    grep -E "^  [a-z_]+.*\(|gpu__time|dram__|warps_active|registers" $L/ncu_bn.log | head -70
fi
left=$((430 - SECONDS))
echo "== bench_peers with $left s"
if ((left > 100)); then
    DPSCALE=bin/dpscale$best BENCH_PEERS_BUDGET_S=$left BENCH_PEERS_MODELS=resnet50 tests/gpu/bench_peers.sh /tmp/bn-occupancy/peers > /tmp/bn-occupancy/peers.stdout 2>&1
    echo "== bench_peers rc=$?"
    grep -E "^PEERS|^\|" /tmp/bn-occupancy/peers.stdout | tail -4
fi
rm -rf /tmp/bn-occupancy/peers/h5 $L/*.h5
tar -C /tmp -czf "$OUT/bn-occupancy-logs.tar.gz" bn-occupancy
date -u

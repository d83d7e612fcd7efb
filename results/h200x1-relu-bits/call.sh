#!/usr/bin/env bash
# A block's output ReLU backward inside its last batch norms' backward (the mask's bits),
# the stem's col kept for its weight gradient, and the windowed convolutions' weight
# gradients as CUTLASS 2.x implicit GEMMs with parallel split-K, on one H200: the ResNet
# kernels' tests (test_resnet_cuda: the mask's bits; test_conv_wgrad_cuda: the split-K
# weight gradient against im2col + cuBLASLt, with its timings), the ResNet GPU correctness
# suite, dpscale bench of ResNet-50 with each weight gradient, the kernels by time (nsys,
# where it is there), then ResNet-50 beside torch.compile (tests/gpu/bench_peers.sh).
# Carried: build/gpu/bins.tar.xz (bin/dpscale, bin/tests/*); from the repository root:
# bash results/h200x1-relu-bits/call.sh
source tests/gpu/lent_call.sh /tmp/relu-bits/tests
ok 150 resnet_kernels $T/test_resnet_cuda; grep -E "FAILED|passed|^FAIL|differ" $L/resnet_kernels.log | head -20
if [ -x $T/test_conv_wgrad_cuda ]; then
    ok 240 conv_wgrad env DPSCALE_TEST_TIMINGS=1 $T/test_conv_wgrad_cuda; grep -vE "^ok " $L/conv_wgrad.log | head -40
fi
ok 300 resnet_correctness bash tests/gpu/resnet.sh $L/suite correctness
grep -E "PASS|FAIL|INFO|SKIP" $L/suite/results.txt 2>/dev/null | head -40
bench resnet50 $D bench --config configs/resnet50.ini
bench resnet50-wgrad-im2col env DPSCALE_CONV_WGRAD=im2col $D bench --config configs/resnet50.ini
grep -E "^gemm +1 +0 +(64|128|256|512) +(576|1152|2304|4608) " $L/bench-resnet50-wgrad-im2col.log | head -8
if command -v nsys > /dev/null; then
    ok 150 nsys nsys profile -o $L/r50 --stats=false $D run --config configs/resnet50.ini --run.backend=cuda \
        --train.iters=3 --train.warmup=2 --run.sweep=1 $O --run.output=nsys.h5
    nsys stats -r cuda_gpu_kern_sum -f csv -o $L/r50 $L/r50.nsys-rep > /dev/null 2>&1
    python3 - "$L/r50_cuda_gpu_kern_sum.csv" <<'PY' 2>&1 | head -30
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows[:25]:
    print(f"{float(r['Total Time (ns)'])/1e6:9.3f} ms {int(r['Instances']):6d} calls {float(r['Avg (ns)'])/1e3:9.1f} us  {r['Name'][:100]}")
PY
    rm -f $L/r50.nsys-rep $L/*.sqlite
fi
left=$((560 - SECONDS - 15))
echo "== bench_peers with $left s"
DPSCALE=$D BENCH_PEERS_BUDGET_S=$left BENCH_PEERS_MODELS=resnet50 tests/gpu/bench_peers.sh /tmp/relu-bits/peers > /tmp/relu-bits/peers.stdout 2>&1
echo "== bench_peers rc=$?"
grep -E "^PEERS|^\|" /tmp/relu-bits/peers.stdout | tail -6
rm -rf /tmp/relu-bits/peers/h5 $L/*.h5 $L/suite/*.h5
tar -C /tmp -czf "$OUT/relu-bits-logs.tar.gz" relu-bits
date -u

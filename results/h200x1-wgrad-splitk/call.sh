#!/usr/bin/env bash
# The split-K weight gradient where it wins (the reductions of 131,072 output pixels and more),
# the mask's gradient with act_backward's signed zeros, act_backward's alignment check, on one
# H200: the ResNet kernels' tests (test_resnet_cuda, test_conv_wgrad_cuda with its timings), the
# ResNet GPU correctness suite, dpscale bench of ResNet-50 with and without the split-K weight
# gradient, then every model beside its peers in one call (tests/gpu/bench_peers.sh: llm.c +
# cuDNN, torch.compile).
# Carried: build/gpu/bins.tar.xz (bin/dpscale, bin/tests/*) and build/peers-src
# (tests/gpu/peer_sources.sh); from the repository root: bash results/h200x1-wgrad-splitk/call.sh
source tests/gpu/lent_call.sh /tmp/wgrad-splitk/tests
ok 150 resnet_kernels $T/test_resnet_cuda; grep -E "FAILED|passed|^FAIL|differ" $L/resnet_kernels.log | head -20
ok 240 conv_wgrad $T/test_conv_wgrad_cuda; grep -vE "^ok " $L/conv_wgrad.log | head -30
ok 300 resnet_correctness bash tests/gpu/resnet.sh $L/suite correctness
grep -E "PASS|FAIL|INFO|SKIP" $L/suite/results.txt 2>/dev/null | head -40
bench resnet50 $D bench --config configs/resnet50.ini
bench resnet50-wgrad-im2col env DPSCALE_CONV_WGRAD=im2col $D bench --config configs/resnet50.ini
left=$((565 - SECONDS - 15))
echo "== bench_peers with $left s"
DPSCALE=$D BENCH_PEERS_BUDGET_S=$left BENCH_PEERS_TORCH_XL=off LLMC_DIR=build/peers-src/llm.c \
    CUDNN_FRONTEND_DIR=build/peers-src/cudnn-frontend tests/gpu/bench_peers.sh /tmp/wgrad-splitk/peers > /tmp/wgrad-splitk/peers.stdout 2>&1
echo "== bench_peers rc=$?"
grep -E "^PEERS|^\|" /tmp/wgrad-splitk/peers.stdout | tail -12
rm -rf /tmp/wgrad-splitk/peers/h5 $L/*.h5 $L/suite/*.h5
tar -C /tmp -czf "$OUT/wgrad-splitk-logs.tar.gz" wgrad-splitk
date -u

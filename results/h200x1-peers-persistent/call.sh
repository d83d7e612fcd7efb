#!/usr/bin/env bash
# main with the persistent Hopper attention and the dependent launches (the dQ kernel behind
# the dK dV kernel, the gains' and biases' sums behind their partial passes) on one H200, and
# dpscale's step beside llm.c + cuDNN and torch.compile in the same call
# (tests/gpu/bench_peers.sh): first the kernels' tests (attention against FA2 with its
# timings, LayerNorm with its timings, the loss) and the transformers in bf16 against
# PyTorch, then the peers, then the MLPs (their bar: no slower) and Nsight Compute's times of
# the attention kernels at GPT-2 small's shape.
# Carried: build/gpu/bins.tar.xz (bin/dpscale, bin/tests/*) and build/peers-src
# (tests/gpu/peer_sources.sh); from the repository root: bash results/h200x1-peers-persistent/call.sh
source tests/gpu/lent_call.sh /tmp/peers-persistent/tests
ok 150 attention $T/test_flash_attention_cuda; grep -E "backward FA2|forward  FA2|passed|FAIL|not ok" $L/attention.log
ok 100 layernorm $T/test_transformer_cuda; grep -E "backward  8192 x 1600|backward 16384 x  768|passed" $L/layernorm.log | head -12
ok 100 loss $T/test_loss_cuda; grep -E "FAIL|passed| ms" $L/loss.log | head -6
against_pytorch
left=$((560 - SECONDS - 70))
echo "== bench_peers with $left s"
DPSCALE=$D BENCH_PEERS_BUDGET_S=$left BENCH_PEERS_TORCH_XL=off LLMC_DIR=build/peers-src/llm.c \
    CUDNN_FRONTEND_DIR=build/peers-src/cudnn-frontend tests/gpu/bench_peers.sh /tmp/peers-persistent/peers > /tmp/peers-persistent/peers.stdout 2>&1
echo "== bench_peers rc=$?"
grep -E "^== |^PEERS|^\|" /tmp/peers-persistent/peers.stdout | grep -vE "^== .*(libraries)" | tail -40
rm -rf /tmp/peers-persistent/peers/h5
for cfg in mlp-gemm-heavy mlp-comm-bound mlp-small mlp-medium; do bench $cfg $D bench --config configs/$cfg.ini; done
if command -v ncu > /dev/null; then
  ok 60 ncu_attention ncu -k "regex:fa90_(forward|backward_dkdv|backward_dq)" -c 3 --metrics gpu__time_duration.sum $D run --config configs/gpt2-small.ini --run.backend=cuda --model.layers=1 --train.iters=1 --train.warmup=0 --run.sweep=1 $O --run.output=ncu.h5
  grep -E "^  [a-z].*\(|gpu__time" $L/ncu_attention.log | head -8
fi
rm -f $L/*.h5
tar -C /tmp -czf "$OUT/peers-persistent-logs.tar.gz" peers-persistent
date -u

#!/usr/bin/env bash
# The bias gradients of fc2 and the projection taken by the LayerNorm backward (dx's column
# sums in the staged kernel's registers) and the staged kernel's one __syncthreads a tile, on
# one H200: the LayerNorm tests with their timings (with and without dx's sums, and the bias
# gradient's kernel they replace), the transformers in bf16 against PyTorch gradient by
# gradient, dpscale bench of GPT-2 small with its GEMMs beside cuBLAS alone and beside cuBLAS
# plus PyTorch's element-wise kernels (tests/gpu/gemm_shapes_reference.py), then the peers in
# one call (tests/gpu/bench_peers.sh: llm.c + cuDNN, torch.compile).
# Carried: build/gpu/bins.tar.xz (bin/dpscale, bin/tests/*) and build/peers-src
# (tests/gpu/peer_sources.sh); from the repository root: bash results/h200x1-ln-bias-sums/call.sh
source tests/gpu/lent_call.sh /tmp/ln-bias-sums/tests
ok 100 layernorm $T/test_transformer_cuda
grep -E "backward  8192 x 1600|backward 16384 x  768|backward  8192 x 1024|passed|FAIL" $L/layernorm.log | head -24
against_pytorch
bench gpt2-small $D bench --config configs/gpt2-small.ini
timeout 100 python3 tests/gpu/gemm_shapes_reference.py $L/bench-gpt2-small.log > $L/shapes-gpt2-small.log 2>&1
grep -E "GELU|GEMM_SHAPES" $L/shapes-gpt2-small.log
left=$((565 - SECONDS - 15))
echo "== bench_peers with $left s"
DPSCALE=$D BENCH_PEERS_BUDGET_S=$left BENCH_PEERS_TORCH_XL=off LLMC_DIR=build/peers-src/llm.c \
    CUDNN_FRONTEND_DIR=build/peers-src/cudnn-frontend tests/gpu/bench_peers.sh /tmp/ln-bias-sums/peers > /tmp/ln-bias-sums/peers.stdout 2>&1
echo "== bench_peers rc=$?"
grep -E "^PEERS|^\|" /tmp/ln-bias-sums/peers.stdout | tail -12
rm -rf /tmp/ln-bias-sums/peers/h5 $L/*.h5
tar -C /tmp -czf "$OUT/ln-bias-sums-logs.tar.gz" ln-bias-sums
date -u

#!/usr/bin/env bash
# The attention backward's two kernels software-pipelined (the next tile's S and dP issued
# right behind this tile's dV dK or dQ) on one H200: test_flash_attention_cuda (correctness
# against FA2, the same bits twice, timings), the transformers in bf16 against PyTorch,
# dpscale bench of every transformer, Nsight Compute's times of the attention kernels at
# GPT-2 small's shape.
# Binaries: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-attention-pipelined/call.sh
source tests/gpu/lent_call.sh /tmp/attention-pipelined
ok 150 attention $T/test_flash_attention_cuda; grep -E "backward FA2|forward  FA2|passed|FAIL|not ok" $L/attention.log
against_pytorch
bench_transformers
attention_kernel_times
rm -f $L/*.h5
tar -C /tmp -czf "$OUT/attention-pipelined-logs.tar.gz" attention-pipelined
date -u

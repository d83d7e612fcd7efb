#!/usr/bin/env bash
# The Hopper attention kernels with the mask's compares only on the tiles that need them, the
# forward's row maxima and sums through partials, and the LayerNorm backward's gain sums as
# its programmatic dependent, on one H200: test_flash_attention_cuda (correctness against FA2,
# the same bits twice, timings), test_transformer_cuda (LayerNorm timings), the transformers
# in bf16 against PyTorch, dpscale bench of every transformer, Nsight Compute's view of the
# attention kernels at GPT-2 small's shape.
# Binaries: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-attention-mask/call.sh
source tests/gpu/lent_call.sh /tmp/attention-mask
ok 150 attention $T/test_flash_attention_cuda; grep -E "backward FA2|forward  FA2|passed|FAIL|not ok" $L/attention.log
ok 100 layernorm $T/test_transformer_cuda; grep -E "backward  8192 x 1600|backward 16384 x  768|passed" $L/layernorm.log | head -12
against_pytorch
bench_transformers
attention_kernel_times
rm -f $L/*.h5
tar -C /tmp -czf "$OUT/attention-mask-logs.tar.gz" attention-mask
date -u

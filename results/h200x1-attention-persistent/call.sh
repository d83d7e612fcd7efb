#!/usr/bin/env bash
# The Hopper attention kernels as persistent grids (a block an SM taking work units in turn,
# the loader fetching the next unit's rows while the consumers finish the last) on one H200:
# test_flash_attention_cuda (correctness against FA2, the same bits twice, timings), the
# transformers in bf16 against PyTorch, dpscale bench of every transformer, Nsight Compute's
# times of the attention kernels at GPT-2 small's shape.
# Binaries: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-attention-persistent/call.sh
source tests/gpu/lent_call.sh /tmp/attention-persistent
ok 150 attention $T/test_flash_attention_cuda; grep -E "backward FA2|forward  FA2|passed|FAIL|not ok" $L/attention.log
against_pytorch
bench_transformers
attention_kernel_times
rm -f $L/*.h5
tar -C /tmp -czf "$OUT/attention-persistent-logs.tar.gz" attention-persistent
date -u

#!/usr/bin/env bash
# main as it landed after the persistent attention and the dependent launches (the loaders'
# shared helpers, the same SASS as the binary the peers ran): test_flash_attention_cuda, the
# transformers in bf16 against PyTorch, dpscale bench of every transformer (the step by
# operation, the bias gradient with its dependent chunk sums among them).
# Binaries: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-main-after-persistent/call.sh
source tests/gpu/lent_call.sh /tmp/main-after-persistent
ok 150 attention $T/test_flash_attention_cuda; grep -E "backward FA2|forward  FA2|passed|FAIL|not ok" $L/attention.log
against_pytorch
bench_transformers
rm -f $L/*.h5
tar -C /tmp -czf "$OUT/main-after-persistent-logs.tar.gz" main-after-persistent
date -u

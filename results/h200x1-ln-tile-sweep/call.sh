#!/usr/bin/env bash
# The staged LayerNorm backward's tile size swept on one lease (DPSCALE_LN_TILE_KB = 48, the
# default, 64 and 96: fewer, larger tiles, fewer stages): test_transformer_cuda under each (its
# checks and its timings), and dpscale bench of GPT-2 small, BERT-Large and XL under each.
# Carried: build/gpu/bins.tar.xz (bin/dpscale, bin/tests/test_transformer_cuda); from the
# repository root: bash results/h200x1-ln-tile-sweep/call.sh
source tests/gpu/lent_call.sh /tmp/ln-tile-sweep
for kb in 48 64 96; do
    export DPSCALE_LN_TILE_KB=$kb
    ok 100 "layernorm-$kb" $T/test_transformer_cuda
    grep -E "staged:|in the kernel|passed|FAIL" "$L/layernorm-$kb.log" | grep -v "8,192 wide" | cut -c1-130
    bench "gpt2-small-$kb" $D bench --config configs/gpt2-small.ini
    bench "bert-large-$kb" $D bench --config configs/bert-large.ini --model.mask_fraction=1
    bench "gpt2-xl-$kb" $D bench --config configs/gpt2-xl.ini --train.batch_per_gpu=8
done
tar -C /tmp -czf "$OUT/ln-tile-sweep-logs.tar.gz" ln-tile-sweep
date -u

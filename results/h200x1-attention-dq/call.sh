#!/usr/bin/env bash
# The attention backward as one kernel on one H200: dK, dV and dQ from one pass over the key
# blocks, dQ's partial sums added in a fixed order (DPSCALE_FLASH_DQ=accumulate) against the
# two kernels (separate) and FA2: test_flash_attention_cuda (correctness, the same bits twice,
# timings), the transformers in bf16 against PyTorch through it, dpscale bench of every
# transformer both ways; and the softmax cross-entropy a block of 1,024 threads (test_loss_cuda's
# timings at 256, 512 and 1,024).
# Binaries: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-attention-dq/call.sh
source tests/gpu/lent_call.sh /tmp/attention-dq
ok 120 attention $T/test_flash_attention_cuda; grep -vE "^ok " $L/attention.log | head -70
dqs="accumulate separate"; grep -q "^flash_attention_cuda: .* 0 failed" $L/attention.log || dqs=separate
ok 120 attention_accumulate env DPSCALE_FLASH_DQ=accumulate $T/test_flash_attention_cuda; grep -E "passed|FAIL" $L/attention_accumulate.log
ok 100 loss $T/test_loss_cuda; grep -vE "^ok " $L/loss.log | head -12
for dq in $dqs; do
  for m in gpt bert; do
    ok 60 dump_${m}_$dq env DPSCALE_FLASH_DQ=$dq $D dump --config configs/$m-tiny.ini --backend=cuda --model.seq_len=200 --model.vocab=61 --train.batch_per_gpu=3 --model.hidden_dim=128 --model.heads=2 --precision=bf16 --train.attention=flash --train.gemm_epilogue=on $O --run.output=mid-$m-$dq.h5
    ok 60 torch_${m}_$dq python3 tests/gpu/torch_reference.py $L/mid-$m-$dq.h5 --tol 3e-2; tail -1 $L/torch_${m}_$dq.log
  done
done
for dq in $dqs; do
  bench gpt2-small-$dq env DPSCALE_FLASH_DQ=$dq $D bench --config configs/gpt2-small.ini
  bench bert-large-$dq env DPSCALE_FLASH_DQ=$dq $D bench --config configs/bert-large.ini --model.mask_fraction=1
  bench gpt2-xl-$dq env DPSCALE_FLASH_DQ=$dq $D bench --config configs/gpt2-xl.ini --train.batch_per_gpu=8
done
if command -v ncu > /dev/null && [ "$dqs" != separate ]; then
  ok 200 ncu_attention_backward env DPSCALE_FLASH_DQ=accumulate ncu -k "regex:fa90_backward|dq_convert|convert" -c 6 --cache-control none --metrics gpu__time_duration.sum $D run --config configs/gpt2-small.ini --run.backend=cuda --model.layers=2 --train.iters=1 --train.warmup=0 --run.sweep=1 $O --run.output=ncu.h5
  grep -E "^  [a-z].*\(|gpu__time_duration" $L/ncu_attention_backward.log | head -16
fi
rm -f $L/*.h5
tar -C /tmp -czf "$OUT/attention-dq-logs.tar.gz" attention-dq
date -u

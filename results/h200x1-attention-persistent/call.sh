#!/usr/bin/env bash
# The Hopper attention kernels as persistent grids (a block an SM taking work units in turn,
# the loader fetching the next unit's rows while the consumers finish the last) on one H200:
# test_flash_attention_cuda (correctness against FA2, the same bits twice, timings), the
# transformers in bf16 against PyTorch, dpscale bench of every transformer, Nsight Compute's
# times of the attention kernels at GPT-2 small's shape.
# Binaries: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-attention-persistent/call.sh
source tests/gpu/lent_call.sh /tmp/attention-persistent
ok 150 attention $T/test_flash_attention_cuda; grep -E "backward FA2|forward  FA2|passed|FAIL|not ok" $L/attention.log
for m in gpt bert; do
  ok 60 dump_$m $D dump --config configs/$m-tiny.ini --backend=cuda --model.seq_len=200 --model.vocab=61 --train.batch_per_gpu=3 --model.hidden_dim=128 --model.heads=2 --precision=bf16 --train.attention=flash --train.gemm_epilogue=on $O --run.output=mid-$m.h5
  ok 60 torch_$m python3 tests/gpu/torch_reference.py $L/mid-$m.h5 --tol 3e-2; tail -1 $L/torch_$m.log
done
bench gpt2-small $D bench --config configs/gpt2-small.ini
bench bert-large $D bench --config configs/bert-large.ini --model.mask_fraction=1
bench gpt2-xl $D bench --config configs/gpt2-xl.ini --train.batch_per_gpu=8
if command -v ncu > /dev/null; then
  ok 200 ncu_attention ncu -k "regex:fa90_(forward|backward_dkdv|backward_dq)" -c 3 --metrics gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed.sum $D run --config configs/gpt2-small.ini --run.backend=cuda --model.layers=1 --train.iters=1 --train.warmup=0 --run.sweep=1 $O --run.output=ncu.h5
  grep -E "^  [a-z].*\(|gpu__time|gmma|inst_executed" $L/ncu_attention.log | head -16
fi
rm -f $L/*.h5
tar -C /tmp -czf "$OUT/attention-persistent-logs.tar.gz" attention-persistent
date -u

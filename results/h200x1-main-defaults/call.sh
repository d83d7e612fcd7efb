#!/usr/bin/env bash
# main's defaults on one H200, as a user gets them: ResNet-50 with the implicit convolutions and
# the batch norm fusions together, the staged LayerNorm backward picked by default; the kernels'
# tests (LayerNorm, convolutions, ResNet kernels, loss, attention with its timings), the ResNet
# GPU suite, the transformers and MLP in bf16 against PyTorch, the attention backward's two
# kernels timed alone (Nsight Compute), dpscale bench of every transformer, ResNet-50 (with and
# without DPSCALE_CONV=im2col) and the MLPs.
# Binaries: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-main-defaults/call.sh
source tests/gpu/lent_call.sh /tmp/main-defaults
ok 100 layernorm $T/test_transformer_cuda; grep -E " us|passed" $L/layernorm.log | head -12
ok 150 conv_sm90 $T/test_conv_sm90_cuda; grep -E "passed|FAIL" $L/conv_sm90.log
ok 100 resnet_kernels $T/test_resnet_cuda; grep -E "FAIL|passed" $L/resnet_kernels.log | head
ok 100 loss $T/test_loss_cuda; grep -E "FAIL|passed| ms" $L/loss.log | head
ok 150 attention $T/test_flash_attention_cuda; grep -E "backward FA2|forward  FA2|passed" $L/attention.log
for m in gpt bert; do
  ok 60 dump_$m $D dump --config configs/$m-tiny.ini --backend=cuda --model.seq_len=80 --model.vocab=61 --train.batch_per_gpu=3 --model.hidden_dim=128 --model.heads=2 --precision=bf16 --train.attention=flash --train.gemm_epilogue=on $O --run.output=mid-$m.h5
  ok 60 torch_$m python3 tests/gpu/torch_reference.py $L/mid-$m.h5 --tol 3e-2; tail -1 $L/torch_$m.log
done
ok 300 resnet_correctness bash tests/gpu/resnet.sh $L/suite correctness
grep -E "PASS|FAIL" $L/suite/results.txt 2>/dev/null | head -30
if command -v ncu > /dev/null; then
  ok 200 ncu_attention_backward ncu -k "regex:fa90_backward" -c 4 --cache-control none --metrics gpu__time_duration.sum $D run --config configs/gpt2-small.ini --run.backend=cuda --model.layers=2 --train.iters=1 --train.warmup=0 --run.sweep=1 $O --run.output=ncu.h5
  grep -E "fa90_backward|gpu__time_duration" $L/ncu_attention_backward.log | head -16
fi
bench resnet50 $D bench --config configs/resnet50.ini
bench resnet50-im2col env DPSCALE_CONV=im2col $D bench --config configs/resnet50.ini
bench gpt2-small $D bench --config configs/gpt2-small.ini
bench bert-large $D bench --config configs/bert-large.ini --model.mask_fraction=1
bench gpt2-xl $D bench --config configs/gpt2-xl.ini --train.batch_per_gpu=8
for cfg in mlp-gemm-heavy mlp-comm-bound mlp-small mlp-medium; do bench $cfg $D bench --config configs/$cfg.ini; done
rm -f $L/*.h5
tar -C /tmp -czf $OUT/main-defaults-logs.tar.gz main-defaults
date -u

#!/usr/bin/env bash
# ResNet-50 with every windowed convolution an implicit GEMM (forward, input and weight
# gradients), a bottleneck's last batch norm + shortcut + add + ReLU in one pass and batch
# norm's backward recomputing its ReLU mask, on one H200: the kernels' tests, the ResNet GPU
# correctness suite (tests/gpu/resnet.sh correctness: loss curves, gradcheck, PyTorch), the
# tiny net in bf16 with and without the implicit GEMMs against PyTorch, the loss kernel's test,
# dpscale bench of ResNet-50 with and without the implicit GEMMs; the LayerNorm backward's two
# kernels (test_transformer_cuda's timings, and GPT-2 XL's step with each).
# Binaries: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-resnet-fusion/call.sh
source tests/gpu/lent_call.sh /tmp/resnet-fusion
ok 200 conv_sm90 $T/test_conv_sm90_cuda; grep -vE "^ok " $L/conv_sm90.log | head -50
ok 150 resnet_kernels $T/test_resnet_cuda; grep -E "FAILED|passed|^FAIL" $L/resnet_kernels.log | head -20
ok 150 loss $T/test_loss_cuda; grep -vE "^ok " $L/loss.log | head -12
ok 200 layernorm $T/test_transformer_cuda; grep -vE "^ok " $L/layernorm.log | head -30
for conv in auto im2col; do
  ok 60 dump_tiny_bf16_$conv env DPSCALE_CONV=$conv $D dump --config configs/resnet-tiny.ini --backend=cuda --precision=bf16 $O --run.output=tiny16-$conv.h5
  ok 120 torch_tiny_bf16_$conv python3 tests/gpu/torch_resnet_reference.py $L/tiny16-$conv.h5 --tol 3e-2 --impl functional --bf16-relative 3
  tail -1 $L/torch_tiny_bf16_$conv.log
done
ok 90 dump_r50_128_bf16 $D dump --config configs/resnet50.ini --backend=cuda --precision=bf16 --model.image_size=128 --train.batch_per_gpu=4 $O --run.output=r50-128-16.h5
ok 150 torch_r50_128_bf16 python3 tests/gpu/torch_resnet_reference.py $L/r50-128-16.h5 --tol 3e-2 --impl functional --bf16-relative 3
tail -2 $L/torch_r50_128_bf16.log; rm -f $L/*.h5
ok 400 resnet_correctness bash tests/gpu/resnet.sh $L/suite correctness
grep -E "PASS|FAIL|INFO|SKIP" $L/suite/results.txt 2>/dev/null | head -40
bench resnet50 $D bench --config configs/resnet50.ini
bench resnet50-im2col env DPSCALE_CONV=im2col $D bench --config configs/resnet50.ini
for ln in staged tiled; do
  bench gpt2-xl-ln-$ln env DPSCALE_LN_BACKWARD=$ln $D bench --config configs/gpt2-xl.ini --train.batch_per_gpu=8
done
rm -f $L/*.h5
tar -C /tmp -czf $OUT/resnet-fusion-logs.tar.gz resnet-fusion
date -u

#!/usr/bin/env bash
# The ResNet's implicit-GEMM convolutions on one H200: the kernels against im2col + cuBLASLt
# (correctness and time), the whole network in bf16 against PyTorch with and without them,
# dpscale bench of ResNet-50 both ways, and the Hopper attention rebuilt with NDEBUG.
# Binaries: build/gpu/bins.tar.xz (bin/dpscale, bin/tests/*), built from the commit named in
# the log; run from the repository root: bash results/h200x1-implicit-conv/call.sh
source tests/gpu/lent_call.sh /tmp/implicit-conv
ok 200 conv_sm90 $T/test_conv_sm90_cuda; grep -vE "^ok " $L/conv_sm90.log | head -60
ok 150 resnet_kernels $T/test_resnet_cuda; grep -E "FAILED|passed" $L/resnet_kernels.log
for conv in auto im2col; do
  ok 60 dump_tiny_bf16_$conv env DPSCALE_CONV=$conv $D dump --config configs/resnet-tiny.ini --backend=cuda --precision=bf16 $O --run.output=tiny16-$conv.h5
  ok 120 torch_tiny_bf16_$conv python3 tests/gpu/torch_resnet_reference.py $L/tiny16-$conv.h5 --tol 3e-2 --impl functional --bf16-relative 3
  tail -3 $L/torch_tiny_bf16_$conv.log
  ok 90 dump_r50_128_bf16_$conv env DPSCALE_CONV=$conv $D dump --config configs/resnet50.ini --backend=cuda --precision=bf16 --model.image_size=128 --train.batch_per_gpu=4 $O --run.output=r50-128-16-$conv.h5
  ok 150 torch_r50_128_bf16_$conv python3 tests/gpu/torch_resnet_reference.py $L/r50-128-16-$conv.h5 --tol 3e-2 --impl functional --bf16-relative 3
  tail -4 $L/torch_r50_128_bf16_$conv.log
  rm -f $L/r50-128-16-$conv.h5
done
bench resnet50 $D bench --config configs/resnet50.ini
bench resnet50-im2col env DPSCALE_CONV=im2col $D bench --config configs/resnet50.ini
ok 200 flash $T/test_flash_attention_cuda; grep -E "FAILED|passed|TFLOP" $L/flash.log | head -30
rm -f $L/*.h5
tar -C /tmp -czf $OUT/implicit-conv-logs.tar.gz implicit-conv
date -u

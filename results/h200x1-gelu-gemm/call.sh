#!/usr/bin/env bash
# The FFN's GELU GEMMs as CUTLASS kernels on one H200: the kernels against the unfused path
# and cuBLASLt (correctness and time), the transformers against PyTorch in bf16 through them,
# dpscale bench of every transformer and MLP preset with them and with DPSCALE_GEMM_GELU=cublaslt,
# the staged softmax cross-entropy against the rows kernel (DPSCALE_XENT=rows), and ResNet-50
# with the strided 1x1s back on im2col.
# Binaries: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-gelu-gemm/call.sh
source tests/gpu/lent_call.sh /tmp/gelu-gemm
ok 200 gemm_gelu $T/test_gemm_gelu_cuda; grep -vE "^ok " $L/gemm_gelu.log | head -30
ok 100 conv_sm90 $T/test_conv_sm90_cuda; grep -E "FAILED|passed|sum" $L/conv_sm90.log
ok 200 loss $T/test_loss_cuda; grep -vE "^ok " $L/loss.log | head -20
for m in gpt bert; do
  ok 60 dump_$m $D dump --config configs/$m-tiny.ini --backend=cuda --model.seq_len=80 --model.vocab=61 --train.batch_per_gpu=3 --model.hidden_dim=128 --model.heads=2 --precision=bf16 --train.attention=flash --train.gemm_epilogue=on $O --run.output=mid-$m.h5
  ok 60 torch_$m python3 tests/gpu/torch_reference.py $L/mid-$m.h5 --tol 3e-2
  tail -1 $L/torch_$m.log
done
ok 60 dump_mlp $D dump --config configs/mlp-tiny.ini --backend=cuda --precision=bf16 --model.hidden_dim=64 $O --run.output=mlp.h5
ok 60 torch_mlp python3 tests/gpu/torch_reference.py $L/mlp.h5 --tol 3e-2; tail -1 $L/torch_mlp.log
for cfg in gpt2-small bert-large gpt2-xl mlp-gemm-heavy mlp-comm-bound mlp-small mlp-medium; do
  extra=""; [ $cfg = bert-large ] && extra="--model.mask_fraction=1"; [ $cfg = gpt2-xl ] && extra="--train.batch_per_gpu=8"
  bench $cfg $D bench --config configs/$cfg.ini $extra
  bench $cfg-cublaslt env DPSCALE_GEMM_GELU=cublaslt $D bench --config configs/$cfg.ini $extra
done
bench gpt2-small-xent-rows env DPSCALE_XENT=rows $D bench --config configs/gpt2-small.ini
bench resnet50 $D bench --config configs/resnet50.ini
rm -f $L/*.h5
tar -C /tmp -czf $OUT/gelu-gemm-logs.tar.gz gelu-gemm
date -u

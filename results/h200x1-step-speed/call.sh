#!/usr/bin/env bash
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 PYTHON=python3
D=build/gpu/bin/dpscale
L=$OUT/call1; mkdir -p $L
O="--run.output_dir=$L"
ok() { local t=$1 n=$2; shift 2; if timeout $t "$@" > $L/$n.log 2>&1; then echo "== $n: PASS"; else echo "== $n: FAIL ($?)"; tail -4 $L/$n.log; fi; }
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ok 90 ln_kernels build/gpu/bin/tests/test_transformer_cuda; grep -iE " us|floor|passed|FAIL" $L/ln_kernels.log | head -12
ok 150 fa_sm90 build/gpu/bin/tests/test_flash_attention_cuda; grep -iE "TFLOP|err|passed|FAIL" $L/fa_sm90.log | head -24
for m in gpt bert; do
  for p in fp32 bf16; do
    tol=$([ $p = fp32 ] && echo 1e-4 || echo 3e-2)
    ok 60 dumpw_$m-$p $D dump --config configs/$m-tiny.ini --backend=cuda --model.vocab=10007 --precision=$p $O --run.output=w-$m-$p.h5
    ok 60 torchw_$m-$p python3 tests/gpu/torch_reference.py $L/w-$m-$p.h5 --tol $tol
  done
  ok 60 dumpmid_$m $D dump --config configs/$m-tiny.ini --backend=cuda --model.seq_len=80 --model.vocab=61 --train.batch_per_gpu=3 --model.hidden_dim=128 --model.heads=2 --precision=bf16 --train.attention=flash --train.gemm_epilogue=on $O --run.output=mid-$m.h5
  ok 60 torchmid_$m python3 tests/gpu/torch_reference.py $L/mid-$m.h5 --tol 3e-2
  ok 60 dumpxl_$m $D dump --config configs/$m-tiny.ini --backend=cuda --model.seq_len=80 --model.vocab=61 --train.batch_per_gpu=3 --model.hidden_dim=1600 --model.heads=25 --precision=fp32 $O --run.output=wide-$m.h5
  ok 90 torchxl_$m python3 tests/gpu/torch_reference.py $L/wide-$m.h5 --tol 1e-4
  ok 60 gradcheck_$m $D gradcheck --config configs/$m-tiny.ini --backend=cuda --model.vocab=61 --train.batch_per_gpu=2
done
head -3 $L/torchmid_gpt.log
bench() { local n=$1; shift; timeout 120 $D bench "$@" > $L/bench-$n.log 2>&1; echo "== bench $n rc=$?"; grep -E "^step|GEMMs alone|FLOP rate" $L/bench-$n.log; sed -n '/where the step goes/,/largest/p' $L/bench-$n.log | head -12; }
bench gpt2-small --config configs/gpt2-small.ini
DPSCALE_FLASH_BACKWARD=fa2 bench gpt2-small-fa2 --config configs/gpt2-small.ini
timeout 90 python3 tests/gpu/gemm_shapes_reference.py $L/bench-gpt2-small.log > $L/shapes-gpt2-small.log 2>&1; cat $L/shapes-gpt2-small.log
bench gpt2-xl --config configs/gpt2-xl.ini --train.batch_per_gpu=8
bench bert-large --config configs/bert-large.ini --model.mask_fraction=1
date -u

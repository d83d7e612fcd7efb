#!/usr/bin/env bash
# call 2: the Hopper forward and the bias gradient in the weight-gradient GEMM, checked and measured
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 PYTHON=python3
python3 -c "import tarfile; tarfile.open('build/gpu/bins.tar.xz').extractall('build/gpu')" || exit 3
D=build/gpu/bin/dpscale
L=$OUT/c2; mkdir -p $L
O="--run.output_dir=$L"
ok() { local t=$1 n=$2; shift 2; local t0=$SECONDS; if timeout $t "$@" > $L/$n.log 2>&1; then echo "== $n: PASS ($((SECONDS-t0)) s)"; else echo "== $n: FAIL ($?)"; tail -4 $L/$n.log; fi; }
date -u
ok 150 fa_cuda build/gpu/bin/tests/test_flash_attention_cuda; grep -E "FAILED|passed|forward|backward|TFLOP" $L/fa_cuda.log | head -48
if grep -q FAILED $L/fa_cuda.log; then
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
  echo "== compute-sanitizer: ${CS:-none}"
  [ -n "$CS" ] && timeout 120 $CS --print-limit 5 build/gpu/bin/tests/test_flash_attention_cuda > $L/fa_sanitizer.log 2>&1; grep -vE "^    (bf16|fp16)" $L/fa_sanitizer.log | head -40
fi
for m in gpt bert; do
  for p in fp32 bf16; do
    tol=$([ $p = fp32 ] && echo 1e-4 || echo 3e-2)
    ok 60 dumpw_$m-$p $D dump --config configs/$m-tiny.ini --backend=cuda --model.vocab=10007 --precision=$p --train.gemm_epilogue=on $O --run.output=w-$m-$p.h5
    ok 60 torchw_$m-$p python3 tests/gpu/torch_reference.py $L/w-$m-$p.h5 --tol $tol
  done
  ok 60 dumpmid_$m $D dump --config configs/$m-tiny.ini --backend=cuda --model.seq_len=80 --model.vocab=61 --train.batch_per_gpu=3 --model.hidden_dim=128 --model.heads=2 --precision=bf16 --train.attention=flash --train.gemm_epilogue=on $O --run.output=mid-$m.h5
  ok 60 torchmid_$m python3 tests/gpu/torch_reference.py $L/mid-$m.h5 --tol 3e-2
  ok 60 dumpmid130_$m $D dump --config configs/$m-tiny.ini --backend=cuda --model.seq_len=130 --model.vocab=61 --train.batch_per_gpu=3 --model.hidden_dim=320 --model.heads=5 --precision=bf16 --train.attention=flash --train.gemm_epilogue=on $O --run.output=mid130-$m.h5
  ok 60 torchmid130_$m python3 tests/gpu/torch_reference.py $L/mid130-$m.h5 --tol 3e-2
  ok 60 gradcheck_$m $D gradcheck --config configs/$m-tiny.ini --backend=cuda --model.vocab=61 --train.batch_per_gpu=2 --train.gemm_epilogue=on
done
head -3 $L/torchmid_gpt.log
bench() { local n=$1; shift; timeout 120 $D bench "$@" > $L/bench-$n.log 2>&1; echo "== bench $n rc=$?"; grep -E "^step|GEMMs alone|FLOP rate" $L/bench-$n.log; sed -n '/where the step goes/,/largest/p' $L/bench-$n.log | head -14; }
bench gpt2-small --config configs/gpt2-small.ini
bench gpt2-small-kernelbias --config configs/gpt2-small.ini --train.bias_grad=kernel
DPSCALE_FLASH_FORWARD=fa2 bench gpt2-small-fa2fwd --config configs/gpt2-small.ini
timeout 90 python3 tests/gpu/gemm_shapes_reference.py $L/bench-gpt2-small.log > $L/shapes-gpt2-small.log 2>&1; head -30 $L/shapes-gpt2-small.log
bench bert-large --config configs/bert-large.ini --model.mask_fraction=1
bench bert-large-kernelbias --config configs/bert-large.ini --model.mask_fraction=1 --train.bias_grad=kernel
bench gpt2-xl --config configs/gpt2-xl.ini --train.batch_per_gpu=8
rm -f $L/*.h5
date -u

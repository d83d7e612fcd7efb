#!/usr/bin/env bash
# call 3: the pipelined Hopper forward and the aligned lse/delta boxes of the Hopper backward
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 PYTHON=python3
python3 -c "import tarfile; tarfile.open('build/gpu/bins.tar.xz').extractall('build/gpu')" || exit 3
D=build/gpu/bin/dpscale
L=/tmp/c3; mkdir -p $L
O="--run.output_dir=$L"
ok() { local t=$1 n=$2; shift 2; local t0=$SECONDS; if timeout $t "$@" > $L/$n.log 2>&1; then echo "== $n: PASS ($((SECONDS-t0)) s)"; else echo "== $n: FAIL ($?)"; tail -4 $L/$n.log; fi; }
date -u
ok 150 fa_cuda build/gpu/bin/tests/test_flash_attention_cuda; grep -E "FAILED|passed|forward|backward|TFLOP|^ok" $L/fa_cuda.log | head -60
for m in gpt bert; do
  ok 60 dumpmid_$m $D dump --config configs/$m-tiny.ini --backend=cuda --model.seq_len=80 --model.vocab=61 --train.batch_per_gpu=3 --model.hidden_dim=128 --model.heads=2 --precision=bf16 --train.attention=flash --train.gemm_epilogue=on $O --run.output=mid-$m.h5
  ok 60 torchmid_$m python3 tests/gpu/torch_reference.py $L/mid-$m.h5 --tol 3e-2
  ok 60 dumpmid130_$m $D dump --config configs/$m-tiny.ini --backend=cuda --model.seq_len=130 --model.vocab=61 --train.batch_per_gpu=3 --model.hidden_dim=320 --model.heads=5 --precision=bf16 --train.attention=flash --train.gemm_epilogue=on --train.bias_grad=epilogue $O --run.output=mid130-$m.h5
  ok 60 torchmid130_$m python3 tests/gpu/torch_reference.py $L/mid130-$m.h5 --tol 3e-2
  tail -1 $L/torchmid_$m.log $L/torchmid130_$m.log
done
bench() { local n=$1; shift; timeout 120 $D bench "$@" > $L/bench-$n.log 2>&1; echo "== bench $n rc=$?"; grep -E "^step|GEMM FLOP rate" $L/bench-$n.log; sed -n '/where the step goes/,/largest/p' $L/bench-$n.log | sed -n '3,8p'; }
bench gpt2-small --config configs/gpt2-small.ini
DPSCALE_FLASH_FORWARD=fa2 bench gpt2-small-fa2fwd --config configs/gpt2-small.ini
bench bert-large --config configs/bert-large.ini --model.mask_fraction=1
DPSCALE_FLASH_FORWARD=fa2 bench bert-large-fa2fwd --config configs/bert-large.ini --model.mask_fraction=1
bench gpt2-xl --config configs/gpt2-xl.ini --train.batch_per_gpu=8
rm -f $L/*.h5
tar -C /tmp -czf $OUT/call3-logs.tar.gz c3
date -u

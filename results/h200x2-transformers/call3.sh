#!/usr/bin/env bash
# issue 12, GPU call 3: pipelined flash, GEMM epilogues with the residual, online xent (not committed)
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
DP=${DP:-.scratch/dpscale-c3}
O=$1; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
T="timeout 100"
c() { echo "== $*"; $T "$@" > $O/last.txt 2>&1; local rc=$?; echo "== rc=$rc"; return $rc; }
MID="--model.seq_len=80 --model.vocab=61 --train.batch_per_gpu=3 --model.hidden_dim=128"
for m in gpt bert; do
  for hp in "2 bf16 off" "4 bf16 off" "2 fp16 off" "2 bf16 forward" "2 fp32 forward"; do set -- $hp
    f=d-$m-$1-$2-$3.h5
    c $DP dump --config configs/$m-tiny.ini --backend=cuda $MID --model.heads=$1 --precision=$2 --train.gemm_epilogue=$3 --run.output_dir=$O --run.output=$f; grep -E "error" $O/last.txt
    tol=3e-2; [ $2 = fp32 ] && tol=1e-4
    python3 tests/gpu/torch_reference.py $O/$f --tol $tol | tail -1
  done
  c $DP run --config configs/$m-tiny.ini --backend=cpu $MID --model.heads=2 --train.iters=20 --run.output_dir=$O --run.output=$m-cpu.h5
  c $DP run --config configs/$m-tiny.ini --backend=cuda --precision=bf16 --train.gemm_epilogue=forward $MID --model.heads=2 --train.iters=20 --run.output_dir=$O --run.output=$m-flash.h5; grep -E "model |n=1" $O/last.txt
  python3 tests/gpu/check.py loss-close $O/$m-flash.h5 $O/$m-cpu.h5 3.9e-3
done
for cfg in bert-large gpt2-small; do
  X=""; [ $cfg = bert-large ] && X="--model.mask_fraction=1"
  c $DP bench --config configs/$cfg.ini $X --train.iters=10 --train.warmup=3; sed -n '/^phase/,$p' $O/last.txt
done
rm -f $O/*.h5
echo "== done at $SECONDS s"

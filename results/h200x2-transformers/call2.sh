#!/usr/bin/env bash
# issue 12, GPU call 2: flash attention against PyTorch and the unfused path; the presets' speed (not committed)
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
DP=${DP:-.scratch/dpscale-c2}
O=$1; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
nvidia-smi -L
T="timeout 100"
c() { echo; echo "== $*"; $T "$@"; local rc=$?; echo "== rc=$rc"; return $rc; }
MID="--model.seq_len=80 --model.vocab=61 --train.batch_per_gpu=3"
for m in gpt bert; do
  for shape in "128 2" "128 4"; do set -- $shape; C=$1; H=$2
    for att in flash unfused; do
      for p in bf16 fp16; do
        f=$O/d-$m-$C-$H-$att-$p.h5
        c $DP dump --config configs/$m-tiny.ini --backend=cuda $MID --model.hidden_dim=$C --model.heads=$H --precision=$p \
           --train.attention=$att --run.output_dir=$O --run.output=$(basename $f) | grep -E "dump:|error" &&
          c python3 tests/gpu/torch_reference.py $f --tol 3e-2 | tail -1
      done
    done
  done
  c $DP run --config configs/$m-tiny.ini --backend=cpu $MID --model.hidden_dim=128 --model.heads=2 --train.iters=20 --run.output_dir=$O --run.output=$m-cpu.h5 | tail -1
  for att in flash unfused; do
    c $DP run --config configs/$m-tiny.ini --backend=cuda --precision=bf16 --train.attention=$att $MID --model.hidden_dim=128 --model.heads=2 --train.iters=20 --run.output_dir=$O --run.output=$m-$att.h5 | grep -E "model|n=1"
    c python3 tests/gpu/check.py loss-close $O/$m-$att.h5 $O/$m-cpu.h5 3.9e-3
  done
done
c $DP bench --config configs/bert-large.ini --model.mask_fraction=1 --train.iters=10 --train.warmup=3
c $DP bench --config configs/gpt2-small.ini --train.iters=10 --train.warmup=3
c $DP run --config configs/bert-large.ini --model.mask_fraction=1 --sweep=1 --train.iters=20 --train.warmup=5 --run.output_dir=$O --run.output=bert-large-1.h5 | grep -E "model|n=1"
c $DP run --config configs/gpt2-small.ini --sweep=1 --train.iters=20 --train.warmup=5 --run.output_dir=$O --run.output=gpt2-small-1.h5 | grep -E "model|n=1"
rm -f $O/*.h5
echo "== done at $SECONDS s"

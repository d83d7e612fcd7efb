#!/usr/bin/env bash
# issue 12, first GPU call: the CUDA transformer path for the first time (not committed)
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1
O=$1; mkdir -p $O
exec > >(tee $O/log.txt) 2>&1
nvidia-smi -L
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
echo "sanitizer: $SAN"
T="timeout 100"
fail=0
c() { echo; echo "== $*"; $T "$@"; local rc=$?; echo "== rc=$rc"; [ $rc -eq 0 ] || fail=1; return $rc; }
for m in gpt bert; do
  c bin/dpscale dump --config configs/$m-tiny.ini --backend=cpu --run.output_dir=$O --run.output=dump-$m-cpu.h5
  for p in fp32 bf16; do
    tol=1e-4; [ $p = bf16 ] && tol=3e-2
    c bin/dpscale dump --config configs/$m-tiny.ini --backend=cuda --precision=$p --run.output_dir=$O --run.output=dump-$m-$p.h5 &&
      c python3 tests/gpu/torch_reference.py $O/dump-$m-$p.h5 --tol $tol
  done
  c python3 tests/gpu/check.py inputs-equal $O/dump-$m-fp32.h5 $O/dump-$m-cpu.h5
  c bin/dpscale run --config configs/$m-tiny.ini --backend=cpu --train.iters=20 --run.output_dir=$O --run.output=$m-cpu.h5 | tail -3
  c bin/dpscale run --config configs/$m-tiny.ini --backend=cuda --train.iters=20 --run.output_dir=$O --run.output=$m-cuda.h5 | tail -3
  c python3 tests/gpu/check.py loss-close $O/$m-cuda.h5 $O/$m-cpu.h5 1e-4
  c mpirun -np 1 --bind-to none bin/dpscale gradcheck --config configs/$m-tiny.ini --backend=cuda --train.batch_per_gpu=2 | tail -8
done
if [ $fail -ne 0 ] && [ -n "$SAN" ]; then
  for m in gpt bert; do
    echo "== sanitizer $m"; timeout 150 $SAN --print-limit 20 bin/dpscale dump --config configs/$m-tiny.ini --backend=cuda --run.output_dir=$O --run.output=san-$m.h5 2>&1 | head -80
  done
fi
B="--model.mask_fraction=1"
c bin/dpscale bench --config configs/bert-large.ini $B --train.iters=10 --train.warmup=3
c bin/dpscale run --config configs/bert-large.ini $B --sweep=1 --train.iters=20 --train.warmup=5 --run.output_dir=$O --run.output=bert-large-1.h5 | tail -30
c bin/dpscale bench --config configs/gpt2-small.ini --train.iters=10 --train.warmup=3
c bin/dpscale run --config configs/gpt2-small.ini --sweep=1 --train.iters=20 --train.warmup=5 --run.output_dir=$O --run.output=gpt2-small-1.h5 | tail -30
rm -f $O/*.h5
echo "== done at $SECONDS s"

#!/usr/bin/env bash
# issue 12, last short call: the NVLink efficiency knobs on BERT-Large and GPT-2 small (not committed)
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
O=$1; mkdir -p $O/h5
B="--model.mask_fraction=1 --train.iters=20 --train.warmup=5"; G="--train.iters=20 --train.warmup=5"
G16="--train.grad_dtype=compute --comm.allreduce_dtype=compute"; Z1="--comm.shard_optimizer=on --comm.symmetric=on --comm.cta_policy=zero"
r() { local l=$1; shift; echo "== $l: $*"; timeout 45 mpirun -np 2 --bind-to none bin/dpscale run --run.backend=cuda --run.sweep=1,2 --comm.path=nvlink --run.output_dir=$O/h5 --run.output=$l.h5 "$@" 2>&1 | grep -E "^nccl|rror"; }
r S-bert-g16-zero1 --config configs/bert-large.ini $B $G16 $Z1
r S-bert-g16-ctas4 --config configs/bert-large.ini $B $G16 --comm.nccl_max_ctas=4
r S-gpt-zero1 --config configs/gpt2-small.ini $G $Z1
r S-gpt-g16 --config configs/gpt2-small.ini $G $G16
tar -cf $O/s.tar -C $O/h5 . ; rm -rf $O/h5
echo "== $SECONDS s"

#!/usr/bin/env bash
# session 7, call D (2 x H200): the copy-engine path with NCCL_CREATE_THREAD_CONTEXT=1
# (binary 34f5442) against the binary without it (ab90273): dpscale comm's whole sweep,
# which hung before; BERT-Large and GPT-2 small with bf16 gradients through host memory on
# the copy engines (issue 12's configuration), A/B; the comm-bound MLP of the same settings
# (the calibration of issue 13).
set -u
OUT=$1
exec > >(tee $OUT/callD.log) 2>&1
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
tar xJf .scratch/bins.tar.xz || exit 3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
bin/dpscale --version | head -1; bin/dpscale-old --version | head -1
L() { # BIN LABEL BOUND ARGS...
    local bin=$1 label=$2 bound=$3; shift 3
    timeout -k 5 $bound mpirun -np 2 --bind-to none $bin "$@" --run.backend=cuda --run.output_dir=$OUT/d \
        --run.output=$label.h5 </dev/null >$OUT/d/$label.log 2>&1
    echo "== $label: rc=$? at $(el) s"
    grep -E "^nccl|error|NCCL_CREATE" $OUT/d/$label.log | head -6
}
mkdir -p $OUT/d
L bin/dpscale comm-host-ce 60 comm --comm.path=host --comm.shm_copy=ce
grep -E "^ +[0-9]+ +[0-9]+ " $OUT/d/comm-host-ce.log
g16=(--train.grad_dtype=compute --comm.allreduce_dtype=compute --comm.path=host --comm.shm_copy=ce --run.sweep=1,2)
L bin/dpscale bert-large-host-ce-g16 90 run --config configs/bert-large.ini --model.mask_fraction=1 --train.iters=20 "${g16[@]}"
L bin/dpscale-old bert-large-host-ce-g16-old 90 run --config configs/bert-large.ini --model.mask_fraction=1 --train.iters=20 "${g16[@]}"
L bin/dpscale gpt2-small-host-ce-g16 90 run --config configs/gpt2-small.ini --train.iters=20 "${g16[@]}"
L bin/dpscale cal-host-ce-g16 90 run --config configs/mlp-comm-bound.ini "${g16[@]}"
L bin/dpscale comm-host-ce-again 60 comm --comm.path=host --comm.shm_copy=ce
grep -E "^ +[0-9]+ +[0-9]+ " $OUT/d/comm-host-ce-again.log
tar cf $OUT/d.tar -C $OUT d && rm -rf $OUT/d
echo "done at $(el) s"

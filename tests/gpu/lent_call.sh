#!/usr/bin/env bash
# lent_call.sh — how a results/*/call.sh begins on the lent GPU machine, sourced from the
# repository root there:
#
#   source tests/gpu/lent_call.sh LOGDIR
#
# It exports what the machine needs (Open MPI as root, NVLink SHARP off, python3), unpacks the
# binaries carried as build/gpu/bins.tar.xz (bin/dpscale and bin/tests/*, built and stripped on
# the development machine) into build/gpu and points bin at them, and sets
#   D  bin/dpscale        T  bin/tests        L  LOGDIR (made)     O  dpscale's --run.output_dir=LOGDIR
# and two functions:
#   ok SECONDS NAME CMD...   runs CMD into L/NAME.log under a timeout: "== NAME: PASS (s)" or
#                            "== NAME: FAIL (rc)" and the log's last lines
#   bench NAME CMD...        runs a dpscale bench into L/bench-NAME.log: its step, GEMM rate and
#                            largest operations
# and, for the transformers,
#   against_pytorch          GPT and BERT at T = 200 in bf16 (flash attention, the epilogues)
#                            against PyTorch, gradient by gradient (tests/gpu/torch_reference.py)
#   bench_transformers       dpscale bench of GPT-2 small, BERT-Large (every position), XL
#   attention_kernel_times   Nsight Compute's time of each Hopper attention kernel at GPT-2
#                            small's shape (where ncu is there)
# Then it prints the date, dpscale's version and the GPU. Exits 3 if the binaries do not unpack.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 PYTHON=python3
python3 -c "import tarfile; tarfile.open('build/gpu/bins.tar.xz').extractall('build/gpu')" || exit 3
rm -rf bin && ln -s build/gpu/bin bin
D=bin/dpscale
L=$1
mkdir -p "$L"
# shellcheck disable=SC2034 # T and O are for the script that sources this one
T=bin/tests O="--run.output_dir=$L"
ok() {
    local t=$1 n=$2 t0=$SECONDS
    shift 2
    if timeout "$t" "$@" > "$L/$n.log" 2>&1; then echo "== $n: PASS ($((SECONDS - t0)) s)"; else echo "== $n: FAIL ($?)"; tail -8 "$L/$n.log"; fi
}
bench() {
    local n=$1
    shift
    timeout 150 "$@" > "$L/bench-$n.log" 2>&1
    echo "== bench $n rc=$?"
    grep -E "^step|GEMM FLOP rate" "$L/bench-$n.log"
    sed -n '/where the step goes/,/largest/p' "$L/bench-$n.log" | sed -n '3,9p'
}
against_pytorch() {
    local m
    for m in gpt bert; do
        ok 60 "dump_$m" $D dump --config "configs/$m-tiny.ini" --backend=cuda --model.seq_len=200 --model.vocab=61 \
            --train.batch_per_gpu=3 --model.hidden_dim=128 --model.heads=2 --precision=bf16 --train.attention=flash \
            --train.gemm_epilogue=on $O --run.output="mid-$m.h5"
        ok 60 "torch_$m" python3 tests/gpu/torch_reference.py "$L/mid-$m.h5" --tol 3e-2
        tail -1 "$L/torch_$m.log"
    done
}
bench_transformers() {
    bench gpt2-small $D bench --config configs/gpt2-small.ini
    bench bert-large $D bench --config configs/bert-large.ini --model.mask_fraction=1
    bench gpt2-xl $D bench --config configs/gpt2-xl.ini --train.batch_per_gpu=8
}
attention_kernel_times() {
    command -v ncu > /dev/null || return 0
    ok 200 ncu_attention ncu -k "regex:fa90_(forward|backward_dkdv|backward_dq)" -c 3 \
        --metrics gpu__time_duration.sum,sm__inst_executed.sum $D run --config configs/gpt2-small.ini \
        --run.backend=cuda --model.layers=1 --train.iters=1 --train.warmup=0 --run.sweep=1 $O --run.output=ncu.h5
    grep -E "^  [a-z].*\(|gpu__time|inst_executed" "$L/ncu_attention.log" | head -16
}
date -u
$D --version 2>&1 | head -1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader

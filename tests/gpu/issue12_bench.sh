#!/usr/bin/env bash
# issue12_bench.sh — issue 12's bars on the 2 x H200 machine, in one call: BERT-Large and
# GPT-2 small (bf16, fp32 master weights, AdamW, loss on every position) on 1 and 2 GPUs
# over NVLink and through host memory, dpscale bench on BERT-Large, and PyTorch eager DDP
# on the same shapes (tests/gpu/transformer_ddp_reference.py) measured beside them.
#
#   tests/gpu/issue12_bench.sh OUTDIR [SECTIONS]     from the repo root, bin/dpscale prebuilt
#
# Sections (letters, in the order given; default VBGZR):
#   V  the transformers against PyTorch first (dpscale dump + tests/gpu/torch_reference.py,
#      CUDA fp32 and bf16): the bars mean nothing for a step that is not the model
#   B  BERT-Large, batch 16, --model.mask_fraction=1: nvlink (sweep 1,2), pcie (sweep 1,2)
#   G  GPT-2 small, batch 16: nvlink, pcie
#   X  GPT-2 XL, batch 4, nvlink (the communication-heavy end; not a bar)
#   Z  dpscale bench on BERT-Large: the step against its GEMMs alone, the largest non-GEMM part
#   R  the PyTorch reference: bert and gpt, autocast (fp32 master) and bf16, 1 and 2 GPUs;
#      bert through host memory (NCCL_P2P_DISABLE=1)
# Writes OUTDIR/issue12.log (everything), OUTDIR/issue12-h5.tar (dpscale's files) and the
# `dpscale report` tables (Markdown, tokens/s) at the end of the log. Each launch is bounded
# by ISSUE12_RUN_TIMEOUT_S (default 150 s); the whole by ISSUE12_BUDGET_S (default 560 s).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
usage="usage: tests/gpu/issue12_bench.sh OUTDIR [SECTIONS of VBGXZR; default VBGZR]"
[ $# -ge 1 ] && [ -n "$1" ] || { echo "$usage" >&2; exit 2; }
SECTIONS=${2:-VBGZR}
[[ $SECTIONS =~ ^[VBGXZR]+$ ]] || { echo "$usage; got '$SECTIONS'" >&2; exit 2; }
mkdir -p "$1" || exit 2
OUTDIR=$(cd "$1" && pwd) || exit 2
LOG=$OUTDIR/issue12.log TAR=$OUTDIR/issue12-h5.tar
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
DPSCALE=${DPSCALE:-bin/dpscale}
PY=${PYTHON:-python3}
read -r -a TORCHRUN <<<"${TORCHRUN:-python3 -m torch.distributed.run}"
BUDGET_S=${ISSUE12_BUDGET_S:-560}
RUN_TIMEOUT_S=${ISSUE12_RUN_TIMEOUT_S:-150}
H5DIR=$(mktemp -d "${TMPDIR:-/tmp}/issue12.XXXXXX") || exit 2
trap 'rm -rf "$H5DIR"' EXIT

main() {
    local nfail=0
    run() { # LABEL COMMAND...: bounded by the budget; never aborts the script
        local label=$1; shift
        local left=$((BUDGET_S - 20 - SECONDS))
        if ((left < 20)); then echo "== $label: SKIPPED (budget spent): $*"; return 99; fi
        local limit=$((left < RUN_TIMEOUT_S ? left : RUN_TIMEOUT_S))
        echo; echo "== $label [t=${SECONDS}s, limit ${limit}s]: $*"
        timeout -k 10 "$limit" "$@" </dev/null 2>&1
        local rc=$?
        if ((rc == 0)); then echo "== $label: exit 0"; else echo "== $label: FAILED, exit $rc"; nfail=$((nfail + 1)); fi
        return "$rc"
    }
    dp() { # LABEL CONFIG ARGS...: dpscale on 2 ranks, sweep 1,2, into LABEL.h5 and the tar
        local label=$1 config=$2; shift 2
        run "$label" mpirun -np 2 --bind-to none "$DPSCALE" run --config "$config" --run.backend=cuda --run.sweep=1,2 \
            --run.output_dir="$H5DIR" --run.output="$label.h5" "$@"
        [ -f "$H5DIR/$label.h5" ] && tar -rf "$TAR" -C "$H5DIR" "$label.h5"
    }
    ref() { # LABEL "VAR=VALUE ..." ARGS...: the PyTorch reference on 1 GPU, then on 2
        local label=$1 envs=$2 np; shift 2
        for np in 1 2; do
            # shellcheck disable=SC2086
            run "$label-n$np" env $envs "${TORCHRUN[@]}" --standalone --nproc_per_node="$np" \
                tests/gpu/transformer_ddp_reference.py "$@"
        done
    }
    echo "issue12_bench: sections $SECTIONS, $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
    nvidia-smi -L 2>&1
    rm -f "$TAR"
    local bert=(--model.mask_fraction=1 --train.iters=20 --train.warmup=5)
    local gpt=(--train.iters=20 --train.warmup=5)
    local i
    for ((i = 0; i < ${#SECTIONS}; i++)); do
        case ${SECTIONS:i:1} in
        V)
            echo; echo "######## V. the transformers against PyTorch (CUDA fp32 and bf16)"
            for m in gpt bert; do
                run dump-$m-32 "$DPSCALE" dump --config configs/$m-tiny.ini --backend=cuda --run.output_dir="$H5DIR" \
                    --run.output=dump-$m-32.h5 && run torch-$m-32 "$PY" tests/gpu/torch_reference.py "$H5DIR/dump-$m-32.h5" --tol 1e-4
                run dump-$m-16 "$DPSCALE" dump --config configs/$m-tiny.ini --backend=cuda --precision=bf16 \
                    --run.output_dir="$H5DIR" --run.output=dump-$m-16.h5 &&
                    run torch-$m-16 "$PY" tests/gpu/torch_reference.py "$H5DIR/dump-$m-16.h5" --tol 3e-2
            done ;;
        B)
            echo; echo "######## B. BERT-Large, batch 16 per GPU, loss on every position"
            dp B-bert-large-nvlink configs/bert-large.ini "${bert[@]}" --comm.path=nvlink
            dp B-bert-large-pcie configs/bert-large.ini "${bert[@]}" --comm.path=pcie ;;
        G)
            echo; echo "######## G. GPT-2 small, batch 16 per GPU"
            dp G-gpt2-small-nvlink configs/gpt2-small.ini "${gpt[@]}" --comm.path=nvlink
            dp G-gpt2-small-pcie configs/gpt2-small.ini "${gpt[@]}" --comm.path=pcie ;;
        X)
            echo; echo "######## X. GPT-2 XL, batch 4 per GPU, NVLink"
            dp X-gpt2-xl-nvlink configs/gpt2-xl.ini "${gpt[@]}" --comm.path=nvlink ;;
        Z)
            echo; echo "######## Z. dpscale bench, BERT-Large: the step against its GEMMs alone"
            run Z-bench "$DPSCALE" bench --config configs/bert-large.ini --run.backend=cuda "${bert[@]}" ;;
        R)
            echo; echo "######## R. the PyTorch eager reference (SDPA attention, fused AdamW), DDP at 2 GPUs"
            ref R-bert-autocast "" --model bert --mode autocast
            ref R-bert-bf16 "" --model bert --mode bf16
            ref R-gpt-autocast "" --model gpt --mode autocast
            ref R-bert-autocast-pcie "NCCL_P2P_DISABLE=1" --model bert --mode autocast ;;
        esac
    done
    echo; echo "== dpscale report of every file (tokens/s)"
    local f
    for f in "$H5DIR"/[BGX]-*.h5; do [ -f "$f" ] && "$DPSCALE" report "$f"; done
    echo "== $nfail launches failed; ${SECONDS} s"
    ((nfail == 0))
}

main 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"

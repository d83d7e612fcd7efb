#!/usr/bin/env bash
# bench_transformers.sh — the transformers on the 2 x H200 machine, in one call: BERT-Large and
# GPT-2 small (bf16, fp32 master weights, AdamW, loss on every position) on 1 and 2 GPUs
# over NVLink and through host memory, dpscale bench on BERT-Large, and PyTorch eager DDP
# on the same shapes (tests/gpu/transformer_ddp_reference.py) measured beside them.
#
#   tests/gpu/bench_transformers.sh OUTDIR [SECTIONS]     from the repo root, bin/dpscale prebuilt
#
# Sections (letters, in the order given; default VBGZRP):
#   V  the transformers against PyTorch first (dpscale dump + tests/gpu/torch_reference.py): the
#      tiny presets in fp32 (unfused attention), and a shape with head dimension 64, a sequence of
#      80 (no multiple of the 64-row tiles) and a vocabulary of 61 (padded logits) in bf16 with the
#      presets' flash attention and GEMM epilogues (forward and backward: GELU' in cuBLASLt's
#      DGELU, and with bf16 gradients fc1's bias gradient too, DGELU_BGRAD), the tiny presets in
#      fp32 with the epilogues; then data-parallel equivalence (2 x 4 sequences against 1 x 8, fp32,
#      NCCL): the speeds mean nothing for a step that is not the model
#   B  BERT-Large, batch 16, --model.mask_fraction=1, sweep 1,2: nvlink with fp32 gradients (as the
#      framework's autocast DDP) and with bf16 gradients (train.grad_dtype and comm.allreduce_dtype =
#      compute; the master weights and AdamW state stay fp32); host memory (comm.path = host) with
#      bf16 gradients and NCCL's host-memory copies on the copy engines (comm.shm_copy = ce)
#   P  BERT-Large through host memory with fp32 gradients
#   G  GPT-2 small, batch 16: nvlink (fp32 gradients), host memory (bf16 gradients)
# Labels with "pcie" (B-bert-large-pcie-g16, ...) keep the names of the files in results/:
# the path through host memory, comm.path = pcie before schema 6, host now.
#   X  GPT-2 XL, batch 4, nvlink (the communication-heavy end)
#   Z  dpscale bench on BERT-Large and GPT-2 small: the step against its GEMMs alone, the
#      largest non-GEMM part
#   W  BERT-Large over NVLink with bf16 gradients, the knobs against interference beside
#      backward: 50 MB buckets, 8 SMs left by the GEMMs, ZeRO-1 with symmetric zero-CTA NCCL
#   N  Nsight Compute on the flash attention kernels (BERT-Large's shape, 2 layers): speed of
#      light, occupancy, warp stalls, one launch of each
#   R  the PyTorch reference: bert and gpt, autocast (fp32 master), 1 and 2 GPUs
#   Q  more of it: bert in pure bf16 on 1 GPU; bert through host memory (NCCL_P2P_DISABLE=1) on 2
# Writes OUTDIR/bench-transformers.log (everything), OUTDIR/bench-transformers-h5.tar
# (dpscale's files) and the `dpscale report` tables (Markdown, tokens/s) at the end of the log. Each launch is bounded
# by BENCH_RUN_TIMEOUT_S (default 150 s); the whole by BENCH_BUDGET_S (default 560 s).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
usage="usage: tests/gpu/bench_transformers.sh OUTDIR [SECTIONS of VBGPQXZRNW; default VBGZRP]"
[ $# -ge 1 ] && [ -n "$1" ] || { echo "$usage" >&2; exit 2; }
SECTIONS=${2:-VBGZRP}
[[ $SECTIONS =~ ^[VBGPQXZRNW]+$ ]] || { echo "$usage; got '$SECTIONS'" >&2; exit 2; }
mkdir -p "$1" || exit 2
OUTDIR=$(cd "$1" && pwd) || exit 2
LOG=$OUTDIR/bench-transformers.log TAR=$OUTDIR/bench-transformers-h5.tar
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
DPSCALE=${DPSCALE:-bin/dpscale}
PY=${PYTHON:-python3}
read -r -a TORCHRUN <<<"${TORCHRUN:-python3 -m torch.distributed.run}"
BUDGET_S=${BENCH_BUDGET_S:-560}
RUN_TIMEOUT_S=${BENCH_RUN_TIMEOUT_S:-150}
H5DIR=$(mktemp -d "${TMPDIR:-/tmp}/bench-transformers.XXXXXX") || exit 2
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
    ref() { # LABEL "VAR=VALUE ..." "NPROCS" ARGS...: the PyTorch reference on each of NPROCS GPUs
        local label=$1 envs=$2 nps=$3 np; shift 3
        for np in $nps; do
            # shellcheck disable=SC2086
            run "$label-n$np" env $envs "${TORCHRUN[@]}" --standalone --nproc_per_node="$np" \
                tests/gpu/transformer_ddp_reference.py "$@"
        done
    }
    echo "bench_transformers: sections $SECTIONS, $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
    nvidia-smi -L 2>&1
    rm -f "$TAR"
    local bert=(--model.mask_fraction=1 --train.iters=20 --train.warmup=5)
    local gpt=(--train.iters=20 --train.warmup=5)
    local g16=(--train.grad_dtype=compute --comm.allreduce_dtype=compute)
    local i
    for ((i = 0; i < ${#SECTIONS}; i++)); do
        case ${SECTIONS:i:1} in
        V)
            echo; echo "######## V. the transformers against PyTorch (CUDA fp32 and bf16)"
            local mid=(--model.seq_len=80 --model.vocab=61 --model.hidden_dim=128 --model.heads=2
                --train.batch_per_gpu=3 --precision=bf16 --train.attention=flash --train.gemm_epilogue=on)
            for m in gpt bert; do
                run dump-$m-32 "$DPSCALE" dump --config configs/$m-tiny.ini --backend=cuda --run.output_dir="$H5DIR" \
                    --run.output=dump-$m-32.h5 && run torch-$m-32 "$PY" tests/gpu/torch_reference.py "$H5DIR/dump-$m-32.h5" --tol 1e-4
                run dump-$m-32e "$DPSCALE" dump --config configs/$m-tiny.ini --backend=cuda --train.gemm_epilogue=on \
                    --run.output_dir="$H5DIR" --run.output=dump-$m-32e.h5 &&
                    run torch-$m-32e "$PY" tests/gpu/torch_reference.py "$H5DIR/dump-$m-32e.h5" --tol 1e-4
                run dump-$m-16 "$DPSCALE" dump --config configs/$m-tiny.ini --backend=cuda "${mid[@]}" \
                    --run.output_dir="$H5DIR" --run.output=dump-$m-16.h5 &&
                    run torch-$m-16 "$PY" tests/gpu/torch_reference.py "$H5DIR/dump-$m-16.h5" --tol 3e-2
                run dump-$m-16g "$DPSCALE" dump --config configs/$m-tiny.ini --backend=cuda "${mid[@]}" \
                    --train.grad_dtype=compute --comm.allreduce_dtype=compute --run.output_dir="$H5DIR" \
                    --run.output=dump-$m-16g.h5 &&
                    run torch-$m-16g "$PY" tests/gpu/torch_reference.py "$H5DIR/dump-$m-16g.h5" --tol 3e-2
                run dp-$m mpirun -np 2 --bind-to none "$DPSCALE" run --config configs/$m-tiny.ini --backend=cuda \
                    --train.scaling=strong --train.global_batch=8 --run.sweep=1,2 --run.save_params=on \
                    --run.output_dir="$H5DIR" --run.output=dp-$m.h5 &&
                    run dp-equivalence-$m "$PY" tests/gpu/check.py params-close "$H5DIR/dp-$m.h5" 1e-5
            done ;;
        B)
            echo; echo "######## B. BERT-Large, batch 16 per GPU, loss on every position"
            dp B-bert-large-nvlink configs/bert-large.ini "${bert[@]}" --comm.path=nvlink
            dp B-bert-large-nvlink-g16 configs/bert-large.ini "${bert[@]}" "${g16[@]}" --comm.path=nvlink
            dp B-bert-large-pcie-g16 configs/bert-large.ini "${bert[@]}" "${g16[@]}" --comm.path=host --comm.shm_copy=ce ;;
        G)
            echo; echo "######## G. GPT-2 small, batch 16 per GPU"
            dp G-gpt2-small-nvlink configs/gpt2-small.ini "${gpt[@]}" --comm.path=nvlink
            dp G-gpt2-small-nvlink-g16 configs/gpt2-small.ini "${gpt[@]}" "${g16[@]}" --comm.path=nvlink
            dp G-gpt2-small-pcie-g16 configs/gpt2-small.ini "${gpt[@]}" "${g16[@]}" --comm.path=host --comm.shm_copy=ce ;;
        W)
            echo; echo "######## W. BERT-Large over NVLink, bf16 gradients: the knobs against interference"
            dp W-bert-g16-bucket50 configs/bert-large.ini "${bert[@]}" "${g16[@]}" --comm.path=nvlink --comm.bucket_mb=50
            dp W-bert-g16-margin8 configs/bert-large.ini "${bert[@]}" "${g16[@]}" --comm.path=nvlink --train.gemm_sm_margin=8
            dp W-bert-g16-zero1 configs/bert-large.ini "${bert[@]}" "${g16[@]}" --comm.path=nvlink \
                --comm.shard_optimizer=on --comm.symmetric=on --comm.cta_policy=zero ;;
        P)
            echo; echo "######## P. BERT-Large through host memory with fp32 gradients (as the framework's autocast DDP)"
            dp P-bert-large-pcie configs/bert-large.ini "${bert[@]}" --comm.path=host --comm.shm_copy=ce ;;
        X)
            echo; echo "######## X. GPT-2 XL, batch 4 per GPU, NVLink"
            dp X-gpt2-xl-nvlink configs/gpt2-xl.ini "${gpt[@]}" --comm.path=nvlink ;;
        Z)
            echo; echo "######## Z. dpscale bench, BERT-Large: the step against its GEMMs alone"
            run Z-bench "$DPSCALE" bench --config configs/bert-large.ini --run.backend=cuda "${bert[@]}"
            run Z-bench-gpt "$DPSCALE" bench --config configs/gpt2-small.ini --run.backend=cuda "${gpt[@]}" ;;
        N)
            echo; echo "######## N. Nsight Compute on the flash attention kernels (BERT-Large's shape, 2 layers)"
            local kname
            for kname in fa_forward fa_backward_dkdv fa_backward_dq; do
                run N-$kname ncu -k "regex:^$kname" -c 1 --section SpeedOfLight --section Occupancy \
                    --section WarpStateStats --section LaunchStats --section ComputeWorkloadAnalysis \
                    "$DPSCALE" run --config configs/bert-large.ini --run.backend=cuda --model.layers=2 \
                    --train.iters=1 --train.warmup=0 --run.sweep=1 --run.output_dir="$H5DIR" --run.output=N-$kname.h5
            done ;;
        R)
            echo; echo "######## R. the PyTorch eager reference (SDPA attention, fused AdamW), DDP at 2 GPUs"
            ref R-bert-autocast "" "1 2" --model bert --mode autocast
            ref R-gpt-autocast "" "1 2" --model gpt --mode autocast ;;
        Q)
            echo; echo "######## Q. more of the PyTorch reference: bert in pure bf16, bert through host memory"
            ref Q-bert-bf16 "" "1" --model bert --mode bf16
            ref Q-bert-autocast-pcie "NCCL_P2P_DISABLE=1" "2" --model bert --mode autocast ;;
        esac
    done
    echo; echo "== dpscale report of every file (tokens/s)"
    local f
    for f in "$H5DIR"/[BGPXW]-*.h5; do [ -f "$f" ] && "$DPSCALE" report "$f"; done
    echo "== $nfail launches failed; ${SECONDS} s"
    ((nfail == 0))
}

main 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"

#!/usr/bin/env bash
# bench_peers.sh — dpscale's training step beside its strongest peers, on one GPU, in one call:
# llm.c (karpathy/llm.c's train_gpt2.cu with cuDNN attention) on GPT-2, and PyTorch's
# torch.compile (tests/gpu/transformer_ddp_reference.py and resnet_ddp_reference.py with
# --compile) on GPT-2, BERT-Large and ResNet-50, each at the shape dpscale runs:
#
#   model       shape, one GPU                        dpscale                 llm.c + cuDNN      torch.compile
#   gpt2-small  16 x 1024, bf16 + fp32 master, AdamW  configs/gpt2-small.ini  -e d12 -r 0        nanoGPT-style GPT-2
#   gpt2-xl     8 x 1024, the same                    configs/gpt2-xl.ini     -e d48 -r 0 -ge 1  the same, if time is left
#   bert-large  16 x 512, loss on every position      configs/bert-large.ini  -                  BERT-Large
#   resnet50    256 x 224^2, bf16 autocast, SGD       configs/resnet50.ini    -                  torchvision's resnet50
# (llm.c's flags are those of its own GPT-2 reproduction scripts: no recomputation, and for
# 1558M the GELU fused into the GEMM's epilogue.)
#
#   [LLMC_DIR=DIR CUDNN_FRONTEND_DIR=DIR] tests/gpu/bench_peers.sh OUTDIR     from the repo root, bin/dpscale prebuilt
#
# Environment:
#   LLMC_DIR             llm.c's source tree (tests/gpu/peer_sources.sh exports one); unset: no llm.c
#   CUDNN_FRONTEND_DIR   cudnn-frontend's tree (its include/ is what llm.c needs); required with LLMC_DIR
#   CUDNN_DIR            cuDNN's include/ and lib/ for llm.c (default: python's nvidia.cudnn, the
#                        one PyTorch loads; else the CUDA toolkit's)
#   LLMC_BUILD_DIR       where llm.c is built out of tree and cached (default build/peers/llmc)
#   BENCH_PEERS_BUDGET_S the whole call (default 540); each launch is bounded by what is left and by
#   DPSCALE_TIMEOUT_S (150), LLMC_BUILD_TIMEOUT_S (300), LLMC_TIMEOUT_S (150), TORCH_TIMEOUT_S (240)
#   BENCH_PEERS_TORCH_XL auto (default: torch.compile on GPT-2 XL when 240 s are left at its turn), on, off
#   BENCH_PEERS_MODELS   the models to run, of those above (default all), e.g. "resnet50 bert-large";
#                        llm.c is built only when a GPT-2 is among them
#   DPSCALE (bin/dpscale), PYTHON (python3)
#
# Each program runs its own warm-up (dpscale's config 5 steps, llm.c's first 10 or 5 steps
# dropped here, torch.compile's 10 steps holding the compilation) and is read by its median
# step; a program that fails or overruns is a FAILED cell with its reason, and the others go on.
# Writes OUTDIR/bench-peers.log (provenance, every program's output, one `PEERS` line per
# model, the Markdown table at the end), OUTDIR/bench-peers.md (the table alone),
# OUTDIR/h5/ (dpscale's result files) and OUTDIR/llmc-build.log.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd) || exit 2
# shellcheck source=tests/gpu/llmc_peer.sh
source "$ROOT/tests/gpu/llmc_peer.sh"
usage="usage: [LLMC_DIR=DIR CUDNN_FRONTEND_DIR=DIR] tests/gpu/bench_peers.sh OUTDIR"

MODELS=(gpt2-small gpt2-xl bert-large resnet50)
declare -A TITLE=([gpt2-small]="GPT-2 small" [gpt2-xl]="GPT-2 XL" [bert-large]="BERT-Large" [resnet50]="ResNet-50")
declare -A SHAPE=([gpt2-small]="16 × 1024, bf16 + fp32 master, AdamW" [gpt2-xl]="8 × 1024, bf16 + fp32 master, AdamW"
    [bert-large]="16 × 512, loss on all positions, AdamW" [resnet50]="256 × 224², bf16, SGD")
declare -A UNITS=([gpt2-small]=1024 [gpt2-xl]=1024 [bert-large]=512 [resnet50]=1) # per sample
declare -A UNIT=([gpt2-small]=tokens [gpt2-xl]=tokens [bert-large]=tokens [resnet50]=images)
declare -A PEER_NAME=([dpscale]=dpscale [llmc]="llm.c+cuDNN" [torch]=torch.compile)
# results, by "model/peer": step in ms and throughput, or a note (FAILED: ..., SKIPPED: ..., not run: ...)
declare -A STEP_MS RATE NOTE

# ---------------------------------------------------------------- parsing (each reads a program's output)

# median: the median of the numbers on stdin (the mean of the middle two when even), or nothing
median() {
    sort -g | awk '{ v[n++] = $1 } END { if (n) printf "%.4f\n", n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2 }'
}

# parse_dpscale LOG UNITS: "STEP_MS RATE" from the 1-rank row of dpscale run's scaling table
# (comm/path ranks nodes batch step_ms p05_ms p95_ms samples/s ...); RATE = samples/s x UNITS
parse_dpscale() {
    awk -v u="$2" '
        $1 == "comm/path" && $2 == "ranks" && $3 == "nodes" && $5 == "step_ms" && $8 == "samples/s" { table = 1; next }
        table && NF == 0 { table = 0 }
        table && $2 == 1 && $5 > 0 && $8 > 0 { printf "%.3f %.1f\n", $5, $8 * u; found = 1; exit }
        END { exit !found }' "$1"
}

# parse_llmc LOG WARMUP TOKENS_PER_STEP: "STEP_MS RATE N" over llm.c's steps after WARMUP, from its lines
#   step   12/40 | loss 10.981 (+0.00z)| norm 1.2345 (+0.00z)| lr 6.00e-04 | 33.81 ms | 52.1% bf16 MFU | 484221 tok/s
# (its tok/s is a moving average; the rate here is TOKENS_PER_STEP over the median step). Fails on a NaN loss.
parse_llmc() {
    local times n med
    grep -qiE '^step +[0-9]+/[0-9]+ \| loss +-?nan' "$1" && return 1
    times=$(awk -v w="$2" -F'|' '
        $1 ~ /^step +[0-9]+\/[0-9]+ *$/ {
            split($1, s, /[ \/]+/)
            if (s[2] + 0 <= w) next
            for (i = 2; i <= NF; i++) if ($i ~ /^ *[0-9.]+ ms *$/) { sub(/ ms */, "", $i); print $i + 0 }
        }' "$1")
    n=$(printf '%s\n' "$times" | grep -c .)
    ((n >= 3)) || return 1
    med=$(printf '%s\n' "$times" | median)
    awk -v m="$med" -v t="$3" -v n="$n" 'BEGIN { printf "%.3f %.1f %d\n", m, t / (m / 1e3), n }'
}

# ref_field LINE KEY: the value of KEY=VALUE in LINE
ref_field() { printf '%s\n' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }

# parse_torch LOG: "STEP_MS RATE COMPILE NEW_GRAPHS FIRST_STEP_S" from the reference's last line
#   TRANSFORMER_REFERENCE ... step_ms=35.5 ... tokens_per_s=461500.0 compile=default first_step_s=48.10 new_graphs=0
#   RESNET_REFERENCE ... step_ms=37.7 ... images_per_s=6794.0 ... compile=default first_step_s=60.00 new_graphs=0
parse_torch() {
    local line step rate
    line=$(grep -E '^(TRANSFORMER|RESNET)_REFERENCE ' "$1" | tail -1)
    [ -n "$line" ] || return 1
    step=$(ref_field "$line" step_ms)
    rate=$(ref_field "$line" tokens_per_s)
    [ -n "$rate" ] || rate=$(ref_field "$line" images_per_s)
    [ -n "$step" ] && [ -n "$rate" ] || return 1
    echo "$step $rate $(ref_field "$line" compile) $(ref_field "$line" new_graphs) $(ref_field "$line" first_step_s)"
}

# fail_reason RC LIMIT LOG: why a launch gave no figure, in one line fit for a table cell
fail_reason() {
    local rc=$1 limit=$2 log=$3 line
    if ((rc == 124 || rc == 137)); then echo "timed out after $limit s"; return; fi
    # the last line that names an error (with the next one where it ends in a colon, as llm.c's
    # "[CUDA ERROR] at file F:L:" does), else the last line
    line=$(awk '/[Ee]rror|ERROR|out of memory|Assertion|assert/ && !/^ *File / { last = $0; join = /:$/; next }
                join { last = last " " $0; join = 0 } END { print last }' "$log" 2>/dev/null)
    [ -n "$line" ] || line=$(grep -v '^[[:space:]]*$' "$log" 2>/dev/null | tail -1)
    line=$(printf '%s' "$line" | tr -s '\t|' '  ' | cut -c1-160)
    if ((rc == 0)); then echo "exit 0 but no step figures: ${line:-no output}"; else echo "exit $rc: ${line:-no output}"; fi
}

# ---------------------------------------------------------------- running

# left_s: seconds of the budget left, less a margin for the table
left_s() { echo $((BUDGET_S - 15 - SECONDS)); }

# run_bounded LABEL WANT_S LOG COMMAND...: COMMAND bounded by WANT_S and the budget, its output into
# LOG and the main log; sets RUN_RC and RUN_LIMIT; 99 when the budget has no room for it
run_bounded() {
    local label=$1 want=$2 log=$3 left t0=$SECONDS
    shift 3
    left=$(left_s)
    RUN_LIMIT=$((left < want ? left : want)) RUN_RC=99
    if ((RUN_LIMIT < 30)); then
        echo "== $label: SKIPPED, budget spent (t=${SECONDS} s of $BUDGET_S)"
        return 99
    fi
    echo
    echo "== $label [t=${SECONDS} s, limit ${RUN_LIMIT} s]: $*"
    timeout -k 10 "$RUN_LIMIT" "$@" </dev/null 2>&1 | tee "$log"
    RUN_RC=${PIPESTATUS[0]}
    echo "== $label: exit $RUN_RC after $((SECONDS - t0)) s"
    return "$RUN_RC"
}

# record MODEL PEER PARSED_OR_EMPTY LOG: the figures, or FAILED/SKIPPED with the reason
record() {
    local key=$1/$2 parsed=$3 log=$4
    if [ -n "$parsed" ]; then
        read -r "STEP_MS[$key]" "RATE[$key]" _ <<<"$parsed"
    elif ((RUN_RC == 99)); then
        NOTE[$key]="SKIPPED: budget spent"
    else
        NOTE[$key]="FAILED: $(fail_reason "$RUN_RC" "$RUN_LIMIT" "$log")"
    fi
}

# wanted MODEL: whether MODEL is among the models this call runs
wanted() { [[ " ${MODELS[*]} " == *" $1 "* ]]; }

run_dpscale() { # MODEL CONFIG ARGS...
    local model=$1 config=$2 log=$WORK/dpscale-$1.log parsed=""
    shift 2
    wanted "$model" || return 0
    if [ ! -x "$DPSCALE" ]; then NOTE[$model/dpscale]="FAILED: no $DPSCALE (build it: make)"; return; fi
    run_bounded "dpscale $model" "$DPSCALE_TIMEOUT_S" "$log" "$DPSCALE" run --config "$config" --run.backend=cuda \
        --run.sweep=1 --run.output_dir="$OUTDIR/h5" --run.output="$model.h5" "$@" &&
        parsed=$(parse_dpscale "$log" "${UNITS[$model]}")
    record "$model" dpscale "$parsed" "$log"
}

run_llmc() { # MODEL WARMUP STEPS BATCH ARGS...
    local model=$1 warmup=$2 steps=$3 batch=$4 log=$WORK/llmc-$1.log parsed=""
    shift 4
    wanted "$model" || return 0
    if [ -z "$LLMC_BIN" ]; then NOTE[$model/llmc]=$LLMC_STATE; return; fi
    run_bounded "llm.c $model" "$LLMC_TIMEOUT_S" "$log" env -C "$WORK" LD_LIBRARY_PATH="$LLMC_LIBRARY_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        "$LLMC_BIN" -i "$TOKENS/train.bin" -j "$TOKENS/val.bin" -b "$batch" -t 1024 -x "$steps" \
        -v 1000000 -m 1 -s 0 -h 0 -n 0 -z 0 -l 0.0006 -c 0.1 "$@" &&
        parsed=$(parse_llmc "$log" "$warmup" $((batch * 1024)))
    record "$model" llmc "$parsed" "$log"
    [ -n "$parsed" ] && echo "== llm.c $model: median of the ${parsed##* } steps after the first $warmup"
}

run_torch() { # MODEL SCRIPT ARGS...
    local model=$1 script=$2 log=$WORK/torch-$1.log parsed="" compile graphs first
    shift 2
    wanted "$model" || return 0
    if [ -n "$TORCH_STATE" ]; then NOTE[$model/torch]=$TORCH_STATE; return; fi
    run_bounded "torch.compile $model" "$TORCH_TIMEOUT_S" "$log" "$PY" "$script" --compile "$@" &&
        parsed=$(parse_torch "$log")
    record "$model" torch "$parsed" "$log"
    if [ -n "$parsed" ]; then
        read -r _ _ compile graphs first <<<"$parsed"
        echo "== torch.compile $model: mode $compile, first step ${first} s (compilation), graphs compiled while timed: $graphs"
        [ "$graphs" = 0 ] || NOTE[$model/torch]="compiled while timed ($graphs graphs)"
    fi
}

# ---------------------------------------------------------------- the report

# cell MODEL PEER: "50.30 ms (325.7k tok/s)", or the note, or —
cell() {
    local key=$1/$2
    if [ -n "${STEP_MS[$key]:-}" ]; then
        awk -v s="${STEP_MS[$key]}" -v r="${RATE[$key]}" -v u="${UNIT[$1]}" -v n="${NOTE[$key]:-}" 'BEGIN {
            rate = r >= 1e4 ? sprintf("%.1fk", r / 1e3) : sprintf("%.0f", r)
            printf "%.2f ms (%s %s/s)%s", s, rate, (u == "tokens" ? "tok" : "img"), (n != "" ? "; " n : "") }'
    else
        printf '%s' "${NOTE[$key]:-—}"
    fi
}

# ratio MODEL PEER: dpscale's throughput over the peer's, or —
ratio() {
    local d=${RATE[$1/dpscale]:-} p=${RATE[$1/$2]:-}
    if [ -n "$d" ] && [ -n "$p" ]; then awk -v d="$d" -v p="$p" 'BEGIN { printf "%.3f", d / p }'; else printf '—'; fi
}

report_lines() {
    local m p line
    echo
    for m in "${MODELS[@]}"; do
        line="PEERS $m (${SHAPE[$m]}): dpscale $(cell "$m" dpscale)"
        for p in llmc torch; do
            line+=" | ${PEER_NAME[$p]} $(cell "$m" "$p"), dpscale/${PEER_NAME[$p]} $(ratio "$m" "$p")"
        done
        echo "$line"
    done
}

report_table() {
    local m
    echo "| model | shape, one GPU | dpscale | llm.c + cuDNN | torch.compile | dpscale / llm.c | dpscale / torch.compile |"
    echo "|---|---|---:|---:|---:|---:|---:|"
    for m in "${MODELS[@]}"; do
        echo "| ${TITLE[$m]} | ${SHAPE[$m]} | $(cell "$m" dpscale) | $(cell "$m" llmc) | $(cell "$m" torch) |" \
            "$(ratio "$m" llmc) | $(ratio "$m" torch) |"
    done
    echo
    echo "Median step after each program's warm-up; ratio = dpscale's throughput / the peer's (above 1: dpscale faster)."
}

# ---------------------------------------------------------------- provenance

provenance() {
    local c
    echo "bench_peers: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), budget $BUDGET_S s"
    if c=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null); then
        echo "dpscale tree: $c$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
    else
        echo "dpscale tree: no git here"
    fi
    if [ -x "$DPSCALE" ]; then "$DPSCALE" version 2>&1 | sed 's/^/dpscale binary: /'; else echo "dpscale binary: none at $DPSCALE"; fi
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv,noheader 2>&1 |
        sed 's/^/GPU: /'
    echo "nvcc: $("$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")" --version 2>/dev/null | grep -m1 release || echo none)"
    "$PY" - <<'EOF' 2>&1 | sed 's/^/python: /'
import sys
print(sys.version.split()[0])
try:
    import torch
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()})")
    import triton
    print(f"triton {triton.__version__}")
    import torchvision
    print(f"torchvision {torchvision.__version__}")
except ImportError as e:
    print(f"import failed: {e}")
EOF
    if [ -n "${LLMC_DIR:-}" ]; then
        echo "llm.c: $LLMC_DIR, commit $(llmc_source_commit "$LLMC_DIR")"
        echo "cudnn-frontend: ${CUDNN_FRONTEND_DIR:-unset}, version $(llmc_frontend_version "${CUDNN_FRONTEND_DIR:-/nonexistent}")," \
            "commit $(llmc_source_commit "${CUDNN_FRONTEND_DIR:-/nonexistent}")"
        c=$(llmc_cudnn_home) && echo "cuDNN for llm.c: $c, version $(llmc_cudnn_version "$c")" ||
            echo "cuDNN for llm.c: none found"
    else
        echo "llm.c: not run (LLMC_DIR unset)"
    fi
}

# ---------------------------------------------------------------- the call

prepare_llmc() { # sets LLMC_BIN, LLMC_LIBRARY_PATH, LLMC_STATE (the cell of every llm.c row when there is no binary)
    LLMC_BIN="" LLMC_STATE=""
    if [ -z "${LLMC_DIR:-}" ]; then LLMC_STATE="not run: LLMC_DIR unset"; return; fi
    wanted gpt2-small || wanted gpt2-xl || return 0
    local left want=${LLMC_BUILD_TIMEOUT_S:-300}
    left=$(left_s)
    if ((left < 60)); then LLMC_STATE="SKIPPED: budget spent"; return; fi
    echo
    echo "== llm.c build [t=${SECONDS} s]: $LLMC_DIR with ${CUDNN_FRONTEND_DIR:-no cudnn-frontend} into $LLMC_BUILD_DIR"
    if ! LLMC_BUILD_TIMEOUT_S=$((left - 45 < want ? left - 45 : want)) \
        llmc_build "$LLMC_DIR" "${CUDNN_FRONTEND_DIR:-/nonexistent}" "$LLMC_BUILD_DIR"; then
        LLMC_BIN="" LLMC_STATE="FAILED: $LLMC_NOTE"
    fi
    [ -f "$LLMC_BUILD_DIR/build.log" ] && cp "$LLMC_BUILD_DIR/build.log" "$OUTDIR/llmc-build.log"
    [[ $LLMC_NOTE == built* || -z $LLMC_BIN ]] && [ -f "$OUTDIR/llmc-build.log" ] && cat "$OUTDIR/llmc-build.log"
    echo "== llm.c build: ${LLMC_NOTE}"
    [ -n "$LLMC_BIN" ] || return
    echo "== llm.c libraries: $(LD_LIBRARY_PATH="$LLMC_LIBRARY_PATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$LLMC_BIN" |
        grep -E 'cudnn|cublas|nvrtc|libcuda|nvidia-ml' | awk '{ printf "%s => %s; ", $1, $3 }')"
    if ! llmc_tokens "$TOKENS"; then LLMC_BIN="" LLMC_STATE="FAILED: could not write the token files in $TOKENS"; fi
}

prepare_torch() { # TORCH_STATE: empty, or the cell of every torch.compile row
    TORCH_STATE=""
    "$PY" -c 'import torch, torchvision; assert torch.cuda.is_available()' >/dev/null 2>&1 ||
        TORCH_STATE="FAILED: no torch with CUDA and torchvision for $PY"
}

main() {
    provenance
    mkdir -p "$OUTDIR/h5"

    echo; echo "######## dpscale"
    run_dpscale gpt2-small configs/gpt2-small.ini --train.batch_per_gpu=16
    run_dpscale gpt2-xl configs/gpt2-xl.ini --train.batch_per_gpu=8
    run_dpscale bert-large configs/bert-large.ini --train.batch_per_gpu=16 --model.mask_fraction=1
    run_dpscale resnet50 configs/resnet50.ini --train.batch_per_gpu=256

    echo; echo "######## llm.c + cuDNN"
    prepare_llmc
    run_llmc gpt2-small 10 40 16 -e d12 -r 0
    run_llmc gpt2-xl 5 25 8 -e d48 -r 0 -ge 1
    NOTE[bert-large/llmc]="—" NOTE[resnet50/llmc]="—"

    echo; echo "######## torch.compile"
    prepare_torch
    run_torch gpt2-small tests/gpu/transformer_ddp_reference.py --model gpt --batch 16 --iters 30
    run_torch bert-large tests/gpu/transformer_ddp_reference.py --model bert --batch 16 --iters 30
    run_torch resnet50 tests/gpu/resnet_ddp_reference.py --batch 256 --image 224 --iters 30
    wanted gpt2-xl || TORCH_XL=off
    case $TORCH_XL in
    on) run_torch gpt2-xl tests/gpu/transformer_ddp_reference.py --model gpt --layers 48 --width 1600 --heads 25 \
        --batch 8 --iters 15 ;;
    auto) if (($(left_s) >= 240)); then
            run_torch gpt2-xl tests/gpu/transformer_ddp_reference.py --model gpt --layers 48 --width 1600 --heads 25 \
                --batch 8 --iters 15
        else
            NOTE[gpt2-xl/torch]="not run (left out when under 240 s are left)"
        fi ;;
    *) NOTE[gpt2-xl/torch]="not run (BENCH_PEERS_TORCH_XL=off)" ;;
    esac

    report_lines
    echo
    {
        echo "## dpscale beside its peers, one GPU ($(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1))"
        echo
        # the binary's own version: a tree copied to the GPU machine can carry an older HEAD
        echo "tests/gpu/bench_peers.sh, $(date -u +%Y-%m-%d), $("$DPSCALE" version 2>/dev/null | head -1 ||
            echo "dpscale $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)")."
        echo
        report_table
    } | tee "$OUTDIR/bench-peers.md"
    local key nfail=0
    for key in "${!NOTE[@]}"; do [[ ${NOTE[$key]} == FAILED* ]] && nfail=$((nfail + 1)); done
    echo
    echo "== bench_peers: $nfail failed; ${SECONDS} s"
    ((nfail == 0))
}

# absolute NAME...: each variable NAME that holds a relative path, made absolute (before the cd to the root)
absolute() {
    local name
    for name in "$@"; do
        [[ -z ${!name:-} || ${!name} == /* ]] || printf -v "$name" '%s' "$PWD/${!name}"
    done
}

# Run, unless sourced (the parsing functions are tested by sourcing this file).
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    [[ $# -eq 1 && -n $1 ]] || { echo "$usage" >&2; exit 2; }
    TORCH_XL=${BENCH_PEERS_TORCH_XL:-auto}
    [[ $TORCH_XL =~ ^(auto|on|off)$ ]] || { echo "bench_peers: BENCH_PEERS_TORCH_XL=$TORCH_XL: use auto, on or off" >&2; exit 2; }
    if [ -n "${BENCH_PEERS_MODELS:-}" ]; then
        for m in $BENCH_PEERS_MODELS; do
            wanted "$m" || { echo "bench_peers: BENCH_PEERS_MODELS: no model '$m': use some of ${MODELS[*]}" >&2; exit 2; }
        done
        read -ra MODELS <<<"$BENCH_PEERS_MODELS"
    fi
    mkdir -p "$1" || exit 2
    OUTDIR=$(cd "$1" && pwd) || exit 2
    [ ! -e "$OUTDIR/bench-peers.log" ] || { echo "bench_peers: $OUTDIR/bench-peers.log exists: hint: give a new OUTDIR" >&2; exit 2; }
    absolute LLMC_DIR CUDNN_FRONTEND_DIR CUDNN_DIR DPSCALE LLMC_BUILD_DIR
    cd "$ROOT" || exit 2
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
    DPSCALE=${DPSCALE:-bin/dpscale}
    PY=${PYTHON:-python3}
    BUDGET_S=${BENCH_PEERS_BUDGET_S:-540}
    DPSCALE_TIMEOUT_S=${DPSCALE_TIMEOUT_S:-150} LLMC_TIMEOUT_S=${LLMC_TIMEOUT_S:-150} TORCH_TIMEOUT_S=${TORCH_TIMEOUT_S:-240}
    LLMC_BUILD_DIR=${LLMC_BUILD_DIR:-$ROOT/build/peers/llmc}
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-peers.XXXXXX") || exit 2
    TOKENS=$LLMC_BUILD_DIR/tokens
    trap 'rm -rf "$WORK"' EXIT
    main 2>&1 | tee "$OUTDIR/bench-peers.log"
    exit "${PIPESTATUS[0]}"
fi

#!/usr/bin/env bash
# issue13_validate.sh — the projection against fresh runs on the 2-GPU machine, in one
# call: this machine's allreduce curves (dpscale comm, over NVLink and through host
# memory: comm.path = host, called pcie in the files of results/h200x2-issue13/), then the
# MLP presets and the transformers on 1 and 2 GPUs over both paths,
# overlap on and off — files that hold the measured bucket ready times — and
# tools/project_validate.sh on them (projected against measured 2-GPU efficiency; the
# calibrated column takes the interference from the comm-bound MLP's run of each path).
#   tests/gpu/issue13_validate.sh OUTDIR      from the repo root, bin/dpscale prebuilt
# Each launch is bounded by 120 s; the whole by ISSUE13_BUDGET_S (default 540 s).
set -uo pipefail
BUDGET_S=${ISSUE13_BUDGET_S:-540} MARGIN_S=30
source "$(dirname "$0")/bounded_launch.sh" issue13_validate.sh "${1:-}"
{
    run comm-nvlink comm --comm.path=nvlink
    run comm-host comm --comm.path=host
    for path in nvlink host; do
        for ov in on off; do
            run gemm-heavy-$path-$ov run --config configs/mlp-gemm-heavy.ini --comm.path=$path --comm.overlap=$ov --run.sweep=1,2
            run comm-bound-$path-$ov run --config configs/mlp-comm-bound.ini --comm.path=$path --comm.overlap=$ov --run.sweep=1,2
        done
        run bert-large-$path run --config configs/bert-large.ini --model.mask_fraction=1 --train.iters=20 \
            --comm.path=$path --run.sweep=1,2
        run gpt2-small-$path run --config configs/gpt2-small.ini --train.iters=20 --comm.path=$path --run.sweep=1,2
    done
    echo "== projected against measured (this machine's curves of this call)"
    COMM_NVLINK="$OUT/comm-nvlink.h5" COMM_HOST="$OUT/comm-host.h5" CAL_NVLINK="$OUT/comm-bound-nvlink-on.h5" \
        CAL_HOST="$OUT/comm-bound-host-on.h5" tools/project_validate.sh \
        $(ls "$OUT"/*.h5 | grep -vE "/comm-(nvlink|host)\.h5$")
    echo "== ${SECONDS} s"
} 2>&1 | tee "$OUT/issue13.log"
# one archive: the device tool returns a limited number of files
tar -cf "$OUT/issue13-h5.tar" -C "$OUT" $(cd "$OUT" && ls *.h5) && rm -f "$OUT"/*.h5

#!/usr/bin/env bash
# calibrate_projection.sh — the calibrated projection with calibrations that match: each
# transformer run is projected from its 1-GPU run onto this call's allreduce curves of
# its own settings (over NVLink; through host memory the SM-copy curve, dpscale comm
# refusing the copy engines, whose runs copy on them), with the interference taken from the comm-bound MLP's 2-GPU run of the same
# communication settings (path, comm.shm_copy, bf16 gradients): the earlier calibration
# mixed SM-copy, fp32-gradient MLP runs with copy-engine, bf16-gradient transformers.
#   tests/gpu/calibrate_projection.sh OUTDIR      from the repo root, bin/dpscale prebuilt
# Each launch is bounded by 120 s; the whole by PROJECTION_BUDGET_S (default 420 s).
set -uo pipefail
BUDGET_S=${PROJECTION_BUDGET_S:-420} MARGIN_S=20
source "$(dirname "$0")/bounded_launch.sh" calibrate_projection.sh "${1:-}"
project() { # RESULT COMM CALIBRATION
    bin/dpscale project "$1" --comm "$2" --interference-from "$3" 2>&1 | grep -E "NOTE|^ +2 " |
        sed "s|^|$(basename "$1" .h5): |"
}
{
    g16=(--train.grad_dtype=compute --comm.allreduce_dtype=compute)
    bert=(--config configs/bert-large.ini --model.mask_fraction=1 --train.iters=20 --train.warmup=5 --run.sweep=1,2)
    gpt=(--config configs/gpt2-small.ini --train.iters=20 --train.warmup=5 --run.sweep=1,2)
    run comm-nvlink comm --comm.path=nvlink
    run comm-host comm --comm.path=host # SM copies: dpscale comm refuses the copy engines (NCCL stalls the sweep)
    run cal-nvlink-g16 run --config configs/mlp-comm-bound.ini "${g16[@]}" --comm.path=nvlink --run.sweep=1,2
    run cal-host-ce-g16 run --config configs/mlp-comm-bound.ini "${g16[@]}" --comm.path=host --comm.shm_copy=ce --run.sweep=1,2
    run bert-large-host-ce-g16 run "${bert[@]}" "${g16[@]}" --comm.path=host --comm.shm_copy=ce
    run gpt2-small-host-ce-g16 run "${gpt[@]}" "${g16[@]}" --comm.path=host --comm.shm_copy=ce
    run bert-large-nvlink-g16 run "${bert[@]}" "${g16[@]}" --comm.path=nvlink
    run gpt2-small-nvlink-g16 run "${gpt[@]}" "${g16[@]}" --comm.path=nvlink
    echo "== projected (calibrated on the MLP of the same settings) against measured: GPUs step comm exposed projected measured error"
    for m in bert-large gpt2-small; do
        project "$OUT/$m-host-ce-g16.h5" "$OUT/comm-host.h5" "$OUT/cal-host-ce-g16.h5"
        project "$OUT/$m-nvlink-g16.h5" "$OUT/comm-nvlink.h5" "$OUT/cal-nvlink-g16.h5"
    done
    echo "== ${SECONDS} s"
} 2>&1 | tee "$OUT/calibrate-projection.log"
tar -cf "$OUT/calibrate-projection-h5.tar" -C "$OUT" $(cd "$OUT" && ls *.h5) && rm -f "$OUT"/*.h5

#!/usr/bin/env bash
# resnet.sh — the ResNet on CUDA, on a machine with 1 or 2 NVIDIA GPUs:
#   tests/gpu/resnet.sh OUTDIR [correctness|throughput|all]
# from the repository root, with bin/dpscale built with CUDA (and bin/tests/test_resnet_cuda:
# `make bin/dpscale bin/tests/test_resnet_cuda`). Each part fits in a 10-minute call.
#
# correctness (configs/resnet-tiny.ini unless said):
#   kernels   bin/tests/test_resnet_cuda: every ResNet operation against the CPU's, fp32 and bf16
#   (a)       the CUDA loss curve against the CPU's over 8 steps, fp32 at 1e-4; bf16's is a figure
#             (INFO), held only to 0.5 (a NaN or a diverged run);
#             two CUDA launches with the GEMMs' choice fixed (gemm_autotune off) give the same
#             curve over 20. Why 8: the tiny net's training (batch 4, random labels) is chaotic.
#             On the CPU alone, lr 0.05 against 0.0500001 (a 2e-6 nudge) stays within 1.3e-6 for
#             8 steps, then a ReLU or max-pool kink routes a gradient otherwise and it grows to
#             1.5e-2 by step 20 (lr 0.01 and 0.005: 1.4e-6 and 1.5e-6, then 1.5e-2 and 8.5e-3;
#             results/vm-resnet-tiny-lr-nudge.log): over 20 steps any two correct
#             implementations part. bf16 has no bar here: on this net its gradients are 10-50 %
#             off float64 in any implementation (PyTorch's own bf16 step too: (f) measures both),
#             so its curve leaves fp32's by several % within 8 steps (2026-11-30: 6.3 %, against
#             a bar of 5e-2 set before that measurement and withdrawn after it); the bf16 bar is
#             the one-step comparison with PyTorch's bf16 error in (f)
#   (b)       dpscale gradcheck on 1 GPU (and on 2)
#   (c)       2 GPUs: a sweep 1,2 (batch norm per GPU), and the data-parallel equivalence of
#             2 x 4 images against 1 x 8 with frozen batch norm (the mode where it holds), 1e-5
#   (f)       one step against PyTorch (tests/gpu/torch_resnet_reference.py, float64): the CPU
#             and the CUDA dump (fp32 at 1e-4, frozen batch norm; bf16 within 3x PyTorch's own
#             bf16 error on the same step, tensor by tensor: the script's --bf16-relative), the same images
#             on both; configs/resnet50.ini's network at 128 x 128, batch 4, against
#             torchvision's by the loss (its fp32 gradients at that depth and batch are
#             ill-conditioned: the script's docstring)
# throughput (configs/resnet50.ini: 224 x 224, batch 256 per GPU, bf16):
#   (d)       dpscale bench: the step against its GEMMs alone, and where the rest goes
#   (e)       images/s and efficiency: 1 GPU, and with 2 GPUs the sweep 1,2 over NVLink
#             (comm.path = nvlink) and through host memory (comm.path = host: no peer access,
#             NCCL's SHM transport); the target is 3,300 images/s on one H200
#   (g)       the framework beside it: torchvision's ResNet-50 in PyTorch eager (cuDNN,
#             channels-last, bf16 autocast, fused SGD, DDP; tests/gpu/resnet_ddp_reference.py)
#             on 1 GPU and on 2 over NVLink and through host memory (NCCL_P2P_DISABLE=1)
#   RESNET_AB=bin/other-dpscale adds dpscale bench and the 1-GPU run of that binary, for an
#   A/B of two builds in one call.
# Every launch is bounded by `timeout`. OUTDIR ends with three files (the device tool
# returns few): results.txt (PASS / FAIL / INFO lines and the figures), logs.tar.gz, h5.tar.gz.
set -u
cd "$(dirname "$0")/../.." || exit 2
OUT=${1:?usage: tests/gpu/resnet.sh OUTDIR [correctness|throughput|all]}
PART=${2:-all}
LOG=$OUT/work
mkdir -p "$LOG"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
[ -x bin/dpscale ] || { echo "bin/dpscale is missing: build it with CUDA first (make -j)"; exit 2; }
NGPU=$(nvidia-smi -L | wc -l)
MPIRUN="mpirun --bind-to none"
PY=${PYTHON:-python3}
SHORT=${RESNET_SHORT_S:-120} # a tiny run, a dump, a check
LONG=${RESNET_LONG_S:-400}   # a ResNet-50 launch
O="--run.output_dir=$LOG"
TINY=configs/resnet-tiny.ini
R50=configs/resnet50.ini
results=()
record() { results+=("$(printf '%-40s %s' "$1" "$2")"); echo "== $1: $2"; }
# check NAME SECONDS COMMAND...: PASS when the command exits 0 within SECONDS
check() {
    local name=$1 limit=$2 rc
    shift 2
    timeout "$limit" "$@" >"$LOG/$name.log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then record "$name" PASS
    elif [ $rc -eq 124 ]; then record "$name" "FAIL (timed out after ${limit} s; $name.log)"
    else record "$name" "FAIL (exit $rc; $name.log)"; fi
    tail -2 "$LOG/$name.log"
    return $rc
}
have_torch() { $PY -c "import torch, h5py, numpy" >/dev/null 2>&1; }

finish() {
    echo; echo "== dpscale ResNet GPU tests ($PART) on $NGPU x $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
    printf '%s\n' "${results[@]}" | tee "$OUT/results.txt"
    (cd "$LOG" && ls -- *.h5 >/dev/null 2>&1 && tar czf ../h5.tar.gz -- *.h5)
    (cd "$LOG" && tar czf ../logs.tar.gz --exclude='*.h5' .)
    rm -rf "$LOG"
    ! grep -q FAIL "$OUT/results.txt"
}

nvidia-smi -L | tee "$LOG/gpus.txt"
# the model must be accepted on cuda at all (src/model/families/resnet.c refused it before its kernels existed)
if ! check preflight_resnet_on_cuda "$SHORT" bin/dpscale run --config $TINY --backend=cuda --train.warmup=0 \
    --train.iters=1 "$O" --run.output=preflight.h5; then
    finish
    exit 3
fi

correctness() {
    if [ -x bin/tests/test_resnet_cuda ]; then
        check kernels_vs_cpu "$SHORT" bin/tests/test_resnet_cuda
        grep -E "skipped|FAIL|passed" "$LOG/kernels_vs_cpu.log" | head -20
    else
        record kernels_vs_cpu "FAIL (bin/tests/test_resnet_cuda not built: make bin/tests/test_resnet_cuda)"
    fi
    # (a) loss curves, CUDA against the CPU
    check tiny_cpu "$SHORT" bin/dpscale run --config $TINY --backend=cpu --train.iters=7 "$O" --run.output=tiny-cpu.h5
    check tiny_cuda_fp32 "$SHORT" bin/dpscale run --config $TINY --backend=cuda --train.iters=7 "$O" --run.output=tiny-cuda.h5
    check loss_tiny_cuda_fp32_vs_cpu_1e-4 "$SHORT" $PY tests/gpu/check.py loss-close "$LOG/tiny-cuda.h5" "$LOG/tiny-cpu.h5" 1e-4
    check tiny_cuda_bf16 "$SHORT" bin/dpscale run --config $TINY --backend=cuda --precision=bf16 --train.iters=7 "$O" \
        --run.output=tiny-cuda16.h5
    check loss_tiny_cuda_bf16_vs_cpu_0.5 "$SHORT" $PY tests/gpu/check.py loss-close "$LOG/tiny-cuda16.h5" "$LOG/tiny-cpu.h5" 0.5
    record loss_tiny_cuda_bf16_vs_cpu "INFO $(grep -o 'max relative difference [^ ]*' "$LOG/loss_tiny_cuda_bf16_vs_cpu_0.5.log")"
    for k in 1 2; do
        check tiny_cuda_fixed_gemms_$k "$SHORT" bin/dpscale run --config $TINY --backend=cuda --train.iters=20 \
            --train.gemm_autotune=off "$O" --run.output=tiny-fixed-$k.h5
    done
    check loss_tiny_cuda_twice_identical "$SHORT" $PY tests/gpu/check.py loss-close "$LOG/tiny-fixed-1.h5" \
        "$LOG/tiny-fixed-2.h5" 0
    # (b) finite differences
    check gradcheck_tiny_1gpu "$SHORT" $MPIRUN -np 1 bin/dpscale gradcheck --config $TINY --backend=cuda
    # (c) two GPUs
    if [ "$NGPU" -ge 2 ]; then
        check gradcheck_tiny_2gpu "$SHORT" $MPIRUN -np 2 bin/dpscale gradcheck --config $TINY --backend=cuda
        check tiny_sweep_2gpu "$SHORT" $MPIRUN -np 2 bin/dpscale run --config $TINY --backend=cuda --sweep=1,2 \
            --train.iters=20 "$O" --run.output=tiny-sweep.h5
        check tiny_dp_frozen_2gpu "$SHORT" $MPIRUN -np 2 bin/dpscale run --config $TINY --backend=cuda \
            --model.batchnorm=frozen --train.scaling=strong --train.global_batch=8 --sweep=1,2 --train.iters=20 \
            --run.save_params=on "$O" --run.output=tiny-dp.h5
        check dp_equivalence_tiny_frozen_1e-5 "$SHORT" $PY tests/gpu/check.py params-close "$LOG/tiny-dp.h5" 1e-5
    else
        record tiny_2gpu "SKIP (1 GPU)"
    fi
    # (f) one step against PyTorch
    check dump_tiny_cpu "$SHORT" bin/dpscale dump --config $TINY --backend=cpu "$O" --run.output=dump-tiny-cpu.h5
    check dump_tiny_cuda "$SHORT" bin/dpscale dump --config $TINY --backend=cuda "$O" --run.output=dump-tiny-cuda.h5
    check images_cuda_eq_cpu "$SHORT" $PY tests/gpu/check.py inputs-equal "$LOG/dump-tiny-cuda.h5" "$LOG/dump-tiny-cpu.h5"
    check dump_tiny_cuda_bf16 "$SHORT" bin/dpscale dump --config $TINY --backend=cuda --precision=bf16 "$O" \
        --run.output=dump-tiny-cuda16.h5
    check dump_tiny_cuda_frozen "$SHORT" bin/dpscale dump --config $TINY --backend=cuda --model.batchnorm=frozen "$O" \
        --run.output=dump-tiny-cuda-frozen.h5
    check dump_r50_128_cuda "$SHORT" bin/dpscale dump --config $R50 --backend=cuda --precision=fp32 \
        --model.image_size=128 --train.batch_per_gpu=4 "$O" --run.output=dump-r50-128.h5
    if have_torch; then
        local ref=tests/gpu/torch_resnet_reference.py
        check torch_tiny_cpu_1e-4 "$SHORT" $PY $ref "$LOG/dump-tiny-cpu.h5" --tol 1e-4
        check torch_tiny_cuda_fp32_1e-4 "$SHORT" $PY $ref "$LOG/dump-tiny-cuda.h5" --tol 1e-4
        check torch_tiny_cuda_bf16_3x_torch "$SHORT" $PY $ref "$LOG/dump-tiny-cuda16.h5" --tol 3e-2 --impl functional \
            --bf16-relative 3
        check torch_tiny_cuda_frozen_1e-4 "$SHORT" $PY $ref "$LOG/dump-tiny-cuda-frozen.h5" --tol 1e-4
        check torch_r50_128_cuda_loss_1e-4 "$SHORT" $PY $ref "$LOG/dump-r50-128.h5" --loss-only --tol 1e-4
    else
        record torch_reference "SKIP (no torch, h5py and numpy for $PY)"
    fi
    rm -f "$LOG/dump-r50-128.h5" # 200 MB of parameters and gradients: too large to bring back
}

# the images/s and efficiency of each run in a launch's scaling table (ranks, nodes and batch
# are its three integer columns), as INFO lines
figures() {
    local name=$1 path ranks batch step ips speedup effic
    while read -r path ranks _ batch step _ _ ips speedup effic _; do
        record "$name $path n=$ranks" "INFO $ips images/s, step $step ms (global batch $batch), speedup $speedup, efficiency $effic"
    done < <(grep -E "^(nccl|mpi)/[a-z]+ +[0-9]+ +[0-9]+ +[0-9]+ " "$LOG/$name.log")
}

# the framework's ResNet-50 (g): NAME NPROC [ENV...]
framework() {
    local name=$1 n=$2
    shift 2
    check "$name" "$LONG" env "$@" $PY -m torch.distributed.run --standalone --nproc_per_node="$n" tests/gpu/resnet_ddp_reference.py
    local line
    line=$(grep -m1 "^RESNET_REFERENCE" "$LOG/$name.log") && record "$name" "INFO ${line#RESNET_REFERENCE }"
}

throughput() {
    check bench_r50 "$LONG" bin/dpscale bench --config $R50 "$O"
    grep -vE "^ *$" "$LOG/bench_r50.log" | tail -30
    if [ -n "${RESNET_AB:-}" ]; then
        check bench_r50_ab "$LONG" "$RESNET_AB" bench --config $R50 "$O"
        grep -vE "^ *$" "$LOG/bench_r50_ab.log" | tail -22
        check r50_1gpu_ab "$LONG" "$RESNET_AB" run --config $R50 "$O" --run.output=r50-1gpu-ab.h5
        figures r50_1gpu_ab
    fi
    if [ "$NGPU" -ge 2 ]; then
        for path in nvlink host; do
            check r50_sweep_$path "$LONG" $MPIRUN -np 2 bin/dpscale run --config $R50 --sweep=1,2 --comm.path=$path "$O" \
                --run.output=r50-$path.h5
            sed -n '/^comm\/path/,/^overlap/p' "$LOG/r50_sweep_$path.log"
            figures r50_sweep_$path
        done
    else
        check r50_1gpu "$LONG" bin/dpscale run --config $R50 "$O" --run.output=r50-1gpu.h5
        sed -n '/^comm\/path/,/^overlap/p' "$LOG/r50_1gpu.log"
        figures r50_1gpu
    fi
    if have_torch && $PY -c "import torchvision" >/dev/null 2>&1; then
        framework torch_r50_1gpu 1
        if [ "$NGPU" -ge 2 ]; then
            framework torch_r50_2gpu_nvlink 2
            framework torch_r50_2gpu_host 2 NCCL_P2P_DISABLE=1
        fi
    else
        record torch_r50 "SKIP (no torch and torchvision for $PY)"
    fi
}

case $PART in
correctness) correctness ;;
throughput) throughput ;;
all) correctness; throughput ;;
*) echo "unknown part $PART: correctness, throughput or all"; exit 2 ;;
esac
finish

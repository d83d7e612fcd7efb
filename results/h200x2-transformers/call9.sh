#!/usr/bin/env bash
# call 9: the flash kernels' launch bounds A/B (bench, BERT-Large and GPT-2 small; PyTorch check of the
# variant), then the watchdog on the NCCL path.
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
O=$1; mkdir -p $O/h5
B="--model.mask_fraction=1 --train.iters=20 --train.warmup=5"; G="--train.iters=20 --train.warmup=5"
for bin in bin/dpscale bin/dpscale-lb bin/dpscale bin/dpscale-lb; do
    echo "== $bin bench bert-large"
    timeout 60 $bin bench --config configs/bert-large.ini --run.backend=cuda $B 2>&1 | grep -E "^step|GEMMs alone|GEMM share|flash|optimizer|^gemm"
    echo "== $bin bench gpt2-small"
    timeout 60 $bin bench --config configs/gpt2-small.ini --run.backend=cuda $G 2>&1 | grep -E "^step|GEMM share|flash"
done
MID="--model.seq_len=80 --model.vocab=61 --model.hidden_dim=128 --model.heads=2 --train.batch_per_gpu=3 --precision=bf16 --train.attention=flash --train.gemm_epilogue=on"
for m in gpt bert; do
    echo "== dpscale-lb dump $m"
    bin/dpscale-lb dump --config configs/$m-tiny.ini --backend=cuda $MID --run.output_dir=$O/h5 --run.output=lb-$m.h5 2>&1 | tail -1
    python3 tests/gpu/torch_reference.py $O/h5/lb-$m.h5 --tol 3e-2 2>&1 | grep TORCH_REFERENCE
done
echo "== watchdog"
timeout 150 tests/gpu/watchdog.sh $O/wd 2>&1 | grep -E "WATCHDOG_CHECK|dpscale: error|checks failed"
rm -rf $O/h5
echo "== $SECONDS s"

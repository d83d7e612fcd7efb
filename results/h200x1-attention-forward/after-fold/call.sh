#!/usr/bin/env bash
# call 5: the attention kernels after the fold of their shared helpers (attention_math.cuh, load_tile_pairs)
set -u
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0 PYTHON=python3
python3 -c "import tarfile; tarfile.open('build/gpu/bins.tar.xz').extractall('build/gpu')" || exit 3
D=build/gpu/bin/dpscale; L=/tmp/c5; mkdir -p $L
date -u
timeout 120 build/gpu/bin/tests/test_flash_attention_cuda > $L/fa_cuda.log 2>&1; echo "== fa_cuda rc=$?"; grep -E "FAILED|passed|GPT|TFLOP/s\)" $L/fa_cuda.log | head -14
for m in gpt bert; do
  timeout 60 $D dump --config configs/$m-tiny.ini --backend=cuda --model.seq_len=130 --model.vocab=61 --train.batch_per_gpu=3 --model.hidden_dim=320 --model.heads=5 --precision=bf16 --train.attention=flash --train.gemm_epilogue=on --run.output_dir=$L --run.output=t130-$m.h5 > $L/dump-$m.log 2>&1; echo "== dump $m rc=$?"
  timeout 60 python3 tests/gpu/torch_reference.py $L/t130-$m.h5 --tol 3e-2 > $L/torch-$m.log 2>&1; echo "== torch $m rc=$?"; grep TORCH_REFERENCE $L/torch-$m.log
done
timeout 100 $D bench --config configs/gpt2-small.ini > $L/bench-gpt2-small.log 2>&1; echo "== bench rc=$?"; grep -E "^step" $L/bench-gpt2-small.log; grep -E "^flash" $L/bench-gpt2-small.log
rm -f $L/*.h5; tar -C /tmp -czf $OUT/call5-logs.tar.gz c5; date -u

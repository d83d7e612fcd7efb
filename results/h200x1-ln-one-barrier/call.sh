#!/usr/bin/env bash
# The staged LayerNorm backward with one __syncthreads a tile for 2 to 8 warps a row, beside
# the same test built at e62ac0d (two a tile; dx's sums already in), on one lease; the
# transformers' GPU checks (CPU and CUDA against PyTorch, the CUDA loss curve against the
# CPU's, gradcheck on the GPU, T = 130 with the bias gradients in the GEMM's epilogue, flash
# attention in bf16); dpscale bench of GPT-2 small, BERT-Large and XL with cuBLASLt's 8
# heuristic candidates timed a shape (main) and with 24 (an A/B build, -DGEMM_CANDIDATES=24),
# GPT-2 small's GEMMs beside cuBLAS alone for both; the MLPs (their bar: no slower).
# Carried: build/gpu/bins.tar.xz (bin/dpscale, bin/dpscale-c24, bin/tests/test_transformer_cuda,
# bin/tests/test_transformer_cuda-e62ac0d); from the repository root:
# bash results/h200x1-ln-one-barrier/call.sh
source tests/gpu/lent_call.sh /tmp/ln-one-barrier
for t in test_transformer_cuda-e62ac0d test_transformer_cuda; do
    ok 100 "$t" $T/$t
    grep -E "staged:|in the kernel|passed|FAIL" "$L/$t.log" | grep -v "8,192 wide" | cut -c1-150
done
for m in gpt bert; do
    ok 60 "dump_cpu_$m" $D dump --config configs/$m-tiny.ini --backend=cpu $O --run.output=dump-$m.h5
    ok 60 "torch_${m}_cpu" python3 tests/gpu/torch_reference.py "$L/dump-$m.h5" --tol 1e-4
    ok 60 "dump_cuda_$m" $D dump --config configs/$m-tiny.ini --backend=cuda $O --run.output=dump-$m-cuda.h5
    ok 60 "torch_${m}_cuda_fp32" python3 tests/gpu/torch_reference.py "$L/dump-$m-cuda.h5" --tol 1e-4
    ok 60 "cpu_$m" $D run --config configs/$m-tiny.ini --backend=cpu --train.iters=20 $O --run.output=$m-cpu.h5
    ok 60 "cuda_$m" $D run --config configs/$m-tiny.ini --backend=cuda --train.iters=20 $O --run.output=$m-cuda.h5
    ok 60 "loss_${m}_cuda_vs_cpu" python3 tests/gpu/check.py loss-close "$L/$m-cuda.h5" "$L/$m-cpu.h5" 1e-4
    ok 60 "gradcheck_cuda_$m" mpirun --bind-to none -np 1 $D gradcheck --config configs/$m-tiny.ini --backend=cuda \
        --train.batch_per_gpu=2
    ok 60 "dump_t130_$m" $D dump --config configs/$m-tiny.ini --backend=cuda --model.seq_len=130 --model.vocab=61 \
        --train.batch_per_gpu=3 --model.hidden_dim=320 --model.heads=5 --precision=bf16 --train.attention=flash \
        --train.gemm_epilogue=on --train.bias_grad=epilogue $O --run.output=dump-t130-$m.h5
    ok 60 "torch_t130_$m" python3 tests/gpu/torch_reference.py "$L/dump-t130-$m.h5" --tol 3e-2
    grep -h "TORCH_REFERENCE" $L/torch_*_$m*.log
done
against_pytorch
for b in dpscale dpscale-c24; do
    bench "gpt2-small-$b" bin/$b bench --config configs/gpt2-small.ini
    timeout 100 python3 tests/gpu/gemm_shapes_reference.py "$L/bench-gpt2-small-$b.log" > "$L/shapes-gpt2-small-$b.log" 2>&1
    grep -E "2304    768  16384|GEMM_SHAPES" "$L/shapes-gpt2-small-$b.log"
    bench "bert-large-$b" bin/$b bench --config configs/bert-large.ini --model.mask_fraction=1
done
bench gpt2-xl $D bench --config configs/gpt2-xl.ini --train.batch_per_gpu=8
for cfg in mlp-gemm-heavy mlp-comm-bound mlp-small mlp-medium; do bench $cfg $D bench --config configs/$cfg.ini; done
rm -f $L/*.h5
tar -C /tmp -czf "$OUT/ln-one-barrier-logs.tar.gz" ln-one-barrier
date -u

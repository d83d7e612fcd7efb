#!/usr/bin/env bash
# session 6, call 6: the three PyTorch reference scripts after their timing loop moved into
# ddp_reference.timed_steps (a short run of each, 1 and 2 GPUs)
set -u
cd tests/gpu
R="python3 -m torch.distributed.run --standalone"
for n in 1 2; do
  $R --nproc_per_node=$n ddp_reference.py --layers 3 --input-dim 1024 --hidden-dim 1024 --classes 128 --batch 256 --warmup 2 --iters 5 2>&1 | grep -E "REFERENCE|Error|error" ; echo "ddp n=$n rc=${PIPESTATUS[0]}"
  $R --nproc_per_node=$n transformer_ddp_reference.py --model gpt --layers 2 --batch 4 --warmup 2 --iters 5 2>&1 | grep -E "REFERENCE|Error|error"; echo "transformer n=$n rc=${PIPESTATUS[0]}"
  $R --nproc_per_node=$n resnet_ddp_reference.py --batch 32 --warmup 2 --iters 5 2>&1 | grep -E "REFERENCE|Error|error"; echo "resnet n=$n rc=${PIPESTATUS[0]}"
done

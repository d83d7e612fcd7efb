#!/usr/bin/env bash
# session 6, call 3: the ResNet after the batch-norm and im2col work: correctness, then
# throughput with an A/B against the binary of call 1 (bin/dpscale-base), and the framework
# (torchvision ResNet-50, PyTorch eager DDP) on 1 and 2 GPUs beside it.
set -u
OUT=$1
exec > >(tee $OUT/call.log) 2>&1
T0=$(date +%s)
tar xJf .scratch/bins.tar.xz || exit 3
bin/dpscale --version | head -1; bin/dpscale-base --version | head -1
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv
RESNET_SHORT_S=60 timeout 200 tests/gpu/resnet.sh $OUT/c correctness
echo "correctness rc=$? after $(( $(date +%s) - T0 )) s"
[ -d $OUT/c/work ] && tar czf $OUT/c-partial.tgz -C $OUT/c work && rm -rf $OUT/c/work
LEFT=$(( 565 - ($(date +%s) - T0) ))
RESNET_AB=bin/dpscale-base RESNET_LONG_S=120 timeout $LEFT tests/gpu/resnet.sh $OUT/t throughput
echo "throughput rc=$? after $(( $(date +%s) - T0 )) s"
[ -d $OUT/t/work ] && tar czf $OUT/t-partial.tgz -C $OUT/t work && rm -rf $OUT/t/work
echo "done after $(( $(date +%s) - T0 )) s"

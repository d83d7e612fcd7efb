#!/usr/bin/env bash
# session 6, call 1: ResNet on CUDA for the first time (correctness, then throughput), then a BERT-Large bench recheck
set -u
OUT=$1
exec > >(tee $OUT/call.log) 2>&1
T0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv 
RESNET_SHORT_S=60 timeout 250 tests/gpu/resnet.sh $OUT/c correctness 
echo "correctness rc=$? after $(( $(date +%s) - T0 )) s" 
[ -d $OUT/c/work ] && tar czf $OUT/c-partial.tgz -C $OUT/c work && rm -rf $OUT/c/work
LEFT=$(( 540 - ($(date +%s) - T0) ))
RESNET_LONG_S=$(( LEFT / 3 - 10 )) timeout $LEFT tests/gpu/resnet.sh $OUT/t throughput 
echo "throughput rc=$? after $(( $(date +%s) - T0 )) s" 
[ -d $OUT/t/work ] && tar czf $OUT/t-partial.tgz -C $OUT/t work && rm -rf $OUT/t/work
LEFT=$(( 585 - ($(date +%s) - T0) ))
[ $LEFT -gt 40 ] && timeout $LEFT bin/dpscale bench --config configs/bert-large.ini --run.output_dir=/tmp 2>&1
echo "done after $(( $(date +%s) - T0 )) s"

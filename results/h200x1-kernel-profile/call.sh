#!/usr/bin/env bash
# Where the attention kernels and the LayerNorm backward spend their time on one H200: Nsight
# Compute's full set on the Hopper attention forward and the backward's two kernels at GPT-2
# small's causal shape (16 x 12 heads x 1024) and BERT-Large's full one (16 x 16 x 512), and on
# the staged LayerNorm backward at GPT-2 XL's 8192 x 1600; each kernel's details page and its
# SASS with the stall samples of each instruction (source page, CSV).
# Binaries: build/gpu/bins.tar.xz; from the repository root: bash results/h200x1-kernel-profile/call.sh
source tests/gpu/lent_call.sh /tmp/kernel-profile
command -v ncu || exit 4
ncu --version | tail -1
one() { # NAME KERNEL-REGEX COUNT CMD...: a report, its details and its source pages
    local n=$1 k=$2 c=$3
    shift 3
    ok 240 ncu_$n ncu -k "regex:$k" -c "$c" --set full --import-source no -f -o "$L/$n" "$@"
    ncu -i "$L/$n.ncu-rep" --page details --print-details all > "$L/details_$n.txt" 2>&1
    ncu -i "$L/$n.ncu-rep" --page source --csv --print-source sass > "$L/source_$n.csv" 2>&1
    grep -E "^  [a-zA-Z_].*\(|Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible" "$L/details_$n.txt" | head -60
}
run1() { echo $D run --config "configs/$1.ini" --run.backend=cuda --model.layers="$2" --train.iters=1 --train.warmup=0 --run.sweep=1 $O --run.output="$1.h5" "${@:3}"; }
one gpt2_attention "fa90_(forward|backward_dkdv|backward_dq)" 3 $(run1 gpt2-small 1)
one bert_attention "fa90_(forward|backward_dkdv|backward_dq)" 3 $(run1 bert-large 1 --model.mask_fraction=1)
one xl_layernorm "ln_bwd" 4 $(run1 gpt2-xl 1 --train.batch_per_gpu=8)
rm -f $L/*.h5
ls -la $L
tar -C /tmp -czf "$OUT/kernel-profile.tar.gz" kernel-profile
date -u

#!/usr/bin/env bash
# dpscale's step beside llm.c + cuDNN and torch.compile in one call on one H200
# (tests/gpu/bench_peers.sh), with the softmax cross-entropy a block of 1,024 threads.
# Carried: build/gpu/bins.tar.xz (bin/dpscale) and build/peers-src (tests/gpu/peer_sources.sh);
# from the repository root: bash results/h200x1-peers-xent/call.sh
source tests/gpu/lent_call.sh "$OUT/tests"
left=$((585 - SECONDS))
echo "== bench_peers with $left s"
DPSCALE=$D BENCH_PEERS_BUDGET_S=$left BENCH_PEERS_TORCH_XL=off LLMC_DIR=build/peers-src/llm.c \
    CUDNN_FRONTEND_DIR=build/peers-src/cudnn-frontend tests/gpu/bench_peers.sh "$OUT/peers" > "$OUT/peers.stdout" 2>&1
echo "== bench_peers rc=$?"
grep -E "^== |^PEERS|^\|" "$OUT/peers.stdout" | grep -vE "^== .*(libraries)" | tail -40
rm -rf "$OUT/peers/h5"
date -u

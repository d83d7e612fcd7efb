# shellcheck shell=bash
# llmc_peer.sh — sourced by tests/gpu/bench_peers.sh: llm.c (karpathy/llm.c, train_gpt2.cu
# with cuDNN attention) built out of tree from a source tree the user names, and the token
# files it trains on. Nothing here writes into that tree.
#
#   llmc_build SRC FRONTEND CACHE   build (or reuse) CACHE/train_gpt2cu; sets LLMC_BIN,
#                                   LLMC_LIBRARY_PATH (cuDNN's and the toolkit's libraries, for
#                                   LD_LIBRARY_PATH: cuDNN loads its engines and NVRTC at run
#                                   time) and LLMC_NOTE;
#                                   on failure returns 1 with the reason in LLMC_NOTE
#   llmc_tokens DIR                 DIR/train.bin and DIR/val.bin, random GPT-2 tokens
#   llmc_cudnn_home                 the cuDNN folder (include/, lib/): $CUDNN_DIR, else that
#                                   of the python's nvidia.cudnn package (PyTorch's), else
#                                   the CUDA toolkit's
#
# How it is built: llm.c's own Makefile, told through its variables what would otherwise be
# edits: USE_CUDNN=1 with CUDNN_FRONTEND_PATH, NO_MULTI_GPU=1 and NO_USE_MPI=1 (one GPU),
# NVCC and GPU_COMPUTE_CAPABILITY, NVCC_INCLUDES (cudnn-frontend's and cuDNN's headers) and
# NVCC_LDFLAGS (the Makefile's -lcublas -lcublasLt -lcudnn, plus -lnvrtc -lcuda that
# cudnn-frontend needs, and -lnvidia-ml only where nvml.h is there to make llm.c use it).
# One edit to a copy of the sources, for CUDA 13: the fallback to managed memory on OOM in
# llmc/cuda_utils.cuh calls cudaMemAdvise with a device id where CUDA 13 takes a
# cudaMemLocation; the copy fails on OOM instead (a managed fallback can hang the GPU, and a
# benchmark that spills to host memory measures nothing). The binary is reused while the
# hash of its inputs (sources, headers, nvcc, architecture, this recipe) is unchanged.

# llmc_cudnn_home: prints the folder, or nothing (return 1)
llmc_cudnn_home() {
    local d
    if [ -n "${CUDNN_DIR:-}" ]; then echo "$CUDNN_DIR"; return 0; fi
    # a namespace package: no __file__, its folder is __path__[0]
    d=$("${PY:-python3}" -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null)
    if [ -n "$d" ] && [ -f "$d/include/cudnn.h" ]; then echo "$d"; return 0; fi
    for d in "${CUDA_HOME:-}" /usr/local/cuda; do
        if [ -n "$d" ] && [ -f "$d/include/cudnn.h" ]; then echo "$d"; return 0; fi
    done
    return 1
}

# llmc_cudnn_lib HOME: the folder of libcudnn.so.N under HOME
llmc_cudnn_lib() {
    local l f
    for l in lib lib64; do
        for f in "$1/$l"/libcudnn.so.[0-9]*; do
            [ -e "$f" ] && { echo "$1/$l"; return 0; }
        done
    done
    return 1
}

# llmc_cudnn_version HOME: "9.19.0" from cudnn_version.h
llmc_cudnn_version() {
    awk '/#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) / { v[$2] = $3 }
         END { if (v["CUDNN_MAJOR"] != "") printf "%s.%s.%s\n", v["CUDNN_MAJOR"], v["CUDNN_MINOR"], v["CUDNN_PATCHLEVEL"] }' \
        "$1/include/cudnn_version.h" 2>/dev/null
}

# llmc_frontend_version FRONTEND: "1.16.0" from cudnn_frontend_version.h
llmc_frontend_version() {
    awk '/#define CUDNN_FRONTEND_(MAJOR|MINOR|PATCH)_VERSION / { v[$2] = $3 }
         END { if (v["CUDNN_FRONTEND_MAJOR_VERSION"] != "") printf "%s.%s.%s\n", v["CUDNN_FRONTEND_MAJOR_VERSION"],
               v["CUDNN_FRONTEND_MINOR_VERSION"], v["CUDNN_FRONTEND_PATCH_VERSION"] }' \
        "$1/include/cudnn_frontend_version.h" 2>/dev/null
}

# llmc_source_commit DIR: the git commit of DIR, or the one its PEER_SOURCE names
llmc_source_commit() {
    local c
    if c=$(git -C "$1" rev-parse HEAD 2>/dev/null) && [ "$(git -C "$1" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$1" && pwd -P)" ]; then
        echo "$c (git$(git -C "$1" diff --quiet HEAD 2>/dev/null || echo ', modified'))"
    elif [ -f "$1/PEER_SOURCE" ]; then
        awk '/^commit / { c = $2 } /^revision / { r = $2 } END { if (c != "") print c " (" r ", exported)" }' "$1/PEER_SOURCE"
    else
        echo "unknown (no git, no PEER_SOURCE)"
    fi
}

# llmc_patch FILE: the copy of llmc/cuda_utils.cuh fails on OOM instead of falling back to managed memory
llmc_patch() {
    python3 - "$1" <<'EOF'
import re, sys
path = sys.argv[1]
text = open(path).read()
fallback = re.compile(r"cudaCheck_\(cudaMallocManaged\(out, bytes\), file, line\);\s*"
                      r"cudaCheck_\(cudaMemAdvise\([^;]*\), file, line\);(?=\s*return 1;)")
text, n = fallback.subn("cudaCheck_(err, file, line); // out of memory: exit, never fall back to managed memory",
                        text)
if n != 1 or "cudaMemAdvise" in text:
    sys.exit(f"{path}: the managed-memory fallback was not found as expected ({n} matches): "
             "hint: llm.c changed there; update llmc_patch in tests/gpu/llmc_peer.sh")
open(path, "w").write(text)
EOF
}

# llmc_tree_hash DIR FIND_ARGS...: one hash of the names and contents of the files find(1) gives under DIR
llmc_tree_hash() {
    local dir=$1
    shift
    (cd "$dir" && find "$@" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-64
}

# llmc_has_nvml NVCC SCRATCH: 0 where nvml.h is found by nvcc (llm.c's mfu.h then uses NVML)
llmc_has_nvml() {
    printf '#include <nvml.h>\n' >"$2/nvml_probe.cu"
    "$1" -E "$2/nvml_probe.cu" -o /dev/null >/dev/null 2>&1
}

# llmc_build SRC FRONTEND CACHE (its LLMC_* results are read by bench_peers.sh)
# shellcheck disable=SC2034
llmc_build() {
    local src=$1 fe=$2 cache=$3 nvcc cudnn cudnn_lib arch nvml_flag key f
    LLMC_BIN="" LLMC_LIBRARY_PATH="" LLMC_NOTE=""
    for f in Makefile train_gpt2.cu llmc/cudnn_att.cpp llmc/cuda_utils.cuh; do
        [ -f "$src/$f" ] || { LLMC_NOTE="no $src/$f: is LLMC_DIR karpathy/llm.c? (tests/gpu/peer_sources.sh exports one)"; return 1; }
    done
    [ -f "$fe/include/cudnn_frontend.h" ] ||
        { LLMC_NOTE="no $fe/include/cudnn_frontend.h: set CUDNN_FRONTEND_DIR to a cudnn-frontend tree"; return 1; }
    nvcc=$(command -v nvcc || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")
    [ -x "$nvcc" ] || { LLMC_NOTE="no nvcc (PATH, CUDA_HOME, /usr/local/cuda)"; return 1; }
    cudnn=$(llmc_cudnn_home) ||
        { LLMC_NOTE="no cuDNN headers: hint: CUDNN_DIR=folder with include/cudnn.h, or pip's nvidia-cudnn-cu13"; return 1; }
    cudnn_lib=$(llmc_cudnn_lib "$cudnn") || { LLMC_NOTE="no libcudnn.so.N under $cudnn/lib or lib64"; return 1; }
    arch=${GPU_COMPUTE_CAPABILITY:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')}
    arch=${arch:-90}
    mkdir -p "$cache" || { LLMC_NOTE="cannot make $cache"; return 1; }
    cache=$(cd "$cache" && pwd)
    nvml_flag=""
    llmc_has_nvml "$nvcc" "$cache" && nvml_flag=-lnvidia-ml
    # what the binary is made of; paths are left out, so a cache made elsewhere from the same contents is reused
    key=$({
        echo "sources $(llmc_tree_hash "$src" Makefile train_gpt2.cu llmc)"
        echo "cudnn-frontend $(llmc_tree_hash "$fe" include)"
        echo "cudnn headers $(llmc_tree_hash "$cudnn/include" . -name 'cudnn*.h')"
        "$nvcc" --version | tail -2
        echo "arch $arch nvml '$nvml_flag'"
        declare -f llmc_build llmc_patch llmc_make
    } | sha256sum | cut -c1-64)
    LLMC_LIBRARY_PATH=$cudnn_lib:$(cd "$(dirname "$nvcc")/.." && pwd)/lib64
    if [ -x "$cache/train_gpt2cu" ] && [ "$(cat "$cache/inputs.sha256" 2>/dev/null)" = "$key" ]; then
        LLMC_BIN=$cache/train_gpt2cu
        LLMC_NOTE="reused $LLMC_BIN (inputs unchanged, hash ${key:0:12})"
        return 0
    fi
    rm -rf "$cache/src" "$cache/train_gpt2cu" "$cache/inputs.sha256"
    if ! { mkdir -p "$cache/src/lib" && cp -r "$src/Makefile" "$src/train_gpt2.cu" "$src/llmc" "$cache/src/"; }; then
        LLMC_NOTE="cannot copy the sources into $cache/src"
        return 1
    fi
    llmc_patch "$cache/src/llmc/cuda_utils.cuh" >"$cache/build.log" 2>&1 ||
        { LLMC_NOTE=$(tail -1 "$cache/build.log"); return 1; }
    # the Makefile looks for cudnn-frontend/include beside it before it takes CUDNN_FRONTEND_PATH
    ln -s "$(cd "$fe" && pwd)" "$cache/src/cudnn-frontend"
    # pip's cuDNN has libcudnn.so.9 and no unversioned name for -lcudnn
    for f in "$cudnn_lib"/libcudnn.so.[0-9]*; do ln -sf "$f" "$cache/src/lib/libcudnn.so"; break; done
    local t0=$SECONDS
    if ! llmc_make "$cache/src" "$nvcc" "$arch" "$(cd "$fe" && pwd)/include" "$cudnn/include" "$cache/src/lib" \
        "$nvml_flag" >>"$cache/build.log" 2>&1; then
        LLMC_NOTE="build failed after $((SECONDS - t0)) s: $(grep -m1 -iE 'error|timed out' "$cache/build.log" | cut -c1-200)"
        return 1
    fi
    cp "$cache/src/train_gpt2cu" "$cache/train_gpt2cu" && echo "$key" >"$cache/inputs.sha256"
    LLMC_BIN=$cache/train_gpt2cu
    LLMC_NOTE="built $LLMC_BIN in $((SECONDS - t0)) s (hash ${key:0:12})"
}

# llmc_make DIR NVCC ARCH FRONTEND_INCLUDE CUDNN_INCLUDE LINK_DIR NVML_FLAG: llm.c's Makefile, bounded
llmc_make() {
    local timeout_s=${LLMC_BUILD_TIMEOUT_S:-300}
    echo "llm.c build in $1: make train_gpt2cu (bounded by $timeout_s s)"
    timeout -k 10 "$timeout_s" make -C "$1" train_gpt2cu USE_CUDNN=1 NO_MULTI_GPU=1 NO_USE_MPI=1 \
        NVCC="$2" GPU_COMPUTE_CAPABILITY="$3" CUDNN_FRONTEND_PATH="$4" \
        NVCC_INCLUDES="-I$4 -I$5" NVCC_LDFLAGS="-lcublas -lcublasLt -L$6 -lcudnn -lnvrtc -lcuda $7" </dev/null
    local rc=$?
    ((rc == 124 || rc == 137)) && echo "llm.c build: timed out after $timeout_s s"
    return "$rc"
}

# llmc_tokens DIR: random tokens below GPT-2's vocabulary in llm.c's format (a 256-int32
# header: magic 20240520, version 1, token count; then uint16 tokens), made once
llmc_tokens() {
    mkdir -p "$1" || return 1
    [ -s "$1/train.bin" ] && [ -s "$1/val.bin" ] && return 0
    python3 - "$1" <<'EOF'
import array, os, random, sys
MAGIC, VERSION, HEADER_INTS, VOCAB = 20240520, 1, 256, 50257
def write(path, count, seed):
    rng = random.Random(seed)
    header = array.array("i", [MAGIC, VERSION, count] + [0] * (HEADER_INTS - 3))
    tokens = array.array("H", (rng.randrange(VOCAB) for _ in range(count)))
    assert header.itemsize == 4 and tokens.itemsize == 2 and sys.byteorder == "little"
    with open(path + ".tmp", "wb") as f:
        header.tofile(f)
        tokens.tofile(f)
    os.replace(path + ".tmp", path)
write(os.path.join(sys.argv[1], "train.bin"), 1 << 20, 1)   # 64 batches of 16 x 1024
write(os.path.join(sys.argv[1], "val.bin"), 1 << 16, 2)     # llm.c asks B x T + 1 per file
EOF
}

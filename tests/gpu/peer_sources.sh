#!/usr/bin/env bash
# peer_sources.sh — the sources tests/gpu/bench_peers.sh builds its llm.c peer from, exported
# from two git repositories (a clone or a bare mirror of each) into one small folder that can
# travel to the GPU machine beside the working tree:
#
#   tests/gpu/peer_sources.sh DEST LLMC_GIT CUDNN_FRONTEND_GIT
#
#   DEST/llm.c            karpathy/llm.c at LLMC_GIT's HEAD, without dev/data, doc and the
#                         notebooks (the build needs train_gpt2.cu, llmc/ and the Makefile)
#   DEST/cudnn-frontend   NVIDIA/cudnn-frontend's include/ and licence, at tag v1.16.0 where
#                         CUDNN_FRONTEND_GIT has it (the version llm.c's cuDNN attention was
#                         seen to build with against cuDNN 9.19), else at its HEAD
# Each folder gets a file PEER_SOURCE naming the repository and the commit exported;
# bench_peers.sh prints it in its provenance. A folder already in DEST is replaced (said so).
# Then:  LLMC_DIR=DEST/llm.c CUDNN_FRONTEND_DIR=DEST/cudnn-frontend tests/gpu/bench_peers.sh OUTDIR
set -uo pipefail
usage="usage: tests/gpu/peer_sources.sh DEST LLMC_GIT CUDNN_FRONTEND_GIT (git folders: a clone or a bare mirror)"
FRONTEND_TAG=v1.16.0

die() { echo "peer_sources: error: $*" >&2; exit 1; }

# commit_of GIT REV: the full commit of REV, or nothing
commit_of() { git -C "$1" rev-parse --verify --quiet "$2^{commit}"; }

# export_tree NAME GIT REV DEST PATHSPEC...: git archive of REV's PATHSPEC into DEST, with PEER_SOURCE
export_tree() {
    local name=$1 repo=$2 rev=$3 dest=$4 commit
    shift 4
    commit=$(commit_of "$repo" "$rev") || die "$repo has no commit $rev"
    if [ -e "$dest" ]; then
        echo "peer_sources: replacing $dest"
        rm -rf "$dest" || die "cannot remove $dest"
    fi
    mkdir -p "$dest" || die "cannot make $dest"
    git -C "$repo" archive --format=tar "$commit" -- "$@" | tar -x -C "$dest" ||
        die "git archive of $repo at $commit into $dest failed"
    {
        echo "repository $name"
        echo "revision $rev"
        echo "commit $commit"
        echo "committed $(git -C "$repo" log -1 --format=%cI "$commit")"
    } >"$dest/PEER_SOURCE"
    echo "peer_sources: $dest: $name $rev ($commit), $(du -sh "$dest" | cut -f1)"
}

main() {
    [ $# -eq 3 ] || { echo "$usage" >&2; exit 2; }
    local dest=$1 llmc=$2 fe=$3 fe_rev
    git -C "$llmc" rev-parse --git-dir >/dev/null 2>&1 || die "$llmc is no git folder; $usage"
    git -C "$fe" rev-parse --git-dir >/dev/null 2>&1 || die "$fe is no git folder; $usage"
    mkdir -p "$dest" || die "cannot make $dest"
    export_tree karpathy/llm.c "$llmc" HEAD "$dest/llm.c" . \
        ':(exclude)dev/data' ':(exclude)doc' ':(exclude,glob)**/*.ipynb'
    [[ -f $dest/llm.c/train_gpt2.cu && -f $dest/llm.c/llmc/cudnn_att.cpp ]] ||
        die "$llmc: no train_gpt2.cu or llmc/cudnn_att.cpp at HEAD: is it karpathy/llm.c?"
    fe_rev=HEAD
    if commit_of "$fe" "$FRONTEND_TAG" >/dev/null; then fe_rev=$FRONTEND_TAG
    else echo "peer_sources: note: $fe has no tag $FRONTEND_TAG: exporting its HEAD"; fi
    local fe_paths=(include)
    git -C "$fe" cat-file -e "$fe_rev:LICENSE.txt" 2>/dev/null && fe_paths+=(LICENSE.txt)
    export_tree NVIDIA/cudnn-frontend "$fe" "$fe_rev" "$dest/cudnn-frontend" "${fe_paths[@]}"
    [ -f "$dest/cudnn-frontend/include/cudnn_frontend.h" ] || die "$fe: no include/cudnn_frontend.h at $fe_rev"
    echo "peer_sources: $dest in all: $(du -sh "$dest" | cut -f1)"
}

main "$@"

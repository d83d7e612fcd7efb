#!/usr/bin/env bash
# shared_node.sh — the shared-node rules on the CUDA backend (docs/security.md), on 1 GPU:
# the heartbeat folder is private and gone after the run; an unusable heartbeat base is
# one warning line and a run that still succeeds; a diverging learning rate (fp32 and
# bf16) is one error line naming the point, the step and the rank, and no result; a
# SIGTERM inside a result file's write keeps that point.
#   tests/gpu/shared_node.sh OUTDIR          from the repo root, bin/dpscale prebuilt with CUDA
# Prints SHARED_NODE_CHECK lines (PASS or FAIL) and exits non-zero when one failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
[ $# -ge 1 ] || { echo "usage: tests/gpu/shared_node.sh OUTDIR" >&2; exit 2; }
mkdir -p "$1" && OUT=$(cd "$1" && pwd) || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
fails=0
check() { # NAME STATUS DETAIL
    if [ "$2" = 0 ]; then echo "SHARED_NODE_CHECK $1 PASS $3"; else echo "SHARED_NODE_CHECK $1 FAIL $3"; fails=$((fails + 1)); fi
}
run() { # NAME ARGS...: one rank on the GPU, output and error in OUT/NAME.*
    local name=$1; shift
    timeout 300 mpirun -np 1 --bind-to none bin/dpscale run --run.backend=cuda --run.output_dir="$OUT" "$@" \
        >"$OUT/$name.out" 2>"$OUT/$name.err"
}

# 1. a private heartbeat folder, removed at the end
base="$OUT/hb-base"; mkdir -p "$base"
DPSCALE_HEARTBEAT_DIR=$base run private --config configs/mlp-small.ini --run.output=private.h5
rc=$?
left=$(find "$base" -mindepth 1 | wc -l)
check heartbeat_private "$([ $rc = 0 ] && [ "$left" = 0 ] && echo 0 || echo 1)" "exit $rc, $left entries left in the base"

# 2. no usable heartbeat base: one warning, the run succeeds
DPSCALE_HEARTBEAT_DIR=/nonexistent/dpscale run nobase --config configs/mlp-small.ini --run.output=nobase.h5
rc=$?
warned=$(grep -c "no node-local heartbeats" "$OUT/nobase.err")
check heartbeat_unusable "$([ $rc = 0 ] && [ "$warned" = 1 ] && [ -f "$OUT/nobase.h5" ] && echo 0 || echo 1)" \
    "exit $rc, $warned warning line(s): $(grep -m1 'dpscale: warning' "$OUT/nobase.err" | cut -c1-160)"

# 3. divergence on the GPU, fp32 and bf16
for prec in fp32 bf16; do
    run "diverge_$prec" --config configs/mlp-small.ini --train.precision=$prec --train.lr=10 --train.momentum=0.99 \
        --run.output="diverge-$prec.h5"
    rc=$?
    line=$(grep -m1 "dpscale: error" "$OUT/diverge_$prec.err")
    n=$(grep -c "dpscale: error" "$OUT/diverge_$prec.err")
    check "diverged_$prec" "$([ $rc = 1 ] && [ "$n" = 1 ] && [[ $line == *"point diverged at step"* ]] && \
        [ ! -e "$OUT/diverge-$prec.h5" ] && echo 0 || echo 1)" "exit $rc: $(echo "$line" | cut -c1-200)"
done

# 4. SIGTERM to mpirun and the rank, as Slurm's preemption sends it, while the first
#    point's file is written (held 3 s there); mpirun's grace as jobs/lib/common.sh sets it
DPSCALE_WRITE_FAULT=pause:3 OMPI_MCA_odls_base_sigkill_timeout=10 timeout 300 mpirun -np 1 --bind-to none bin/dpscale run --run.backend=cuda \
    --config configs/mlp-small.ini --run.sweep=1 --run.output_dir="$OUT" --run.output=term.h5 \
    >"$OUT/term.out" 2>"$OUT/term.err" &
job=$!
for _ in $(seq 1 300); do ls -a "$OUT" | grep -q '^\.term\.h5\.' && break; sleep 0.1; done
sleep 0.5
# one SIGTERM each to mpirun and the rank, not to `timeout` (which would pass a second one
# on to mpirun, and a second SIGTERM makes mpirun kill at once)
pkill -TERM -f "^(mpirun -np 1 --bind-to none )?bin/dpscale run --run.backend=cuda --config configs/mlp-small.ini --run.sweep=1"
wait $job
rc=$?
pts=$(${PYTHON:-python3} -c "import h5py; f = h5py.File('$OUT/term.h5', 'r'); print(int(f.attrs['points_completed']))" 2>/dev/null)
check sigterm_in_write "$([ "$pts" = 1 ] && echo 0 || echo 1)" "exit $rc, points in term.h5: ${pts:-none}; $(grep -m1 'SIGTERM' "$OUT/term.err" | cut -c1-160)"

echo "shared_node: $fails failed"
exit $((fails > 0))

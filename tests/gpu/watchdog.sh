#!/usr/bin/env bash
# watchdog.sh — the watchdog on the GPU path (NCCL over NVLink), what it must do:
# `kill -STOP` of one rank of `mpirun -np 2 dpscale run ... --run.timeout_s=10` ends every
# process within 20 s with one line naming the stopped rank; and a rank that hangs before
# a reduction (DPSCALE_FAULT=1:30:hang) is named by its peer.
#   tests/gpu/watchdog.sh OUTDIR          from the repo root, bin/dpscale prebuilt
# Prints WATCHDOG_CHECK lines (PASS or FAIL) and exits non-zero when one failed.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
[ $# -ge 1 ] || { echo "usage: tests/gpu/watchdog.sh OUTDIR" >&2; exit 2; }
mkdir -p "$1" && OUT=$(cd "$1" && pwd) || exit 2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
TIMEOUT_S=10
fails=0
check() { # NAME CONDITION-RESULT DETAIL
    if [ "$2" = 0 ]; then echo "WATCHDOG_CHECK $1 PASS $3"; else echo "WATCHDOG_CHECK $1 FAIL $3"; fails=$((fails + 1)); fi
}
rank_pid() { # RANK: the pid of the dpscale process of that rank
    local p
    for p in $(pgrep -f "bin/dpscale run"); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1" && { echo "$p"; return; }
    done
}

# 1. kill -STOP of rank 1 during the real pass
timeout 120 mpirun -np 2 --bind-to none bin/dpscale run --config configs/mlp-small.ini --run.backend=cuda \
    --run.sweep=2 --train.iters=200000 --run.timeout_s=$TIMEOUT_S --run.output_dir="$OUT" --run.output=stop.h5 \
    >"$OUT/stop.out" 2>"$OUT/stop.err" &
job=$!
for _ in $(seq 1 100); do pid=$(rank_pid 1); [ -n "$pid" ] && break; sleep 0.2; done
sleep 8 # into the steps (NCCL and cuBLASLt set up)
kill -STOP "$pid"
t0=$SECONDS
wait "$job"
rc=$?
# every process gone, the stopped one too (mpirun may return while a killed rank still tears down)
while [ -n "$(ps -o stat= -p "$pid" | grep -v Z)" ] && ((SECONDS - t0 <= TIMEOUT_S + 10)); do sleep 0.2; done
elapsed=$((SECONDS - t0))
cat "$OUT/stop.err"
lines=$(grep -c '^dpscale: error:' "$OUT/stop.err")
left=$(ps -o stat= -p "$pid" | grep -vc Z)
check stop-ends-in-time $((elapsed <= TIMEOUT_S + 10 && rc != 0 ? 0 : 1)) "rc=$rc, ${elapsed} s after SIGSTOP"
check stop-one-line-names-rank-1 $((lines == 1 ? 0 : 1)) \
    "$(grep '^dpscale: error:' "$OUT/stop.err" | grep -c "rank 1 on this node (pid $pid) stopped answering") of $lines lines"
check stop-no-process-left $((left == 0 ? 0 : 1)) "pid $pid"
kill -CONT "$pid" 2>/dev/null; kill -KILL "$pid" 2>/dev/null

# 2. rank 1 hangs before its first reduction (the communication-alone pass)
t0=$SECONDS
DPSCALE_FAULT=1:30:hang timeout 120 mpirun -np 2 --bind-to none -x DPSCALE_FAULT bin/dpscale run \
    --config configs/mlp-small.ini --run.backend=cuda --run.sweep=2 --train.iters=200 --run.timeout_s=$TIMEOUT_S \
    --run.output_dir="$OUT" --run.output=hang.h5 >"$OUT/hang.out" 2>"$OUT/hang.err"
rc=$?
elapsed=$((SECONDS - t0))
cat "$OUT/hang.err"
check hang-exit-4 $((rc == 4 ? 0 : 1)) "rc=$rc in ${elapsed} s"
check hang-names-rank-1 $(grep -q "rank 1 on this node (pid [0-9]*) is stuck in the communication-alone pass" \
    "$OUT/hang.err"; echo $?) ""
echo "== $fails checks failed"
((fails == 0))

#!/usr/bin/env bash
# sweep.sh — one dpscale scaling sweep per transport, then one comparable table.
#
#   jobs/lib/sweep.sh [dpscale run options...]
#
# NCCL fixes its transport settings once per process, so each transport (nvlink,
# pcie, net) is its own launch, writing NAME-TRANSPORT.h5 into OUTDIR; at the end
# `dpscale report` prints them side by side. Used by jobs/scale8.sh and
# jobs/multinode.sh; runs as well outside Slurm with mpirun (LAUNCHER).
#
# Environment (all optional):
#   DPSCALE      the binary                          (default: bin/dpscale beside this repo)
#   TRANSPORTS   comma-separated transports           (default: the config's comm.transports, else nvlink,pcie)
#   OUTDIR       folder of the result files           (default: results)
#   NAME         file name stem                       (default: dpscale-$SLURM_JOB_ID or -<UTC time>)
#   LAUNCHER     how to start the ranks               (default: srun under Slurm, else mpirun -np $NP)
#   NP           ranks for mpirun outside Slurm       (default: number of GPUs, else 2)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DPSCALE=${DPSCALE:-$here/bin/dpscale}
OUTDIR=${OUTDIR:-results}
NAME=${NAME:-dpscale-${SLURM_JOB_ID:-$(date -u +%Y%m%dT%H%M%SZ)}}

die() { echo "dpscale: error: $*" >&2; exit 2; }
[ -x "$DPSCALE" ] || die "no dpscale binary at $DPSCALE; run make first or set DPSCALE"
mkdir -p "$OUTDIR" || die "cannot create OUTDIR=$OUTDIR"
if [ -z "${TRANSPORTS:-}" ]; then # the config may name them: comm.transports = nvlink,pcie
    TRANSPORTS=$("$DPSCALE" config "$@" --get comm.transports) || die "the dpscale options above are not valid"
    TRANSPORTS=${TRANSPORTS:-nvlink,pcie}
fi
if [ -z "${LAUNCHER:-}" ]; then
    if [ -n "${SLURM_JOB_ID:-}" ] && command -v srun >/dev/null 2>&1; then
        LAUNCHER="srun --kill-on-bad-exit=1"
    else
        gpus=$(nvidia-smi -L 2>/dev/null | wc -l || true)
        LAUNCHER="mpirun --bind-to none -np ${NP:-$([ "${gpus:-0}" -gt 0 ] && echo "$gpus" || echo 2)}"
    fi
fi

files=()
IFS=, read -r -a list <<<"$TRANSPORTS"
for t in "${list[@]}"; do
    case "$t" in nvlink | pcie | net | auto) ;; *) die "unknown transport '$t' in TRANSPORTS; use nvlink, pcie, net or auto" ;; esac
    out="$OUTDIR/$NAME-$t.h5"
    [ -e "$out" ] && die "$out exists; results are never overwritten: choose another NAME or OUTDIR"
    echo "== transport $t: $LAUNCHER $DPSCALE run $* --comm.transports=$t"
    # shellcheck disable=SC2086 # LAUNCHER is a command line
    $LAUNCHER "$DPSCALE" run "$@" --comm.transports="$t" --run.output_dir="$OUTDIR" --run.output="$NAME-$t.h5"
    files+=("$out")
done
echo
echo "== $NAME: ${files[*]}"
"$DPSCALE" report --compare "${files[@]}"

#!/usr/bin/env bash
# sweep.sh — one dpscale scaling sweep per path, then one comparable table.
#
#   jobs/lib/sweep.sh [dpscale run options...]
#
# NCCL fixes the path its bytes take (comm.path: nvlink, pcie, net) once per
# process, so each path is its own launch (--comm.path=PATH), writing
# NAME-PATH.h5 into OUTDIR; at the end `dpscale report` prints them side by side.
# Used by jobs/scale8.sh and jobs/multinode.sh; runs as well outside Slurm with
# mpirun (LAUNCHER).
#
# Environment (all optional):
#   DPSCALE      the binary                          (default: bin/dpscale beside this repo)
#   PATHS        comma-separated paths: auto, nvlink, pcie, net
#                                                    (default: the config's comm.paths, else nvlink,pcie;
#                                                    TRANSPORTS, its former name, is taken with a warning)
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
if [ -n "${TRANSPORTS:-}" ]; then # its former name
    if [ -n "${PATHS:-}" ]; then echo "dpscale: warning: TRANSPORTS is deprecated and ignored: PATHS=$PATHS is set" >&2
    else echo "dpscale: warning: TRANSPORTS is deprecated: use PATHS (taking PATHS=$TRANSPORTS)" >&2; PATHS=$TRANSPORTS; fi
fi
if [ -z "${PATHS:-}" ]; then # the config may name them: comm.paths = nvlink,pcie
    PATHS=$("$DPSCALE" config "$@" --get comm.paths) || die "the dpscale options above are not valid"
    PATHS=${PATHS:-nvlink,pcie}
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
IFS=, read -r -a list <<<"$PATHS"
for p in "${list[@]}"; do
    case "$p" in nvlink | pcie | net | auto) ;; *) die "unknown path '$p' in PATHS; use nvlink, pcie, net or auto" ;; esac
    out="$OUTDIR/$NAME-$p.h5"
    [ -e "$out" ] && die "$out exists; results are never overwritten: choose another NAME or OUTDIR"
    # --comm.paths too: it replaces a list the config may hold, which one launch cannot run
    echo "== path $p: $LAUNCHER $DPSCALE run $* --comm.path=$p --comm.paths=$p"
    # shellcheck disable=SC2086 # LAUNCHER is a command line
    $LAUNCHER "$DPSCALE" run "$@" --comm.path="$p" --comm.paths="$p" --run.output_dir="$OUTDIR" --run.output="$NAME-$p.h5"
    files+=("$out")
done
echo
echo "== $NAME: ${files[*]}"
"$DPSCALE" report --compare "${files[@]}"

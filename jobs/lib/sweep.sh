#!/usr/bin/env bash
# sweep.sh — one dpscale scaling sweep per path, then one comparable table.
#
#   jobs/lib/sweep.sh [dpscale run options...]
#
# NCCL fixes the path its bytes take (comm.path: nvlink, pcie, host, net) once per
# process, so each path is its own launch (--comm.path=PATH), writing
# NAME-PATH.h5 into OUTDIR; at the end `dpscale report` prints them side by side.
# A path whose launch fails is reported in one line with the reason, the other paths
# still run, and the script then exits 1. Used by jobs/scale8.sh and
# jobs/multinode.sh; runs as well outside Slurm with mpirun (LAUNCHER).
#
# Environment (all optional):
#   DPSCALE      the binary                          (default: bin/dpscale beside this repo)
#   PATHS        the paths, separated by ':' or ',': auto, nvlink, pcie (peer-to-peer over
#                                                    PCIe), host (through host memory), net
#                                                    (default: the config's comm.paths, else nvlink,host
#                                                    where nvidia-smi shows NVLink between the GPUs,
#                                                    pcie,host where it shows none, auto without GPUs;
#                                                    TRANSPORTS, its former name, is taken with a warning)
#   OUTDIR       folder of the result files           (default: out)
#   NAME         file name stem                       (default: dpscale-$SLURM_JOB_ID or -<UTC time>)
#   LAUNCHER     how to start the ranks               (default: as LAUNCH says, see jobs/lib/common.sh)
#   NP           ranks for mpirun outside Slurm       (default: number of GPUs, else 2)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=jobs/lib/common.sh
source "$here/jobs/lib/common.sh"
DPSCALE_JOB_TAG=${DPSCALE_JOB_TAG:-dpscale sweep}
# shellcheck disable=SC2086
check_counts $COUNT_VARIABLES
DPSCALE=${DPSCALE:-$here/bin/dpscale}
OUTDIR=${OUTDIR:-out}
NAME=${NAME:-dpscale-${SLURM_JOB_ID:-$(date -u +%Y%m%dT%H%M%SZ)}}

[ -x "$DPSCALE" ] || die "no dpscale binary at $DPSCALE; run make first or set DPSCALE"
paths_from_transports
backend=$("$DPSCALE" config "$@" --get run.backend) || die "the dpscale options above are not valid"
if [ -n "${PATHS:-}" ]; then
    PATHS=$(list_items PATHS "$PATHS")
    why="PATHS"
else # the config may name them: comm.paths = nvlink,host
    PATHS=$("$DPSCALE" config "$@" --get comm.paths) || die "the dpscale options above are not valid"
    why="the config's comm.paths"
    if [ -z "$PATHS" ]; then
        # the default: what this node can run. With NVLink: NVLink against host memory
        # (pcie would take NVLink too, and is refused there). A PCIe-only node (L40S,
        # H100 PCIe): peer-to-peer over PCIe against host memory, instead of failing at NVLink
        ngpus=$(gpus_on_node)
        if [ "$backend" = cpu ] || [ "$ngpus" -eq 0 ]; then
            PATHS=auto why="the default on the CPU backend, whose one path is auto"
        else
            case "$(nvlink_on_node)" in
            no)
                PATHS=pcie,host why="the default without NVLink"
                say "path nvlink skipped: nvidia-smi topo -m shows no NVLink between the $ngpus GPUs of $(hostname) (set PATHS=nvlink to try it anyway)"
                ;;
            *) PATHS=nvlink,host why="the default with NVLink" ;;
            esac
        fi
    fi
fi
if [ -z "${LAUNCHER:-}" ]; then
    NTASKS=${NTASKS:-${NP:-$(g=$(gpus_on_node); [ "$g" -gt 0 ] && echo "$g" || echo 2)}}
    LAUNCHER=$(NTASKS=$NTASKS dpscale_launcher "$(cpus_per_task "${SLURM_NTASKS_PER_NODE:-$NTASKS}")")
fi

# every path and every file checked before the first launch: a typo found after an
# hour of NVLink runs costs the hour
IFS=, read -r -a list <<<"$PATHS"
seen=" "
for p in "${list[@]}"; do
    case "$p" in nvlink | pcie | host | net | auto) ;; *) die "unknown path '$p' in PATHS; use nvlink, pcie, host, net or auto" ;; esac
    [[ $seen != *" $p "* ]] || die "path $p is named twice in PATHS=$PATHS"
    seen+="$p "
    [ -e "$OUTDIR/$NAME-$p.h5" ] && die "$OUTDIR/$NAME-$p.h5 exists; results are never overwritten: choose another NAME or OUTDIR"
done
mkdir -p "$OUTDIR" || die "cannot create OUTDIR=$OUTDIR"
say "paths ${PATHS//,/, } ($why), one launch each; results $OUTDIR/$NAME-<path>.h5"

tmp=$(mktemp "${TMPDIR:-/tmp}/dpscale-sweep.XXXXXX")
trap 'rm -f "$tmp"' EXIT
files=() failed=()
for p in "${list[@]}"; do
    out="$OUTDIR/$NAME-$p.h5"
    # --comm.paths too: it replaces a list the config may hold, which one launch cannot run
    say "path $p: $LAUNCHER $DPSCALE run $* --comm.path=$p --comm.paths=$p"
    set +e
    # shellcheck disable=SC2086 # LAUNCHER is a command line
    $LAUNCHER "$DPSCALE" run "$@" --comm.path="$p" --comm.paths="$p" --run.output_dir="$OUTDIR" \
        --run.output="$NAME-$p.h5" 2>&1 | tee "$tmp"
    rc=${PIPESTATUS[0]}
    set -e
    if [ "$rc" -eq 0 ] && [ -e "$out" ]; then
        say "path $p: done, $out"
        files+=("$out")
    else
        # the reason: dpscale's own error line (every rank may print it; one is enough)
        reason=$(grep -m1 -o 'dpscale: error: .*' "$tmp" | sed 's/^dpscale: error: //' || true)
        [ -n "$reason" ] || reason="the launch exited with status $rc$([ "$rc" -eq 0 ] && echo " but wrote no $out")"
        echo "$(stamp) dpscale job: error: path $p failed: $reason" >&2
        failed+=("$p: $reason")
    fi
done

echo
if [ ${#files[@]} -gt 0 ]; then
    say "$NAME: ${files[*]}"
    "$DPSCALE" report --compare "${files[@]}" || failed+=("the report: dpscale report --compare failed")
fi
if [ ${#failed[@]} -gt 0 ]; then
    echo "$(stamp) dpscale job: error: ${#files[@]} of ${#list[@]} paths done; failed: $(printf '%s; ' "${failed[@]}" | sed 's/; $//')" >&2
    exit 1
fi
say "all ${#list[@]} paths done"

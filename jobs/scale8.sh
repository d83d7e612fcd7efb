#!/usr/bin/env bash
#SBATCH --job-name=dpscale-scale8
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --exclusive
#SBATCH --time=02:00:00
#SBATCH --output=dpscale-scale8-%j.out
#
# scale8.sh — the 1, 2, 4, 8-GPU scaling table of one 8-GPU node, once per
# path NCCL's bytes take (comm.path: NVLink, or peer-to-peer over PCIe on a node
# without NVLink, then host memory), into out/ named by job id and path, and the
# table in this job's log.
#
#   sbatch jobs/scale8.sh                        (from the dpscale folder, after make)
#   sbatch -p PARTITION -A ACCOUNT jobs/scale8.sh [extra dpscale run options...]
#   sbatch --export=ALL,SWEEP=1:2:4:8,PATHS=nvlink:host:net jobs/scale8.sh
#
# Overrides (environment, or sbatch --export=ALL,NAME=value). Lists take ':' between
# their items, which sbatch --export passes whole; ',' works in the environment of
# sbatch, but --export splits at it (a list cut that way is refused, not run short):
#   CONFIG      model preset                 (default configs/mlp-gemm-heavy.ini; CPU-only nodes: configs/mlp-small.ini)
#   SWEEP       GPU counts, e.g. 1:2:4:8     (default 1,2,4,8, cut to the tasks of the job)
#   PATHS       paths, one launch each       (default: the config's comm.paths, else nvlink,host
#               e.g. nvlink:host:net          where nvidia-smi shows NVLink, pcie,host where it
#                                             shows none, auto on a node without GPUs; host =
#                                             through host memory, pcie = peer-to-peer over PCIe);
#                                             TRANSPORTS, its former name, is taken with a warning
#   OUTDIR      folder of the result files   (default out, in the dpscale folder; results/ holds
#                                             the reference files and is left alone)
#   LAUNCH      pmix | pmi2 | mpirun | auto  (default auto: srun --mpi=pmix, else srun --mpi=pmi2,
#                                             as srun --mpi=list offers them, else mpirun)
#   NVLS        on | off                     (default: unset, NCCL_NVLS_ENABLE as the environment has
#                                             it; every figure in results/ ran with NVLS off)
#   NAME        file name stem               (default dpscale-scale8-<job id>: files NAME-<path>.h5)
#   NTASKS      ranks when run outside Slurm with LAUNCH=mpirun (default: one per GPU)
#   DPSCALE_HOME the dpscale folder          (default: where sbatch was called)
#   DPSCALE     the binary                   (default: bin/dpscale there)
# A path that fails is reported in one line with its reason; the others still run and
# the job then exits 1. Each rank gets the node's CPUs shared among the ranks
# (srun --cpus-per-task; sbatch -c N sets it). GPU binding: each rank takes the GPU of
# its node-local rank; when Slurm gives every task a single GPU of its own
# (--gpus-per-task=1), it takes that one.
set -euo pipefail
source "${DPSCALE_HOME:-${SLURM_SUBMIT_DIR:-$PWD}}/jobs/lib/common.sh" 2>/dev/null ||
    { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) dpscale job: error: jobs/lib/common.sh not found: submit from the dpscale folder or set DPSCALE_HOME" >&2; exit 2; }
DPSCALE_JOB_TAG="dpscale scale8"
# shellcheck disable=SC2086
check_counts $COUNT_VARIABLES
home=$(dpscale_home)
cd "$home"
check_export_split
paths_from_transports

ngpus=$(gpus_on_node)
# outside Slurm (mpirun standing in for srun): NTASKS, else one rank per GPU
ntasks=${SLURM_NTASKS:-${NTASKS:-$([ "$ngpus" -gt 0 ] && echo "$ngpus" || echo 8)}}
export NTASKS=$ntasks
if [ "$ngpus" -eq 0 ]; then
    say "no GPU on $(hostname): running the CPU backend (the figures describe CPUs, not GPUs)"
    backend=cpu
    : "${CONFIG:=configs/mlp-small.ini}"
else
    backend=cuda
    [ "$ngpus" -ge "$ntasks" ] || [ "$ngpus" -eq 1 ] ||
        die "$ntasks tasks but $ngpus GPUs on $(hostname): ask for --gpus-per-node=$ntasks or fewer tasks"
fi
: "${CONFIG:=configs/mlp-gemm-heavy.ini}"
[ -r "$CONFIG" ] || die "CONFIG=$CONFIG is not readable (presets are in $home/configs)"
if [ -n "${SWEEP:-}" ]; then
    SWEEP=$(list_items SWEEP "$SWEEP")
    IFS=, read -r -a counts <<<"$SWEEP"
    for n in "${counts[@]}"; do
        [[ $n =~ ^[1-9][0-9]*$ ]] || die "SWEEP=$SWEEP: '$n' is not a GPU count"
        [ "$n" -le "$ntasks" ] || die "SWEEP=$SWEEP asks for $n GPUs but the job has $ntasks tasks: lower SWEEP or ask for more tasks"
    done
else
    SWEEP=""
    for n in 1 2 4 8; do [ "$n" -le "$ntasks" ] && SWEEP+="${SWEEP:+,}$n"; done
fi
if [ -n "${PATHS:-}" ]; then # else jobs/lib/sweep.sh chooses (see above)
    PATHS=$(list_items PATHS "$PATHS")
    export PATHS
fi

export OUTDIR=${OUTDIR:-out}
export NAME=${NAME:-dpscale-scale8-${SLURM_JOB_ID:-$(date -u +%Y%m%dT%H%M%SZ)}}
cpt=$(cpus_per_task "$ntasks")
export LAUNCHER
LAUNCHER=$(dpscale_launcher "$cpt")
export DPSCALE=${DPSCALE:-$home/bin/dpscale}
export DPSCALE_JOB_TAG
say "job ${SLURM_JOB_ID:-none} on $(hostname), $ntasks tasks, $ngpus GPUs, $cpt CPUs per task, config $CONFIG, sweep ${SWEEP//,/, }"
say "launcher '$LAUNCHER'"
nvls_setting
exec "$home/jobs/lib/sweep.sh" --config "$CONFIG" --backend="$backend" --sweep="$SWEEP" "$@"

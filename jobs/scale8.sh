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
# path NCCL's bytes take (comm.path: NVLink, then PCIe), into results/ named by
# job id and path, and the table in this job's log.
#
#   sbatch jobs/scale8.sh                        (from the dpscale folder, after make)
#   sbatch -p PARTITION -A ACCOUNT jobs/scale8.sh [extra dpscale run options...]
#
# Overrides (environment, e.g. sbatch --export=ALL,CONFIG=...):
#   CONFIG      model preset                 (default configs/mlp-gemm-heavy.ini; CPU-only nodes: configs/mlp-small.ini)
#   SWEEP       GPU counts                   (default 1,2,4,8, cut to the tasks of the job)
#   PATHS       paths, one launch each       (default: the config's comm.paths, else nvlink,pcie;
#               on a node without GPUs: auto); TRANSPORTS, its former name, is taken with a warning
#   OUTDIR      folder of the result files   (default results)
#   LAUNCH      srun | mpirun | auto         (default auto: srun --mpi=pmix when Slurm has PMIx, else mpirun)
#   NAME        file name stem               (default dpscale-scale8-<job id>: files NAME-<path>.h5)
#   NTASKS      ranks when run outside Slurm with LAUNCH=mpirun (default: one per GPU)
#   DPSCALE_HOME the dpscale folder          (default: where sbatch was called)
# GPU binding: each rank takes the GPU of its node-local rank; when Slurm gives
# every task a single GPU of its own (--gpus-per-task=1), it takes that one.
set -euo pipefail
source "${DPSCALE_HOME:-${SLURM_SUBMIT_DIR:-$PWD}}/jobs/lib/common.sh" 2>/dev/null ||
    { echo "dpscale job: error: jobs/lib/common.sh not found: submit from the dpscale folder or set DPSCALE_HOME" >&2; exit 2; }
home=$(dpscale_home)
cd "$home"
paths_from_transports

ngpus=$(gpus_on_node)
# outside Slurm (mpirun standing in for srun): NTASKS, else one rank per GPU
ntasks=${SLURM_NTASKS:-${NTASKS:-$([ "$ngpus" -gt 0 ] && echo "$ngpus" || echo 8)}}
export NTASKS=$ntasks
if [ "$ngpus" -eq 0 ]; then
    echo "no GPU on $(hostname): running the CPU backend (the figures describe CPUs, not GPUs)"
    backend=cpu
    : "${PATHS:=auto}"
    : "${CONFIG:=configs/mlp-small.ini}"
else
    backend=cuda
    [ "$ngpus" -ge "$ntasks" ] || [ "$ngpus" -eq 1 ] ||
        die "$ntasks tasks but $ngpus GPUs on $(hostname): ask for --gpus-per-node=$ntasks or fewer tasks"
fi
: "${CONFIG:=configs/mlp-gemm-heavy.ini}"
[ -r "$CONFIG" ] || die "CONFIG=$CONFIG is not readable (presets are in $home/configs)"
if [ -z "${SWEEP:-}" ]; then
    SWEEP=""
    for n in 1 2 4 8; do [ "$n" -le "$ntasks" ] && SWEEP+="${SWEEP:+,}$n"; done
fi

if [ -n "${PATHS:-}" ]; then export PATHS; fi # else the config's comm.paths, else nvlink,pcie
export OUTDIR=${OUTDIR:-results}
export NAME=${NAME:-dpscale-scale8-${SLURM_JOB_ID:-$(date -u +%Y%m%dT%H%M%SZ)}}
export LAUNCHER
LAUNCHER=$(dpscale_launcher)
export DPSCALE=$home/bin/dpscale
echo "dpscale scale8: job ${SLURM_JOB_ID:-none} on $(hostname), $ntasks tasks, $ngpus GPUs, config $CONFIG, sweep $SWEEP,"
echo "  paths ${PATHS:-from the config, else nvlink,pcie}, launcher '$LAUNCHER', results $OUTDIR/$NAME-<path>.h5"
exec "$home/jobs/lib/sweep.sh" --config "$CONFIG" --backend="$backend" --sweep="$SWEEP" "$@"

#!/usr/bin/env bash
#SBATCH --job-name=dpscale-multinode
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --exclusive
#SBATCH --time=02:00:00
#SBATCH --output=dpscale-multinode-%j.out
#
# multinode.sh — a sweep across node boundaries (8, 16, 32 ... GPUs) over the
# network: N nodes of G GPUs, one rank per GPU. Change the node count with
# `sbatch -N 2 jobs/multinode.sh`, the GPUs per node with --gpus-per-node and
# --ntasks-per-node together.
#
#   sbatch -p PARTITION -A ACCOUNT -N 4 jobs/multinode.sh [extra dpscale run options...]
#   sbatch -N 2 --export=ALL,SWEEP=1:8:16,PATHS=auto:net jobs/multinode.sh
#
# Overrides (environment, or sbatch --export=ALL,NAME=value; lists take ':' between
# their items, as --export splits at ','): CONFIG (default configs/mlp-gemm-heavy.ini),
# SWEEP (default 1, then every power of two from one node's GPUs up to the job's),
# PATHS (comm.path of each launch, default auto: NVLink inside a node, the network
# between; add net to force the network even inside; TRANSPORTS, its former name, is
# taken with a warning), OUTDIR (default out, in the dpscale folder), LAUNCH (pmix,
# pmi2, mpirun or auto, as in jobs/scale8.sh), NVLS (on or off: NCCL_NVLS_ENABLE, as in
# jobs/scale8.sh), DPSCALE_HOME, DPSCALE, and any NCCL_*
# variable (NCCL_IB_HCA, NCCL_SOCKET_IFNAME, ...): every run records ranks per node,
# the adapters (/system/topology) and the NCCL settings in force (nccl_env). A path
# that fails is reported in one line; the others still run and the job exits 1.
set -euo pipefail
source "${DPSCALE_HOME:-${SLURM_SUBMIT_DIR:-$PWD}}/jobs/lib/common.sh" 2>/dev/null ||
    { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) dpscale job: error: jobs/lib/common.sh not found: submit from the dpscale folder or set DPSCALE_HOME" >&2; exit 2; }
DPSCALE_JOB_TAG="dpscale multinode"
# shellcheck disable=SC2086
check_counts $COUNT_VARIABLES
home=$(dpscale_home)
cd "$home"
check_export_split
paths_from_transports
ntasks=${SLURM_NTASKS:-8}
nodes=${SLURM_JOB_NUM_NODES:-1}
per_node=$((ntasks / nodes))
[ $((per_node * nodes)) -eq "$ntasks" ] || die "$ntasks tasks do not spread evenly over $nodes nodes: use --ntasks-per-node"
: "${CONFIG:=configs/mlp-gemm-heavy.ini}"
[ -r "$CONFIG" ] || die "CONFIG=$CONFIG is not readable (presets are in $home/configs)"
if [ -n "${SWEEP:-}" ]; then
    SWEEP=$(list_items SWEEP "$SWEEP")
    IFS=, read -r -a counts <<<"$SWEEP"
    for n in "${counts[@]}"; do
        [[ $n =~ ^[1-9][0-9]*$ ]] || die "SWEEP=$SWEEP: '$n' is not a GPU count"
        [ "$n" -le "$ntasks" ] || die "SWEEP=$SWEEP asks for $n GPUs but the job has $ntasks tasks: lower SWEEP or ask for more nodes"
    done
else
    SWEEP=1
    for ((n = per_node; n <= ntasks; n *= 2)); do [ "$n" -gt 1 ] && SWEEP+=",$n"; done
fi
export PATHS
PATHS=$(list_items PATHS "${PATHS:-auto}")
export OUTDIR=${OUTDIR:-out}
export NAME=${NAME:-dpscale-multinode-${SLURM_JOB_ID:-$(date -u +%Y%m%dT%H%M%SZ)}}
cpt=$(cpus_per_task "$per_node")
export LAUNCHER
LAUNCHER=$(dpscale_launcher "$cpt")
export DPSCALE=${DPSCALE:-$home/bin/dpscale}
export DPSCALE_JOB_TAG
say "job ${SLURM_JOB_ID:-none}, $nodes nodes x $per_node ranks, $cpt CPUs per task, config $CONFIG, sweep ${SWEEP//,/, }"
nvls_setting
say "launcher '$LAUNCHER'; NCCL: $(env | grep '^NCCL_' | tr '\n' ' ' || true)"
exec "$home/jobs/lib/sweep.sh" --config "$CONFIG" --sweep="$SWEEP" "$@"

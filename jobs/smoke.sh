#!/usr/bin/env bash
#SBATCH --job-name=dpscale-smoke
#SBATCH --nodes=1
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=4
#SBATCH --gpus=1
#SBATCH --time=00:05:00
#SBATCH --output=dpscale-smoke-%j.out
#
# smoke.sh — proves an installation works in about a minute on one GPU: the
# topology, the gradient check, and a short training run whose result file is read
# back. Exit status 0 means dpscale is ready for jobs/scale8.sh.
#
#   sbatch jobs/smoke.sh              (from the dpscale folder, after make)
#
# Overrides (environment): OUTDIR (default out/smoke, in the dpscale folder),
# DPSCALE_HOME, DPSCALE, LAUNCH (pmix, pmi2, mpirun or auto, as in jobs/scale8.sh).
set -euo pipefail
source "${DPSCALE_HOME:-${SLURM_SUBMIT_DIR:-$PWD}}/jobs/lib/common.sh" 2>/dev/null ||
    { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) dpscale job: error: jobs/lib/common.sh not found: submit from the dpscale folder or set DPSCALE_HOME" >&2; exit 2; }
DPSCALE_JOB_TAG="dpscale smoke"
# shellcheck disable=SC2086
check_counts $COUNT_VARIABLES
home=$(dpscale_home)
cd "$home"
dpscale=${DPSCALE:-$home/bin/dpscale}
OUTDIR=${OUTDIR:-out/smoke}
name=dpscale-smoke-${SLURM_JOB_ID:-$(date -u +%Y%m%dT%H%M%SZ)}
launcher=$(NTASKS=${NTASKS:-1} dpscale_launcher "$(cpus_per_task "${SLURM_NTASKS:-1}")")
backend=cuda
[ "$(gpus_on_node)" -gt 0 ] || { say "no GPU visible: smoke-testing the CPU backend"; backend=cpu; }

say "1/3 topology"
"$dpscale" topo --backend="$backend" --topo.peer_bandwidth=off --run.output_dir="$OUTDIR" --run.output="$name-topo.h5"
say "2/3 gradients against finite differences: $launcher"
$launcher "$dpscale" gradcheck --config configs/mlp-tiny.ini --backend="$backend"
say "3/3 a short training run"
$launcher "$dpscale" run --config configs/mlp-medium.ini --backend="$backend" --sweep=1 --train.iters=10 \
    --run.output_dir="$OUTDIR" --run.output="$name.h5"
say "smoke test passed: $OUTDIR/$name.h5"

# common.sh — sourced by the Slurm job scripts: where dpscale is, which launcher
# starts the ranks, and early checks that end in one clear line in the job log.

die() {
    echo "dpscale job: error: $*" >&2
    exit 2
}

# The repository: DPSCALE_HOME, else the folder sbatch was called from (Slurm runs
# a copy of the script from its spool folder, so the script's own path is no guide).
dpscale_home() {
    local home=${DPSCALE_HOME:-${SLURM_SUBMIT_DIR:-$PWD}}
    [ -x "$home/bin/dpscale" ] || die "no $home/bin/dpscale: submit from the dpscale folder after 'make', or set DPSCALE_HOME"
    echo "$home"
}

# srun with PMIx when the cluster has it, else mpirun (which launches through Slurm
# inside an allocation); LAUNCH=srun|mpirun forces one.
dpscale_launcher() {
    local how=${LAUNCH:-auto}
    if [ "$how" = auto ]; then
        if command -v srun >/dev/null 2>&1 && srun --mpi=list 2>&1 | grep -q pmix; then how=srun; else how=mpirun; fi
    fi
    case "$how" in
    srun) echo "srun --mpi=pmix --kill-on-bad-exit=1" ;;
    mpirun)
        command -v mpirun >/dev/null 2>&1 || die "LAUNCH=mpirun but mpirun is not on PATH; load the MPI module"
        # inside an allocation mpirun takes its ranks from Slurm; outside, from NTASKS
        echo "mpirun --bind-to none${OMPI_ALLOW_RUN_AS_ROOT:+ --allow-run-as-root}${SLURM_JOB_ID:+}$([ -z "${SLURM_JOB_ID:-}" ] && echo " -np ${NTASKS:-8}")" ;;
    *) die "LAUNCH=$how: use srun, mpirun or auto" ;;
    esac
}

# PATHS (the comm.path of each launch) was called TRANSPORTS: still taken, with one
# warning; PATHS wins when both are set. TRANSPORTS is then unset, so that
# jobs/lib/sweep.sh does not warn again.
paths_from_transports() {
    [ -n "${TRANSPORTS:-}" ] || return 0
    if [ -n "${PATHS:-}" ]; then
        echo "dpscale job: warning: TRANSPORTS is deprecated and ignored: PATHS=$PATHS is set" >&2
    else
        echo "dpscale job: warning: TRANSPORTS is deprecated: use PATHS (taking PATHS=$TRANSPORTS)" >&2
        PATHS=$TRANSPORTS
    fi
    unset TRANSPORTS
}

# GPUs on this node (0 without a driver): the job then runs on the CPU backend.
gpus_on_node() { nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true; }

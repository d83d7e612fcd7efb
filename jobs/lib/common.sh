# shellcheck shell=bash
# common.sh — sourced by the Slurm job scripts and jobs/lib/sweep.sh: where dpscale is,
# which launcher starts the ranks and with how many CPUs each, list-valued settings
# that survive `sbatch --export`, the node's GPUs and NVLink, and job log lines that
# carry the UTC time and end in one clear line when something is wrong.

# Every line the scripts write starts with the UTC time (ISO 8601), so that a job log
# says when each launch began and ended. DPSCALE_JOB_TAG names the script.
stamp() { date -u +%Y-%m-%dT%H:%M:%SZ; }
say() { echo "$(stamp) ${DPSCALE_JOB_TAG:-dpscale job}: $*"; }
warn() { echo "$(stamp) dpscale job: warning: $*" >&2; }
die() {
    echo "$(stamp) dpscale job: error: $*" >&2
    exit 2
}

# Counts that the scripts compute with, checked before any of them reaches bash
# arithmetic: inside $(( )) bash evaluates a variable's text as an expression, and an
# expression can run a command (NTASKS='a[$(touch /tmp/x)1]'). Only plain digits pass, and
# never 0: each is a count of tasks, nodes or CPUs, and 0 divides or loops forever.
COUNT_VARIABLES="NTASKS NP SLURM_NTASKS SLURM_JOB_NUM_NODES SLURM_CPUS_ON_NODE SLURM_CPUS_PER_TASK SLURM_NTASKS_PER_NODE"
# Each job script checks them all once it has sourced this file; the functions below
# check what they use again, for scripts that call them alone.
#   check_counts NAME...   (a name that is unset or empty is left alone)
check_counts() {
    local name value
    for name in "$@"; do
        value=${!name:-}
        [ -z "$value" ] || [[ $value =~ ^[1-9][0-9]{0,8}$ ]] ||
            die "$name='$value' is not a count: give a whole number of at least 1, in digits only, e.g. $name=8"
    done
}

# Preemption (scancel, a time limit): on SIGTERM, Open MPI's mpirun waits
# odls_base_sigkill_timeout (1 s by default) before it passes the signal on to the ranks,
# then as long again before SIGKILL. dpscale finishes a result file's write that a
# SIGTERM interrupts before it acts on it, which can take longer than 1 s for a large
# file; 10 s each stays inside Slurm's default KillWait (30 s). Other MPIs ignore it.
export OMPI_MCA_odls_base_sigkill_timeout=${OMPI_MCA_odls_base_sigkill_timeout:-10}

# The repository: DPSCALE_HOME, else the folder sbatch was called from (Slurm runs
# a copy of the script from its spool folder, so the script's own path is no guide).
# DPSCALE may name another binary; by default bin/dpscale there.
dpscale_home() {
    local home=${DPSCALE_HOME:-${SLURM_SUBMIT_DIR:-$PWD}}
    [ -r "$home/jobs/lib/sweep.sh" ] || die "no dpscale folder at $home: submit from the dpscale folder, or set DPSCALE_HOME"
    [ -x "${DPSCALE:-$home/bin/dpscale}" ] ||
        die "no ${DPSCALE:-$home/bin/dpscale}: submit from the dpscale folder after 'make', or set DPSCALE_HOME"
    echo "$home"
}

# A list-valued setting (SWEEP, PATHS) with its items joined by commas, the form
# dpscale takes. Items are separated by colons, which `sbatch --export` passes whole
# (SWEEP=1:2:4:8), or by commas, which it does only where the variable is set in the
# environment of sbatch. An empty item ("1,,2", "1:2:") is refused: a typo or a cut
# list must not run as a smaller experiment.
#   list_items NAME VALUE
list_items() {
    local name=$1 value=$2
    [[ $value =~ ^[^,:[:space:]]+([,:][^,:[:space:]]+)*$ ]] ||
        die "$name='$value' is not a list: separate its items by ':' (or ',' outside sbatch --export), e.g. $name=1:2:4:8 or $name=nvlink:host"
    echo "${value//:/,}"
}

# `sbatch --export=ALL,SWEEP=1,2,4,8` gives the job SWEEP=1: Slurm splits --export at
# every comma and takes "2", "4" and "8" for names of variables to pass on, which it
# skips without a word. The job would then run a smaller experiment than was asked.
# Slurm keeps the whole --export value in SLURM_EXPORT_ENV: an item without "=" that
# follows a list-valued setting and looks like one of its items is the rest of that
# list, and the job stops before anything runs.
check_export_split() {
    local spec=${SLURM_EXPORT_ENV:-} item var="" value="" rest=""
    local -a items
    [ -n "$spec" ] || return 0
    IFS=, read -r -a items <<<"$spec"
    for item in "${items[@]}" "="; do # "=": one more turn to report a cut at the end
        if [ -n "$var" ] && [[ $item != *=* ]] && list_item_of "$var" "$item"; then
            rest+=",$item"
            continue
        fi
        [ -z "$rest" ] || die "sbatch --export split $var=$value$rest at its commas, and the job got $var=$value only:" \
            "write $var=$value${rest//,/:} (items separated by ':'), or set $var in the environment of sbatch"
        case "$item" in
        SWEEP=* | PATHS=* | TRANSPORTS=*) var=${item%%=*} value=${item#*=} ;;
        *) var="" ;;
        esac
    done
}

# Whether WORD looks like an item of the list-valued setting NAME.
#   list_item_of NAME WORD
list_item_of() {
    case "$1" in
    SWEEP) [[ $2 =~ ^[0-9]+$ ]] ;;
    PATHS | TRANSPORTS) [[ $2 =~ ^(nvlink|pcie|host|net|auto)$ ]] ;;
    *) return 1 ;;
    esac
}

# PATHS (the comm.path of each launch) was called TRANSPORTS: still taken, with one
# warning; PATHS wins when both are set. TRANSPORTS is then unset, so that
# jobs/lib/sweep.sh does not warn again.
paths_from_transports() {
    [ -n "${TRANSPORTS:-}" ] || return 0
    if [ -n "${PATHS:-}" ]; then
        warn "TRANSPORTS is deprecated and ignored: PATHS=$PATHS is set"
    else
        warn "TRANSPORTS is deprecated: use PATHS (taking PATHS=$TRANSPORTS)"
        PATHS=$TRANSPORTS
    fi
    unset TRANSPORTS
}

# NVLink SHARP (NCCL's NVLS algorithms, on NVSwitch systems that support them): NVLS=on
# or off sets NCCL_NVLS_ENABLE to 1 or 0 for every launch; unset, the environment's
# NCCL_NVLS_ENABLE (or NCCL's default: on where the fabric supports it) stands. Every
# figure in results/ ran with NCCL_NVLS_ENABLE=0 (the lending machines require it): on
# an NVSwitch system measure both, since NVLS changes the NVLink allreduce. Says the
# setting in the job's log; each result file records the NCCL_* environment as well.
nvls_setting() {
    case "${NVLS:-}" in
    on) export NCCL_NVLS_ENABLE=1 ;;
    off) export NCCL_NVLS_ENABLE=0 ;;
    "") ;;
    *) die "NVLS=$NVLS: give on or off (or leave it unset for NCCL_NVLS_ENABLE as the environment has it)" ;;
    esac
    say "NVLink SHARP: NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-unset, NCCL default: on where the NVSwitch supports it}"
}

# CPUs for each rank: what -c/--cpus-per-task gave the job, else the CPUs Slurm gave
# this node (an --exclusive job has them all) shared among the node's ranks; at least 1.
# srun does not pass the job's --cpus-per-task on to its steps (Slurm >= 22.05), and a
# step's task gets one CPU unless told: a GPU rank then shares one core with its
# NCCL proxy thread.
#   cpus_per_task RANKS_ON_THIS_NODE
cpus_per_task() {
    local ranks=$1 cpus
    check_counts SLURM_CPUS_PER_TASK SLURM_CPUS_ON_NODE
    [[ $ranks =~ ^[0-9]+$ ]] || die "cpus_per_task: '$ranks' is not a count of ranks"
    if [ -n "${SLURM_CPUS_PER_TASK:-}" ]; then
        echo "$SLURM_CPUS_PER_TASK"
        return
    fi
    cpus=${SLURM_CPUS_ON_NODE:-$(nproc)}
    cpus=$((cpus / (ranks > 0 ? ranks : 1)))
    echo $((cpus > 0 ? cpus : 1))
}

# The MPI plugins this Slurm's srun offers, one a line: pmix, pmi2. srun --mpi=list
# prints them one a line, with a tab (Slurm 22.05 on) or "srun: " (before), pmix also
# as its version (pmix_v3), which --mpi=pmix takes.
srun_mpi_plugins() {
    command -v srun >/dev/null 2>&1 || return 0
    srun --mpi=list 2>&1 | sed -nE 's#^(srun: )?[[:space:]]*(mpi/)?(pmix|pmi2)(_v[0-9]+)?[[:space:]]*$#\3#p' | sort -u
}

# The command line that starts the ranks, from LAUNCH:
#   pmix    srun --mpi=pmix     (Open MPI 4/5, and most MPIs on a Slurm built with PMIx)
#   pmi2    srun --mpi=pmi2     (MPICH, Intel MPI, MVAPICH; Open MPI only when built --with-pmi)
#   srun    srun with the plugin auto would take
#   mpirun  mpirun, which inside an allocation starts the ranks through Slurm itself
#   auto    (default) inside a Slurm job srun with pmix, else pmi2, as srun --mpi=list
#           offers them; neither, or outside Slurm: mpirun
# srun is told the plugin (the cluster's MpiDefault may be none), to end the whole
# step when one rank fails, and the CPUs of each rank. The choice is said on stderr.
#   dpscale_launcher CPUS_PER_TASK
dpscale_launcher() {
    local how=${LAUNCH:-auto} cpt=${1:-1} offered
    check_counts NTASKS
    offered=$(srun_mpi_plugins | paste -sd ' ')
    case "$how" in
    auto | srun)
        if [ -z "${SLURM_JOB_ID:-}" ]; then
            [ "$how" = auto ] || die "LAUNCH=srun starts the ranks of a Slurm job: submit with sbatch, or use LAUNCH=mpirun"
            how=mpirun
        elif [[ " $offered " == *" pmix "* ]]; then how=pmix
        elif [[ " $offered " == *" pmi2 "* ]]; then how=pmi2
        elif [ "$how" = srun ]; then
            die "LAUNCH=srun: this Slurm's srun offers neither pmix nor pmi2 (srun --mpi=list); use LAUNCH=mpirun"
        else
            how=mpirun
        fi
        echo "$(stamp) ${DPSCALE_JOB_TAG:-dpscale job}: launcher $how (LAUNCH=${LAUNCH:-auto}; srun --mpi=list offers: ${offered:-no pmix or pmi2})" >&2
        ;;
    esac
    case "$how" in
    pmix | pmi2)
        [ -n "${SLURM_JOB_ID:-}" ] || die "LAUNCH=$how starts the ranks with srun inside a Slurm job: submit with sbatch, or use LAUNCH=mpirun"
        [[ " $offered " == *" $how "* ]] ||
            die "LAUNCH=$how but this Slurm's srun offers ${offered:-no MPI plugin} (srun --mpi=list): choose one of those, or LAUNCH=mpirun"
        echo "srun --mpi=$how --kill-on-bad-exit=1 --cpus-per-task=$cpt"
        ;;
    mpirun)
        command -v mpirun >/dev/null 2>&1 || die "LAUNCH=mpirun but mpirun is not on PATH; load the MPI module"
        # inside an allocation mpirun takes its ranks from Slurm; outside, from NTASKS
        echo "mpirun --bind-to none${OMPI_ALLOW_RUN_AS_ROOT:+ --allow-run-as-root}$([ -z "${SLURM_JOB_ID:-}" ] && echo " -np ${NTASKS:-8}")"
        ;;
    *) die "LAUNCH=$how: use pmix, pmi2 (srun --mpi=pmix|pmi2), mpirun, or auto" ;;
    esac
}

# GPUs on this node (0 without a driver): the job then runs on the CPU backend.
gpus_on_node() { nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true; }

# Whether the GPUs of this node are linked by NVLink, from `nvidia-smi topo -m`: "yes"
# when a GPU pair shows NV#, "no" when GPUs show and none does, "unknown" without
# nvidia-smi (no driver, or a node that is not NVIDIA's).
nvlink_on_node() {
    local topo
    topo=$(nvidia-smi topo -m 2>/dev/null) || { echo unknown; return; }
    awk -F'\t' '$1 ~ /^GPU[0-9]+/ { gpus++; for (i = 2; i <= NF; i++) if ($i ~ /^ *NV[0-9]+ *$/) nv++ }
        END { print gpus == 0 ? "unknown" : (nv > 0 ? "yes" : "no") }' <<<"$topo"
}

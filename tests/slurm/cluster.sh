#!/usr/bin/env bash
# cluster.sh — a real single-node Slurm for the tests: munged, slurmctld and slurmd
# from Debian's packages, configured in a folder of their own.
#
#   tests/slurm/cluster.sh start DIR    start; prints the SLURM_CONF to export
#   tests/slurm/cluster.sh stop DIR     stop every daemon it started
#
# The node is declared as an 8-GPU node: a `gpu` gres of 8 (stand-in device files)
# and 8 CPUs (slurmd's config_overrides accepts more CPUs than the host has), so
# that the #SBATCH lines of jobs/scale8.sh are accepted exactly as written; its
# tasks then share the host's real cores. Needs root (the daemons run as root).
set -euo pipefail
cmd=${1:?usage: cluster.sh start|stop DIR}
DIR=${2:?usage: cluster.sh start|stop DIR}
host=$(hostname -s)

stop() {
    for pidfile in "$DIR"/slurmd.pid "$DIR"/slurmctld.pid "$DIR"/munged.pid; do
        [ -f "$pidfile" ] || continue
        pid=$(cat "$pidfile")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$pidfile"
    done
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "usage: cluster.sh start|stop DIR" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "cluster.sh: the test cluster needs root" >&2; exit 2; }
for exe in munged slurmctld slurmd sbatch; do
    command -v "$exe" >/dev/null || { echo "cluster.sh: $exe missing: apt-get install slurm-wlm munge" >&2; exit 2; }
done
mkdir -p "$DIR"/state "$DIR"/spool
chmod 700 "$DIR"
dd if=/dev/urandom of="$DIR/munge.key" bs=1024 count=1 status=none
chmod 400 "$DIR/munge.key"
munged --force --key-file="$DIR/munge.key" --socket="$DIR/munge.socket" --pid-file="$DIR/munged.pid" \
    --log-file="$DIR/munged.log" --seed-file="$DIR/munged.seed"

# two free TCP ports, so that two test runs on one machine (two worktrees) do not meet
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
port=16817
while ! port_free "$port" || ! port_free $((port + 1)); do
    port=$((port + 2))
    [ "$port" -lt 17817 ] || { echo "cluster.sh: no two free ports in 16817-17817" >&2; stop; exit 1; }
done

mem=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
cat >"$DIR/slurm.conf" <<CONF
ClusterName=dpscale-test
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge.socket
CredType=cred/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
SlurmctldPort=$port
SlurmdPort=$((port + 1))
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=$host CPUs=8 Boards=1 SocketsPerBoard=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=$mem Gres=gpu:8 State=UNKNOWN
PartitionName=gpu Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# Slurm drops GPUs without a device file: eight stand-ins (nothing opens them)
for i in 0 1 2 3 4 5 6 7; do : >"$DIR/nvidia$i"; done
cat >"$DIR/gres.conf" <<CONF
AutoDetect=off
NodeName=$host Name=gpu File=$DIR/nvidia[0-7]
CONF
export SLURM_CONF=$DIR/slurm.conf
slurmctld -f "$DIR/slurm.conf"
slurmd -f "$DIR/slurm.conf"
for _ in $(seq 100); do
    state=$(sinfo -h -N -o '%T' 2>/dev/null | head -1 || true)
    case "$state" in idle*) echo "SLURM_CONF=$DIR/slurm.conf"; exit 0 ;; esac
    sleep 0.2
done
echo "cluster.sh: the node did not come up (state '${state:-none}'); logs in $DIR" >&2
tail -n 5 "$DIR"/slurmctld.log "$DIR"/slurmd.log >&2 || true
stop
exit 1

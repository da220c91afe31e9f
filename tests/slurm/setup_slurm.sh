#!/usr/bin/env bash
# A throw-away single-node Slurm cluster for `make test-slurm`: munged, slurmctld and slurmd of Debian's slurm-wlm,
# every file (config, keys, state, logs, sockets) in one temp dir. Cgroup-free settings, so it runs in a container.
#
#   setup_slurm.sh check          exit 0 if this machine can run it (root; slurm-wlm present or apt-get reachable);
#                                 else print why on stdout and exit 3
#   setup_slurm.sh install        apt-get install -y slurm-wlm munge when slurmctld is missing
#   setup_slurm.sh start DIR      start the cluster with its state in DIR (must be empty/new); prints SLURM_CONF=...
#   setup_slurm.sh stop DIR       stop the daemons started in DIR (by their pid files) and remove DIR
set -euo pipefail

cmd=${1:-}
have_slurm() { command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
    && command -v srun >/dev/null; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

wait_for() {  # wait_for SECONDS WHAT CMD...: poll CMD until it succeeds
    local limit=$1 what=$2; shift 2
    local end=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        if (( SECONDS >= end )); then echo "setup_slurm.sh: $what did not come up within ${limit} s" >&2; return 1; fi
        sleep 0.2
    done
}

case "$cmd" in
check)
    if [[ $(id -u) != 0 ]]; then echo "not root (the daemons and apt-get need root)"; exit 3; fi
    if have_slurm; then exit 0; fi
    if ! command -v apt-get >/dev/null; then echo "slurm-wlm is not installed and there is no apt-get"; exit 3; fi
    if ! timeout 120 apt-get install -y --dry-run slurm-wlm munge >/dev/null 2>&1 \
        && ! (timeout 300 apt-get update -qq >/dev/null 2>&1 && timeout 120 apt-get install -y --dry-run slurm-wlm munge \
              >/dev/null 2>&1); then
        echo "slurm-wlm is not installed and apt-get cannot reach Debian's packages"; exit 3
    fi
    ;;
install)
    if have_slurm; then exit 0; fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq slurm-wlm munge >/dev/null || { apt-get update -qq && apt-get install -y -qq slurm-wlm munge >/dev/null; }
    have_slurm
    ;;
start)
    dir=${2:?start needs a directory}
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    chmod 755 "$dir"
    mkdir -p "$dir/state" "$dir/spool/dingnode" "$dir/munge"
    chmod 755 "$dir/munge"
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 400 "$dir/munge/munge.key"
    munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
    wait_for 20 munged test -S "$dir/munge/munge.socket"
    node=dingnode
    cpus=$(( $(nproc) > 8 ? $(nproc) : 8 ))  # more than the cores: the test's four roles each ask for 1 CPU
    mem=$(( $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) / 2 ))
    ctld_port=$(free_port); slurmd_port=$(free_port)
    cat > "$dir/slurm.conf" <<CONF
ClusterName=dingtest
SlurmctldHost=$(hostname)(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
MailProg=/bin/true
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
MinJobAge=2
NodeName=$node NodeHostname=$(hostname) NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
    export SLURM_CONF="$dir/slurm.conf"
    slurmctld -f "$SLURM_CONF" -i
    wait_for 30 slurmctld scontrol ping
    slurmd -f "$SLURM_CONF" -N "$node"
    wait_for 30 "slurmd (node $node idle)" bash -c "sinfo -h -n $node -o %t | grep -q idle"
    echo "SLURM_CONF=$SLURM_CONF"
    ;;
stop)
    dir=${2:?stop needs a directory}
    [[ -d "$dir" ]] || exit 0
    export SLURM_CONF="$dir/slurm.conf"
    for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
        [[ -f "$pidfile" ]] || continue
        pid=$(cat "$pidfile")
        kill -TERM "$pid" 2>/dev/null || continue
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
    done
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 check | install | start DIR | stop DIR" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# A single-node SLURM on this machine, for the tests and for trying the scripts/slurm/ jobs.
#
#   scripts/slurm/local_cluster.sh start   # prints `export SLURM_CONF=...` on stdout
#   scripts/slurm/local_cluster.sh stop
#   scripts/slurm/local_cluster.sh status
#
# start: installs the Debian packages slurm-wlm and munge when missing (needs root; apt-get
# update first), writes a minimal slurm.conf for this host into the state folder (no accounting
# database; process tracking without cgroups: proctrack/linuxproc, task/none), starts munged
# (its own key and socket in the state folder), slurmctld and slurmd in the foreground of
# background processes whose ids it records, and waits until the node is idle. Every daemon
# talks over localhost only: munged over a Unix socket, slurmctld and slurmd bound to 127.0.0.1
# (CommunicationParameters=NoInAddrAny) on ports of their own.
# stop: cancels the jobs of this cluster, then stops exactly the processes start recorded (and
# checks that each id is still that program, so a reused id is never hit).
#
# Environment:
#   SURGE_SLURM_DIR   state folder (default /tmp/surge-slurm): slurm.conf, logs, spool, munge
#   SURGE_SLURM_PORT  slurmctld's port (default 16817); slurmd takes the next one
#   SURGE_SLURM_CPUS  CPUs of the node (default: nproc)
#
# Exit status: 0 done; 3 SLURM cannot be set up here (not root and packages missing, no
# apt-get, install failed); 1 a daemon did not start (see the logs named in the message).
set -euo pipefail

dir=${SURGE_SLURM_DIR:-/tmp/surge-slurm}
port=${SURGE_SLURM_PORT:-16817}
cpus=${SURGE_SLURM_CPUS:-$(nproc)}
conf="$dir/slurm.conf"
node=localhost
partition=surge

say() { echo "local_cluster: $*" >&2; }
cannot() { say "$*"; exit 3; }

# Is PID program NAME started by this script for this state folder (its command line names the
# folder)? Guards against a reused process id.
is_ours() {
    local pid=$1 name=$2
    [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
    [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$name"* ]] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir/"
}

# Is PID alive (during start-up: the process may not have exec'd its program yet)?
alive() { [[ -n "$1" ]] && kill -0 "$1" 2>/dev/null; }

install_packages() {
    local missing=()
    for c in munged slurmctld slurmd sbatch scontrol; do
        command -v "$c" >/dev/null 2>&1 || missing+=("$c")
    done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    say "missing: ${missing[*]}; installing the Debian packages slurm-wlm and munge"
    [[ $(id -u) -eq 0 ]] || cannot "installing slurm-wlm and munge needs root (apt-get); run as root or install them first"
    command -v apt-get >/dev/null 2>&1 || cannot "no apt-get on this machine: install SLURM (slurmctld, slurmd, sbatch) and munge by hand"
    # Keep apt from starting the packages' own system services: this script starts its own.
    local policy=/usr/sbin/policy-rc.d made_policy=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made_policy=1
    fi
    local ok=0
    if apt-get update -qq >&2 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >&2; then
        ok=1
    fi
    [[ $made_policy -eq 1 ]] && rm -f "$policy"
    [[ $ok -eq 1 ]] || cannot "apt-get install slurm-wlm munge failed (see above)"
    for c in munged slurmctld slurmd sbatch scontrol; do
        command -v "$c" >/dev/null 2>&1 || cannot "$c still missing after installing slurm-wlm and munge"
    done
}

write_conf() {
    local host
    host=$(hostname -s)
    cat >"$conf" <<EOF
# Written by scripts/slurm/local_cluster.sh: a one-node cluster on this host, localhost only.
ClusterName=surge
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# A requeued job may start again once its old credential expired (default 120 s).
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/slurmd
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
# No cgroups, no systemd: track a job's processes by parentage.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
# Schedule every second (default up to 60 s) so tests take seconds.
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1,bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
# Seconds between a job's SIGTERM and its SIGKILL.
KillWait=10
InactiveLimit=0
MinJobAge=600
NodeName=$node NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=$partition Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
}

# Starts "$@" detached (own session, no terminal, output to LOG), records its id in PIDFILE.
launch() {
    local log=$1 pidfile=$2
    shift 2
    setsid "$@" >"$log" 2>&1 </dev/null &
    echo $! >"$pidfile"
}

running() {
    is_ours "$(cat "$dir/pids/slurmctld" 2>/dev/null)" slurmctld
}

start() {
    if [[ -f "$dir/pids/slurmctld" ]] && running; then
        say "already running (state in $dir)"
        echo "export SLURM_CONF=$conf"
        return 0
    fi
    install_packages
    [[ $(id -u) -eq 0 ]] || cannot "starting munged, slurmctld and slurmd as configured here needs root"
    if ss -ltn 2>/dev/null | grep -qE "[:.]($port|$((port + 1)))\b"; then
        cannot "port $port or $((port + 1)) is in use (another cluster?): set SURGE_SLURM_PORT"
    fi
    rm -rf "$dir"
    mkdir -p "$dir/ctld" "$dir/slurmd" "$dir/pids" "$dir/munge"
    chmod 755 "$dir" "$dir/munge"
    # The Debian munge package's daemon expects /run/munge; ours uses its own socket folder.
    mkdir -p /run/munge
    # A key of our own: this cluster trusts only itself.
    head -c 1024 /dev/urandom >"$dir/munge/munge.key"
    chmod 600 "$dir/munge/munge.key"
    write_conf

    launch "$dir/munged.out" "$dir/pids/munged" munged -F --force \
        --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
        --seed-file="$dir/munge/munged.seed"
    local _
    for _ in $(seq 100); do
        [[ -S "$dir/munge/munge.socket" ]] && break
        alive "$(cat "$dir/pids/munged")" || { say "munged failed:"; cat "$dir/munged.out" >&2; stop; exit 1; }
        sleep 0.1
    done
    export SLURM_CONF=$conf
    launch "$dir/slurmctld.out" "$dir/pids/slurmctld" slurmctld -D -f "$conf"
    launch "$dir/slurmd.out" "$dir/pids/slurmd" slurmd -D -f "$conf" -N "$node"
    # Wait until the node is idle (about a second).
    local state=""
    for _ in $(seq 300); do
        state=$(sinfo -h -N -n "$node" -o %t 2>/dev/null || true)
        [[ "$state" == idle ]] && break
        for d in slurmctld slurmd; do
            if ! alive "$(cat "$dir/pids/$d")"; then
                say "$d exited at start:"
                tail -n 20 "$dir/$d.out" "$dir/$d.log" >&2 2>/dev/null || true
                stop
                exit 1
            fi
        done
        sleep 0.2
    done
    if [[ "$state" != idle ]]; then
        say "the node did not become idle in 60 s (state '$state'); logs: $dir/slurmctld.log $dir/slurmd.log"
        tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" >&2 2>/dev/null || true
        stop
        exit 1
    fi
    say "running: node $node ($cpus CPUs), partition $partition, state in $dir"
    echo "export SLURM_CONF=$conf"
}

stop() {
    [[ -d "$dir/pids" ]] || { say "not running (no $dir/pids)"; return 0; }
    export SLURM_CONF=$conf
    # The cluster's own jobs first, so that no job step outlives its slurmd.
    if running; then
        scancel --quiet --partition="$partition" 2>/dev/null || true
        local _
        for _ in $(seq 50); do
            [[ -z "$(squeue -h -o %i 2>/dev/null)" ]] && break
            sleep 0.2
        done
    fi
    local d pid
    for d in slurmd slurmctld munged; do
        pid=$(cat "$dir/pids/$d" 2>/dev/null || true)
        if is_ours "$pid" "$d"; then
            kill -TERM "$pid" 2>/dev/null || true
            for _ in $(seq 50); do
                is_ours "$pid" "$d" || break
                sleep 0.1
            done
            if is_ours "$pid" "$d"; then
                kill -KILL "$pid" 2>/dev/null || true
            fi
        fi
        rm -f "$dir/pids/$d"
    done
    say "stopped (logs kept in $dir)"
}

status() {
    if [[ -f "$dir/pids/slurmctld" ]] && running; then
        SLURM_CONF=$conf sinfo
        echo "export SLURM_CONF=$conf"
    else
        say "not running"
        return 1
    fi
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
*)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for tests and demos of launch/shakedown.sbatch.
#
# Usage: scripts/start-slurm.sh [--dir DIR] [--cpus N] [--gpus N] [--port P] [--timeout S]
#        scripts/start-slurm.sh --stop [--dir DIR]
#
# Starts munged (as the munge user), slurmctld and slurmd (as root) with a slurm.conf written for
# this machine: one node (this host, its CPUs and memory as `slurmd -C` reports them), one default
# partition "debug", select/cons_tres by core, no cgroups (proctrack/linuxproc, task/affinity),
# MPI plugins pmix and pmi2 available (default none), and a two-level switch tree
# (topology/tree: node <- leaf switch "leaf0" <- "spine"), so jobs see
# SLURM_TOPOLOGY_ADDR=spine.leaf0.<node> as on a real fabric. --gpus N declares N fake GPUs
# (gres gpu, backed by files under DIR/dev) so --gpus-per-node and --gpu-bind work in tests; no
# real device is touched. --cpus N declares N CPUs (one socket, N cores) instead of the real
# count, so a job can ask for more tasks per node than the machine has cores (Slurm refuses
# --ntasks-per-node above the node's CPUs even with --overcommit); with more than the real count
# the node is taken as configured (SlurmdParameters=config_overrides) and tasks are not bound
# (TaskPlugin=task/none: srun says "cluster configuration lacks support for cpu binding").
#
# Every file lives under DIR (default $SHAKEDOWN_SLURM_DIR, else /tmp/shakedown-slurm): the
# config (DIR/etc), a munge key made for this cluster and munged's socket (DIR/munge), the
# controller's state and slurmd's spool (DIR/state, DIR/spool), logs (DIR/log) and the pids this
# script started (DIR/pids). Nothing outside DIR is written, except what jobs themselves write
# and Open MPI/PMIx session folders under /tmp that end with each job. The clients need the
# config: `export SLURM_CONF=DIR/etc/slurm.conf` (printed at the end).
#
# Idempotent: when the daemons this script recorded in DIR are alive, it only waits for the
# node to be idle (options such as --cpus apply when it starts: --stop first to change them).
# Ports: P for slurmctld and P+1 for slurmd (default: the first free pair from 6817), so a
# second cluster in another DIR can run beside this one.
#
# --stop cancels this cluster's jobs, waits for them (bounded), and stops exactly the processes
# this script started (by the pids in DIR/pids, each checked to still be that daemon) plus the
# job step daemons their slurmd left in its session. It does not remove DIR.
#
# Needs root (Slurm's daemons; munged as the munge user) and the packages from
# scripts/install-deps.sh (slurmctld slurmd slurm-client munge).
set -euo pipefail

dir=${SHAKEDOWN_SLURM_DIR:-/tmp/shakedown-slurm}
gpus=0
cpus=""
port=""
timeout_s=30
stop=0

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() {
  echo "start-slurm: $*" >&2
  exit 1
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --dir) dir=${2:?--dir needs a folder}; shift 2 ;;
    --gpus) gpus=${2:?--gpus needs a count}; shift 2 ;;
    --cpus) cpus=${2:?--cpus needs a count}; shift 2 ;;
    --port) port=${2:?--port needs a number}; shift 2 ;;
    --timeout) timeout_s=${2:?--timeout needs seconds}; shift 2 ;;
    --stop) stop=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done
[[ "$gpus" =~ ^[0-9]+$ ]] || die "--gpus: '$gpus' is not a count"
[[ -z "$cpus" || "$cpus" =~ ^[1-9][0-9]*$ ]] || die "--cpus: '$cpus' is not a positive count"
[[ -z "$port" || "$port" =~ ^[0-9]+$ ]] || die "--port: '$port' is not a port number"
[[ "$timeout_s" =~ ^[0-9]+$ ]] || die "--timeout: '$timeout_s' is not a number of seconds"
[[ "$dir" == /* ]] || dir="$PWD/$dir"

conf="$dir/etc/slurm.conf"
pids="$dir/pids"
daemons=(munged slurmctld slurmd)

# The pid this script recorded for a daemon, if that process is still that daemon of this DIR.
live_pid() {
  local name=$1 pid
  [[ -f "$pids/$name.pid" ]] || return 1
  pid=$(<"$pids/$name.pid")
  [[ "$pid" =~ ^[0-9]+$ && -r "/proc/$pid/cmdline" ]] || return 1
  # cmdline: the daemon's name and this DIR (its config, socket or log path) must both appear,
  # so a recycled pid is never mistaken for ours.
  local cmd
  cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
  [[ "$cmd" == *"$name"* && "$cmd" == *"$dir/"* ]] || return 1
  echo "$pid"
}

# Processes in session $1 (slurmd runs in its own session; its slurmstepd children stay in it).
session_members() {
  local sid=$1 stat f
  for f in /proc/[0-9]*/stat; do
    stat=$(<"$f") 2>/dev/null || continue
    # fields after the ")" that ends the command name: state ppid pgrp session ...
    stat=${stat##*) }
    read -r _ _ _ s _ <<<"$stat"
    if [[ "$s" == "$sid" ]]; then
      f=${f#/proc/}
      echo "${f%/stat}"
    fi
  done
}

# Ends the given "name:pid" processes together (each daemon takes ~2 s to notice SIGTERM), then
# SIGKILLs what is left after a bounded wait.
end_processes() {
  local item i alive
  for item in "$@"; do kill -TERM "${item#*:}" 2>/dev/null || true; done
  for ((i = 0; i < 50; i++)); do
    alive=0
    for item in "$@"; do kill -0 "${item#*:}" 2>/dev/null && alive=1; done
    [[ $alive -eq 0 ]] && return 0
    sleep 0.2
  done
  for item in "$@"; do
    if kill -0 "${item#*:}" 2>/dev/null; then
      echo "start-slurm: ${item%%:*} (pid ${item#*:}) ignored SIGTERM for 10 s; sending SIGKILL" >&2
      kill -KILL "${item#*:}" 2>/dev/null || true
    fi
  done
}

stop_cluster() {
  local pid i
  if pid=$(live_pid slurmctld) && [[ -f "$conf" ]]; then
    # Jobs first, so no job step outlives its slurmd. Bounded: a wedged controller must not hang.
    local jobs
    jobs=$(SLURM_CONF="$conf" timeout 10 squeue -h -o %i 2>/dev/null || true)
    if [[ -n "$jobs" ]]; then
      # shellcheck disable=SC2086
      SLURM_CONF="$conf" timeout 10 scancel $jobs 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do
        [[ -z "$(SLURM_CONF="$conf" timeout 5 squeue -h -o %i 2>/dev/null || true)" ]] && break
        sleep 0.2
      done
    fi
  fi
  local targets=() stopped=() slurmd_pid=""
  for name in slurmd slurmctld munged; do
    if pid=$(live_pid "$name"); then
      targets+=("$name:$pid")
      stopped+=("$name $pid")
      [[ $name == slurmd ]] && slurmd_pid=$pid
    fi
  done
  [[ ${#targets[@]} -gt 0 ]] && end_processes "${targets[@]}"
  if [[ -n "$slurmd_pid" ]]; then
    # Job step daemons that slurmd started (they stay in its session) if a step did not end.
    for p in $(session_members "$slurmd_pid"); do
      [[ "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" == slurmstepd* ]] && kill -KILL "$p" 2>/dev/null
    done
  fi
  rm -f "$pids"/*.pid 2>/dev/null || true
  if [[ ${#stopped[@]} -eq 0 ]]; then
    echo "start-slurm: nothing of ours running in $dir"
  else
    echo "start-slurm: stopped ${stopped[*]} ($dir)"
  fi
}

if [[ $stop -eq 1 ]]; then
  stop_cluster
  exit 0
fi

[[ $(id -u) -eq 0 ]] || die "must run as root (Slurm's daemons run as root here, munged as munge)"
for tool in munged mungekey slurmctld slurmd sinfo setpriv; do
  command -v "$tool" >/dev/null || die "'$tool' not found: run scripts/install-deps.sh"
done
id munge >/dev/null 2>&1 || die "no 'munge' user: reinstall the munge package (scripts/install-deps.sh)"

host=$(hostname -s)
export SLURM_CONF="$conf"

node_state() { timeout 5 sinfo -h -n "$host" -o %t 2>/dev/null | head -n 1; }

# Waits until the node is idle (or mixed/allocated: jobs already running are fine).
wait_idle() {
  local deadline=$((SECONDS + timeout_s)) state=""
  while ((SECONDS < deadline)); do
    state=$(node_state || true)
    case "$state" in
      idle | mix | alloc) return 0 ;;
    esac
    sleep 0.3
  done
  echo "start-slurm: node $host is '${state:-not reported}' after ${timeout_s} s, not idle" >&2
  for log in "$dir"/log/*.log; do
    echo "--- tail of $log" >&2
    tail -n 15 "$log" >&2 || true
  done
  return 1
}

print_env() {
  echo "start-slurm: cluster 'shakedown' up: node $host, partition debug, ports $(sed -n 's/^SlurmctldPort=//p' "$conf")/$(sed -n 's/^SlurmdPort=//p' "$conf"), state in $dir"
  echo "export SLURM_CONF=$conf"
}

running=0
for d in "${daemons[@]}"; do live_pid "$d" >/dev/null && running=$((running + 1)); done
if [[ $running -eq ${#daemons[@]} ]]; then
  wait_idle
  print_env
  exit 0
fi
# Half a cluster (a daemon died): start again from a clean slate of processes, keeping DIR.
[[ $running -gt 0 ]] && stop_cluster >/dev/null

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
if [[ -z "$port" ]]; then
  for ((p = 6817; p < 6917; p += 2)); do
    if port_free "$p" && port_free $((p + 1)); then
      port=$p
      break
    fi
  done
  [[ -n "$port" ]] || die "no free port pair in 6817-6917; pass --port"
else
  port_free "$port" && port_free $((port + 1)) ||
    die "--port $port: port $port or $((port + 1)) is in use on 127.0.0.1"
fi

mkdir -p "$dir"/{etc,state,spool,log,pids,dev,munge}
chmod 755 "$dir"
# munged checks that its folders are owned by it and not writable by others; the munge user must
# also be able to reach them through every parent folder (mktemp -d folders are 0700).
parent=$dir
while [[ "$parent" != / ]]; do
  parent=$(dirname "$parent")
  if [[ "$(stat -c %U "$parent")" == root ]] && ! setpriv --reuid=munge --regid=munge --clear-groups test -x "$parent"; then
    die "the munge user cannot reach $parent (mode $(stat -c %a "$parent")); choose --dir under a world-searchable folder, or chmod o+x $parent"
  fi
done
chown munge:munge "$dir/munge"
chmod 755 "$dir/munge"  # munged wants its socket folder searchable by all
if [[ ! -s "$dir/munge/munge.key" ]]; then
  mungekey --create --keyfile="$dir/munge/munge.key" >/dev/null
fi
chown munge:munge "$dir/munge/munge.key"
chmod 600 "$dir/munge/munge.key"

# The node as slurmd sees it (CPUs, sockets, cores, threads), memory a little under the total so
# slurmd never reports less than configured (which would drain the node).
node_line=$(slurmd -C | head -n 1)
mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node_line")
[[ -n "$mem" ]] || die "could not read RealMemory from 'slurmd -C': $node_line"
node_line=$(sed "s/RealMemory=[0-9]*/RealMemory=$((mem * 9 / 10))/; s/^NodeName=[^ ]*/NodeName=$host/" <<<"$node_line")
task_plugin=task/affinity
overrides=""
real_cpus=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node_line")
if [[ -n "$cpus" && "$cpus" != "$real_cpus" ]]; then
  node_line="NodeName=$host CPUs=$cpus Boards=1 SocketsPerBoard=1 CoresPerSocket=$cpus ThreadsPerCore=1 RealMemory=$((mem * 9 / 10))"
  overrides="SlurmdParameters=config_overrides"
  # Binding to CPUs the machine does not have fails every task launch ("Unable to layout tasks").
  ((cpus > real_cpus)) && task_plugin=task/none
fi
gres_line=""
if [[ $gpus -gt 0 ]]; then
  for ((g = 0; g < gpus; g++)); do : >"$dir/dev/gpu$g"; done
  gres_line=" Gres=gpu:$gpus"
  printf 'Name=gpu File=%s/dev/gpu[0-%d]\n' "$dir" $((gpus - 1)) >"$dir/etc/gres.conf"
else
  : >"$dir/etc/gres.conf"
fi

cat >"$conf" <<EOF
# Written by scripts/start-slurm.sh for a single-node test cluster; state in $dir.
ClusterName=shakedown
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket.2
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/state/slurmctld.pid
SlurmdPidFile=$dir/spool/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=$task_plugin
$overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
TopologyPlugin=topology/tree
SchedulerType=sched/builtin
ReturnToService=2
MailProg=/bin/true
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
GresTypes=gpu
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=1
MinJobAge=300
$node_line NodeAddr=127.0.0.1$gres_line State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
EOF
cat >"$dir/etc/topology.conf" <<EOF
# Two switch levels so that jobs see SLURM_TOPOLOGY_ADDR=spine.leaf0.$host.
SwitchName=leaf0 Nodes=$host
SwitchName=spine Switches=leaf0
EOF
# Slurm looks for these beside slurm.conf; empty ones keep it from reading the system's.
: >"$dir/etc/cgroup.conf"
printf 'PMIxCliTmpDirBase=%s/spool/pmix\n' "$dir" >"$dir/etc/mpi.conf"
mkdir -p "$dir/spool/pmix"
: >"$dir/etc/plugstack.conf"

start_daemon() {
  local name=$1
  shift
  # setsid: own session (a caller's Ctrl-C or test harness does not reach it, and --stop finds
  # job steps by it); stdio to the log so no caller's pipe is held open.
  setsid "$@" </dev/null >>"$dir/log/$name.out" 2>&1 &
  echo $! >"$pids/$name.pid"
}

start_daemon munged setpriv --reuid=munge --regid=munge --clear-groups \
  munged --foreground --socket="$dir/munge/munge.socket.2" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
  --seed-file="$dir/munge/munged.seed"
# setpriv execs munged, so the recorded pid is munged's.
for ((i = 0; i < 50; i++)); do
  [[ -S "$dir/munge/munge.socket.2" ]] && break
  sleep 0.1
done
[[ -S "$dir/munge/munge.socket.2" ]] || {
  cat "$dir/log/munged.out" "$dir/munge/munged.log" >&2 2>/dev/null
  stop_cluster >/dev/null
  die "munged did not create its socket within 5 s (logs above)"
}
start_daemon slurmctld slurmctld -D -i -f "$conf"
start_daemon slurmd slurmd -D -f "$conf"
if ! wait_idle; then
  stop_cluster >/dev/null
  die "the cluster did not come up (logs above, in $dir/log)"
fi
print_env

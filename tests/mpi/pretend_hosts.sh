#!/usr/bin/env bash
# Runs the MPI tests on two pretend hosts (127.0.0.2 and 127.0.0.3) without virtual nodes:
# Open MPI starts the second "host" through an rsh agent that runs the command locally, so each
# host is its own shared-memory domain while every hostname is the same.
# Usage: pretend_hosts.sh PROGRAM [ARGS...]
# PRETEND_SLOTS="2 1" gives the hosts 2 and 1 ranks (nodes of different sizes); default "2 2".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# rtc ^hwloc: two orted daemons on one machine both share their hwloc topology through shared
# memory, and one of them sometimes crashed in hwloc_shmem_topology_write (seen under load);
# ranks are not bound here, so the component is not needed.
read -r slots_a slots_b <<<"${PRETEND_SLOTS:-2 2}"
printf '127.0.0.2 slots=%d\n127.0.0.3 slots=%d\n' "$slots_a" "$slots_b" >"$tmp/hostfile"
"$here/../../scripts/mpirun-local.sh" -n $((slots_a + slots_b)) --hostfile "$tmp/hostfile" \
  --mca plm_rsh_agent "$here/../../scripts/local-rsh.sh" --mca btl self,tcp --mca rtc ^hwloc \
  --mca btl_tcp_if_include lo -x SHAKEDOWN_TEST_EXPECT_HOSTS=2 "$@"

#!/usr/bin/env bash
# A real multi-"host" launch without virtual nodes: hostfile 127.0.0.2 / 127.0.0.3 and an rsh
# agent that runs locally. Node indices must come from the shared-memory split, not hostnames.
source "$(dirname "$0")/lib.sh"
# rtc ^hwloc: two orted daemons on one machine both share their hwloc topology through shared
# memory, and one of them sometimes crashed in hwloc_shmem_topology_write (seen under load);
# ranks are not bound here, so the component is not needed.
printf '127.0.0.2 slots=2\n127.0.0.3 slots=2\n' >"$TMP/hostfile"
out="$TMP/hosts.h5"
"$MPIRUN" -n 4 --hostfile "$TMP/hostfile" --mca plm_rsh_agent "$SHAKEDOWN_SOURCE_DIR/scripts/local-rsh.sh" \
  --mca btl self,tcp --mca btl_tcp_if_include lo --mca rtc ^hwloc \
  "$SHAKEDOWN" run --set collectives.sizes=8:4K --set collectives.ops=all_reduce,all_to_all \
  --out "$out" >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
expect_rc 0 $rc "pretend-host run (stderr: $(tail -n 5 "$TMP/stderr"))"
"$SHAKEDOWN" summary "$out" >"$TMP/summary"
expect_in "$TMP/summary" "4 on 2 nodes$" "two nodes, not virtual"
for r in 0 1 2 3; do
  expect_in "$TMP/summary" "^  $r +$((r / 2)) +$((r % 2)) +" "rank $r placed by host"
done
# Collectives across the two pretend hosts: inter_node runs on the rails between them.
"$SHAKEDOWN" summary --detail "$out" >"$TMP/detail"
expect_in "$TMP/detail" "inter_node all_reduce float32_sum out_of_place \(2 ranks" "inter-node scope over TCP"
expect_in "$TMP/summary" "verdict: PASS" "verdict"
pass "pretend hosts"

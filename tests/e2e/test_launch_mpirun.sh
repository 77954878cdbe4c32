#!/usr/bin/env bash
# launch/shakedown-mpirun on two pretend hosts (127.0.0.2, 127.0.0.3 through the local rsh agent):
# its own usage errors, the rankfile it builds from `shakedown plan`, a run whose ranks land 2 per
# host with a topology.blocks file recorded in /topology, a bad block file refused with exit 2,
# and a rank failure passed through as exit 3. Inventory only: collectives over loopback TCP on an
# oversubscribed machine take tens of seconds and are tested elsewhere.
source "$(dirname "$0")/lib.sh"
wrapper=$SHAKEDOWN_SOURCE_DIR/launch/shakedown-mpirun
printf '# two pretend hosts\n127.0.0.2 slots=2\n127.0.0.3 slots=2  # second\n' >"$TMP/hosts"
# Pretend hosts: the rsh agent runs the "remote" daemon here; TCP on loopback only (vader
# segfaulted in MPI_Comm_split_type there); no hwloc rtc (orted crashed in its shmem under load);
# direct routing between the two daemons (once, under load, mpirun failed with exit 213 in its
# routed component and suggested routed=direct).
# shellcheck disable=SC2054  # "self,tcp" is one value
pretend=(--shakedown "$SHAKEDOWN" --oversubscribe
  --mca plm_rsh_agent "$SHAKEDOWN_SOURCE_DIR/scripts/local-rsh.sh" --mca btl self,tcp
  --mca btl_tcp_if_include lo --mca rtc ^hwloc --mca routed direct)

# ---- the wrapper's own usage errors: exit 2, naming what is wrong ----
"$wrapper" -N 2 run >"$TMP/o" 2>&1
expect_rc 2 $? "no hostfile"
expect_in "$TMP/o" "--hostfile FILE is required" "no hostfile message"
"$wrapper" --hostfile "$TMP/hosts" -N 4 --shakedown "$SHAKEDOWN" run >"$TMP/o" 2>&1
expect_rc 2 $? "more ranks than slots"
expect_in "$TMP/o" "host 127.0.0.2 has slots=2, fewer than --ranks-per-node 4" "slots message"
"$wrapper" --hostfile "$TMP/hosts" -N 2 --bind gpu run >"$TMP/o" 2>&1
expect_rc 2 $? "bad --bind"
printf '127.0.0.2\n127.0.0.2\n' >"$TMP/dup"
"$wrapper" --hostfile "$TMP/dup" -N 1 run >"$TMP/o" 2>&1
expect_rc 2 $? "duplicate host"
expect_in "$TMP/o" "dup:2: host 127.0.0.2 is listed twice" "duplicate host message"

# ---- plan binding: the rankfile from `shakedown plan`, one block of ranks per host ----
"$wrapper" --hostfile "$TMP/hosts" -N 2 --shakedown "$SHAKEDOWN" --dry-run run --out x.h5 >"$TMP/dry" 2>&1
expect_rc 0 $? "dry run"
expect_in "$TMP/dry" "^rank 0=127\.0\.0\.2 slot=" "rankfile rank 0 on the first host"
expect_in "$TMP/dry" "^rank 3=127\.0\.0\.3 slot=" "rankfile rank 3 on the second host"
expect_in "$TMP/dry" "^mpirun -np 4 --hostfile .* -rf .*/rankfile .*shakedown run --out x\.h5" "mpirun line"
"$wrapper" --hostfile "$TMP/hosts" -N 1 --nodes 1 --bind core --shakedown "$SHAKEDOWN" --dry-run topo >"$TMP/dry1" 2>&1
expect_in "$TMP/dry1" "^mpirun -np 1 .*--map-by ppr:1:node --bind-to core" "--nodes 1 --bind core"

# ---- a run on the pretend hosts, with a block map naming this machine ----
host=$(hostname)
printf 'BlockName=nvl0 Nodes=%s\nSwitchName=leaf7 Nodes=%s\nSwitchName=spine Switches=leaf7\n' \
  "$host" "$host" >"$TMP/blocks.conf"
out=$TMP/wrapper.h5
start=$(date +%s)
"$wrapper" --hostfile "$TMP/hosts" -N 2 --bind none "${pretend[@]}" \
  run --phases inventory --set topology.blocks="$TMP/blocks.conf" --out "$out" >"$TMP/run.out" 2>&1
rc=$?
expect_rc 0 $rc "wrapper run (output: $(tail -n 5 "$TMP/run.out"))"
expect_in "$TMP/run.out" "shakedown-mpirun: 4 ranks on 2 host\(s\), 2 per host, bind none" "wrapper announces the launch"
"$SHAKEDOWN" summary "$out" >"$TMP/summary"
expect_in "$TMP/summary" "4 on 2 nodes$" "two nodes, from the two pretend hosts"
for r in 0 1 2 3; do
  expect_in "$TMP/summary" "^  $r +$((r / 2)) +$((r % 2)) +" "rank $r on pretend host $((r / 2))"
done
expect_in "$TMP/summary" "rank +node +local +host .* switch +block" "topology table shows switch and block"
expect_in "$TMP/summary" "^  0 .* leaf7 +nvl0$" "rank 0's switch and block in the table"
expect_in "$TMP/summary" "\[PASS\] placement.blocks: 1 node in 1 block \(nvl0: 1 node\)" "block check"
expect_in "$TMP/summary" "\[PASS\] placement.leaf_switches: 1 node on 1 leaf switch \(leaf7: 1 node, from .*blocks.conf\)" "leaf switch from the file"
h5dump -d /topology/ranks "$out" >"$TMP/ranks.txt" 2>&1 || fail "h5dump /topology/ranks"
expect_in "$TMP/ranks.txt" '"nvl0"' "block recorded per rank"
expect_in "$TMP/ranks.txt" '"leaf7"' "leaf switch recorded per rank"
t_run=$(($(date +%s) - start))

# ---- a block map with an error: exit 2 before any run file, naming file and line ----
printf 'BlockName=nvl0 Nodes=%s\nBlockName=nvl1 Nodes=n[1-\n' "$host" >"$TMP/bad.conf"
"$wrapper" --hostfile "$TMP/hosts" -N 2 --bind none "${pretend[@]}" \
  run --phases inventory --set topology.blocks="$TMP/bad.conf" --out "$TMP/bad.h5" >"$TMP/bad.out" 2>&1
expect_rc 2 $? "bad block map"
expect_in "$TMP/bad.out" "bad\.conf:2: Nodes=n\[1-: '\[' without '\]'" "error names file:line"
[[ ! -e "$TMP/bad.h5" && ! -e "$TMP/bad.h5.partial" ]] || fail "a run file was made for a config error"

# ---- a failing rank: shakedown's exit 3 comes through the wrapper ----
"$wrapper" --hostfile "$TMP/hosts" -N 2 --bind none "${pretend[@]}" \
  run --phases inventory --inject fail:rank=3,phase=inventory --out "$TMP/fail.h5" >"$TMP/fail.out" 2>&1
expect_rc 3 $? "rank failure through the wrapper"
expect_in "$TMP/fail.out" "rank 3 \(host [^,]+, node 1\): inject: planted failure" "failure names rank 3"
pass "shakedown-mpirun on pretend hosts (run ${t_run} s)"

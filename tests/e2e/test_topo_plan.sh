#!/usr/bin/env bash
# `shakedown topo` under mpirun and `shakedown plan` without MPI.
source "$(dirname "$0")/lib.sh"
"$MPIRUN" -n 4 "$SHAKEDOWN" topo --virtual-nodes 2 --set topology.allow_oversubscribe=true \
  >"$TMP/topo" 2>&1
expect_rc 0 $? "topo"
expect_in "$TMP/topo" "4 ranks on 2 nodes" "topo header"
expect_in "$TMP/topo" "^  3 +1 +1 +" "topo row of rank 3"
expect_in "$TMP/topo" "placement.ranks_per_node" "topo checks"

xml="$SHAKEDOWN_SOURCE_DIR/tests/data/topology/dgx_like.xml"
"$SHAKEDOWN" plan --nodes 2 --ranks-per-node 8 --topology-xml "$xml" >"$TMP/plan" 2>&1
expect_rc 0 $? "plan 2x8"
[[ $(grep -c '^rank [0-9]*=' "$TMP/plan") -eq 16 ]] || fail "plan: not 16 rankfile lines"
expect_in "$TMP/plan" "ppr:8:node" "plan mpirun mapping"
expect_in "$TMP/plan" "ntasks-per-node=8" "plan srun options"

"$SHAKEDOWN" plan --nodes 0 --ranks-per-node 8 >"$TMP/plan" 2>&1
expect_rc 2 $? "plan with 0 nodes"
pass "topo and plan"

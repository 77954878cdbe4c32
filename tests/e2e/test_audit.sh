#!/usr/bin/env bash
# `shakedown audit` on this machine as it is and on pretend nodes (virtual nodes on one host):
# alone (as a Slurm prolog runs it) it checks the node, keeps no file and exits 0; a node made to
# differ (--inject drift) is named with its field, exit 1, and its host is in the drain list; an
# NCCL setting exported to the ranks warns naming the variable, exit 0; a config expecting 8 GPUs
# fails naming the node; --json validates; --out keeps the file, whose --detail lists every fact;
# bad input is exit 2 naming what is wrong. The run's own summary carries the audit too.
source "$(dirname "$0")/lib.sh"

# ---- alone, as a prolog: nothing left behind ----
scratch="$TMP/scratch"
mkdir -p "$scratch"
TMPDIR="$scratch" "$SHAKEDOWN" audit >"$TMP/out" 2>&1
expect_rc 0 $? "audit alone on this machine"
expect_in "$TMP/out" "^shakedown audit \(no file kept: --out FILE keeps one\)" "says no file is kept"
for check in settings visibility container coverage; do
  expect_in "$TMP/out" "^  \[(PASS|WARN)\] audit\.$check: " "audit.$check listed with what it covered"
done
expect_in "$TMP/out" "\[SKIP\] .*audit\.drift" "one node: drift not applicable, said"
# Without a GPU the compatibility rules have nothing to compare, which is not a pass.
if [[ -e /proc/driver/nvidia ]]; then
  expect_in "$TMP/out" "^  \[(PASS|WARN)\] audit\.compatibility: " "audit.compatibility listed with what it covered"
else
  expect_in "$TMP/out" "\[SKIP\] .*audit\.compatibility" "no GPU: compatibility not applicable, said"
fi
expect_in "$TMP/out" "^verdict: PASS.*tested the set-up of every node \(an audit: no measurement\)" "verdict"
# Run alone, MPI starts as a singleton: Open MPI's daemon removes its session folder
# (ompi.HOST.UID) in TMPDIR just after the process exits (5-30 ms here; longer under ASan).
for _ in $(seq 100); do
  [[ -z "$(ls -A "$scratch")" ]] && break
  sleep 0.1
done
[[ -z "$(ls -A "$scratch")" ]] || fail "audit left files in TMPDIR 10 s after it exited: $(ls -A "$scratch")"
# An audit that fails (a fault, exit 3) keeps its file, marked aborted, and says where it is.
TMPDIR="$scratch" "$MPIRUN" -n 2 "$SHAKEDOWN" audit --inject fail:rank=1,phase=inventory >"$TMP/failed" 2>&1
expect_rc 3 $? "an audit with a planted failure"
expect_in "$TMP/failed" "^shakedown: the audit did not finish; its run file is kept at $scratch/shakedown-audit\.[^/]+/audit\.h5" "the kept file named"
kept=$(sed -n 's/^shakedown: the audit did not finish; its run file is kept at \([^ ]*\) .*/\1/p' "$TMP/failed")
[[ -f "$kept" ]] || fail "the kept audit file $kept is not there"
"$SHAKEDOWN" summary "$kept" >"$TMP/summary" 2>&1
expect_rc 3 $? "summary of the failed audit's file"
expect_in "$TMP/summary" "^verdict: ABORTED .*planted failure at the start of phase inventory" "the reason recorded"
rm -rf "$(dirname "$kept")"
# Nothing measured: the run's link coverage does not warn about links nobody asked for.
expect_in "$TMP/out" "\[PASS\] run.coverage: only the inventory was asked for" "no link warning"

# ---- pretend nodes: one made to differ ----
"$MPIRUN" -n 3 "$SHAKEDOWN" audit --virtual-nodes 3 --inject drift:node=1,field=kernel \
  --json "$TMP/drift.json" >"$TMP/out" 2>&1
expect_rc 1 $? "a node whose kernel differs"
expect_in "$TMP/out" "^  \[FAIL\] audit.drift: kernel: 2 nodes [^,]+, node 1 \(host [^)]*\) .*-drifted" "node 1 and the field named"
expect_in "$TMP/out" "scontrol update NodeName=.* State=DRAIN Reason=\"shakedown: audit.drift: kernel" "drain line"
/usr/bin/python3 - "$TMP/drift.json" "$SHAKEDOWN_SOURCE_DIR/docs/report-schema.json" <<'PY' || fail "--json report"
import json, sys, jsonschema
doc = json.load(open(sys.argv[1]))
jsonschema.validate(doc, json.load(open(sys.argv[2])))
drift = [f for f in doc["checks"] if f["check"] == "audit.drift" and f["status"] == "fail"]
assert len(drift) == 1, drift
assert drift[0]["subject_kind"] == "field" and drift[0]["subject"] == "kernel", drift[0]
assert drift[0]["node"] == 1, drift[0]
assert doc["verdict"]["exit_code"] == 1
PY
# A driver drift, as the issue's example: any field can be overridden. Two nodes that differ
# have no majority: both values are listed, and neither node is named or drained.
"$MPIRUN" -n 2 "$SHAKEDOWN" audit --virtual-nodes 2 --inject drift:node=0,field=gpu.driver,value=570.124.06 \
  --json "$TMP/tie.json" >"$TMP/out" 2>&1
expect_rc 1 $? "a node whose driver differs"
expect_in "$TMP/out" "audit.drift: gpu.driver: .*node 0 \(host [^)]*\) 570.124.06.*no majority: this run cannot tell which is off" "driver drift listed, neither node blamed"
grep -q "State=DRAIN" "$TMP/out" && fail "no majority: a node was drained"
/usr/bin/python3 - "$TMP/tie.json" <<'PY' || fail "no majority: a node was named in the JSON report"
import json, sys
doc = json.load(open(sys.argv[1]))
drift = [f for f in doc["checks"] if f["check"] == "audit.drift" and f["status"] == "fail"]
assert len(drift) == 1 and drift[0]["node"] is None, drift
assert not doc.get("drain"), doc.get("drain")
PY

# ---- an NCCL setting exported to the ranks: a warning naming it ----
NCCL_ALGO=Ring "$MPIRUN" -n 2 -x NCCL_ALGO "$SHAKEDOWN" audit --virtual-nodes 2 >"$TMP/out" 2>&1
expect_rc 0 $? "NCCL_ALGO set"
expect_in "$TMP/out" "^  \[WARN\] audit.settings: every node \(2 nodes\): NCCL_ALGO=Ring is set \(environment\)" "the variable named"
NCCL_ALGO=Ring "$MPIRUN" -n 2 -x NCCL_ALGO "$SHAKEDOWN" audit --virtual-nodes 2 \
  --set 'audit.allow_nccl=[NCCL_ALGO]' >"$TMP/out" 2>&1
expect_rc 0 $? "NCCL_ALGO allowed"
grep -q "WARN\] audit.settings" "$TMP/out" && fail "audit.allow_nccl: still warned"

# ---- a config expecting 8 GPUs per node on a machine without: fails naming the node ----
"$SHAKEDOWN" audit --set topology.expected_gpus_per_node=8 >"$TMP/out" 2>&1
expect_rc 1 $? "8 GPUs expected"
expect_in "$TMP/out" "\[FAIL\] audit.visibility: node 0 \(host [^)]*\): has 0 GPUs, expected 8 \(topology.expected_gpus_per_node\)" "visibility names the node"

# A platform's GPU count is not applied to a node without GPUs (platform.match judges that),
# and the pass line does not claim it was met.
"$SHAKEDOWN" audit --set checks.platform=h100-sxm >"$TMP/out" 2>&1
expect_in "$TMP/out" "\[PASS\] audit.visibility: .*platform h100-sxm's 8 per node not applied: no node has a GPU" "the count not claimed"

# ---- a --json FILE that cannot be written: exit 2 before the audit, naming the folder ----
"$SHAKEDOWN" audit --json "$TMP/nowhere/a.json" >"$TMP/out" 2>&1
expect_rc 2 $? "audit --json into a missing folder"
expect_in "$TMP/out" "--json $TMP/nowhere/a.json: the folder $TMP/nowhere does not exist" "the folder named"

# ---- --out keeps the file; its detail lists every fact with its source ----
"$SHAKEDOWN" audit --out "$TMP/kept.h5" >"$TMP/out" 2>&1
expect_rc 0 $? "audit --out"
[[ -f "$TMP/kept.h5" ]] || fail "--out: no file"
expect_in "$TMP/out" "^shakedown audit $TMP/kept.h5$" "the audit's summary says audit"
"$SHAKEDOWN" summary "$TMP/kept.h5" --detail >"$TMP/detail" 2>&1
expect_in "$TMP/detail" "^shakedown audit $TMP/kept.h5$" "so does the summary of its file"
expect_in "$TMP/detail" "facts \(what the audit checks, and where each was read\):" "facts listed"
expect_in "$TMP/detail" "      container.runtime = [a-z]+  \[" "a fact with its source"
expect_in "$TMP/detail" "      build.cuda_runtime = " "the build's facts"
h5ls "$TMP/kept.h5/inventory/facts" >/dev/null || fail "no /inventory/facts"

# ---- mistakes ----
"$SHAKEDOWN" audit --inject drift:node=3,field=kernel >"$TMP/out" 2>&1
expect_rc 2 $? "a node that does not exist"
expect_in "$TMP/out" "node 3 does not exist; this run has nodes 0..0 \(add --virtual-nodes 2" "the node named"
"$SHAKEDOWN" audit --inject drift:node=0,field=colour >"$TMP/out" 2>&1
expect_rc 2 $? "an unknown field"
expect_in "$TMP/out" "unknown inventory field 'colour' \(fixed fields: cpu.model" "the fields listed"
"$SHAKEDOWN" audit --set audit.driver_min=latest >"$TMP/out" 2>&1
expect_rc 2 $? "a driver minimum that is not a version"
expect_in "$TMP/out" "audit.driver_min.*must be a version of dotted numbers" "the key named"
"$SHAKEDOWN" audit --set 'audit.allow_nccl=[ALGO]' >"$TMP/out" 2>&1
expect_rc 2 $? "a variable that is not NCCL's"
expect_in "$TMP/out" "audit.allow_nccl.*must be a variable name starting with NCCL_" "the key named"
pass "shakedown audit"

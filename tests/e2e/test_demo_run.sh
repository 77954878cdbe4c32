#!/usr/bin/env bash
# The demo: 4 ranks as 2 virtual nodes with configs/smoke.yaml -> complete file, one row per rank.
source "$(dirname "$0")/lib.sh"
out="$TMP/run.h5"
"$MPIRUN" -n 4 "$SHAKEDOWN" run --config "$SHAKEDOWN_SOURCE_DIR/configs/smoke.yaml" \
  --virtual-nodes 2 --out "$out" >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
cat "$TMP/stdout"
expect_rc 0 $rc "demo run (stderr: $(tail -n 5 "$TMP/stderr"))"
[[ -f "$out" ]] || fail "no $out"
[[ ! -e "$out.partial" ]] || fail "$out.partial left behind"
[[ "$(h5_root_attr "$out" status)" == complete ]] || fail "status is not complete"
expect_in "$TMP/stdout" "verdict: PASS" "run summary"
# HDF5's own error stacks never reach the user (every thread that uses HDF5 silences them: a
# thread-safe HDF5 keeps that setting per thread); shakedown reports errors in its own words.
if grep -q "HDF5-DIAG" "$TMP/stderr"; then
  grep -m 5 -A 3 "HDF5-DIAG" "$TMP/stderr" >&2
  fail "HDF5 printed its error stack during the demo run"
fi

# /topology/ranks: one row per rank with node indices 0,0,1,1 (read back by the RunFile reader).
"$SHAKEDOWN" summary "$out" >"$TMP/summary"
expect_rc 0 $? "summary"
for r in 0 1 2 3; do
  node=$((r / 2)); local_rank=$((r % 2))
  expect_in "$TMP/summary" "^  $r +$node +$local_rank +" "topology row of rank $r"
done
expect_in "$TMP/summary" "4 on 2 nodes \(virtual: 2 pretend nodes per host\)" "virtual nodes said"
expect_in "$TMP/summary" "status: +complete" "summary status"
# The summary printed at the end of the run equals `shakedown summary` on the file.
diff <(sed -n '/^shakedown run/,$p' "$TMP/stdout") "$TMP/summary" >/dev/null ||
  fail "end-of-run summary differs from shakedown summary"
# h5dump sees the table (independent reader) and the effective config.
h5dump -H -d /topology/ranks "$out" | grep -q 'DATASPACE  SIMPLE { ( 4 )' || fail "/topology/ranks is not 4 rows"
h5dump -a /config_yaml "$out" | grep virtual_nodes >/dev/null || fail "effective config not stored"  # not -q: h5dump must not die of SIGPIPE under pipefail
pass "demo run"

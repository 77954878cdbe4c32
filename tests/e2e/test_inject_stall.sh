#!/usr/bin/env bash
# --inject stall: rank 1 sleeps before inventory; with a 5 s step timeout the watchdog must end
# the job with exit 3 in under 20 s, name rank 1, and leave a readable file marked aborted.
source "$(dirname "$0")/lib.sh"
out="$TMP/stall.h5"
start=$(date +%s)
"$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 --set timeouts.phase_s=5 \
  --inject stall:rank=1,phase=inventory --out "$out" >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
elapsed=$(($(date +%s) - start))
cat "$TMP/stderr"
expect_rc 3 $rc "stalled run"
((elapsed < 20)) || fail "took ${elapsed} s (limit 20 s)"
expect_in "$TMP/stderr" "TIMEOUT: rank 1 \(host [^,]+, node 0 \[virtual\]\) did not reach 'phase inventory' within 5 s" "watchdog message"
[[ -f "$out" ]] || fail "no file after abort (have: $(ls "$TMP"))"
[[ "$(h5_root_attr "$out" status)" == aborted ]] || fail "file status is not aborted"
"$SHAKEDOWN" summary "$out" >"$TMP/summary" 2>&1
expect_rc 3 $? "summary of an aborted run"
expect_in "$TMP/summary" "ABORTED.*rank 1" "summary names the reason"
# What completed before the stall is still there.
expect_in "$TMP/summary" "^  3 +1 +1 +" "topology recorded before the stall"
pass "stall detected in ${elapsed} s"

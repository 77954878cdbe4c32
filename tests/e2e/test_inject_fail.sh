#!/usr/bin/env bash
# --inject fail: one rank throws at the start of inventory while the others wait for it in a
# collective. The job must end at once with exit 3, the message must name that rank, and rank 0
# must mark the file aborted with the reason (also when the failing rank is rank 0 itself).
source "$(dirname "$0")/lib.sh"
for bad in 2 0; do
  out="$TMP/fail$bad.h5"
  start=$(date +%s)
  "$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 --set timeouts.phase_s=30 --report junit \
    --inject "fail:rank=$bad,phase=inventory" --out "$out" >"$TMP/stdout" 2>"$TMP/stderr"
  rc=$?
  elapsed=$(($(date +%s) - start))
  cat "$TMP/stderr"
  expect_rc 3 $rc "planted failure on rank $bad"
  ((elapsed < 20)) || fail "failure on rank $bad took ${elapsed} s to end the job (the step timeout is 30 s)"
  expect_in "$TMP/stderr" "rank $bad \(host [^)]+\): inject: planted failure at the start of phase inventory" \
    "failing rank named"
  [[ -f "$out" ]] || fail "no file after the failure on rank $bad"
  expect_in "$TMP/stderr" "no reports written \(the run did not finish\); make them from its file: shakedown summary --format json\|junit\|prometheus $out" "the missing --report said"
  [[ "$(h5_root_attr "$out" status)" == aborted ]] || fail "status is not aborted (rank $bad)"
  [[ "$(h5_root_attr "$out" abort_reason)" == "rank $bad "* ]] || fail "abort_reason does not name rank $bad"
  "$SHAKEDOWN" summary "$out" >"$TMP/summary" 2>&1
  expect_rc 3 $? "summary after failure on rank $bad"
  expect_in "$TMP/summary" "^  3 +1 +1 +" "topology kept after failure on rank $bad"
done
pass "one rank's failure ends the job, named and recorded"

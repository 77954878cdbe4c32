#!/usr/bin/env bash
# The verdict users act on: never PASS on nothing measured, a singleton run says what it could
# not test, the smoke summary fits on a screen and counts what was tested, and the verdict the
# run stored in /analysis equals the one `summary --recompute` computes from the measurements.
source "$(dirname "$0")/lib.sh"

# ---- the smoke run: one screen, counts in the verdict, /analysis stored ----------------------
out="$TMP/smoke.h5"
"$MPIRUN" -n 4 "$SHAKEDOWN" run --config "$SHAKEDOWN_SOURCE_DIR/configs/smoke.yaml" \
  --virtual-nodes 2 --out "$out" >"$TMP/smoke" 2>&1
rc=$?
cat "$TMP/smoke"
expect_rc 0 $rc "smoke run"
lines=$(wc -l <"$TMP/smoke")
((lines <= 60)) || fail "the smoke run printed $lines lines (at most 60)"
expect_in "$TMP/smoke" "^verdict: PASS.*; tested [0-9]+ sweeps \([0-9]+ sizes\), 4 GEMM shapes on 4 ranks / 2 nodes \(virtual\) \(exit 0\)$" "verdict with counts"
expect_in "$TMP/smoke" "\[PASS\] collectives.coverage: [0-9]+ sweeps, [0-9]+ sizes measured" "coverage said"
expect_in "$TMP/smoke" "\[WARN\] placement.oversubscription: .*timings will be noisy" "shared cores said once"
[[ $(grep -c "timings will be noisy" "$TMP/smoke") -eq 1 ]] || fail "shared cores said more than once"
h5dump -a /analysis/verdict "$out" | grep -q '"PASS' || fail "/analysis/verdict not stored"
h5dump -H -d /analysis/checks "$out" | grep -q '"subject_kind"' || fail "/analysis/checks has no subject_kind column"
"$SHAKEDOWN" summary "$out" >"$TMP/stored"
"$SHAKEDOWN" summary --recompute "$out" >"$TMP/recomputed"
diff <(grep -v '^checks' "$TMP/stored") <(grep -v '^checks' "$TMP/recomputed") >"$TMP/diff" ||
  { cat "$TMP/diff"; fail "the stored verdict differs from the recomputed one"; }
expect_in "$TMP/recomputed" "^checks \(recomputed from the measurements\)$" "recomputation said"
"$SHAKEDOWN" summary --detail "$out" >"$TMP/detail"
expect_in "$TMP/detail" "^ +1 MiB +[0-9]+ " "--detail has the per-size tables"
expect_in "$TMP/detail" "\[SKIP\] placement.gpu_unique: no rank uses a GPU" "--detail gives skip reasons"

# ---- nothing measured is a FAIL, never a PASS -----------------------------------------------
"$MPIRUN" -n 4 "$SHAKEDOWN" run --phases collectives --set collectives.sizes=1 \
  --out "$TMP/tiny.h5" >"$TMP/tiny" 2>&1
rc=$?
cat "$TMP/tiny"
expect_rc 1 $rc "every size too small"
expect_in "$TMP/tiny" "\[FAIL\] collectives.coverage: nothing measured: every size was skipped \([0-9]+ sizes too small for one element per rank\)" "too small named"
expect_in "$TMP/tiny" "^verdict: FAIL: collectives.coverage" "FAIL verdict"

"$MPIRUN" -n 2 "$SHAKEDOWN" run --phases collectives --set collectives.sizes=64G \
  --set collectives.ops=[all_reduce] --set collectives.scopes=[world] --out "$TMP/huge.h5" >"$TMP/huge" 2>&1
rc=$?
cat "$TMP/huge"
expect_rc 1 $rc "every size out of memory"
expect_in "$TMP/huge" "\[FAIL\] collectives.coverage: nothing measured: every size was skipped \([0-9]+ sizes? out of memory on at least one rank\)" "out of memory named"

# ---- a singleton run says no link was exercised --------------------------------------------
"$SHAKEDOWN" run --phases collectives --set collectives.sizes=1K,4K --set collectives.scopes=[world] \
  --out "$TMP/one.h5" >"$TMP/one" 2>&1
rc=$?
cat "$TMP/one"
expect_rc 0 $rc "singleton run"
expect_in "$TMP/one" "\[WARN\] run.coverage: 1 rank: no link was exercised" "singleton warned"
expect_in "$TMP/one" "^verdict: PASS with 1 warning \(run.coverage\); tested .* on 1 rank / 1 node" "singleton verdict"
pass "verdict: coverage, singleton, one screen, stored = recomputed"

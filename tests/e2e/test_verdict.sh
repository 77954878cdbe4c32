#!/usr/bin/env bash
# The verdict users act on: never PASS on nothing measured, a singleton run says what it could
# not test, the smoke summary fits on a screen and counts what was tested, and the verdict the
# run stored in /analysis equals the one `summary --recompute` computes from the measurements.
source "$(dirname "$0")/lib.sh"

# ---- the smoke run: one screen, counts in the verdict, /analysis stored ----------------------
out="$TMP/smoke.h5"
"$MPIRUN" -n 4 "$SHAKEDOWN" run --config "$SHAKEDOWN_SOURCE_DIR/configs/smoke.yaml" \
  --virtual-nodes 2 --out "$out" --report json,junit,prometheus >"$TMP/smoke" 2>"$TMP/smoke.err"
rc=$?
cat "$TMP/smoke" "$TMP/smoke.err"
expect_rc 0 $rc "smoke run"
# Its reports: JSON valid against the schema, JUnit and Prometheus parsed, all agreeing.
/usr/bin/python3 "$SHAKEDOWN_SOURCE_DIR/tests/e2e/check_reports.py" "${out%.h5}" 0 \
  --schema "$SHAKEDOWN_SOURCE_DIR/docs/report-schema.json" || fail "the smoke run's reports"
# Its file: every dataset as the schema's descriptors declare it (scripts/schema.json).
/usr/bin/python3 "$SHAKEDOWN_SOURCE_DIR/tests/e2e/check_schema.py" "$out" \
  "$SHAKEDOWN_SOURCE_DIR/scripts/schema.json" || fail "the smoke run's file against the schema"
# ... and the check is not vacuous: a copy without a required dataset, or with one of another
# type, is refused, naming it.
/usr/bin/python3 - "$out" "$TMP/damaged.h5" <<'PY'
import h5py, shutil, sys
shutil.copy(sys.argv[1], sys.argv[2])
with h5py.File(sys.argv[2], "a") as f:
    del f["/clock/rtt_us"]
    t = f["/gemm"][next(iter(f["/gemm"]))]
    data = t["output_hash"][()]
    del t["output_hash"]
    t["output_hash"] = data.astype("int64")
PY
/usr/bin/python3 "$SHAKEDOWN_SOURCE_DIR/tests/e2e/check_schema.py" "$TMP/damaged.h5" \
  "$SHAKEDOWN_SOURCE_DIR/scripts/schema.json" 2>"$TMP/damaged" && fail "a damaged file passed the schema check"
expect_in "$TMP/damaged" "output_hash: declared uint64, stored int64|/clock: required datasets missing: rtt_us" "schema mismatch named"
lines=$(wc -l <"$TMP/smoke")
warned=$(grep -cE "^  \[(WARN|FAIL)\] " "$TMP/smoke")
# One screen for six measuring phases: a block per phase, one line per check that is not
# skipped (skips share one line; passed audit, devices and telemetry checks one line each).
# Each warning is a line of its own: shared cores' (always here) and any a slow spell of the
# 2-core machine adds (one that splits a folded group's line, e.g. devices.memory), so the
# budget counts the other lines: 75, one screen with the oversubscription warning.
((lines - warned <= 75)) ||
  fail "the smoke run printed $lines lines, $warned of them warnings (at most 75 others)"
expect_in "$TMP/smoke" "^verdict: PASS.*; tested 4 devices and 4 pairs, [0-9]+ sweeps \([0-9]+ sizes\), 4 GEMM shapes, 12 training steps, 1 checkpoint of 4 shards on 4 ranks / 2 nodes \(virtual\) \(exit 0\)$" "verdict with counts"
expect_in "$TMP/smoke" "\[PASS\] collectives.coverage: [0-9]+ sweeps, [0-9]+ sizes measured" "coverage said"
expect_in "$TMP/smoke" "\[WARN\] placement.oversubscription: .*timings will be noisy" "shared cores said once"
expect_in "$TMP/smoke" "\[WARN\] run.coverage: 4 ranks on 2 virtual nodes of one host: the network between nodes was not tested" "pretend nodes test no network"
[[ $(grep -c "timings will be noisy" "$TMP/smoke") -eq 1 ]] || fail "shared cores said more than once"
# The default platform is auto: no GPU here, so the CPU path's floors (cpu-local) apply, except
# to a sanitizer build's timings (several times slower), which are not compared.
sanitized=0
h5dump -a /shakedown_version "$out" | grep -q '+sanitize=' && sanitized=1
expect_in "$TMP/smoke" "\[PASS\] platform.match: every node is what cpu-local describes .*auto: no node has a GPU" "auto picked cpu-local"
if ((sanitized)); then
  "$SHAKEDOWN" summary --detail "$out" >"$TMP/sanitized"
  expect_in "$TMP/sanitized" "\[SKIP\] platform.expected: written by a sanitizer build" "sanitizer timings not compared"
else
  # Held to cpu-local's floors: passed, or (a slow spell of this 2-core VM: every scope 3-4x
  # below its usual rate, seen in about 1 run in 5) warned, since ranks share cores.
  expect_in "$TMP/smoke" "\[PASS\] collectives.expected_busbw: [0-9]+ sweeps compared with cpu-local|\[WARN\] collectives.expected_busbw: .* of cpu-local's" "busbw held to cpu-local"
  expect_in "$TMP/smoke" "\[PASS\] gemm.tflops: [0-9]+ rank x shape results at >= 80% of cpu-local" "GEMM held to cpu-local"
fi
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

# ---- a CPU run held to h100-sxm fails, naming the figure and how far below it is ------------
# (A sanitizer build's busbw is not held to the figure: there a small size shows the mismatch.)
big=1G
((sanitized)) && big=64K
"$MPIRUN" -n 2 "$SHAKEDOWN" run --phases inventory,collectives --set collectives.sizes=$big \
  --set collectives.ops=[all_reduce] --set collectives.scopes=[world] --set collectives.iters=1 \
  --set collectives.warmup=0 --set collectives.in_place=no --set collectives.validate=off \
  --set checks.platform=h100-sxm --out "$TMP/h100.h5" >"$TMP/h100" 2>&1
rc=$?
cat "$TMP/h100"
expect_rc 1 $rc "a CPU run held to h100-sxm"
expect_in "$TMP/h100" "\[FAIL\] platform.match: h100-sxm \(checks.platform: h100-sxm\) describes H100 80GB HBM3 / H100 SXM GPUs, but 1 of 1 nodes differ \(node 0 \(host [^)]+\): no GPU\)" "platform mismatch named"
((sanitized)) ||
  expect_in "$TMP/h100" "\[FAIL\] collectives.expected_busbw: world all_reduce float32_sum out_of_place busbw [0-9.e-]+ GB/s at 1 GiB is [0-9.e-]+% of h100-sxm's 360 GB/s \(pass: 80%, checks.min_busbw_fraction\)" "busbw far below the figure"
# Small sizes against h100-sxm's latency ceilings: a CPU run may be under them, but the platform
# does not describe its nodes, so that is no pass (a failure would still say how far off).
"$MPIRUN" -n 2 "$SHAKEDOWN" run --phases inventory,collectives --set collectives.sizes=8:4K \
  --set collectives.ops=[all_reduce] --set collectives.scopes=[world] \
  --set checks.platform=h100-sxm --out "$TMP/h100small.h5" >"$TMP/h100small" 2>&1
"$SHAKEDOWN" summary --detail "$TMP/h100small.h5" >"$TMP/h100small.detail" 2>&1
grep -q "\[PASS\] collectives.latency" "$TMP/h100small.detail" &&
  fail "collectives.latency passed against a platform that does not describe the nodes"
# (A sanitizer build's timings are compared with no platform's figures: platform.expected says so.)
((sanitized)) ||
  expect_in "$TMP/h100small.detail" "collectives.latency: .*(which do not describe these nodes \(platform.match\): no pass|above h100-sxm's ceiling)" "latency against a mismatched platform"
"$SHAKEDOWN" run --phases inventory --set checks.platform=h100 --out "$TMP/bad.h5" >"$TMP/bad" 2>&1
expect_rc 2 $? "an unknown platform"
expect_in "$TMP/bad" "checks.platform: unknown platform \"h100\"; did you mean \"h100-nvl\"\? \(known: cpu-local, h100-nvl, h100-sxm, h200-sxm; auto" "known platforms listed"

# ---- planted stragglers are named, and only them -------------------------------------------
# On 4 ranks sharing 2 cores a planted slowdown is blurred by the scheduler (the other ranks
# speed up while the slow one sleeps, and drift by 3x among themselves), so detection is a rate:
# bench/verdict_accuracy.sh measures it (2x: 10/10). Here the plumbing must work: rank 2 named in
# one of up to 3 runs, and no run may name another rank.
# planted_named LOG CHECK RANK OTHERS PATTERN WHAT CMD...: runs CMD (output in LOG) up to 3 times;
# fails when a run names one of OTHERS (a character class) under CHECK, passes at the first run
# whose output matches PATTERN, fails when none does.
planted_named() {
  local log=$1 check=$2 others=$3 pattern=$4 what=$5 attempt
  shift 5
  for attempt in 1 2 3; do
    rm -f "$TMP/planted.h5"
    "$@" --out "$TMP/planted.h5" >"$log" 2>&1
    expect_rc 0 $? "$what"
    [[ $(sed -n "/$check/,/^  \[/p" "$log" | grep -cE "rank [$others] \(host") -eq 0 ]] ||
      { cat "$log"; fail "$what: a rank without the fault was named"; }
    grep -Eq "$pattern" "$log" && return 0
    echo "$what: not named in run $attempt"
  done
  cat "$log"
  fail "$what: not named in 3 runs"
}
planted_named "$TMP/slow" gemm.stragglers 013 \
  "\[WARN\] gemm.stragglers: rank 2 \(host [^,]+, node 1\): [0-9]+% slower than the other ranks in [34]/4 GEMM shapes .*, p [<=] " \
  "a planted 3x GEMM straggler on rank 2 (a warning on shared cores)" \
  "$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 --phases gemm --set gemm.iters=10 \
  --inject slow:rank=2,phase=gemm,factor=3
# The same for a rank that arrives late at every collective.
planted_named "$TMP/late" collectives.lateness 012 \
  "\[WARN\] collectives.lateness: rank 3 \(host [^,]+, node 1\): arrives late at the world's collectives by [0-9]+% of an iteration \(median\) in [0-9]+/[0-9]+ sizes" \
  "a planted 3x late rank 3" \
  "$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 --phases collectives --set collectives.scopes=[world] \
  --set collectives.ops=[all_reduce,all_gather] --set collectives.sizes=1K:64K \
  --inject slow:rank=3,phase=collectives,factor=3
cp "$TMP/planted.h5" "$TMP/late.h5"
h5dump -H -d /collectives/world/all_reduce/float32_sum/out_of_place/wait_us "$TMP/late.h5" | grep -q 'SIMPLE { ( 7, 5, 4 )' ||
  fail "wait_us is not [sizes, iters, world]"

# ---- a singleton run says no link was exercised --------------------------------------------
"$SHAKEDOWN" run --phases collectives,gemm --set collectives.sizes=1K,4K --set collectives.scopes=[world] \
  --set gemm.iters=3 --out "$TMP/one.h5" >"$TMP/one" 2>&1
rc=$?
cat "$TMP/one"
"$SHAKEDOWN" summary --detail "$TMP/one.h5" >"$TMP/one_detail" 2>&1
expect_rc 0 $rc "singleton run"
expect_in "$TMP/one" "\[WARN\] run.coverage: 1 rank: no link was exercised" "singleton warned"
expect_in "$TMP/one" "^verdict: PASS with 2 warnings \(run.coverage, gemm.output_hash\); tested .* on 1 rank / 1 node" "singleton verdict"
# One rank has nobody to be slower or later than: not judged, not passed.
expect_in "$TMP/one_detail" "\[SKIP\] gemm.stragglers: slow ranks: 1 ranks: which one is slow cannot be told" "singleton gemm stragglers not judged"
expect_in "$TMP/one_detail" "\[SKIP\] collectives.lateness: no world sweep out of place with 3 or more ranks" "singleton lateness not judged"
pass "verdict: coverage, singleton, one screen, stored = recomputed"

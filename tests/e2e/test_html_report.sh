#!/usr/bin/env bash
# The HTML report: the demo run (4 ranks as 2 virtual nodes, configs/smoke.yaml, real mpirun)
# with --report html writes RUN.html next to the file; `shakedown report` writes the same page
# and, with --baseline, the comparison. Headless Chromium renders both offline: every chart
# drawn, none blank, no console error, a PNG that is not blank (tests/e2e/check_html.py; the
# rendering part skips, with the reason, where Chromium is missing).
source "$(dirname "$0")/lib.sh"
CHECK="$SHAKEDOWN_SOURCE_DIR/tests/e2e/check_html.py"
"$MPIRUN" -n 4 "$SHAKEDOWN" run --config "$SHAKEDOWN_SOURCE_DIR/configs/smoke.yaml" \
  --virtual-nodes 2 --report html --out "$TMP/run.h5" >"$TMP/out" 2>&1
expect_rc 0 $? "demo run with --report html"
expect_in "$TMP/out" "wrote the HTML report $TMP/run.html" "the page named"
[[ -s "$TMP/run.html" ]] || fail "no $TMP/run.html"
sections=(checks collectives gemm train checkpoint links telemetry run)
# check_html PAGE PNG SECTION...: the page as Chromium shows it; without Chromium the rest of
# this test still runs and it is reported skipped at the end, with the reason.
no_browser=""
check_html() {
  local what=$1
  shift
  /usr/bin/python3 "$CHECK" "$@" >"$TMP/check" 2>&1
  local rc=$?
  cat "$TMP/check"
  if [[ $rc -eq 77 ]]; then
    no_browser=$(tail -n 1 "$TMP/check")
  elif [[ $rc -ne 0 ]]; then
    fail "$what"
  fi
}
check_html "the demo run's HTML report" "$TMP/run.html" "$TMP/run.png" "${sections[@]}"
for want in 'world: bus bandwidth against message size' 'each rank.s time against the median rank' \
  'arrival lateness' 'TFLOP/s per rank and shape' 'Step breakdown per rank' 'GB/s per rank' \
  'No link scan in this run' "slowest core.s clock" 'Inventory' 'Topology: 4 ranks'; do
  expect_in "$TMP/run.html" "$want" "the page holds '$want'"
done

# The demo run against itself: its train step components and checkpoint are compared too (one
# checkpoint: not judged, with the count).
"$SHAKEDOWN" compare "$TMP/run.h5" "$TMP/run.h5" --detail >"$TMP/out" 2>&1
expect_rc 0 $? "the demo run against itself"
# (a sanitizer build's absolute times are not judged, nor those of ranks that share cores: then
# the step says so)
expect_in "$TMP/out" "^  train step: (1 \[|not judged \([0-9]+ and [0-9]+ samples: absolute time (of a sanitizer build|with ranks sharing cores))" "the train step compared"
expect_in "$TMP/out" "^  train compute \(forward \+ backward\) rank 3 " "each rank's train compute compared"
expect_in "$TMP/out" "^  checkpoint .*write.*: not judged \(1 and 1 samples" "one checkpoint: not judged"

# `shakedown report` with a baseline: a run whose rank 1 takes 8x as long, against a run
# without (the shapes of tests/e2e/test_compare.sh); the page shows the comparison and the
# slowed rank; the exit code is the comparison's.
gemm=(--virtual-nodes 2 --phases gemm --set gemm.engine=cpu --set gemm.hidden=128
  --set gemm.tokens=64 --set gemm.iters=60)
"$MPIRUN" -n 4 "$SHAKEDOWN" run "${gemm[@]}" --out "$TMP/base.h5" >/dev/null 2>&1
expect_rc 0 $? "gemm baseline"
"$MPIRUN" -n 4 "$SHAKEDOWN" run "${gemm[@]}" --inject slow:rank=1,phase=gemm,factor=8 \
  --baseline "$TMP/base.h5" --report html,json --out "$TMP/slow.h5" >"$TMP/out" 2>&1
expect_rc 1 $? "a regressed run against its --baseline"
expect_in "$TMP/out" "^against the baseline $TMP/base.h5:" "the comparison printed after the summary"
expect_in "$TMP/out" "^  rank 1 \(host [^,]+, node 0\): gemm against its run's other ranks" "rank 1 named"
expect_in "$TMP/out" "wrote the json comparison $TMP/slow.compare.json" "the comparison's JSON"
grep -q 'id="compare"' "$TMP/slow.html" || fail "run --baseline --report html: no comparison in the page"
"$SHAKEDOWN" report "$TMP/slow.h5" --baseline "$TMP/base.h5" -o "$TMP/cmp.html" >"$TMP/out" 2>&1
expect_rc 1 $? "shakedown report --baseline of a regressed run"
expect_in "$TMP/out" "wrote the HTML report $TMP/cmp.html" "report names its page"
expect_in "$TMP/cmp.html" "REGRESSED: [1-9][0-9]* place\(s\) slower" "the page's comparison verdict"
expect_in "$TMP/cmp.html" "rank 1 \(host [^,]+, node 0\): gemm against its run(&apos;|')s other ranks" "the slowed rank in the page"
check_html "the report with a baseline" "$TMP/cmp.html" "$TMP/cmp.png" checks compare gemm run

# The link scan's page: 6 virtual nodes, node 2 slowed; the rail's node x node heatmap and the
# conviction with its evidence.
"$MPIRUN" -n 6 "$SHAKEDOWN" run --virtual-nodes 6 --phases linkscan --set linkscan.bytes=256KiB \
  --set linkscan.window=8 --set linkscan.reps=3 --set linkscan.lat_iters=50 \
  --set linkscan.bw_fraction=0.25 --set linkscan.lat_factor=20 \
  --inject slow:node=2,phase=linkscan,factor=10 --report html --out "$TMP/links.h5" >"$TMP/out" 2>&1
rc=$?
[[ $rc -eq 0 || $rc -eq 1 ]] || { cat "$TMP/out"; fail "linkscan run with --report html: exit $rc"; }
expect_in "$TMP/links.html" "<h3>rail 0: 15 pairs of 6 nodes, best [0-9.e+]+ GB/s</h3>" "the rail's heading"
[[ $(grep -o '<td style="background:rgb(255,[0-9]*,[0-9]*)" title="node [0-9] - node [0-9]: [0-9.e+]* GB/s">' "$TMP/links.html" | wc -l) -eq 30 ]] ||
  fail "the heatmap does not hold 30 shaded cells (15 pairs, both halves)"
expect_in "$TMP/links.html" "<li>node 2 \(host [^)]*\): convicted; slow with " "the convicted node under the matrix"
check_html "the link scan's report" "$TMP/links.html" "$TMP/links.png" checks links run

# Mistakes: a baseline that is not a run (exit 2 before anything is measured), -o over the
# run file, a file that is not there.
echo "not hdf5" >"$TMP/junk.h5"
"$MPIRUN" -n 2 "$SHAKEDOWN" run --phases gemm --baseline "$TMP/junk.h5" --out "$TMP/x.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "run --baseline of a file that is not a run"
expect_in "$TMP/out" "--baseline: cannot read $TMP/junk.h5" "the baseline named"
[[ ! -e "$TMP/x.h5" && ! -e "$TMP/x.h5.partial" ]] || fail "a run file was started for a bad --baseline"
# A baseline that measured none of this run's compared phases: the same, before anything runs.
"$MPIRUN" -n 2 "$SHAKEDOWN" run --phases inventory --baseline "$TMP/base.h5" --out "$TMP/x.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "run --baseline with no phase in common"
expect_in "$TMP/out" "--baseline $TMP/base.h5 measured gemm, and this run's phases compared would be none: nothing in common" "the phases named"
[[ ! -e "$TMP/x.h5" && ! -e "$TMP/x.h5.partial" ]] || fail "a run file was started for a baseline with nothing in common"
"$SHAKEDOWN" report "$TMP/slow.h5" -o "$TMP/slow.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "report -o over the run file"
"$SHAKEDOWN" report "$TMP/missing.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "report of a missing file"
expect_in "$TMP/out" "missing.h5" "the missing file named"
[[ -z "$no_browser" ]] || skip "everything but the rendering passed; $no_browser"
echo "PASS"

#!/usr/bin/env bash
# `shakedown compare` on real run files (4 ranks as 2 virtual nodes, real mpirun): a rerun of the
# baseline shows no regression; a run whose rank 1 computes 3x as long names that rank and
# nothing else (exit 1); collectives are matched size by size, what only one file measured and
# the configuration keys that differ are said; a file that is not a run is exit 2.
source "$(dirname "$0")/lib.sh"
gemm=(--virtual-nodes 2 --phases gemm --set gemm.engine=cpu --set gemm.hidden=128
  --set gemm.tokens=64 --set gemm.iters=30)
"$MPIRUN" -n 4 "$SHAKEDOWN" run "${gemm[@]}" --out "$TMP/base.h5" >/dev/null 2>&1
expect_rc 0 $? "baseline"
"$MPIRUN" -n 4 "$SHAKEDOWN" run "${gemm[@]}" --out "$TMP/again.h5" >/dev/null 2>&1
expect_rc 0 $? "rerun"
"$MPIRUN" -n 4 "$SHAKEDOWN" run "${gemm[@]}" --inject slow:rank=1,phase=gemm,factor=3 \
  --out "$TMP/slow.h5" >/dev/null 2>&1
expect_rc 0 $? "slowed run (a warning on shared cores)"

"$SHAKEDOWN" compare "$TMP/base.h5" "$TMP/again.h5" >"$TMP/out" 2>&1
expect_rc 0 $? "a rerun against its baseline"
expect_in "$TMP/out" "^verdict: NO REGRESSION \(exit 0\)" "no regression"
expect_in "$TMP/out" "^compared [0-9]+ item\(s\) at alpha 0.05 Bonferroni-corrected" "what was compared, and how"

"$SHAKEDOWN" compare "$TMP/base.h5" "$TMP/slow.h5" >"$TMP/out" 2>&1
expect_rc 1 $? "the slowed rank"
expect_in "$TMP/out" "^  rank 1 \(host [^,]+, node 0\): gemm against its run's other ranks: [0-9]+% slower .* in 4/4" "rank 1 named in every shape"
expect_in "$TMP/out" "^1 place\(s\) slower" "and nothing else"
expect_in "$TMP/out" "^verdict: REGRESSED \(exit 1\)" "verdict"

# The same comparison as JSON (docs/compare-schema.json), JUnit and Prometheus: valid, agreeing
# with each other and the exit code, rank 1 the one slower place; and a rerun's, with none.
check_formats() {  # STEM WANT_RC BEFORE AFTER [PLACE_REGEX]
  local f
  for f in json junit prometheus; do
    local out="$1.$f"
    [[ $f == junit ]] && out="$1.junit.xml"
    [[ $f == prometheus ]] && out="$1.prom"
    "$SHAKEDOWN" compare "$3" "$4" --format "$f" -o "$out" >"$TMP/out" 2>&1
    expect_rc "$2" $? "compare --format $f"
  done
  /usr/bin/python3 "$SHAKEDOWN_SOURCE_DIR/tests/e2e/check_compare.py" "$1" "$2" \
    "$SHAKEDOWN_SOURCE_DIR/docs/compare-schema.json" ${5:+"$5"} >"$TMP/check" 2>&1 ||
    { cat "$TMP/check"; fail "compare formats of $1"; }
}
check_formats "$TMP/slow" 1 "$TMP/base.h5" "$TMP/slow.h5" "^rank 1 \\(host [^,]+, node 0\\): gemm"
check_formats "$TMP/again" 0 "$TMP/base.h5" "$TMP/again.h5"
"$SHAKEDOWN" compare "$TMP/base.h5" "$TMP/slow.h5" --format yaml >"$TMP/out" 2>&1
expect_rc 2 $? "an unknown format"
expect_in "$TMP/out" "--format: unknown format \"yaml\" \(known: text, json, junit, prometheus\)" "formats named"

# Collectives: matched by scope, collective, dtype, mode and size. A file against itself changes
# nothing; a run that measured other sizes lists what only one of them has and the key that
# differs. (--inject slow delays a rank's arrival before the timed collective, which lateness
# checks, not the collective's time: there is no self-test of a slower collective here.)
coll=(--virtual-nodes 2 --phases collectives --set collectives.iters=10 --set "collectives.ops=[all_reduce]")
"$MPIRUN" -n 4 "$SHAKEDOWN" run "${coll[@]}" --set collectives.sizes=16K:256K:x4 --out "$TMP/cbase.h5" >/dev/null 2>&1
expect_rc 0 $? "collectives baseline"
"$SHAKEDOWN" compare "$TMP/cbase.h5" "$TMP/cbase.h5" >"$TMP/out" 2>&1
expect_rc 0 $? "a file against itself"
expect_in "$TMP/out" "^compared [1-9][0-9]* item\(s\) .*: 0 slower, 0 faster" "every item unchanged"
"$MPIRUN" -n 4 "$SHAKEDOWN" run "${coll[@]}" --set collectives.sizes=16K:1M:x4 --out "$TMP/cmore.h5" >/dev/null 2>&1
"$SHAKEDOWN" compare "$TMP/cbase.h5" "$TMP/cmore.h5" >"$TMP/out" 2>&1
expect_in "$TMP/out" "! config collectives.sizes: .* -> " "the differing key said"
expect_in "$TMP/out" "^only in after: [0-9]+ \(collectives [a-z_0-9]+ all_reduce float32_sum [a-z_]+ 1 MiB" "sizes only the run measured"

# Not a run file: exit 2 naming it.
echo "not hdf5" >"$TMP/junk.h5"
"$SHAKEDOWN" compare "$TMP/base.h5" "$TMP/junk.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "a file that is not a run"
expect_in "$TMP/out" "compare: cannot read $TMP/junk.h5" "the file named"
echo "PASS"

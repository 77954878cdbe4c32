#!/usr/bin/env bash
# Planted faults in the collectives phase: a corrupted result must be found and its rank named
# (exit 3, file aborted); with on_wrong: continue the sweep finishes and the verdict still fails;
# a stall in the middle of the sweep must name the rank and the collective and size, and keep
# the sizes already measured.
source "$(dirname "$0")/lib.sh"
common=(--virtual-nodes 2 --phases collectives --set collectives.sizes=8:1K
  --set collectives.iters=2 --set collectives.warmup=0 --set collectives.scopes=world)

"$MPIRUN" -n 4 "$SHAKEDOWN" run "${common[@]}" --inject corrupt:rank=2,phase=collectives \
  --out "$TMP/c.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 3 $? "corrupted result"
expect_in "$TMP/stderr" "wrong data in collectives world/all_reduce float32 out_of_place 8 B: rank 2 \(host [^,]+, node 1 \[virtual\]\): 1 of 2 elements wrong" \
  "corruption names rank 2"
[[ "$(h5_root_attr "$TMP/c.h5" status)" == aborted ]] || fail "corrupted run not marked aborted"
expect_in "$TMP/stderr" "the run file $TMP/c.h5 keeps what completed, marked aborted: \`shakedown summary $TMP/c.h5\` gives its verdict and the nodes to drain" "the aborted run says where its verdict is"
# The file's verdict is corruption first (what a tool filtering on it must see), then the abort;
# the values are printed to tell a float32 apart (9 significant digits).
"$SHAKEDOWN" summary "$TMP/c.h5" --format json -o "$TMP/c.json" >/dev/null 2>&1
/usr/bin/python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["verdict"]; assert v["status"] == "corruption" and "the run then aborted" in v["headline"], v' "$TMP/c.json" ||
  fail "an abort on wrong data is not a corruption verdict"
pair=$(sed -n 's/.*first at index [0-9]*: expected \([^,]*\), got \([^ ]*\) .*/\1 \2/p' "$TMP/stderr" | head -n 1)
[[ -n "$pair" && "${pair% *}" != "${pair#* }" ]] || fail "the expected and wrong values print alike: '$pair'"

"$MPIRUN" -n 4 "$SHAKEDOWN" run "${common[@]}" --set collectives.on_wrong=continue --progress \
  --set collectives.ops=all_reduce,all_gather --inject corrupt:rank=1,phase=collectives \
  --out "$TMP/k.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 3 $? "corruption with on_wrong: continue"
expect_in "$TMP/stdout" "verdict: DATA CORRUPTION: collectives.wrong_data on rank 1 \(host [^,]+, node 0\)" "verdict after continue"
expect_in "$TMP/stdout" "\[FAIL\] collectives.wrong_data: rank 1 \(host [^,]+, node 0\): [0-9]+ wrong elements in [0-9]+ sweeps, first in world [a-z_]+ float32" "wrong data check names rank 1"
# The drain list names the host of rank 1 (printed, not run), and only it.
expect_in "$TMP/stdout" "^  scontrol update NodeName=$(hostname) State=DRAIN Reason=\"shakedown: collectives.wrong_data: rank 1 " "drain line"
[[ $(grep -c "scontrol update" "$TMP/stdout") -eq 1 ]] || fail "one drain line expected"
# The first step is always drawn (later ones at most 4 times a second).
expect_in "$TMP/stderr" "collectives 0/[0-9]+ \(0%\) world/all_reduce float32 out_of_place 8 B, ETA" "--progress line"
grep -q "ETA" "$TMP/stdout" && fail "progress went to stdout"
[[ "$(h5_root_attr "$TMP/k.h5" status)" == complete ]] || fail "continued run should be complete"
# Row 4 = 128 B (all_gather needs 16 B per rank, so the smallest sizes are skipped).
h5dump -d /collectives/world/all_gather/float32/in_place/wrong -s "4,0" -c "1,4" "$TMP/k.h5" >"$TMP/wrong"
grep -Eq '\(4,0\): 0, 1, 0, 0' "$TMP/wrong" || { cat "$TMP/wrong"; fail "wrong counts should be 1 on rank 1 only"; }

start=$(date +%s)
"$MPIRUN" -n 4 "$SHAKEDOWN" run "${common[@]}" --set timeouts.phase_s=4 \
  --inject stall:rank=1,phase=collectives,step=3 --out "$TMP/s.h5" >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
elapsed=$(($(date +%s) - start))
expect_rc 3 $rc "stall in the sweep"
((elapsed < 20)) || fail "stall took ${elapsed} s to end the job"
expect_in "$TMP/stderr" "TIMEOUT: rank 1 \(host [^,]+, node 0 \[virtual\]\) did not reach 'collectives world/all_reduce float32 out_of_place 32 B'" \
  "stall names rank 1, the collective and the size"
h5dump -H -d /collectives/world/all_reduce/float32_sum/out_of_place/sizes "$TMP/s.h5" >"$TMP/sizes"
grep -q 'SIMPLE { ( 2 )' "$TMP/sizes" || { cat "$TMP/sizes"; fail "the two sizes measured before the stall were not kept"; }
pass "collectives faults"

#!/usr/bin/env bash
# Faults from outside the run, as operators meet them: SIGTERM to mpirun (Slurm's time limit,
# scancel), Ctrl-C on a run without mpirun, kill -9 of rank 0 and of another rank, SIGSTOP of a
# rank inside a collective, and a step that is only slow. Each: the exit code, the first line of
# the message (the cause, the rank, the host), the file's status, and `summary` reading it.
source "$(dirname "$0")/lib.sh"
# A collectives sweep long enough to be caught in the middle (4 ranks on this machine's cores).
long=(--phases collectives --set collectives.scopes=[world] --set collectives.ops=[all_reduce]
      --set collectives.dtypes=[float32] --set collectives.sizes=1K,2K,4K,8K,16K,32K
      --set collectives.iters=30000 --set collectives.in_place=no)
# The first size's rows: the run is inside the sweep and has measured something.
first_rows=/collectives/world/all_reduce/float32_sum/out_of_place/time_us
# start_sweep NAME RANK [ARGS...]: starts the long sweep on 4 ranks (2 virtual nodes) with its
# file $TMP/NAME.h5 and log $TMP/NAME.log, waits until it has measured a size and sets VICTIM to
# rank RANK's pid.
start_sweep() {
  local name=$1 rank=$2
  shift 2
  out="$TMP/$name.h5"
  run_in_background "$TMP/$name.log" "$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 "${long[@]}" "$@" --out "$out"
  wait_for_object "$out" "$first_rows" 90 || { cat "$TMP/$name.log"; fail "the $name run never measured a size"; }
  VICTIM=$(rank_pid "$rank" "$out")
  [[ -n "$VICTIM" ]] || fail "no process for rank $rank in the $name run"
}

# ---- SIGTERM to mpirun, through the wrapper (what scancel does to the job's launcher) -------
out="$TMP/term.h5"
hosts="$TMP/hosts"
echo "localhost slots=4" >"$hosts"
run_in_background "$TMP/term.log" "$SHAKEDOWN_SOURCE_DIR/launch/shakedown-mpirun" --hostfile "$hosts" \
  -N 4 --bind none --oversubscribe --mca mpi_yield_when_idle 1 --shakedown "$SHAKEDOWN" -- run \
  --virtual-nodes 2 "${long[@]}" \
  --out "$out"
wait_for_object "$out" "$first_rows" 90 || { cat "$TMP/term.log"; fail "the run never measured a size"; }
pkill -TERM -f "shakedown-mpirun --hostfile $hosts"
rc=$(wait_rc "$TMP/term.log" 60)
cat "$TMP/term.log"
expect_rc 3 "$rc" "SIGTERM to the mpirun wrapper"
first_message "$TMP/term.log" | grep -Eq "^shakedown: interrupted by SIGTERM on rank [0-9] \(host [^,]+, node [01]" ||
  fail "first message does not name the signal, rank and host: $(first_message "$TMP/term.log")"
[[ -f "$out" && ! -e "$out.partial" ]] || fail "the interrupted run's file was not renamed (have: $(ls "$TMP"))"
[[ "$(h5_root_attr "$out" status)" == aborted ]] || fail "status is not aborted after SIGTERM"
[[ "$(h5_root_attr "$out" abort_reason)" == "interrupted by SIGTERM on rank "* ]] || fail "abort_reason: $(h5_root_attr "$out" abort_reason)"
"$SHAKEDOWN" summary "$out" >"$TMP/summary" 2>&1
expect_rc 3 $? "summary of an interrupted run"
expect_in "$TMP/summary" "verdict: ABORTED.*interrupted by SIGTERM" "summary says interrupted"
"$SHAKEDOWN" summary --detail "$out" >"$TMP/detail" 2>&1
expect_in "$TMP/detail" "^ +1 KiB +[0-9]+ +[0-9.]+" "sizes measured before the signal are kept"

# ---- Ctrl-C (SIGINT) on a run without mpirun ----------------------------------------------------
# One rank alone is quick: bigger sizes and more iterations keep it busy long enough.
out="$TMP/int.h5"
run_in_background "$TMP/int.log" "$SHAKEDOWN" run "${long[@]}" --set collectives.sizes=64K,128K,256K \
  --set collectives.iters=1000000 --out "$out"
wait_for_object "$out" "$first_rows" 90 || fail "singleton run never measured a size"
kill -INT "$(pgrep -f -- "shakedown run .*--out $out" | head -n 1)"
rc=$(wait_rc "$TMP/int.log" 30)
cat "$TMP/int.log"
expect_rc 3 "$rc" "Ctrl-C on a singleton run"
expect_in "$TMP/int.log" "interrupted by SIGINT on rank 0 \(host [^)]+\): Ctrl-C" "SIGINT named"
[[ "$(h5_root_attr "$out" status)" == aborted ]] || fail "status is not aborted after Ctrl-C"

# ---- kill -9 of a rank other than 0: rank 0 names it ----------------------------------------
start_sweep kill2 2
kill -9 "$VICTIM"
rc=$(wait_rc "$TMP/kill2.log" 60)
cat "$TMP/kill2.log"
((rc != 0)) || fail "the run passed although rank 2 was killed"
first_message "$TMP/kill2.log" | grep -Eq "^shakedown: rank 2 \(host [^,]+, node 1 \[virtual\]\) ended unexpectedly" ||
  fail "first message does not name rank 2: $(first_message "$TMP/kill2.log")"
[[ "$(h5_root_attr "$out" status)" == aborted ]] || fail "status is not aborted after rank 2 died"
"$SHAKEDOWN" summary "$out" >"$TMP/summary" 2>&1
expect_rc 3 $? "summary after rank 2 was killed"
expect_in "$TMP/summary" "ABORTED.*rank 2 .*ended unexpectedly" "summary names rank 2"

# ---- kill -9 of a rank under a launcher that leaves the job running (srun without
# --kill-on-bad-exit): rank 0 sees its connection close and ends the job at once, naming it, not
# after the step's timeout (timeouts.phase_s, set long here).
OMPI_MCA_orte_abort_on_non_zero_status=0 start_sweep kill2b 2 --set timeouts.phase_s=600
kill -9 "$VICTIM"
rc=$(wait_rc "$TMP/kill2b.log" 60)
cat "$TMP/kill2b.log"
((rc != 0 && rc != 124)) || fail "the run did not end soon after rank 2 was killed (exit $rc)"
first_message "$TMP/kill2b.log" | grep -Eq "^shakedown: rank 2 \(host [^,]+, node 1 \[virtual\]\) ended unexpectedly" ||
  fail "first message does not name rank 2: $(first_message "$TMP/kill2b.log")"
[[ "$(h5_root_attr "$out" status)" == aborted ]] || fail "status is not aborted after rank 2 died"

# ---- kill -9 of rank 0: nobody can mark the file, and it stays readable -------------------------
start_sweep kill0 0
kill -9 "$VICTIM"
rc=$(wait_rc "$TMP/kill0.log" 60)
((rc != 0)) || fail "the run passed although rank 0 was killed"
[[ -f "$out.partial" ]] || fail "no .partial after rank 0 was killed"
expect_readable_incomplete "$out.partial" 4 "^  3 +1 +1 +" "the killed rank 0"

# ---- SIGSTOP of a rank inside a collective: named as frozen, not "a hang in the fabric" ------
start_sweep stop 2 --set timeouts.phase_s=15
kill -STOP "$VICTIM"
rc=$(wait_rc "$TMP/stop.log" 60)
kill -CONT "$VICTIM" 2>/dev/null
cat "$TMP/stop.log"
expect_rc 3 "$rc" "a stopped rank"
first_message "$TMP/stop.log" | grep -Eq "^shakedown: TIMEOUT: rank 2 \(host [^,]+, node 1 \[virtual\]\) stopped answering .* its process is stopped" ||
  fail "first message does not name the stopped rank 2: $(first_message "$TMP/stop.log")"
[[ "$(h5_root_attr "$out" status)" == aborted ]] || fail "status is not aborted after the stop"

# ---- a step that is only slow: all ranks alive and progressing, with an estimate ---------------
out="$TMP/slow.h5"
"$MPIRUN" -n 2 "$SHAKEDOWN" run "${long[@]}" --set collectives.sizes=256K --set collectives.iters=1000000 \
  --set timeouts.phase_s=4 --out "$out" >"$TMP/slow.log" 2>&1
rc=$?
cat "$TMP/slow.log"
expect_rc 3 "$rc" "a step longer than phase_s"
expect_in "$TMP/slow.log" "TIMEOUT: all 2 ranks are alive and progressing in 'collectives world/all_reduce float32 [a-z_]+ 256 KiB' \([0-9]+ of 1000000 iterations done on the slowest rank\), but the step needs longer than its timeout of 4 s: about [0-9]+ s at the current rate; raise timeouts.phase_s" "slow step explained"
pass "signals, killed ranks, a frozen rank and a slow step"

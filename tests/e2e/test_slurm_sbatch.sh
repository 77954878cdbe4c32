#!/usr/bin/env bash
# A real Slurm (one node, started by scripts/start-slurm.sh under this test's temp folder):
# sbatch launch/shakedown.sbatch with the smoke config as 4 tasks = 2 virtual nodes, then a job
# with a stalled rank. Checks the jobs' exit codes as Slurm records them, the HDF5 file (Slurm job
# id, node id and leaf switch in /topology/ranks), the summary and the watchdog's message in the
# job's output. Slurm is stopped (by pid) whatever happens.
source "$(dirname "$0")/lib.sh"
src=$SHAKEDOWN_SOURCE_DIR
start=$(date +%s)
start_test_slurm --cpus 4 --gpus 4 --timeout 30
# Idempotent: a second start finds the cluster up and starts nothing.
"$src/scripts/start-slurm.sh" --dir "$slurm_dir" --timeout 10 >"$TMP/start2.out" 2>&1 ||
  { cat "$TMP/start2.out"; fail "second start-slurm.sh"; }
expect_in "$TMP/start2.out" "cluster 'shakedown' up" "second start reports the running cluster"
pids_before=$(cat "$slurm_dir"/pids/*.pid | sort | tr '\n' ' ')

# Submit from a folder of our own: the job's output lands there, results under $TMP/results.
mkdir -p "$TMP/submit"
cd "$TMP/submit" || fail "cd"
export SHAKEDOWN SHAKEDOWN_RESULTS=$TMP/results
# 4 ranks on 2 cores: under srun, Open MPI does not know it is oversubscribed (mpirun
# --oversubscribe tells it) and its ranks spin instead of yielding: 5-10x slower here.
export OMPI_MCA_mpi_yield_when_idle=1
# The template asks for 2 nodes x 8 GPUs x 12 CPUs; this cluster has 1 node, 4 CPUs, 4 fake GPUs.
size=(--nodes=1 --ntasks-per-node=4 --gpus-per-node=4 --cpus-per-task=1 --time=5)

# wait_job ID SECONDS: until Slurm no longer lists the job as pending or running.
wait_job() {
  local deadline=$((SECONDS + $2)) state
  while ((SECONDS < deadline)); do
    state=$(scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    case "$state" in
      PENDING | CONFIGURING | RUNNING | COMPLETING | "") sleep 0.5 ;;
      *) return 0 ;;
    esac
  done
  scontrol show job "$1" >&2
  fail "job $1 still '$state' after $2 s"
}
# "3:0" -> 3 (the job's exit code; the part after ':' is a signal).
job_exit() { scontrol show job "$1" | sed -n 's/.* ExitCode=\([0-9]*\):\([0-9]*\).*/\1 \2/p'; }

# ---- 1: the smoke run passes --------------------------------------------------------------
jid=$(sbatch --parsable "${size[@]}" "$src/launch/shakedown.sbatch" \
  --config "$src/configs/smoke.yaml" --virtual-nodes 2) || fail "sbatch refused the template"
wait_job "$jid" 120
log=$TMP/submit/shakedown-$jid.out
[[ -f "$log" ]] || fail "no job output shakedown-$jid.out (have: $(ls "$TMP/submit"))"
read -r code signal <<<"$(job_exit "$jid")"
[[ "$code" == 0 && "$signal" == 0 ]] || { cat "$log"; fail "smoke job: ExitCode=$code:$signal, expected 0:0"; }
expect_in "$log" "verdict: PASS" "job output has the verdict"
expect_in "$log" "shakedown.sbatch: job $jid: exit 0 \(pass\)" "template reports the exit"
res=$TMP/results/$jid
[[ -f "$res/run.h5" && -s "$res/summary.txt" && -s "$res/job.txt" && -s "$res/report.html" ]] ||
  fail "results/$jid lacks run.h5, summary.txt, job.txt or report.html (have: $(ls "$res"))"
[[ "$(h5_root_attr "$res/run.h5" status)" == complete ]] || fail "run.h5 status is not complete"
h5dump -d /topology/ranks "$res/run.h5" >"$TMP/ranks.txt" 2>&1 || fail "h5dump /topology/ranks"
host=$(hostname -s)
for want in "\"$jid\"" "\"spine.leaf0.$host\"" "\"switch.switch.node\"" "\"leaf0\""; do
  expect_in "$TMP/ranks.txt" "$want" "/topology/ranks records $want"
done
# Every task's Slurm ids: job, node 0, tasks 0-3.
for t in 0 1 2 3; do
  expect_in "$res/summary.txt" "job $jid node 0 task $t( +leaf0)?\$" "summary shows Slurm task $t"
done
expect_in "$res/summary.txt" "\[PASS\] placement.leaf_switches: 1 node on 1 leaf switch \(leaf0: 1 node, from Slurm\)" "leaf switch check"
"$SHAKEDOWN" summary "$res/run.h5" >"$TMP/summary.txt"
expect_rc 0 $? "summary of the saved run"
cmp -s "$TMP/summary.txt" "$res/summary.txt" || fail "summary differs from the one the job saved"
t1=$(($(date +%s) - start))

# ---- 2: a stalled rank: the watchdog names it, the job exits 3 -------------------------------
jid2=$(sbatch --parsable "${size[@]}" "$src/launch/shakedown.sbatch" \
  --config "$src/configs/smoke.yaml" --virtual-nodes 2 --set timeouts.phase_s=5 \
  --inject stall:rank=1,phase=inventory) || fail "sbatch (stall)"
wait_job "$jid2" 90
log2=$TMP/submit/shakedown-$jid2.out
read -r code signal <<<"$(job_exit "$jid2")"
[[ "$code" == 3 ]] || { cat "$log2"; fail "stall job: ExitCode=$code:$signal, expected 3"; }
expect_in "$log2" "TIMEOUT: rank 1 \(host [^,]+, node 0 \[virtual\]\) did not reach 'phase inventory' within 5 s" "watchdog names rank 1"
expect_in "$log2" "shakedown.sbatch: job $jid2: exit 3 \(runtime fault\)" "template reports exit 3"
[[ "$(h5_root_attr "$TMP/results/$jid2/run.h5" status)" == aborted ]] || fail "stall run.h5 not marked aborted"
expect_in "$TMP/results/$jid2/summary.txt" "ABORTED.*rank 1" "saved summary names the reason"
# The page of an aborted run is written (report exits 3, the verdict's code): no report.err.
[[ -s "$TMP/results/$jid2/report.html" && ! -e "$TMP/results/$jid2/report.err" ]] ||
  fail "aborted job: report.html missing or a report.err left: $(ls "$TMP/results/$jid2")"
srun_rc=$(sed -n 's/.*\[from the run file.s verdict; srun exited \([0-9]*\)\].*/\1/p' "$log2")
t2=$(($(date +%s) - start - t1))

# ---- 3: the mpirun alternative inside the allocation (inventory and gemm), against job 1's
# file as SHAKEDOWN_BASELINE: its GEMMs are compared (srun against mpirun on shared cores: a
# regression is possible, and then exit 1), compare.txt and report.html say so.
jid3=$(SHAKEDOWN_LAUNCHER=mpirun SHAKEDOWN_MPIRUN_ARGS="--oversubscribe --bind-to none" \
  SHAKEDOWN_BASELINE=$res/run.h5 sbatch --parsable "${size[@]}" "$src/launch/shakedown.sbatch" \
  --config "$src/configs/smoke.yaml" --virtual-nodes 2 --phases inventory,gemm) || fail "sbatch (mpirun)"
wait_job "$jid3" 90
log3=$TMP/submit/shakedown-$jid3.out
read -r code signal <<<"$(job_exit "$jid3")"
[[ "$code" == 0 ]] || { [[ "$code" == 1 ]] && grep -q "^verdict: REGRESSED" "$TMP/results/$jid3/compare.txt"; } ||
  { cat "$log3"; fail "mpirun job: ExitCode=$code:$signal, expected 0 (1 only with a regression)"; }
expect_in "$log3" "launcher mpirun" "template used mpirun"
expect_in "$log3" "^against the baseline $res/run.h5:" "the run compared with SHAKEDOWN_BASELINE"
expect_in "$TMP/results/$jid3/compare.txt" "^verdict: (NO REGRESSION \(exit 0\)|REGRESSED \(exit 1\))" "compare.txt saved"
expect_in "$TMP/results/$jid3/compare.txt" "^compared [1-9][0-9]* item" "the GEMMs compared"
expect_in "$TMP/results/$jid3/compare.txt" "^only in before: " "what only the baseline measured"
grep -q 'id="compare"' "$TMP/results/$jid3/report.html" || fail "report.html lacks the comparison"
jid5=$(SHAKEDOWN_BASELINE=$TMP/none.h5 sbatch --parsable "${size[@]}" "$src/launch/shakedown.sbatch" \
  --phases inventory) || fail "sbatch (missing baseline)"
wait_job "$jid5" 30
read -r code signal <<<"$(job_exit "$jid5")"
[[ "$code" == 2 ]] || { cat "$TMP/submit/shakedown-$jid5.out"; fail "missing baseline: ExitCode=$code, expected 2"; }
expect_in "$TMP/submit/shakedown-$jid5.out" "SHAKEDOWN_BASELINE=$TMP/none.h5: no such readable file" "the missing baseline named"
# The job id is the allocation's; task ids under mpirun would be the batch step's: not recorded.
expect_in "$TMP/results/$jid3/summary.txt" "^  3 +1 +1 .* job $jid3 node - task -( +leaf0)?\$" "mpirun ranks: job id, no task ids"
t3=$(($(date +%s) - start - t1 - t2))

# ---- 4: scancel in the middle of a sweep: the run is marked interrupted, the template says 3 ----
jid4=$(sbatch --parsable "${size[@]}" "$src/launch/shakedown.sbatch" --virtual-nodes 2 \
  --phases collectives --set collectives.scopes=[world] --set collectives.ops=[all_reduce] \
  --set collectives.dtypes=[float32] --set collectives.in_place=no \
  --set collectives.sizes=1K,2K,4K,8K,16K,32K --set collectives.iters=30000) || fail "sbatch (scancel)"
run4=$TMP/results/$jid4/run.h5
wait_for_object "$run4" /collectives/world/all_reduce/float32_sum/out_of_place/time_us 90 ||
  { cat "$TMP/submit/shakedown-$jid4.out"; fail "the job to cancel never measured a size"; }
scancel "$jid4"
wait_job "$jid4" 60
log4=$TMP/submit/shakedown-$jid4.out
cat "$log4"
expect_in "$log4" "interrupted by SIGTERM on rank [0-3] \(host [^)]+\): Slurm time limit, scancel or Ctrl-C" "the signal is named"
expect_in "$log4" "shakedown.sbatch: job $jid4: exit 3 \(runtime fault\)" "template reports exit 3 after scancel"
[[ "$(h5_root_attr "$run4" status)" == aborted ]] || fail "cancelled run.h5 not marked aborted"
t4=$(($(date +%s) - start - t1 - t2 - t3))

# ---- stop: exactly the daemons we started --------------------------------------------------
"$src/scripts/start-slurm.sh" --stop --dir "$slurm_dir" >"$TMP/stop.out" 2>&1 || fail "--stop"
for p in $pids_before; do
  kill -0 "$p" 2>/dev/null && fail "daemon pid $p still alive after --stop"
done
expect_in "$TMP/stop.out" "stopped slurmd [0-9]+ slurmctld [0-9]+ munged [0-9]+" "--stop names what it stopped"
pass "Slurm: smoke job $jid exit 0 (${t1} s incl. start), stall job $jid2 exit 3${srun_rc:+ (srun said $srun_rc)} (${t2} s), mpirun job $jid3 exit 0 (${t3} s), cancelled job $jid4 marked interrupted (${t4} s)"

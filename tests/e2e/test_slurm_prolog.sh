#!/usr/bin/env bash
# launch/shakedown-prolog.sh as a real Slurm prolog (one node, started by scripts/start-slurm.sh
# under this test's temp folder): an audit that fails (a config expecting 8 GPUs on this machine,
# which has none) leaves the node drained with shakedown's reason in `sinfo -R` and the job held
# for requeue, not run; after undraining, a passing audit lets a job run and leaves no log; a
# config error of the audit's own does not drain. The test restores the configuration it changed
# (the Prolog line) and undrains the node; Slurm is stopped (by pid) whatever happens.
source "$(dirname "$0")/lib.sh"
src=$SHAKEDOWN_SOURCE_DIR
start_test_slurm --cpus 2 --timeout 30
node=$(sinfo -h -o %N | head -n 1)
cp "$SLURM_CONF" "$TMP/slurm.conf.orig"

# The prolog as a site installs it: the script, and its settings beside it.
mkdir -p "$TMP/prolog" "$TMP/log" "$TMP/submit"
cp "$src/launch/shakedown-prolog.sh" "$TMP/prolog/"
set_prolog_conf() {
  printf 'SHAKEDOWN=%s\nLOG_DIR=%s\nAUDIT_ARGS="%s"\nAUDIT_TIMEOUT=60\n' \
    "$SHAKEDOWN" "$TMP/log" "$1" >"$TMP/prolog/shakedown-prolog.conf"
}
echo "Prolog=$TMP/prolog/shakedown-prolog.sh" >>"$SLURM_CONF"
scontrol reconfigure || fail "scontrol reconfigure with Prolog="

wait_state() {  # JOB STATE... SECONDS: until the job's state is one of them
  local job=$1 secs=${*: -1} states=("${@:2:$#-2}") deadline state s
  deadline=$((SECONDS + secs))
  while ((SECONDS < deadline)); do
    state=$(scontrol show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    reason=$(scontrol show job "$job" 2>/dev/null | sed -n 's/.* Reason=\([^ ]*\).*/\1/p')
    for s in "${states[@]}"; do [[ "$state" == "$s" || "$reason" == "$s" ]] && return 0; done
    sleep 0.5
  done
  scontrol show job "$job" >&2
  fail "job $job not in ${states[*]} after $secs s (state $state, reason $reason)"
}
cd "$TMP/submit" || fail "cd"

# ---- 1: the audit fails: node drained with shakedown's reason, job held, not run ----
set_prolog_conf "--set topology.expected_gpus_per_node=8"
jid=$(sbatch --parsable --wrap "echo ran >$TMP/submit/ran.txt" -o "$TMP/submit/j-%j.out") || fail "sbatch"
wait_state "$jid" launch_failed_requeued_held 60
[[ -f "$TMP/submit/ran.txt" ]] && fail "the job ran on a node that failed the audit"
sinfo -R -h -o "%E|%N" >"$TMP/reason"
expect_in "$TMP/reason" "^shakedown: audit.visibility: node 0 \(host [^)]*\): has 0 GPUs, expected 8 \(topology.expected_gpus_per_node\).*\[$TMP/log/audit-$node-$jid.txt\]\|$node$" "sinfo -R shows shakedown's reason"
sinfo -h -n "$node" -o %T >"$TMP/state"
expect_in "$TMP/state" "drain" "the node is drained"
expect_in "$TMP/log/audit-$node-$jid.txt" "^verdict: FAIL: .*audit.visibility" "the audit's output kept for the operator"
[[ -s "$TMP/log/audit-$node-$jid.json" ]] || fail "no JSON report kept"
scancel "$jid"

# ---- 2: undrained, the audit passes: the job runs, nothing is kept ----
set_prolog_conf ""
scontrol update NodeName="$node" State=RESUME || fail "undrain"
jid=$(sbatch --parsable --wrap "echo ran >$TMP/submit/ran.txt" -o "$TMP/submit/j-%j.out") || fail "sbatch"
wait_state "$jid" COMPLETED 60
[[ -f "$TMP/submit/ran.txt" ]] || fail "the job did not run after a passing audit"
[[ -e "$TMP/log/audit-$node-$jid.txt" ]] && fail "a passing audit left its log"
sinfo -h -n "$node" -o %T >"$TMP/state"
expect_in "$TMP/state" "^idle" "the node stays in service"

# ---- 3: a mistake in the audit's own config: logged, the job runs, no drain ----
set_prolog_conf "--set audit.driver_min=latest"
rm -f "$TMP/submit/ran.txt"
jid=$(sbatch --parsable --wrap "echo ran >$TMP/submit/ran.txt" -o "$TMP/submit/j-%j.out") || fail "sbatch"
wait_state "$jid" COMPLETED 60
[[ -f "$TMP/submit/ran.txt" ]] || fail "a config mistake of the audit kept the job from running"
expect_in "$TMP/log/audit-$node-$jid.txt" "audit.driver_min" "the mistake is logged"
sinfo -h -n "$node" -o %T >"$TMP/state"
expect_in "$TMP/state" "^idle" "no drain for a mistake of the audit's own"

# ---- restore what the test changed ----
cp "$TMP/slurm.conf.orig" "$SLURM_CONF"
scontrol reconfigure || fail "restoring slurm.conf"
scontrol show config | grep -q "^Prolog *= *(null)" || fail "Prolog still set after restoring"
pass "Slurm prolog"

#!/usr/bin/env bash
# launch/shakedown.sbatch's exit-code logic without a Slurm cluster (no root needed): a stand-in
# srun runs the ranks under mpirun and then exits as the real one does when the job killed ranks
# (137), or fails before starting anything. The job must still exit with shakedown's own code,
# taken from the run file, and say why. (test_slurm_sbatch.sh runs the template on a real Slurm.)
source "$(dirname "$0")/lib.sh"
template=$SHAKEDOWN_SOURCE_DIR/launch/shakedown.sbatch
mkdir -p "$TMP/bin"
cat >"$TMP/bin/srun" <<EOF
#!/usr/bin/env bash
# srun stand-in: drops srun's options, runs the program on 2 ranks, exits FAKE_SRUN_EXIT if set.
[[ -n "\${FAKE_SRUN_FAIL:-}" ]] && { echo "srun: error: Unable to create step (stand-in)" >&2; exit 1; }
while [[ \$# -gt 0 && "\$1" == -* ]]; do shift; done
"$MPIRUN" -n 2 "\$@"
rc=\$?
exit "\${FAKE_SRUN_EXIT:-\$rc}"
EOF
printf '#!/usr/bin/env bash\necho "JobId=$3 (scontrol stand-in)"\n' >"$TMP/bin/scontrol"
chmod +x "$TMP/bin/srun" "$TMP/bin/scontrol"

# job ID [ENV...] -- ARGS: the template as sbatch would run it, in the submit folder $TMP.
job() {
  local id=$1
  shift
  (cd "$TMP" && env PATH="$TMP/bin:$PATH" SLURM_JOB_ID="$id" SLURM_SUBMIT_DIR="$TMP" \
    SHAKEDOWN_RESULTS="$TMP/results" "$@" >"$TMP/job$id.out" 2>&1)
}

# A rank fails (shakedown's exit 3), and the launcher reports a killed rank (137).
job 901 FAKE_SRUN_EXIT=137 bash "$template" --phases inventory --inject fail:rank=1,phase=inventory
expect_rc 3 $? "rank failure hidden behind srun's 137"
expect_in "$TMP/job901.out" "job 901: exit 3 \(runtime fault\) \[from the run file's verdict; srun exited 137\]" "says where the code came from"
[[ -f "$TMP/results/901/run.h5" && -s "$TMP/results/901/summary.txt" ]] || fail "results/901 incomplete: $(ls "$TMP/results/901")"
expect_in "$TMP/results/901/summary.txt" "ABORTED.*rank 1" "saved summary names the failed rank"

# The run passed, but a rank died afterwards: not a pass.
job 902 FAKE_SRUN_EXIT=139 bash "$template" --phases inventory
expect_rc 3 $? "pass in the file, but the launcher saw a crash"
expect_in "$TMP/job902.out" "srun exited 139: ranks died or could not be started \(the run file says the run itself completed\)" "explains the crash after the run"

# The launcher's codes that are shakedown's pass through: a check failure would be 1, a pass 0.
job 903 bash "$template" --phases inventory
expect_rc 0 $? "plain pass"
expect_in "$TMP/job903.out" "job 903: exit 0 \(pass\)$" "pass line"

# srun fails before any rank starts: configuration, not a failed check.
job 904 FAKE_SRUN_FAIL=1 bash "$template" --phases inventory
expect_rc 2 $? "srun failed to start the step"
expect_in "$TMP/job904.out" "srun failed before shakedown wrote its file" "launcher failure explained"

# Misuse: not under Slurm, a missing binary, an unknown launcher.
(cd "$TMP" && env -u SLURM_JOB_ID bash "$template" >"$TMP/nojob.out" 2>&1)
expect_rc 2 $? "outside sbatch"
expect_in "$TMP/nojob.out" "SLURM_JOB_ID is not set: submit this script with sbatch" "outside sbatch message"
job 905 SHAKEDOWN="$TMP/none/shakedown" bash "$template"
expect_rc 2 $? "missing binary"
expect_in "$TMP/job905.out" "shakedown binary '.*none/shakedown' is not executable here" "missing binary message"
job 906 SHAKEDOWN_LAUNCHER=aprun bash "$template"
expect_rc 2 $? "unknown launcher"
pass "sbatch template exit codes"

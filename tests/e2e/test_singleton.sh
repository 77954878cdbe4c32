#!/usr/bin/env bash
# A run without mpirun (one rank): what the summary says about it reads right - "1 on 1 node",
# "1 node x 1 rank per node", the command line recorded as a shell reads it back, and the
# machine's memory (the kernel's total, not one NUMA node's).
source "$(dirname "$0")/lib.sh"
out="$TMP/one.h5"
"$SHAKEDOWN" run --set 'phases=[inventory]' --set "output.dir=$TMP/a dir" --out "$out" >"$TMP/log" 2>&1
expect_rc 0 $? "singleton inventory run"
expect_in "$TMP/log" "ranks: +1 on 1 node$" "one rank on one node"
expect_in "$TMP/log" "1 node x 1 rank per node" "placement wording"
expect_in "$TMP/log" "command: +.*shakedown run --set 'phases=\[inventory\]' --set 'output.dir=$TMP/a dir' --out $out$" "command line quoted"
total_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
gib=$(awk -v kb="$total_kb" 'BEGIN {printf "%.1f", kb / 1048576}')
expect_in "$TMP/log" "node 0 \(.*\): .*, $gib GiB[,;]" "inventory memory is the machine's ($gib GiB)"
# The default name under Slurm has the job (and array task) in it: an array's jobs start in the
# same second and write to one folder.
# An array task is named as Slurm's %A_%a: the array's job id (task 7 of array 4235 runs as
# job 4242), then the task.
SLURM_JOB_ID=4242 SLURM_ARRAY_JOB_ID=4235 SLURM_ARRAY_TASK_ID=7 "$SHAKEDOWN" run \
  --set 'phases=[inventory]' --set "output.dir=$TMP/named" >"$TMP/log2" 2>&1
expect_rc 0 $? "singleton run with the default name under Slurm"
compgen -G "$TMP/named/*T*Z-job4235_7.h5" >/dev/null ||
  fail "default name of an array task is not <array job>_<task>: $(ls "$TMP/named")"
SLURM_JOB_ID=4243 "$SHAKEDOWN" run --set 'phases=[inventory]' --set "output.dir=$TMP/named" \
  >"$TMP/log2" 2>&1
compgen -G "$TMP/named/*T*Z-job4243.h5" >/dev/null ||
  fail "default name under Slurm lacks the job: $(ls "$TMP/named")"
pass "singleton run wording"

#!/usr/bin/env bash
# Usage and configuration errors: exit 2 with a message naming the key path, file and line.
source "$(dirname "$0")/lib.sh"

cat >"$TMP/bad.yaml" <<'YAML'
collectives:
  iters: ten
YAML
"$MPIRUN" -n 2 "$SHAKEDOWN" run --config "$TMP/bad.yaml" --out "$TMP/x.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "bad config under mpirun"
expect_in "$TMP/out" "bad.yaml:2.*collectives\.iters" "bad config message"
[[ $(grep -c "collectives.iters" "$TMP/out") -eq 1 ]] || fail "the error was printed by more than one rank"
[[ ! -e "$TMP/x.h5" && ! -e "$TMP/x.h5.partial" ]] || fail "a file was created for a bad config"

"$SHAKEDOWN" run --config "$TMP/bad.yaml" >"$TMP/out" 2>&1
expect_rc 2 $? "bad config without mpirun"

# A config file missing on one "node" only (MPMD: rank 1 gets another path): every rank stops
# with exit 2, and the message names rank 1 and the file.
"$MPIRUN" -n 1 "$SHAKEDOWN" run --out "$TMP/m.h5" : -n 1 "$SHAKEDOWN" run --config "$TMP/missing.yaml" \
  --out "$TMP/m.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "config missing on one rank"
expect_in "$TMP/out" "rank 1 \(host [^)]+\): .*missing.yaml" "missing config names rank 1 and the file"
[[ ! -e "$TMP/m.h5" && ! -e "$TMP/m.h5.partial" ]] || fail "a file was created although rank 1 had no config"

# Ranks whose effective configs differ must not start.
"$MPIRUN" -n 1 "$SHAKEDOWN" run --set collectives.iters=3 --out "$TMP/d.h5" : \
  -n 1 "$SHAKEDOWN" run --set collectives.iters=4 --out "$TMP/d.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "configs differ between ranks"
expect_in "$TMP/out" "rank 1 \(host [^)]+\): its effective configuration differs from rank 0's" "differing config named"

"$SHAKEDOWN" run --set collectives.itres=3 >"$TMP/out" 2>&1
expect_rc 2 $? "unknown --set key"
expect_in "$TMP/out" "did you mean.*iters" "suggestion for a misspelt key"

"$SHAKEDOWN" run --phases inventory,colectives >"$TMP/out" 2>&1
expect_rc 2 $? "unknown phase"
expect_in "$TMP/out" '--phases: unknown phase "colectives"; did you mean "collectives"' "unknown phase named"

"$MPIRUN" -n 3 "$SHAKEDOWN" run --virtual-nodes 2 --out "$TMP/v.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "3 ranks as 2 virtual nodes"
expect_in "$TMP/out" "virtual_nodes.*do not divide the 3 ranks" "virtual node message"
[[ ! -e "$TMP/v.h5" ]] || fail "a file was created for an impossible layout"

"$SHAKEDOWN" run --inject explode:rank=0,phase=inventory >"$TMP/out" 2>&1
expect_rc 2 $? "unknown fault kind"
expect_in "$TMP/out" "unknown fault kind 'explode'" "fault kind message"

"$MPIRUN" -n 2 "$SHAKEDOWN" run --inject stall:rank=5,phase=inventory --out "$TMP/i.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "inject on a rank that does not exist"
expect_in "$TMP/out" "rank 5 does not exist" "inject rank message"

"$SHAKEDOWN" run --no-such-flag >"$TMP/out" 2>&1
expect_rc 2 $? "unknown flag"
"$SHAKEDOWN" frobnicate >"$TMP/out" 2>&1
expect_rc 2 $? "unknown subcommand"
"$SHAKEDOWN" >"$TMP/out" 2>&1
expect_rc 2 $? "no subcommand"
"$SHAKEDOWN" --help >"$TMP/out" 2>&1
expect_rc 0 $? "--help"
expect_in "$TMP/out" "summary" "--help lists subcommands"
"$SHAKEDOWN" --version >"$TMP/out" 2>&1
expect_rc 0 $? "--version"
expect_in "$TMP/out" "backends: cuda (yes|no), nccl .*, mpi .*Open MPI" "--version backends"

"$SHAKEDOWN" summary "$TMP/does-not-exist.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "summary of a missing file"
expect_in "$TMP/out" "does-not-exist.h5" "missing file named"
echo "not hdf5" >"$TMP/junk.h5"
"$SHAKEDOWN" summary "$TMP/junk.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "summary of a non-HDF5 file"

# Inside a job step (SLURM_PROCID, OMPI_COMM_WORLD_RANK set to another rank) without a launcher:
# commands that run alone print their own errors, and a singleton run is its own rank 0.
for var in SLURM_PROCID OMPI_COMM_WORLD_RANK; do
  env "$var=3" "$SHAKEDOWN" summary "$TMP/does-not-exist.h5" >"$TMP/out" 2>&1
  expect_rc 2 $? "summary with $var=3"
  expect_in "$TMP/out" "does-not-exist.h5" "summary error printed with $var=3"
  env "$var=3" "$SHAKEDOWN" plan --nodes 0 --ranks-per-node 1 >"$TMP/out" 2>&1
  expect_rc 2 $? "plan with a bad flag and $var=3"
  expect_in "$TMP/out" "nodes" "plan flag error printed with $var=3"
done
env SLURM_PROCID=3 "$SHAKEDOWN" run --set collectives.itres=3 >"$TMP/out" 2>&1
expect_rc 2 $? "bad --set with SLURM_PROCID=3"
expect_in "$TMP/out" "did you mean.*iters" "bad --set printed with SLURM_PROCID=3"

# A damaged run file (a fuzzer's find: a corrupt string heap makes HDF5 1.10 itself crash while
# reading it) is an error naming the file, not a crash of summary.
"$SHAKEDOWN" summary "$SHAKEDOWN_SOURCE_DIR/tests/data/runfiles/damaged_string_heap.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "summary of a damaged file"
# (Under AddressSanitizer the sanitizer catches the crash: the child aborts or exits 1.)
expect_in "$TMP/out" "^shakedown: error: cannot read '.*damaged_string_heap.h5': HDF5 (crashed|failed) \([^)]*\)[^;]* while reading it; the file is damaged" "damaged file named"

# An existing result is never overwritten.
touch "$TMP/exists.h5"
"$SHAKEDOWN" run --out "$TMP/exists.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "refusing to overwrite"
"$SHAKEDOWN" run --out "$TMP" >"$TMP/out" 2>&1
expect_rc 2 $? "--out a folder"
expect_in "$TMP/out" "the run file '$TMP' is a folder; name a file in it" "a folder is not called an existing run file"
[[ ! -s "$TMP/exists.h5" ]] || fail "existing file was modified"
# NCCL forced on ranks without GPUs: exit 2 with why, said once (not once per rank), before
# anything runs: no run file.
"$MPIRUN" -n 2 "$SHAKEDOWN" run --phases inventory,collectives --set collectives.backend=nccl \
  --out "$TMP/n.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "nccl without GPUs"
expect_in "$TMP/out" "error: collectives.backend: nccl needs a GPU on every rank, and rank 0 \(host [^)]+\) has none" "nccl message"
[[ $(grep -c "needs a GPU on every rank" "$TMP/out") -eq 1 ]] || fail "the nccl error was printed more than once"
[[ ! -e "$TMP/n.h5" && ! -e "$TMP/n.h5.partial" ]] || fail "a run file was made for a config refused up front"
pass "bad input"

# Shared helpers for the end-to-end tests (sourced). ctest sets SHAKEDOWN (the binary) and
# SHAKEDOWN_SOURCE_DIR.
set -uo pipefail
: "${SHAKEDOWN:?set by ctest: path to the shakedown binary}"
: "${SHAKEDOWN_SOURCE_DIR:?set by ctest: the repository root}"
MPIRUN="$SHAKEDOWN_SOURCE_DIR/scripts/mpirun-local.sh"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sd-e2e.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "PASS: $*"; }
# A test that cannot run here says why and exits 77, which ctest reports as skipped
# (SKIP_RETURN_CODE in tests/CMakeLists.txt).
skip() { echo "SKIP: $*"; exit 77; }

# expect_rc WANT GOT WHAT
expect_rc() { [[ "$2" -eq "$1" ]] || fail "$3: exit code $2, expected $1"; }
# expect_in FILE PATTERN WHAT (extended regex)
expect_in() { grep -Eq -- "$2" "$1" || { echo "--- $1:" >&2; cat "$1" >&2; fail "$3: no /$2/ in output"; }; }

# A root attribute of an HDF5 file, read with h5dump (independent of our own reader).
h5_root_attr() {
  h5dump -a "/$2" "$1" 2>/dev/null | sed -n 's/.*(0): "\(.*\)".*/\1/p' | head -n 1
}

# ---- fault injection from outside: background runs, their ranks' pids, files filling up ----
# run_in_background LOG CMD...: starts CMD with its output in LOG; BG_PID is its pid and
# "$LOG.rc" gets its exit code when it ends.
run_in_background() {
  local log=$1
  shift
  ("$@" >"$log" 2>&1; echo $? >"$log.rc") &
  BG_PID=$!
}
# wait_rc LOG SECONDS: waits for the background run of LOG to end; prints its exit code
# (124 when it did not end in time).
wait_rc() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    [[ -s "$1.rc" ]] && { cat "$1.rc"; return; }
    sleep 0.1
  done
  echo 124
}
# wait_for_object FILE OBJECT SECONDS: until the HDF5 file (or its .partial) has OBJECT.
wait_for_object() {
  local i f
  for ((i = 0; i < $3 * 5; i++)); do
    for f in "$1" "$1.partial"; do
      [[ -f "$f" ]] && h5ls "$f$2" >/dev/null 2>&1 && return 0
    done
    sleep 0.2
  done
  return 1
}
# rank_pid R MARKER: the pid of the shakedown process that is MPI rank R (Open MPI sets
# OMPI_COMM_WORLD_RANK in each rank's environment) and has MARKER (e.g. its --out path) on its
# command line; empty when none.
rank_pid() {
  local p
  for p in $(pgrep -x shakedown); do
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "$2" || continue
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then
      echo "$p"
      return
    fi
  done
}
# The first line shakedown printed after "writing <file>" (the message users read first).
first_message() {
  grep '^shakedown: ' "$1" | grep -v '^shakedown: writing ' | head -n 1
}

# expect_readable_incomplete FILE RANKS ROW WHAT: a file its run left unclosed (status running)
# still reads: summary exits 3 with the INCOMPLETE verdict and shows the topology row ROW (a
# regex), and h5py (when installed) reads the status and all RANKS topology rows.
expect_readable_incomplete() {
  "$SHAKEDOWN" summary "$1" >"$TMP/summary" 2>&1
  expect_rc 3 $? "summary of the file $4 left"
  expect_in "$TMP/summary" "verdict: INCOMPLETE: the run ended without closing its file" "INCOMPLETE said ($4)"
  expect_in "$TMP/summary" "$3" "topology readable in the file $4 left"
  if /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
    /usr/bin/python3 -c "import h5py,sys; f=h5py.File(sys.argv[1],'r'); assert f.attrs['status']=='running'; assert len(f['topology/ranks'])==int(sys.argv[2])" \
      "$1" "$2" || fail "h5py cannot read the file $4 left"
  fi
}

# ---- a real single-node Slurm for the test (scripts/start-slurm.sh), stopped on exit ----
# start_test_slurm START-SLURM-OPTIONS...: as root only (else the test is skipped); the cluster
# lives in $TMP/slurm, SLURM_CONF is exported, and the EXIT trap stops exactly what it started.
start_test_slurm() {
  [[ $(id -u) -eq 0 ]] || skip "needs root: scripts/start-slurm.sh runs slurmctld and slurmd as root"
  slurm_dir=$TMP/slurm
  # mktemp -d folders are 0700; munged (as the munge user) must reach its socket folder below.
  chmod 711 "$TMP"
  trap '"$SHAKEDOWN_SOURCE_DIR/scripts/start-slurm.sh" --stop --dir "$slurm_dir" || true; rm -rf "$TMP"' EXIT
  "$SHAKEDOWN_SOURCE_DIR/scripts/start-slurm.sh" --dir "$slurm_dir" "$@" >"$TMP/start.out" 2>&1 ||
    { cat "$TMP/start.out"; fail "start-slurm.sh"; }
  export SLURM_CONF=$slurm_dir/etc/slurm.conf
}

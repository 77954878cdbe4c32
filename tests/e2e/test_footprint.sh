#!/usr/bin/env bash
# Footprint: `--version`, `summary`, `plan` and a CPU-only run map no NCCL, cuBLASLt, CUDA
# runtime or UCX library (they are loaded at first use, docs/architecture.md "GPU libraries"),
# read from the loader's own account (LD_DEBUG=files) of each process; the run's ranks stay
# small (peak RSS per rank, bench/peak_rss.py). A child process that a rank forks to ask a
# library's version does not count: it ends before the rank goes on.
source "$(dirname "$0")/lib.sh"
check="$SHAKEDOWN_SOURCE_DIR/tests/e2e/check_libraries.py"
# On a node with the NVIDIA driver the inventory asks it for the GPUs and its version (libcuda,
# NVML), even on a CPU-only run; elsewhere nothing of CUDA may load.
allow=()
[[ -e /proc/driver/nvidia/version ]] && allow=(--allow 'libcuda\.so|libnvidia-ml\.so')

# loaded NAME CMD...: runs CMD with the loader's account in $TMP/NAME, then checks it.
loaded() {
  local name=$1
  shift
  mkdir -p "$TMP/$name"
  LD_DEBUG=files LD_DEBUG_OUTPUT="$TMP/$name/ld" "$@" >"$TMP/$name.out" 2>&1
  echo $? >"$TMP/$name.rc"
  python3 "$check" "$TMP/$name" "${allow[@]}" >"$TMP/$name.check" 2>&1 ||
    { cat "$TMP/$name.check"; fail "$name mapped a library it does not use"; }
}

loaded version "$SHAKEDOWN" --version
expect_rc 0 "$(cat "$TMP/version.rc")" "--version"
expect_in "$TMP/version.out" "^backends: cuda" "--version still names the backends"
loaded plan "$SHAKEDOWN" plan --nodes 2 --ranks-per-node 2
expect_rc 0 "$(cat "$TMP/plan.rc")" "plan"

# A CPU-only smoke run on 4 ranks (backends chosen explicitly, so a GPU machine runs it too). The
# devices phase's arrays are its measurement, not a library's footprint: kept small here.
mkdir -p "$TMP/run"
"$MPIRUN" -n 4 -x LD_DEBUG=files -x LD_DEBUG_OUTPUT="$TMP/run/ld" \
  python3 "$SHAKEDOWN_SOURCE_DIR/bench/peak_rss.py" --out "$TMP/rss.%r" -- \
  "$SHAKEDOWN" run --set collectives.backend=mpi --set gemm.engine=cpu \
  --set devices.host_bytes=4MiB --set devices.copy_bytes=1MiB --out "$TMP/r.h5" \
  >"$TMP/run.out" 2>&1
expect_rc 0 $? "CPU-only smoke run"
# mpirun's own processes write no account (only the ranks get LD_DEBUG through -x).
python3 "$check" "$TMP/run" "${allow[@]}" >"$TMP/run.check" 2>&1 ||
  { cat "$TMP/run.check"; fail "a rank of a CPU-only run mapped a GPU or UCX library"; }
[[ $(ls "$TMP"/run/ld.* | wc -l) -ge 4 ]] || fail "expected the loader's account of 4 ranks"
cat "$TMP"/rss.*
# Linking cuBLASLt alone added about 200 MB per rank: a guard well above today's 35-75 MB.
awk '{ if ($5 + 0 > 150) { print "rank " $3 " peak RSS " $5 " MB"; bad = 1 } } END { exit bad }' \
  "$TMP"/rss.* || fail "a CPU rank's peak RSS is above 150 MB"

loaded summary "$SHAKEDOWN" summary "$TMP/r.h5"
expect_rc 0 "$(cat "$TMP/summary.rc")" "summary"
pass "no GPU or UCX library mapped by --version, plan, summary or a CPU run"

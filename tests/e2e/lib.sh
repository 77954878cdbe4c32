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

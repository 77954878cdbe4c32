#!/usr/bin/env bash
# Bounded fuzzing: each libFuzzer target of a -DSHAKEDOWN_FUZZ=ON build runs for SECONDS on a
# scratch copy of its seed corpus (tests/fuzz/corpus/<name>/ is never changed). Any crash, leak,
# timeout or sanitizer report fails the run and leaves the input in ARTIFACTS; once the bug is
# fixed, copy that input into tests/fuzz/regressions/<name>/ so ctest replays it from then on.
# Usage: scripts/fuzz.sh BUILD_DIR [SECONDS per target, default 30] [target names...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: scripts/fuzz.sh BUILD_DIR [SECONDS] [targets...]}
seconds=${2:-30}
shift $(($# >= 2 ? 2 : 1))
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for src in "$root"/tests/fuzz/fuzz_*.cpp; do
    name=$(basename "$src" .cpp)
    targets+=("${name#fuzz_}")
  done
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/shakedown-fuzz.XXXXXX")
artifacts=${SHAKEDOWN_FUZZ_ARTIFACTS:-$build/fuzz-artifacts}
mkdir -p "$artifacts"
trap 'rm -rf "$work"' EXIT
# The sanitizers' options and suppressions are compiled into the targets
# (tests/sanitizers/defaults.cpp.in); ASAN_OPTIONS and the like may still override them.
failed=()
for name in "${targets[@]}"; do
  fuzzer=$build/tests/fuzz_$name
  [[ -x "$fuzzer" ]] || { echo "fuzz.sh: no $fuzzer (configure with -DSHAKEDOWN_FUZZ=ON)" >&2; exit 2; }
  mkdir -p "$work/$name"
  # New inputs go to the scratch folder (first); the seeds are read only.
  # A fixed seed by default: the same mutations on every CI run, so a red run is reproducible.
  if "$fuzzer" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
    -seed="${SHAKEDOWN_FUZZ_SEED:-1}" \
    -artifact_prefix="$artifacts/$name-" "$work/$name" "$root/tests/fuzz/corpus/$name" \
    >"$work/$name.log" 2>&1; then
    echo "fuzz.sh: $name: $(grep -E '^stat::number_of_executed_units' "$work/$name.log" | awk '{print $2}') runs in ${seconds} s, no findings"
  else
    echo "fuzz.sh: $name: FINDING (log below; input in $artifacts/)" >&2
    tail -n 60 "$work/$name.log" >&2
    failed+=("$name")
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz.sh: findings in: ${failed[*]}" >&2
  exit 1
fi

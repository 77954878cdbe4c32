#!/usr/bin/env bash
# Runs a fuzz target once on every input of its seed corpus and of its regressions (inputs that
# once crashed, hung or ran out of memory, kept after the fix), without fuzzing.
# Usage: replay.sh FUZZER CORPUS_DIR [REGRESSIONS_DIR]
set -euo pipefail
fuzzer=$1
dirs=()
for d in "${@:2}"; do
  [[ -d "$d" ]] && compgen -G "$d/*" >/dev/null && dirs+=("$d")
done
[[ ${#dirs[@]} -gt 0 ]] || { echo "replay.sh: no inputs in ${*:2}" >&2; exit 1; }
exec "$fuzzer" -runs=0 -timeout=60 "${dirs[@]}"

#!/usr/bin/env bash
# Runs a fuzz target once on every input of its corpus (no fuzzing): the seeds must pass and
# every input that once crashed must stay fixed. Usage: replay.sh FUZZER CORPUS_DIR
set -euo pipefail
fuzzer=$1
corpus=$2
[[ -d "$corpus" ]] && compgen -G "$corpus/*" >/dev/null || { echo "replay.sh: $corpus has no inputs" >&2; exit 1; }
exec "$fuzzer" -runs=0 "$corpus"

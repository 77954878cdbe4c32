#!/usr/bin/env bash
# The test command: install dependencies, configure (warnings are errors), build, run every test
# (unit, mpi, e2e) with ctest, and print ctest's summary. Non-zero on any failure.
# Usage: scripts/test.sh [extra ctest arguments, e.g. -L unit]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
build=${SHAKEDOWN_BUILD_DIR:-build}
jobs=$(nproc)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHAKEDOWN_WERROR=ON \
  -DSHAKEDOWN_CUDA=AUTO
cmake --build "$build" -j "$jobs"
cd "$build"
# Unit tests run in parallel; MPI and e2e tests are marked RUN_SERIAL (they oversubscribe the
# cores and measure time-outs), so ctest runs them alone.
ctest --output-on-failure -j "$jobs" "$@"

#!/usr/bin/env bash
# The test command: install dependencies, then, with warnings as errors,
#   1. build RelWithDebInfo (the CMake default) and run every test (unit, mpi, e2e) with ctest;
#   2. build Release (what scripts/demo.sh and users build: -O3 warns differently);
# and print each step's wall time. Non-zero on any failure.
# Usage: scripts/test.sh [extra ctest arguments for step 1, e.g. -L unit]
# SHAKEDOWN_BUILD_DIR (default build) and SHAKEDOWN_RELEASE_DIR (default build-release) name the
# build folders.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
started=$SECONDS
step_started=$SECONDS
step() {
  echo "test.sh: $1 ($((SECONDS - step_started)) s, $((SECONDS - started)) s in all)"
  step_started=$SECONDS
}

bash scripts/install-deps.sh
step "dependencies"

build=${SHAKEDOWN_BUILD_DIR:-build}
jobs=$(nproc)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSHAKEDOWN_WERROR=ON \
  -DSHAKEDOWN_CUDA=AUTO
cmake --build "$build" -j "$jobs"
step "RelWithDebInfo build"
# Unit tests run in parallel; MPI and e2e tests are marked RUN_SERIAL (they oversubscribe the
# cores and measure time-outs), so ctest runs them alone.
(cd "$build" && ctest --output-on-failure -j "$jobs" "$@")
step "tests (RelWithDebInfo)"

release=${SHAKEDOWN_RELEASE_DIR:-build-release}
cmake -S . -B "$release" -DCMAKE_BUILD_TYPE=Release -DSHAKEDOWN_WERROR=ON -DSHAKEDOWN_TESTS=OFF \
  -DSHAKEDOWN_CUDA=AUTO >/dev/null
cmake --build "$release" -j "$jobs"
step "Release build (warnings are errors)"
echo "test.sh: all steps passed in $((SECONDS - started)) s"

#!/usr/bin/env bash
# The test command: install dependencies, then
#   1. build Release (what scripts/demo.sh and users build: -O3 warns differently) with the
#      tests, warnings as errors, in build-release/, and run every test there (unit, mpi, e2e -
#      the README's commands among them -, gpu: skipped without a GPU);
#   2. build with clang, AddressSanitizer + UndefinedBehaviorSanitizer and the libFuzzer targets
#      (build-asan/), and run the unit, fuzz-corpus and MPI tests (3 ranks; uneven pretend
#      hosts) and the end-to-end tests that drive code the unit tests and fuzzers do not reach:
#      the smoke run with every phase on 2 virtual nodes (e2e.verdict), the audit, reports, the
#      checkpoint, storage and signal faults, planted failures, long host names, the link scan
#      and the telemetry (tests/sanitizers/README.md);
#   3. fuzz every target for SHAKEDOWN_FUZZ_SECONDS (default 6) each (scripts/fuzz.sh);
#   4. build the watchdog's and the telemetry sampler's unit tests and the MPI tests with
#      ThreadSanitizer and run them (the MPI tests on 3 ranks: the watchdog's threads, the
#      channel, clock sync, the recorder);
# and print each step's wall time. Non-zero on any failure. The sanitizer builds are -O1 (what
# the sanitizers' authors advise) with line tables only (-gline-tables-only: reports still name
# file and line, at less build time).
# Time: every tree is a unity build (CMAKE_UNITY_BUILD: several sources per compiler run, which
# parses the shared headers once). The builds never run beside the tests: the MPI and end-to-end
# tests judge timings on oversubscribed cores, and a compiler beside them, even at idle priority,
# made a rank 10x slower on CI.
# Usage: scripts/test.sh [extra ctest arguments for step 1, e.g. -L unit]
# SHAKEDOWN_BUILD_DIR (default build-release, as for scripts/demo.sh), SHAKEDOWN_ASAN_DIR
# (build-asan) and SHAKEDOWN_TSAN_DIR (build-tsan) name the build folders; SHAKEDOWN_SANITIZERS=0
# skips steps 2-4.
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

jobs=$(nproc)
sanitizers=${SHAKEDOWN_SANITIZERS:-1}
# New build folders use Ninja (a quarter less time than Makefiles on CI's 2 cores: it keeps both
# busy across targets): CMake's default generator, which a folder already configured ignores.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
unity=(-DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8)
lines_only=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O1 -gline-tables-only -DNDEBUG'
            -DCMAKE_C_FLAGS_RELWITHDEBINFO='-O1 -gline-tables-only -DNDEBUG')
asan=${SHAKEDOWN_ASAN_DIR:-build-asan}
tsan=${SHAKEDOWN_TSAN_DIR:-build-tsan}
configure_asan() {
  cmake -S . -B "$asan" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "${lines_only[@]}" "${unity[@]}" -DSHAKEDOWN_SANITIZE=address,undefined -DSHAKEDOWN_FUZZ=ON \
    -DSHAKEDOWN_CUDA=OFF -DSHAKEDOWN_BENCH=OFF >/dev/null
}
configure_tsan() {
  cmake -S . -B "$tsan" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "${lines_only[@]}" "${unity[@]}" -DSHAKEDOWN_SANITIZE=thread -DSHAKEDOWN_CUDA=OFF \
    -DSHAKEDOWN_BENCH=OFF >/dev/null
}
build_asan=(cmake --build "$asan" -j "$jobs")
build_tsan=(cmake --build "$tsan" -j "$jobs" --target unit_runtime unit_telemetry mpi_tests)

# One GCC build, Release with the tests: what scripts/demo.sh and users build (-O3 warns
# differently from -O2); the README test runs the demo, which then finds this build ready.
build=${SHAKEDOWN_BUILD_DIR:-build-release}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSHAKEDOWN_WERROR=ON -DSHAKEDOWN_TESTS=ON \
  -DSHAKEDOWN_CUDA=AUTO "${unity[@]}" >/dev/null
cmake --build "$build" -j "$jobs"
step "Release build with the tests (warnings are errors)"
# Unit tests run in parallel; MPI and e2e tests are marked RUN_SERIAL (they oversubscribe the
# cores and measure time-outs), so ctest runs them alone.
(cd "$build" && ctest --output-on-failure -j "$jobs" "$@")
step "tests (Release)"

if [[ "$sanitizers" != 0 ]]; then
  configure_asan
  "${build_asan[@]}"
  step "ASan+UBSan build (clang, with the fuzz targets)"
  # The options and suppressions are compiled into every binary (tests/sanitizers/README.md).
  (cd "$asan" && ctest --output-on-failure -j "$jobs" -L 'unit|fuzz')
  (cd "$asan" && ctest --output-on-failure \
    -R '^(mpi\.(np3|pretend_hosts_uneven)|e2e\.(audit|verdict|reports|topo_plan|long_hostname|faults_storage|faults_signals|inject_fail|checkpoint|linkscan|telemetry)$)')
  step "tests under ASan+UBSan"
  bash scripts/fuzz.sh "$asan" "${SHAKEDOWN_FUZZ_SECONDS:-6}"
  step "fuzzing (${SHAKEDOWN_FUZZ_SECONDS:-6} s per target)"

  # ThreadSanitizer on the threads beside MPI: the watchdog and its channel (unit tests of
  # runtime/ and the MPI tests, which run the watchdog, clock sync and recorder under mpirun).
  configure_tsan
  "${build_tsan[@]}"
  step "ThreadSanitizer build"
  (cd "$tsan" && ctest --output-on-failure -R '^(unit\.(runtime|telemetry)\.|mpi\.np3$)')
  step "ThreadSanitizer: watchdog and sampler unit tests, MPI tests"
fi
echo "test.sh: all steps passed in $((SECONDS - started)) s"

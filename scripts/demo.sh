#!/usr/bin/env bash
# The main job on this machine: 4 ranks as 2 virtual nodes, configs/smoke.yaml, one HDF5 file
# under results/ with its HTML report next to it (open it in a browser), and the summary. Works as root (Open MPI's root variables are set by
# scripts/mpirun-local.sh) and as a normal user.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
build=${SHAKEDOWN_BUILD_DIR:-build-release}
# A new build folder gets no tests (quicker); one that scripts/test.sh configured keeps its own.
# New folders are built with Ninja (quicker on few cores); a configured one keeps its generator.
export CMAKE_GENERATOR=${CMAKE_GENERATOR:-Ninja}
tests=()
[[ -f "$build/CMakeCache.txt" ]] || tests=(-DSHAKEDOWN_TESTS=OFF)
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release "${tests[@]}" >/dev/null
cmake --build "$build" -j "$(nproc)"
mkdir -p results
out="results/$(date -u +%Y%m%dT%H%M%SZ).h5"
set +e
scripts/mpirun-local.sh -n 4 "$build/shakedown" run --config configs/smoke.yaml \
  --virtual-nodes 2 --out "$out" --report html
rc=$?
set -e
echo
echo "demo: exit code $rc; results in $out (read it again with: $build/shakedown summary $out;" \
  "the charts: ${out%.h5}.html)"
exit $rc

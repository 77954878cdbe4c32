#!/usr/bin/env bash
# Harness overhead (issue 11 goal 2): the collectives phase's timed loop, with shakedown's MPI set
# up and its watchdog running, against a bare MPI_Allreduce loop in a separate process started
# with plain MPI_Init (and, for reference, the same bare loop at MPI_THREAD_FUNNELED: Open MPI
# locks internally at any level above MPI_THREAD_SINGLE).
#
#   bench/overhead.sh [BUILD_DIR] [ROUNDS] [ITERS]     (default build-release 5 200)
#
# Each round launches bare, funneled and harness once each (2 ranks), in that order; per size
# the median over rounds of each launch's median-of-slowest-rank time. Targets: harness - bare
# <= 0.05 us at 8 B, harness / bare <= 1.03 from 64 KiB.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${1:-build-release}
rounds=${2:-5}
iters=${3:-200}
bench="$build/bench/bench_allreduce_overhead"
if [[ ! -x "$bench" ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j "$(nproc)" --target bench_allreduce_overhead >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ((r = 1; r <= rounds; r++)); do
  for mode in bare funneled harness; do
    scripts/mpirun-local.sh -n 2 "$bench" "$mode" "$iters" | grep -v '^#' | sed "s/^/$mode /" \
      >>"$tmp/all.txt"
  done
done
echo "# harness overhead: 2 ranks, $rounds rounds x $iters iterations, float32 sum, medians"
/usr/bin/python3 - "$tmp/all.txt" <<'PY'
import sys, statistics
rows = {}
for line in open(sys.argv[1]):
    mode, size, us = line.split()
    rows.setdefault(int(size), {}).setdefault(mode, []).append(float(us))
print("%10s %9s %9s %10s %8s %9s %9s" % ("bytes", "bare_us", "funnel_us", "harness_us",
                                         "ratio", "extra_us", "fun/bare"))
for size in sorted(rows):
    m = {k: statistics.median(v) for k, v in rows[size].items()}
    print("%10d %9.3f %9.3f %10.3f %8.3f %9.3f %9.3f" % (
        size, m["bare"], m["funneled"], m["harness"], m["harness"] / m["bare"],
        m["harness"] - m["bare"], m["funneled"] / m["bare"]))
PY

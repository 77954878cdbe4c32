#!/usr/bin/env bash
# Footprint (issue 11 goal 4): peak resident memory and wall time of `--version`, `plan`,
# `summary` and each rank of a CPU run (4 ranks: the harness's phases, then the whole smoke
# run), against a bare process in the same
# run: bench_allreduce_overhead's plain-MPI_Init loop (4 ranks, a few iterations), the least an
# MPI rank on this machine costs. With NCCL and cuBLASLt loaded at first use, a CPU rank should
# cost little more than the bare one (target <= 60 MB per CPU rank; linking cuBLASLt alone
# added about 200 MB).
#
#   bench/footprint.sh [BUILD_DIR] [RUN_FILE]     (default build-release; RUN_FILE for summary,
#                                                   e.g. a 1,024-rank file from bench/gen_runfile)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${1:-build-release}
runfile=${2:-}
sd="$build/shakedown"
bare="$build/bench/bench_allreduce_overhead"
[[ -x "$sd" && -x "$bare" ]] || { echo "footprint: build $build first (scripts/demo.sh builds build-release)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rss() { python3 bench/peak_rss.py "$@"; }

echo "# footprint: peak RSS (MB) and wall time per process, this machine"
scripts/mpirun-local.sh -n 4 python3 bench/peak_rss.py --label bare-mpi-rank --out "$tmp/bare.%r" \
  -- "$bare" bare 20 8 >/dev/null
rss --label version -- "$sd" --version >/dev/null 2>>"$tmp/single"
rss --label plan -- "$sd" plan --nodes 2 --ranks-per-node 2 >/dev/null 2>>"$tmp/single"
# The harness: the phases whose workload is small (inventory, collectives up to 1 MiB, GEMMs of
# 256-1024), so what a rank holds is the harness itself: target <= 60 MB.
scripts/mpirun-local.sh -n 4 python3 bench/peak_rss.py --label harness-rank --out "$tmp/run.%r" \
  -- "$sd" run --set collectives.backend=mpi --set gemm.engine=cpu \
  --set 'phases=[inventory,collectives,gemm]' --out "$tmp/harness.h5" >/dev/null
# The whole smoke run: the devices phase's arrays (3 x 32 MiB) and the train phase's model are
# those phases' measurements, held on purpose.
scripts/mpirun-local.sh -n 4 python3 bench/peak_rss.py --label smoke-run-rank --out "$tmp/whole.%r" \
  -- "$sd" run --set collectives.backend=mpi --set gemm.engine=cpu --out "$tmp/smoke.h5" >/dev/null
rss --label summary-smoke -- "$sd" summary "$tmp/smoke.h5" >/dev/null 2>>"$tmp/single" || true
if [[ -n "$runfile" ]]; then
  rss --label "summary-$(basename "$runfile")" -- "$sd" summary "$runfile" >/dev/null \
    2>>"$tmp/single" || true
fi
cat "$tmp"/bare.* "$tmp/single" "$tmp"/run.* "$tmp"/whole.*
python3 - "$tmp" <<'PY'
import glob, statistics, sys
def mb(pattern):
    return [float(open(f).read().split()[4]) for f in glob.glob(sys.argv[1] + "/" + pattern)]
bare, run, smoke = mb("bare.*"), mb("run.*"), mb("whole.*")
print("bare MPI rank median %.1f MB; harness rank median %.1f MB, max %.1f MB (target <= 60); "
      "ratio (median) %.2f, extra %.1f MB; whole smoke run: rank median %.1f MB, max %.1f MB"
      % (statistics.median(bare), statistics.median(run), max(run),
         statistics.median(run) / statistics.median(bare),
         statistics.median(run) - statistics.median(bare), statistics.median(smoke), max(smoke)))
PY

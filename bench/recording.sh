#!/usr/bin/env bash
# Recording at scale (issue 11): how much of the collectives phase is measurement, and what rank
# 0's writing costs at 1,024 ranks.
#
#   bench/recording.sh [BUILD_DIR] [--sweep]     (default build-release; built here if missing)
#
# 1. The smoke run's collectives phase (configs/smoke.yaml), on 2 ranks as 2 virtual nodes (one
#    rank per core of a 2-core machine) and on 4 ranks as 2 virtual nodes (two ranks per core):
#    rank 0's seconds in the phase against those in the timed iterations and their preparation
#    (fills, the validation run and its check, warm-up, allocation), as the phase records them
#    on /collectives (the wall until rank 0's writer thread has written the phase's rows); 3 runs
#    each. Target: wall <= 1.15 x (timed + preparation) with a core per rank; the 4-rank runs
#    show what sharing cores adds (each sync point waits for a rank the scheduler parked).
# 2. bench/gen_runfile (the real RunWriter calls the phase makes) at 1,024 ranks on 128 nodes,
#    the default configuration (both modes, every scope, 6 collectives, 8 B .. 8 GiB, 20
#    iterations): file size (target <= 150 MB) and rank 0's write time per size-row (target
#    <= 1 ms); then `shakedown summary` of that file: time (target <= 1 s) and lines (<= 100).
# 3. With --sweep (about 2 minutes): a 256 MiB sweep, 2 ranks, world scope, the 6 collectives in
#    float32 in and out of place, warm-up 5, 20 iterations: the share of the phase's wall time
#    spent in timed iterations (target >= 70%; the 5 warm-up runs per size alone cap it at 80%).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=build-release
sweep=0
for arg in "$@"; do
  if [[ "$arg" == --sweep ]]; then sweep=1; else build=$arg; fi
done
if [[ ! -x "$build/shakedown" || ! -x "$build/bench/gen_runfile" ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSHAKEDOWN_TESTS=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)" --target shakedown gen_runfile >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# phase_times FILE LABEL: rank 0's split of the collectives phase, one line.
phase_times() {
  /usr/bin/python3 - "$1" "$2" <<'EOF'
import sys, h5py
a = h5py.File(sys.argv[1], "r")["/collectives"].attrs
wall, timed, prep, rec = (float(a[k]) for k in
                          ("seconds_wall", "seconds_timed", "seconds_prepare", "seconds_record"))
print(f"{sys.argv[2]:<16} wall {wall:7.2f} s  timed {timed:6.2f} s  preparation {prep:6.2f} s  "
      f"recording {rec:5.2f} s  wall/(timed+prep) {wall / (timed + prep):.2f}  "
      f"timed/wall {100 * timed / wall:4.1f}%")
EOF
}

echo "== 1. smoke collectives phase (2 virtual nodes; target wall/(timed+prep) <= 1.15, a core per rank)"
for ranks in 2 4; do
  for run in 1 2 3; do
    rm -f "$tmp/smoke.h5"
    scripts/mpirun-local.sh -n "$ranks" "$build/shakedown" run --config configs/smoke.yaml \
      --virtual-nodes 2 --set 'phases=[collectives]' --out "$tmp/smoke.h5" >/dev/null 2>&1 || true
    phase_times "$tmp/smoke.h5" "$ranks ranks, run $run"
  done
done

echo "== 2. synthetic 1,024-rank run file (128 nodes, default configuration)"
"$build/bench/gen_runfile" --ranks 1024 --nodes 128 --out "$tmp/scale.h5"
start=$(date +%s.%N)
"$build/shakedown" summary "$tmp/scale.h5" >"$tmp/summary.txt" 2>&1 || true
end=$(date +%s.%N)
printf 'summary: %.2f s, %d lines (targets <= 1 s, <= 100 lines)\n' \
  "$(echo "$end - $start" | bc)" "$(wc -l <"$tmp/summary.txt")"

if ((sweep)); then
  echo "== 3. 256 MiB sweep (2 ranks, world, float32 in and out of place; target timed/wall >= 70%)"
  rm -f "$tmp/sweep.h5"
  scripts/mpirun-local.sh -n 2 "$build/shakedown" run --config configs/smoke.yaml \
    --virtual-nodes 1 --set 'phases=[collectives]' --set 'collectives.sizes=8:256M' \
    --set 'collectives.scopes=[world]' --set collectives.warmup=5 --set collectives.iters=20 \
    --set 'collectives.dtypes=[float32]' --set collectives.in_place=both --set timeouts.phase_s=600 \
    --out "$tmp/sweep.h5" >/dev/null 2>&1 || true
  phase_times "$tmp/sweep.h5" "256 MiB sweep"
fi

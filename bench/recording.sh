#!/usr/bin/env bash
# Recording at scale (issue 11): how much of the collectives phase is measurement, and what rank
# 0's writing costs at 1,024 ranks.
#
#   bench/recording.sh [BUILD_DIR]      (default build-release; built here if missing)
#
# 1. The smoke run's collectives phase (4 ranks as 2 virtual nodes, configs/smoke.yaml): rank 0's
#    seconds in the phase against those in the timed iterations and their preparation (fills,
#    the validation run and its check, warm-up, allocation), as the phase records them on
#    /collectives. Target: wall <= 1.15 x (timed + preparation).
# 2. bench/gen_runfile (the real RunWriter calls the phase makes) at 1,024 ranks on 128 nodes,
#    the default configuration (both modes, every scope, 6 collectives, 8 B .. 8 GiB, 20
#    iterations): file size (target <= 150 MB) and rank 0's write time per size-row (target
#    <= 1 ms); then `shakedown summary` of that file: time (target <= 1 s) and lines (<= 100).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${1:-build-release}
if [[ ! -x "$build/shakedown" || ! -x "$build/bench/gen_runfile" ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSHAKEDOWN_TESTS=OFF >/dev/null
  cmake --build "$build" -j "$(nproc)" --target shakedown gen_runfile >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== 1. smoke collectives phase (4 ranks, 2 virtual nodes)"
scripts/mpirun-local.sh -n 4 "$build/shakedown" run --config configs/smoke.yaml --virtual-nodes 2 \
  --set 'phases=[collectives]' --out "$tmp/smoke.h5" >/dev/null 2>&1 || true
/usr/bin/python3 - "$tmp/smoke.h5" <<'EOF'
import sys, h5py
a = h5py.File(sys.argv[1], "r")["/collectives"].attrs
wall, timed, prep, rec = (float(a[k]) for k in
                          ("seconds_wall", "seconds_timed", "seconds_prepare", "seconds_record"))
print(f"wall {wall:.2f} s  timed {timed:.2f} s  preparation {prep:.2f} s  recording {rec:.2f} s")
print(f"ratio wall / (timed + preparation) = {wall / (timed + prep):.2f}  (target <= 1.15)")
EOF

echo "== 2. synthetic 1,024-rank run file (128 nodes, default configuration)"
"$build/bench/gen_runfile" --ranks 1024 --nodes 128 --out "$tmp/scale.h5"
start=$(date +%s.%N)
"$build/shakedown" summary "$tmp/scale.h5" >"$tmp/summary.txt" 2>&1 || true
end=$(date +%s.%N)
printf 'summary: %.2f s, %d lines (targets <= 1 s, <= 100 lines)\n' \
  "$(echo "$end - $start" | bc)" "$(wc -l <"$tmp/summary.txt")"

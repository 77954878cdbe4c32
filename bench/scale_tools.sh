#!/usr/bin/env bash
# The readers at 1,024 ranks (issue 14): `summary`, `compare` and `report` of synthetic
# 1,024-rank, 128-node run files from bench/gen_runfile (the real RunWriter calls; default
# configuration: both modes, world, intra_node, inter_node and 8 rails, 6 collectives, 31 sizes
# 8 B .. 8 GiB, 20 iterations; 4 GEMM shapes; 20 training steps at tp 8; one checkpoint).
# The baseline: reading every dataset of the file once with h5py (what any tool that looks at
# all of it pays). Targets: each command under 5 s here, the HTML page under 5 MB.
#
#   bench/scale_tools.sh [BUILD_DIR]      (default build-release; built here if missing)
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

"$build/bench/gen_runfile" --ranks 1024 --nodes 128 --seed 1 --out "$tmp/before.h5" | head -2
# The run after: another seed, rank 77 (node 9, local rank 5) 30% slower everywhere.
"$build/bench/gen_runfile" --ranks 1024 --nodes 128 --seed 2 --slow-rank 77 \
  --out "$tmp/after.h5" >/dev/null

seconds() {  # seconds CMD...: wall time of CMD (its output in $tmp/out), whatever it exits
  local start end
  start=$(date +%s.%N)
  "$@" >"$tmp/out" 2>&1 || true
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
read_all=$(seconds /usr/bin/python3 -c '
import sys, h5py
def visit(name, obj):
    if isinstance(obj, h5py.Dataset):
        obj[()]
h5py.File(sys.argv[1], "r").visititems(visit)' "$tmp/after.h5")
printf 'baseline: h5py reads every dataset of after.h5 in %.2f s\n' "$read_all"
report() {  # NAME SECONDS
  printf '%-40s %6.2f s  %5.2f x the read  (target < 5 s)\n' "$1" "$2" "$(echo "$2 / $read_all" | bc -l)"
}
report "summary after.h5" "$(seconds "$build/shakedown" summary "$tmp/after.h5")"
echo "  $(wc -l <"$tmp/out") lines; $(tail -n 1 "$tmp/out" | cut -c 1-100)"
report "compare before.h5 after.h5" "$(seconds "$build/shakedown" compare "$tmp/before.h5" "$tmp/after.h5")"
echo "  $(grep -E '^[0-9]+ place' "$tmp/out"); $(grep -c 'rank 77\|node 9 \|rail_5' "$tmp/out") of its lines name rank 77, node 9 or rail_5"
report "report after.h5 --baseline before.h5" \
  "$(seconds "$build/shakedown" report "$tmp/after.h5" --baseline "$tmp/before.h5" -o "$tmp/after.html")"
report "report after.h5" "$(seconds "$build/shakedown" report "$tmp/after.h5" -o "$tmp/alone.html")"
printf 'files: before.h5 %.1f MB, after.h5 %.1f MB, after.html %.2f MB (target < 5 MB), without the baseline %.2f MB\n' \
  "$(echo "$(stat -c %s "$tmp/before.h5") / 1000000" | bc -l)" \
  "$(echo "$(stat -c %s "$tmp/after.h5") / 1000000" | bc -l)" \
  "$(echo "$(stat -c %s "$tmp/after.html") / 1000000" | bc -l)" \
  "$(echo "$(stat -c %s "$tmp/alone.html") / 1000000" | bc -l)"
if command -v chromium >/dev/null && /usr/bin/python3 -c 'import PIL' 2>/dev/null; then
  /usr/bin/python3 tests/e2e/check_html.py "$tmp/after.html" "$tmp/after.png" checks compare \
    collectives gemm train checkpoint run | sed 's/^/  /'
fi

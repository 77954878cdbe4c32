#!/usr/bin/env bash
# The link scan's pair test against UCX's own ucx_perftest (Debian ucx-utils), on the same host,
# the same UCX and the same message size and window, in the same run: tag_bw (window 32 by
# default, as the scan's linkscan.window) and tag_lat (8-byte ping-pong, half round trip).
# shakedown runs 2 ranks as 2 virtual nodes (one pair, over the transport UCX picks between two
# processes of one host: shared memory), ucx_perftest a server and a client on loopback. Each
# repetition runs ucx_perftest then shakedown, so drift hits both; figures are medians over the
# repetitions. Both tools' two ends are pinned to the same two CPUs. Targets: bandwidth shakedown / ucx_perftest >= 0.9, latency <= 1.1 (a benchmark:
# the script exits 0 either way).
#
#   bench/bench_linkscan.sh [BUILD_DIR]   (default build-release)
#
# Environment: LS_BYTES (1048576), LS_WINDOW (32), LS_REPS (5 repetitions), LS_ITERS (2000
# windows per ucx_perftest run; shakedown times linkscan.reps=20 windows), LS_LAT_ITERS (20000).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${1:-build-release}
bytes=${LS_BYTES:-1048576}
window=${LS_WINDOW:-32}
reps=${LS_REPS:-5}
iters=${LS_ITERS:-2000}
lat_iters=${LS_LAT_ITERS:-20000}
command -v ucx_perftest >/dev/null ||
  { echo "bench_linkscan: ucx_perftest not found (bash scripts/install-deps.sh)" >&2; exit 2; }
[[ -x "$build/shakedown" ]] || { echo "bench_linkscan: $build/shakedown not built" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-linkscan.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
port=$((20000 + RANDOM % 10000))
# Both pairs on the same two CPUs (the first two this process may use): unpinned, the OS put the
# two ends on one CPU in some repetitions and not in others, for either tool.
read -r cpu0 cpu1 < <(taskset -cp $$ | sed 's/.*: //' | tr ',' '\n' |
  awk -F- '{for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c}' | head -n 2 | paste -sd ' ')
[[ -n "$cpu1" ]] || { echo "bench_linkscan: needs two CPUs" >&2; exit 2; }

# ucx_perftest TEST SIZE ITERS [WINDOW] -> its "Final:" line (server and client on loopback).
perftest() {
  local test=$1 size=$2 n=$3 window=${4:-}
  taskset -c "$cpu0" ucx_perftest -p "$port" >"$tmp/server" 2>&1 &
  local server=$!
  sleep 0.5
  taskset -c "$cpu1" ucx_perftest 127.0.0.1 -p "$port" -t "$test" -s "$size" -n "$n" ${window:+-O "$window"} 2>&1 |
    awk '/^Final:/ {print}'
  wait "$server" || true
}

pt_bw=() pt_lat=() sd_bw=() sd_lat=() transport=""
for ((i = 1; i <= reps; i++)); do
  # Final: iters p50_us avg_us overall_us MB/s_avg MB/s_overall rate_avg rate_overall
  pt_bw+=("$(perftest tag_bw "$bytes" "$iters" "$window" | awk '{printf "%.3f\n", $6 * 1048576 / 1e9}')")
  pt_lat+=("$(perftest tag_lat 8 "$lat_iters" | awk '{printf "%.3f\n", $3}')")
  "$root/scripts/mpirun-local.sh" -n 2 bash -c 'exec taskset -c "$(("$OMPI_COMM_WORLD_RANK" ? '"$cpu1"' : '"$cpu0"'))" "$@"' _ \
    "$build/shakedown" run --virtual-nodes 2 --phases linkscan \
    --set "linkscan.bytes=$bytes" --set "linkscan.window=$window" --set linkscan.reps=20 \
    --set linkscan.warmup=3 --set "linkscan.lat_iters=$lat_iters" --set linkscan.lat_bytes=8 \
    --out "$tmp/run$i.h5" >"$tmp/out$i" 2>&1 ||
    { cat "$tmp/out$i" >&2; echo "bench_linkscan: shakedown run $i failed" >&2; exit 1; }
  read -r bw lat transport < <(/usr/bin/python3 - "$tmp/run$i.h5" <<'PY'
import sys, h5py, numpy as np
g = h5py.File(sys.argv[1], "r")["/linkscan/rail0"]
t = g.attrs["transports"]
t = (t.decode() if isinstance(t, bytes) else t).split(": ", 1)[1].split("\n")[0]
print("%.3f %.3f %s" % (np.median(g["bw_GBps"][0]), g["lat_us"][0], t))
PY
)
  sd_bw+=("$bw")
  sd_lat+=("$lat")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
pb=$(median "${pt_bw[@]}") sb=$(median "${sd_bw[@]}")
pl=$(median "${pt_lat[@]}") sl=$(median "${sd_lat[@]}")
echo "bench_linkscan: $reps repetitions, $bytes B x $window in flight, $lat_iters round trips of 8 B; shakedown over $transport"
printf '  bandwidth GB/s  ucx_perftest tag_bw %s  shakedown %s  ratio %.2f (target >= 0.9)\n' \
  "$pb" "$sb" "$(awk -v a="$sb" -v b="$pb" 'BEGIN {print a / b}')"
printf '  latency us      ucx_perftest tag_lat %s  shakedown %s  ratio %.2f (target <= 1.1)\n' \
  "$pl" "$sl" "$(awk -v a="$sl" -v b="$pl" 'BEGIN {print a / b}')"
echo "  per repetition: tag_bw ${pt_bw[*]}; shakedown ${sd_bw[*]}; tag_lat ${pt_lat[*]}; shakedown ${sd_lat[*]}"

#!/usr/bin/env bash
# The devices phase's host copy against Debian's mbw memcpy test, on the same size in the same
# run: one rank, one thread (devices.threads=1, as mbw's single-threaded memcpy), arrays of SIZE
# MiB. mbw reports bytes copied per second; the phase's copy counts bytes read + written (STREAM),
# so its figure is halved for the ratio. Each repetition runs mbw then shakedown, so drift hits
# both; the figures are medians over repetitions. Target: shakedown / mbw >= 0.9 (a benchmark:
# the script exits 0 either way). Needs mbw (scripts/install-deps.sh).
#
#   bench/bench_devices.sh [BUILD_DIR]   (default build-release)
#
# Environment: DEV_MIB (256: array size in MiB), DEV_REPS (5), DEV_TRIALS (10 per repetition).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${1:-build-release}
mib=${DEV_MIB:-256}
reps=${DEV_REPS:-5}
trials=${DEV_TRIALS:-10}
command -v mbw >/dev/null || { echo "bench_devices: mbw not found (bash scripts/install-deps.sh)" >&2; exit 2; }
[[ -x "$build/shakedown" ]] || { echo "bench_devices: $build/shakedown not built" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-devices.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mbw_rates=() sd_rates=()
for ((i = 1; i <= reps; i++)); do
  # "AVG Method: MEMCPY Elapsed: ... MiB: 256 Copy: 7954.9 MiB/s" -> GB/s copied
  rate=$(mbw -q -t0 -n "$trials" "$mib" | awk '/^AVG/ {printf "%.2f\n", $(NF-1) * 1048576 / 1e9}')
  mbw_rates+=("$rate")
  "$root/scripts/mpirun-local.sh" -n 1 "$build/shakedown" run --phases devices \
    --set devices.threads=1 --set "devices.host_bytes=${mib}MiB" --set devices.pairs=none \
    --set "devices.trials=$trials" --out "$tmp/run$i.h5" >"$tmp/out$i" 2>&1 ||
    { cat "$tmp/out$i"; exit 1; }
  rate=$(/usr/bin/python3 -c "import h5py, numpy as n, sys; f = h5py.File(sys.argv[1]); print('%.2f' % (n.median(f['/devices/memory/copy/alone_GBps'][()]) / 2))" "$tmp/run$i.h5")
  sd_rates+=("$rate")
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
m=$(median "${mbw_rates[@]}")
s=$(median "${sd_rates[@]}")
echo "bench_devices: ${mib} MiB single-thread memcpy, bytes copied per second, median of $reps x $trials"
echo "  mbw -q -t0 -n $trials $mib       ${m} GB/s   (runs: ${mbw_rates[*]})"
echo "  shakedown devices copy alone ${s} GB/s   (runs: ${sd_rates[*]})"
awk -v s="$s" -v m="$m" 'BEGIN {printf "  ratio shakedown / mbw: %.2f (target >= 0.9)\n", s / m}'

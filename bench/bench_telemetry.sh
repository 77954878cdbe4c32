#!/usr/bin/env bash
# What the telemetry sampler costs the measurements beside it (issue 20): the same collective
# sweep with telemetry on and off, interleaved, in one run of this script. 2 ranks (each bound to
# a core of a 2-core machine; the sampler thread of node 0's first rank shares rank 0's core, as it
# would a CPU rank's on a real node), world scope, all_reduce float32 out of place, 8 B .. 1 MiB,
# 4,000 iterations per size (about 1.5 s of sweep per run: 15 samples of the sampler). Per size
# the median iteration (the slowest rank's) of each run; the
# ratio on/off per size band: per size the median over runs of each, their ratio, the median
# over the band's sizes; beside it the same ratio between odd and even runs with telemetry off. Also the sampler's own time per
# sample from the file (host signals here; with SHAKEDOWN_TEST_NVML_LIBRARY and FAKE_NVML_GPUS=8
# also 8 stand-in GPUs: the stand-in answers at once, so a real NVML adds its own call times).
# Target: on/off within the run-to-run spread (a benchmark: exits 0 either way).
#
#   bench/bench_telemetry.sh [BUILD_DIR]     (default build-release)
#
# Environment: TEL_REPS (7 pairs of runs), TEL_INTERVAL_MS (100).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${1:-build-release}
reps=${TEL_REPS:-7}
interval=${TEL_INTERVAL_MS:-100}
[[ -x "$build/shakedown" ]] || { echo "bench_telemetry: $build/shakedown not built" >&2; exit 2; }
/usr/bin/python3 -c 'import h5py' 2>/dev/null ||
  { echo "bench_telemetry: needs Debian's python3-h5py (bash scripts/install-deps.sh)" >&2; exit 2; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-telemetry.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
common=(--phases collectives --set 'collectives.scopes=[world]' --set 'collectives.ops=[all_reduce]'
        --set 'collectives.dtypes=[float32]' --set collectives.in_place=no
        --set collectives.sizes=8:1M --set collectives.iters=4000 --set collectives.warmup=100
        --set collectives.backend=mpi --set "telemetry.interval_ms=$interval")
for ((i = 1; i <= reps; i++)); do
  for mode in on off; do
    enabled=true
    [[ $mode == off ]] && enabled=false
    "$root/scripts/mpirun-local.sh" -n 2 --bind-to core "$build/shakedown" run "${common[@]}" \
      --set "telemetry.enabled=$enabled" --out "$tmp/$mode$i.h5" >"$tmp/$mode$i.log" 2>&1 || true
    [[ -f "$tmp/$mode$i.h5" ]] || { cat "$tmp/$mode$i.log"; exit 1; }
  done
done
/usr/bin/python3 - "$tmp" "$reps" "$interval" <<'PY'
import sys, statistics as st, h5py, numpy as np
tmp, reps, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
group = "/collectives/world/all_reduce/float32_sum/out_of_place"
def medians(path):
    f = h5py.File(path, "r")
    return f[group + "/sizes"][()], f[group + "/time_med_us"][()]
bands = {"8 B .. 1 KiB": (0, 1024), "2 KiB .. 64 KiB": (1025, 65536), "128 KiB .. 1 MiB": (65537, 1 << 20)}
sizes = medians("%s/on1.h5" % tmp)[0]
on = np.array([medians("%s/on%d.h5" % (tmp, i))[1] for i in range(1, reps + 1)])
off = np.array([medians("%s/off%d.h5" % (tmp, i))[1] for i in range(1, reps + 1)])
# Per size: the median over runs of each mode; their ratio. The spread: the same ratio between
# the odd and the even "off" runs (what two sets of runs of the same binary differ by here).
ratio = np.median(on, axis=0) / np.median(off, axis=0)
noise = np.median(off[0::2], axis=0) / np.median(off[1::2], axis=0)
print("# telemetry on/off, 2 ranks, all_reduce float32, per size the median over %d runs each" % reps)
print("%-18s %10s %10s %8s %14s" % ("sizes", "on_us", "off_us", "on/off", "off/off spread"))
for band, (lo, hi) in bands.items():
    sel = (sizes >= lo) & (sizes <= hi)
    print("%-18s %10.2f %10.2f %8.3f %14.3f" % (band, np.median(np.median(on, axis=0)[sel]),
          np.median(np.median(off, axis=0)[sel]), np.median(ratio[sel]), np.median(noise[sel])))
cost = [float(h5py.File("%s/on%d.h5" % (tmp, i), "r")["/telemetry/node0"].attrs["sample_cost_us"]) for i in range(1, reps + 1)]
print("sampler: %.0f us per sample (median of runs), every %.0f ms: %.3f%% of one core" % (st.median(cost), interval, st.median(cost) / (interval * 10)))
PY

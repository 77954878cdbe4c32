#!/usr/bin/env bash
# Checkpoint write/restore bandwidth against fio: the checkpoint phase (file_per_process through
# POSIX, then one shared file through MPI-IO) against fio doing the same I/O on the same folder:
# RANKS jobs, one file of BYTES per job written in BLOCK pieces with pwrite (psync) and fsynced
# at the end (--end_fsync=1, inside fio's runtime as shakedown's fsync is inside its timed
# region), then read back after the page cache was dropped (fio's invalidate=1, fadvise DONTNEED,
# as shakedown does after its write). Aggregate bandwidth: fio's group bw_bytes (all bytes / the
# longest job's runtime), shakedown's write_GBps / read_GBps (all bytes / (latest end - earliest
# start), IOR-style) from its JSON report. fio runs with fallocate=none: shakedown does not
# preallocate, so neither does the baseline.
#
#   bench/bench_checkpoint.sh [DIR] [BUILD_DIR]   (default DIR: ${TMPDIR:-/tmp}; build-release)
#
# Environment: CKPT_DIR (instead of the DIR argument), CKPT_RANKS (4), CKPT_BYTES (64MiB per
# rank), CKPT_BLOCK (4MiB), CKPT_REPS (3), CKPT_ITERS (shakedown's checkpoint.iters per launch,
# 1: one write and one restore per launch, as one fio write and one fio read). Sizes take K/KiB,
# M/MiB, G/GiB (all powers of 1024). All I/O goes to a fresh folder made under DIR, removed at
# the end (nothing else under DIR is touched). Each repetition runs fio write, fio read,
# shakedown file_per_process, shakedown mpiio shared_file, in that order, so drift hits all of
# them; each figure is the median over repetitions, and each ratio also gives its range over
# the repetitions (a range that straddles the target is "inconclusive", not a verdict).
# Targets: shakedown fpp / fio >= 0.9 for write and for read (a benchmark: the script exits 0
# either way). Needs fio
# (scripts/install-deps.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
base=${1:-${CKPT_DIR:-${TMPDIR:-/tmp}}}
build=${2:-build-release}
ranks=${CKPT_RANKS:-4}
reps=${CKPT_REPS:-3}
iters=${CKPT_ITERS:-1}
sd="$build/shakedown"
py=/usr/bin/python3
[[ -x "$py" ]] || py=python3

command -v fio >/dev/null ||
  { echo "bench_checkpoint: fio is not installed: run scripts/install-deps.sh" >&2; exit 2; }
[[ -x "$sd" ]] ||
  { echo "bench_checkpoint: no $sd: build first (scripts/demo.sh builds build-release)" >&2; exit 2; }
[[ $ranks =~ ^[1-9][0-9]*$ && $reps =~ ^[1-9][0-9]*$ && $iters =~ ^[1-9][0-9]*$ ]] ||
  { echo "bench_checkpoint: CKPT_RANKS, CKPT_REPS and CKPT_ITERS are whole numbers >= 1" >&2; exit 2; }
[[ -d "$base" && -w "$base" ]] ||
  { echo "bench_checkpoint: $base is not a writable folder" >&2; exit 2; }

bytes_of() {  # bytes_of SIZE: 64MiB, 64M, 4096 -> bytes
  [[ $1 =~ ^([0-9]+)([KMGT]?)(iB)?$ ]] ||
    { echo "bench_checkpoint: size '$1': a whole number with K/KiB, M/MiB, G/GiB or T/TiB" >&2; return 2; }
  local n=${BASH_REMATCH[1]}
  case ${BASH_REMATCH[2]} in
    K) n=$((n << 10)) ;; M) n=$((n << 20)) ;; G) n=$((n << 30)) ;; T) n=$((n << 40)) ;;
  esac
  echo "$n"
}
human() {  # human BYTES: the largest unit that divides it
  local n=$1 u
  for u in B KiB MiB GiB; do
    { ((n % 1024 != 0)) || [[ $u == GiB ]]; } && { echo "$n $u"; return; }
    n=$((n / 1024))
  done
}
bytes=$(bytes_of "${CKPT_BYTES:-64MiB}")
block=$(bytes_of "${CKPT_BLOCK:-4MiB}")
((bytes > 0 && block > 0 && block <= bytes)) ||
  { echo "bench_checkpoint: need 0 < CKPT_BLOCK <= CKPT_BYTES" >&2; exit 2; }

# Everything this script writes lives under $work, and only $work is removed.
work=$(mktemp -d "$base/bench-checkpoint.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir "$work/reports" "$work/ckpt"
fstype=$(findmnt -n -o FSTYPE -T "$work" 2>/dev/null || stat -f -c %T "$work")

fio_run() {  # fio_run write|read FOLDER JSON
  local extra=(--end_fsync=1 --fallocate=none)
  [[ $1 == read ]] && extra=(--invalidate=1)
  fio --name=ckpt --directory="$2" --rw="$1" --bs="$block" --size="$bytes" --numjobs="$ranks" \
    --ioengine=psync "${extra[@]}" --group_reporting --output-format=json >"$3" 2>"$3.err" ||
    { cat "$3.err" "$3" >&2; echo "bench_checkpoint: fio $1 failed" >&2; exit 1; }
  "$py" - "$3" "$1" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["jobs"][0][sys.argv[2]]
print("%.6f" % (g["bw_bytes"] / 1e9))
PY
}

sd_run() {  # sd_run NAME [--set ...]: prints write_GBps read_GBps
  local name=$1
  shift
  local rc=0
  scripts/mpirun-local.sh -n "$ranks" "$sd" run --phases checkpoint \
    --set "checkpoint.bytes_per_rank=$bytes" --set "checkpoint.block_size=$block" \
    --set "checkpoint.iters=$iters" --set "checkpoint.dir=$work/ckpt" "$@" \
    --report json --out "$work/reports/$name.h5" >"$work/reports/$name.log" 2>&1 || rc=$?
  # The verdict's exit code (a WARN or FAIL on this machine) does not void the measurement.
  [[ -s "$work/reports/$name.json" ]] ||
    { cat "$work/reports/$name.log" >&2; echo "bench_checkpoint: shakedown $name failed (exit $rc)" >&2; exit 1; }
  "$py" - "$work/reports/$name.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["checkpoint"]
print("%.6f %.6f" % (c["write_GBps"], c["read_GBps"]))
PY
}

echo "# checkpoint write/restore vs fio: $ranks ranks x $(human "$bytes"), $(human "$block") blocks," \
  "$reps repetitions (shakedown $iters iteration(s) per launch), $fstype at $base, $(nproc) cores"
printf '%-4s %-24s %10s %10s\n' rep run write_GB/s read_GB/s
: >"$work/all.txt"
for ((r = 1; r <= reps; r++)); do
  mkdir "$work/fio-$r"
  fw=$(fio_run write "$work/fio-$r" "$work/reports/fio-w-$r.json")
  fr=$(fio_run read "$work/fio-$r" "$work/reports/fio-r-$r.json")
  rm -rf -- "${work:?}/fio-$r"
  echo "fio $fw $fr" >>"$work/all.txt"
  out=$(sd_run "fpp-$r")
  read -r sw srd <<<"$out"
  echo "fpp $sw $srd" >>"$work/all.txt"
  out=$(sd_run "mpiio-$r" --set checkpoint.layout=shared_file --set checkpoint.api=mpiio)
  read -r mw mrd <<<"$out"
  echo "mpiio $mw $mrd" >>"$work/all.txt"
  printf '%-4s %-24s %10.3f %10.3f\n' "$r" fio "$fw" "$fr" "$r" "shakedown fpp posix" "$sw" "$srd" \
    "$r" "shakedown shared mpiio" "$mw" "$mrd"
done

"$py" - "$work/all.txt" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    name, w, r = line.split()
    runs.setdefault(name, []).append((float(w), float(r)))
med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))
       for k, v in runs.items()}
print("median over %d repetitions:" % len(runs["fio"]))
print("%-30s %10s %10s" % ("", "write_GB/s", "read_GB/s"))
for key, label in (("fio", "fio (psync, end_fsync)"), ("fpp", "shakedown fpp posix"),
                   ("mpiio", "shakedown shared_file mpiio")):
    print("%-30s %10.3f %10.3f" % (label, *med[key]))
ratio = [med["fpp"][i] / med["fio"][i] for i in (0, 1)]
mpi = [med["mpiio"][i] / med["fpp"][i] for i in (0, 1)]
print("%-30s %10.3f %10.3f" % ("shakedown fpp / fio", *ratio))
print("%-30s %10.3f %10.3f" % ("mpiio / fpp", *mpi))
# Each repetition's own ratio (fio and shakedown ran back to back in it): the spread says how
# far the median can be trusted; a range that straddles the target is no verdict either way.
for i, what in enumerate(("write", "read")):
    per = [f[i] / g[i] for f, g in zip(runs["fpp"], runs["fio"]) if g[i] > 0]
    lo, hi = min(per), max(per)
    word = ("target met" if lo >= 0.9 else "below target" if hi < 0.9 else
            "inconclusive (the repetitions straddle the target; run more, CKPT_REPS)")
    print("%s: %s shakedown fpp / fio = %.2f, per repetition %.2f-%.2f (target >= 0.90)" %
          (word, what, ratio[i], lo, hi))
PY

#!/usr/bin/env bash
# The collectives phase end to end on 4 ranks as 2 virtual nodes: every scope, every collective,
# two dtypes, both modes; the HDF5 shapes; the tables in the summary.
source "$(dirname "$0")/lib.sh"
out="$TMP/coll.h5"
"$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 --phases inventory,collectives \
  --set collectives.sizes=8:512 --set collectives.dtypes=float32,bfloat16 \
  --set collectives.iters=3 --set collectives.warmup=1 \
  --set collectives.intra_node_link_GBps=0.000001 --out "$out" >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
expect_rc 0 $rc "collectives run (stderr: $(tail -n 5 "$TMP/stderr"))"
g=/collectives/world/all_reduce/float32_sum/out_of_place
# 8 B .. 512 B doubling = 7 sizes; 3 iterations; 4 ranks.
h5dump -H -d $g/time_us "$out" | grep -q 'SIMPLE { ( 7, 3, 4 )' || fail "$g/time_us is not [7, 3, 4]"
h5dump -H -d $g/arrival_us "$out" | grep -q 'SIMPLE { ( 7, 3, 4 )' || fail "$g/arrival_us is not [7, 3, 4]"
h5dump -H -d $g/wrong "$out" | grep -q 'SIMPLE { ( 7, 4 )' || fail "$g/wrong is not [7, 4]"
h5dump -H -d $g/busbw_GBps "$out" | grep -q 'SIMPLE { ( 7 )' || fail "$g/busbw_GBps is not [7]"
h5dump -n "$out" >"$TMP/listing"
for scope in world intra_node inter_node rail_0 rail_1; do
  for op in all_reduce all_gather reduce_scatter broadcast all_to_all send_recv; do
    grep -q "/collectives/$scope/$op/bfloat16[a-z_]*/in_place/time_us" "$TMP/listing" ||
      fail "no $scope/$op bfloat16 in_place group"
  done
done
# rail_1 ran on local rank 1 only: its columns are ranks 1 and 3 (schema 3), each with a time.
r1=/collectives/rail_1/all_reduce/float32_sum/out_of_place
h5dump -d $r1/ranks "$out" | tr -d ' \n' | grep -q '(0):1,3}' || { h5dump -d $r1/ranks "$out"; fail "rail_1's columns should be ranks 1 and 3"; }
h5dump -H -d $r1/time_us "$out" | grep -q 'SIMPLE { ( 7, 3, 2 )' || fail "$r1/time_us is not [7, 3, 2]"
h5dump -d $r1/time_us -s "0,0,0" -c "1,1,2" "$out" >"$TMP/rail1"
grep -Eq '\(0,0,0\): [0-9.e+-]+, [0-9.e+-]+' "$TMP/rail1" || { cat "$TMP/rail1"; fail "rail_1 should have a time for both of its ranks"; }
# The per-size tables are the detailed summary's.
"$SHAKEDOWN" summary --detail "$out" >"$TMP/detail" 2>&1
expect_in "$TMP/detail" "world all_reduce float32_sum out_of_place \(4 ranks, busbw = algbw x 1.500\)" "world table"
expect_in "$TMP/detail" "intra_node all_gather bfloat16 in_place \(2 ranks" "intra-node table"
# Every intra-node busbw beats the (absurdly low) configured link rate: kept, marked, explained.
expect_in "$TMP/detail" "^ +512 B .*[0-9]! +0$" "busbw above the link rate is marked"
expect_in "$TMP/detail" "results show a busbw above the link rate configured" "link-rate note"
expect_in "$TMP/stdout" "verdict: PASS" "verdict"

# Rows of at least 1 KiB (80 iterations x 4 ranks of float32) are one compressed chunk each, which
# the recorder deflates itself (libdeflate) and writes whole: h5py inflates them with HDF5's own
# filters, and every sample comes back a finite time with the 12 significant bits stored.
out="$TMP/rows.h5"
"$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 --phases collectives \
  --set collectives.scopes=[world] --set collectives.ops=[all_reduce] \
  --set collectives.dtypes=[float32] --set collectives.sizes=8:64 --set collectives.in_place=no \
  --set collectives.iters=80 --out "$out" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 0 $? "collectives run with 80 iterations (stderr: $(tail -n 5 "$TMP/stderr"))"
/usr/bin/python3 - "$out" <<'PY' || fail "whole-row chunks read back with h5py"
import sys, h5py, numpy as np
g = h5py.File(sys.argv[1], "r")["/collectives/world/all_reduce/float32_sum/out_of_place"]
for name in ("time_us", "wait_us"):
    d = g[name]
    assert d.shape == (4, 80, 4), (name, d.shape)
    assert d.chunks == (1, 80, 4) and d.compression == "gzip" and d.shuffle, (name, d.chunks)
    v = d[()]
    assert np.isfinite(v).all(), name
    low = v.view(np.uint32) & np.uint32((1 << 12) - 1)  # 12 significant bits: the rest is 0
    assert (low == 0).all(), (name, v[low != 0][:5])
t = g["time_us"][()]
assert (t > 0).all() and (t < 1e6).all(), t.min()
PY

# Rank 0 bound to one CPU: its writer thread runs on the host's CPUs that no rank is bound to, or,
# with none (as many ranks as CPUs, each bound to one), rank 0 writes inline. The file says where
# (/collectives recording and recording_cpus) and where rank 0 was bound (/topology/ranks).
cpus=$(nproc --all)
if ((cpus >= 2)) && [[ $(nproc) == "$cpus" ]]; then
  # placement RANKS: "recording|recording_cpus|rank 0's CPUs|apart or shared" of a bound run
  placement() {
    local file="$TMP/bound$1.h5"
    "$MPIRUN" -n "$1" --bind-to hwthread "$SHAKEDOWN" run --phases collectives \
      --set collectives.scopes=[world] --set collectives.ops=[all_reduce] \
      --set collectives.dtypes=[float32] --set collectives.sizes=8:64 --out "$file" \
      >"$TMP/bound$1.log" 2>&1 || { cat "$TMP/bound$1.log" >&2; return 1; }
    /usr/bin/python3 - "$file" <<'PY'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
a = f["/collectives"].attrs
rank0 = f["/topology/ranks"][0]["cpus"]
rank0 = rank0.decode() if isinstance(rank0, bytes) else str(rank0)
def cpus(text):
    out = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out
apart = "apart" if not cpus(a["recording_cpus"]) & cpus(rank0) else "shared"
print(f"{a['recording']}|{a['recording_cpus']}|{rank0}|{apart}")
PY
  }
  one=$(placement 1) || fail "bound run on 1 rank"
  IFS='|' read -r mode where bound apart <<<"$one"
  [[ $mode == background && -n $where && $where != "$bound" && $apart == apart ]] ||
    fail "rank 0 bound to CPU $bound of $cpus should write on a free CPU (got: $one)"
  if ((cpus <= 4)); then
    all=$(placement "$cpus") || fail "bound run on $cpus ranks"
    [[ $all == "inline||"* ]] || fail "with every CPU bound to a rank, rank 0 should write inline (got: $all)"
  fi
else
  echo "SKIP: bound writer placement needs 2 CPUs or more, all usable (this host: $(nproc) of $cpus)"
fi
pass "collectives sweep"

#!/usr/bin/env bash
# The link scan with real mpirun and real UCX: ranks as virtual nodes of one rank each (pretend
# nodes on one host: their links are shared memory, or loopback TCP with UCX_TLS=tcp), not a
# multi-node cluster. Every pair tested once per all_pairs pass, datasets against
# scripts/schema.json, transports recorded; a slowed node is convicted and no other; a slowed
# link is convicted and no node, its failed retest run again; a rank that stops before the
# retests leaves the scan in the file and the suspect unresolved; MPI as the transport; bad keys
# and faults are exit 2 naming them; one node says there is no pair to test.
source "$(dirname "$0")/lib.sh"
# Shared cores: a descheduled rank halves a pair's figure, so the pass marks are loosened here.
small=(--phases linkscan --set linkscan.bytes=256KiB --set linkscan.window=8
       --set linkscan.reps=3 --set linkscan.lat_iters=50 --set linkscan.bw_fraction=0.25
       --set linkscan.lat_factor=20)

"$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 4 "${small[@]}" --out "$TMP/a.h5" \
  >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
[[ $rc -eq 0 ]] || { cat "$TMP/stdout" "$TMP/stderr"; fail "4 virtual nodes over UCX: exit $rc"; }
expect_in "$TMP/stdout" "^linkscan \(ucx( from GPU memory)?, all_pairs; 256 KiB x 8 in flight, 3 window\(s\) per pair" "block title"
expect_in "$TMP/stdout" "rail 0: 6 pair\(s\) of 4 nodes, best [0-9.e+]+ GB/s" "rail line"
expect_in "$TMP/stdout" "\[PASS\] linkscan.coverage" "coverage"
# Without a GPU, auto keeps the messages in host memory and says why (GPU memory is used only
# where UCX reports it can send it).
no_gpu=0
nvidia-smi -L >/dev/null 2>&1 || no_gpu=1
if ((no_gpu)); then
  expect_in "$TMP/stdout" "linkscan.coverage: .*; host memory \(auto: rank 0 has no GPU\)\)" "host memory and why"
fi
expect_in "$TMP/stdout" "tested 6 node pairs on 4 ranks / 4 nodes" "tested"
/usr/bin/python3 "$SHAKEDOWN_SOURCE_DIR/tests/e2e/check_schema.py" "$TMP/a.h5" \
  "$SHAKEDOWN_SOURCE_DIR/scripts/schema.json" >"$TMP/schema" 2>&1 ||
  { cat "$TMP/schema"; fail "the linkscan run's file against scripts/schema.json"; }
/usr/bin/python3 - "$TMP/a.h5" <<'PY' || fail "pairs and shapes"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
g = f["/linkscan/rail0"]
assert list(g["nodes"][()]) == [0, 1, 2, 3], g["nodes"][()]
assert list(g["ranks"][()]) == [0, 1, 2, 3], g["ranks"][()]
first = g["pass"][()] == 1
pairs = [tuple(p) for p in g["pairs"][()][first]]
assert sorted(pairs) == [(a, b) for a in range(4) for b in range(a + 1, 4)], pairs
assert g["bw_GBps"].shape == (len(g["pass"][()]), 3), g["bw_GBps"].shape
assert (g["bw_GBps"][()][first] > 0).all(), "a pair without bandwidth"
assert (g["lat_us"][()][first] > 0).all(), "a pair without latency"
rounds = g["round"][()][first]
for r in set(rounds):  # each node at most once per round
    nodes = [n for p, rr in zip(pairs, rounds) if rr == r for n in p]
    assert len(nodes) == len(set(nodes)), (r, nodes)
t = g.attrs["transports"]
t = t.decode() if isinstance(t, bytes) else t
assert t.count("\n") == len(g["pass"][()]) and "?" not in t, t
assert f["/linkscan"].attrs["transport"] in ("ucx", b"ucx")
PY
"$SHAKEDOWN" summary --detail "$TMP/a.h5" >"$TMP/detail"
expect_in "$TMP/detail" "scan   round 0  node 0 - node 3: [0-9.e+]+ GB/s, [0-9.e+]+ us \(p99 [0-9.e+]+ us\) over [a-z0-9_]+/" "--detail names each pair's transport"

# Node 2 of 6 slowed 10x: node 2 convicted, no other node, no link. (6 nodes, not 4: on shared
# cores a descheduled rank can make one more pair a suspect, and 4 nodes then leave no good
# partner to retest with.)
"$MPIRUN" -n 6 "$SHAKEDOWN" run --virtual-nodes 6 "${small[@]}" \
  --inject slow:node=2,phase=linkscan,factor=10 --out "$TMP/b.h5" >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
[[ $rc -eq 0 || $rc -eq 1 ]] || { cat "$TMP/stderr"; fail "slowed node: exit code $rc"; }
expect_in "$TMP/stdout" "\[(WARN|FAIL)\] linkscan.nodes: node 2 \(host .*\) is slow with every partner: slow in 5 of its 5 scan pair\(s\)" "slow node convicted"
# Only the planted node is convicted (on shared cores a descheduled pair may stay an unresolved
# suspect: that is a warning of its own, not a conviction).
"$SHAKEDOWN" summary --detail "$TMP/b.h5" >"$TMP/detail"
if grep -E "node [013-5] \(host [^)]*\) is slow with every partner|node [013-5] \(host [^)]*\): convicted|\) is slow \(" "$TMP/detail"; then
  fail "a node other than the slowed one, or a link, was convicted"
fi

# The link 0-1 of 6 nodes slowed 10x: that link, and no node.
"$MPIRUN" -n 6 "$SHAKEDOWN" run --virtual-nodes 6 "${small[@]}" \
  --inject slow:link=1-0,phase=linkscan,factor=10 --out "$TMP/c.h5" >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
[[ $rc -eq 0 || $rc -eq 1 ]] || { cat "$TMP/stderr"; fail "slowed link: exit code $rc"; }
expect_in "$TMP/stdout" "\[(WARN|FAIL)\] linkscan.links: the link between node 0 \(host .*\) and node 1 \(host .*\) is slow" "slow link convicted"
"$SHAKEDOWN" summary --detail "$TMP/c.h5" >"$TMP/detail"
if grep -E "is slow with every partner|^    node [0-9]+ \(host [^)]*\): convicted" "$TMP/detail"; then
  fail "a node was convicted for a slow link"
fi
# The slowed pair fails its retest, so it runs once more (pass 3) and fails again.
expect_in "$TMP/detail" "^    again  round [0-9]+  node 0 - node 1: " "the failed retest run again"
expect_in "$TMP/stdout" "linkscan.coverage: .* retest pair\(s\) and [0-9]+ failed retest\(s\) run again of a budget of 24" "repeats counted"

# A rank that stops before the retests: the watchdog ends the run (exit 3); the scan, appended as
# soon as it was measured, is in the file, and the slowed node stays a suspect, saying why.
"$MPIRUN" -n 6 "$SHAKEDOWN" run --virtual-nodes 6 "${small[@]}" --set timeouts.phase_s=3 \
  --inject slow:node=2,phase=linkscan,factor=10 --inject stall:rank=1,phase=linkscan,step=2,seconds=30 \
  --out "$TMP/stop.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 3 $? "a rank stalled before the retests"
expect_in "$TMP/stderr" "rank 1 .*did not reach 'linkscan rail 0 retests'" "the watchdog names the rank and the step"
"$SHAKEDOWN" summary "$TMP/stop.h5" >"$TMP/stopped"
expect_in "$TMP/stopped" "rail 0: 15 pair\(s\) of 6 nodes" "the scan kept"
expect_in "$TMP/stopped" "\[WARN\] linkscan.nodes: node 2 \(host .*\) was slow with several partners .* not convicted: the run stopped before its retests" "a suspect, not a conviction"
expect_in "$TMP/stopped" "linkscan.coverage: .*; the run stopped before the retests of 1 rail\(s\)" "coverage says so"
h5dump -a /linkscan/rail0/passes "$TMP/stop.h5" | grep -q "(0): 1" || fail "/linkscan/rail0 passes should be 1"

# 6 nodes over loopback TCP (UCX_TLS): the transport recorded is tcp; random rounds, seeded;
# both directions at once.
UCX_TLS=tcp,self "$MPIRUN" -n 6 -x UCX_TLS "$SHAKEDOWN" run --virtual-nodes 6 "${small[@]}" \
  --set linkscan.schedule=random --set linkscan.rounds=4 --set linkscan.seed=7 \
  --set linkscan.bidirectional=true --out "$TMP/d.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 0 $? "6 virtual nodes over UCX tcp"
expect_in "$TMP/stdout" "^linkscan \(ucx( from GPU memory)?, random; 256 KiB x 8 in flight each way, 3 window\(s\) per pair; GB/s both directions together" "bidirectional title"
h5dump -a /linkscan/bidirectional "$TMP/d.h5" | grep -q "(0): 1" || fail "bidirectional is recorded"
"$SHAKEDOWN" summary --detail "$TMP/d.h5" >"$TMP/detail"
expect_in "$TMP/detail" "over tcp/" "tcp recorded"
expect_in "$TMP/detail" "\[PASS\] linkscan.transport: every pair of a rail used the same transport \(tcp/" "transport check"
h5dump -a /linkscan/seed "$TMP/d.h5" | grep -q "(0): 7" || fail "the seed is recorded"

# MPI as the transport.
"$MPIRUN" -n 3 "$SHAKEDOWN" run --virtual-nodes 3 "${small[@]}" --set linkscan.transport=mpi \
  --out "$TMP/e.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 0 $? "transport mpi"
expect_in "$TMP/stdout" "^linkscan \(mpi, all_pairs" "mpi title"
expect_in "$TMP/stdout" "rail 0: 3 pair\(s\) of 3 nodes" "3 nodes: 3 pairs"
"$MPIRUN" -n 2 "$SHAKEDOWN" run --virtual-nodes 2 "${small[@]}" --set linkscan.transport=mpi \
  --set linkscan.bidirectional=true --set linkscan.concurrent=false --out "$TMP/e2.h5" \
  >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 0 $? "transport mpi, both directions"
expect_in "$TMP/stdout" "rail 0: 1 pair\(s\) of 2 nodes, best [0-9.e+]+ GB/s" "mpi bidirectional pair measured"
expect_in "$TMP/stdout" "each way, 3 window\(s\) and 50 round trips per pair, one pair at a time" "one pair at a time said"
# Two nodes are one pair: nothing is localised, and nothing passes for it.
"$SHAKEDOWN" summary --detail "$TMP/e2.h5" >"$TMP/detail" 2>&1
for check in nodes links; do
  expect_in "$TMP/detail" "\[SKIP\] linkscan\.$check: 2 node\(s\): one pair, compared only with itself, cannot be localised" "two nodes: linkscan.$check skipped"
done
expect_in "$TMP/detail" "\[WARN\] linkscan.coverage: .*; not judged: with 2 nodes each rail's one pair is compared only with itself.*\(measured: rail 0 [0-9.]+ GB/s\)" "two nodes: the scan says it judged nothing"
expect_in "$TMP/detail" "\[SKIP\] linkscan.transport: one pair per rail" "two nodes: no transport to compare"

# One node: nothing to pair, said so.
"$MPIRUN" -n 2 "$SHAKEDOWN" run "${small[@]}" --out "$TMP/f.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 0 $? "one node"
"$SHAKEDOWN" summary --detail "$TMP/f.h5" >"$TMP/detail"
expect_in "$TMP/detail" "\[SKIP\] linkscan.coverage: one node: the link scan tests pairs of nodes" "one node says why"

# Bad input: exit 2, naming the key or fault.
"$SHAKEDOWN" run --phases linkscan --set linkscan.bytes=2GiB --out "$TMP/x.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "bytes over 1 GiB"
expect_in "$TMP/out" "linkscan.bytes: must be at most 1GiB" "bytes named"
"$SHAKEDOWN" run --phases linkscan --set 'linkscan.rails=mlx5_0:1,bad name' --out "$TMP/x.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "bad rails"
expect_in "$TMP/out" "linkscan.rails.*UCX device names" "rails named"
for spec in slow:rank=1,phase=linkscan slow:link=1-1,phase=linkscan slow:node=1,phase=gemm; do
  "$SHAKEDOWN" run --virtual-nodes 1 --phases linkscan,gemm --inject "$spec" --out "$TMP/x.h5" >"$TMP/out" 2>&1
  expect_rc 2 $? "--inject $spec"
  expect_in "$TMP/out" "--inject $spec" "--inject $spec named"
done
# GPU memory asked for where there is none, or over MPI: exit 2 naming the key and why.
if ((no_gpu)); then
  "$MPIRUN" -n 2 "$SHAKEDOWN" run --virtual-nodes 2 "${small[@]}" --set linkscan.memory=cuda \
    --out "$TMP/m.h5" >"$TMP/out" 2>&1
  expect_rc 2 $? "linkscan.memory cuda without a GPU"
  expect_in "$TMP/out" "linkscan.memory: cuda needs GPU memory that UCX can send on every rank: rank 0 has no GPU" "no GPU named"
fi
"$MPIRUN" -n 2 "$SHAKEDOWN" run --virtual-nodes 2 "${small[@]}" --set linkscan.memory=cuda \
  --set linkscan.transport=mpi --out "$TMP/m2.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "linkscan.memory cuda over MPI"
expect_in "$TMP/out" "linkscan.memory: cuda needs linkscan.transport: ucx" "MPI transport named"
"$MPIRUN" -n 2 "$SHAKEDOWN" run --virtual-nodes 2 "${small[@]}" \
  --inject slow:link=0-5,phase=linkscan --out "$TMP/x.h5" >"$TMP/out" 2>&1
expect_rc 2 $? "link to a node that does not exist"
expect_in "$TMP/out" "node 5 does not exist" "missing node named"
pass "linkscan"

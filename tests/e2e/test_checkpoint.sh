#!/usr/bin/env bash
# The checkpoint phase with real mpirun on 4 ranks as 2 virtual nodes (pretend nodes on one host:
# "another node" is another rank group on the same disk): file per process, a POSIX shared file
# and MPI-IO (2 ranks: ompio writes independently; 3: two-phase aggregation), O_DIRECT; the
# restore reads the shard of a rank on the other node, the metadata commits the checkpoint, and
# cleanup leaves nothing of its own while a planted symlink, its target and a user's file stay.
# Self-tests: a byte changed on disk is named with shard, writer, reader and offset (exit 3); a
# slow rank is named; a full file system (a tiny tmpfs, as root) is exit 3 naming the path and
# errno with the partial checkpoint removed; a missing or read-only checkpoint.dir is exit 2
# before any phase.
source "$(dirname "$0")/lib.sh"
small=(--phases checkpoint --set checkpoint.bytes_per_rank=4MiB --set checkpoint.block_size=1MiB)
dir="$TMP/ckpt"
mkdir -p "$dir"
echo "user data" >"$dir/user-file"
echo "outside" >"$TMP/outside"
ln -s "$TMP/outside" "$dir/link-out"
# A symlink planted at the name the run would give its folder (<run>.ckpt): the run takes another
# name and leaves the link and what it points to alone.
mkdir -p "$TMP/elsewhere"
echo "theirs" >"$TMP/elsewhere/file"
ln -s "$TMP/elsewhere" "$dir/a.ckpt"

"$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 "${small[@]}" --set checkpoint.iters=2 \
  --set "checkpoint.dir=$dir" --report json --out "$TMP/a.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 0 $? "file per process"
expect_in "$TMP/stdout" "^checkpoint \(posix file_per_process on [a-z0-9]+; 4 x 4 MiB; 2 iterations\)" "block title"
expect_in "$TMP/stdout" "write [0-9.e+]+ GB/s, read [0-9.e+]+ GB/s aggregate \(median\); restore of the whole checkpoint" "bandwidth line"
expect_in "$TMP/stdout" "\[PASS\] checkpoint.coverage: 2 checkpoint\(s\) of 4 x 4 MiB \(posix file_per_process, fsync\) on .* restored by a rank on another node" "coverage"
expect_in "$TMP/stdout" "\[PASS\] checkpoint.verify: every byte of 8 restored shard\(s\) \(32 MiB\)" "verify"
expect_in "$TMP/stdout" "checkpoint.bandwidth" "bandwidth check listed"
expect_in "$TMP/stdout" "tested 2 checkpoints of 4 shards on 4 ranks" "tested"
for d in open_s write_s fsync_s close_s read_s write_start_s read_end_s verify_ok bad_offset cache_dropped; do
  h5dump -H -d "/checkpoint/$d" "$TMP/a.h5" >"$TMP/h"
  grep -q 'SIMPLE { ( 2, 4 )' "$TMP/h" || { cat "$TMP/h"; fail "$d should be [iters=2, world=4]"; }
done
h5dump -d /checkpoint/reads_shard_of "$TMP/a.h5" | grep -q '(0): 2, 3, 0, 1' ||
  fail "each rank should restore the shard of the rank one node on (2, 3, 0, 1)"
/usr/bin/python3 "$SHAKEDOWN_SOURCE_DIR/tests/e2e/check_schema.py" "$TMP/a.h5" \
  "$SHAKEDOWN_SOURCE_DIR/scripts/schema.json" >"$TMP/schema" 2>&1 ||
  { cat "$TMP/schema"; fail "the checkpoint run's file against scripts/schema.json"; }
/usr/bin/python3 - "$TMP/a.json" <<'EOF' || fail "checkpoint section of the JSON report"
import json, sys
c = json.load(open(sys.argv[1]))["checkpoint"]
assert c["layout"] == "file_per_process" and c["api"] == "posix" and c["iters"] == 2, c
assert c["write_GBps"] > 0 and c["read_GBps"] > 0 and c["restore_s"] > 0, c
assert c["bytes_per_rank"] == 4 << 20 and c["kept"] is None, c
EOF
h5dump -a /checkpoint/dir "$TMP/a.h5" | grep -q "$dir/a.ckpt-2" ||
  fail "the run should have taken a new folder name (a.ckpt-2) beside the planted symlink"
[[ -z "$(find "$dir" -mindepth 1 ! -name user-file ! -name link-out ! -name a.ckpt)" ]] ||
  { find "$dir"; fail "cleanup should leave nothing this run created"; }
[[ -L "$dir/a.ckpt" && "$(ls "$TMP/elsewhere")" == file ]] ||
  fail "the symlink planted at the run's folder name, or its target, was touched"
[[ -L "$dir/link-out" && "$(cat "$TMP/outside")" == outside && "$(cat "$dir/user-file")" == "user data" ]] ||
  fail "cleanup touched a planted symlink, its target or a user's file"

# One shared file through POSIX, kept: the commit is there, no temporary metadata left.
"$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 "${small[@]}" --set checkpoint.layout=shared_file \
  --set checkpoint.keep=true --set "checkpoint.dir=$dir" --out "$TMP/b.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 0 $? "posix shared file"
expect_in "$TMP/stdout" "\[PASS\] checkpoint.verify: every byte of 4 restored shard\(s\)" "shared file verified"
expect_in "$TMP/stderr" "checkpoint kept: $dir/b.ckpt/step_1" "kept path printed"
[[ -f "$dir/b.ckpt/step_1/shared.bin" && -f "$dir/b.ckpt/step_1/metadata.json" ]] ||
  fail "keep: the shared file and its metadata should stay"
[[ "$(stat -c %s "$dir/b.ckpt/step_1/shared.bin")" == $((16 << 20)) ]] || fail "shared.bin should hold 4 x 4 MiB"
[[ ! -e "$dir/b.ckpt/step_1/metadata.json.tmp" ]] || fail "the metadata commit left its temporary file"
/usr/bin/python3 - "$dir/b.ckpt/step_1/metadata.json" <<'EOF' || fail "metadata.json"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["format"] == "shakedown-checkpoint 1" and m["layout"] == "shared_file", m
assert [s["offset"] for s in m["shards"]] == [r * (4 << 20) for r in range(4)], m
assert all(len(s["xxh3"]) == 4 for s in m["shards"]), m
EOF
rm -rf "$dir/b.ckpt"

# MPI-IO: 2 ranks (ompio's individual writes) and 3 (two-phase aggregation).
for n in 2 3; do
  "$MPIRUN" -n "$n" "$SHAKEDOWN" run "${small[@]}" --set checkpoint.layout=shared_file \
    --set checkpoint.api=mpiio --set "checkpoint.dir=$dir" --out "$TMP/m$n.h5" >"$TMP/stdout" 2>"$TMP/stderr"
  expect_rc 0 $? "mpiio on $n ranks"
  expect_in "$TMP/stdout" "\[PASS\] checkpoint.verify: every byte of $n restored shard\(s\)" "mpiio $n verified"
done

# Shards sized from the train config (DLIO's rules: DP rank 0 also writes the bf16 model), so they
# differ; through MPI-IO every rank still makes the same collective calls. The total is what
# `shakedown plan` says this config's checkpoint is.
model=(--set train.hidden=128 --set train.heads=4 --set train.layers=2 --set train.vocab=1024)
"$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 --phases checkpoint --set checkpoint.from_train=true \
  "${model[@]}" --set checkpoint.layout=shared_file --set checkpoint.api=mpiio \
  --set checkpoint.block_size=64KiB --set "checkpoint.dir=$dir" --report json --out "$TMP/t.h5" \
  >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 0 $? "from_train shards through MPI-IO"
expect_in "$TMP/stdout" "^checkpoint \(mpiio shared_file on [a-z0-9]+; 4 shards of [0-9.]+ [KM]iB to [0-9.]+ [KM]iB, " "unequal shards said"
expect_in "$TMP/stdout" "\[PASS\] checkpoint.verify: every byte of 4 restored shard\(s\)" "unequal shards verified"
"$SHAKEDOWN" plan --model custom "${model[@]}" --dp 4 --format json >"$TMP/plan.json"
expect_rc 0 $? "plan of the same config"
/usr/bin/python3 - "$TMP/t.json" "$TMP/plan.json" <<'EOF' || fail "the checkpoint's bytes should be the plan's"
import json, sys
run, plan = json.load(open(sys.argv[1]))["checkpoint"], json.load(open(sys.argv[2]))["checkpoint"]
assert run["total_bytes"] == plan["total_bytes"], (run, plan)
assert run["bytes_per_rank"] == plan["dp_rank0_bytes"] > plan["other_rank_bytes"] > 0, (run, plan)
EOF

# Asynchronous: training (a stand-in GEMM loop) blocks only for the snapshot; the write runs in a
# thread meanwhile. MPI-IO cannot write from a thread here: refused naming both keys.
"$MPIRUN" -n 2 "$SHAKEDOWN" run "${small[@]}" --set checkpoint.async=true --set "checkpoint.dir=$dir" \
  --report json --out "$TMP/y.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 0 $? "async checkpoint"
expect_in "$TMP/stdout" "async: training blocked [0-9.]+ ms \(snapshot\) of a [0-9.]+ m?s background write; [0-9]+ stand-in step\(s\) ran meanwhile" "async line"
expect_in "$TMP/stdout" "\[PASS\] checkpoint.verify: every byte of 2 restored shard\(s\)" "async checkpoint verified"
/usr/bin/python3 - "$TMP/y.json" <<'EOF' || fail "async section of the JSON report"
import json, sys
a = json.load(open(sys.argv[1]))["checkpoint"]["async"]
assert 0 < a["blocked_s"] < a["background_write_s"] and a["step_ms_before"] > 0, a
EOF
"$SHAKEDOWN" run "${small[@]}" --set checkpoint.async=true --set checkpoint.api=mpiio \
  --set checkpoint.layout=shared_file --out "$TMP/z.h5" >"$TMP/stdout" 2>&1
expect_rc 2 $? "async through MPI-IO"
expect_in "$TMP/stdout" "checkpoint.async.*checkpoint.api = posix" "async + mpiio refused naming the keys"

# O_DIRECT: runs where the file system takes it; elsewhere a clear refusal (exit 2).
"$MPIRUN" -n 2 "$SHAKEDOWN" run "${small[@]}" --set checkpoint.direct_io=true \
  --set "checkpoint.dir=$dir" --out "$TMP/d.h5" >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
if [[ $rc -eq 0 ]]; then
  expect_in "$TMP/stdout" "\(posix file_per_process, O_DIRECT, fsync\)" "O_DIRECT run"
else
  expect_rc 2 $rc "O_DIRECT refused"
  expect_in "$TMP/stderr" "does not support O_DIRECT|needs checkpoint.block_size" "O_DIRECT refusal says why"
fi

# O_DIRECT with blocks the file system cannot take: refused before any phase runs (no run file).
"$MPIRUN" -n 2 "$SHAKEDOWN" run --phases inventory,checkpoint --set checkpoint.direct_io=true \
  --set checkpoint.block_size=1000 --set checkpoint.bytes_per_rank=4000 --set "checkpoint.dir=$dir" \
  --out "$TMP/o.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 2 $? "O_DIRECT with unaligned blocks"
expect_in "$TMP/stderr" "checkpoint.direct_io: .*(multiples of [0-9]+ bytes|does not support O_DIRECT)" "O_DIRECT rule named"
[[ ! -e "$TMP/o.h5" && ! -e "$TMP/o.h5.partial" ]] || fail "the O_DIRECT refusal should come before any phase"

# A byte of rank 2's shard changed on disk between write and restore: named, exit 3.
"$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 "${small[@]}" --set "checkpoint.dir=$dir" \
  --inject corrupt:rank=2,phase=checkpoint --out "$TMP/c.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 3 $? "corrupted shard"
expect_in "$TMP/stdout" "\[FAIL\] checkpoint.verify: checkpoint shard step_1/rank_2.shard came back wrong from byte 2097152: written by rank 2 \(host [^,]+, node 1\), restored by rank 0 \(host [^,]+, node 0\)" "corruption named"
expect_in "$TMP/stdout" "verdict: DATA CORRUPTION: checkpoint.verify on rank 2" "verdict"
[[ ! -e "$dir/c.ckpt" ]] || { find "$dir/c.ckpt"; fail "cleanup after the corrupted run"; }

# In a shared file the wrong byte is also given where it is in the file (rank 2's range starts
# after ranks 0 and 1's 4 MiB each: 8 MiB + 2 MiB).
"$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 "${small[@]}" --set checkpoint.layout=shared_file \
  --set "checkpoint.dir=$dir" --inject corrupt:rank=2,phase=checkpoint --out "$TMP/cs.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 3 $? "corrupted shared file"
expect_in "$TMP/stdout" "\[FAIL\] checkpoint.verify: checkpoint shard step_1/shared.bin \(rank 2's range\) came back wrong from byte 2097152 of its range \(byte 10485760 of shared.bin\)" "the byte in the file"
expect_in "$TMP/stderr" "changes byte 10485760 of .*shared.bin on disk \(byte 2097152 of its range\)" "the injection says the same byte"

# Without fsync the written pages are dirty and cannot be dropped: the restore may read memory,
# and neither the file nor the coverage line may say it read storage.
"$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 "${small[@]}" --set checkpoint.fsync=false \
  --set "checkpoint.dir=$dir" --out "$TMP/nf.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 0 $? "checkpoint without fsync"
expect_in "$TMP/stdout" "\[WARN\] checkpoint.coverage: .*the restore may read the page cache too" "the read said to be cache's too"
/usr/bin/python3 -c 'import sys,h5py; v=h5py.File(sys.argv[1],"r")["/checkpoint/cache_dropped"][()]; assert (v == 0).all(), v' "$TMP/nf.h5" ||
  fail "cache_dropped without fsync"

# A slow rank (each block and its fsync 8x as long): named as slow I/O, and no other.
"$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 "${small[@]}" --set checkpoint.iters=16 \
  --set "checkpoint.dir=$dir" --inject slow:rank=1,phase=checkpoint,factor=8 --out "$TMP/s.h5" \
  >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 0 $? "slow rank (a warning on shared cores)"
expect_in "$TMP/stdout" "\[(WARN|FAIL)\] checkpoint.stragglers: rank 1 \(host [^,]+, node 0\): its checkpoint I/O is [0-9]+% slower" "slow rank named"
[[ $(grep -c "^  \[[A-Z]*\] checkpoint.stragglers: rank" "$TMP/stdout") -eq 1 ]] || fail "only rank 1 should be named"

# Too few checkpoints to tell a slow rank: not judged, saying how many would.
"$SHAKEDOWN" summary --detail "$TMP/a.h5" >"$TMP/detail"
expect_in "$TMP/detail" "checkpoint.stragglers: slow I/O ranks: 2 sample\(s\) each of 4 ranks cannot show one slower at p < 0.01 \(not judged\); run checkpoint.iters >= [0-9]+" "unjudged stragglers say what would do"

# Failing storage (rank 2's first write of checkpoint 2 gets EIO): exit 3 naming the path, errno
# and rank, this run's partial checkpoint removed, and no hang: through MPI-IO the failing rank
# still makes its collective calls; with async the error comes from the writer thread.
for mode in "" "--set checkpoint.layout=shared_file --set checkpoint.api=mpiio" "--set checkpoint.async=true"; do
  rm -f "$TMP/e.h5"
  # shellcheck disable=SC2086
  timeout 120 "$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 "${small[@]}" $mode --set checkpoint.iters=2 \
    --set "checkpoint.dir=$dir" --inject ioerror:rank=2,phase=checkpoint,step=2 --out "$TMP/e.h5" \
    >"$TMP/stdout" 2>"$TMP/stderr"
  expect_rc 3 $? "I/O error ($mode)"
  expect_in "$TMP/stderr" "rank 2 \(host [^)]*\): (write|MPI_File_write_at_all) $dir/e.ckpt/step_2/(rank_2.shard|shared.bin): Input/output error \(errno 5\)" "EIO named ($mode)"
  [[ ! -e "$dir/e.ckpt" ]] || { find "$dir/e.ckpt"; fail "the partial checkpoint should be removed ($mode)"; }
  # The checkpoint completed before the failure is measured and recorded all the same.
  "$SHAKEDOWN" summary "$TMP/e.h5" >"$TMP/summary" 2>&1
  expect_in "$TMP/summary" "^checkpoint \(.*; 1 iteration\)" "checkpoint 1 recorded ($mode)"
  expect_in "$TMP/summary" "^verdict: ABORTED" "the run file says the run was aborted ($mode)"
done
# With cleanup off the verified checkpoints are the user's: a failure removes only the one it hit.
rm -f "$TMP/e.h5"
timeout 120 "$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 "${small[@]}" --set checkpoint.iters=3 \
  --set checkpoint.cleanup=false --set "checkpoint.dir=$dir" \
  --inject ioerror:rank=2,phase=checkpoint,step=2 --out "$TMP/e.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 3 $? "I/O error with cleanup off"
[[ -f "$dir/e.ckpt/step_1/metadata.json" && ! -e "$dir/e.ckpt/step_2" ]] ||
  { find "$dir/e.ckpt"; fail "cleanup off: step_1 should stay and step_2 go"; }
rm -rf "$dir/e.ckpt"

# A hang in checkpoint 2 (rank 2 stalls past timeouts.phase_s): the watchdog ends the run; the
# checkpoint completed before it is recorded all the same, the coverage says the phase was cut
# short, and the folder this run's partial checkpoint stays in is named.
rm -f "$TMP/h.h5"
timeout 120 "$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 "${small[@]}" --set checkpoint.iters=3 \
  --set "checkpoint.dir=$dir" --set timeouts.phase_s=4 \
  --inject stall:rank=2,phase=checkpoint,step=2,seconds=60 --out "$TMP/h.h5" >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 3 $? "a hang in checkpoint 2"
expect_in "$TMP/stderr" "checkpoint: the run ended in the phase; this run's files stay under $dir/h\.ckpt " "the folder left named"
"$SHAKEDOWN" summary "$TMP/h.h5" >"$TMP/summary" 2>&1
expect_in "$TMP/summary" "^checkpoint \(.*; 1 iteration\)" "checkpoint 1 recorded after a hang"
expect_in "$TMP/summary" "\[FAIL\] checkpoint\.coverage: cut short: the run ended in the checkpoint phase; recorded before: 1 checkpoint" "cut short said"
expect_in "$TMP/summary" "^verdict: ABORTED .*\(in the checkpoint phase\)" "the phase in the reason"
h5dump -a /abort_phase "$TMP/h.h5" | grep -q '"checkpoint"' || fail "/abort_phase not recorded"
[[ -d "$dir/h.ckpt" ]] || fail "the named folder is not there"
rm -rf "$dir/h.ckpt"

# A missing or read-only checkpoint.dir: exit 2 before any phase, naming path and rank.
"$MPIRUN" -n 2 "$SHAKEDOWN" run "${small[@]}" --set "checkpoint.dir=$TMP/nope" --out "$TMP/n.h5" \
  >"$TMP/stdout" 2>"$TMP/stderr"
expect_rc 2 $? "missing checkpoint.dir"
expect_in "$TMP/stderr" "checkpoint.dir $TMP/nope does not exist on rank 0 \(host" "missing dir named"
[[ ! -e "$TMP/n.h5" ]] || fail "a refused config should leave no run file"

if [[ $(id -u) -eq 0 ]] && mkdir -p "$TMP/full" && mount -t tmpfs -o size=6m tmpfs "$TMP/full" 2>/dev/null; then
  trap 'umount "$TMP/full" 2>/dev/null; umount "$TMP/ro" 2>/dev/null; rm -rf "$TMP"' EXIT
  echo "keep me" >"$TMP/full/user-file"
  "$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 "${small[@]}" --set "checkpoint.dir=$TMP/full" \
    --out "$TMP/f.h5" >"$TMP/stdout" 2>"$TMP/stderr"
  expect_rc 3 $? "full file system"
  expect_in "$TMP/stderr" "write $TMP/full/f.ckpt/step_1/rank_[0-3].shard: No space left on device \(errno 28\)" "ENOSPC named with path and errno"
  [[ -z "$(find "$TMP/full" -mindepth 1 ! -name user-file)" && "$(cat "$TMP/full/user-file")" == "keep me" ]] ||
    { find "$TMP/full"; fail "the partial checkpoint should be removed, the user's file kept"; }
  mkdir -p "$TMP/ro" && mount -t tmpfs -o size=1m,ro tmpfs "$TMP/ro"
  "$MPIRUN" -n 2 "$SHAKEDOWN" run "${small[@]}" --set "checkpoint.dir=$TMP/ro" --out "$TMP/r.h5" \
    >"$TMP/stdout" 2>"$TMP/stderr"
  expect_rc 2 $? "read-only checkpoint.dir"
  expect_in "$TMP/stderr" "checkpoint.dir $TMP/ro is not writable on rank 0 .*Read-only file system" "read-only named"
  # Rank 1 in a mount namespace of its own, with a tmpfs over the folder: the folder it sees is
  # not rank 0's (as a node-local file system on another node): exit 2 before any phase.
  mkdir -p "$TMP/local"
  cat >"$TMP/own-mount.sh" <<'EOF'
#!/usr/bin/env bash
if [[ "${OMPI_COMM_WORLD_RANK:-}" == 1 ]]; then
  exec unshare -m bash -c 'mount -t tmpfs tmpfs "$0" && shift && exec "$@"' "$LOCAL_DIR" _ "$@"
fi
exec "$@"
EOF
  chmod +x "$TMP/own-mount.sh"
  if unshare -m true 2>/dev/null; then
    LOCAL_DIR="$TMP/local" "$MPIRUN" -x LOCAL_DIR -n 2 "$TMP/own-mount.sh" "$SHAKEDOWN" run "${small[@]}" \
      --set "checkpoint.dir=$TMP/local" --out "$TMP/l.h5" >"$TMP/stdout" 2>"$TMP/stderr"
    expect_rc 2 $? "a folder that is not the same on every node"
    expect_in "$TMP/stderr" "checkpoint folder $TMP/local is not the same folder on rank 1 .* as on rank 0 .*: it is on a file system of one node \(tmpfs there\)" "node-local folder named"
    [[ -z "$(ls -A "$TMP/local")" && ! -e "$TMP/l.h5" ]] || fail "the visibility probe should leave nothing"
  else
    echo "SKIP: unshare -m is not allowed here: the node-local folder case is not tested"
  fi
else
  echo "SKIP: full and read-only file systems need root to mount a small tmpfs (running as $(id -un))"
fi
echo "PASS"

#!/usr/bin/env bash
# Storage faults: the output file system fills up during the run (a 200 KiB tmpfs, as root), and
# the output folder is read-only (a read-only bind mount as root; a folder the user may not
# write as a non-root user). Each: exit 3, a first line that names the file and the system's
# cause, and - for the full disk - a file that summary, h5py and analyze.py still read.
source "$(dirname "$0")/lib.sh"
ran=0

if [[ $(id -u) -eq 0 ]] && mkdir -p "$TMP/full" && mount -t tmpfs -o size=200k tmpfs "$TMP/full" 2>/dev/null; then
  trap 'umount "$TMP/full" 2>/dev/null; umount "$TMP/ro" 2>/dev/null; rm -rf "$TMP"' EXIT
  out="$TMP/full/run.h5"
  "$MPIRUN" -n 2 "$SHAKEDOWN" run --out "$out" >"$TMP/full.log" 2>&1
  rc=$?
  cat "$TMP/full.log"
  expect_rc 3 $rc "a full file system"
  first_message "$TMP/full.log" | grep -Eq "^shakedown: rank 0 \(host [^)]+\): cannot write the run file '$out.partial': No space left on device$" ||
    fail "first message does not name the file and the cause: $(first_message "$TMP/full.log")"
  expect_in "$TMP/full.log" "keeps status running: it cannot be written \(No space left on device\)" "the file is not reopened to mark it"
  grep -q "already open for write" "$TMP/full.log" && fail "the file was reopened after the failed write"
  [[ -f "$out.partial" ]] || fail "no .partial left on the full file system"
  expect_readable_incomplete "$out.partial" 2 "^  1 +0 +1 +" "the full disk"
  # analyze.py reads it too (h5dump walks every object first and gives up on the one the failed
  # write left half-written, so it is not the reader to use on such a file).
  if /usr/bin/python3 -c 'import h5py, pandas' 2>/dev/null; then
    /usr/bin/python3 "$SHAKEDOWN_SOURCE_DIR/scripts/analyze.py" "$out.partial" >"$TMP/analyze" 2>&1 ||
      { cat "$TMP/analyze"; fail "analyze.py cannot read the file the full disk left"; }
    expect_in "$TMP/analyze" "/topology/ranks \(2,\)" "analyze.py lists the datasets"
  fi
  ran=$((ran + 1))

  # A run file that cannot even be created on the full file system, in folders that did not
  # exist: exit 3, and neither the folders made for it nor an empty .partial are left behind.
  "$SHAKEDOWN" run --phases inventory --out "$TMP/full/new/deeper/run2.h5" >"$TMP/full2.log" 2>&1
  expect_rc 3 $? "no room for the run file itself"
  expect_in "$TMP/full2.log" "cannot create the run file '$TMP/full/new/deeper/run2.h5.partial': No space left on device" "cause named"
  [[ ! -e "$TMP/full/new" ]] || { find "$TMP/full/new"; fail "folders made for a run file that could not be created were left"; }

  mkdir -p "$TMP/ro"
  if mount --bind "$TMP/ro" "$TMP/ro" && mount -o remount,bind,ro "$TMP/ro"; then
    "$MPIRUN" -n 2 "$SHAKEDOWN" run --out "$TMP/ro/run.h5" >"$TMP/ro.log" 2>&1
    rc=$?
    cat "$TMP/ro.log"
    expect_rc 3 $rc "a read-only output folder"
    expect_in "$TMP/ro.log" "^shakedown: error: cannot create the run file '$TMP/ro/run.h5.partial': Read-only file system$" "read-only cause named"
    [[ $(grep -c "Read-only file system" "$TMP/ro.log") -eq 1 ]] || fail "the error was printed by more than one rank"
    ran=$((ran + 1))
  fi
fi

if id nobody >/dev/null 2>&1 && command -v runuser >/dev/null && [[ $(id -u) -eq 0 ]] &&
  runuser -u nobody -- "$SHAKEDOWN" --version >/dev/null 2>&1; then
  mkdir -p "$TMP/locked"
  chmod 555 "$TMP/locked"
  chmod 755 "$TMP"
  runuser -u nobody -- "$SHAKEDOWN" run --phases inventory --out "$TMP/locked/run.h5" >"$TMP/locked.log" 2>&1
  rc=$?
  cat "$TMP/locked.log"
  expect_rc 3 $rc "a folder the user may not write"
  expect_in "$TMP/locked.log" "cannot create the run file '$TMP/locked/run.h5.partial': Permission denied" "permission cause named"
  ran=$((ran + 1))
elif [[ $(id -u) -ne 0 ]]; then
  mkdir -p "$TMP/locked"
  chmod 555 "$TMP/locked"
  "$SHAKEDOWN" run --phases inventory --out "$TMP/locked/run.h5" >"$TMP/locked.log" 2>&1
  rc=$?
  cat "$TMP/locked.log"
  expect_rc 3 $rc "a folder the user may not write"
  expect_in "$TMP/locked.log" "cannot create the run file '$TMP/locked/run.h5.partial': Permission denied" "permission cause named"
  ran=$((ran + 1))
fi
((ran > 0)) || skip "needs root (tmpfs, bind mounts) or a non-root user for the read-only folder"
pass "storage faults ($ran cases)"

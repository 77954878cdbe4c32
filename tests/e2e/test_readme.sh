#!/usr/bin/env bash
# Every command the README (and configs/README.md, docs/reports.md, docs/devices.md,
# docs/linkscan.md) shows in a ```sh block runs
# as written on this machine (blocks that need a cluster are ```text). scripts/test.sh is
# skipped (it is what runs this test);
# scripts/demo.sh runs first (it builds build-release/, which the other commands use). Output
# files the commands name under results/ go to a temporary folder instead, so nothing a user
# keeps in results/ is touched; the demo's own file is removed afterwards.
source "$(dirname "$0")/lib.sh"
cd "$SHAKEDOWN_SOURCE_DIR" || fail "no source folder"
unset SHAKEDOWN_BUILD_DIR  # ctest's: the demo must use its own folder, not the test build
mkdir -p "$TMP/results"
commands=()
for doc in README.md configs/README.md docs/reports.md docs/devices.md docs/linkscan.md; do
  in_block=0
  while IFS= read -r line; do
    if [[ $in_block -eq 0 && "$line" == '```sh' ]]; then in_block=1; continue; fi
    if [[ $in_block -eq 1 && "$line" == '```' ]]; then in_block=0; continue; fi
    [[ $in_block -eq 1 ]] || continue
    [[ -z "${line// /}" || "$line" =~ ^[[:space:]]*# ]] && continue
    commands+=("$line")
  done <"$doc"
done
((${#commands[@]} >= 5)) || fail "found only ${#commands[@]} commands in the README's sh blocks"

ran=0
for cmd in "${commands[@]}"; do
  [[ "$cmd" == "scripts/test.sh"* ]] && continue
  [[ "$cmd" == "scripts/demo.sh"* ]] || continue
  echo "+ $cmd"
  bash -c "$cmd" >"$TMP/demo.log" 2>&1
  rc=$?
  tail -n 3 "$TMP/demo.log"
  demo_file=$(sed -n 's/^demo: exit code [0-9]*; results in \([^ ]*\) .*/\1/p' "$TMP/demo.log")
  [[ -n "$demo_file" ]] && rm -f "$demo_file" "$demo_file.partial"
  expect_rc 0 $rc "README: $cmd"
  ran=$((ran + 1))
done
for cmd in "${commands[@]}"; do
  [[ "$cmd" == "scripts/test.sh"* || "$cmd" == "scripts/demo.sh"* ]] && continue
  cmd=${cmd//results\//$TMP/results/}
  echo "+ $cmd"
  bash -c "$cmd" >"$TMP/cmd.log" 2>&1
  rc=$?
  ((rc == 0)) || { cat "$TMP/cmd.log"; fail "README command exited $rc: $cmd"; }
  ran=$((ran + 1))
done
pass "$ran README commands ran as written"

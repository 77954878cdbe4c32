#!/usr/bin/env bash
# UCX is loaded only by the code that uses it: the binary does not link it, and on a host whose
# name has 64 characters (libucs's constructor aborts there) --version, plan and summary work.
# Needs root for a UTS namespace (unshare --uts); elsewhere only the link check runs.
source "$(dirname "$0")/lib.sh"
if readelf -d "$SHAKEDOWN" | grep -E 'NEEDED.*lib(ucp|ucs|uct)\.so'; then
  fail "the shakedown binary links UCX (above): it must load it where it is used"
fi
out="$TMP/run.h5"
"$SHAKEDOWN" run --phases inventory --out "$out" >"$TMP/run.log" 2>&1
expect_rc 0 $? "singleton inventory run (to have a file to summarise)"
expect_in "$TMP/run.log" "ucx 1\.[0-9]+" "inventory records the UCX version"

[[ $(id -u) -eq 0 ]] || skip "not root: no UTS namespace for a 64-character host name (link check passed)"
command -v unshare >/dev/null || skip "no unshare (util-linux): link check passed"
long=$(printf 'h%.0s' {1..64})
unshare --uts true 2>/dev/null || skip "unshare --uts is not permitted here (link check passed)"
unshare --uts bash -c '
  hostname "$1" || exit 90
  "$2" --version >"$3/version" 2>&1 || exit 91
  "$2" plan --nodes 1 --ranks-per-node 1 >"$3/plan" 2>&1 || exit 92
  "$2" summary "$4" >"$3/summary" 2>&1 || exit 93
' _ "$long" "$SHAKEDOWN" "$TMP" "$out"
rc=$?
[[ $rc -ne 90 ]] || skip "cannot set a host name in the namespace"
[[ $rc -ne 91 ]] || { cat "$TMP/version" >&2; fail "--version failed on a 64-character host name"; }
[[ $rc -ne 92 ]] || { cat "$TMP/plan" >&2; fail "plan failed on a 64-character host name"; }
[[ $rc -ne 93 ]] || { cat "$TMP/summary" >&2; fail "summary failed on a 64-character host name"; }
expect_rc 0 $rc "commands on a 64-character host name"
# UCX itself cannot load there; --version says so instead of dying.
expect_in "$TMP/version" "ucx (1\.[0-9]+|unavailable \(loading libucp.so.0 crashed)" "--version reports UCX"
expect_in "$TMP/summary" "^verdict: " "summary on a 64-character host name"
pass "UCX loaded only where used; 64-character host name"

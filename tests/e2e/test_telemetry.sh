#!/usr/bin/env bash
# Hardware telemetry with real mpirun: 4 ranks as 2 virtual nodes (pretend nodes on one host: the
# host's first rank samples it once, for both), GPUs played by the scripted NVML stand-in
# (tests/support/fake_nvml.cpp, loaded through the sampler's own dlopen path). A healthy run
# records /telemetry/node0 (channels, per-phase stats, decimated series, no full-rate
# series) and passes; a run whose stand-in scripts an uncorrected ECC error, an Xid, a throttling
# GPU, a down-trained PCIe link and NVLink links down fails naming the node, the GPU and the phase, and
# keeps the full-rate series; without NVML (this machine has no NVIDIA driver) the GPU checks say
# SKIP and why; the sampler runs on a CPU no rank is bound to when there is one; telemetry.enabled
# false records nothing; a bad key is exit 2 naming it.
source "$(dirname "$0")/lib.sh"
: "${SHAKEDOWN_FAKE_NVML:?set by ctest: the scripted NVML stand-in}"
phases=(--phases inventory,gemm --set gemm.iters=3)

"$MPIRUN" -n 4 -x SHAKEDOWN_TEST_NVML_LIBRARY="$SHAKEDOWN_FAKE_NVML" -x FAKE_NVML_GPUS=2 \
  "$SHAKEDOWN" run --virtual-nodes 2 "${phases[@]}" --out "$TMP/ok.h5" >"$TMP/ok.out" 2>&1
expect_rc 0 $? "healthy run with 2 scripted GPUs per node"
expect_in "$TMP/ok.out" "\[PASS\] telemetry: coverage, gpu_errors, links, pcie, throttling \(1 host\(s\) \(one sampler per host for its pretend nodes\) sampled every 100 ms through 2 phase\(s\): 2 GPU\(s\)" "telemetry checks pass"
/usr/bin/python3 "$SHAKEDOWN_SOURCE_DIR/tests/e2e/check_schema.py" "$TMP/ok.h5" \
  "$SHAKEDOWN_SOURCE_DIR/scripts/schema.json" >"$TMP/schema" 2>&1 ||
  { cat "$TMP/schema"; fail "the telemetry run's file against scripts/schema.json"; }
/usr/bin/python3 - "$TMP/ok.h5" <<'PY' || fail "/telemetry layout"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
assert f["/telemetry"].attrs["interval_ms"] == 100
assert list(f["/telemetry"]) == ["node0"], list(f["/telemetry"])  # one sampler for the host
for node in ("node0",):
    g = f["/telemetry/" + node]
    a = lambda k: g.attrs[k].decode() if isinstance(g.attrs[k], bytes) else g.attrs[k]
    devices, signals = a("devices").split(","), a("signals").split(",")
    assert len(devices) == len(signals) == 5 + 2 * 22, (node, len(devices))
    assert devices[:5] == ["host"] * 5 and devices[5] == "gpu0" and devices[-1] == "gpu1", devices
    assert a("phases") == "inventory,gemm", a("phases")
    assert a("gpu_bus_ids") == "0000:1b:00.0,0000:1c:00.0", a("gpu_bus_ids")
    c = len(devices)
    assert g["stats"].shape == (2, c, 3), g["stats"].shape
    assert g["stats"].dtype == np.float32
    s = g["stats"][()]
    power = signals.index("power") + 22  # gpu1's power: 360 W in every sample
    assert (s[:, power, :] == 360).all(), s[:, power, :]
    assert (g["phase_samples"][()] >= 1).all(), g["phase_samples"][()]
    assert (g["phase_end_us"][()] > g["phase_start_us"][()]).all()
    assert g["decimated"].shape[1] == c and g["decimated"].shape[0] == g["decimated_time_us"].shape[0] >= 1
    assert "full" not in g, "no event: no full-rate series"
    assert a("events") == "", a("events")
PY
"$SHAKEDOWN" summary "$TMP/ok.h5" >"$TMP/ok.summary"
expect_in "$TMP/ok.summary" "\[PASS\] telemetry: coverage, gpu_errors, links, pcie, throttling" "summary recomputes the same"
"$SHAKEDOWN" summary --detail "$TMP/ok.h5" >"$TMP/ok.detail"
expect_in "$TMP/ok.detail" "^telemetry: 1 node\(s\) every 100 ms, 2 GPU\(s\); a sample cost up to [0-9]+ us" "--detail: the sampler's line"

# GPU 1 of each node: 1 uncorrected ECC error, 16 of 18 NVLink links and an Xid 79 in the kernel
# log; GPU 0 throttled for power and a hardware slowdown, its PCIe link at Gen3 x8 while 90% busy.
: >"$TMP/kmsg"  # the kernel log the sampler reads; the stand-in "logs" GPU 1's Xid 79 there
"$MPIRUN" -n 4 -x SHAKEDOWN_TEST_NVML_LIBRARY="$SHAKEDOWN_FAKE_NVML" -x FAKE_NVML_ECC=1 \
  -x FAKE_NVML_THROTTLE=0 -x FAKE_NVML_PCIE=0 -x FAKE_NVML_NVLINK_DOWN=1 \
  -x FAKE_NVML_XID=1,79 -x FAKE_NVML_KERNEL_LOG="$TMP/kmsg" -x SHAKEDOWN_TEST_KERNEL_LOG="$TMP/kmsg" \
  "$SHAKEDOWN" run --virtual-nodes 2 "${phases[@]}" --out "$TMP/bad.h5" >"$TMP/bad.out" 2>&1
expect_rc 1 $? "scripted GPU faults fail the run"
for node in 0; do
  at="  \[FAIL\] telemetry\.[a-z_]+: "
  expect_in "$TMP/bad.out" "${at/[a-z_]+/gpu_errors}node $node \(host [^)]*\): gpu1 \(0000:1c:00.0\): 1 uncorrected ECC error\(s\) before the run" "ECC on node $node"
  expect_in "$TMP/bad.out" "${at/[a-z_]+/gpu_errors}node $node \(host [^)]*\): gpu1 \(0000:1c:00.0\): 1 uncorrected ECC error\(s\) before the run; 1 Xid error\(s\) during inventory \(last: Xid 79\)" "Xid on node $node"
  expect_in "$TMP/bad.out" "${at/[a-z_]+/links}node $node \(host [^)]*\): gpu1 \(0000:1c:00.0\): 16 NVLink link\(s\) up, the node's others 18" "NVLink on node $node"
  expect_in "$TMP/bad.out" "${at/[a-z_]+/pcie}node $node \(host [^)]*\): gpu0 \(0000:1b:00.0\): PCIe link at most Gen3 x8 of Gen5 x16 while 90% busy in inventory" "PCIe on node $node"
done
"$SHAKEDOWN" summary --detail "$TMP/bad.h5" >"$TMP/bad.detail"
for node in 0; do
  expect_in "$TMP/bad.detail" "node $node \(host [^)]*\): gpu0 \(0000:1b:00.0\) ran below its clocks in inventory \(sw_power_cap, hw_slowdown; power up to 350 W of 700 W; up to 45 C\), gemm" "throttling on node $node"
done
expect_in "$TMP/bad.out" "\[WARN\] telemetry.throttling: node 0" "throttling is a warning"
if grep -E "telemetry\.[a-z_]+: .*gpu1.*(throttl|PCIe)|gpu0.*(ECC|NVLink)" "$TMP/bad.out"; then
  fail "a fault was pinned on the wrong GPU"
fi
expect_in "$TMP/bad.out" "scontrol update NodeName=.* State=DRAIN Reason=\"shakedown: telemetry" "drain line"
/usr/bin/python3 - "$TMP/bad.h5" <<'PY' || fail "full-rate series kept for the phases with events"
import sys, h5py
g = h5py.File(sys.argv[1], "r")["/telemetry/node0"]
ev = g.attrs["events"]
ev = ev.decode() if isinstance(ev, bytes) else ev
assert "inventory: gpu0 throttled (sw_power_cap, hw_slowdown)" in ev, ev
assert g["full"].shape[0] == g["full_time_us"].shape[0] == g["phase_samples"][()].sum(), ev
PY

# The HTML page plots each GPU's power, SM clock and temperature with the phases as bands;
# Chromium draws every chart (tests/e2e/check_html.py; skipped where Chromium is missing).
"$SHAKEDOWN" report "$TMP/bad.h5" -o "$TMP/bad.html" >/dev/null 2>&1
expect_rc 1 $? "report of the failed run (its verdict's code)"
for want in "GPU power" "GPU SM clock" "GPU temperature"; do
  expect_in "$TMP/bad.html" "<h3>$want</h3>" "the page plots $want"
done
/usr/bin/python3 "$SHAKEDOWN_SOURCE_DIR/tests/e2e/check_html.py" "$TMP/bad.html" "$TMP/bad.png" \
  telemetry >"$TMP/html" 2>&1
html_rc=$?
[[ $html_rc -eq 0 || $html_rc -eq 77 ]] || { cat "$TMP/html"; fail "the telemetry page as Chromium draws it"; }

# A run the watchdog ends in a phase keeps what the samplers saw in it: two pretend hosts (a
# sampler each; node 1's summary travels with its rank's acknowledgement of the abort), rank 1
# stalls in gemm past timeouts.phase_s, and GPU 1 of each host reports Xid 79 meanwhile.
printf '127.0.0.2 slots=2\n127.0.0.3 slots=2\n' >"$TMP/hostfile"
: >"$TMP/kmsg2"
"$MPIRUN" -n 4 --hostfile "$TMP/hostfile" --mca plm_rsh_agent "$SHAKEDOWN_SOURCE_DIR/scripts/local-rsh.sh" \
  --mca btl self,tcp --mca btl_tcp_if_include lo --mca rtc ^hwloc \
  -x SHAKEDOWN_TEST_NVML_LIBRARY="$SHAKEDOWN_FAKE_NVML" -x FAKE_NVML_XID=1,79 -x FAKE_NVML_AFTER=15 \
  -x FAKE_NVML_KERNEL_LOG="$TMP/kmsg2" -x SHAKEDOWN_TEST_KERNEL_LOG="$TMP/kmsg2" \
  "$SHAKEDOWN" run "${phases[@]}" --set timeouts.phase_s=3 \
  --inject stall:rank=1,phase=gemm,step=1,seconds=60 --out "$TMP/hung.h5" >"$TMP/hung.out" 2>&1
expect_rc 3 $? "a run ended by the watchdog in gemm"
expect_in "$TMP/hung.out" "TIMEOUT: rank 1 " "the stalled rank named"
"$SHAKEDOWN" summary "$TMP/hung.h5" >"$TMP/hung.summary"
expect_rc 3 $? "summary of the aborted run"
expect_in "$TMP/hung.summary" "\[FAIL\] telemetry\.gpu_errors: node [01] \(host [^)]*\): gpu1 \(0000:1c:00.0\): 1 Xid error\(s\) during gemm \(last: Xid 79\)" "the Xid in the phase the run ended in"
/usr/bin/python3 - "$TMP/hung.h5" <<'PY' || fail "both nodes' telemetry of the aborted phase"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
assert sorted(f["/telemetry"]) == ["node0", "node1"], list(f["/telemetry"])
for node in ("node0", "node1"):
    g = f["/telemetry/" + node]
    a = lambda k: g.attrs[k].decode() if isinstance(g.attrs[k], bytes) else g.attrs[k]
    assert a("phases") == "inventory,gemm", (node, a("phases"))
    span = g["phase_end_us"][()][1] - g["phase_start_us"][()][1]
    assert span >= 2.5e6, (node, "gemm sampled up to the abort (>= 2.5 s)", span)
    assert "gemm: gpu1 xid_count +1" in a("events"), (node, a("events"))
PY

# This machine has no NVIDIA driver: NVML is not loaded, the GPU checks say SKIP and why.
"$MPIRUN" -n 2 "$SHAKEDOWN" run --phases inventory --out "$TMP/cpu.h5" >"$TMP/cpu.out" 2>&1
expect_rc 0 $? "a run without NVML"
"$SHAKEDOWN" summary --detail "$TMP/cpu.h5" >"$TMP/cpu.detail"
expect_in "$TMP/cpu.detail" "^telemetry: 1 node\(s\) every 100 ms, 0 GPU\(s\)" "sampler's line without GPUs"
expect_in "$TMP/cpu.detail" "\[SKIP\] telemetry.gpu_errors: no GPU was sampled" "gpu_errors skips"
expect_in "$TMP/cpu.detail" "no GPU signals: no NVIDIA driver on this host" "coverage says why"
if [[ -d /proc/driver/nvidia ]]; then skip "this host has an NVIDIA driver: the CPU-only case above does not apply"; fi

# The sampler runs off the ranks' CPUs when some are free: one rank bound to a core leaves the
# other core to it (this machine has at least 2); unbound ranks may run anywhere, so it shares.
"$MPIRUN" -n 1 --bind-to core "$SHAKEDOWN" run --phases inventory --out "$TMP/bound.h5" \
  >"$TMP/bound.out" 2>&1
expect_rc 0 $? "one bound rank"
bound=$(h5dump -a /telemetry/node0/sampler_cpus "$TMP/bound.h5" | sed -n 's/.*(0): "\(.*\)"/\1/p')
[[ "$bound" =~ ^[0-9,]+$ && ! "$bound" =~ (^|,)0(,|$) ]] ||
  fail "the sampler should run on CPUs other than the bound rank's core 0, not '$bound'"
h5dump -a /telemetry/node0/sampler_cpus "$TMP/cpu.h5" | grep "shared with the ranks" >/dev/null ||
  fail "unbound ranks: the sampler should say it shares their CPUs"

# Off: nothing recorded, no telemetry check.
"$MPIRUN" -n 2 "$SHAKEDOWN" run --phases inventory --set telemetry.enabled=false \
  --out "$TMP/off.h5" >"$TMP/off.out" 2>&1
expect_rc 0 $? "telemetry off"
if grep -v "command:" "$TMP/off.out" | grep -q "telemetry"; then fail "telemetry off still reported telemetry"; fi
if h5dump -n "$TMP/off.h5" | grep "/telemetry" >/dev/null; then fail "telemetry off still wrote /telemetry"; fi

"$MPIRUN" -n 2 "$SHAKEDOWN" run --phases inventory --set telemetry.interval_ms=5 \
  --out "$TMP/bad_key.h5" >"$TMP/bad_key.out" 2>&1
expect_rc 2 $? "interval below 10 ms"
expect_in "$TMP/bad_key.out" "telemetry.interval_ms" "the error names the key"
# GPUs that answer NOT_SUPPORTED for their error counters and clock reasons (ECC off, an older
# GPU), no kernel log: nothing was read, so nothing passes.
"$MPIRUN" -n 4 -x SHAKEDOWN_TEST_NVML_LIBRARY="$SHAKEDOWN_FAKE_NVML" \
  -x FAKE_NVML_UNSUPPORTED=reasons,ecc,remap,events -x SHAKEDOWN_TEST_KERNEL_LOG=/nonexistent/kmsg \
  "$SHAKEDOWN" run --virtual-nodes 2 "${phases[@]}" --out "$TMP/unread.h5" >"$TMP/unread.out" 2>&1
expect_rc 0 $? "GPUs whose counters cannot be read"
"$SHAKEDOWN" summary --detail "$TMP/unread.h5" >"$TMP/unread.detail" 2>&1
expect_in "$TMP/unread.detail" "\[SKIP\] telemetry.gpu_errors: 2 GPU\(s\) sampled, but none answered for ECC errors, row remapping or Xid events" "unread error counters are not a PASS"
expect_in "$TMP/unread.detail" "\[SKIP\] telemetry.throttling: 2 GPU\(s\) sampled, but none answered for its clock event reasons" "unread clock reasons are not a PASS"
pass "telemetry: recorded per node, faults named by node and GPU, NVML optional, off, bad key, unreadable counters"

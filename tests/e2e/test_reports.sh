#!/usr/bin/env bash
# Machine-readable reports: `run --report` and `summary --format ... -o` write JSON (valid
# against docs/report-schema.json), JUnit XML and a Prometheus textfile that agree with each
# other and with the exit code, for a failing run and an aborted one; bad formats and
# unwritable paths are clear errors. (The smoke run's reports are checked in test_verdict.sh.)
source "$(dirname "$0")/lib.sh"
SCHEMA="$SHAKEDOWN_SOURCE_DIR/docs/report-schema.json"
CHECK="$SHAKEDOWN_SOURCE_DIR/tests/e2e/check_reports.py"
declare -A SUFFIX=([json]=json [junit]=junit.xml [prometheus]=prom)  # as run --report names them

# ---- a CPU run held to h100-sxm: platform.match fails in every report ------------------------
"$MPIRUN" -n 2 "$SHAKEDOWN" run --phases inventory,collectives --set collectives.sizes=64K \
  --set collectives.ops=[all_reduce] --set collectives.scopes=[world] --set collectives.iters=2 \
  --set checks.platform=h100-sxm --report json,junit,prometheus --out "$TMP/h100.h5" \
  >"$TMP/h100" 2>&1
expect_rc 1 $? "a CPU run held to h100-sxm"
for suffix in "${SUFFIX[@]}"; do
  expect_in "$TMP/h100" "wrote the [a-z]+ report $TMP/h100.$suffix" "report .$suffix written"
done
/usr/bin/python3 "$CHECK" "$TMP/h100" 1 --schema "$SCHEMA" >"$TMP/check" 2>&1 ||
  { cat "$TMP/check"; fail "the failing run's reports"; }
expect_in "$TMP/check" "^json: valid, verdict fail" "JSON verdict fail"
/usr/bin/python3 - "$TMP/h100" <<'PY' || fail "failing run: report contents"
import json, sys, xml.etree.ElementTree as ET
from prometheus_client.parser import text_string_to_metric_families
stem = sys.argv[1]
r = json.load(open(stem + ".json"))
bad = [f for f in r["checks"] if f["status"] == "fail"]
assert [f["check"] for f in bad] == ["platform.match"], bad
assert r["checks"][0] == bad[0], "failed findings come first"
assert r["run"]["platform"] == "h100-sxm" and r["gemm"] is None
assert r["collectives"]["sweeps"][0]["scope"] == "world" and r["collectives"]["sweeps"][0]["sizes"][-1]["bytes"] == 65536
root = ET.parse(stem + ".junit.xml").getroot()
fails = [c for c in root.iter("testcase") if c.find("failure") is not None]
assert [(c.get("classname"), c.get("name")) for c in fails] == [("platform", "platform.match")], [c.attrib for c in fails]
assert "H100" in fails[0].find("failure").get("message")
fam = {f.name: f for f in text_string_to_metric_families(open(stem + ".prom").read())}
st = {s.labels["check"]: s.value for s in fam["shakedown_check_status"].samples}
assert st["platform.match"] == 2 and st["collectives.coverage"] == 0, st
bw = [s for s in fam["shakedown_busbw_gbps"].samples if s.labels["size"] == "65536"]
assert bw and bw[0].labels["scope"] == "world" and bw[0].labels["op"] == "all_reduce" and bw[0].value > 0, bw
PY

# ---- wrong data (on_wrong: continue): corruption, the rank's host to drain ------------------
"$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 --phases collectives \
  --set collectives.sizes=8:1K --set collectives.iters=2 --set collectives.warmup=0 \
  --set collectives.scopes=world --set collectives.ops=[all_reduce] --set collectives.on_wrong=continue \
  --inject corrupt:rank=2,phase=collectives --report json,junit,prometheus --out "$TMP/wrong.h5" \
  >"$TMP/wrong" 2>&1
expect_rc 3 $? "wrong data"
/usr/bin/python3 "$CHECK" "$TMP/wrong" 3 --schema "$SCHEMA" >"$TMP/check" 2>&1 ||
  { cat "$TMP/check"; fail "the corrupted run's reports"; }
expect_in "$TMP/check" "^json: valid, verdict corruption" "JSON verdict corruption"
/usr/bin/python3 - "$TMP/wrong" <<'PY' || fail "corrupted run: report contents"
import json, sys, xml.etree.ElementTree as ET
stem = sys.argv[1]
r = json.load(open(stem + ".json"))
bad = [f for f in r["checks"] if f["check"] == "collectives.wrong_data" and f["status"] == "fail"]
assert len(bad) == 1 and bad[0]["rank"] == 2 and bad[0]["node"] == 1 and bad[0]["corruption"], bad
assert r["drain"] and r["drain"][0]["host"] == bad[0]["host"] and r["drain"][0]["nodes"] == [1], r["drain"]
assert r["drain"][0]["command"].startswith("scontrol update NodeName=" + bad[0]["host"] + " State=DRAIN")
sizes = r["collectives"]["sweeps"][0]["sizes"]
assert any(z["wrong_elements"] > 0 for z in sizes) and r["collectives"]["wrong_elements"] > 0
root = ET.parse(stem + ".junit.xml").getroot()
f = [c for c in root.iter("testcase") if c.find("failure") is not None]
assert f[0].get("name") == "collectives.wrong_data rank 2" and f[0].find("failure").get("type") == "corruption", [c.attrib for c in f]
PY

# summary writes the same reports from the file (the stored verdict): byte for byte.
for f in json junit prometheus; do
  suffix=${SUFFIX[$f]}
  "$SHAKEDOWN" summary "$TMP/h100.h5" --format $f -o "$TMP/again.$suffix"
  expect_rc 1 $? "summary --format $f"
  cmp -s "$TMP/h100.$suffix" "$TMP/again.$suffix" || fail "summary --format $f differs from run --report"
done
ls -a "$TMP" | grep -q '\.tmp\.' && fail "a temporary report file was left behind"

# ---- an aborted run: reports still come from its file -----------------------------------------
"$MPIRUN" -n 4 "$SHAKEDOWN" run --virtual-nodes 2 --phases gemm --set timeouts.phase_s=30 \
  --inject fail:rank=1,phase=gemm --out "$TMP/abort.h5" >"$TMP/abort" 2>&1
expect_rc 3 $? "planted failure"
for f in json junit prometheus; do
  suffix=${SUFFIX[$f]}
  "$SHAKEDOWN" summary "$TMP/abort.h5" --format $f -o "$TMP/abort.$suffix"
  expect_rc 3 $? "summary --format $f of an aborted run"
done
/usr/bin/python3 "$CHECK" "$TMP/abort" 3 --schema "$SCHEMA" >"$TMP/check" 2>&1 ||
  { cat "$TMP/check"; fail "the aborted run's reports"; }
expect_in "$TMP/check" "^json: valid, verdict aborted" "JSON verdict aborted"
expect_in "$TMP/abort.junit.xml" '<testcase classname="run" name="run.status">' "JUnit run.status testcase"
expect_in "$TMP/abort.junit.xml" '<error message="ABORTED \(status aborted\): rank 1 ' "JUnit error names the rank"

# ---- bad input ---------------------------------------------------------------------------
"$SHAKEDOWN" summary "$TMP/h100.h5" --format yaml >"$TMP/bad" 2>&1
expect_rc 2 $? "an unknown --format"
expect_in "$TMP/bad" '--format: unknown format "yaml" \(known: text, json, junit, prometheus\)' "formats listed"
"$MPIRUN" -n 2 "$SHAKEDOWN" run --phases gemm --report json,xml --out "$TMP/never.h5" >"$TMP/bad" 2>&1
expect_rc 2 $? "an unknown --report"
expect_in "$TMP/bad" '--report: unknown format "xml" \(known: text, json, junit, prometheus, html\)' "run lists formats"
[[ -e "$TMP/never.h5" || -e "$TMP/never.h5.partial" ]] && fail "a refused run left a file"
"$SHAKEDOWN" summary "$TMP/h100.h5" --format json -o "$TMP/no/such/dir/r.json" >"$TMP/bad" 2>&1
expect_rc 3 $? "an unwritable -o"
expect_in "$TMP/bad" "cannot write the report '$TMP/no/such/dir/r.json'" "path named"
cp "$TMP/h100.h5" "$TMP/keep.h5"
"$SHAKEDOWN" summary "$TMP/h100.h5" --format json -o "$TMP/h100.h5" >"$TMP/bad" 2>&1
expect_rc 2 $? "-o naming the run file"
expect_in "$TMP/bad" "is the run file itself" "refused, saying why"
cmp -s "$TMP/h100.h5" "$TMP/keep.h5" || fail "summary -o overwrote the run file"
pass "reports agree with each other and the exit code; bad formats and paths are clear errors"

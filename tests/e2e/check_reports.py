#!/usr/bin/python3
"""Checks the machine-readable reports of one run against each other and their formats.

Usage: check_reports.py STEM EXIT_CODE [--schema docs/report-schema.json]
STEM.json is validated against the JSON Schema (python3-jsonschema); STEM.junit.xml is parsed
with Python's xml module; STEM.prom with prometheus_client's own text parser. The three must
agree with each other and with the run's exit code. Prints one line per report; exits 1 naming
the first disagreement.
"""
import json
import sys
import xml.etree.ElementTree as ET

import jsonschema
from prometheus_client.parser import text_string_to_metric_families


def fail(msg):
    print(f"check_reports: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    stem, want_rc = sys.argv[1], int(sys.argv[2])
    schema_path = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--schema" else None
    report = json.load(open(stem + ".json"))
    if schema_path:
        schema = json.load(open(schema_path))
        jsonschema.Draft202012Validator.check_schema(schema)
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(report))
        if error is not None:
            fail(f"{stem}.json does not match {schema_path}: at "
                 f"/{'/'.join(str(p) for p in error.absolute_path)}: {error.message[:300]}")
    verdict = report["verdict"]
    if verdict["exit_code"] != want_rc:
        fail(f"JSON exit_code {verdict['exit_code']}, the run exited {want_rc}")
    findings = report["checks"]
    counts = {s: sum(1 for f in findings if f["status"] == s) for s in ("pass", "warn", "fail", "skip")}
    print(f"json: valid, verdict {verdict['status']}, {len(findings)} findings {counts}, "
          f"{len(report['drain'])} to drain")

    # JUnit: one testcase per finding (plus run.status when the run ended badly).
    root = ET.parse(stem + ".junit.xml").getroot()
    if root.tag != "testsuites":
        fail("JUnit root is not <testsuites>")
    cases = root.findall("./testsuite/testcase")
    extra = 1 if verdict["status"] in ("aborted", "incomplete", "error") else 0
    if len(cases) != len(findings) + extra or int(root.get("tests")) != len(cases):
        fail(f"JUnit has {len(cases)} testcases (tests={root.get('tests')}), JSON {len(findings)} findings")
    failures = root.findall("./testsuite/testcase/failure")
    if len(failures) != counts["fail"] or int(root.get("failures")) != counts["fail"]:
        fail(f"JUnit has {len(failures)} failures, JSON {counts['fail']} failed findings")
    if len(root.findall("./testsuite/testcase/skipped")) != counts["skip"]:
        fail("JUnit skipped count differs from JSON")
    for suite in root.findall("testsuite"):
        for case in suite.findall("testcase"):
            if case.get("classname") != suite.get("name"):
                fail(f"testcase {case.get('name')} has classname {case.get('classname')} in suite {suite.get('name')}")
    print(f"junit: {len(cases)} testcases, {len(failures)} failures")

    # Prometheus textfile.
    families = {f.name: f for f in text_string_to_metric_families(open(stem + ".prom").read())}
    for name in ("shakedown_run_info", "shakedown_check_status", "shakedown_verdict_exit_code",
                 "shakedown_checks", "shakedown_run_started_timestamp_seconds"):
        if name not in families:
            fail(f"{stem}.prom has no {name}")
    exit_code = families["shakedown_verdict_exit_code"].samples[0]
    if exit_code.value != want_rc or exit_code.labels["status"] != verdict["status"]:
        fail(f"shakedown_verdict_exit_code {exit_code}, want {want_rc} {verdict['status']}")
    status_value = {"pass": 0, "warn": 1, "fail": 2, "skip": -1}
    worst = {}
    for f in findings:
        key = (f["check"], f["subject"])
        worst[key] = max(worst.get(key, -2), status_value[f["status"]])
    got = {(s.labels["check"], s.labels["subject"]): s.value for s in families["shakedown_check_status"].samples}
    if got != worst:
        fail(f"shakedown_check_status differs from the JSON findings: {set(got.items()) ^ set(worst.items())}")
    if report["collectives"]:
        bw = families.get("shakedown_busbw_gbps")
        if bw is None or not bw.samples:
            fail("collectives ran but there is no shakedown_busbw_gbps")
        for s in bw.samples:
            if set(s.labels) - {"host"} != {"scope", "op", "dtype", "mode", "size", "node"}:
                fail(f"shakedown_busbw_gbps labels {sorted(s.labels)}")
        measured = sum(1 for sw in report["collectives"]["sweeps"] for z in sw["sizes"]
                       if z["measured"] and z["busbw_GBps"] is not None)
        whole = sum(1 for s in bw.samples if s.labels["node"] == "all")
        if whole != measured:
            fail(f"{whole} whole-scope busbw series, {measured} measured sizes in the JSON")
    if report["gemm"]:
        tf = families.get("shakedown_gemm_tflops")
        per_rank = sum(1 for sh in report["gemm"]["shapes"] for v in sh["rank_tflops"] if v is not None)
        if tf is None or len(tf.samples) != per_rank:
            fail(f"shakedown_gemm_tflops has {0 if tf is None else len(tf.samples)} series, JSON {per_rank}")
        for s in tf.samples:
            if not {"shape", "rank", "node"} <= set(s.labels):
                fail(f"shakedown_gemm_tflops labels {sorted(s.labels)}")
    print(f"prometheus: {sum(len(f.samples) for f in families.values())} samples in {len(families)} families")


if __name__ == "__main__":
    main()

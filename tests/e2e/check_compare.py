#!/usr/bin/python3
"""Checks the machine-readable outputs of one `shakedown compare` against each other.

Usage: check_compare.py STEM EXIT_CODE SCHEMA [PLACE_REGEX]
STEM.json is validated against SCHEMA (docs/compare-schema.json, python3-jsonschema);
STEM.junit.xml is parsed with Python's xml module, STEM.prom with prometheus_client's parser.
They must agree with each other and with the command's exit code; with PLACE_REGEX, the slower
places must be exactly one, matching it. Prints one line per format; exits 1 naming the first
disagreement.
"""
import json
import re
import sys
import xml.etree.ElementTree as ET

import jsonschema
from prometheus_client.parser import text_string_to_metric_families


def fail(msg):
    print(f"check_compare: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    stem, want_rc, schema_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    place_re = sys.argv[4] if len(sys.argv) > 4 else None
    report = json.load(open(stem + ".json"))
    schema = json.load(open(schema_path))
    jsonschema.Draft202012Validator.check_schema(schema)
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(report))
    if error is not None:
        fail(f"{stem}.json does not match {schema_path}: at "
             f"/{'/'.join(str(p) for p in error.absolute_path)}: {error.message[:300]}")
    if report["exit_code"] != want_rc:
        fail(f"JSON exit_code {report['exit_code']}, the command exited {want_rc}")
    counts = report["counts"]
    items = report["items"]
    by_result = {r: sum(1 for i in items if i["result"] == r) for r in ("slower", "faster", "unchanged", "not_judged")}
    if by_result != {k: counts[k] for k in by_result}:
        fail(f"item results {by_result} differ from counts {counts}")
    slower = [p["place"] for p in report["places"] if p["result"] == "slower"]
    if len(slower) != counts["slower_places"] or (len(slower) > 0) != (want_rc == 1):
        fail(f"{len(slower)} slower places, counts say {counts['slower_places']}, exit {want_rc}")
    if place_re is not None and (len(slower) != 1 or not re.search(place_re, slower[0])):
        fail(f"slower places {slower}, expected exactly one matching /{place_re}/")
    print(f"json: valid, {report['verdict']}, {len(items)} items {by_result}, "
          f"{len(report['places'])} places, slower: {slower}")

    root = ET.parse(stem + ".junit.xml").getroot()
    # The verdict is a test case of its own (compare.verdict), failed when the run regressed and
    # skipped when nothing was judged; the other cases are the places.
    verdict = root.findall("./testsuite[@name='compare.verdict']/testcase")
    if len(verdict) != 1:
        fail(f"JUnit has {len(verdict)} compare.verdict testcases, expected 1")
    regressed = report["verdict"] == "regressed"
    if (verdict[0].find("failure") is not None) != regressed:
        fail(f"JUnit verdict testcase failure={verdict[0].find('failure') is not None}, JSON {report['verdict']}")
    if (verdict[0].find("skipped") is not None) != (report["verdict"] == "nothing_judged"):
        fail(f"JUnit verdict testcase skipped={verdict[0].find('skipped') is not None}, JSON {report['verdict']}")
    cases = [c for suite in root.findall("./testsuite") if suite.get("name") != "compare.verdict"
             for c in suite.findall("testcase")]
    failures = [f for c in cases for f in c.findall("failure")]
    if root.tag != "testsuites" or len(cases) != len(report["places"]) or int(root.get("tests")) != len(cases) + 1:
        fail(f"JUnit has {len(cases)} place testcases, JSON {len(report['places'])} places")
    if len(failures) != len(slower) or int(root.get("failures")) != len(slower) + (1 if regressed else 0):
        fail(f"JUnit has {len(failures)} failures, JSON {len(slower)} slower places")
    failed_names = [c.get("name") for c in cases if c.find("failure") is not None]
    if failed_names != slower:
        fail(f"JUnit failed testcases {failed_names}, JSON slower places {slower}")
    print(f"junit: {len(cases)} testcases, {len(failures)} failures")

    families = {f.name: f for f in text_string_to_metric_families(open(stem + ".prom").read())}
    regressed = families["shakedown_compare_regressed"].samples[0].value
    if regressed != want_rc:
        fail(f"prometheus shakedown_compare_regressed {regressed}, exit {want_rc}")
    places = {s.labels["result"]: s.value for s in families["shakedown_compare_places"].samples}
    if places["slower"] != len(slower):
        fail(f"prometheus slower places {places['slower']}, JSON {len(slower)}")
    ratios = [s for s in families["shakedown_compare_place_ratio"].samples
              if s.labels["result"] == "slower"] if "shakedown_compare_place_ratio" in families else []
    if sorted(s.labels["place"] for s in ratios) != sorted(slower) or any(s.value <= 1 for s in ratios):
        fail(f"prometheus slower place ratios {ratios} differ from JSON {slower}")
    print(f"prometheus: regressed {int(regressed)}, places {places}")


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Validates a run file against the schema's descriptors (scripts/schema.json, generated from
src/record/schema.hpp): every dataset in the file has a descriptor and the declared element type
and number of dimensions; every group that holds one of a template's datasets holds all the
required ones. Prints a one-line account; exits 1 naming the first mismatch.

Usage: check_schema.py RUN.h5 SCHEMA.json
"""
import json
import re
import sys

import h5py

TYPES = {"float64": "<f8", "float32": "<f4", "int64": "<i8", "uint64": "<u8"}


def fail(msg):
    print(f"check_schema: {msg}", file=sys.stderr)
    sys.exit(1)


def template_regex(group):
    return re.compile("^" + re.sub(r"<[a-z]+>", "[^/]+", re.escape(group)) + "$")


def main():
    path, schema_path = sys.argv[1], sys.argv[2]
    schema = json.load(open(schema_path))
    specs = schema["datasets"]
    for s in specs:
        s["regex"] = template_regex(s["group"])
    with h5py.File(path, "r") as f:
        if int(f.attrs["schema_version"]) != schema["schema_version"]:
            fail(f"file schema {f.attrs['schema_version']}, descriptors {schema['schema_version']}")
        found = []  # (group path, spec)

        def visit(name, obj):
            if not isinstance(obj, h5py.Dataset):
                return
            full = "/" + name
            group, _, leaf = full.rpartition("/")
            group = group or "/"
            match = [s for s in specs if s["name"] == leaf and s["regex"].match(group)]
            if not match:
                fail(f"{full}: no descriptor in {schema_path}")
            s = match[0]
            if s["type"] == "table":
                if obj.dtype.names is None or obj.ndim != 1:
                    fail(f"{full}: declared a table, is {obj.dtype} {obj.shape}")
            else:
                if obj.dtype.str != TYPES[s["type"]]:
                    fail(f"{full}: declared {s['type']}, stored {obj.dtype}")
                if obj.ndim != len(s["dims"]):
                    fail(f"{full}: declared [{', '.join(s['dims'])}], stored shape {obj.shape}")
            found.append((group, s))
            # A dimension named "ranks" is the group's columns: as long as its `ranks` dataset.
            if "ranks" in s["dims"] and s["name"] != "ranks":
                if "ranks" not in obj.parent:
                    fail(f"{full}: has a [ranks] dimension but {group} has no ranks dataset")
                want = obj.parent["ranks"].shape[0]
                got = obj.shape[s["dims"].index("ranks")]
                if got != want:
                    fail(f"{full}: {got} columns, {group}/ranks lists {want} ranks")

        f.visititems(visit)
        groups = {}
        for group, s in found:
            groups.setdefault((group, s["group"]), set()).add(s["name"])
        for (group, template), names in groups.items():
            need = {s["name"] for s in specs if s["group"] == template and s["required"]}
            if missing := sorted(need - names):
                fail(f"{group}: required datasets missing: {', '.join(missing)}")
    kinds = sorted({s["path"] for _, s in found})
    print(f"check_schema: {len(found)} datasets in {len(groups)} groups match {len(kinds)} descriptors")


if __name__ == "__main__":
    main()

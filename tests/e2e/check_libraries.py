#!/usr/bin/env python3
"""Which shared libraries did each process map? Reads the glibc loader's LD_DEBUG=files
output (LD_DEBUG_OUTPUT=DIR/ld gives DIR/ld.<pid> per process started with it; a child that
forks without exec writes into its parent's file under its own pid) and fails when a process
itself — not a child it forked to ask a library's version — mapped a forbidden library.

  check_libraries.py DIR [--allow REGEX]

A library counts as mapped when the loader generated its link map ("generating link map"):
an RTLD_NOLOAD probe or a library that was looked for and not found does not.
"""
import argparse
import pathlib
import re
import sys

# NCCL, cuBLASLt, the CUDA runtime and driver, UCX: loaded at first use only.
FORBIDDEN = re.compile(r"(libnccl|libcublas|libcudart|libcuda\.|libnvidia-ml|libuc[pstm])")
MAPPED = re.compile(r"^\s*(\d+):\s+file=(\S+)\s+\[\d+\];\s+generating link map")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--allow", default=None, help="a regex of libraries allowed after all")
    args = ap.parse_args()
    allow = re.compile(args.allow) if args.allow else None
    files = sorted(pathlib.Path(args.dir).glob("ld.*"))
    if not files:
        print(f"check_libraries: no LD_DEBUG output in {args.dir}", file=sys.stderr)
        return 2
    bad = []
    for f in files:
        pid = f.suffix.lstrip(".")
        mapped = set()
        for line in f.read_text(errors="replace").splitlines():
            m = MAPPED.match(line)
            if m and m.group(1) == pid:
                mapped.add(m.group(2))
        for lib in sorted(mapped):
            if FORBIDDEN.search(lib) and not (allow and allow.search(lib)):
                bad.append(f"process {pid} ({f.name}) mapped {lib}")
        print(f"{f.name}: {len(mapped)} libraries mapped")
    for b in bad:
        print("FORBIDDEN:", b, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

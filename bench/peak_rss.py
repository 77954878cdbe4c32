#!/usr/bin/env python3
"""Runs a command and prints its peak resident memory (the largest of it and the processes it
waited for, as getrusage(RUSAGE_CHILDREN) reports) and its wall time; exits with its code.

  peak_rss.py [--label TEXT] [--out FILE] -- COMMAND [ARGS...]

Used per rank under mpirun by bench/footprint.sh and tests/e2e/test_footprint.sh:
  mpirun -n 4 python3 bench/peak_rss.py --out DIR/rss.%r -- shakedown run ...
(%r in --out becomes the rank, from OMPI_COMM_WORLD_RANK).
"""
import argparse
import os
import resource
import subprocess
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default=None)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no command given")
    start = time.monotonic()
    rc = subprocess.run(cmd).returncode
    wall = time.monotonic() - start
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    rank = os.environ.get("OMPI_COMM_WORLD_RANK", "0")
    line = f"{args.label or os.path.basename(cmd[0])} rank {rank}: peak_rss_MB {peak_mb:.1f} wall_s {wall:.3f} rc {rc}"
    if args.out:
        with open(args.out.replace("%r", rank), "w") as f:
            f.write(line + "\n")
    else:
        print(line, file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())

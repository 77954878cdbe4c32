#!/usr/bin/env python3
"""Print what a shakedown run file holds: root attributes, ranks, placement checks, clock offsets,
the gemm, train and checkpoint phases per rank, and every dataset.

Usage:
    scripts/analyze.py RUN.h5            (a finished run, or RUN.h5.partial of a running/dead one)

The file is plain HDF5. Its layout (every dataset's path, type, dimensions, unit and meaning) is
scripts/schema.json next to this script, generated from src/record/schema.hpp; docs/schema.md
is the same as a table. Load the tables yourself like this:

    import h5py, pandas as pd
    with h5py.File("run.h5", "r") as f:
        meta = dict(f.attrs)                                   # status, world_size, ...
        ranks = pd.DataFrame(f["/topology/ranks"][()])         # one row per rank
        ranks = ranks.apply(lambda c: c.str.decode("utf-8") if c.dtype == object else c)
        gpus = pd.DataFrame(f["/inventory/gpus"][()])          # node_index + GPU fields
        offsets = f["/clock/offset_us"][()]                    # numpy array [world]
        sweep = f["/collectives/world/all_reduce/float32_sum/out_of_place"]
        t = sweep["time_us"][()]                               # [sizes, iters, ranks] float32
        cols = sweep["ranks"][()]                              # the world rank of each column
        g = f["/gemm/256x768x256"]                             # one GEMM shape
        tflops = pd.DataFrame(g["tflops"][()])                 # [iters, world]: a column per rank

Needs h5py and pandas. If the file system lacks flock: HDF5_USE_FILE_LOCKING=FALSE.
"""
import os
import sys

os.environ.setdefault("HDF5_USE_FILE_LOCKING", "FALSE")  # never block (or be blocked by) rank 0

SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, where scripts/install-deps.sh puts h5py and pandas

try:
    import h5py
    import numpy as np
    import pandas as pd
except ImportError as exc:  # pragma: no cover - depends on the machine
    # `env python3` may find another Python first (pyenv, conda, a venv) without the packages.
    # The system one has them once install-deps.sh ran: use it, and say so.
    here = os.path.realpath(sys.executable or "")
    if (os.access(SYSTEM_PYTHON, os.X_OK) and os.path.realpath(SYSTEM_PYTHON) != here
            and not os.environ.get("SHAKEDOWN_ANALYZE_REEXEC")):
        print(f"analyze.py: {sys.executable} (Python {sys.version.split()[0]}) has no {exc.name}; "
              f"running with {SYSTEM_PYTHON}", file=sys.stderr)
        os.environ["SHAKEDOWN_ANALYZE_REEXEC"] = "1"
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])
    sys.exit(f"analyze.py: {sys.executable} (Python {sys.version.split()[0]}) cannot import "
             f"{exc.name}: it needs h5py and pandas. On Debian/Ubuntu install python3-h5py and "
             f"python3-pandas (scripts/install-deps.sh does) and run it with {SYSTEM_PYTHON}: "
             f"{SYSTEM_PYTHON} {sys.argv[0]} RUN.h5; or pip install h5py pandas for this Python")


SCHEMA_JSON = os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema.json")


def load_schema():
    """The descriptors of scripts/schema.json: path template -> descriptor, and a matcher."""
    import json
    import re
    with open(SCHEMA_JSON) as f:
        schema = json.load(f)
    for d in schema["datasets"]:
        d["regex"] = re.compile("^" + re.sub(r"<[a-z]+>", "[^/]+", re.escape(d["path"])) + "$")
    return schema


SCHEMA = load_schema()


def spec(path):
    """The descriptor of the dataset at `path` (a template filled in), or None."""
    return next((d for d in SCHEMA["datasets"] if d["regex"].match(path)), None)


def template(path):
    """The descriptor path `path` names exactly ("/clock/offset_us")."""
    d = next(d for d in SCHEMA["datasets"] if d["path"] == path)
    return d["path"]


def text(value):
    """HDF5 strings come back as bytes (datasets) or str (attributes); give str."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.ndarray) and value.shape == ():
        return text(value[()])
    return value


def table(f, path):
    """A compound dataset as a DataFrame with str columns, or None when the run did not write it."""
    if path not in f:
        return None
    frame = pd.DataFrame(f[path][()])
    for name in frame.columns:
        if frame[name].dtype == object:
            frame[name] = frame[name].map(text)
    return frame


def section(title):
    print(f"\n== {title} ==")


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) == 2 else 2
    path = argv[1]
    if not os.path.exists(path):
        hint = f" (still running or died? try {path}.partial)" if os.path.exists(path + ".partial") else ""
        print(f"analyze.py: run file '{path}' does not exist{hint}", file=sys.stderr)
        return 2
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        print(f"analyze.py: cannot open '{path}' as HDF5: {exc}", file=sys.stderr)
        return 2
    with f:
        if "schema_version" not in f.attrs:
            print(f"analyze.py: '{path}' is not a shakedown run file (no schema_version)",
                  file=sys.stderr)
            return 2

        section(f"run {path}")
        for key in f.attrs:
            value = text(f.attrs[key])
            if key == "config_yaml":
                value = f"<{len(value)} characters of YAML>"
            print(f"{key:>18}: {value}")

        pd.set_option("display.width", 200)
        pd.set_option("display.max_columns", 40)
        pd.set_option("display.max_rows", 200)

        section("ranks (/topology/ranks)")
        ranks = table(f, template("/topology/ranks"))
        print("not written" if ranks is None else ranks.to_string(index=False))

        section("placement checks (/topology/placement_checks)")
        checks = table(f, template("/topology/placement_checks"))
        if checks is None:
            print("not written")
        elif checks.empty:
            print("none")
        else:
            print(checks.to_string(index=False))

        section("clock (/clock)")
        offset, rtt = template("/clock/offset_us"), template("/clock/rtt_us")
        if offset in f:
            clock = pd.DataFrame({"offset_us": f[offset][()]})
            if rtt in f:
                clock["rtt_us"] = f[rtt][()]
            clock.index.name = "rank"
            print(clock.to_string())
        else:
            print("not written")

        if "/gemm" in f:
            section("gemm (/gemm): per rank, median TFLOP/s over iterations")
            shapes = sorted((g.attrs.get("order", 0), name) for name, g in f["/gemm"].items()
                            if isinstance(g, h5py.Group))
            for _, name in shapes:
                g = f["/gemm"][name]
                if "tflops" not in g:
                    print(f"{name}: skipped: {text(g.attrs.get('skip_reason', ''))}")
                    continue
                per_rank = pd.DataFrame({
                    "tflops": np.median(g["tflops"][()], axis=0),
                    "max_rel_err": g["max_rel_err"][()],
                    "err_bound_ratio": g["err_bound_ratio"][()],
                    "output_hash": [f"{h:016x}" for h in g["output_hash"][()]],
                })
                per_rank.index.name = "rank"
                print(f"{name} ({text(g.attrs['a_format'])} x {text(g.attrs['b_format'])} -> "
                      f"{text(g.attrs['out_dtype'])}, engine {text(g.attrs['engine'])})")
                print(per_rank.to_string())

        if "/train" in f and "step_ms" in f["/train"]:
            section("train (/train): per rank, medians over the measured steps (ms)")
            g = f["/train"]
            names = ["step_ms", "fwd_ms", "bwd_ms", "tp_comm_ms", "dp_exposed_ms", "optim_ms",
                     "dp_arrival_us"]
            per_rank = pd.DataFrame({n: np.median(g[n][()], axis=0) for n in names if n in g})
            per_rank.index.name = "rank"
            print(f"{text(g.attrs.get('model', ''))}, tp {g.attrs.get('tp', '')} x "
                  f"dp {g.attrs.get('dp', '')}, engine {text(g.attrs.get('engine', ''))}")
            print(per_rank.to_string())

        if "/checkpoint" in f and "write_s" in f["/checkpoint"]:
            section("checkpoint (/checkpoint): per rank, medians over the checkpoints (s)")
            g = f["/checkpoint"]
            names = ["open_s", "write_s", "fsync_s", "close_s", "read_s"]
            per_rank = pd.DataFrame({n: np.median(g[n][()], axis=0) for n in names if n in g})
            per_rank["bytes"] = g["bytes"][()]
            per_rank["reads_shard_of"] = g["reads_shard_of"][()]
            per_rank.index.name = "rank"
            print(f"{text(g.attrs.get('api', ''))} {text(g.attrs.get('layout', ''))} on "
                  f"{text(g.attrs.get('fs_type', ''))}; aggregate write GB/s per checkpoint "
                  f"{np.round(g['write_GBps'][()], 3).tolist()}, read "
                  f"{np.round(g['read_GBps'][()], 3).tolist()}")
            print(per_rank.to_string())

        section("datasets (unit and meaning from scripts/schema.json)")
        list_datasets(f)
    return 0


def list_datasets(group):
    """Every dataset under `group`. Walked by hand, not with visititems: in a file whose run
    ended in the middle of a write (a kill, a full disk) the object being written can be
    unreadable, and it is named instead of ending the listing."""
    try:
        names = list(group)
    except (RuntimeError, OSError) as exc:
        print(f"{group.name} unreadable ({exc}): the run ended while it was being written")
        return
    for name in names:
        path = f"{group.name.rstrip('/')}/{name}"
        try:
            obj = group[name]
        except (KeyError, RuntimeError, OSError) as exc:
            print(f"{path} unreadable ({exc}): the run ended while it was being written")
            continue
        if isinstance(obj, h5py.Group):
            list_datasets(obj)
        else:
            d = spec(path)
            about = f"[{d['unit']}] {d['doc']}" if d and d["unit"] else (d["doc"] if d else
                                                                        "(no descriptor)")
            print(f"{path} {obj.shape} {obj.dtype}  {about}")


if __name__ == "__main__":
    sys.exit(main(sys.argv))

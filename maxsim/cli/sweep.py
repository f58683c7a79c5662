"""``maxsim sweep``: a grid of configs, kernels, sizes and residencies into a table."""

from __future__ import annotations

import json
import os
import sys

from .common import PROGRESS_DELAY, UsageError, engine_and_cache, engine_options


def add_parser(sub):
    s = sub.add_parser("sweep", help="run a grid of configs, kernels, sizes and residencies into a table",
                       description="Run every point of a sweep spec (a TOML file: a grid and explicit points "
                                   "over config keys by their TOML names, SGEMM workloads or kernel files "
                                   "with their launch arguments, sizes and residency; see docs/sweeps.md) "
                                   "as `maxsim run --json` runs it, on a local Dask cluster or an existing "
                                   "one, and write a table, one row per point with every figure of "
                                   "`run --json`: BASE.parquet and BASE.csv.")
    s.add_argument("spec", help="the sweep spec (.toml)")
    s.add_argument("--table", metavar="BASE", default=None,
                   help="write the table to BASE.parquet and BASE.csv (default: the spec's path without .toml)")
    s.add_argument("--resume", action="store_true",
                   help="keep the rows already in the table and run only the points it lacks")
    s.add_argument("-o", "--output", metavar="FILE", default=None,
                   help="also draw a figure against an axis, one line per config (.png, .svg or .pdf)")
    s.add_argument("--x", metavar="COLUMN", default=None,
                   help="the column on the x axis of -o (default: the spec's [plot] x)")
    s.add_argument("--y", metavar="COLUMN", default=None,
                   help="the figure on the y axis of -o (default: the spec's [plot] y, else gflops: the launch's predicted GFLOPS; "
                        "sm_gflops is the timed SM's)")
    engine_options(s)
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument("--json", action="store_true", help="print the rows as a JSON list instead of a summary")
    s.set_defaults(handler=command)


def command(args):
    from ..report.progress import Progress
    from workloads.compare import workload_cache
    from workloads.sweep import load_spec, plot_sweep, sweep
    spec = load_spec(args.spec)
    base = args.table if args.table is not None else (args.spec[:-5] if args.spec.endswith(".toml") else args.spec)
    if args.table is not None and args.table.endswith((".parquet", ".csv")):
        base = os.path.splitext(args.table)[0]
    folder = os.path.dirname(os.path.abspath(base))
    if not os.path.isdir(folder):
        raise UsageError(f"--table {base}: the folder {folder} does not exist")
    x = args.x or spec.plot.get("x")
    y = args.y or spec.plot.get("y") or "gflops"
    from ..report.fields import KEPT_ALIASES, RENAMED
    for name in (x, y):
        if name in KEPT_ALIASES:
            print(f"maxsim: note: the column {name} is now named {RENAMED[name]} (the old name is kept for "
                  f"one release)", file=sys.stderr)
    if args.output:
        from ..report.plots import check_output_path
        check_output_path(args.output)
        if x is None:
            raise UsageError(f"-o {args.output}: give the x axis with --x COLUMN (or x in the spec's [plot])")
    engine, cache = engine_and_cache(args, workload_cache)
    bar = Progress(quiet=args.quiet or args.json, delay=PROGRESS_DELAY)
    try:
        with engine:
            rows, counts = sweep(spec, base, engine, cache=cache, resume=args.resume, progress=bar)
    finally:
        bar.close()
    if args.output:
        plot_sweep(rows, x, y, args.output, spec)
    if args.json:
        print(json.dumps(rows, indent=1, default=float))
    else:
        print(f"sweep {args.spec}: {counts['points']} points: {counts['computed']} computed "
              f"{engine.describe()}, {counts['cached']} from the result cache, {counts['resumed']} already "
              f"in the table")
        print(f"table written to {base}.parquet and {base}.csv ({len(rows)} rows)")
        if args.output:
            print(f"plot written to {args.output} ({y} against {x})")
    return 0

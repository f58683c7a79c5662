"""``maxsim validate``: every correlation of the model with hardware, as one table."""

from __future__ import annotations

import json
import os

from .common import UsageError, engine_and_cache, engine_options


def add_parser(sub):
    v = sub.add_parser("validate", help="every correlation of the model with hardware, as one table",
                       description="Run every correlation maxsim has with measured hardware and print one "
                                   "table, a row per figure: the micro-benchmarks of the timing model "
                                   "(latencies, issue rates, dual issue, register and shared-memory bank "
                                   "conflicts, L1/L2/DRAM latency by pointer chasing, texture and DRAM "
                                   "throughput, BAR.SYNC), run as kernels through the simulator; the "
                                   "static SGEMM figures (bank conflicts, reuse); the SGEMM main-loop "
                                   "cycles; and the SGEMM GFLOPS against the measured curves (MAPE per "
                                   "kernel). Each row: simulated, published, unit, source, deviation and "
                                   "pass/deviation within the tolerance of its kind.")
    v.add_argument("--gpu", "--config", dest="config", default="gtx980_oc", metavar="CONFIG",
                   help="architecture config: a shipped name (see `maxsim configs`) or a TOML file "
                        "(default gtx980_oc, the setup of the measured SGEMM curves)")
    v.add_argument("-o", "--output", metavar="FILE.html", default=None,
                   help="also write a self-contained HTML report: the table, the correlation plot, the "
                        "GFLOPS-against-N plot, the config and the sources")
    v.add_argument("--json", action="store_true", help="print the rows as a JSON list of objects")
    from workloads.sgemm.validate import LOOP_PROBLEM, QUICK_SIZES
    sizes = "; ".join(f"{k} N = {', '.join(map(str, v))}" for k, v in QUICK_SIZES.items())
    v.add_argument("--quick", action="store_true",
                   help=f"a short run (about 20 s of CPU): SGEMM GFLOPS at {sizes} only, main-loop cycles at "
                        f"K = {LOOP_PROBLEM['quick'][1]}, DRAM latency on cold data. The full run (minutes): "
                        f"every measured size, K = {LOOP_PROBLEM['full'][1]}, a chase after a pass over "
                        f"twice the L2")
    engine_options(v)
    v.add_argument("--quiet", action="store_true", help="no progress bar")
    v.set_defaults(handler=command)


def command(args):
    from ..arch.config import load_config
    from ..report.progress import Progress
    from ..validate import format_table, validate
    if args.output is not None and not args.output.lower().endswith((".html", ".htm")):
        raise UsageError(f"-o {args.output}: the report is HTML, give a file name ending in .html")
    if args.output is not None and not os.path.isdir(os.path.dirname(os.path.abspath(args.output))):
        raise UsageError(f"-o {args.output}: the folder {os.path.dirname(os.path.abspath(args.output))} "
                         f"does not exist")
    cfg = load_config(args.config)
    from workloads.compare import workload_cache
    engine, cache = engine_and_cache(args, workload_cache)
    bar = Progress(quiet=args.quiet)
    try:
        from workloads.sgemm import validate as sgemm_rows
        with engine:
            result = validate(cfg, quick=args.quick, progress=bar, sgemm=sgemm_rows, engine=engine, cache=cache)
    finally:
        bar.close()
    if args.output is not None:
        from ..validate.html import config_text, write_report
        write_report(result, args.output, config_text(cfg))
    if args.json:
        print(json.dumps(result.to_list(), indent=1))
    else:
        print(format_table(result))
        if args.output is not None:
            print(f"report written to {args.output}")
    return 0

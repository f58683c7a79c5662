"""``maxsim compare``: simulated against measured SGEMM GFLOPS on a whole GPU."""

from __future__ import annotations

import json
import sys

from .common import (PROGRESS_DELAY, WORKLOADS, UsageError, engine_and_cache, engine_options,
                     occupancy_choice, occupancy_options, sizes_list)


def add_parser(sub):
    cm = sub.add_parser("compare", help="simulated versus measured SGEMM GFLOPS on a whole GPU",
                        description="Predict the maxas SGEMM kernels on a whole GPU (sampled: short "
                                    "simulations of every SM of the GPU sharing one L2 and DRAM, of "
                                    "the first wave, of windows of the steady state and the starts of their waves, and of the tail, "
                                    "extrapolated in K) at every measured size, and compare with the measured GFLOPS "
                                    "in traces/ (GTX 980 at 1607 MHz): a table, the error at each point, "
                                    "the MAPE per kernel, and optionally a plot with cuBLAS as reference. "
                                    "With --workload all (the default) and no residency option, it adds "
                                    "the curve 'sgemm_64 at 3 warps/scheduler' (maxas's Max64-3: 6 CTAs "
                                    "per SM, 129 registers; predicted only) at the sgemm_64 sizes.")
    cm.add_argument("--workload", choices=WORKLOADS + ("all",), default="all",
                    help="which kernel to compare (default all)")
    cm.add_argument("--sizes", metavar="N[,N...]", type=sizes_list, default=None,
                    help="square sizes to predict (default: every measured size; for sgemm_64 also "
                         "N = 768 and every multiple of 512 from 1024 to the largest measured "
                         "sgemm_128 size, predicted only)")
    cm.add_argument("--gpu", "--config", dest="config", default="gtx980_oc",
                    help="architecture config (default gtx980_oc, the measured setup)")
    cm.add_argument("--l2-start", choices=("empty", "previous"), default="previous",
                    help="what the L2 holds when each predicted launch starts: 'previous' (default: what "
                         "the same launch left there, as in the measured benchmark, which times "
                         "back-to-back launches) or 'empty' (see docs/validation.md)")
    occupancy_options(cm, compare=True)
    cm.add_argument("-o", "--output", metavar="FILE", default=None,
                    help="also draw the comparison to this file (.png, .svg or .pdf): GFLOPS against N "
                         "and, when the predictions carry memory counters, a second row with the "
                         "predicted L2 hit rate (nvprof's l2_tex_read_hit_rate) and DRAM utilisation "
                         "(dram_utilization_fraction, of the peak bandwidth) against N")
    engine_options(cm)
    cm.add_argument("--quiet", action="store_true", help="no progress bar")
    cm.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    cm.set_defaults(handler=command)


def command(args):
    from ..arch.config import load_config
    from ..report.progress import Progress
    from ..timing.occupancy import OccupancyError
    from workloads.compare import compare, format_table, load_measurements, workload_cache
    cfg = load_config(args.config)
    names = WORKLOADS if args.workload == "all" else (args.workload,)
    flag, choice = occupancy_choice(args)
    # the default comparison also shows maxas's "Max64-3": sgemm_64 at 3 warps per scheduler
    variants = [("sgemm_64", {"warps_per_scheduler": 3})] if args.workload == "all" and choice is None else []
    extra = None
    if args.sizes is None and "sgemm_64" in names:
        # sgemm_64 is measured up to N = 512 only: above, its curve (and Max64-3's) is predicted on
        # a grid of 512 up to the largest measured sgemm_128 size, fine enough to show where the
        # kernel runs out of DRAM bandwidth, at a quarter of the predictions of every measured size
        top = max(load_measurements().get("sgemm_128", {512: None}))
        extra = {"sgemm_64": [768] + list(range(1024, top + 1, 512))}
    if args.output:
        from ..report.plots import check_output_path
        check_output_path(args.output)  # before the work
    engine, cache = engine_and_cache(args, workload_cache)
    bar = Progress(quiet=args.quiet or args.json, delay=PROGRESS_DELAY)
    try:
        with engine:
            result = compare(cfg, names, sizes=args.sizes, extra_sizes=extra, occupancy=choice, variants=variants,
                             engine=engine, cache=cache, l2_start=args.l2_start,
                             progress=lambda done, total: bar(done, total, "compare", "sizes"))
    except OccupancyError as e:
        if flag is None:
            raise
        raise UsageError(f"{flag}: {e}") from None
    finally:
        bar.close()
    if args.output:
        from ..report.compare_plot import has_memory, plot_comparison
        plot_comparison(result, args.output)
        result["plot"] = args.output
        if not has_memory(result):
            print(f"maxsim: {args.output}: the plot has no memory panels: the predictions carry no "
                  f"memory counters", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(format_table(result))
        if args.output:
            print(f"plot written to {args.output}")
    return 0

"""The ``maxsim`` command line: run, analyze, asm, configs, plot, compare, validate, sweep.

Every error a user can cause (a missing file, a malformed kernel, a bad size, a bad config) is
printed as one line on stderr with exit status 2; no Python traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

from .errors import MaxsimError, SourceWarning

WORKLOADS = ("sgemm_64", "sgemm_128")
PROGRESS_DELAY = 2.0  # seconds before a run draws its progress line (a short run prints none)


class UsageError(MaxsimError):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``maxsim run: error: ... (see `maxsim run --help`)``, status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


EXAMPLES = """examples:
  maxsim run sgemm_64                               generate, run and time the 64-thread SGEMM
  maxsim run sgemm_128 --m 512 --n 512 --k 256      the 256-thread kernel on a bigger problem
  maxsim run sgemm_64 --sass sgemm_final_64.sass    maxas's own kernel file in the same harness
  maxsim run bench.sass --grid 2 --block 128        a parameterless kernel of your own
  maxsim run workloads/kernels/vecadd.sass --grid 8 --block 128 --param n=1000 --param a=a --param b=b \
      --param c=c --buffer a=a.npy:in --buffer b=b.npy:in --buffer c=zeros:1000 --out results
                                                    a kernel with parameters and buffers (c saved as results/c.npy)
  maxsim run sgemm_64 --warps-per-scheduler 3       maxas's "Max64-3": 6 CTAs per SM (129 registers)
  maxsim run sgemm_64 --report run.html             the source view: every SASS line with its stalls,
                                                    bank conflicts, reuse and hit rates (one HTML page)
  maxsim compare --workload sgemm_64 --warps-per-scheduler 3 --json
  maxsim analyze sgemm_64 --traversal zigzag        static register-bank / reuse analysis
  maxsim plot conflicts -o conflicts.png            bank conflicts and reuse of every variant
  maxsim validate --quick -o report.html           model against hardware: table and HTML report
  maxsim sweep l2_dram.toml -o gflops.png --x gpu.dram_bandwidth_gbs
                                                    a design-space sweep into l2_dram.parquet / .csv
  maxsim configs                                    the shipped architecture configs
  maxsim asm kernel.sass -o kernel_final.sass       assemble the maxas source language
  maxsim asm kernel.sass -o kernel.cubin            ... or write a cubin for sm_52
  maxsim disasm kernel.cubin                        a cubin in maxas's text form
  maxsim asm --check kernel.cu                      check a kernel's control codes (any kernel file)
  maxsim run saxpy.cu --kernel saxpy --grid 4 --block 256 --param a=2.0 --param x=x --param y=y \
      --param n=1000 --buffer x=x.npy:in --buffer y=y.npy
                                                    CUDA C compiled for sm_52 (pip install "maxsim[cuda]")

Run `maxsim COMMAND --help` for the options of a command. Errors are one line on stderr, exit status 2.
"""


def _size(text):
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def _grid(text):
    try:
        parts = [int(p, 0) for p in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected X, X,Y or X,Y,Z, got {text!r}") from None
    if not 1 <= len(parts) <= 3 or min(parts) < 1:
        raise argparse.ArgumentTypeError(f"expected X, X,Y or X,Y,Z with positive numbers, got {text!r}")
    return tuple(parts) + (1,) * (2 - len(parts))


def _parser():
    p = _Parser(
        prog="maxsim", epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="A cycle-approximate simulator of the NVIDIA Maxwell streaming multiprocessor: "
                    "runs SASS kernels (maxas's text and source forms, cubins, CUDA C and PTX "
                    "compiled for sm_52), functionally and in time.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    r = sub.add_parser("run", help="run a workload (sgemm_64, sgemm_128) or a .sass, .cubin, .cu or .ptx file",
                       description="Run a workload or a SASS file: functional execution (SGEMM "
                                   "results checked against numpy) and the timing model of one SM "
                                   "(cycles, IPC, GFLOPS, stall reasons, bank conflicts, reuse, "
                                   "memory, residency, nvprof-named profiler metrics). Options --m/--n/--k, "
                                   "--traversal, --regmap, --no-reuse, --sass and --sm-ctas apply to the "
                                   "SGEMM workloads; --grid, --block, --shared, --param, --buffer, --texture, "
                                   "--predict, --out and --max-instructions to a .sass file (any kernel: "
                                   "its parameters by name or offset, buffers from .npy files, textures); "
                                   "--regs, --warps-per-scheduler and --ctas-per-sm to both.")
    r.add_argument("target", help="workload name (sgemm_64, sgemm_128), a maxas-format .sass file, a .cubin, "
                                  "or CUDA C (.cu) / PTX (.ptx) compiled for sm_52 (needs maxsim[cuda])")
    r.add_argument("--m", type=_size, default=None, help="SGEMM rows of A and C (default 256)")
    r.add_argument("--n", type=_size, default=None, help="SGEMM columns of C (default 256)")
    r.add_argument("--k", type=_size, default=None, help="SGEMM inner dimension, a multiple of 8 (default 256)")
    r.add_argument("--traversal", choices=("swirl", "zigzag", "raster"), default="swirl",
                   help="FFMA traversal order of the generated SGEMM (default swirl)")
    r.add_argument("--regmap", choices=("maxas", "naive"), default="maxas",
                   help="register map of the C block (default maxas)")
    r.add_argument("--no-reuse", action="store_true", help="generate the SGEMM without reuse flags")
    r.add_argument("--sass", metavar="PATH", help="run the SGEMM harness on this kernel file instead "
                                                  "of the generated one (e.g. maxas's sgemm_final_64.sass "
                                                  "with sgemm_64, sgemm_final_128.sass with sgemm_128)")
    r.add_argument("--grid", type=_grid, default=None, metavar="X[,Y[,Z]]",
                   help="grid of CTAs for a .sass file (default 1)")
    r.add_argument("--block", type=_grid, default=None, metavar="X[,Y[,Z]]",
                   help="threads per CTA for a .sass file (default 32)")
    r.add_argument("--shared", type=int, default=None, metavar="BYTES",
                   help="dynamic shared memory of a .sass file's CTAs, added to its SharedSize")
    r.add_argument("--param", action="append", default=None, metavar="NAME=VALUE",
                   help="a kernel parameter of a .sass file, by name (from the header's parameter "
                        "lines or the CONSTANT_MAPPING) or byte offset (0x148): an integer, a float "
                        "(2.5) or a buffer name (its address); repeat for each parameter")
    r.add_argument("--buffer", action="append", default=None, metavar="NAME=FILE.npy[:in]|NAME=zeros:SHAPE[:DTYPE]",
                   help="a global-memory buffer of a .sass file: the array of a .npy file (read back "
                        "after the run unless :in), or zeros (an output; SHAPE 1000 or 64x64, DTYPE "
                        "default float32); repeat for each buffer")
    r.add_argument("--texture", action="append", default=None, metavar="NAME=FILE.npy[:FORMAT]",
                   help="a 1D texture of a .sass file (NAME its number or a name the kernel gives it) "
                        "bound to a .npy array in FORMAT: float4 (default), float2, float1, int1/2/4, "
                        "uint1/2/4; texels out of range read 0")
    r.add_argument("--constant", action="append", default=None, metavar="BANK=FILE",
                   help="the data of constant bank BANK (1-17) of a .sass file: a .npy array as it lies "
                        "in memory or the raw bytes of a .bin file (nvcc puts __constant__ data in bank 3); "
                        "repeat for each bank")
    r.add_argument("--kernel", metavar="NAME", default=None,
                   help="for a .cubin, .cu or .ptx file: which kernel to run (its name; needed when the "
                        "file holds several)")
    r.add_argument("--predict", action="store_true",
                   help="for a .sass file: also predict the launch on the whole GPU of the config (every "
                        "CTA on every SM, sharing the L2 and DRAM; one CTA: the timed SM's run)")
    r.add_argument("--out", metavar="DIR", default=None,
                   help="for a .sass file: save every output buffer as DIR/NAME.npy, the summary as "
                        "DIR/summary.txt and the figures as DIR/report.json (DIR is made if missing)")
    r.add_argument("--gpu", "--config", dest="config", default="gm204", metavar="CONFIG",
                   help="architecture config: a shipped name (see `maxsim configs`) or a TOML file "
                        "(default gm204)")
    r.add_argument("--functional", action="store_true", help="functional run only (no timing)")
    r.add_argument("--check", choices=("auto", "all", "sampled"), default=None,
                   help="SGEMM result check: 'all' runs the whole grid functionally and checks all of C "
                        "(its time estimate is printed); 'sampled' runs the timed SM's CTAs and the last "
                        "CTA and checks their C tiles (the GPU prediction is sampled); 'auto' (default): "
                        "'all' up to 8 million warp instructions, else 'sampled'")
    r.add_argument("--gpu-method", choices=("sampled", "full"), default=None,
                   help="SGEMM: how the whole-GPU prediction is made: 'sampled' (default: short "
                        "simulations of the first wave, of a steady-state window and the start of its "
                        "wave, and of the tail) or 'full' (every CTA on every SM at the real K, as the "
                        "functional run of the whole grid goes: what the sampled prediction is held to; "
                        "minutes from N = 2048 on a GTX 980; needs --check all or auto)")
    r.add_argument("--l2-start", choices=("empty", "previous"), default=None,
                   help="what the L2 holds when the predicted launch starts: 'empty' (default, as after "
                        "a flush) or 'previous' (what the same launch left there: back-to-back launches, "
                        "the way benchmarks time a kernel; maxas's SGEMM figures were timed so). SGEMM "
                        "workloads, and .sass files with --predict")
    r.add_argument("--sm-ctas", type=_size, default=None, metavar="N",
                   help="CTAs the timed SM runs (default: one full wave of resident CTAs)")
    _occupancy_options(r)
    r.add_argument("--strict", action="store_true", help="control-code hazards are errors, not warnings")
    r.add_argument("--max-cycles", type=_size, default=None, metavar="N",
                   help="stop the timing run with an error past this many cycles (default 100,000 + "
                        "2,000 per warp instruction of its trace)")
    r.add_argument("--max-instructions", type=_size, default=None, metavar="N",
                   help="for a .sass file: stop with an error past this many warp instructions in the "
                        "launch (default 400,000 per warp; the SGEMM harness sets a limit from the "
                        "problem size). A loop without effect (same registers, predicates and memory "
                        "on two passes) is stopped at once")
    r.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    r.add_argument("--trace", metavar="FILE", default=None,
                   help="write a timeline of the timed SM to FILE: Chrome trace-event JSON (open it in "
                        "https://ui.perfetto.dev or chrome://tracing; 1 us of trace time = 1 cycle): "
                        "a track per warp grouped by scheduler, a slice per issued instruction, stall "
                        "reasons between issues, IPC and memory requests in flight")
    r.add_argument("--report", metavar="FILE.html", default=None,
                   help="write the source view of the timed SM to FILE.html: one self-contained page "
                        "(no network), a row per SASS instruction with its control code, executions, "
                        "issue cycles, the warp-cycles stalled at it by reason, its register-bank "
                        "conflicts and reuse hits, shared-memory wavefronts and L1/L2 hit rates; loops "
                        "marked, hottest rows shaded, sortable by any column (the same rows are "
                        "--json's \"instructions\")")
    r.add_argument("--trace-window", metavar="START:END", default=None,
                   help="cycles [START, END) the timeline keeps (either may be left out; default: the "
                        "whole run, cut short at about 2 million events)")
    r.add_argument("--quiet", action="store_true",
                   help="no progress bar (drawn on stderr when it is a terminal, or when "
                        "MAXSIM_PROGRESS=1)")

    a = sub.add_parser("analyze", help="static view of a kernel: opcode mix, register banks, reuse, "
                                       "control-code hazards",
                       description="Static analysis of a .sass file or a generated workload: opcode "
                                   "mix, register bank conflicts with and without the reuse caches, "
                                   "reuse hit rates over the kernel and its main loop, and the "
                                   "control-code hazards (wait masks, barriers and stall counts that "
                                   "leave a dependency open, in program order and across each loop's "
                                   "back edge, with the latencies of the architecture config).")
    a.add_argument("target", help="a .sass, .cubin, .cu or .ptx file or a workload name (sgemm_64, sgemm_128)")
    a.add_argument("--kernel", metavar="NAME", default=None,
                   help="for a .cubin, .cu or .ptx file: which kernel (needed when the file holds several)")
    a.add_argument("--traversal", choices=("swirl", "zigzag", "raster"), default="swirl",
                   help="FFMA traversal order of a generated SGEMM (default swirl; ignored for a .sass file)")
    a.add_argument("--regmap", choices=("maxas", "naive"), default="maxas",
                   help="register map of the C block of a generated SGEMM (default maxas; ignored for a .sass file)")
    a.add_argument("--no-reuse", action="store_true",
                   help="generate the SGEMM without reuse flags (ignored for a .sass file)")
    a.add_argument("--rows", choices=("unhidden", "conflicts", "all", "none"), default="unhidden",
                   help="which instructions to list: unhidden (conflicts left with reuse, the default), "
                        "conflicts (any conflict with reuse off), all, none")
    a.add_argument("--json", action="store_true",
                   help="print one JSON object (totals, loops, per-k-step figures, every ALU row, opcode "
                        "mix, control-code hazards)")
    a.add_argument("--gpu", "--config", dest="config", default="gm204",
                   help="architecture config whose latencies the control-code check uses: a shipped name "
                        "(see `maxsim configs`) or a TOML file (default gm204)")

    _asm_parser(sub)

    d = sub.add_parser("disasm", help="print a cubin's kernels in maxas's text form",
                       description="Disassemble a cubin (or CUDA C / PTX compiled for sm_52) into maxas's "
                                   "text form: the header (kernel, arch, RegCnt, SharedSize, BarCnt, the "
                                   "parameters as ord:addr:size:align) then the control codes and "
                                   "instructions, which `maxsim run`, `analyze` and `asm` read.")
    d.add_argument("input", help="a .cubin, .cu or .ptx file")
    d.add_argument("--kernel", metavar="NAME", default=None,
                   help="only this kernel (default: every kernel of the file, one after another)")
    d.add_argument("-o", "--output", metavar="FILE", default=None, help="write to FILE (default: standard output)")
    d.add_argument("--json", action="store_true",
                   help="print a JSON list: per kernel its name, registers, shared size, barriers, "
                        "parameters, constant banks and text")

    c = sub.add_parser("configs", help="list the shipped architecture configs",
                       description="List the architecture configs shipped with maxsim (give a name to "
                                   "`maxsim run --gpu`, or the path of your own TOML file that "
                                   "inherits from one of them).")
    c.add_argument("--json", action="store_true", help="print a JSON object name -> description")

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
    cm.add_argument("--sizes", metavar="N[,N...]", type=_sizes_list, default=None,
                    help="square sizes to predict (default: every measured size; for sgemm_64 also "
                         "N = 768 and every multiple of 512 from 1024 to the largest measured "
                         "sgemm_128 size, predicted only)")
    cm.add_argument("--gpu", "--config", dest="config", default="gtx980_oc",
                    help="architecture config (default gtx980_oc, the measured setup)")
    cm.add_argument("--l2-start", choices=("empty", "previous"), default="previous",
                    help="what the L2 holds when each predicted launch starts: 'previous' (default: what "
                         "the same launch left there, as in the measured benchmark, which times "
                         "back-to-back launches) or 'empty' (see docs/validation.md)")
    _occupancy_options(cm, compare=True)
    cm.add_argument("-o", "--output", metavar="FILE", default=None,
                    help="also draw the comparison to this file (.png, .svg or .pdf): GFLOPS against N "
                         "and, when the predictions carry memory counters, a second row with the "
                         "predicted L2 hit rate (nvprof's l2_tex_read_hit_rate) and DRAM utilisation "
                         "(dram_utilization_fraction, of the peak bandwidth) against N")
    _engine_options(cm)
    cm.add_argument("--quiet", action="store_true", help="no progress bar")
    cm.add_argument("--json", action="store_true", help="print one JSON object instead of the table")

    _sweep_parser(sub)

    _validate_parser(sub)

    pl = sub.add_parser("plot", help="draw figures (PNG, SVG or PDF)",
                        description="Draw a figure to a file; the format follows the file extension "
                                    "(.png, .svg, .pdf).")
    psub = pl.add_subparsers(dest="plot", metavar="FIGURE", required=True)
    pc = psub.add_parser(
        "conflicts", help="register bank conflicts and reuse of every SGEMM variant, and the C bank maps",
        description="Register bank conflicts and operand reuse of the generated SGEMM for each FFMA "
                    "traversal (raster, zigzag, swirl) and C register map (maxas, naive), per k-step "
                    "and over the whole kernel, from the static analysis; and the 8x8 register-bank "
                    "map of a thread's C block for both register maps.")
    pc.add_argument("-o", "--output", metavar="FILE", default="conflicts.png",
                    help="file to write: .png, .svg or .pdf (default conflicts.png)")
    pc.add_argument("--kernel", choices=WORKLOADS, default="sgemm_64",
                    help="which generated SGEMM to analyze (default sgemm_64)")
    pc.add_argument("--dpi", type=_size, default=100, help="resolution of a PNG (default 100)")
    return p


def _validate_parser(sub):
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
    _engine_options(v)
    v.add_argument("--quiet", action="store_true", help="no progress bar")


def _engine_options(p):
    """--jobs / --scheduler / --no-cache: where the independent predictions run, and the cache."""
    p.add_argument("--jobs", metavar="N", type=_size, default=None,
                   help="worker processes of the local Dask cluster the predictions run on (default: the "
                        "number of CPUs; 1 runs them in this process)")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", default=None,
                   help="run the predictions on the workers of an existing Dask cluster (started with "
                        "`dask scheduler` and `dask worker`, or dask-jobqueue); default: the environment "
                        "variable MAXSIM_SCHEDULER, else a local cluster")
    p.add_argument("--no-cache", action="store_true",
                   help="recompute every prediction (default: a point computed before with the same kernel, "
                        "config, launch and model version is read back from the result cache, "
                        "$MAXSIM_CACHE_DIR or the user cache directory)")


def _engine_and_cache(args, workload_cache):
    from .engine import Engine
    engine = Engine(jobs=args.jobs, scheduler=args.scheduler)
    return engine, (None if args.no_cache else workload_cache())


def _sweep_parser(sub):
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
                   help="the figure on the y axis of -o (default: the spec's [plot] y, else gpu_predicted_gflops)")
    _engine_options(s)
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.add_argument("--json", action="store_true", help="print the rows as a JSON list instead of a summary")


def cmd_sweep(args):
    from .report.progress import Progress
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
    y = args.y or spec.plot.get("y") or "gpu_predicted_gflops"
    if args.output:
        from .report.plots import check_output_path
        check_output_path(args.output)
        if x is None:
            raise UsageError(f"-o {args.output}: give the x axis with --x COLUMN (or x in the spec's [plot])")
    engine, cache = _engine_and_cache(args, workload_cache)
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


def _asm_parser(sub):
    s = sub.add_parser("asm", help="assemble a kernel written in the maxas source language",
                       description="Assemble a kernel written in the maxas source language (named "
                                   "registers and constants, ~ registers allocated avoiding bank "
                                   "conflicts, [+ EXPR +] and Nx<EXPR> constant expressions, "
                                   "SCHEDULE_BLOCK sections reordered by the list scheduler, control "
                                   "codes left out filled by the rules of the control-code check) into "
                                   "maxas's final text form, which `maxsim run` and `maxsim analyze` "
                                   "read (they also accept the source form directly). Control codes "
                                   "written in the source are kept; the hazards they leave open are "
                                   "printed as warnings. Perl <CODE> blocks are refused: expand them "
                                   "with `maxas.pl -p` first.")
    s.add_argument("input", help="the source file (.sass), or a .cubin / .cu / .ptx whose kernel is decoded "
                                 "(and written again as text or as a cubin)")
    s.add_argument("--kernel", metavar="NAME", default=None,
                   help="for a .cubin, .cu or .ptx input: which kernel")
    s.add_argument("-o", "--output", metavar="FILE", default=None,
                   help="write the final form to FILE (default: standard output); a FILE ending in .cubin "
                        "gets the kernel encoded as a cubin for its Arch (sm_50/52), which the CUDA driver "
                        "loads and `maxsim disasm` / `run` read")
    s.add_argument("--gpu", "--config", dest="config", default="gm204", metavar="CONFIG",
                   help="architecture config whose latencies the scheduler and the control codes use "
                        "(default gm204)")
    s.add_argument("--registers", action="store_true",
                   help="also list on stderr the register each ~ name was given")
    s.add_argument("--strict", action="store_true",
                   help="a control-code hazard left open by control codes written in the source is an "
                        "error (exit status 2), not a warning")
    s.add_argument("--check", action="store_true",
                   help="only check the control codes (of a .sass file as assembled, or of a .cubin / "
                        ".cu / .ptx kernel as compiled): print each hazard as FILE:LINE: KIND: MESSAGE "
                        "and a count, write nothing; exit status 0 when there is none, 1 when there are")


def cmd_disasm(args):
    from .cubin import is_binary_path
    from .cubin.disasm import kernel_text
    from .cubin.load import cubin_of
    from .cubin.elf import plain_name
    if not is_binary_path(args.input):
        raise UsageError(f"{args.input}: expected a .cubin, .cu or .ptx file")
    cubin, names = cubin_of(args.input)
    chosen = [cubin.kernel(args.kernel)] if args.kernel else list(cubin.kernels)
    texts, rows = [], []
    for k in chosen:
        pn = names.get(k.name) or names.get(plain_name(k.name)) or ()
        text = kernel_text(k, pn if len(pn) == len(k.params) else ())
        texts.append(text)
        rows.append({"kernel": k.name, "arch": k.arch, "reg_cnt": k.reg_cnt, "shared_size": k.shared_size,
                     "bar_cnt": k.bar_cnt, "params": [{"ordinal": p.ordinal, "offset": p.offset, "size": p.size}
                                                      for p in k.params],
                     "constant_banks": {str(b): len(d) for b, d in k.constants.items()}, "text": text})
    out = json.dumps(rows, indent=1) + "\n" if args.json else "\n".join(texts)
    if args.output:
        try:
            with open(args.output, "w") as f:
                f.write(out)
        except OSError as e:
            raise UsageError(f"cannot write {args.output}: {e.strerror or e}") from None
    else:
        sys.stdout.write(out)
    return 0


def cmd_asm(args):
    from .arch.config import load_config
    from .asm import assemble_file
    from .cubin import is_binary_path
    cfg = load_config(args.config)
    if is_binary_path(args.input):  # a cubin (or CUDA C / PTX): its decoded kernel, written out again
        from types import SimpleNamespace
        from .cubin import load
        from .analysis import check_controls
        loaded = load(args.input, args.kernel)
        result = SimpleNamespace(kernel=loaded.code, text=loaded.text, hazards=check_controls(loaded.code, cfg),
                                 allocated={}, notes=getattr(loaded, "notes", ()))
    else:
        if args.kernel:
            raise UsageError("--kernel applies to a .cubin, .cu or .ptx input")
        result = assemble_file(args.input, cfg=cfg)
    k = result.kernel
    if args.check:
        if args.output:
            raise UsageError("--check writes nothing: leave out -o")
        for note in result.notes:
            print(f"maxsim: note: {note}", file=sys.stderr)
        for h in result.hazards:
            print(f"{k.filename}:{h.line}: {h.kind}: {h.message}")
        n = len(result.hazards)
        print(f"{k.filename}: kernel {k.name}: {len(k.instructions)} instructions, {n} control-code "
              f"hazard{'' if n == 1 else 's'} ({cfg.name} latencies)")
        return 1 if n else 0
    if args.strict and result.hazards:
        h = result.hazards[0]
        more = f" (and {len(result.hazards) - 1} more)" if len(result.hazards) > 1 else ""
        raise UsageError(f"{k.filename}:{h.line}: {h.kind}: {h.message}{more}")
    if args.output and args.output.lower().endswith(".cubin"):
        from .cubin import write_bytes
        from .cubin.build import cubin_kernel
        data = write_bytes([cubin_kernel(k)], arch=k.arch)
        try:
            with open(args.output, "wb") as f:
                f.write(data)
        except OSError as e:
            raise UsageError(f"cannot write {args.output}: {e.strerror or e}") from None
    elif args.output:
        try:
            with open(args.output, "w") as f:
                f.write(result.text)
        except OSError as e:
            raise UsageError(f"cannot write {args.output}: {e.strerror or e}") from None
    else:
        sys.stdout.write(result.text)
    for note in result.notes:
        print(f"maxsim: note: {note}", file=sys.stderr)
    for h in result.hazards:
        print(f"maxsim: warning: {k.filename}:{h.line}: {h.kind}: {h.message}", file=sys.stderr)
    if args.registers:
        for name, reg in sorted(result.allocated.items(), key=lambda x: (x[1], x[0])):
            print(f"maxsim: {name} = R{reg}", file=sys.stderr)
    if args.output:
        print(f"maxsim: wrote {args.output}: {len(k.instructions)} instructions, RegCnt {k.reg_cnt}, "
              f"{len(result.allocated)} allocated register(s), {len(result.hazards)} control-code "
              f"hazard(s)", file=sys.stderr)
    return 0


def _occupancy_options(p, compare=False):
    """--regs / --warps-per-scheduler / --ctas-per-sm: one of them."""
    what = "every kernel of the comparison" if compare else "the kernel"
    g = p.add_mutually_exclusive_group()
    g.add_argument("--regs", type=_size, default=None, metavar="N",
                   help=f"{what} declares N registers per thread (its code unchanged: at least what it "
                        f"uses, at most 255); more registers, fewer resident CTAs")
    g.add_argument("--warps-per-scheduler", type=_size, default=None, metavar="W",
                   help=f"run {what} at W resident warps per scheduler: declares the fewest registers "
                        f"that give exactly that residency (e.g. sgemm_64 at 3: 129 registers, 6 CTAs "
                        f"per SM); an error if none does")
    g.add_argument("--ctas-per-sm", type=_size, default=None, metavar="C",
                   help=f"run {what} at C resident CTAs per SM (the fewest registers that give it)")


def _occupancy_choice(args):
    """The residency option given, as ``(flag text, {"regs"|"warps_per_scheduler"|"ctas_per_sm": value})``,
    or ``(None, None)``."""
    for key, flag in (("regs", "--regs"), ("warps_per_scheduler", "--warps-per-scheduler"),
                      ("ctas_per_sm", "--ctas-per-sm")):
        value = getattr(args, key)
        if value is not None:
            return f"{flag} {value}", {key: value}
    return None, None


def _sizes_list(text):
    try:
        out = [int(x, 0) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 512,1024, got {text!r}") from None
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected positive sizes like 512,1024, got {text!r}")
    return out


def cmd_compare(args):
    from .arch.config import load_config
    from .report.progress import Progress
    from .timing.occupancy import OccupancyError
    from workloads.compare import compare, format_table, load_measurements, workload_cache
    cfg = load_config(args.config)
    names = WORKLOADS if args.workload == "all" else (args.workload,)
    flag, choice = _occupancy_choice(args)
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
        from .report.plots import check_output_path
        check_output_path(args.output)  # before the work
    engine, cache = _engine_and_cache(args, workload_cache)
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
        from .report.compare_plot import has_memory, plot_comparison
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


def cmd_validate(args):
    from .arch.config import load_config
    from .report.progress import Progress
    from .validate import format_table, validate
    if args.output is not None and not args.output.lower().endswith((".html", ".htm")):
        raise UsageError(f"-o {args.output}: the report is HTML, give a file name ending in .html")
    if args.output is not None and not os.path.isdir(os.path.dirname(os.path.abspath(args.output))):
        raise UsageError(f"-o {args.output}: the folder {os.path.dirname(os.path.abspath(args.output))} "
                         f"does not exist")
    cfg = load_config(args.config)
    from workloads.compare import workload_cache
    engine, cache = _engine_and_cache(args, workload_cache)
    bar = Progress(quiet=args.quiet)
    try:
        from workloads.sgemm import validate as sgemm_rows
        with engine:
            result = validate(cfg, quick=args.quick, progress=bar, sgemm=sgemm_rows, engine=engine, cache=cache)
    finally:
        bar.close()
    if args.output is not None:
        from .validate.html import config_text, write_report
        write_report(result, args.output, config_text(cfg))
    if args.json:
        print(json.dumps(result.to_list(), indent=1))
    else:
        print(format_table(result))
        if args.output is not None:
            print(f"report written to {args.output}")
    return 0


def _is_kernel_file(target) -> bool:
    return target.lower().endswith((".sass", ".cubin", ".cu", ".ptx"))


def _kernel_for(target, args):
    from .asm import load_kernel
    from .arch.config import load_config
    from .sass import parse_text
    if target in WORKLOADS:
        from workloads.sgemm.generator import generate
        text = generate(target, traversal=args.traversal, regmap=args.regmap, reuse=not args.no_reuse)
        return parse_text(text, filename=f"<{target}>")
    if _is_kernel_file(target) or "/" in target:
        return load_kernel(target, cfg=load_config(args.config), kernel=getattr(args, "kernel", None))
    raise UsageError(f"unknown workload {target!r}: expected one of {', '.join(WORKLOADS)} or a .sass file")


def cmd_analyze(args):
    from .analysis import analyze_banks, check_controls, format_bank_report, format_hazards, opcode_mix
    from .arch.config import load_config
    cfg = load_config(args.config)
    kernel = _kernel_for(args.target, args)
    if not kernel.instructions:
        raise UsageError(f"{args.target}: no instructions to analyze (an empty kernel file?)")
    rep = analyze_banks(kernel)
    hazards = check_controls(kernel, cfg)
    if args.json:
        out = rep.to_dict()
        out["opcode_mix"] = opcode_mix(kernel)
        out["config"] = cfg.name
        out["hazards"] = [h.to_dict() for h in hazards]
        print(json.dumps(out, indent=1))
    else:
        print(format_bank_report(rep, rows=args.rows))
        print(format_hazards(hazards, title=f"Control-code hazards ({cfg.name} latencies)"))
    return 0


def cmd_configs(args):
    from .arch.config import list_configs
    items = list_configs()
    if args.json:
        print(json.dumps(dict(items), indent=1))
    else:
        for name, desc in items:
            print(f"{name:12s} {desc}")
    return 0


def cmd_plot(args):
    from workloads.sgemm.figures import conflicts_figure

    from .report.plots import check_output_path, save_figure
    check_output_path(args.output)  # before the work
    fig = {"conflicts": conflicts_figure}[args.plot](args.kernel)
    print(f"wrote {save_figure(fig, args.output, dpi=args.dpi)}")
    return 0


def cmd_run(args):
    from .arch.config import load_config
    is_file = args.target not in WORKLOADS and (_is_kernel_file(args.target) or "/" in args.target)
    wrong = [opt for opt, val, file_only in (
        ("--m", args.m, False), ("--n", args.n, False), ("--k", args.k, False), ("--sass", args.sass, False),
        ("--sm-ctas", args.sm_ctas, False), ("--gpu-method", args.gpu_method, False),
        ("--grid", args.grid, True), ("--block", args.block, True),
        ("--max-instructions", args.max_instructions, True), ("--check", args.check, False),
        ("--shared", args.shared, True), ("--param", args.param, True), ("--buffer", args.buffer, True),
        ("--texture", args.texture, True), ("--constant", args.constant, True), ("--out", args.out, True),
        ("--predict", args.predict or None, True), ("--kernel", args.kernel, True))
        if val is not None and file_only != is_file]
    if wrong and (is_file or args.target in WORKLOADS):
        what = "a .sass file" if is_file else f"the {args.target} workload"
        raise UsageError(f"{', '.join(wrong)} do{'es' if len(wrong) == 1 else ''} not apply to {what} "
                         f"(see `maxsim run --help`)")
    if args.l2_start is not None and (args.functional or (is_file and not args.predict)):
        raise UsageError("--l2-start sets the L2 of the whole-GPU prediction: it needs "
                         + ("--predict for a kernel file" if is_file and not args.functional else "the timing run (not --functional)"))
    timeline = _trace_writer(args)
    _check_report_path(args)
    cfg = load_config(args.config)
    flag, choice = _occupancy_choice(args)
    from .report.progress import Progress
    from .timing.occupancy import OccupancyError
    bar = Progress(quiet=args.quiet or args.json, delay=PROGRESS_DELAY)
    try:
        if args.target in WORKLOADS:
            from workloads.sgemm.harness import functional_work, run_workload
            if args.check == "all":
                est = functional_work(args.target, *(256 if v is None else v for v in (args.m, args.n, args.k)))
                if est is not None:
                    print(f"maxsim: checking the whole grid: about {est[0]:.3g} warp instructions, "
                          f"about {_duration(est[1])} of functional run", file=sys.stderr)
            out = run_workload(args.target, check=args.check or "auto", cfg=cfg, m=args.m, n=args.n, k=args.k,
                               traversal=args.traversal, regmap=args.regmap, reuse=not args.no_reuse,
                               sass_path=args.sass, timing=not args.functional, sm_ctas=args.sm_ctas,
                               hazards="strict" if args.strict else "warn", max_cycles=args.max_cycles,
                               progress=bar, timeline=timeline and (lambda sm: timeline(sm, bar)),
                               occupancy=choice, gpu_method=args.gpu_method or "sampled",
                               l2_start=args.l2_start or "empty")
        elif _is_kernel_file(args.target) or "/" in args.target:
            arguments = _launch_arguments(args)
            out, report = run_sass_file(args.target, cfg=cfg, grid=args.grid or (1, 1), block=args.block or 32,
                                        timing=not args.functional, hazards="strict" if args.strict else "warn",
                                        max_cycles=args.max_cycles, max_instructions=args.max_instructions,
                                        progress=bar, timeline=timeline and (lambda sm: timeline(sm, bar)),
                                        occupancy=choice, shared=args.shared or 0, report=True,
                                        predict=args.predict, kernel=args.kernel,
                                        l2_start=args.l2_start or "empty", **arguments)
        else:
            raise UsageError(f"unknown workload {args.target!r}: expected one of {', '.join(WORKLOADS)} or a .sass file")
    except OccupancyError as e:
        if flag is None:
            raise
        raise UsageError(f"{_subject(args)}: {flag}: {e}") from None
    finally:
        bar.close()
    from .report.text import format_run, summarise
    reference = None
    if args.target in WORKLOADS:
        from workloads.sgemm.published import MAIN_LOOP_CYCLES, WARPS_PER_SCHEDULER
        reference = MAIN_LOOP_CYCLES[args.target]
    out["summary"] = summarise(out, cfg.peak_gflops, cfg.gpu.sms, reference,
                               reference_warps_per_scheduler=reference and WARPS_PER_SCHEDULER)
    if args.report is not None:
        from .report.source import write_page
        try:
            write_page(args.report, out)
        except OSError as e:
            raise UsageError(f"--report {args.report}: cannot write the page: {e.strerror or e}") from None
        if not args.json:
            print(f"maxsim: source view written to {args.report}", file=sys.stderr)
    if getattr(args, "out", None):
        _save_outputs(args.out, report, out, format_run(out))
    if args.json:
        print(json.dumps(out, indent=1, default=float))
    else:
        print(format_run(out))
    return 0


def _launch_arguments(args):
    """The --param / --buffer / --texture specs of a .sass run as launch arguments."""
    from .host.specs import parse_buffer, parse_constant, parse_param, parse_texture
    out = {"params": {}, "buffers": {}, "textures": {}, "constants": {}}
    for option, parse, key in (("--param", parse_param, "params"), ("--buffer", parse_buffer, "buffers"),
                               ("--texture", parse_texture, "textures"), ("--constant", parse_constant, "constants")):
        for spec in getattr(args, key[:-1]) or ():
            name, value = parse(spec)
            if name in out[key]:
                raise UsageError(f"{option} {spec}: {name!r} is given twice")
            out[key][name] = value
    if args.out is not None and os.path.exists(args.out) and not os.path.isdir(args.out):
        raise UsageError(f"--out {args.out}: not a directory")
    return out


def _save_outputs(folder, report, out, text):
    """Write the output buffers as FOLDER/NAME.npy, the summary and the figures."""
    import numpy as np
    try:
        os.makedirs(folder, exist_ok=True)
        for name, array in report.outputs.items():
            np.save(os.path.join(folder, f"{name}.npy"), array)
        with open(os.path.join(folder, "summary.txt"), "w", encoding="utf-8") as f:
            f.write(text + "\n")
        with open(os.path.join(folder, "report.json"), "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1, default=float)
    except OSError as e:
        raise UsageError(f"--out {folder}: cannot write the results: {e.strerror or e}") from None
    out["outputs_saved"] = {name: os.path.join(folder, f"{name}.npy") for name in report.outputs}


def _duration(seconds):
    """A rough duration for people: 40 s, 12 min, 3.5 h."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _check_report_path(args):
    """--report FILE.html: checked before the run."""
    if args.report is None:
        return
    if args.functional:
        raise UsageError("--report needs the timing run (leave out --functional)")
    if not args.report.lower().endswith((".html", ".htm")):
        raise UsageError(f"--report {args.report}: the source view is HTML, give a file name ending in .html")
    folder = os.path.dirname(os.path.abspath(args.report))
    if not os.path.isdir(folder):
        raise UsageError(f"--report {args.report}: the folder {folder} does not exist")


def _trace_writer(args):
    """For --trace / --trace-window: a function that writes the timed SM's timeline (checked before
    the run), or None."""
    import os
    if args.trace is None:
        if args.trace_window is not None:
            raise UsageError("--trace-window needs --trace FILE")
        return None
    if args.functional:
        raise UsageError("--trace needs the timing run (leave out --functional)")
    from .report.timeline import parse_window, write_trace
    window = parse_window(args.trace_window) if args.trace_window is not None else None
    folder = os.path.dirname(os.path.abspath(args.trace))
    if not os.path.isdir(folder):
        raise UsageError(f"--trace {args.trace}: the folder {folder} does not exist")

    def write(sm, bar):
        bar.close()
        try:
            summary = write_trace(sm, args.trace, window)
        except OSError as e:
            raise UsageError(f"cannot write the trace to {args.trace}: {e.strerror or e}") from None
        if summary.cut or not args.quiet:
            print(f"maxsim: {summary.message()}", file=sys.stderr)
    return write


def run_sass_file(path, cfg, grid=(1, 1), block=32, timing=True, hazards="warn", max_cycles=None,
                  max_instructions=None, progress=None, timeline=None, occupancy=None, shared=0,
                  params=None, buffers=None, textures=None, constants=None, report=False, predict=False,
                  kernel=None, l2_start="empty"):
    """Run a kernel file through the launch API (:func:`maxsim.host.launch`) and report what it
    executed: the fields of ``maxsim run --json`` (and the :class:`~maxsim.host.LaunchReport` with
    ``report``). ``progress``: a progress callback (:mod:`maxsim.report.progress`); ``timeline``:
    a callable that receives the timed SM, run with its issue log on; ``occupancy``:
    ``{"regs": N}``, ``{"warps_per_scheduler": W}`` or ``{"ctas_per_sm": C}``, the residency the
    kernel runs at (it declares the registers that give it); ``predict``: the whole-GPU prediction
    too (with ``timing``), from an L2 that is ``l2_start`` (see :func:`maxsim.host.launch`)."""
    from .host import Kernel, launch
    kernel = Kernel.load(path, cfg=cfg, kernel=kernel)
    for note in kernel.notes:
        print(f"maxsim: note: {note}", file=sys.stderr)
    missing = [p.label for p in kernel.params
               if not any(k in p.names or k == p.offset for k in (params or {}))]
    if missing and not params:
        n = len(kernel.params)
        raise UsageError(f"{path}: the kernel takes {n} parameter{'s' if n != 1 else ''} ({', '.join(missing)}): "
                         f"give {'each' if n > 1 else 'it'} with --param NAME=VALUE")
    r = launch(kernel, grid, block, shared=shared, params=params, buffers=buffers, textures=textures,
               constants=constants, config=cfg,
               timing=timing, predict=timing and predict, occupancy=occupancy, hazards=hazards, max_cycles=max_cycles,
               max_instructions=max_instructions, progress=progress, timeline=timeline, l2_start=l2_start)
    out = {"workload": path}
    out.update(r.fields())
    if out.get("sm_ctas") == r.grid[0] * r.grid[1]:
        del out["sm_ctas"]  # the timed SM ran the whole launch: the summary says so in its words
    return (out, r) if report else out


def _small_pages():
    """Ask numpy not to back large arrays with transparent huge pages. The SM timing core keeps
    trace arrays with a row per warp slot of which a run touches a few; with huge pages each touched
    row commits a whole 2 MB page (peak memory of ``maxsim run sgemm_64``: 400 MB instead of 250)."""
    import numpy as np
    setter = getattr(getattr(getattr(np, "_core", None), "multiarray", None), "_set_madvise_hugepage", None)
    if setter is not None:
        setter(False)


def _subject(args):
    """The file a command is about, as its errors name it: the kernel file or workload of
    ``run`` / ``analyze``, or None."""
    target = getattr(args, "target", None)
    if target is None:
        return getattr(args, "spec", None)  # sweep: its spec
    return getattr(args, "sass", None) or target


def _name_the_file(e, subject):
    """The one-line message of error ``e``, starting with the file it is about when the message
    does not name one itself (launch, occupancy and timing errors speak of the kernel only)."""
    from .engine import EngineError
    from .errors import ConfigError, SassParseError
    msg = str(e)
    if subject is None or isinstance(e, (UsageError, ConfigError, SassParseError, EngineError)) or subject in msg:
        return msg
    return f"{subject}: {msg}"


def _quiet_stdout():
    """Send what is left of stdout to /dev/null: its reader (``head``) has gone, and Python would
    otherwise complain while flushing it at exit."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError:
        pass


def _unrecognized(parser, argv, extra):
    """Arguments no option takes: a file name after --json gets its own advice."""
    for i, a in enumerate(argv[:-1]):
        if a == "--json" and argv[i + 1] == extra[0]:
            parser.error(f"--json takes no file name (got {extra[0]!r}): it prints the JSON object; "
                         f"redirect it to write a file, e.g. `... --json > {extra[0]}`")
    parser.error(f"unrecognized arguments: {' '.join(extra)}")


def _show_warning(message, category, filename, lineno, file=None, line=None, _default=warnings.showwarning):
    """A SourceWarning (text maxsim reads as maxas does, probably a slip) as one line naming the
    place; other warnings as Python shows them."""
    if issubclass(category, SourceWarning):
        print(f"maxsim: warning: {message}", file=sys.stderr)
    else:
        _default(message, category, filename, lineno, file, line)


def main(argv=None):
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _main(argv)


def _main(argv=None):
    args = None
    try:
        _small_pages()
        parser = _parser()
        args, extra = parser.parse_known_args(argv)
        if extra:
            _unrecognized(parser, sys.argv[1:] if argv is None else list(argv), extra)
        if args.command is None:
            parser.print_help()
            return 2
        return {"run": cmd_run, "analyze": cmd_analyze, "asm": cmd_asm, "disasm": cmd_disasm, "configs": cmd_configs,
                "plot": cmd_plot, "compare": cmd_compare, "sweep": cmd_sweep,
                "validate": cmd_validate}[args.command](args)
    except MaxsimError as e:
        print(f"maxsim: error: {_name_the_file(e, _subject(args))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("maxsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        _quiet_stdout()
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""``maxsim run``: a workload or a kernel file, functionally and in time."""

from __future__ import annotations

import json
import os
import sys

from .common import (PROGRESS_DELAY, WORKLOADS, UsageError, is_kernel_file, occupancy_choice,
                     imported, occupancy_options, shape, size, subject)


def add_parser(sub):
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
    r.add_argument("--m", type=size, default=None, help="SGEMM rows of A and C (default 256)")
    r.add_argument("--n", type=size, default=None, help="SGEMM columns of C (default 256)")
    r.add_argument("--k", type=size, default=None, help="SGEMM inner dimension, a multiple of 8 (default 256)")
    r.add_argument("--traversal", choices=("swirl", "zigzag", "raster"), default="swirl",
                   help="FFMA traversal order of the generated SGEMM (default swirl)")
    r.add_argument("--regmap", choices=("maxas", "naive"), default="maxas",
                   help="register map of the C block (default maxas)")
    r.add_argument("--no-reuse", action="store_true", help="generate the SGEMM without reuse flags")
    r.add_argument("--sass", metavar="PATH", help="run the SGEMM harness on this kernel file instead "
                                                  "of the generated one (e.g. maxas's sgemm_final_64.sass "
                                                  "with sgemm_64, sgemm_final_128.sass with sgemm_128)")
    r.add_argument("--grid", type=shape, default=None, metavar="X[,Y[,Z]]",
                   help="grid of CTAs for a .sass file (default 1)")
    r.add_argument("--block", type=shape, default=None, metavar="X[,Y[,Z]]",
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
    r.add_argument("-D", dest="define", action="append", default=None, metavar="NAME[=VALUE]",
                   help="for a .cu file: define a macro for NVRTC (-D N=512 or -DN=512); repeat for each")
    r.add_argument("--nvrtc-option", dest="nvrtc_option", action="append", default=None, metavar="OPTION",
                   help="for a .cu file (ptxas's for a .ptx file): a compiler option, e.g. "
                        "--nvrtc-option=-use_fast_math; repeat for each")
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
    r.add_argument("--timing-only", action="store_true",
                   help="a kernel file: the functional run computes only what the timing model reads "
                        "(addresses, guards, control flow), not the results (no output buffer is computed: "
                        "not with --out); with --predict, a launch sampled across waves runs functionally only "
                        "the CTAs its prediction needs")
    r.add_argument("--check", choices=("auto", "all", "sampled"), default=None,
                   help="SGEMM result check: 'all' runs the whole grid functionally and checks all of C "
                        "(its time estimate is printed); 'sampled' runs the timed SM's CTAs and the last "
                        "CTA and checks their C tiles (the GPU prediction is sampled); 'auto' (default): "
                        "'all' up to 8 million warp instructions, else 'sampled'")
    r.add_argument("--gpu-method", choices=("auto", "sampled", "full"), default=None,
                   help="how the whole-GPU prediction is made: 'full' forces the whole simulation (every "
                        "CTA on every SM, as the functional run of the whole grid goes: what the sampled "
                        "predictions are held to); 'auto' (default) samples where the launch is large "
                        "enough and says how (the 'how predicted:' line). SGEMM: 'auto' and 'sampled' "
                        "sample along K (the first wave, a steady-state window and the start of its wave, "
                        "the tail; 'full' needs --check all or auto); a kernel file with --predict: "
                        "'sampled' is 'auto', which samples a launch of many waves across its waves and "
                        "one of a single wave in time, its timed SM with it")
    r.add_argument("--l2-start", choices=("empty", "previous"), default=None,
                   help="what the L2 holds when the predicted launch starts: 'empty' (default, as after "
                        "a flush) or 'previous' (what the same launch left there: back-to-back launches, "
                        "the way benchmarks time a kernel; maxas's SGEMM figures were timed so). SGEMM "
                        "workloads, and .sass files with --predict")
    r.add_argument("--sm-ctas", type=size, default=None, metavar="N",
                   help="CTAs the timed SM runs (default: one full wave of resident CTAs)")
    occupancy_options(r)
    r.add_argument("--strict", action="store_true", help="control-code hazards are errors, not warnings")
    r.add_argument("--max-cycles", type=size, default=None, metavar="N",
                   help="stop the timing run with an error past this many cycles (default 100,000 + "
                        "2,000 per warp instruction of its trace)")
    r.add_argument("--max-instructions", type=size, default=None, metavar="N",
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
    r.set_defaults(handler=command, says_when_imported=True)  # (common.imported)


def command(args):
    from ..arch.config import load_config
    is_file = args.target not in WORKLOADS and (is_kernel_file(args.target) or "/" in args.target)
    wrong = [opt for opt, val, file_only in (
        ("--m", args.m, False), ("--n", args.n, False), ("--k", args.k, False), ("--sass", args.sass, False),
        ("--sm-ctas", args.sm_ctas, False),
        ("--grid", args.grid, True), ("--block", args.block, True),
        ("--max-instructions", args.max_instructions, True), ("--check", args.check, False),
        ("--shared", args.shared, True), ("--param", args.param, True), ("--buffer", args.buffer, True),
        ("--texture", args.texture, True), ("--constant", args.constant, True), ("--out", args.out, True),
        ("--predict", args.predict or None, True), ("--kernel", args.kernel, True),
        ("--timing-only", args.timing_only or None, True),
        ("-D", args.define, True), ("--nvrtc-option", args.nvrtc_option, True))
        if val is not None and file_only != is_file]
    if wrong and (is_file or args.target in WORKLOADS):
        what = "a .sass file" if is_file else f"the {args.target} workload"
        raise UsageError(f"{', '.join(wrong)} do{'es' if len(wrong) == 1 else ''} not apply to {what} "
                         f"(see `maxsim run --help`)")
    if args.timing_only and args.functional:
        raise UsageError("--timing-only computes what the timing run reads: it needs the timing run (not --functional)")
    if args.timing_only and args.out is not None:
        raise UsageError("--out saves the output buffers, which --timing-only does not compute")
    if args.gpu_method is not None and is_file and not args.predict:
        raise UsageError("--gpu-method sets how the whole-GPU prediction is made: it needs --predict for a kernel file")
    if args.l2_start is not None and (args.functional or (is_file and not args.predict)):
        raise UsageError("--l2-start sets the L2 of the whole-GPU prediction: it needs "
                         + ("--predict for a kernel file" if is_file and not args.functional else "the timing run (not --functional)"))
    timeline = _trace_writer(args)
    _check_report_path(args)
    cfg = load_config(args.config)
    if not args.functional:
        from . import warm
        warm.start()  # the timing model's compiled code, when missing, in a second process meanwhile
    flag, choice = occupancy_choice(args)
    from ..report.progress import Progress
    from ..timing.occupancy import OccupancyError
    if args.target in WORKLOADS:
        import workloads.sgemm.harness  # noqa: F401
    imported()
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
                               occupancy=choice, gpu_method="full" if args.gpu_method == "full" else "sampled",
                               l2_start=args.l2_start or "empty")
        elif is_kernel_file(args.target) or "/" in args.target:
            arguments = _launch_arguments(args)
            out, report = run_sass_file(args.target, cfg=cfg, grid=args.grid or (1, 1), block=args.block or 32,
                                        timing=not args.functional, hazards="strict" if args.strict else "warn",
                                        max_cycles=args.max_cycles, max_instructions=args.max_instructions,
                                        progress=bar, timeline=timeline and (lambda sm: timeline(sm, bar)),
                                        occupancy=choice, shared=args.shared or 0, report=True,
                                        predict=args.predict, kernel=args.kernel,
                                        l2_start=args.l2_start or "empty", options=_compile_options(args),
                                        gpu_method="full" if args.gpu_method == "full" else "auto",
                                        timing_only=args.timing_only, **arguments)
        else:
            raise UsageError(f"unknown workload {args.target!r}: expected one of {', '.join(WORKLOADS)} or a .sass file")
    except OccupancyError as e:
        if flag is None:
            raise
        raise UsageError(f"{subject(args)}: {flag}: {e}") from None
    finally:
        bar.close()
    from ..report.text import format_run, summarise
    reference = None
    if args.target in WORKLOADS:
        from workloads.sgemm.published import MAIN_LOOP_CYCLES, WARPS_PER_SCHEDULER
        reference = MAIN_LOOP_CYCLES[args.target]
    out["summary"] = summarise(out, cfg.peak_gflops, cfg.gpu.sms, reference,
                               reference_warps_per_scheduler=reference and WARPS_PER_SCHEDULER)
    if args.report is not None:
        from ..report.source import write_page
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


def _compile_options(args):
    """NVRTC's options of -D and --nvrtc-option, for a .cu or .ptx file (``None``: none given)."""
    if not (args.define or args.nvrtc_option):
        return None
    if not str(args.target).lower().endswith((".cu", ".ptx")):
        raise UsageError(f"-D and --nvrtc-option apply to a .cu or .ptx file, not {args.target}")
    defines = {}
    for d in args.define or ():
        name, eq, value = d.partition("=")
        defines[name.strip()] = value if eq else None
    from ..host.kernel import compile_options
    return compile_options(args.nvrtc_option or (), defines)


def _launch_arguments(args):
    """The --param / --buffer / --texture specs of a .sass run as launch arguments."""
    from ..host.specs import parse_buffer, parse_constant, parse_param, parse_texture
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
    from ..report.timeline import parse_window, write_trace
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
                  kernel=None, l2_start="empty", options=None, gpu_method="auto", timing_only=False):
    """Run a kernel file through the launch API (:func:`maxsim.host.launch`) and report what it
    executed: the fields of ``maxsim run --json`` (and the :class:`~maxsim.host.LaunchReport` with
    ``report``). ``progress``: a progress callback (:mod:`maxsim.report.progress`); ``timeline``:
    a callable that receives the timed SM, run with its issue log on; ``occupancy``:
    ``{"regs": N}``, ``{"warps_per_scheduler": W}`` or ``{"ctas_per_sm": C}``, the residency the
    kernel runs at (it declares the registers that give it); ``predict``: the whole-GPU prediction
    too (with ``timing``), from an L2 that is ``l2_start`` (see :func:`maxsim.host.launch`);
    ``options``: the compiler options of a .cu / .ptx file (-D macros included); ``gpu_method``: how
    the prediction is made ("auto": sampled where the launch is large enough, see
    :func:`maxsim.host.launch`; "full": every CTA on every SM); ``timing_only``: the functional run
    computes only what the timing model reads (the figures say ``timing_only``: no results)."""
    from ..host import Kernel, launch
    kernel = Kernel.load(path, cfg=cfg, kernel=kernel, options=options or ())
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
               max_instructions=max_instructions, progress=progress, timeline=timeline, l2_start=l2_start,
               gpu_method=gpu_method, timing_only=timing_only)
    out = {"workload": path}
    out.update(r.fields())
    if timing_only:
        out["timing_only"] = True
    if out.get("sm_ctas") == r.grid[0] * r.grid[1]:
        del out["sm_ctas"]  # the timed SM ran the whole launch: the summary says so in its words
    return (out, r) if report else out

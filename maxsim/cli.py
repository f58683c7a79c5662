"""The ``maxsim`` command line: run, analyze, configs.

Every error a user can cause (a missing file, a malformed kernel, a bad size, a bad config) is
printed as one line on stderr with exit status 2; no Python traceback.
"""

from __future__ import annotations

import argparse
import json
import sys

from .errors import MaxsimError

WORKLOADS = ("sgemm_64", "sgemm_128")


class UsageError(MaxsimError):
    pass


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
        raise argparse.ArgumentTypeError(f"expected X or X,Y, got {text!r}") from None
    if not 1 <= len(parts) <= 2 or min(parts) < 1:
        raise argparse.ArgumentTypeError(f"expected X or X,Y with positive numbers, got {text!r}")
    return tuple(parts) + (1,) * (2 - len(parts))


def _parser():
    p = argparse.ArgumentParser(
        prog="maxsim",
        description="A cycle-approximate simulator of the NVIDIA Maxwell streaming multiprocessor.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    r = sub.add_parser("run", help="run a workload (sgemm_64, sgemm_128) or a .sass file",
                       description="Run a workload or a SASS file: functional execution (results "
                                   "checked for workloads) and the timing model of one SM.")
    r.add_argument("target", help="workload name (sgemm_64, sgemm_128) or a maxas-format .sass file")
    r.add_argument("--m", type=_size, default=None, help="SGEMM rows of A and C (default 256)")
    r.add_argument("--n", type=_size, default=None, help="SGEMM columns of C (default 256)")
    r.add_argument("--k", type=_size, default=None, help="SGEMM inner dimension, a multiple of 8 (default 256)")
    r.add_argument("--traversal", choices=("swirl", "zigzag", "raster"), default="swirl",
                   help="FFMA traversal order of the generated SGEMM (default swirl)")
    r.add_argument("--regmap", choices=("maxas", "naive"), default="maxas",
                   help="register map of the C block (default maxas)")
    r.add_argument("--no-reuse", action="store_true", help="generate the SGEMM without reuse flags")
    r.add_argument("--sass", metavar="PATH", help="run the SGEMM harness on this kernel file instead "
                                                  "of the generated one (e.g. maxas's sgemm_final_64.sass)")
    r.add_argument("--grid", type=_grid, default=(1, 1), help="grid X[,Y] for a .sass file (default 1)")
    r.add_argument("--block", type=_size, default=32, help="threads per CTA for a .sass file (default 32)")
    r.add_argument("--gpu", "--config", dest="config", default="gm204",
                   help="architecture config: a shipped name (see `maxsim configs`) or a TOML file")
    r.add_argument("--functional", action="store_true", help="functional run only (no timing)")
    r.add_argument("--sm-ctas", type=_size, default=None,
                   help="CTAs the timed SM runs (default: one full wave of resident CTAs)")
    r.add_argument("--strict", action="store_true", help="control-code hazards are errors, not warnings")
    r.add_argument("--max-cycles", type=_size, default=None, help="stop with an error past this many cycles")
    r.add_argument("--max-instructions", type=_size, default=None,
                   help="stop with an error past this many warp instructions")
    r.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    a = sub.add_parser("analyze", help="static view of a kernel: opcode mix, register banks, reuse",
                       description="Static analysis of a .sass file or a generated workload: opcode "
                                   "mix, register bank conflicts with and without the reuse caches, "
                                   "reuse hit rates over the kernel and its main loop.")
    a.add_argument("target", help="a .sass file or a workload name (sgemm_64, sgemm_128)")
    a.add_argument("--traversal", choices=("swirl", "zigzag", "raster"), default="swirl")
    a.add_argument("--regmap", choices=("maxas", "naive"), default="maxas")
    a.add_argument("--no-reuse", action="store_true")
    a.add_argument("--rows", choices=("unhidden", "conflicts", "all", "none"), default="unhidden",
                   help="which instructions to list (default: those with unhidden conflicts)")
    a.add_argument("--json", action="store_true")

    c = sub.add_parser("configs", help="list the shipped architecture configs")
    c.add_argument("--json", action="store_true")
    return p


def _kernel_for(target, args):
    from .sass import parse_file, parse_text
    if target in WORKLOADS:
        from workloads.sgemm.generator import generate
        text = generate(target, traversal=args.traversal, regmap=args.regmap, reuse=not args.no_reuse)
        return parse_text(text, filename=f"<{target}>")
    if target.endswith(".sass") or "/" in target:
        return parse_file(target)
    raise UsageError(f"unknown workload {target!r}: expected one of {', '.join(WORKLOADS)} or a .sass file")


def cmd_analyze(args):
    from .analysis import analyze_banks, format_bank_report, opcode_mix
    kernel = _kernel_for(args.target, args)
    rep = analyze_banks(kernel)
    if args.json:
        out = rep.to_dict()
        out["opcode_mix"] = opcode_mix(kernel)
        print(json.dumps(out, indent=1))
    else:
        print(format_bank_report(rep, rows=args.rows))
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


def cmd_run(args):
    from .arch.config import load_config
    cfg = load_config(args.config)
    if args.target in WORKLOADS:
        from workloads.sgemm.harness import run_workload
        out = run_workload(args.target, cfg=cfg, m=args.m, n=args.n, k=args.k,
                           traversal=args.traversal, regmap=args.regmap, reuse=not args.no_reuse,
                           sass_path=args.sass, timing=not args.functional, sm_ctas=args.sm_ctas,
                           hazards="strict" if args.strict else "warn", max_cycles=args.max_cycles)
    elif args.target.endswith(".sass") or "/" in args.target:
        out = run_sass_file(args.target, cfg=cfg, grid=args.grid, block=args.block,
                            timing=not args.functional, hazards="strict" if args.strict else "warn",
                            max_cycles=args.max_cycles, max_instructions=args.max_instructions)
    else:
        raise UsageError(f"unknown workload {args.target!r}: expected one of {', '.join(WORKLOADS)} or a .sass file")
    if args.json:
        print(json.dumps(out, indent=1, default=float))
    else:
        from .report.text import format_run
        print(format_run(out))
    return 0


def run_sass_file(path, cfg, grid=(1, 1), block=32, timing=True, hazards="warn", max_cycles=None,
                  max_instructions=None):
    """Run a parameterless kernel file (a micro-benchmark) and report what it executed."""
    from .sass import parse_file
    kernel = parse_file(path)
    if kernel.params:
        raise UsageError(f"{path}: the kernel takes {len(kernel.params)} parameters; `maxsim run FILE.sass` "
                         f"runs parameterless kernels (workloads have their own harness)")
    out = {"workload": path, "kernel": kernel.name, "grid": list(grid), "block": block, "config": cfg.name}
    from .report.fields import functional_fields, timing_fields
    if not timing:
        from .functional import launch
        res = launch(kernel, grid, block, max_instructions=max_instructions)
        out.update(functional_fields(kernel, res))
        return out
    from .timing.run import simulate
    res, sm = simulate(kernel, grid, block, cfg=cfg, hazards=hazards, max_cycles=max_cycles,
                       max_instructions=max_instructions)
    out.update(functional_fields(kernel, res))
    out.update(timing_fields(sm))
    return out


def main(argv=None):
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return {"run": cmd_run, "analyze": cmd_analyze, "configs": cmd_configs}[args.command](args)
    except MaxsimError as e:
        print(f"maxsim: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("maxsim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

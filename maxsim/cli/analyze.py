"""``maxsim analyze``: the static view of a kernel (opcode mix, register banks, reuse, control-code hazards)."""

from __future__ import annotations

import json

from .common import WORKLOADS, UsageError, is_kernel_file


def add_parser(sub):
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
    a.set_defaults(handler=command)


def _kernel_for(target, args):
    from ..asm import load_kernel
    from ..arch.config import load_config
    from ..sass import parse_text
    if target in WORKLOADS:
        from workloads.sgemm.generator import generate
        text = generate(target, traversal=args.traversal, regmap=args.regmap, reuse=not args.no_reuse)
        return parse_text(text, filename=f"<{target}>")
    if is_kernel_file(target) or "/" in target:
        return load_kernel(target, cfg=load_config(args.config), kernel=getattr(args, "kernel", None))
    raise UsageError(f"unknown workload {target!r}: expected one of {', '.join(WORKLOADS)} or a .sass file")


def command(args):
    from ..analysis import analyze_banks, check_controls, format_bank_report, format_hazards, opcode_mix
    from ..arch.config import load_config
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

"""``maxsim asm`` (the maxas source language to the final text form or a cubin) and ``maxsim disasm``
(a cubin in maxas's text form)."""

from __future__ import annotations

import json
import sys

from .common import UsageError


def add_parser(sub):
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

    s.set_defaults(handler=command)


def add_disasm_parser(sub):
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
    d.set_defaults(handler=disasm)


def command(args):
    from ..arch.config import load_config
    from ..asm import assemble_file
    from ..cubin import is_binary_path
    cfg = load_config(args.config)
    if is_binary_path(args.input):  # a cubin (or CUDA C / PTX): its decoded kernel, written out again
        from types import SimpleNamespace
        from ..cubin import load
        from ..analysis import check_controls
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
        from ..cubin import write_bytes
        from ..cubin.build import cubin_kernel
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


def disasm(args):
    from ..cubin import is_binary_path
    from ..cubin.disasm import kernel_text
    from ..cubin.load import cubin_of
    from ..cubin.elf import plain_name
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

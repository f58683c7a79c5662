"""Print a decoded kernel back as maxas-format SASS text."""

from __future__ import annotations

import math

from ..isa import instruction as ins


def format_control(c: ins.Control) -> str:
    return "{}:{}:{}:{}:{:x}".format(
        "--" if c.wait == 0 else f"{c.wait:02x}",
        "-" if c.read_bar == 0 else c.read_bar,
        "-" if c.write_bar == 0 else c.write_bar,
        "Y" if c.yield_ else "-",
        c.stall,
    )


def format_operand(op: ins.Operand) -> str:
    k = op.kind
    if k == ins.REG:
        s = "RZ" if op.reg == ins.RZ else f"R{op.reg}"
        if op.h1:
            s += ".H1"
        if op.reuse:
            s += ".reuse"
        if op.abs:
            s = f"|{s}|"
        if op.neg:
            s = "-" + s
        if op.not_:
            s = "~" + s
        return s
    if k == ins.PRED:
        return ("!" if op.not_ else "") + ("PT" if op.reg == ins.PT else f"P{op.reg}")
    if k == ins.IMM:
        return ("~" if op.not_ else "") + (op.text or (f"-0x{-op.value:x}" if op.value < 0 else f"0x{op.value:x}"))
    if k == ins.FIMM:
        if op.text:
            return op.text
        v = op.fvalue
        return repr(v) if math.isfinite(v) else ("NAN" if math.isnan(v) else ("-INF" if v < 0 else "INF"))
    if k == ins.CONST and op.reg >= 0:  # register-indexed (LDC)
        base = "RZ" if op.reg == ins.RZ else f"R{op.reg}"
        off = "" if op.value == 0 else (f"-0x{-op.value:x}" if op.value < 0 else f"+0x{op.value:x}")
        return f"c[0x{op.bank:x}][{base}{off}]"
    if k == ins.CONST:
        s = f"c[0x{op.bank:x}][0x{op.value:x}]" + (".H1" if op.h1 else "")
        if op.not_:
            s = "~" + s
        if op.abs:
            s = f"|{s}|"
        return ("-" if op.neg else "") + ("~" if op.not_ else "") + s
    if k == ins.MEM:
        base = "RZ" if op.reg == ins.RZ else f"R{op.reg}"
        if not op.text and op.value == 0:
            return f"[{base}]"
        off = op.text or (f"-0x{-op.value:x}" if op.value < 0 else f"0x{op.value:x}")
        if op.reg == ins.RZ and op.text:
            return f"[{off}]"
        return f"[{base}+{off}]" if not off.startswith("-") else f"[{base}{off}]"
    return op.name  # SREG, LABEL, WORD


def format_instruction(i: ins.Instruction) -> str:
    pred = ""
    if i.pred != ins.PT or i.pred_neg:
        pred = "@" + ("!" if i.pred_neg else "") + ("PT" if i.pred == ins.PT else f"P{i.pred}")
    body = i.full_opcode
    if i.operands:
        body += " " + ", ".join(format_operand(o) for o in i.operands)
    return f"{format_control(i.control)} {pred:>4} {body};"


def format_kernel(k: ins.Kernel) -> str:
    lines = [
        f"# Kernel: {k.name}",
        f"# Arch: {k.arch}",
        f"# InsCnt: {k.ins_cnt}",
        f"# RegCnt: {k.reg_cnt}",
        f"# SharedSize: {k.shared_size}",
        f"# BarCnt: {k.bar_cnt}",
        f"# Params({len(k.params)}):",
        "#\tord:addr:size:align",
    ]
    lines += [f"#\t{p.ordinal}:0x{p.offset:x}:{p.size}:{p.align}" for p in k.params]
    lines += ["#", "# Instructions:", ""]
    by_index = {}
    for name, idx in k.labels:
        by_index.setdefault(idx, []).append(name)
    for i in k.instructions:
        for name in by_index.get(i.index, ()):
            lines.append(f"{name}:")
        lines.append(format_instruction(i))
    for name in by_index.get(len(k.instructions), ()):
        lines.append(f"{name}:")
    return "\n".join(lines) + "\n"

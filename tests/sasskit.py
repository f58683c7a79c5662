"""Helpers shared by the front-end and functional tests: build small maxas-format kernels from
instruction text and run single instructions over many lanes.

Test files import this module by name (pytest puts tests/ on sys.path for rootdir-less test files).
"""

from __future__ import annotations

import re

import numpy as np

from maxsim.functional import GlobalMemory, launch
from maxsim.sass import parse_text

DEFAULT_CTRL = "--:-:-:-:6"
_PRED_PREFIX = re.compile(r"\s*(@!?P[0-6T])\s+(.*)$")


def header(name="test", regs=64, shared=0, bar=0, nparams=0, ins_cnt=None, arch="sm_50"):
    """The maxas header block, exactly as maxas writes it (and maxsim prints it)."""
    lines = [f"# Kernel: {name}", f"# Arch: {arch}", f"# InsCnt: {0 if ins_cnt is None else ins_cnt}",
             f"# RegCnt: {regs}", f"# SharedSize: {shared}", f"# BarCnt: {bar}",
             f"# Params({nparams}):", "#\tord:addr:size:align"]
    lines += [f"#\t{i}:0x{0x140 + 4 * i:x}:4:0" for i in range(nparams)]
    lines += ["#", "# Instructions:", ""]
    return "\n".join(lines) + "\n"


def line(text, ctrl=DEFAULT_CTRL):
    """One instruction line in maxas layout: control, predicate column, text and ';'.

    ``text`` may start with a guard (``@P0 IADD ...``) and may carry its own control field
    (``01:-:-:-:6 IADD ...``); a label (``LOOP:``) is passed through.
    """
    text = text.strip()
    if re.match(r"[A-Za-z_]\w*:$", text):
        return text
    m = re.match(r"([0-9a-fA-F-]{2}:[1-6-]:[1-6-]:[yY-]:[0-9a-fA-F])\s+(.*)$", text)
    if m:
        ctrl, text = m.groups()
    pred = ""
    m = _PRED_PREFIX.match(text)
    if m:
        pred, text = m.groups()
    text = text.rstrip(";")
    return f"{ctrl} {pred:>4} {text};"


def sass(*body, name="test", regs=64, shared=0, bar=0, nparams=0):
    """A full kernel text: header plus the given instruction lines (an EXIT is not added)."""
    lines = []
    for b in body:
        lines += [x for x in b.strip("\n").splitlines() if x.strip()] if "\n" in b else [b]
    text_lines = [line(x) for x in lines]
    n_ins = sum(1 for x in text_lines if not x.endswith(":"))
    return header(name, regs, shared, bar, nparams, ins_cnt=max(0, n_ins - 1)) + "\n".join(text_lines) + "\n"


def kernel(*body, **kw):
    return parse_text(sass(*body, **kw), filename=f"{kw.get('name', 'test')}.sass")


# ---------------------------------------------------------------------------------------------
# single-instruction harness
#
# Parameters: 4 scalars at c[0x0][0x140..0x14c], then pointers to the inputs a, b, c, d at
# 0x150..0x15c, then one output pointer per result register from 0x160.
# Each lane loads R10 = a[i], R11 = b[i], R12 = c[i], R13 = d[i] (d: the old value of the result
# register), runs the body, and stores the result registers.

SCALARS = 4
BLOCK = 128


def _as_u32(x, n):
    if x is None:
        return np.zeros(n, np.uint32)
    arr = np.asarray(x)
    if arr.dtype == np.float32:
        return arr.view(np.uint32)
    if arr.dtype.kind == "f":
        return arr.astype(np.float32).view(np.uint32)
    return (arr.astype(np.int64) & 0xFFFFFFFF).astype(np.uint32)


def run_lanes(body, a=None, b=None, c=None, d=None, *, outs=("R13",), scalars=(), n=None,
              dtype=np.uint32, max_instructions=None):
    """Run ``body`` (instruction text lines) on one lane per input element; return the output
    registers as arrays (one array, or a tuple when several ``outs``)."""
    if n is None:
        n = next(len(np.asarray(x)) for x in (a, b, c, d) if x is not None)
    inputs = [_as_u32(x, n) for x in (a, b, c, d)]
    if d is None:
        inputs[3] = np.full(n, 0xDEADBEEF, np.uint32)
    mem = GlobalMemory()
    ptrs = []
    for arr in inputs:
        p = mem.alloc(4 * n)
        mem.write(p, arr)
        ptrs.append(p)
    out_ptrs = [mem.alloc(4 * n) for _ in outs]
    sc = list(scalars) + [0] * (SCALARS - len(scalars))
    params = sc + ptrs + out_ptrs
    pre = [
        "--:-:1:-:1 S2R R0, SR_TID.X",
        "--:-:2:-:1 S2R R1, SR_CTAID.X",
        f"03:-:-:-:6 ISCADD R0, R1, R0, 0x{BLOCK.bit_length() - 1:x}",
        f"ISETP.GE.AND P6, PT, R0, 0x{n:x}, PT",  # lanes past n do nothing
        "--:-:-:-:5 @P6 EXIT",
        "SHL R1, R0, 0x2",
    ]
    for k, reg in enumerate(("R10", "R11", "R12", "R13")):
        pre += [f"IADD R2, R1, c[0x0][0x{0x140 + 4 * (SCALARS + k):x}]", f"--:-:1:-:2 LDG {reg}, [R2]"]
    post = []
    for k, reg in enumerate(outs):
        post += [f"IADD R2, R1, c[0x0][0x{0x140 + 4 * (SCALARS + 4 + k):x}]", f"STG.CG [R2], {reg}"]
    post += ["--:-:-:-:5 EXIT"]
    lines = pre + [x for x in (body if isinstance(body, (list, tuple)) else body.strip().splitlines())] + post
    k = kernel(*lines, nparams=len(params), regs=64)
    grid = (n + BLOCK - 1) // BLOCK
    launch(k, grid, BLOCK, params, mem, max_instructions=max_instructions)
    res = tuple(mem.read(p, n, np.uint32).view(dtype) for p in out_ptrs)
    return res[0] if len(res) == 1 else res


def u32(x):
    return np.asarray(x, dtype=np.uint64).astype(np.uint32) if not isinstance(x, int) else x & 0xFFFFFFFF


def s32(x):
    """Signed view of a uint32 array / int."""
    if isinstance(x, int):
        x &= 0xFFFFFFFF
        return x - (1 << 32) if x >> 31 else x
    return np.asarray(x, dtype=np.uint32).view(np.int32)

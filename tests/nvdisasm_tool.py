"""NVIDIA's disassembler as an independent oracle for the instruction codec.

:func:`find_nvdisasm` locates ``nvdisasm`` (CUDA 12.8.55, the last version that reads sm_50/52):
the environment variable ``MAXSIM_NVDISASM``, else the copy the Triton 3.3.1 wheel ships
(``triton/backends/nvidia/bin/nvdisasm`` in site-packages), else ``nvdisasm`` on PATH. CI installs
it with ``pip install triton==3.3.1`` (or unzips that wheel's ``bin/`` and sets MAXSIM_NVDISASM).

:func:`disassemble` runs it on raw Maxwell code (``nvdisasm -b SM52 --print-raw``) and returns
one text per instruction; :func:`normalize_nvdisasm` and :func:`normalize_ours` bring its syntax
and maxsim's (maxas's) to one comparable form.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

VERSION = "12.8"  # the release whose nvdisasm still reads sm_50/52


def find_nvdisasm():
    """Path of nvdisasm, or None."""
    env = os.environ.get("MAXSIM_NVDISASM")
    if env:
        return env if Path(env).is_file() else None
    spec = importlib.util.find_spec("triton")
    if spec is not None and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            p = Path(loc) / "backends" / "nvidia" / "bin" / "nvdisasm"
            if p.is_file():
                return str(p)
    return shutil.which("nvdisasm")


def tool_version(path) -> str:
    out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
    m = re.search(r"V(\d+\.\d+\.\d+)", out)
    return m.group(1) if m else ""


_LINE = re.compile(r"^\s*/\*([0-9a-f]+)\*/\s*(.*?)\s*;?\s*$")


def disassemble(path, code: bytes, arch: str = "SM52") -> dict:
    """{byte address: instruction text} of raw code (control words are not instructions)."""
    with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
        f.write(code)
        name = f.name
    try:
        r = subprocess.run([path, "-b", arch, "--print-raw", "--no-vliw", name], capture_output=True, text=True)
    finally:
        os.unlink(name)
    if r.returncode != 0:
        raise RuntimeError(f"nvdisasm failed: {r.stderr.strip()}")
    out = {}
    for line in r.stdout.splitlines():
        m = _LINE.match(line)
        if m:
            out[int(m.group(1), 16)] = m.group(2).rstrip(" ;")
    return out


# ---------------------------------------------------------------------------------------------
# normalization: both sides become (guard, opcode, sorted modifiers, operands)

# modifiers nvdisasm prints that maxas's text leaves out as the default
_DEFAULT_MODS = {"32": None, "U16.U16": "XMAD"}  # modifier: the one opcode it is a default of
_FLOAT_RE = re.compile(r"^[-+]?(\d+\.?\d*(e[-+]?\d+)?|INF|QNAN|NAN)$", re.IGNORECASE)


_DOUBLE_OPS = frozenset(("DADD", "DMUL", "DFMA", "DMNMX", "DSETP", "DSET"))


def _float_bits(text: str, double: bool):
    """The fp32 (fp64 for the double opcodes) pattern of a float immediate's text."""
    t = text.upper().lstrip("+")
    kind = np.float64 if double else np.float32
    if t in ("INF", "-INF", "+INF"):
        v = kind(-np.inf if t.startswith("-") else np.inf)
    elif t.lstrip("-") in ("QNAN", "NAN"):
        return "nan" + ("-" if t.startswith("-") else "")
    else:
        v = kind(float(t))
    return int(v.view(np.uint64 if double else np.uint32))


def _const(m):
    off = int(m.group(2), 16)
    return f"c[{m.group(1)}][0x{off & 0xFFFF:x}]"  # nvdisasm prints offsets >= 0x8000 negative


def _operand(tok: str, opcode: str):
    tok = tok.strip()
    if re.fullmatch(r"-?0x[0-9a-f]+", tok):
        # XMAD's 16-bit immediate is printed signed when b is signed
        return ("imm", int(tok, 16) & (0xFFFF if opcode == "XMAD" else 0xFFFFFFFF))
    if _FLOAT_RE.match(tok):
        return ("f", _float_bits(tok, opcode in _DOUBLE_OPS))
    tok = re.sub(r"c\[(0x[0-9a-f]+)\]\s*\[(-?0x[0-9a-f]+)\]", _const, tok)
    tok = re.sub(r"\|([^|]+)\|\.reuse", r"|\1.reuse|", tok)  # nvdisasm: |R1|.reuse, maxas: |R1.reuse|
    tok = tok.replace("+-0x", "-0x").replace("RZ.reuse", "RZ")  # nvdisasm prints no reuse flag on RZ
    return ("t", tok)


def _split(text: str):
    text = text.strip().rstrip(";").strip()
    guard = ""
    m = re.match(r"(@!?P[0-6T])\s+(.*)$", text)
    if m:
        guard, text = m.groups()
    head, _, rest = text.partition(" ")
    ops = [o.strip() for o in rest.split(",")] if rest.strip() else []
    return guard, head, ops


def normalize_nvdisasm(text: str, float_ops=()):
    """nvdisasm's text as (guard, opcode, modifiers, operands)."""
    guard, head, ops = _split(text)
    opcode, *mods = head.split(".")
    mods = [m for m in mods]
    # maxas writes a carry-out as the destination's suffix R0.CC; maxsim as the modifier .CC
    new = []
    for o in ops:
        if re.fullmatch(r"R(\d+|Z)\.CC", o):
            o = o[:-3]
            mods.append("CC")
        new.append(o)
    ops = new
    joined = ".".join(mods)
    for d, only in _DEFAULT_MODS.items():
        if only and opcode != only:
            continue
        if joined == d or joined.startswith(d + ".") or joined.endswith("." + d) or f".{d}." in joined:
            joined = joined.replace(d, "").replace("..", ".").strip(".")
    mods = sorted(x for x in joined.split(".") if x)
    if opcode in ("BRA", "SSY", "PBK", "PCNT", "CAL") and ops and re.fullmatch(r"0x[0-9a-f]+", ops[-1]):
        t = int(ops[-1], 16)
        if t % 32 == 0:  # a group's control word: the group's first instruction
            ops[-1] = f"0x{t + 8:x}"
    if opcode == "DEPBAR" and not ops:  # an empty scoreboard set
        ops = ["{}"]
    if opcode in ("LOP", "LOP3") and ops and ops[0] == "PT":  # no predicate result: nvdisasm leaves it out
        ops = ops[1:]
    if opcode == "VOTE" and len(ops) == 2:  # no register result: nvdisasm leaves out RZ
        ops = ["RZ"] + ops
    if opcode == "LEA" and len(ops) == (4 if "HI" in mods else 3):  # a shift of 0 is left out
        ops = ops + ["0x0"]
    if opcode in ("TLD", "TEX") and len(ops) == 5:  # a handle register RZ is left out
        ops = ops[:2] + ["RZ"] + ops[2:]
    if opcode in ("TLDS", "TEXS") and len(ops) == 6:  # a second coordinate RZ is left out
        ops = ops[:3] + ["RZ"] + ops[3:]
    return guard, opcode, tuple(mods), tuple(_operand(o, opcode) for o in ops)


def normalize_ours(line: str, target_address=None):
    """maxsim's decoded text (a label operand replaced by its target's byte address)."""
    guard, head, ops = _split(line)
    opcode, *mods = head.split(".")
    if target_address is not None:
        ops = ops[:-1] + [f"0x{target_address:x}"]
    if opcode in ("LOP", "LOP3") and ops and ops[0] == "PT":
        ops = ops[1:]
    if opcode in ("TLDS", "TEXS") and len(ops) == 6:  # the 1D form: its second coordinate is RZ
        ops = ops[:3] + ["RZ"] + ops[3:]
    return guard, opcode, tuple(sorted(mods)), tuple(_operand(o, opcode) for o in ops)


def _is_nan_bits(v: int) -> bool:
    return (v >> 23 & 0xFF) == 0xFF and v & 0x7FFFFF != 0


def equivalent(ours, theirs) -> bool:
    """Normalized texts agree (a NaN immediate matches any NaN bit pattern)."""
    if ours[:3] != theirs[:3] or len(ours[3]) != len(theirs[3]):
        return False
    for a, b in zip(ours[3], theirs[3]):
        if a == b:
            continue
        nan = [x for x in (a, b) if x[0] == "f" and isinstance(x[1], str)]
        other = b if a in nan else a
        if nan and ((other[0] in ("imm", "f") and isinstance(other[1], int) and _is_nan_bits(other[1]))
                    or (other[0] == "f" and isinstance(other[1], str))):
            continue
        return False
    return True


def find_cuobjdump():
    """cuobjdump next to nvdisasm (the Triton wheel ships both), or on PATH."""
    nv = find_nvdisasm()
    if nv:
        p = Path(nv).with_name("cuobjdump")
        if p.is_file():
            return str(p)
    return shutil.which("cuobjdump")


_FUNC = re.compile(r"^\s*Function : (\S+)")
_INS = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;?\s*/\* (0x[0-9a-f]{16}) \*/")
_CTRL = re.compile(r"^\s*/\* (0x[0-9a-f]{16}) \*/\s*$")


def cuobjdump_sass(path, cubin: bytes) -> dict:
    """{kernel: (code bytes, {address: text})} from ``cuobjdump -sass`` of a cubin."""
    import struct

    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
        name = f.name
    try:
        r = subprocess.run([path, "-sass", name], capture_output=True, text=True)
    finally:
        os.unlink(name)
    if r.returncode != 0:
        raise RuntimeError(f"cuobjdump failed: {r.stderr.strip()}")
    out, words, texts, fname = {}, [], {}, None
    for line in r.stdout.splitlines() + ["Function : <end>"]:
        m = _FUNC.match(line)
        if m:
            if fname is not None:
                out[fname] = (struct.pack(f"<{len(words)}Q", *words), texts)
            fname, words, texts = m.group(1), [], {}
            continue
        m = _INS.match(line)
        if m:
            texts[int(m.group(1), 16)] = m.group(2).rstrip(" ;")
            words.append(int(m.group(3), 16))
            continue
        m = _CTRL.match(line)
        if m:
            words.append(int(m.group(1), 16))
    return out

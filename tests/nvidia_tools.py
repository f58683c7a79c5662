"""NVIDIA's disassembler as an independent oracle: cuobjdump 12.8.55 (the last release that reads
sm_5x cubins; the Triton 3.3.1 wheel carries it under ``triton/backends/nvidia/bin/``).

:func:`cuobjdump` finds the tool (``MAXSIM_CUOBJDUMP``, the installed ``triton`` package, or
``PATH``); :func:`sass_listing` runs ``cuobjdump -sass`` on a cubin and gives, per kernel, its
instructions as (byte offset, control text ``WW:R:W:Y:S``, instruction text, 64-bit word); the
control text comes from the control word cuobjdump prints before each group of three, decoded by
the bit layout of docs (maxas wiki "Control-Codes").
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

_FUNC = re.compile(r"^\s*Function : (\S+)")
_INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;\s*/\* (0x[0-9a-f]{16}) \*/")
_CTRL = re.compile(r"^\s*/\* (0x[0-9a-f]{16}) \*/\s*$")


def cuobjdump():
    """Path of cuobjdump 12.8, or None."""
    env = os.environ.get("MAXSIM_CUOBJDUMP")
    if env and os.path.exists(env):
        return env
    try:
        import triton
        exe = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
        if os.path.exists(exe):
            return exe
    except Exception:  # noqa: BLE001 - triton absent or broken: look on PATH
        pass
    return shutil.which("cuobjdump")


def control_text(word: int, slot: int) -> tuple:
    """(control text, reuse mask) of instruction ``slot`` (0-2) of a group's control word."""
    c = (word >> (21 * slot)) & 0x1FFFFF
    stall, yld, wb, rb, wait, reuse = c & 0xF, (c >> 4) & 1, (c >> 5) & 7, (c >> 8) & 7, (c >> 11) & 0x3F, c >> 17
    text = "{}:{}:{}:{}:{:x}".format("--" if not wait else f"{wait:02x}", "-" if rb == 7 else rb + 1,
                                     "-" if wb == 7 else wb + 1, "-" if yld else "Y", stall)
    return text, reuse


def sass_listing(path) -> dict:
    """{kernel symbol: [(offset, control text, instruction text, word)]} of ``cuobjdump -sass``."""
    exe = cuobjdump()
    out = subprocess.run([exe, "-sass", os.fspath(path)], capture_output=True, text=True, check=True).stdout
    kernels, current, ctrl, slot = {}, None, 0, 0
    for line in out.splitlines():
        m = _FUNC.match(line)
        if m:
            current = kernels.setdefault(m.group(1), [])
            continue
        m = _CTRL.match(line)
        if m and current is not None:
            ctrl, slot = int(m.group(1), 16), 0
            continue
        m = _INSTR.match(line)
        if m and current is not None:
            text, _ = control_text(ctrl, slot)
            current.append((int(m.group(1), 16), text, " ".join(m.group(2).split()), int(m.group(3), 16)))
            slot += 1
    return kernels


_BRANCH = re.compile(r"^(@!?P[0-6T] )?(BRA|SSY|PBK|PCNT|CAL|JCAL)(\.\w+)* (?:CC\.\w+, )?(0x[0-9a-f]+)$")


def maxas_lines(listing) -> list:
    """One kernel's ``cuobjdump -sass`` listing (:func:`sass_listing`) in maxas's text form:
    control code, guard, instruction; branch targets as labels ``TARGETn:``; ``c[0x0] [0x8]``
    written ``c[0x0][0x8]``."""
    def target(m):  # a target on a group's control word is the group's first instruction
        t = int(m.group(4), 16)
        return t + 8 if t % 32 == 0 else t

    targets = {}
    for off, _, text, _ in listing:
        m = _BRANCH.match(text)
        if m:
            targets.setdefault(target(m), f"TARGET{len(targets) + 1}")
    out = []
    for off, ctrl, text, _ in listing:
        if off in targets:
            out.append(f"{targets[off]}:")
        m = _BRANCH.match(text)
        if m:
            text = text[: m.start(4)] + targets[target(m)]
        text = text.replace("] [", "][")
        guard = ""
        if text.startswith("@"):
            guard, text = text.split(" ", 1)
        out.append(f"{ctrl} {guard:>5} {text};")
    return out


def require_nvrtc():
    """Skip the calling test (or module fixture) unless NVIDIA's NVRTC, maxsim's ``cuda`` extra,
    is installed and loads; gives maxsim.cuda.compile_file."""
    import pytest
    try:
        from maxsim.cuda import compile_file, nvrtc_version
        nvrtc_version()
    except Exception as e:  # MaxsimError when the extra is not installed, or does not load
        pytest.skip(f"NVRTC is not installed ({e})")
    return compile_file

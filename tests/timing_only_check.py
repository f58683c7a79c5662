"""Trace identity of timing-only launches: helpers shared by the tests.

:func:`launch_checked` runs a launch as asked (full) and then twice more on copies of its inputs,
both with a trace recorder: full and ``timing_only``. The two traces must be the same, warp by
warp: the pcs executed and every memory summary and barrier record.
"""

from __future__ import annotations

import copy

import numpy as np

from maxsim.arch.config import load_config
from maxsim.functional import launch as real_launch
from maxsim.functional.trace import TraceRecorder
from maxsim.timing.summaries import make_summariser

_CFG = load_config()
checked = []  # kernel names whose traces were compared (for the tests that count them)


def _same(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b))
    return a == b


def trace_difference(t1, t2):
    """None when the traces (``{warp: WarpTrace}``) are the same, else where they first differ."""
    if sorted(t1) != sorted(t2):
        return f"warps {sorted(t1)} vs {sorted(t2)}"
    for w in sorted(t1):
        p1, p2 = t1[w].pcs(), t2[w].pcs()
        if p1 != p2:
            n = next((i for i, (x, y) in enumerate(zip(p1, p2)) if x != y), min(len(p1), len(p2)))
            return f"warp {w}: pcs differ at position {n} ({len(p1)} vs {len(p2)} instructions)"
        r1, r2 = t1[w].records(), t2[w].records()
        if sorted(r1) != sorted(r2):
            return f"warp {w}: records at different positions"
        for pos in sorted(r1):
            if not _same(r1[pos], r2[pos]):
                return f"warp {w}: record at position {pos} (pc {p1[pos]}) differs: {r1[pos]!r} vs {r2[pos]!r}"
    return None


def traces(kernel, grid, block, params=(), memory=None, textures=None, timing_only=False, **kw):
    rec = TraceRecorder(make_summariser(_CFG))
    res = real_launch(kernel, grid, block, params, memory, textures, recorder=rec, timing_only=timing_only, **kw)
    return res


def compare(kernel, grid, block, params=(), memory=None, textures=None, **kw):
    """Full and timing-only traced launches on copies of ``memory``: assert the traces match;
    returns the two launch results."""
    full = traces(kernel, grid, block, params, copy.deepcopy(memory), textures, **kw)
    fast = traces(kernel, grid, block, params, copy.deepcopy(memory), textures, timing_only=True, **kw)
    diff = trace_difference(full.trace, fast.trace)
    assert diff is None, f"{kernel.name}: timing-only trace differs from the full one: {diff}"
    assert fast.warp_instructions == full.warp_instructions
    assert fast.thread_instructions == full.thread_instructions
    assert np.array_equal(fast.per_instruction, full.per_instruction)
    checked.append(kernel.name)
    return full, fast


def launch_checked(kernel, grid, block, params=(), memory=None, textures=None, **kw):
    """``launch`` as asked; when it succeeds, :func:`compare` on copies of its inputs too."""
    before = copy.deepcopy(memory)
    res = real_launch(kernel, grid, block, params, memory, textures, **kw)
    kw = {k: v for k, v in kw.items() if k in ("ctas", "max_instructions")}
    compare(kernel, grid, block, params, before, textures, **kw)
    return res

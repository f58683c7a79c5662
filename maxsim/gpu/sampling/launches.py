"""Sampling across launches: a kernel launched many times with the same shape (a time-stepped
stencil, an iterative solver) is simulated until its launches' figures repeat, then they are reused.

The predictions of the last ``repeats`` launches of each shape (the kernel's code, grid, block,
config, what the L2 holds at the start, and the arguments: the constant banks with the parameters
and the buffers' addresses, the textures' places and sizes) are kept; once they agree within
``agree`` of their mean, the next launch of that shape takes their mean (method "reused across
launches", nothing simulated, the interval from the least to the most of them). The functional run
of every launch still goes on: its outputs are computed whatever the prediction, and its work (the
warp instructions of each static instruction, the thread instructions, divergent branches and idle
lanes of each warp) is checked against that of the launch the figures come from: a launch whose
work differs (its data or an argument changed its control flow) is simulated, its shape's
figures forgotten.

The timed SM of such a launch is reused the same way: once the last ``repeats`` launches of a shape
timed the same run (the same inputs: :func:`maxsim.timing.run.simulate` with ``reuse``, whose
traces are compared whole), later launches of the shape with the same work take that SM without
recording a trace (:func:`timed`).
"""

from __future__ import annotations

import collections
import hashlib

import attrs
import numpy as np

from .settings import SETTINGS

_L = SETTINGS["launches"]
REPEATS = _L["repeats"]
AGREE = _L["agree"]
SHAPES = _L["shapes"]

_SEEN = collections.OrderedDict()  # shape -> its last predictions (most recent last)
_WORK = {}  # shape -> the work (see work_of) of its last launch predicted
_TIMED = collections.OrderedDict()  # shape -> [how timed, run key, timed SM, work, launches in a row]


def forget(shape=None):
    """Drop every shape's figures, or ``shape``'s (the next launches are simulated again)."""
    if shape is None:
        _SEEN.clear()
        _WORK.clear()
        _TIMED.clear()
        return
    _SEEN.pop(shape, None)
    _WORK.pop(shape, None)
    _TIMED.pop(shape, None)


def work_of(res, ctas):
    """A digest of the work of launch result ``res`` (a launch of ``ctas`` CTAs): its warp
    instructions, per static instruction and in all, and its warps' thread instructions,
    divergent branches and idle lanes; None when it ran only some of the CTAs."""
    if len(res.ctas) != ctas or res.warp_threads is None:
        return None
    h = hashlib.blake2b(str(res.warp_instructions).encode(), digest_size=20)
    for part in (res.per_instruction, res.warp_threads, res.warp_divergent, res.warp_idle):
        h.update(b"-" if part is None else np.ascontiguousarray(part).tobytes())
    return h.digest()


def reused(shape, cfg):
    """``(prediction, work)``: the prediction a launch of ``shape`` reuses and the work (:func:`work_of`)
    of the launch it was last predicted for (None: not known), or None while its last ``REPEATS``
    launches' predictions do not agree within ``AGREE`` (or are fewer)."""
    last = _SEEN.get(shape)
    if last is None or len(last) < REPEATS:
        return None
    cycles = [p.cycles for p in last]
    mean = sum(cycles) / len(cycles)
    if mean <= 0 or max(abs(c - mean) for c in cycles) > AGREE * mean:
        return None
    _SEEN.move_to_end(shape)
    ref = last[-1]
    seconds = ref.seconds + cfg.cycles_to_seconds(mean) - cfg.cycles_to_seconds(ref.cycles)
    return attrs.evolve(ref, cycles=mean, seconds=seconds, method="reused across launches",
                        gflops=None if ref.gflops is None else ref.gflops * ref.seconds / seconds,
                        simulated_share=0.0, interval=(min(cycles), max(cycles)),
                        details=dict(ref.details, reused_from=[p.method for p in last])), _WORK.get(shape)


def record(shape, prediction, work=None):
    """Keep ``prediction`` as the latest of ``shape``'s launches, whose work was ``work``
    (:func:`work_of`)."""
    last = _SEEN.get(shape)
    if last is None:
        last = _SEEN[shape] = collections.deque(maxlen=REPEATS)
    last.append(prediction)
    _WORK[shape] = work
    _SEEN.move_to_end(shape)
    while len(_SEEN) > SHAPES:
        old, _ = _SEEN.popitem(last=False)
        _WORK.pop(old, None)
        _TIMED.pop(old, None)


def record_timed(shape, how, sm, work):
    """Keep the timed SM ``sm`` of a launch of ``shape`` whose prediction was reused, timed ``how``
    (the hazard mode, cycle limit, CTAs and implementations), its launch's work ``work``. Only an
    SM whose run was kept for reuse (``sm.run_key``, see :func:`maxsim.timing.run.simulate`)
    counts; launches in a row timing the same run are counted."""
    key = getattr(sm, "run_key", None)
    if key is None or work is None:
        _TIMED.pop(shape, None)
        return
    last = _TIMED.get(shape)
    if last is not None and last[0] == how and last[3] == work and last[1] == key:
        last[2], last[4] = sm, last[4] + 1
    else:
        _TIMED[shape] = [how, key, sm, work, 1]
    _TIMED.move_to_end(shape)
    while len(_TIMED) > SHAPES:
        _TIMED.popitem(last=False)


def timed(shape, how):
    """``(timed SM, work)``: the SM the last ``REPEATS`` launches of ``shape`` timed ``how`` in a row
    with the same inputs and work, or None."""
    last = _TIMED.get(shape)
    if last is None or last[4] < REPEATS or last[0] != how:
        return None
    return last[2], last[3]

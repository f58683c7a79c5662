"""Sampling across launches: a kernel launched many times with the same shape (a time-stepped
stencil, an iterative solver) is simulated until its launches' figures repeat, then they are reused.

The predictions of the last ``repeats`` launches of each shape (the kernel's code, grid, block,
config and what the L2 holds at the start) are kept; once they agree within ``agree`` of their
mean, the next launch of that shape takes their mean (method "reused across launches", nothing
simulated, the interval from the least to the most of them). The functional run of every launch
still goes on: its outputs are computed whatever the prediction.
"""

from __future__ import annotations

import collections

import attrs

from .settings import SETTINGS

_L = SETTINGS["launches"]
REPEATS = _L["repeats"]
AGREE = _L["agree"]
SHAPES = _L["shapes"]

_SEEN = collections.OrderedDict()  # shape -> its last predictions (most recent last)


def forget():
    """Drop every shape's predictions (the next launches are simulated again)."""
    _SEEN.clear()


def reused(shape, cfg):
    """The prediction a launch of ``shape`` reuses, or None while its last ``REPEATS`` launches'
    predictions do not agree within ``AGREE`` (or are fewer)."""
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
                        details=dict(ref.details, reused_from=[p.method for p in last]))


def record(shape, prediction):
    """Keep ``prediction`` as the latest of ``shape``'s launches."""
    last = _SEEN.get(shape)
    if last is None:
        last = _SEEN[shape] = collections.deque(maxlen=REPEATS)
    last.append(prediction)
    _SEEN.move_to_end(shape)
    while len(_SEEN) > SHAPES:
        _SEEN.popitem(last=False)

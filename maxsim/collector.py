"""Python's cyclic garbage collector paced for a simulation.

A launch's simulation makes and drops many small objects (a warp's trace parts, per-CTA records)
while it holds some that live long (the SMs' warps, the compiled kernel's closures, the memory
system). With the interpreter's default pacing, a collection of the young objects runs every 700
allocations and, every 100 of those, one of the whole heap once it has grown by a quarter: the
whole-GPU run of a 2048 x 2048 stencil (6.97 M warp-instructions) spent 10-20% of its CPU time in
collections (measured with the collector off), mostly scanning long-lived objects that were not
garbage. :func:`paced` runs a simulation with young collections every ``YOUNG_ALLOCATIONS``
allocations instead, which makes full collections as much rarer; cyclic garbage is still
collected, only later (reference counting frees the rest at once).
"""

from __future__ import annotations

import functools
import gc
from contextlib import contextmanager

# allocations between collections of the young objects while a simulation runs (a simulator
# setting, a documented choice: the interpreter's default is 700; 50,000 cut the stencil's
# simulation above by 10-15%, and young garbage waits at most that many allocations)
YOUNG_ALLOCATIONS = 50_000


@contextmanager
def paced():
    """Run the block with the collector's young threshold at ``YOUNG_ALLOCATIONS`` (unless it is
    higher already, or 0: collection switched off), the thresholds as they were afterwards."""
    before = gc.get_threshold()
    if before[0] == 0 or before[0] >= YOUNG_ALLOCATIONS:
        yield
        return
    gc.set_threshold(YOUNG_ALLOCATIONS, *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def paced_run(fn):
    """``fn`` run under :func:`paced` (a decorator)."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        with paced():
            return fn(*args, **kwargs)
    return run

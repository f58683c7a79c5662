"""The CTA-level model of the block dispatcher: which CTA runs on which slot, from when to when."""

from __future__ import annotations

import heapq

import numpy as np

from ...jit import njit


def dispatch(n_ctas, slots, duration, hold=None, timed=False, launch=0, interval=0, delays=None,
             first_wave="together", ends=None):
    """CTA-level model of the block dispatcher.

    ``slots`` CTA slots (SM i mod S, as the first wave is dealt round-robin: slot j holds CTA j of
    the first wave); ``duration(slot, cta index)`` gives a CTA's cycles on a slot (``timed``:
    ``duration(slot, cta index, start cycle)``). Returns ``(slot, start, end)`` per CTA, in CTA order:
    the first ``slots`` start at 0 (``first_wave`` "dispatched", ``gpu.first_wave``: CTA j at j x
    ``interval``, handed out one at a time as the later ones), each later CTA on the slot that frees first (ties: the lower
    slot), ``launch`` cycles after that slot's CTA ended (``sm.cta_launch_cycles``) and no earlier
    than ``interval`` cycles after the CTA handed out before it (``gpu.cta_dispatch_interval``), as
    the full simulation starts them. ``hold``: the CTAs from this index on wait until every CTA
    before it has ended. ``delays``: extra cycles before each later CTA starts, by CTA index (an
    experiment's spread of start times; none as the model stands). ``ends``: per first-wave slot,
    when its CTA ended in the first wave's simulation: slots that free at the same cycle of the
    model (every slot at one mean cost) free in that order, and each later CTA takes the order of
    its hand-out, as the full simulation's block dispatcher gives each CTA to the slot that frees
    first (default: the lower slot first, so CTA i of every wave goes to slot i mod ``slots``)."""
    if not timed:
        untimed = duration

        def duration(j, i, t):
            return untimed(j, i)
    _check_first_wave(first_wave)
    dealt = first_wave == "dispatched"
    out = []
    heap = []
    first = min(slots, n_ctas)
    rank = list(range(first))  # ties between slots that free together: by this rank, then by slot
    if ends is not None:
        for r, j in enumerate(sorted(range(first), key=lambda j: (ends[j], j))):
            rank[j] = r
    for j in range(first):
        s = float(j * interval) if dealt else 0.0
        d = duration(j, j, s)
        out.append((j, s, s + d))
        heap.append((s + d, rank[j], j))
    heapq.heapify(heap)
    held = None
    free = float(len(out) * interval) if dealt else 0.0  # the dispatcher's next free cycle
    for i in range(len(out), n_ctas):
        t, _, j = heapq.heappop(heap)
        t += launch
        if hold is not None and i >= hold:
            if held is None:
                held = max(e for _, _, e in out[:hold])
            t = max(t, held)
        t = max(t, free)
        free = t + interval
        if delays is not None and i < len(delays):
            t += float(delays[i])
        d = duration(j, i, t)
        out.append((j, t, t + d))
        heapq.heappush(heap, (t + d, i, j))  # (i > every first-wave rank: handed out later)
    return out

def resident_at(schedule, t):
    """The CTAs running at cycle ``t`` of a :func:`dispatch` schedule: ``{slot: (cta index, start, end)}``."""
    res = {}
    for i, (j, s, e) in enumerate(schedule):
        if s <= t < e:
            res[j] = (i, s, e)
    return res


def _check_first_wave(first_wave):
    if first_wave not in FIRST_WAVES:
        raise ValueError(f"first_wave {first_wave!r}: expected one of {', '.join(FIRST_WAVES)}")


FIRST_WAVES = ("together", "dispatched")  # gpu.first_wave's values


@njit(cache=True)
def _makespan(durations, slots, launch, interval, dealt):
    heap = [(0.0, 0)]
    heap.pop()
    end = 0.0
    n = len(durations)
    first = min(slots, n)
    for j in range(first):
        e = durations[j] + (j * interval if dealt else 0.0)
        heap.append((e, j))
        end = max(end, e)
    heapq.heapify(heap)
    free = first * interval if dealt else 0.0
    for i in range(first, n):
        t, j = heapq.heappop(heap)
        t = max(t + launch, free)
        free = t + interval
        e = t + durations[i]
        end = max(end, e)
        heapq.heappush(heap, (e, j))
    return end


def makespan(durations, slots, launch=0, interval=0, first_wave="together") -> float:
    """The last end of :func:`dispatch` with ``durations[i]`` the cycles of CTA i on any slot (no
    ``hold``), in compiled code: a launch of millions of CTAs is laid out in a fraction of a second."""
    _check_first_wave(first_wave)
    d = np.ascontiguousarray(durations, dtype=np.float64)
    if not len(d):
        return 0.0
    return float(_makespan(d, int(slots), float(launch), float(interval), first_wave == "dispatched"))

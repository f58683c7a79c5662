"""What a sampled prediction gives back: the phases it simulated and the launch's figures, and the
memory counters it adds up and scales."""

from __future__ import annotations

import attrs



@attrs.frozen
class Phase:
    """One simulated piece of a launch."""
    name: str  # "first wave", "steady state", "tail"
    ctas: int  # CTAs simulated
    ks: tuple  # K values simulated (steady state: the window's K)
    cycles: tuple  # simulated cycles at each
    loop_cycles: float  # mean cycles per main-loop iteration of one CTA (last sample)
    memory: dict  # memory-system counters of the last sample, with "cycles"

@attrs.define
class Prediction:
    cycles: float
    seconds: float
    phases: list
    waves: float
    resident_ctas: int
    progress_skew: float  # steady state: std of the resident CTAs' progress, in main-loop iterations
    memory: dict  # launch estimates: l2 read hits/misses, dram bytes read/written, ... and "cycles"
    sim_seconds: float = 0.0
    dram_busy: float = 0.0  # the share of its cycles the steady-state window (else the first wave) kept DRAM busy
    dram_bound: bool = False  # a steady-state window with dram_busy >= DRAM_SATURATED (module docstring)

def dram_busy(phase):
    """The share of a simulated piece's cycles the DRAM channels were busy (their mean; it can pass
    1 when transfers queued in the piece end after its last CTA)."""
    return phase.memory.get("dram_busy_cycles", 0.0) / max(phase.memory.get("cycles", 0.0), 1.0)

def memory_counters(ms, cycles, sms=(), stats=None):
    """Additive counters of one simulated piece: the memory system's, the SMs' L1/texture caches'
    and resident warp-cycles (for the profiler metrics, :mod:`maxsim.report.metrics`), and its
    ``cycles``. ``stats``: ``ms.stats()`` when the caller has it already."""
    from ...report.metrics import resident_warp_counters
    st = ms.stats() if stats is None else stats
    out = {k: float(v) for k, v in st.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
           and not k.endswith(("rate", "utilisation", "utilization", "delay", "p95"))}
    for key in ("l2_read_hits", "l2_read_misses", "dram_bytes_read", "dram_bytes_written"):
        out[key] = float(getattr(ms, key))
    for sm in sms:
        l1 = sm.l1
        out["tex_sector_hits"] = out.get("tex_sector_hits", 0.0) + l1.sector_hits
        out["tex_sector_misses"] = out.get("tex_sector_misses", 0.0) + l1.sector_misses
        out["tex_pending_hits"] = out.get("tex_pending_hits", 0.0) + l1.pending_hits
    if sms:
        out.update({k: float(v) for k, v in resident_warp_counters(sms).items()})
    out["cycles"] = float(cycles)
    return out

def _scale(mem, f):
    return {k: v * f for k, v in mem.items()}

def _add(a, b):
    return {k: a.get(k, 0.0) + b.get(k, 0.0) for k in set(a) | set(b)}

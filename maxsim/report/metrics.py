"""Profiler metrics under nvprof's names, computed in one place from the simulator's counters.

:func:`profiler_metrics` turns a flat dict of counters (any of the keys below; a metric whose
counters are absent is left out) and the kernel's elapsed time into the metrics a performance
engineer reads off ``nvprof --metrics ...`` on a Maxwell GPU, so that a simulated run and a
profiled one can be set side by side. Definitions follow the nvprof metrics reference of the CUDA
Profiler User's Guide (compute capability 5.x); the quoted phrases are its descriptions.

======================  ========  ==============================================================
metric                  unit      definition (nvprof) -> counters used here
======================  ========  ==============================================================
l2_tex_read_hit_rate    percent   "Hit rate at L2 cache for all read requests from texture cache":
                                  100 x L2 read hits / L2 read sectors. Every global load and
                                  texture fetch of a Maxwell SM goes through its unified L1/texture
                                  cache, so every L2 read comes from the texture path.
                                  ``l2_read_hits``, ``l2_read_misses``; a read of a sector still
                                  being filled by an earlier miss (``l2_pending_hits``) is not a
                                  hit unless ``l2.count_inflight_as_hit`` (see below)
tex_cache_hit_rate      percent   "Unified cache hit rate": 100 x sector hits / sectors looked up.
                                  ``tex_sector_hits``, ``tex_sector_misses``; a lookup of a sector
                                  still being filled (``tex_pending_hits``) is a hit only with
                                  ``l1tex.count_inflight_as_hit`` (the configs: see below)
dram_read_throughput    GB/s      "Device memory read throughput": bytes read from DRAM into the
                                  L2 / elapsed time. ``dram_bytes_read``
dram_write_throughput   GB/s      "Device memory write throughput": bytes the L2 wrote back to
                                  DRAM / elapsed time. ``dram_bytes_written``
l2_read_throughput      GB/s      "Memory read throughput seen at L2 cache for all read requests":
                                  L2 read sectors x ``l2.sector`` bytes / elapsed time.
                                  ``l2_read_hits``, ``l2_read_misses``
tex_cache_throughput    GB/s      "Unified cache throughput": sectors looked up in the L1/texture
                                  cache x ``l1tex.sector`` bytes / elapsed time.
                                  ``tex_sector_hits``, ``tex_sector_misses``
dram_utilization        0-10      "The utilization level of the device memory relative to the peak
                                  utilization on a scale of 0 to 10": nvprof prints a level
                                  0 (idle) to 10 (peak); here round(10 x dram_utilization_fraction).
dram_utilization_       0..1      the same, unrounded: DRAM bytes read and written / elapsed time /
fraction                          the peak bandwidth ``gpu.dram_bandwidth_gbs`` (the peak, not the
                                  achievable ``dram.efficiency`` share of it, as nvprof; a kernel
                                  that saturates the model's DRAM reads about ``dram.efficiency``)
achieved_occupancy      0..1      "Ratio of the average active warps per active cycle to the
                                  maximum number of warps supported on a multiprocessor":
                                  ``resident_warp_cycles`` / ``active_cycles`` / ``sm.max_warps``,
                                  both summed over the SMs (see :func:`sm_counters`)
======================  ========  ==============================================================

In-flight sectors: the timing model merges a lookup that finds its sector still being filled into
that fill (it waits for it; no second request), and its counters count it among the hits
(``*_pending_hits`` says how many of them). On a GTX 980 nvprof computes ``tex_cache_hit_rate``
as 1 - the texture path's L2 sector requests (reads and writes) / its sector lookups ([cupti-980]
in gm204.toml: a CUPTI output whose events give the printed metric to all its digits), so a lookup
that sends nothing to the L2 is a hit: the configs count merged lookups as hits
(``l1tex.count_inflight_as_hit = true``), as for the L2 (``l2.count_inflight_as_hit``, a choice;
[accel-sim]'s correlation of its simulator with nvprof counts neither, docs/memory-hierarchy.md).
The hardware's lookups include global loads and stores (their L2 requests count as misses); the
model's rate is that of texture fetches only. Counters without the pending count are taken as
having none.

GB/s are 10^9 bytes per second. The elapsed time is the kernel's own (cycles / core clock, no
launch overhead), as nvprof's kernel duration.
"""

from __future__ import annotations

import functools
import inspect

GB = 1e9

METRICS = ("l2_tex_read_hit_rate", "tex_cache_hit_rate", "dram_read_throughput", "dram_write_throughput",
           "l2_read_throughput", "tex_cache_throughput", "dram_utilization", "dram_utilization_fraction",
           "achieved_occupancy")


def _have(counters, *keys):
    return all(counters.get(k) is not None for k in keys)


def profiler_metrics(counters: dict, seconds, cfg) -> dict:
    """nvprof's metrics (see the module docstring) from ``counters`` over a kernel of ``seconds``;
    a metric is omitted when a counter it needs is absent (or ``seconds`` is not positive, for the
    throughputs)."""
    c = counters
    out = {}
    timed = seconds is not None and seconds > 0
    if _have(c, "l2_read_hits", "l2_read_misses"):
        sectors = c["l2_read_hits"] + c["l2_read_misses"]
        hits = c["l2_read_hits"] - (0 if cfg.l2.count_inflight_as_hit else c.get("l2_pending_hits", 0))
        out["l2_tex_read_hit_rate"] = 100.0 * hits / sectors if sectors else 0.0
        if timed:
            out["l2_read_throughput"] = sectors * cfg.l2.sector / seconds / GB
    if _have(c, "tex_sector_hits", "tex_sector_misses"):
        sectors = c["tex_sector_hits"] + c["tex_sector_misses"]
        hits = c["tex_sector_hits"] - (0 if cfg.l1tex.count_inflight_as_hit else c.get("tex_pending_hits", 0))
        out["tex_cache_hit_rate"] = 100.0 * hits / sectors if sectors else 0.0
        if timed:
            out["tex_cache_throughput"] = sectors * cfg.l1tex.sector / seconds / GB
    if timed and _have(c, "dram_bytes_read"):
        out["dram_read_throughput"] = c["dram_bytes_read"] / seconds / GB
    if timed and _have(c, "dram_bytes_written"):
        out["dram_write_throughput"] = c["dram_bytes_written"] / seconds / GB
    if timed and _have(c, "dram_bytes_read", "dram_bytes_written"):
        frac = (c["dram_bytes_read"] + c["dram_bytes_written"]) / seconds / (cfg.gpu.dram_bandwidth_gbs * GB)
        out["dram_utilization_fraction"] = frac
        out["dram_utilization"] = int(min(10, max(0, round(10 * frac))))
    if _have(c, "resident_warp_cycles", "active_cycles") and c["active_cycles"] > 0:
        out["achieved_occupancy"] = c["resident_warp_cycles"] / c["active_cycles"] / cfg.sm.max_warps
    return {k: out[k] for k in METRICS if k in out}


def resident_warp_counters(sms) -> dict:
    """``resident_warp_cycles`` and ``active_cycles`` of the SMs that ran (summed).

    From each SM's CTA log (``sm.cta_log``: (CTA id, start, end) cycles) when it keeps one: warps
    per CTA x (end - start) per CTA, and the cycles in which at least one CTA was resident.
    Otherwise from the stall accounting, which gives every cycle of a warp's life from its launch
    to its EXIT either an issue or a stall reason: a warp's cycles are its stall cycles plus its
    issue cycles (instructions issued minus the second of each dual issue), and the SM is taken as
    active from cycle 0 to its last cycle (its first CTAs start at 0)."""
    warp_cycles = 0
    active = 0
    for sm in sms:
        log = getattr(sm, "cta_log", None)
        if log:
            warp_cycles += sum(end - start for _, start, end in log) * sm.wpc
            active += _union_length((start, end) for _, start, end in log)
        else:
            st = sm.stats
            warp_cycles += sum(st.stall_reasons.values()) + st.warp_instructions - st.dual_issues
            active += st.cycles
    return {"resident_warp_cycles": warp_cycles, "active_cycles": active}


def _union_length(intervals) -> int:
    total = 0
    end = None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def sm_counters(sm) -> dict:
    """Every counter of one timed SM and the memory system behind it, as a flat dict: the memory
    system's and the L1/texture cache's ``stats()``, ``elapsed_cycles`` and the resident-warp
    counters."""
    elapsed = sm.stats.cycles
    ms = sm.memsys
    out = dict(_stats(ms, elapsed))
    # the counters the metrics read, from the memory system's attributes (its documented interface)
    out.update(l2_read_hits=ms.l2_read_hits, l2_read_misses=ms.l2_read_misses,
               dram_bytes_read=ms.dram_bytes_read, dram_bytes_written=ms.dram_bytes_written)
    out.update(_stats(sm.l1, elapsed))
    out["elapsed_cycles"] = elapsed
    out.update(resident_warp_counters([sm]))
    return out


def _stats(part, elapsed):
    """``part.stats(elapsed)`` where the part takes the elapsed cycles (for its utilisation
    figures), else ``part.stats()``."""
    if inspect.isfunction(getattr(type(part), "stats", None)):
        takes = _takes_elapsed(type(part))
    else:  # (a stats the instance finds otherwise, e.g. a wrapper's __getattr__: read each time)
        takes = bool(inspect.signature(part.stats).parameters)
    return part.stats(elapsed) if takes else part.stats()


@functools.lru_cache(maxsize=64)
def _takes_elapsed(kind) -> bool:
    """Whether the ``stats`` method the class ``kind`` defines takes parameters besides self (read
    once per class)."""
    return len(inspect.signature(kind.stats).parameters) > 1

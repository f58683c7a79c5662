"""What a memory system reports: the options and counters both memory system models share.

:class:`MemoryStats` is the part of the memory system's interface that reads its counters
(``l2_hit_rate``, ``stats()``); :class:`~maxsim.timing.memory_system.MemorySystem` (the plain-Python
statement of the model) and :class:`~maxsim.timing.memory_core.CompiledMemorySystem` (its compiled
twin) both inherit it, so the two report through one piece of code.
"""

from __future__ import annotations

import math

import numpy as np


def set_common(ms, cfg, bandwidth_share, dram_traffic_factor):
    """Check the options and set the attributes every memory system model has (this module's and
    the compiled one's)."""
    if not 0 < bandwidth_share <= 1:
        raise ValueError("bandwidth_share must be in (0, 1]")
    if not 0 < dram_traffic_factor <= 1:
        raise ValueError("dram_traffic_factor must be in (0, 1]")
    ms.dram_factor = dram_traffic_factor
    ms.clock_hz = cfg.clock_hz
    ms.sector = cfg.l2.sector
    ms.l2_latency = cfg.latency.l2_hit
    ms.dram_latency = cfg.latency.dram
    ms.fills_use_bandwidth = bool(cfg.l2.fills_use_bandwidth)


def percentile(values, q) -> float:
    """``float(np.percentile(values, q))`` (numpy's default, "linear" method) of a non-empty 1-D
    float64 array, bit for bit, without numpy's overhead per call (a short run's report asks for
    it once per memory system): the sorted values at the floor and ceiling of (n - 1) q / 100,
    interpolated as numpy's ``_lerp`` does (from the upper value when the fraction is >= 0.5)."""
    s = np.sort(values)
    n = s.shape[0]
    if math.isnan(s[-1]):  # (a NaN sorts last; numpy's percentile is then NaN)
        return math.nan
    at = (n - 1) * (q / 100)
    lo = math.floor(at)
    hi = min(lo + 1, n - 1)
    a, b = float(s[lo]), float(s[hi])
    t = at - lo
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


class MemoryStats:
    """``l2_hit_rate`` and ``stats()`` over the counters every memory system model keeps."""

    @property
    def l2_hit_rate(self) -> float:
        """Read hit rate of the L2 (sectors; pending hits count as hits)."""
        total = self.l2_read_hits + self.l2_read_misses
        return self.l2_read_hits / total if total else 0.0

    def stats(self, elapsed_cycles: float | None = None, l1=(), counts_only=False) -> dict:
        """Counters and utilisations as one flat dict (keys below; cycles are core cycles).

        ``elapsed_cycles``: the time the utilisations are taken over (default: the latest request
        cycle seen). ``l1``: the SMs' :class:`~maxsim.timing.texture.TextureCache` objects whose
        counters to add (``tex_*`` keys, summed; ``tex_utilisation`` is their mean).
        ``counts_only``: only the counts that add up over pieces of a run (none of the keys ending
        in ``rate``, ``utilisation``, ``delay`` or ``p95``): no sort of the DRAM queue delays for
        their 95th percentile (a report taken every window of a run would sort them every time).

        * ``mem_reads``, ``mem_writes``: read and write requests.
        * ``l2_read_sectors`` = ``l2_read_hits`` + ``l2_read_misses``; ``l2_pending_hits`` (of the
          hits, those merged into a fill under way); ``l2_hit_rate`` = ``l2_read_hit_rate``.
        * ``l2_write_sectors`` = ``l2_write_hits`` (sector valid) + ``l2_write_misses`` (allocated
          without fetch); ``l2_write_hit_rate``; ``l2_evictions`` (lines).
        * ``l2_bytes_read``, ``l2_bytes_written``: bytes the slices passed for reads and stores.
        * ``l2_busy_cycles``: mean over the slices of the cycles each was passing data;
          ``l2_utilisation`` = that / elapsed, ``l2_max_slice_utilisation`` the busiest slice's;
          ``l2_slice<i>_busy_cycles``, ``l2_slice<i>_utilisation`` per slice;
          ``l2_slice_requests`` (a request's sectors in one slice are one piece of work),
          ``l2_queue_delay_cycles`` (their total wait for the slice), ``l2_mean_queue_delay``.
        * ``dram_bytes_read`` (missed sectors x 32), ``dram_bytes_written`` (write-backs);
          ``dram_read_requests`` (a slice's misses of one request are one piece in its channel);
          ``dram_busy_cycles`` (mean over channels), ``dram_utilisation``,
          ``dram_max_channel_utilisation``, ``dram_channel<i>_busy_cycles``,
          ``dram_channel<i>_utilisation``; ``dram_queue_delay_cycles`` (total),
          ``dram_mean_queue_delay``, ``dram_p95_queue_delay``: cycles a read piece waited in its
          channel for the bytes queued before it.
        * ``tlb_lookups`` (a read's distinct pages), ``tlb_first_touches`` (of those, an SM's first
          translation of a page: free), ``tlb_l1_misses`` (the others that missed the SM's L1 TLB),
          ``tlb_l2_misses`` (of those, misses in the L2 TLB: page walks); :mod:`maxsim.timing.tlb`.
        * ``elapsed_cycles``; with ``l1``: ``tex_requests``, ``tex_sector_hits``,
          ``tex_sector_misses``, ``tex_pending_hits``, ``tex_hit_rate``, ``tex_bytes``,
          ``tex_busy_cycles``, ``tex_utilisation``.

        Keys ending in ``rate``, ``utilisation`` or ``delay`` are ratios, means or percentiles;
        every other key is a count that adds up over pieces of a run (the sampled prediction sums
        and scales those, :mod:`maxsim.gpu.sampling`).
        """
        el = float(elapsed_cycles if elapsed_cycles is not None else self.last_request)
        util = (lambda busy: busy / el) if el > 0 else (lambda busy: 0.0)
        sec = self.sector
        reads = self.l2_read_hits + self.l2_read_misses
        d = {
            "mem_reads": self.reads, "mem_writes": self.writes, "elapsed_cycles": el,
            "l2_read_sectors": reads, "l2_read_hits": self.l2_read_hits,
            "l2_read_misses": self.l2_read_misses, "l2_pending_hits": self.l2_pending_hits,
            "l2_hit_rate": self.l2_hit_rate, "l2_read_hit_rate": self.l2_hit_rate,
            "l2_write_sectors": self.l2_write_sectors, "l2_write_hits": self.l2_write_hits,
            "l2_write_misses": self.l2_write_misses,
            "l2_write_hit_rate": self.l2_write_hits / self.l2_write_sectors if self.l2_write_sectors else 0.0,
            "l2_evictions": self.l2.evictions,
            "l2_bytes_read": reads * sec, "l2_bytes_written": self.l2_write_sectors * sec,
            "l2_busy_cycles": self.l2_server.busy, "l2_utilisation": util(self.l2_server.busy),
            "l2_max_slice_utilisation": util(max(s.busy for s in self.slices)),
            "l2_slice_requests": self._l2_pieces, "l2_queue_delay_cycles": self._l2_delay_sum,
            "l2_mean_queue_delay": self._l2_delay_sum / self._l2_pieces if self._l2_pieces else 0.0,
            "dram_bytes_read": self.dram_bytes_read, "dram_bytes_written": self.dram_bytes_written,
            "dram_read_requests": len(self._dram_delays),
            "dram_busy_cycles": self.dram_server.busy, "dram_utilisation": util(self.dram_server.busy),
            "dram_max_channel_utilisation": util(max(c.busy for c in self.channels)),
        }
        delays = np.frombuffer(self._dram_delays, dtype=np.float64) if len(self._dram_delays) else None
        d["dram_queue_delay_cycles"] = float(delays.sum()) if delays is not None else 0.0
        d["dram_mean_queue_delay"] = float(delays.mean()) if delays is not None else 0.0
        if not counts_only:
            d["dram_p95_queue_delay"] = percentile(delays, 95) if delays is not None else 0.0
        for i, s in enumerate(self.slices):
            d[f"l2_slice{i}_busy_cycles"] = s.busy
            d[f"l2_slice{i}_utilisation"] = util(s.busy)
        for i, c in enumerate(self.channels):
            d[f"dram_channel{i}_busy_cycles"] = c.busy
            d[f"dram_channel{i}_utilisation"] = util(c.busy)
        d.update(self.tlb.stats())
        l1 = list(l1)
        if l1:
            tex = [t.stats(el) for t in l1]
            for k in ("tex_requests", "tex_sector_hits", "tex_sector_misses", "tex_pending_hits",
                      "tex_bytes", "tex_busy_cycles"):
                d[k] = sum(t[k] for t in tex)
            looked = d["tex_sector_hits"] + d["tex_sector_misses"]
            d["tex_hit_rate"] = d["tex_sector_hits"] / looked if looked else 0.0
            d["tex_utilisation"] = sum(t["tex_utilisation"] for t in tex) / len(tex)
        if counts_only:
            return {k: v for k, v in d.items() if not k.endswith(("rate", "utilisation", "utilization", "delay", "p95"))}
        return d

"""The memory system behind the SMs: a sliced L2 and DRAM channels, in time.

Plain Python, no simpy: an SM asks :meth:`MemorySystem.read` for a list of 32-byte sectors at cycle
``now`` and gets back the cycle the last one arrives; it schedules one wake-up for that. All SMs of
a simulated GPU share one MemorySystem, so whether a sector hits depends on its address and on
what every SM did before it.

Model (every number from the config; sources in gm204.toml):

* Addresses are byte addresses; callers pass the byte address of each distinct 32-byte sector
  (``sectors_of`` builds that list from lane addresses), as a list of ints or an int64 array.
* L2 (:mod:`maxsim.timing.l2`): ``l2.slices`` slices, each ``l2.assoc``-way sets of 128-byte lines
  of 32-byte sectors, LRU, the slice chosen by a hash of the address.  A read of a valid sector
  hits; a read of an invalid one misses and fetches that sector alone from DRAM (a missing line is
  allocated, evicting the set's LRU line).  A sector whose fill is still under way (an earlier
  miss, maybe from another SM) counts as a hit that completes when the fill does.
* Stores: write-back, write-allocate without fetch.  A store validates and dirties its sectors
  (whole 32-byte sectors: the L2 keeps per-sector dirty bits and the SM sends whole sectors), a
  dirty sector goes to DRAM when its line is evicted or at :meth:`flush`.
* Bandwidth: each slice is a :class:`BandwidthServer` of ``l2.bandwidth_bytes_per_clk / slices``
  bytes per cycle, each DRAM channel one of ``gpu.dram_bandwidth_gbs x dram.efficiency /
  dram.channels`` (at the core clock); slice ``s`` sends its misses and write-backs to channel
  ``s x channels // slices``.  The sectors of a request that fall in one slice are one piece of work
  for that slice, its misses one piece for the slice's channel: a piece waits for the bytes queued
  before it in its server, so two requests to the same slice queue and requests to different
  slices do not, and DRAM latency grows with the load of the channel.
* Latencies are end to end from the SM's issue (``latency.l2_hit``, ``latency.dram``): a sector that
  hits completes at ``slice_start + l2_hit``; a miss at ``channel_start + dram``, the channel
  request made when the slice takes the piece.  A read's missed sectors are queued in the channel
  before the write-backs its evictions cause (a write-back is posted: nothing waits for it).
* ``l2.fills_use_bandwidth`` (off in the shipped configs): a missed piece's sectors also pass
  their slice when they are written into it, ``latency.l2_hit`` before they reach the SM (posted).
* ``bandwidth_share``: when fewer SMs than the chip has are simulated against one memory system
  (e.g. one SM standing for all 16 of a fully loaded GPU), pass ``sms_simulated / gpu.sms`` so the
  simulated SMs see their share of every slice's and channel's bandwidth.

``l2_server`` and ``dram_server`` (:class:`ServerGroup`) show the slices and the channels as one
server each: ``bytes_per_clk`` is the sum, ``next_free`` the latest member's, and
``reserve(now, nbytes)`` spreads the bytes over the members in proportion to their bandwidth, so
queueing a backlog of ``c`` cycles as ``reserve(t, c x bytes_per_clk)`` occupies every member for
``c`` cycles from ``t``.
"""

from __future__ import annotations

import math
from array import array

import numpy as np

from .bandwidth import BandwidthServer, ServerGroup
from .cores import core_name
from .l2 import SlicedL2
from .memory_stats import MemoryStats, set_common
from .tlb import AddressTranslation

# BandwidthServer, ServerGroup and set_common are part of this module's interface (the memory
# system's servers); they live in modules of their own so that the compiled twin,
# maxsim.timing.memory_core, needs nothing from this one: the dependency runs one way, from this
# module (whose MemorySystem(cfg) builds the compiled twin) to memory_core
__all__ = ["BandwidthServer", "ServerGroup", "set_common", "sectors_of", "MemorySystem", "L2_STARTS",
           "carried_over"]

_MASKS = 1 << 8  # sector masks of lines of up to 8 sectors
_POPCOUNT = [bin(m).count("1") for m in range(_MASKS)]
_BITS = [tuple(i for i in range(8) if m >> i & 1) for m in range(_MASKS)]


def sectors_of(byte_addresses, width_bytes: int = 4, sector: int = 32) -> list[int]:
    """Sorted byte addresses of the distinct ``sector``-byte sectors that lanes touch.

    ``byte_addresses``: start address of each active lane's access of ``width_bytes`` bytes.
    """
    a = np.asarray(byte_addresses, dtype=np.int64)
    if a.size == 0:
        return []
    first = a // sector
    last = (a + (width_bytes - 1)) // sector
    if np.array_equal(first, last):
        ids = np.unique(first)
    else:
        ids = np.unique(np.concatenate([np.arange(f, l + 1) for f, l in zip(first.tolist(), last.tolist())]))
    return (ids * sector).tolist()


class MemorySystem(MemoryStats):
    """Sliced L2 + DRAM channels shared by the SMs of one simulated GPU (see the module docstring).

    This class states the model in plain Python. ``MemorySystem(cfg, ...)`` builds the compiled
    twin, :class:`~maxsim.timing.memory_core.CompiledMemorySystem` (same numbers, same interface),
    unless ``core="python"`` or ``MAXSIM_CORE=python`` (:func:`~maxsim.timing.cores.core_name`)
    asks for this one.
    """

    core = "python"

    def __new__(cls, cfg=None, *args, core=None, **kw):
        # (copy and pickle call __new__ with the class alone: they get the class itself)
        if cls is MemorySystem and cfg is not None and core_name(core, "memory system core") == "compiled":
            from .memory_core import CompiledMemorySystem
            return CompiledMemorySystem(cfg, *args, **kw)
        return super().__new__(cls)

    def __init__(self, cfg, bandwidth_share: float = 1.0, l2_size_bytes: int | None = None,
                 dram_traffic_factor: float = 1.0, core: str | None = None):
        """``bandwidth_share``, ``l2_size_bytes`` and ``dram_traffic_factor`` let one simulated SM
        stand for a GPU full of them: its share of the L2 and DRAM bandwidth and of the L2 (spread
        over the slices), and the fraction of its L2 misses that really reach DRAM (the rest are
        data that other SMs of the same wave fetch, so the L2 serves them)."""
        set_common(self, cfg, bandwidth_share, dram_traffic_factor)
        self.l2 = SlicedL2.from_config(cfg, l2_size_bytes)
        n, ch = cfg.l2.slices, cfg.dram.channels
        self.slices = [BandwidthServer(cfg.l2.bandwidth_bytes_per_clk * bandwidth_share / n) for _ in range(n)]
        self.channels = [BandwidthServer(cfg.dram_bytes_per_clk * bandwidth_share / ch) for _ in range(ch)]
        self.channel_of_slice = [s * ch // n for s in range(n)]
        self.l2_server = ServerGroup(self.slices)
        self.dram_server = ServerGroup(self.channels)
        self._sector_shift = self.sector.bit_length() - 1
        self.tlb = AddressTranslation(cfg)  # the SMs' L1 TLBs and the L2 TLB (maxsim.timing.tlb)
        self.reset_stats()

    def reset_stats(self) -> None:
        """Zero every counter (the cache contents and the queued work stay)."""
        self.reads = 0
        self.writes = 0
        self.l2_read_hits = 0
        self.l2_pending_hits = 0  # hits on sectors still being filled (merged into the fill)
        self.l2_read_misses = 0
        self.l2_write_sectors = 0
        self.l2_write_hits = 0  # stores to a valid sector
        self.l2_write_misses = 0  # stores that allocated their sector (no fetch)
        self.dram_bytes_read = 0
        self.dram_bytes_written = 0
        self.l2.evictions = 0
        self.last_request = 0.0  # the latest request cycle seen
        self._l2_delay_sum = 0.0  # cycles request pieces waited for their slice
        self._l2_pieces = 0
        self._dram_delays = array("d")  # cycles each DRAM read piece waited for its channel
        for s in self.slices + self.channels:
            s.reset_counters()
        self.tlb.reset_stats()

    # ---- requests ------------------------------------------------------------------------------
    def _by_slice(self, sectors) -> dict:
        """{slice: [sectors, [(line number, sector mask, set), ...]]} of a request, lines in the
        order of their first sector."""
        l2 = self.l2
        ls = l2._line_shift
        ss = self._sector_shift
        smask = l2.sectors_per_line - 1
        lines = {}
        get = lines.get
        for a in sectors:
            ln = a >> ls
            lines[ln] = get(ln, 0) | (1 << ((a >> ss) & smask))
        memo = l2._memo
        out = {}
        for ln, m in lines.items():
            loc = memo.get(ln)
            if loc is None:
                loc = l2.locate(ln)
            g = out.get(loc[0])
            if g is None:
                out[loc[0]] = g = [0, []]
            g[0] += _POPCOUNT[m]
            g[1].append((ln, m, loc[1]))
        return out

    def _allocate(self, st, ln, s, start):
        """A new line ``ln`` in set ``st`` of slice ``s``, evicting the LRU line of a full set
        (its dirty sectors are queued in the slice's channel at ``start``)."""
        l2 = self.l2
        if len(st) >= l2.assoc:
            victim = st.popitem(last=False)[1]
            l2.evictions += 1
            if victim[-1]:
                self._write_back(s, start, _POPCOUNT[victim[-1]])
        e = st[ln] = [None] * l2.sectors_per_line + [0]
        return e

    def read(self, now: int, sectors, sm: int = 0) -> int:
        """Read the given sectors (byte addresses, distinct) for SM ``sm``; returns the cycle the
        last arrives. The request goes to the L2 once its addresses are translated
        (:mod:`maxsim.timing.tlb`: the SM's L1 TLB, the L2 TLB, a page walk)."""
        if isinstance(sectors, np.ndarray):
            sectors = sectors.tolist()
        if len(sectors) == 0:
            return now
        self.tlb.check_sm(sm)
        now = self.tlb.translate(sm, now, sectors)
        self.reads += 1
        if now > self.last_request:
            self.last_request = now
        sec = self.sector
        lat2 = self.l2_latency
        done = float(now)
        hits = pending = misses = 0
        slices = self.slices
        assoc = self.l2.assoc
        spl = self.l2.sectors_per_line
        for s, (count, lines) in self._by_slice(sectors).items():
            start = slices[s].reserve(now, count * sec)
            self._l2_delay_sum += start - now
            self._l2_pieces += 1
            hit_t = start + lat2
            fills = []
            evicted = []
            for ln, m, st in lines:
                e = st.get(ln)
                if e is None:
                    if len(st) >= assoc:
                        evicted.append(st.popitem(last=False)[1][-1])
                    e = st[ln] = [None] * spl + [0]  # every sector invalid: all of them miss below
                else:
                    st.move_to_end(ln)
                for i in _BITS[m]:
                    r = e[i]
                    if r is None:
                        fills.append((e, i))
                        continue
                    hits += 1
                    if r > hit_t:
                        pending += 1
                        if r > done:
                            done = r
                    elif hit_t > done:
                        done = hit_t
            if fills:
                n_miss = len(fills)
                misses += n_miss
                ch = self.channels[self.channel_of_slice[s]]
                dstart = ch.reserve(start, n_miss * sec * self.dram_factor)
                self._dram_delays.append(dstart - start)
                ready = dstart + self.dram_latency
                if self.fills_use_bandwidth:
                    self._fill(s, ready, n_miss)
                for e, i in fills:
                    e[i] = ready
                if ready > done:
                    done = ready
            if evicted:
                self.l2.evictions += len(evicted)
                wb = sum(_POPCOUNT[d] for d in evicted)
                if wb:
                    self._write_back(s, start, wb)
        self.l2_read_hits += hits
        self.l2_pending_hits += pending
        self.l2_read_misses += misses
        self.dram_bytes_read += misses * sec
        return math.ceil(done)

    def write(self, now: int, sectors) -> int:
        """Posted store of whole sectors into the L2 (STG); returns the cycle the L2 holds them.

        The SM need not wait for it. Dirty sectors reach DRAM when evicted or at :meth:`flush`.
        """
        if isinstance(sectors, np.ndarray):
            sectors = sectors.tolist()
        n = len(sectors)
        if n == 0:
            return now
        self.writes += 1
        if now > self.last_request:
            self.last_request = now
        sec = self.sector
        done = float(now)
        hits = 0
        for s, (count, lines) in self._by_slice(sectors).items():
            start = self.slices[s].reserve(now, count * sec)
            self._l2_delay_sum += start - now
            self._l2_pieces += 1
            t = start + self.l2_latency
            for ln, m, st in lines:
                e = st.get(ln)
                if e is None:
                    e = self._allocate(st, ln, s, start)
                else:
                    st.move_to_end(ln)
                for i in _BITS[m]:
                    if e[i] is None:
                        e[i] = t
                    else:
                        hits += 1
                e[-1] |= m
            if t > done:
                done = t
        self.l2_write_sectors += n
        self.l2_write_hits += hits
        self.l2_write_misses += n - hits
        return math.ceil(done)

    def warm(self, sectors, dirty: bool = False) -> None:
        """Make the given sectors (byte addresses) valid in the L2, most recent last, without time
        or statistics: the state the L2 is in after serving those reads (or, ``dirty``, stores).
        A sector already valid keeps its arrival cycle; a line that does not fit evicts its set's
        LRU line, whose dirty data is dropped (nothing is timed). Their pages enter the L2 TLB
        the same way (:meth:`~maxsim.timing.tlb.AddressTranslation.warm`)."""
        if isinstance(sectors, np.ndarray):
            sectors = sectors.tolist()
        self.tlb.warm(sectors)
        l2 = self.l2
        ls, ss = l2._line_shift, self._sector_shift
        smask = l2.sectors_per_line - 1
        assoc, spl = l2.assoc, l2.sectors_per_line
        memo = l2._memo
        for a in sectors:
            ln = a >> ls
            loc = memo.get(ln)
            st = (loc if loc is not None else l2.locate(ln))[1]
            e = st.get(ln)
            if e is None:
                if len(st) >= assoc:
                    st.popitem(last=False)
                e = st[ln] = [None] * spl + [0]
            else:
                st.move_to_end(ln)
            i = (a >> ss) & smask
            if e[i] is None:
                e[i] = 0.0
            if dirty:
                e[-1] |= 1 << i

    def warm_tlb(self, addresses) -> None:
        """Put the pages of ``addresses`` (byte addresses, most recent last) into the TLBs as
        :meth:`warm` does with the pages of its sectors, and nothing into the L2."""
        self.tlb.warm([int(a) for a in addresses])

    def flush(self, now: int) -> int:
        """Write every dirty L2 sector back to DRAM; returns the cycle the last write ends."""
        end = float(now)
        for s in range(len(self.slices)):
            n = self.l2.clean_slice(s)
            if n:
                ch = self._write_back(s, now, n)
                if ch.last_end > end:
                    end = ch.last_end
        return math.ceil(end)

    def _fill(self, slice_no: int, ready: float, n_sectors: int):
        """``l2.fills_use_bandwidth``: the ``n_sectors`` sectors a DRAM read piece brings pass slice
        ``slice_no`` as they are written into it, ``latency.l2_hit`` before they reach the SM (at
        ``ready``); nothing waits for it, later requests to the slice queue behind it."""
        self.slices[slice_no].reserve(ready - self.l2_latency, n_sectors * self.sector)

    def _write_back(self, slice_no: int, now: float, n_sectors: int):
        """Queue ``n_sectors`` dirty sectors of a slice in its DRAM channel; returns the channel."""
        nbytes = n_sectors * self.sector
        self.dram_bytes_written += nbytes
        ch = self.channels[self.channel_of_slice[slice_no]]
        ch.reserve(now, nbytes)
        return ch

L2_STARTS = ("empty", "previous")  # what the L2 holds when a launch starts: nothing, or what the same launch left


def carried_over(ms, cfg):
    """A new memory system of ``cfg`` whose L2 holds what ``ms``'s holds at the end of its launch:
    the same lines in each set in the same least-recently-used order, the same valid sectors and
    dirty bits, every fill arrived, nothing queued, the counters zero. It is the L2 the next of
    two back-to-back launches finds (the caches of the L2 are not flushed between kernels; the
    SMs' L1/texture caches start empty at every launch), and the TLBs what ``ms``'s hold, every
    translation done."""
    new = MemorySystem(cfg, core=ms.core)
    line, sector = cfg.l2.line, cfg.l2.sector
    for sl in ms.l2.sets:
        for st in sl:
            for ln, entry in st.items():  # least recently used first
                ready, dirty = entry[:-1], entry[-1]
                base = ln * line
                clean = [base + i * sector for i, r in enumerate(ready) if r is not None and not dirty >> i & 1]
                stored = [base + i * sector for i, r in enumerate(ready) if r is not None and dirty >> i & 1]
                if clean:
                    new.warm(clean)
                if stored:
                    new.warm(stored, dirty=True)
    new.tlb.carry_over(ms.tlb, new)  # the TLBs are not flushed between kernels either
    return new

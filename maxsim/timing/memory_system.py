"""The memory system behind the SMs: L2 cache and DRAM, as bandwidth servers with latencies.

Plain Python, no simpy: an SM asks :meth:`MemorySystem.read` for a list of 32-byte sectors at cycle
``now`` and gets back the cycle the last one arrives; it schedules one wake-up for that.

Model (every number from the config):

* Addresses are byte addresses; a sector is ``addr // l2.sector`` (32 bytes).  Callers pass the
  byte address of each distinct sector (``sectors_of`` builds that list from lane addresses).
* L2: ``l2.size`` bytes of 32-byte sectors, ``l2.assoc``-way set associative, LRU, sets indexed by
  a hash of the sector number when ``l2.hash_sets``.  Write-back, write-allocate without fetch
  (a store fills its sectors; NVIDIA's L2 keeps byte masks, so no read is needed).
* Bandwidth servers ("next free cycle"): a request of ``n`` bytes starts at
  ``max(now, next_free)`` and occupies the server ``n / bytes_per_clk`` cycles.  The L2 server
  passes every sector of every request (``l2.bandwidth_bytes_per_clk``); the DRAM server passes
  missed sectors and write-backs (``gpu.dram_bandwidth_gbs`` x ``dram.efficiency`` at the core
  clock).  When demand exceeds bandwidth, ``next_free`` runs ahead of ``now`` and the queueing
  delay appears in the completion cycles.
* Latencies are end to end from the SM's issue (``latency.l2_hit``, ``latency.dram``): a sector
  that hits completes at ``l2_start + l2_hit``; a miss at ``dram_start + dram`` where the DRAM
  request starts once the L2 server has taken it.  A sector whose fill is still under way (an
  earlier miss, maybe from another SM) counts as a hit that completes when the fill does.
* ``bandwidth_share``: when fewer SMs than the chip has are simulated against one memory system
  (e.g. one SM standing for all 16 of a fully loaded GPU), pass ``sms_simulated / gpu.sms`` so the
  simulated SMs see their share of L2 and DRAM bandwidth.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

_HASH_MUL = 0x9E3779B1  # Knuth's multiplicative hash constant (2^32 / golden ratio)


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


class BandwidthServer:
    """A resource that passes ``bytes_per_clk`` bytes per cycle.

    The server keeps a first-free cycle per window of ``WINDOW`` cycles, so requests need not
    arrive in time order: the SMs of a GPU advance in quanta of a few hundred cycles, and a request
    stamped earlier than one already served is delayed by at most a window, not pushed behind
    everything served since (as a single "next free cycle" would). Requests arriving in order
    behave as a FIFO fluid queue: each starts when the bytes before it have passed.
    """

    WINDOW = 32
    __slots__ = ("bytes_per_clk", "next_free", "busy", "bytes", "_nf")

    def __init__(self, bytes_per_clk: float):
        if bytes_per_clk <= 0:
            raise ValueError("bytes_per_clk must be positive")
        self.bytes_per_clk = float(bytes_per_clk)
        self.next_free = 0.0
        self.busy = 0.0
        self.bytes = 0
        self._nf = {}  # window index -> first free cycle inside that window

    def reserve(self, now: float, nbytes: int) -> float:
        """Start cycle of a request of ``nbytes`` arriving at ``now``; occupies the server."""
        nf, w, bpc = self._nf, self.WINDOW, self.bytes_per_clk
        b = int(now // w)
        t = float(now)
        left = float(nbytes)
        start = None
        while left > 0:
            end_b = (b + 1) * w
            s0 = nf.get(b, b * w)
            if t > s0:
                s0 = t
            if s0 < end_b:
                if start is None:
                    start = s0
                take = (end_b - s0) * bpc
                if take > left:
                    take = left
                nf[b] = s0 + take / bpc
                left -= take
            b += 1
            t = end_b
        end = nf[b - 1]
        if end > self.next_free:
            self.next_free = end
        if len(nf) > 8192:
            for k in [k for k in nf if k < b - 4096]:
                del nf[k]
        self.busy += nbytes / bpc
        self.bytes += nbytes
        return start if start is not None else float(now)


class SectorCache:
    """Set-associative LRU cache of fixed-size blocks, each with a ready cycle and a dirty bit.

    Keys are block numbers (byte address // block).  Used for the L2 (32-byte sectors).
    """

    __slots__ = ("block", "assoc", "n_sets", "hashed", "_sets")

    def __init__(self, size: int, block: int, assoc: int, hashed: bool = False):
        self.block = block
        self.assoc = assoc
        self.n_sets = max(1, size // (block * assoc))
        self.hashed = hashed
        self._sets = [None] * self.n_sets

    def set_index(self, blk: int) -> int:
        if self.hashed:
            # multiplicative hash; the high bits of the 32-bit product are the well-mixed ones,
            # mapped onto n_sets (any count, not only powers of two) by a multiply-shift
            return (((blk * _HASH_MUL) & 0xFFFFFFFF) * self.n_sets) >> 32
        return blk % self.n_sets

    def _set(self, blk: int) -> OrderedDict:
        i = self.set_index(blk)
        s = self._sets[i]
        if s is None:
            s = self._sets[i] = OrderedDict()
        return s

    def lookup(self, blk: int):
        """[ready, dirty] entry of a present block (now most recently used), else None."""
        s = self._set(blk)
        e = s.get(blk)
        if e is not None:
            s.move_to_end(blk)
        return e

    def insert(self, blk: int, ready: float, dirty: bool = False):
        """Allocate ``blk`` (must be absent); returns the evicted (block, entry) or None."""
        s = self._set(blk)
        victim = None
        if len(s) >= self.assoc:
            victim = s.popitem(last=False)
        s[blk] = [ready, dirty]
        return victim

    def contains(self, blk: int) -> bool:
        s = self._sets[self.set_index(blk)]
        return s is not None and blk in s

    def dirty_blocks(self) -> list[int]:
        return [b for s in self._sets if s for b, e in s.items() if e[1]]

    def clean_all(self) -> int:
        """Clear every dirty bit (LRU order unchanged); returns how many were set."""
        n = 0
        for s in self._sets:
            if s:
                for e in s.values():
                    if e[1]:
                        e[1] = False
                        n += 1
        return n

    def __len__(self) -> int:
        return sum(len(s) for s in self._sets if s)


class MemorySystem:
    """L2 + DRAM shared by the SMs of one simulated GPU."""

    def __init__(self, cfg, bandwidth_share: float = 1.0, l2_size_bytes: int | None = None,
                 dram_traffic_factor: float = 1.0):
        """``bandwidth_share``, ``l2_size_bytes`` and ``dram_traffic_factor`` let one simulated SM
        stand for a GPU full of them: its share of the L2 and DRAM bandwidth and of the L2, and the
        fraction of its L2 misses that really reach DRAM (the rest are data that other SMs of the
        same wave fetch, so the L2 serves them)."""
        if not 0 < bandwidth_share <= 1:
            raise ValueError("bandwidth_share must be in (0, 1]")
        if not 0 < dram_traffic_factor <= 1:
            raise ValueError("dram_traffic_factor must be in (0, 1]")
        self.dram_factor = dram_traffic_factor
        self.sector = cfg.l2.sector
        self.l2_latency = cfg.latency.l2_hit
        self.dram_latency = cfg.latency.dram
        self.l2 = SectorCache(l2_size_bytes or cfg.l2.size, cfg.l2.sector, cfg.l2.assoc, cfg.l2.hash_sets)
        self.l2_server = BandwidthServer(cfg.l2.bandwidth_bytes_per_clk * bandwidth_share)
        self.dram_server = BandwidthServer(cfg.dram_bytes_per_clk * bandwidth_share)
        self.reset_stats()

    def reset_stats(self) -> None:
        self.reads = 0
        self.writes = 0
        self.l2_read_hits = 0
        self.l2_pending_hits = 0  # hits on sectors still being filled (merged into the fill)
        self.l2_read_misses = 0
        self.l2_write_sectors = 0
        self.dram_bytes_read = 0
        self.dram_bytes_written = 0

    # ---- requests ------------------------------------------------------------------------------
    def read(self, now: int, sectors) -> int:
        """Read the given sectors (byte addresses, distinct); returns the cycle the last arrives."""
        n = len(sectors)
        if n == 0:
            return now
        self.reads += 1
        sec = self.sector
        start = self.l2_server.reserve(now, n * sec)
        done = start + self.l2_latency
        l2 = self.l2
        misses = None
        for addr in sectors:
            blk = addr // sec
            e = l2.lookup(blk)
            if e is None:
                if misses is None:
                    misses = []
                misses.append(blk)
            else:
                self.l2_read_hits += 1
                if e[0] > start + self.l2_latency:
                    self.l2_pending_hits += 1
                    if e[0] > done:
                        done = e[0]
        if misses:
            m = len(misses)
            self.l2_read_misses += m
            self.dram_bytes_read += m * sec
            ready = self.dram_server.reserve(start, m * sec * self.dram_factor) + self.dram_latency
            writebacks = 0
            for blk in misses:
                victim = l2.insert(blk, ready)
                if victim is not None and victim[1][1]:
                    writebacks += 1
            if writebacks:
                self._write_back(start, writebacks)
            if ready > done:
                done = ready
        return math.ceil(done)

    def write(self, now: int, sectors) -> int:
        """Posted store of whole sectors into the L2 (STG); returns the cycle the L2 holds them.

        The SM need not wait for it. Dirty sectors reach DRAM when evicted or at :meth:`flush`.
        """
        n = len(sectors)
        if n == 0:
            return now
        self.writes += 1
        sec = self.sector
        start = self.l2_server.reserve(now, n * sec)
        done = start + self.l2_latency
        l2 = self.l2
        writebacks = 0
        for addr in sectors:
            blk = addr // sec
            e = l2.lookup(blk)
            if e is None:
                victim = l2.insert(blk, done, True)
                if victim is not None and victim[1][1]:
                    writebacks += 1
            else:
                e[1] = True
        self.l2_write_sectors += n
        if writebacks:
            self._write_back(start, writebacks)
        return math.ceil(done)

    def warm(self, sectors, dirty: bool = False) -> None:
        """Make the given sectors (byte addresses) present in the L2, most recent last, without time
        or statistics: the state an L2 is in after serving those reads (or, ``dirty``, stores)."""
        l2, sec = self.l2, self.sector
        for addr in np.asarray(sectors, dtype=np.int64).tolist():
            blk = addr // sec
            e = l2.lookup(blk)
            if e is None:
                l2.insert(blk, 0.0, dirty)
            elif dirty:
                e[1] = True

    def flush(self, now: int) -> int:
        """Write every dirty L2 sector back to DRAM; returns the cycle the last write ends."""
        n = self.l2.clean_all()
        if not n:
            return now
        start = self._write_back(now, n)
        return math.ceil(max(start, self.dram_server.next_free))

    def _write_back(self, now: float, n_sectors: int) -> float:
        nbytes = n_sectors * self.sector
        self.dram_bytes_written += nbytes
        return self.dram_server.reserve(now, nbytes)

    # ---- statistics ----------------------------------------------------------------------------
    @property
    def l2_hit_rate(self) -> float:
        total = self.l2_read_hits + self.l2_read_misses
        return self.l2_read_hits / total if total else 0.0

    def stats(self) -> dict:
        return {
            "mem_reads": self.reads, "mem_writes": self.writes,
            "l2_read_hits": self.l2_read_hits, "l2_pending_hits": self.l2_pending_hits,
            "l2_read_misses": self.l2_read_misses, "l2_hit_rate": self.l2_hit_rate,
            "l2_write_sectors": self.l2_write_sectors,
            "l2_busy_cycles": self.l2_server.busy, "dram_busy_cycles": self.dram_server.busy,
            "dram_bytes_read": self.dram_bytes_read, "dram_bytes_written": self.dram_bytes_written,
        }

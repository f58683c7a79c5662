"""The unified L1/texture cache of one SM: sector cache with a throughput limit.

Plain Python, no simpy.  The SM core, for a texture fetch (or a cached global load), hands over
the distinct sectors the warp touches (``memory_system.sectors_of``) and gets back the cycle the
data is in the registers' reach; it schedules one wake-up for that.

Model (numbers from ``cfg.l1tex`` and ``cfg.latency``):

* ``l1tex.size`` bytes of ``l1tex.line``-byte lines (128), each of ``line / sector`` sectors
  (4 x 32 bytes) [jia18]; ``l1tex.assoc``-way set associative over lines, LRU; set = line number
  mod sets.  A miss allocates the line (evicting the LRU line of its set) and fetches only the
  missed sectors (load granularity 32 bytes).
* Each sector remembers the cycle its data arrives.  A sector that is present but still being
  filled counts as a hit that completes when the fill arrives (the miss is merged).
* Throughput: every request passes one "next free cycle" server of ``l1tex.bytes_per_clk`` =
  ``l1tex.units`` x ``l1tex.throughput_bytes_per_clk`` bytes per cycle (two texture units per SM
  [gm107-wp] of 15.7 B/clk [jia18]; the two are pooled, see gm204.toml); a request of ``n``
  sectors occupies it ``n x sector / bytes_per_clk`` cycles.  Hits complete ``latency.tex_l1_hit`` cycles after the
  request starts; misses when the memory system delivers them.
* ``l1tex.sharing`` other than "pooled" splits the cache into one per texture unit (``size /
  units`` bytes each, the sets of unit ``u`` after those of the units before it), each with its own
  server of one unit's throughput (kept by the SM core); a scheduler's warps use its unit's
  (``L1TexConfig.cache_of``).
"""

from __future__ import annotations

import math
from collections import OrderedDict

from .memory_system import BandwidthServer


class TextureCache:
    """L1/texture cache of one SM."""

    def __init__(self, cfg):
        c = cfg.l1tex
        self.line = c.line
        self.sector = c.sector
        self.sectors_per_line = c.line // c.sector
        self.assoc = c.assoc
        # one cache per texture unit when l1tex.sharing splits them (sets [u * unit_sets, (u + 1) *
        # unit_sets) are unit u's), else one of all the sets
        self.caches = c.caches
        self.unit_sets = max(1, c.sets)
        self.n_sets = self.caches * self.unit_sets
        self.hit_latency = cfg.latency.tex_l1_hit
        self.server = BandwidthServer(c.cache_bytes_per_clk)
        self._tags = None
        self._set_list = None  # (made when first looked at: most SMs' caches are run by the compiled core)
        self.bytes_per_clk = c.bytes_per_clk
        self.pending_ready = 0  # latest fill cycle of a merged (pending) hit in the last access()
        self.reset_stats()

    def reset_stats(self) -> None:
        """Zero the counters: requests (lookups of one warp's sectors), sector hits / misses,
        pending hits (hits merged into a fill under way), line evictions, bytes looked up and the
        cycles the texture path was busy passing them (bytes / ``l1tex.bytes_per_clk``)."""
        self.requests = 0
        self.sector_hits = 0
        self.sector_misses = 0
        self.pending_hits = 0
        self.evictions = 0

    # ---- tags ----------------------------------------------------------------------------------
    @property
    def _sets(self):
        """Per set, ``OrderedDict`` line -> per sector its arrival cycle (None: absent), least
        recently used first; built from the compiled core's tag array when that was the last to
        hold them (:meth:`take_tags`)."""
        if self._tags is None and self._set_list is None:
            self._set_list = [OrderedDict() for _ in range(self.n_sets)]
        if self._tags is not None:
            arr, absent = self._tags
            self._tags = None
            sets = []
            for si in range(self.n_sets):
                ways = [w for w in range(self.assoc) if arr[si, w, 0] >= 0]
                ways.sort(key=lambda w: arr[si, w, 1])
                sets.append(OrderedDict(
                    (int(arr[si, w, 0]), [None if r == absent else r for r in arr[si, w, 2:].tolist()])
                    for w in ways))
            self._set_list = sets
        return self._set_list

    @_sets.setter
    def _sets(self, sets):
        self._set_list = sets
        self._tags = None

    def take_tags(self, arr, absent):
        """The tags as the compiled core left them: ``arr[set, way]`` = (line, -1 for an empty way;
        LRU stamp; arrival cycle per sector, ``absent`` for none); read into the sets only when
        they are next looked at (most runs never do)."""
        self._tags = (arr, absent)

    def access(self, now: int, sector_addresses, unit: int = 0):
        """Look up distinct sectors (byte addresses) at cycle ``now`` in cache ``unit``: returns
        ``(hits, misses)``.

        ``hits`` is a count; ``misses`` the list of missed sector byte addresses (in the given
        order), which are allocated now and treated as filled at ``now`` unless :meth:`fill` later
        sets their arrival cycle.  Hits on sectors still being filled set ``self.pending_ready`` to
        the latest such arrival (0 if none).
        """
        line_sz, sec_sz, spl = self.line, self.sector, self.sectors_per_line
        n_sets, assoc, sets = self.unit_sets, self.assoc, self._sets
        base = unit * n_sets
        hits = 0
        misses = []
        pending = 0
        for addr in sector_addresses:
            ln = addr // line_sz
            s = sets[base + ln % n_sets]
            entry = s.get(ln)
            if entry is None:
                if len(s) >= assoc:
                    s.popitem(last=False)
                    self.evictions += 1
                entry = s[ln] = [None] * spl
            else:
                s.move_to_end(ln)
            i = (addr // sec_sz) % spl
            r = entry[i]
            if r is None:
                entry[i] = now
                misses.append(addr)
            else:
                hits += 1
                if r > now:
                    self.pending_hits += 1
                    if r > pending:
                        pending = r
        self.pending_ready = pending
        self.requests += 1
        self.sector_hits += hits
        self.sector_misses += len(misses)
        return hits, misses

    def fill(self, sector_addresses, ready: int, unit: int = 0) -> None:
        """Record that the given (allocated) sectors of cache ``unit`` arrive at cycle ``ready``."""
        line_sz, sec_sz, spl = self.line, self.sector, self.sectors_per_line
        base = unit * self.unit_sets
        for addr in sector_addresses:
            ln = addr // line_sz
            entry = self._sets[base + ln % self.unit_sets].get(ln)
            if entry is not None:  # may have been evicted meanwhile
                entry[(addr // sec_sz) % spl] = ready

    def contains(self, addr: int, unit: int = 0) -> bool:
        """Whether the sector holding byte ``addr`` is present in cache ``unit`` (no LRU update)."""
        ln = addr // self.line
        entry = self._sets[unit * self.unit_sets + ln % self.unit_sets].get(ln)
        return entry is not None and entry[(addr // self.sector) % self.sectors_per_line] is not None

    # ---- a whole request -----------------------------------------------------------------------
    def request(self, now: int, sector_addresses, memory) -> int:
        """One warp's fetch of the given distinct sectors; returns the cycle all data is there.

        Waits for the throughput server, looks the sectors up, sends the misses to ``memory``
        (a :class:`~maxsim.timing.memory_system.MemorySystem`) at the start cycle and fills them.
        """
        sectors = list(sector_addresses)
        if not sectors:
            return now
        start = self.server.reserve(now, len(sectors) * self.sector)
        t = math.ceil(start)
        hits, misses = self.access(t, sectors)
        done = t + self.hit_latency
        if self.pending_ready > done:
            done = self.pending_ready
        if misses:
            ready = memory.read(t, misses)
            self.fill(misses, ready)
            if ready > done:
                done = ready
        return done

    @property
    def hit_rate(self) -> float:
        total = self.sector_hits + self.sector_misses
        return self.sector_hits / total if total else 0.0

    @property
    def bytes(self) -> int:
        """Bytes looked up: every sector hit or missed (the compiled SM core keeps only those two)."""
        return (self.sector_hits + self.sector_misses) * self.sector

    def stats(self, elapsed_cycles: float | None = None) -> dict:
        """The counters of :meth:`reset_stats` as ``tex_*`` keys; ``tex_utilisation`` = busy cycles
        / ``elapsed_cycles`` (0 without it)."""
        busy = self.bytes / self.bytes_per_clk
        return {"tex_requests": self.requests, "tex_sector_hits": self.sector_hits,
                "tex_sector_misses": self.sector_misses, "tex_pending_hits": self.pending_hits,
                "tex_hit_rate": self.hit_rate, "tex_evictions": self.evictions, "tex_bytes": self.bytes,
                "tex_busy_cycles": busy,
                "tex_utilisation": busy / elapsed_cycles if elapsed_cycles else 0.0}

"""Bandwidth servers: a resource that passes so many bytes per cycle (an L2 slice, a DRAM channel).

Both memory system models (:mod:`maxsim.timing.memory_system`, the plain-Python statement, and
:mod:`maxsim.timing.memory_core`, its compiled twin) queue their work in these; the compiled one
keeps the same windows in arrays.
"""

from __future__ import annotations


class BandwidthServer:
    """A resource that passes ``bytes_per_clk`` bytes per cycle.

    The server keeps a first-free cycle per window of ``WINDOW`` cycles, so requests need not
    arrive in time order: the SMs of a GPU advance in quanta of a few tens of cycles, and a request
    stamped earlier than one already served is delayed by at most a window, not pushed behind
    everything served since (as a single "next free cycle" would). Requests arriving in order
    behave as a FIFO fluid queue: each starts when the bytes before it have passed. Full windows
    are skipped in one step (a union-find of "next window with room"), so an overloaded server
    costs no more per request than an idle one.

    ``busy`` (cycles) and ``bytes`` count the work passed since the last :meth:`reset_counters`;
    ``last_end`` is the cycle the last reservation's bytes have passed.
    """

    WINDOW = 32
    KEEP = 4096  # windows kept behind the latest one touched (older ones are forgotten)
    __slots__ = ("bytes_per_clk", "next_free", "busy", "bytes", "last_end", "_nf", "_full", "_prune_at")

    def __init__(self, bytes_per_clk: float):
        if bytes_per_clk <= 0:
            raise ValueError("bytes_per_clk must be positive")
        self.bytes_per_clk = float(bytes_per_clk)
        self.next_free = 0.0
        self.last_end = 0.0
        self._nf = {}  # window index -> first free cycle inside that window
        self._full = {}  # full window index -> a later window index (union-find parent)
        self._prune_at = 2 * self.KEEP
        self.reset_counters()

    def reset_counters(self) -> None:
        self.busy = 0.0
        self.bytes = 0

    def _room(self, b: int) -> int:
        """The first window at or after ``b`` that is not full."""
        full = self._full
        root = b
        while root in full:
            root = full[root]
        while b != root:  # path compression
            full[b], b = root, full[b]
        return root

    def reserve(self, now: float, nbytes: float) -> float:
        """Start cycle of a request of ``nbytes`` arriving at ``now``; occupies the server."""
        if nbytes <= 0:
            self.last_end = float(now)
            return float(now)
        nf, full, w, bpc = self._nf, self._full, self.WINDOW, self.bytes_per_clk
        b = int(now // w)
        t = float(now)
        if b in full:
            b = self._room(b)
            t = float(b * w)
        left = float(nbytes)
        start = None
        while True:
            end_b = (b + 1) * w
            s0 = nf.get(b, b * w)
            if t > s0:
                s0 = t
            if start is None:
                start = s0
            room = (end_b - s0) * bpc
            if room > left:
                end = nf[b] = s0 + left / bpc
                break
            nf[b] = end_b
            full[b] = b + 1
            left -= room
            if left <= 0:
                end = end_b
                break
            b = self._room(b + 1)
            t = float(b * w)
        self.last_end = end
        if end > self.next_free:
            self.next_free = end
        if len(nf) > self._prune_at:
            old = b - self.KEEP
            for k in [k for k in nf if k < old]:
                del nf[k]
            for k in [k for k in full if k < old]:
                del full[k]
            self._prune_at = 2 * max(len(nf), self.KEEP)
        self.busy += nbytes / bpc
        self.bytes += nbytes
        return start


class ServerGroup:
    """Servers working side by side (the L2 slices, the DRAM channels) seen as one server.

    ``bytes_per_clk``: their sum; ``next_free``: the latest of theirs; ``busy``: the mean of
    theirs; ``reserve(now, nbytes)`` spreads ``nbytes`` over them in proportion to their bandwidth
    and returns the earliest start.  Requests with an address go to one member directly.
    """

    __slots__ = ("members",)

    def __init__(self, members):
        self.members = list(members)

    @property
    def bytes_per_clk(self) -> float:
        return sum(m.bytes_per_clk for m in self.members)

    @property
    def next_free(self) -> float:
        return max(m.next_free for m in self.members)

    @property
    def busy(self) -> float:
        return sum(m.busy for m in self.members) / len(self.members)

    @property
    def bytes(self) -> float:
        return sum(m.bytes for m in self.members)

    def reserve(self, now: float, nbytes: float) -> float:
        total = self.bytes_per_clk
        return min(m.reserve(now, nbytes * m.bytes_per_clk / total) for m in self.members)

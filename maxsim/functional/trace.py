"""The dynamic trace the functional model hands to the timing model.

Warps executing in lockstep share one *segment*: the list of instruction indices they executed
together, plus, for memory instructions, one summary per warp (shared-memory wavefronts, texture or
global sectors) produced by summariser functions that the timing model supplies. A warp's whole
trace is the chain of segments it belonged to, in order.
"""

from __future__ import annotations

from array import array

import numpy as np


class Segment:
    __slots__ = ("warps", "pcs", "mem", "__weakref__")

    def __init__(self, warps):
        self.warps = warps  # batch-global warp ids, row order
        self.pcs = array("i")  # instruction indices executed, in order (4 bytes each)
        self.mem = {}  # position in pcs -> per-warp summaries (sequence indexed by row)


class WarpTrace:
    """One warp's dynamic instruction stream: (segment, row) pairs."""

    __slots__ = ("warp", "parts", "open")

    def __init__(self, warp):
        self.warp = warp
        self.parts = []
        self.open = False  # more of it may come (a launch run in windows: LaunchStream.set_window)

    def __len__(self):
        n = 0
        for seg, _ in self.parts:  # (a plain loop: a generator costs ~2x on this hot path)
            n += len(seg.pcs)
        return n

    def pcs(self):
        out = []
        for seg, _ in self.parts:
            out.extend(seg.pcs)
        return out

    def records(self):
        """This warp's memory and barrier records: ``{position in pcs(): its entry}`` (a memory
        summary, or whether it arrives at a guarded barrier)."""
        out = {}
        start = 0
        for seg, row in self.parts:
            for pos, per_warp in seg.mem.items():
                out[start + pos] = per_warp[row]
            start += len(seg.pcs)
        return out


def narrowed(traces):
    """Copies of warp traces (a list of :class:`WarpTrace`) whose segments hold only these warps'
    rows: kept while the other warps of their segments are let go, they do not keep those
    warps' records alive. The instruction indices are shared, the records copied (a segment all
    of whose warps are among them, in order, is shared as it is)."""
    rows_of = {}  # id(segment) -> (segment, its rows in these traces)
    for tr in traces:
        for seg, row in tr.parts:
            rows = rows_of.setdefault(id(seg), (seg, []))[1]
            if row not in rows:
                rows.append(row)
    copies = {}
    for key, (seg, rows) in rows_of.items():
        if len(rows) == len(seg.warps) and rows == list(range(len(rows))):
            copies[key] = (seg, None)  # every warp of the segment, in order: nothing to let go
            continue
        new = Segment(seg.warps[rows])
        new.pcs = seg.pcs
        # a summary array or a sector-list table (``take``), or a list (barrier arrivals)
        new.mem = {pos: (per_warp.take(rows) if hasattr(per_warp, "take") else [per_warp[r] for r in rows])
                   for pos, per_warp in seg.mem.items()}
        copies[key] = (new, {r: i for i, r in enumerate(rows)})
    out = []
    for tr in traces:
        t = WarpTrace(tr.warp)
        t.parts = [(seg, row) if copies[id(seg)][1] is None else (copies[id(seg)][0], copies[id(seg)][1][row])
                   for seg, row in tr.parts]
        out.append(t)
    return out


class TraceRecorder:
    """Collects segments during a launch.

    ``summarise(kind, addr_lanes, active_lanes, nbytes) -> sequence per warp`` turns the addresses
    of one warp-group memory instruction into what the timing model needs; kind is one of
    "lds", "sts", "ldg", "stg", "tex". Addresses come as arrays of shape (warps, 32): uint32 byte
    addresses, or for "tex" the texels' int64 byte addresses, -1 for a lane outside the texture
    (border texels are not fetched). A summariser may carry a ``key`` attribute naming the
    parameters its summaries depend on; the launch result keeps it (``trace_key``) so that a
    trace is not timed under another configuration.
    """

    def __init__(self, summarise):
        self.summarise = summarise
        self.key = getattr(summarise, "key", None)
        self.segments = []
        self._closed = 0  # positions of the segments before the newest (see positions)
        self.gone = []  # warps that exited since take_gone() (their traces are complete)

    def positions(self):
        """Trace positions recorded since the last :meth:`take` (summed over the segments: only the
        newest, the running group's, still grows)."""
        return self._closed + (len(self.segments[-1].pcs) if self.segments else 0)

    def take_gone(self):
        """The warps that exited since the last call (ids), which the recorder then forgets."""
        out, self.gone = self.gone, []
        return out

    def start(self, g):
        """A new segment for group g (the launch appends the pcs the group executes to
        ``g.segment.pcs``, a block of instructions at a time)."""
        seg = Segment(g.warps.copy())
        g.segment = seg
        if self.segments:
            self._closed += len(self.segments[-1].pcs)
        self.segments.append(seg)

    def go_on(self, g):
        """A segment for group g as it is picked to run: the one it ran in last when that is the
        newest and holds exactly its warps, in order (a group released from a CTA barrier, or
        picked again after a backward branch, with nothing recorded since), else a new one
        (:meth:`start`). The trace is the same either way; fewer, longer segments cost the
        timing model's flattening less per warp."""
        seg = g.segment
        if (seg is None or not self.segments or seg is not self.segments[-1]
                or seg.warps.size != g.warps.size or not np.array_equal(seg.warps, g.warps)):
            self.start(g)

    def _lanes(self, g, sel):
        nw = g.warps.size
        act = g.active if sel is None else sel
        return act.reshape(nw, 32)

    def memory(self, kind, g, addr, sel, nbytes):
        """The memory instruction at position ``g.pos`` of the group's segment: ``addr`` the
        lanes' byte addresses (uint32), ``sel`` the lanes that access (None: the active ones)."""
        nw = g.warps.size
        g.segment.mem[g.pos] = self.summarise(kind, addr.reshape(nw, 32), self._lanes(g, sel), nbytes)

    def local(self, kind, g, addr, sel, nbytes):
        """A local-memory LDL / STL at ``g.pos`` (kind "ldg" / "stg": timed as global memory):
        ``addr`` (lanes, k) the int64 byte addresses of the k pieces of ``nbytes`` each lane
        touches (the interleaved layout of local memory splits a 64- or 128-bit access)."""
        nw = g.warps.size
        k = addr.shape[1]
        lanes = np.repeat(self._lanes(g, sel), k, axis=1)
        g.segment.mem[g.pos] = self.summarise(kind, addr.reshape(nw, 32 * k), lanes, nbytes)

    def texture(self, g, coords, bases, sel, sizes, texel_bytes=16):
        """A TLD at ``g.pos``: texel ``coords`` of textures at ``bases`` with ``sizes`` texels of
        ``texel_bytes`` (an int, or an array per lane)."""
        nw = g.warps.size
        inside = (coords >= 0) & (coords < sizes)
        addr = np.where(inside, bases + coords * texel_bytes, -1)
        g.segment.mem[g.pos] = self.summarise(
            "tex", addr.reshape(nw, 32), self._lanes(g, sel) & inside.reshape(nw, 32),
            texel_bytes if isinstance(texel_bytes, int) else int(texel_bytes.max()))

    def constant(self, g, addr, sel):
        """A register-indexed LDC at ``g.pos``: per warp, the distinct constant addresses its lanes
        read (1 when all read one; 0 when no lane reads)."""
        nw = g.warps.size
        a = np.where(self._lanes(g, sel), addr.reshape(nw, 32).astype(np.int64), -1)
        a.sort(axis=1)
        distinct = ((a[:, 1:] != a[:, :-1]) & (a[:, 1:] >= 0)).sum(axis=1) + (a[:, 0] >= 0)
        g.segment.mem[g.pos] = distinct.astype(np.int64)

    def barrier(self, g, arrive):
        """A guarded BAR.SYNC that some warps of the group skip (guard false): per warp, whether
        it arrives. (A BAR without this record is one every warp of the segment arrives at.)"""
        g.segment.mem[len(g.segment.pcs) - 1] = arrive.tolist()

    def exit(self, g, gone):
        self.gone.extend(g.warps[gone].tolist())

    def split(self, g, yes, no):
        pass

    def merged(self, waiting, out):
        pass

    def take(self):
        """The traces of the warps recorded since the last call (:meth:`finish`'s form), which the
        recorder then forgets."""
        traces = self.finish()
        self.segments = []
        self._closed = 0
        return traces

    trace_type = WarpTrace  # the record a warp's trace is kept in

    def finish(self):
        """``{warp id: its trace}`` of the warps recorded (in the order of their ids): each warp's
        (segment, row) pairs in the order the segments began."""
        segs = self.segments
        traces = {}
        if not segs:
            return traces
        sizes = np.fromiter((seg.warps.size for seg in segs), dtype=np.int64, count=len(segs))
        warps = np.concatenate([seg.warps for seg in segs])
        first = np.cumsum(sizes) - sizes
        order = np.argsort(warps, kind="stable")  # (stable: a warp's segments stay in order)
        ids = warps[order]
        if not ids.size:
            return traces
        which = np.repeat(np.arange(len(segs)), sizes)[order].tolist()
        rows = (np.arange(warps.size) - np.repeat(first, sizes))[order].tolist()
        starts = np.flatnonzero(np.diff(ids, prepend=ids[0] - 1))  # each warp's first pair
        cuts = starts.tolist() + [ids.size]
        pairs = list(zip(map(segs.__getitem__, which), rows))  # (every warp's pairs, made at once)
        make = self.trace_type
        for w, a, b in zip(ids[starts].tolist(), cuts[:-1], cuts[1:]):
            t = make(w)
            t.parts = pairs[a:b]
            traces[w] = t
        return traces

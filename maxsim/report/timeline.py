"""Timelines of the timed SM as Chrome trace-event JSON, for the Perfetto UI (ui.perfetto.dev) and
chrome://tracing.

The exporter reads the issue log the SM keeps when it runs with ``log=True`` (``sm.issue_log``,
``sm.issue_done``, ``sm.stall_log``; see :class:`maxsim.timing.sm.SM`); a run without the log costs
nothing. What the trace shows:

* one process per warp scheduler (``pid`` = scheduler index, named ``scheduler N``) and in it one
  track per warp slot (``tid`` = warp slot, named by the warp label(s) that ran in the slot, e.g.
  ``cta0,0.w1``);
* a 1-cycle slice per issued instruction, named by its opcode, with the pc, the source line, the
  instruction text, whether it was dual-issued (the second instruction of a pair: it sits on the
  same cycle as the first, nested under it) and the cycle its result or memory request completes;
* between two issues of a warp, slices named by the stall reason of those cycles, the same
  attribution as the SM's ``stall_reasons`` (:data:`maxsim.timing.stats.STALL_REASONS`);
* in a process ``SM N counters``: IPC per bucket of cycles (default 32) and the memory requests
  in flight on the SM (shared: LDS/STS until the shared port completes them; texture/global:
  TEX/LDG until their data is back; posted STG stores are not counted).

Time: **1 µs of trace time = 1 SM cycle** (the ``otherData`` block says so too). A window
``[start, end)`` keeps the events whose cycle lies in it (stall slices are clipped to it). A trace
is capped at about :data:`MAX_EVENTS` events: a longer run (or window) is cut short at the end and
the summary says where.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

from ..errors import MaxsimError
from ..timing.sm import LDG, LDS, STS, TEX
from ..timing.stats import STALL_REASONS

MAX_EVENTS = 2_000_000
IPC_BUCKET = 32
# colours for chrome://tracing (reserved colour names; Perfetto picks its own)
_CNAME = {"stall_count": "grey", "dependency": "yellow", "barrier_wait": "olive",
          "memory_throttle": "bad", "pipe_busy": "terrible", "not_selected": "generic_work"}
_SHARED, _GLOBAL = 0, 1


class TimelineError(MaxsimError):
    pass


def parse_window(text):
    """``"START:END"`` (either may be left out: ``"1000:"``, ``":5000"``) -> ``(start, end or None)``."""
    if ":" not in text:
        raise TimelineError(f"trace window {text!r}: expected START:END in cycles (e.g. 2000:4000)")
    a, b = (x.strip() for x in text.split(":", 1))
    try:
        start = int(a, 0) if a else 0
        end = int(b, 0) if b else None
    except ValueError:
        raise TimelineError(f"trace window {text!r}: START and END must be whole cycle numbers") from None
    if start < 0 or (end is not None and end <= start):
        raise TimelineError(f"trace window {text!r}: expected 0 <= START < END")
    return start, end


class Timeline:
    """The events of one SM's logged run; :meth:`write` saves a window of them."""

    def __init__(self, sm, bucket=IPC_BUCKET):
        if sm.issue_log is None:
            raise TimelineError("the SM ran without its issue log: run it with log=True to get a timeline")
        if bucket < 1:
            raise TimelineError("the IPC bucket must be at least one cycle")
        self.sm = sm
        self.bucket = int(bucket)
        log = sm.issue_log
        self.log = log
        self.done = sm.issue_done
        self.t = np.fromiter((e[0] for e in log), dtype=np.int64, count=len(log))
        last = int(self.t[-1]) + 1 if len(log) else 0
        self.cycles = max(int(sm.now), int(sm.stats.cycles), last)
        self.nsched = len(sm.scheds)
        self.where = {w.label: (w.sched.index, w.slot) for w in sm.all_warps}
        instrs = sm.kernel.instructions
        from ..sass.printer import format_instruction
        self.static = [(i.full_opcode, i.where, " ".join(format_instruction(i).split())) for i in instrs]
        # stall slices (start, end, warp label, reason index), by start
        pieces = []
        for label, g, a, b, t, mid, end in sm.stall_log:
            if a > g:
                pieces.append((g, a, label, 0))
            if b > a:
                pieces.append((a, b, label, mid))
            if t > b:
                pieces.append((b, t, label, end))
        pieces.sort(key=lambda p: p[0])
        self.pieces = pieces
        self.piece_start = np.fromiter((p[0] for p in pieces), dtype=np.int64, count=len(pieces))
        self.longest_piece = max((p[1] - p[0] for p in pieces), default=0)
        # memory requests in flight: (cycle, kind, +1/-1), by cycle
        unit = sm.static.unit
        kind = {LDS: _SHARED, STS: _SHARED, TEX: _GLOBAL, LDG: _GLOBAL}
        changes = []
        for (t, _, pc), d in zip(log, self.done):
            k = kind.get(unit[pc])
            if k is not None:
                changes.append((t, k, 1))
                changes.append((max(int(math.ceil(d)), t + 1), k, -1))
        changes.sort(key=lambda c: c[0])
        self.mem = changes
        self.mem_t = np.fromiter((c[0] for c in changes), dtype=np.int64, count=len(changes))

    # ---- sizes ---------------------------------------------------------------------------
    def _metadata_count(self):
        return 2 * self.nsched + 2 + 2 * len({s for s in self.where.values()})

    def count(self, start, end):
        """Events a trace of ``[start, end)`` holds (metadata and counters included; stall slices
        counted by their start, so it may be short by one per warp)."""
        n = self._metadata_count()
        n += int(np.searchsorted(self.t, end) - np.searchsorted(self.t, start))
        n += int(np.searchsorted(self.piece_start, end) - np.searchsorted(self.piece_start, start))
        n += -(-(end - start) // self.bucket)
        n += 1 + int(np.searchsorted(self.mem_t, end) - np.searchsorted(self.mem_t, start))
        return n

    def fit(self, start, end, max_events=MAX_EVENTS):
        """The largest ``end' <= end`` whose window from ``start`` has at most ``max_events`` events."""
        if self.count(start, end) <= max_events:
            return end
        lo, hi = start + 1, end  # count(start, lo) may already be too many: keep one cycle at least
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.count(start, mid) <= max_events:
                lo = mid
            else:
                hi = mid - 1
        return lo

    # ---- events --------------------------------------------------------------------------
    def events(self, start, end):
        """The trace events of ``[start, end)`` (dicts, metadata first)."""
        sm = self.sm
        i0 = int(np.searchsorted(self.t, start))
        i1 = int(np.searchsorted(self.t, end))
        p0 = int(np.searchsorted(self.piece_start, start - self.longest_piece))
        p1 = int(np.searchsorted(self.piece_start, end))
        pieces = [p for p in self.pieces[p0:p1] if p[1] > start]
        # tracks: the warp slots with something in the window, named by their warps
        names = {}
        for label in [self.log[i][1] for i in range(i0, i1)] + [p[2] for p in pieces]:
            key = self.where[label]
            lst = names.setdefault(key, [])
            if label not in lst:
                lst.append(label)
        for s in range(self.nsched):
            yield {"name": "process_name", "ph": "M", "pid": s, "args": {"name": f"scheduler {s}"}}
            yield {"name": "process_sort_index", "ph": "M", "pid": s, "args": {"sort_index": s}}
        cpid = self.nsched
        yield {"name": "process_name", "ph": "M", "pid": cpid, "args": {"name": f"SM {sm.sm_id} counters"}}
        yield {"name": "process_sort_index", "ph": "M", "pid": cpid, "args": {"sort_index": -1}}
        for (s, slot), labels in sorted(names.items()):
            name = ", ".join(labels) if len(labels) <= 3 else f"{', '.join(labels[:3])} (+{len(labels) - 3})"
            yield {"name": "thread_name", "ph": "M", "pid": s, "tid": slot, "args": {"name": name}}
            yield {"name": "thread_sort_index", "ph": "M", "pid": s, "tid": slot, "args": {"sort_index": slot}}
        # issued instructions
        log, done, static, where = self.log, self.done, self.static, self.where
        for i in range(i0, i1):
            t, label, pc = log[i]
            s, slot = where[label]
            op, line, text = static[pc]
            dual = i > 0 and log[i - 1][0] == t and log[i - 1][1] == label
            d = done[i]
            yield {"name": op, "cat": "issue", "ph": "X", "ts": t, "dur": 1, "pid": s, "tid": slot,
                   "args": {"warp": label, "pc": pc, "line": line, "instruction": text, "dual_issued": dual,
                            "completes": int(math.ceil(d))}}
        # stalls
        for a, b, label, r in pieces:
            s, slot = where[label]
            a, b = max(a, start), min(b, end)
            reason = STALL_REASONS[r]
            yield {"name": reason, "cat": "stall", "ph": "X", "ts": a, "dur": b - a, "pid": s, "tid": slot,
                   "cname": _CNAME[reason], "args": {"warp": label, "reason": reason}}
        # IPC per bucket
        stop = min(end, max(self.cycles, start + 1))
        b = start
        while b < stop:
            e = min(b + self.bucket, stop)
            n = int(np.searchsorted(self.t, e) - np.searchsorted(self.t, b))
            yield {"name": "IPC", "ph": "C", "ts": b, "pid": cpid, "args": {"IPC": round(n / (e - b), 4)}}
            b = e
        # memory requests in flight
        inflight = [0, 0]
        m0 = int(np.searchsorted(self.mem_t, start))
        m1 = int(np.searchsorted(self.mem_t, end))
        for _, k, d in self.mem[:m0]:
            inflight[k] += d
        yield self._mem_event(start, inflight, cpid)
        j = m0
        while j < m1:
            t = self.mem[j][0]
            while j < m1 and self.mem[j][0] == t:
                inflight[self.mem[j][1]] += self.mem[j][2]
                j += 1
            if t > start:
                yield self._mem_event(t, inflight, cpid)

    @staticmethod
    def _mem_event(t, inflight, pid):
        return {"name": "memory requests in flight", "ph": "C", "ts": t, "pid": pid,
                "args": {"shared": inflight[_SHARED], "texture/global": inflight[_GLOBAL]}}

    # ---- file ----------------------------------------------------------------------------
    def write(self, path, start=0, end=None, max_events=MAX_EVENTS):
        """Write the trace of ``[start, end)`` (default: the whole run) to ``path``; returns a
        :class:`TraceSummary`. A window with more than ``max_events`` events is cut short."""
        full_end = self.cycles if end is None else end
        if start >= full_end:
            raise TimelineError(f"trace window starts at cycle {start}, after the run's last cycle "
                                f"({self.cycles})")
        wanted = self.count(start, full_end)
        stop = self.fit(start, full_end, max_events)
        n = 0
        meta = {"generator": "maxsim", "kernel": self.sm.kernel.name, "config": self.sm.cfg.name,
                "sm": self.sm.sm_id, "time_unit": "1 us of trace time = 1 SM cycle",
                "run_cycles": self.cycles, "window_cycles": [start, stop], "ipc_bucket_cycles": self.bucket,
                "stall_reasons": list(STALL_REASONS)}
        with open(path, "w") as f:
            f.write('{"traceEvents":[\n')
            for ev in self.events(start, stop):
                if n:
                    f.write(",\n")
                f.write(json.dumps(ev, separators=(",", ":")))
                n += 1
            meta["events"] = n
            f.write('\n],\n"displayTimeUnit":"ns",\n"otherData":')
            f.write(json.dumps(meta))
            f.write("}\n")
        return TraceSummary(path, n, os.path.getsize(path), start, stop, full_end, wanted,
                            self.cycles, max_events)


class TraceSummary:
    """What :meth:`Timeline.write` wrote."""

    def __init__(self, path, events, size, start, end, wanted_end, wanted_events, run_cycles, max_events):
        self.path = path
        self.events = events
        self.bytes = size
        self.start = start
        self.end = end
        self.wanted_end = wanted_end
        self.wanted_events = wanted_events
        self.run_cycles = run_cycles
        self.max_events = max_events

    @property
    def cut(self):
        return self.end < self.wanted_end

    def message(self):
        text = (f"trace: wrote {self.events:,} events ({self.bytes / 1024:,.0f} KB) for cycles "
                f"[{self.start}, {self.end}) of {self.run_cycles:,} to {self.path} "
                f"(open it in https://ui.perfetto.dev; 1 us = 1 cycle)")
        if self.cut:
            text += (f"; cycles [{self.start}, {self.wanted_end}) would give about {self.wanted_events:,} "
                     f"events, more than {self.max_events:,}, so the trace stops at cycle {self.end}: "
                     f"pick a window with --trace-window START:END")
        return text


def write_trace(sm, path, window=None, bucket=IPC_BUCKET, max_events=MAX_EVENTS):
    """Write the Chrome trace of a logged SM run to ``path``. ``window``: ``(start, end)`` in cycles
    (``end`` None: to the end of the run), or a ``"START:END"`` string; default the whole run.
    Returns a :class:`TraceSummary` (``.message()`` says what was written)."""
    if isinstance(window, str):
        window = parse_window(window)
    start, end = window if window is not None else (0, None)
    return Timeline(sm, bucket).write(path, start, end, max_events)

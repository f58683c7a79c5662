"""The clock of SMs that share a memory system: they run in simpy's order, in compiled code.

A GPU's SMs advance in quanta of a few dozen cycles so that their requests reach the shared
L2/DRAM roughly in time order. As simpy processes (:meth:`maxsim.timing.sm.SM.run` with an
environment; the reference SM always runs so) every quantum of every SM costs a return from the
compiled core to Python, a simpy step and a call back into the core with its ~35 arrays: at
N = 3072 an SGEMM prediction spends more there than in the model. :func:`run_together` runs the
same SMs in the same order without leaving compiled code between quanta
(:func:`maxsim.timing.core.drive`): the events are taken in simpy's order (cycle, then the order
they were scheduled in; the SMs start at cycle 0 in list order), so every SM sees the memory
system in the same state at the same point and the numbers are identical (tests/test_clock.py
runs both ways). Python still handles what the quantum's end and the compiled memory system do
not: memory requests the core cannot serve, CTAs that end (the block dispatcher), posted stores the
memory system's tables have no room for, logs, errors.
"""

from __future__ import annotations

import numpy as np
import simpy
from numba import typed

from .. import jit
from ..jit import borrow, njit
from . import core as K
from .cores import choose

CLOCKS = ("compiled", "simpy")


def clock_name(clock=None):
    """How SMs that share a memory system are run together: ``clock`` if given, else
    ``$MAXSIM_CLOCK``, else "compiled" (:func:`run_together`); "simpy" runs them as simpy processes."""
    return choose(clock, "MAXSIM_CLOCK", "clock", CLOCKS, "clock")


STATE_ARRAYS = 23  # arrays in an SM's state tuple (maxsim.timing.core.drive_types)
PACKED = [0]  # state tuples the SMs have made (SM._pack counts them: Lineup.refresh looks again then)


@njit(cache=True, forceinline=True)
def _borrowed(s):
    """An SM's state tuple with every array borrowed (:func:`maxsim.jit.borrow`): taking it from
    the lineup at each switch between SMs then counts no references (23 atomic increments and as
    many decrements per quantum, ~10% of a memory-bound run). The :class:`Lineup` holds the arrays
    themselves while the lineup holds them borrowed."""
    return (borrow(s[0]), borrow(s[1]), borrow(s[2]), borrow(s[3]), borrow(s[4]), borrow(s[5]), borrow(s[6]),
            borrow(s[7]), borrow(s[8]), borrow(s[9]), borrow(s[10]), borrow(s[11]), borrow(s[12]), borrow(s[13]),
            borrow(s[14]), borrow(s[15]), borrow(s[16]), borrow(s[17]), borrow(s[18]), borrow(s[19]),
            borrow(s[20]), borrow(s[21]), borrow(s[22]))


@njit(cache=True)
def _lineup(first, n):
    """A typed list of ``n`` copies of one SM's state tuple, borrowed (the others are set in place)."""
    out = typed.List()
    b = _borrowed(first)
    for _ in range(n):
        out.append(b)
    return out


@njit(cache=True)
def _set(lineup, i, state):
    lineup[i] = _borrowed(state)


class Lineup:
    """The state tuples of some SMs as :func:`~maxsim.timing.core.drive` reads them, kept up to
    date: an SM's arrays change when its trace buffers or the memory system's tables grow. The
    compiled lineup holds the arrays borrowed; ``_seen`` holds each SM's current tuple itself, so
    no array the lineup points at is freed before the lineup lets go of it."""

    def __init__(self, sms):
        self.sms = list(sms)
        self._seen = [sm._args for sm in self.sms]
        if self._seen and len(self._seen[0]) - 1 != STATE_ARRAYS:
            raise ValueError(f"an SM's state has {len(self._seen[0]) - 1} arrays, the lineup takes {STATE_ARRAYS}")
        self.states = _lineup(self._seen[0][:-1], len(self.sms))
        for i, args in enumerate(self._seen[1:], 1):
            _set(self.states, i, args[:-1])
        self._memc = next((sm._memc for sm in self.sms if sm._memc is not None), None)
        # each SM's X (core.X_*) a plane of one array; the block dispatcher's ready queue when the SMs
        # share one that stages its CTAs (the core then starts an SM's next CTA itself: core._next_cta)
        self.XS = np.zeros((len(self.sms),) + (self.sms[0]._X.shape if self.sms else (0, K.X_COLS)), np.int64)
        q = self.sms[0].dispatcher if self.sms else None
        self.queue = q if getattr(q, "rq", None) is not None and all(sm.dispatcher is q for sm in self.sms) else None
        for i, sm in enumerate(self.sms):
            sm.bind_x(self.XS[i])
            sm._rq_queue = self.queue
            sm._update_fast()
        self._no_rq = np.zeros(K.RQ_HEAD0, np.int64)
        self._looked = None  # (memory tables' version, PACKED) when every SM was last looked at
        self._bound = False  # whether the core's and the memory system's code are bound

    def rq(self):
        """The ready queue the core is given (the dispatcher's current one, or an empty one)."""
        return self.queue.rq if self.queue is not None else self._no_rq

    def refresh(self):
        """Every SM takes the memory system's current tables and its own current arrays; returns
        the memory system's arrays (one memory system for all). (An SM's arrays change only when
        it packs them, counted in PACKED, or when the memory system's tables grow: when neither
        happened since the last look, no SM is looked at.)"""
        seen = self._seen
        memc = self._memc
        now = (memc._version if memc is not None else None, PACKED[0])
        if now != self._looked:
            for i, sm in enumerate(self.sms):
                memc = sm._memc  # (SM._before_call, inline)
                if memc is not None and memc._version != sm._mem_version:
                    sm._pack()  # the memory system's tables grew (here or on another SM)
                args = sm._args
                if args is not seen[i]:
                    _set(self.states, i, args[:-1])
                    seen[i] = args
            m0 = seen[0][-1][0]
            for args in seen:
                if args[-1][0] is not m0:
                    raise ValueError("SMs driven together must share one memory system")
            self._looked = (self._memc._version if self._memc is not None else None, PACKED[0])
        ms = seen[0][-1]
        if not self._bound:
            if not K.RARE_CALLEES[-1].bound:
                if jit.workers_compiling():  # what the run needs later, compiled while its workers compile
                    _set(self.states, 0, seen[0][:-1])  # (state 0 as it is)
                    jit.compile_ahead_now()
                K.bind_core()  # (once per process: the core calls its rare steps' code through pointers)
            if seen[0][0][K.G_MEMC] and not K.READ_REQUEST.bound:
                K.bind_memory(ms)  # (and the compiled memory system's)
            self._bound = bool(seen[0][0][K.G_MEMC]) and K.READ_REQUEST.bound
        return ms


class Solo:
    """One SM's calls of the core, returning at every status (the SM as a simpy process)."""

    def __init__(self, sm):
        self.lineup = Lineup([sm])
        self.drive = K.drive_for([sm])
        self.H = np.zeros((1, K.H_SIZE), dtype=np.int64)
        self.E = np.zeros(K.E_SIZE, dtype=np.int64)
        self.E[K.E_SOLO] = 1
        self.E[K.E_STOP] = -1
        self.XS, self.RQ = self.lineup.XS, self.lineup._no_rq  # (one SM under simpy: Python starts its CTAs)

    def call(self):
        ms = self.lineup.refresh()
        return self.drive(self.lineup.states, ms, self.H, self.E, self.XS, self.RQ)


PROGRESS_CYCLES = 2048  # simulated cycles between two progress reports of a timing run


def run_together(sms, quantum, *, until=None, progress=None, refill=None):
    """Run the compiled SMs ``sms`` (sharing one memory system) until each has finished, or until
    cycle ``until``, in the order of simpy processes made in list order. ``progress()`` is called
    every ``PROGRESS_CYCLES`` simulated cycles. ``refill()`` (traces that grow in windows, see
    :class:`maxsim.gpu.gpu.TraceRouter`) loads more trace where warps need it and returns the
    cycle the SMs may run to (None: no limit); it is called then, and whenever CTAs were loaded
    (the SMs stop at a cycle as for ``until``, which changes no figure)."""
    sms = list(sms)
    if not sms:
        return
    lineup = Lineup(sms)
    drive = K.drive_for(sms)  # (the schedulers' scans for the warps they may hold)
    n = len(sms)
    H = np.zeros((n, K.H_SIZE), dtype=np.int64)
    H[:, K.H_STATE] = K.H_UNSTARTED
    H[:, K.H_SEQ] = np.arange(n)
    E = np.zeros(K.E_SIZE, dtype=np.int64)
    E[K.E_SEQ] = n
    E[K.E_CUR] = -1
    E[K.E_QUANTUM] = quantum
    mark = PROGRESS_CYCLES if progress is not None else None
    room = None  # refill's cycle

    def stop():
        marks = [m for m in (until, mark, room) if m is not None]
        return min(marks) if marks else -1
    E[K.E_STOP] = stop()
    while True:
        ms = lineup.refresh()
        status = drive(lineup.states, ms, H, E, lineup.XS, lineup.rq())
        if status == K.FINISHED:
            break
        if status == K.STOPPED:
            at = int(E[K.E_STOP])
            if until is not None and at == until:
                for sm in sms:  # as simpy leaves them: the clock, the logs and the exits up to date
                    sm.now = int(sm._G[K.G_T])
                    sm._drain()
                    sm.flush_exits()
                break
            if mark is not None and at == mark:
                for sm in sms:
                    sm._sync()  # (the CTAs the core started, in the SMs' records)
                progress()
                mark += PROGRESS_CYCLES
            if room is not None and at == room:
                for sm in sms:
                    sm._sync()  # (before windows are joined to the resident warps' traces)
                room = refill()
            E[K.E_STOP] = stop()
            continue
        sm = sms[int(E[K.E_SM])]
        if status == K.START:
            sm._begin(quantum)
        elif sm._after_call(status):
            sm._end()
            E[K.E_CUR] = -1
        if refill is not None and sm.router is not None and sm.router.dirty:
            for other in sms:
                other._sync()
            room = refill()
            E[K.E_STOP] = stop()


def advance(sms, quantum, *, clock=None, until=None, progress=None, total=None, refill=None):
    """Run the SMs ``sms`` (sharing one memory system; each with its CTAs queued) until each has
    finished, or until cycle ``until``: compiled SMs with :func:`run_together` unless ``clock`` (or
    ``$MAXSIM_CLOCK``) is "simpy", reference SMs always as simpy processes (same order, same
    numbers). ``progress(done, total, "timing", "warp instructions")`` is told the warp
    instructions issued every ``PROGRESS_CYCLES`` simulated cycles and, when the run ends, ``total``
    (the functional run's count); it only reads the counters. ``refill``: see :func:`run_together`
    (compiled SMs and clock only)."""
    sms = list(sms)
    tell = None if progress is None else \
        (lambda: progress(sum(sm.issued() for sm in sms), total, "timing", "warp instructions"))
    if clock_name(clock) == "compiled" and all(sm.core == "compiled" for sm in sms):
        run_together(sms, quantum, until=until, progress=tell, refill=refill)
    else:
        if refill is not None:
            raise ValueError("traces that grow in windows need the compiled SMs and clock")
        env = simpy.Environment()
        procs = [sm.run(env, quantum=quantum) for sm in sms]
        if tell is not None:
            def watch():
                while True:
                    tell()
                    yield env.timeout(PROGRESS_CYCLES)
            env.process(watch())
        env.run(until=until if until is not None else env.all_of(procs))
        for sm in sms:
            if until is not None and hasattr(sm, "flush_exits"):
                sm.flush_exits()  # (warps of CTAs still running when the run stopped)
    if progress is not None and until is None:
        progress(total, total, "timing", "warp instructions")

"""Shared-memory timing: bank conflicts of one warp request and the SM's bank pipeline.

Plain Python, no simpy: the SM core calls :meth:`SharedMemoryTiming.wavefronts` with the byte
addresses the functional model produced, then :meth:`SharedMemoryTiming.issue` to get the cycle the
result is ready, and schedules one wake-up for it.

Bank model (numbers from ``cfg.shared`` and ``cfg.latency``): 32 banks x 4 bytes; a lane
accessing ``width`` bytes touches ``width / 4`` consecutive 32-bit words.  One warp request costs
as many bank cycles ("wavefronts") as the largest number of DISTINCT words any single bank must
deliver; lanes reading the same word share it (broadcast).  At least 1.

Why not phases: the published rule for 128-bit accesses is that they are served in 4 phases of
8 threads each, conflicts counted within a phase [maxwell-facts, Shared memory].  Taken literally,
every LDS.128 would cost at least 4 cycles.  The maxas SGEMM runs, per SM and per ~2080-cycle
loop (4 warps x 520 issue cycles per scheduler), 16 warps x 36 shared ops (32 LDS.U.128 +
4 STS.128) - at least 16 x 36 x 4 = 2304 bank cycles with phases, more than the loop has, yet it
reaches 98% of the FFMA issue rate.  Its LDS.U.128 fragments are mostly broadcasts: a warp reads
only 8 distinct float4 = 32 distinct words, one per bank.  The numbers fit only if phases that
re-read words already fetched merge into one bank cycle, so a request costs the distinct words of
its worst bank.  For 32-bit accesses this is exactly the classic rule (one word per lane, conflicts
= distinct words per bank), so the model changes nothing there.

Replays (extra passes the hardware profilers count) are ``wavefronts - 1``.
"""

from __future__ import annotations

import numpy as np

from ..jit import njit


def warp_wavefronts(addr, active, nbytes, banks=32, bank_width=4):
    """Cycles the shared-memory banks need for each warp's request.

    Each lane touches ``nbytes / bank_width`` consecutive words. A request costs as many cycles as
    its busiest bank has *distinct* words to deliver (lanes reading the same word share it:
    broadcast); at least one cycle when any lane is active, zero when none is.
    """
    nw = addr.shape[0]
    per = max(1, nbytes // bank_width)
    words = (addr // bank_width)[:, :, None] + np.arange(per, dtype=np.int64)
    words = words.reshape(nw, -1)
    act = np.repeat(active, per, axis=1)
    words = np.where(act, words, -1)
    words.sort(axis=1)
    first = np.ones_like(words, dtype=bool)
    first[:, 1:] = words[:, 1:] != words[:, :-1]
    first &= words >= 0
    bank = np.where(first, words % banks, 0)
    rows = np.repeat(np.arange(nw) * banks, words.shape[1])
    counts = np.bincount(rows + bank.reshape(-1), weights=first.reshape(-1), minlength=nw * banks)
    return counts.reshape(nw, banks).max(axis=1).astype(np.int64)



def wavefronts(addr, active, nbytes, banks=32, bank_width=4):
    """:func:`warp_wavefronts` (the same numbers, which that function specifies) in compiled code,
    for the many warps of a functional batch at once: a warp whose request is the same as another's
    of the batch (the same active lanes at the same addresses: the warps of one CTA slot of every
    CTA, in shared memory's CTA-relative addresses) takes that one's count, found by comparing it
    with the warp as far back as the last match was, else through a table of the distinct requests
    met so far. Returns int64, one per warp."""
    addr = np.ascontiguousarray(addr)
    active = np.ascontiguousarray(active, dtype=np.bool_)
    return _wavefronts(addr, active, int(nbytes), int(banks), int(bank_width))


@njit(cache=True)
def _wavefronts(addr, active, nbytes, banks, width):
    nw, nl = addr.shape
    per = max(1, nbytes // width)
    out = np.empty(nw, np.int64)
    size = 16
    while size < 2 * nw:
        size *= 2
    rows = np.full(size, -1, np.int64)  # open addressing: the first warp of each distinct request
    keys = np.zeros(size, np.uint64)
    buf = np.empty(nl * per, np.int64)
    count = np.zeros(banks, np.int64)
    back = 0  # how far back the last matching request was
    for w in range(nw):
        if back and w >= back and _same(addr, active, w, w - back):
            out[w] = out[w - back]
            continue
        h = np.uint64(nbytes)
        for lane in range(nl):
            v = np.uint64(addr[w, lane]) if active[w, lane] else np.uint64(0xFFFFFFFFFFFF)
            h = (h ^ v) * np.uint64(0x100000001B3)
        h ^= h >> np.uint64(29)
        i = np.int64(h & np.uint64(size - 1))
        found = -1
        while rows[i] >= 0:
            r = rows[i]
            if keys[i] == h and _same(addr, active, w, r):
                found = r
                break
            i = (i + 1) & (size - 1)
        if found >= 0:
            out[w] = out[found]
            back = w - found
            continue
        rows[i] = w
        keys[i] = h
        out[w] = _one(addr, active, w, per, banks, width, buf, count)
    return out


@njit(cache=True, forceinline=True)
def _same(addr, active, w, r):
    """Whether warps w and r make the same request (every lane's address and activity alike)."""
    d = 0
    for lane in range(addr.shape[1]):
        d |= (addr[w, lane] != addr[r, lane]) | (active[w, lane] != active[r, lane])
    return d == 0


@njit(cache=True, forceinline=True)
def _one(addr, active, w, per, banks, width, buf, count):
    """:func:`warp_wavefronts` of warp w: its lanes' words sorted (insertion: a warp's lanes mostly
    come in order), the distinct ones counted per bank; the largest count."""
    m = 0
    for lane in range(addr.shape[1]):
        if active[w, lane]:
            word = np.int64(addr[w, lane]) // width
            for j in range(per):
                x = word + j
                if x >= 0:
                    k = m
                    while k > 0 and buf[k - 1] > x:
                        buf[k] = buf[k - 1]
                        k -= 1
                    buf[k] = x
                    m += 1
    count[:] = 0
    most = 0
    for i in range(m):
        if i == 0 or buf[i] != buf[i - 1]:
            b = buf[i] % banks
            count[b] += 1
            if count[b] > most:
                most = count[b]
    return most


class SharedMemoryTiming:
    """Bank-conflict counter and bank-pipeline server of one SM's shared memory."""

    __slots__ = ("banks", "bank_width", "load_latency", "store_latency", "next_free",
                 "requests", "total_wavefronts", "busy_cycles")

    def __init__(self, cfg):
        self.banks = cfg.shared.banks
        self.bank_width = cfg.shared.bank_width
        self.load_latency = cfg.latency.lds
        self.store_latency = cfg.latency.sts
        self.reset()

    def reset(self) -> None:
        """Forget pipeline state and statistics."""
        self.next_free = 0
        self.requests = 0
        self.total_wavefronts = 0
        self.busy_cycles = 0

    # ---- bank conflicts ------------------------------------------------------------------------
    def wavefronts(self, byte_addresses, width_bytes: int = 4) -> int:
        """Bank cycles one warp request needs.

        ``byte_addresses``: the byte address of each ACTIVE lane (numpy integer array or sequence),
        aligned to ``width_bytes``; ``width_bytes``: 4, 8 or 16.  Returns max over banks of the
        distinct 32-bit words asked of that bank, at least 1 (also for no active lane).
        """
        if width_bytes not in (4, 8, 16):
            raise ValueError(f"shared access width must be 4, 8 or 16 bytes, got {width_bytes}")
        a = np.asarray(byte_addresses, dtype=np.int64).reshape(1, -1)
        if a.size == 0:
            return 1
        n = warp_wavefronts(a, np.ones(a.shape, dtype=bool), width_bytes, self.banks, self.bank_width)
        return max(1, int(n[0]))

    @staticmethod
    def replays(wavefronts: int) -> int:
        return wavefronts - 1

    # ---- bank pipeline -------------------------------------------------------------------------
    def issue(self, now: int, wavefronts: int, store: bool = False) -> int:
        """Send one warp request into the bank pipeline; returns the cycle its result is ready.

        The banks serve one wavefront per cycle: the request starts when the pipeline is free
        (``max(now, next_free)``), keeps it busy ``wavefronts`` cycles, and its last wavefront
        completes ``latency`` cycles after it starts (``latency.lds``, or ``latency.sts`` for
        ``store=True``).  A lone 1-wavefront load is ready at ``now + latency.lds``.
        """
        start = now if now > self.next_free else self.next_free
        self.next_free = start + wavefronts
        self.requests += 1
        self.total_wavefronts += wavefronts
        self.busy_cycles += wavefronts
        lat = self.store_latency if store else self.load_latency
        return start + wavefronts - 1 + lat

    @property
    def total_replays(self) -> int:
        return self.total_wavefronts - self.requests

    def stats(self) -> dict:
        return {"shared_requests": self.requests, "shared_wavefronts": self.total_wavefronts,
                "shared_replays": self.total_replays, "shared_busy_cycles": self.busy_cycles}

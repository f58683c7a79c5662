"""The register banks of one scheduler partition: which bank reads happen in which cycle.

Each bank performs one 32-bit read per cycle. Reads are booked on a short ring of future and
recent cycles: an ALU instruction's operand collector books its reads from a few cycles before
issue (``regfile.collector_lookahead``) onward, a memory instruction books its late operand reads
at the cycle it performs them. A read that finds its bank taken moves to the next cycle.
"""

from __future__ import annotations

RING = 64  # cycles remembered; far more than the longest look-ahead or late read


class RegisterBanks:
    __slots__ = ("tag", "busy")

    def __init__(self):
        self.tag = [-1] * RING  # cycle each ring entry describes
        self.busy = [0] * RING  # low 4 bits: banks read that cycle; high 4: by a late memory read

    def _first_free(self, bank, cycle, collide_from):
        """Earliest cycle >= ``cycle`` with ``bank`` free; also whether a late memory read was
        in the way at or after ``collide_from``."""
        tag, busy = self.tag, self.busy
        bit = 1 << bank
        late = False
        while True:
            i = cycle % RING
            if tag[i] != cycle:
                tag[i] = cycle
                busy[i] = 0
            if not busy[i] & bit:
                return cycle, i, late
            if cycle >= collide_from and busy[i] & (bit << 4):
                late = True
            cycle += 1

    def book(self, bank, cycle, collide_from):
        """Book an operand-collector read; returns (cycle of the read, collided with a late read)."""
        # the hot path of the timing model: _first_free inlined
        tag, busy = self.tag, self.busy
        bit = 1 << bank
        late = False
        while True:
            i = cycle % RING
            if tag[i] != cycle:
                tag[i] = cycle
                busy[i] = bit
                return cycle, late
            b = busy[i]
            if not b & bit:
                busy[i] = b | bit
                return cycle, late
            if cycle >= collide_from and b & (bit << 4):
                late = True
            cycle += 1

    def book_late(self, bank, cycle):
        """Book a memory instruction's late read of a source register."""
        c, i, _ = self._first_free(bank, cycle, cycle)
        self.busy[i] |= (1 << bank) | (1 << (bank + 4))
        return c

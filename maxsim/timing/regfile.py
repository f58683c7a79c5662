"""The register banks of one scheduler partition: which bank reads happen in which cycle.

Each bank performs one 32-bit read per cycle. Reads are booked on a short ring of future and
recent cycles: an ALU instruction's operand collector books its reads from a few cycles before
issue (``regfile.collector_lookahead``) onward, a memory instruction books its late operand reads
at the cycle it performs them. A read that finds its bank taken moves to the next cycle.
"""

from __future__ import annotations

RING = 64  # cycles remembered; far more than the longest look-ahead or late read
LATE = 16  # bit offset of the late-read marks (up to 16 banks)


class RegisterBanks:
    __slots__ = ("tag", "busy")

    def __init__(self):
        self.tag = [-1] * RING  # cycle each ring entry describes
        self.busy = [0] * RING  # bit b: bank b read that cycle; bit LATE+b: by a late memory read

    def book(self, bank, cycle, collide_from):
        """Book an operand-collector read; returns (cycle of the read, collided with a late read)."""
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
            if cycle >= collide_from and b & (bit << LATE):
                late = True
            cycle += 1

    def book_late(self, bank, cycle):
        """Book a memory instruction's late read of a source register (marked as such, so that
        an operand-collector read it pushes back counts as a delayed conflict)."""
        c, _ = self.book(bank, cycle, cycle)
        self.busy[c % RING] |= 1 << (bank + LATE)
        return c

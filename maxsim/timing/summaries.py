"""Summaries of warp memory accesses that the timing model needs, computed for many warps at once.

The functional model calls :func:`summarise` for every executed memory instruction of a group of
warps (addresses of shape (warps, 32)). Shared accesses become the number of shared-memory
wavefronts each warp needs; global and texture accesses become each warp's 32-byte sectors.
"""

from __future__ import annotations

import numpy as np


def shared_wavefronts(addr, active, nbytes, banks=32, bank_width=4):
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
    rows = np.repeat(np.arange(nw), words.shape[1])
    counts = np.zeros((nw, banks), dtype=np.int64)
    np.add.at(counts, (rows, bank.reshape(-1)), first.reshape(-1))
    return counts.max(axis=1)


def sectors(addr, active, nbytes, sector=32):
    """Each warp's distinct ``sector``-byte sectors as sorted byte addresses (int64 array per warp)."""
    nw = addr.shape[0]
    per = max(1, (nbytes + sector - 1) // sector)
    first = addr // sector
    secs = first[:, :, None] + np.arange(per, dtype=np.int64)
    # an access of nbytes may end inside the first sector: keep only sectors it touches
    last = (addr + nbytes - 1) // sector
    valid = (secs <= last[:, :, None]) & active[:, :, None]
    out = []
    for w in range(nw):
        s = secs[w][valid[w]]
        out.append(np.unique(s) * sector)
    return out


def make_summariser(cfg):
    banks, width, sector = cfg.shared.banks, cfg.shared.bank_width, cfg.l1tex.sector

    def summarise(kind, addr, active, nbytes):
        if kind in ("lds", "sts"):
            return shared_wavefronts(addr, active, nbytes, banks, width)
        return sectors(addr, active, nbytes, sector)
    return summarise

"""Summaries of warp memory accesses that the timing model needs, computed for many warps at once.

The functional model calls :func:`summarise` for every executed memory instruction of a group of
warps (addresses of shape (warps, 32)). Shared accesses become the number of shared-memory
wavefronts each warp needs; global and texture accesses become each warp's 32-byte sectors.
"""

from __future__ import annotations

import numpy as np

from .shared_memory import warp_wavefronts


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
            return warp_wavefronts(addr, active, nbytes, banks, width)
        return sectors(addr, active, nbytes, sector)
    summarise.key = ("banks", banks, "bank_width", width, "sector", sector)
    return summarise

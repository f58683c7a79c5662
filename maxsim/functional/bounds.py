"""The bounds check of a memory instruction's lanes, compiled (the functional model's hot path)."""

from __future__ import annotations

import numpy as np

from ..jit import njit


@njit(cache=True)
def lanes_out_of_range(addr, lo, last, align, sel, masked):
    """Whether any lane (of ``sel`` when ``masked``) has a byte address (uint32) below ``lo``,
    above ``last`` or with a bit of ``align`` set: the bounds check of a memory instruction in
    one pass (the caller then finds which lane, and why, for the message)."""
    for i in range(addr.shape[0]):
        if masked and not sel[i]:
            continue
        a = np.int64(addr[i])
        if a < lo or a > last or a & align:
            return True
    return False

"""Integer adds with a carry (IADD .CC / .X, ISCADD .CC) in one compiled pass over the lanes.

The numpy form (:mod:`maxsim.functional.aluops`, :func:`maxsim.functional.operands.set_carry_zero`)
widens both sources to 64 bits and builds the condition code in ~10 array operations; a pass here
does the same lane by lane: the 33-bit sum ``(a << shift) + b + carry in`` (``a << shift`` wrapped
to 32 bits; the carry in a constant, or the condition code's under .X), its low word written to the
destination row and, with .CC, the condition code an integer add leaves (see set_carry_zero).
The numpy form stays the specification (tests/test_functional_carry.py holds the two equal).
"""

from __future__ import annotations

import numpy as np

from ..jit import njit

# the condition-code bits (maxsim.functional.operands: CC_CARRY, CC_ZERO, CC_CARRY2)
_CARRY, _ZERO, _CARRY2 = 1, 2, 16


@njit(cache=True)
def add(regs, dst, a, a_step, b, b_step, shift, cin, use_x, cc, set_cc, chain_zero, mask, masked):
    """Lane i's sum of ``a[i * a_step] << shift`` and ``b[i * b_step]`` (a step of 0: one value
    for every lane) plus ``cin`` (or, ``use_x``, the condition code's carry: 0, 1 or 2) into row
    ``dst`` of ``regs`` (-1: none) and, ``set_cc``, its carry and zero flags into ``cc`` (with
    ``chain_zero``, zero only where the flag was set), on the lanes of ``mask`` (every lane
    unless ``masked``)."""
    n = cc.shape[0]
    for i in range(n):
        if masked and not mask[i]:
            continue
        x = np.uint64((np.uint32(a[i * a_step]) << np.uint32(shift)) & np.uint32(0xFFFFFFFF))
        x += np.uint64(b[i * b_step])
        if use_x:
            before = cc[i]
            x += np.uint64(before & _CARRY) + np.uint64(1 if before & _CARRY2 else 0)
        else:
            x += np.uint64(cin)
        low = np.uint32(x & np.uint64(0xFFFFFFFF))
        if set_cc:
            zero = low == 0
            if chain_zero and not (cc[i] & _ZERO):
                zero = False
            carry = np.int64(x >> np.uint64(32))  # 0, 1 or (a three-input add) 2
            flags = (_CARRY | _CARRY2) if carry > 1 else carry
            if zero:
                flags |= _ZERO
            cc[i] = np.uint32(flags)
        if dst >= 0:
            regs[dst, i] = low


_NO_MASK = np.zeros(1, dtype=bool)


def _lanes(v):
    """A source as :func:`add` reads it: (uint32 array, step 1), or a scalar as (one value, step 0)."""
    v = np.asarray(v, dtype=np.uint32)
    return (v, 1) if v.ndim else (v.reshape(1), 0)


def run_add(g, dst, a, b, shift, cin, use_x, set_cc, chain_zero, m):
    """:func:`add` on group g's registers and condition code, for the lanes of mask ``m`` (None:
    every lane); ``a``, ``b`` arrays of the group's lanes or scalars."""
    (a, a_step), (b, b_step) = _lanes(a), _lanes(b)
    add(g.regs, dst, a, a_step, b, b_step, shift, cin, use_x, g.cc, set_cc, chain_zero,
        _NO_MASK if m is None else m, m is not None)

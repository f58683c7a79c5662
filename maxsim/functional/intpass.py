"""Integer instructions in one compiled pass over the lanes: adds with a carry (IADD .CC / .X,
ISCADD .CC) and XMAD.

The numpy form of the adds (:mod:`maxsim.functional.aluops`, :func:`maxsim.functional.operands.set_carry_zero`)
widens both sources to 64 bits and builds the condition code in ~10 array operations; a pass here
does the same lane by lane: the 33-bit sum ``(a << shift) + b + carry in`` (``a << shift`` wrapped
to 32 bits; the carry in a constant, or the condition code's under .X), its low word written to the
destination row and, with .CC, the condition code an integer add leaves (see set_carry_zero).
XMAD's numpy form (:func:`maxsim.functional.alu.xmad`) takes ~15 array operations; :func:`xmad`
here computes the same per lane.

A source that is one value for every lane (an immediate, a constant) comes as a row of that value
(:func:`_row`, kept for the next use): an index scaled by a step per lane would keep LLVM from
vectorising the loops. The modes are applied without branches in the loops (shifts and masks
chosen before them), so that they vectorise too.
The numpy forms stay the specification (tests/test_functional_intpass.py holds them equal).
"""

from __future__ import annotations

import numpy as np

from ..jit import njit

# the condition-code bits (maxsim.functional.operands: CC_CARRY, CC_ZERO, CC_CARRY2)
_CARRY, _ZERO, _CARRY2 = 1, 2, 16
_W = 0xFFFFFFFF


@njit(cache=True)
def add(regs, dst, a, b, shift, cin, use_x, cc, set_cc, chain_zero, mask, masked):
    """Lane i's sum of ``a[i] << shift`` and ``b[i]`` plus ``cin`` (or, ``use_x``, the condition
    code's carry: 0, 1 or 2) into row ``dst`` of ``regs`` (-1: none) and, ``set_cc``, its carry
    and zero flags into ``cc`` (with ``chain_zero``, zero only where the flag was set), on the
    lanes of ``mask`` (every lane unless ``masked``)."""
    n = cc.shape[0]
    row = regs[max(dst, 0)]
    write = dst >= 0
    take_x = 1 if use_x else 0
    zero_chain = 1 if chain_zero else 0
    for i in range(n):
        if masked and not mask[i]:
            continue
        before = np.int64(cc[i])
        x = ((np.int64(a[i]) << shift) & _W) + np.int64(b[i])
        x += take_x * ((before & _CARRY) + ((before >> 4) & 1)) + (1 - take_x) * cin
        low = x & _W
        if set_cc:
            carry = x >> 32  # 0, 1 or (a three-input add) 2
            zero = (low == 0) & ((zero_chain == 0) | ((before & _ZERO) != 0))
            flags = (_CARRY | _CARRY2) if carry > 1 else carry
            cc[i] = np.uint32(flags | (_ZERO if zero else 0))
        if write:
            row[i] = np.uint32(low)


# XMAD's modes (flag bits of xmad)
PSL, CSFU, CHI, CLO, CBCC, MRG = 1, 2, 4, 8, 16, 32
XMAD_MODES = {"PSL": PSL, "CSFU": CSFU, "CHI": CHI, "CLO": CLO, "CBCC": CBCC, "MRG": MRG}


@njit(cache=True, inline="always")
def xmad_steps(a_h1, b_h1, a_signed, b_signed, modes):
    """XMAD's shifts and masks for its halves and ``modes`` (bits PSL ... MRG): a_shift, b_shift,
    a_sign, b_sign, p_shift, c_shift, c_keep, c_carry, r_keep, r_merge, csfu (:func:`xmad_lane`)."""
    return (16 if a_h1 else 0, 16 if b_h1 else 0,  # the selected half
            0x8000 if a_signed else 0, 0x8000 if b_signed else 0,  # sign extension of a half: (h ^ s) - s
            16 if modes & PSL else 0, 16 if modes & CHI else 0,
            0xFFFF if (modes & CLO) and not (modes & CHI) else _W,
            _W if modes & CBCC else 0,  # (b << 16) added to c
            0xFFFF if modes & MRG else _W,
            _W if modes & MRG else 0,  # (b << 16) merged into the result
            (modes & CSFU) != 0)


@njit(cache=True, inline="always")
def xmad_lane(av, bv, cv, a_shift, b_shift, a_sign, b_sign, p_shift, c_shift, c_keep, c_carry, r_keep,
              r_merge, csfu):
    """One lane of XMAD (32-bit words held in int64, each step wrapped as uint32 arithmetic wraps),
    with the steps of :func:`xmad_steps`."""
    a16 = ((((av >> a_shift) & 0xFFFF) ^ a_sign) - a_sign) & _W
    b16 = ((((bv >> b_shift) & 0xFFFF) ^ b_sign) - b_sign) & _W
    prod = np.int64((np.uint64(a16) * np.uint64(b16)) & np.uint64(_W))
    prod = (prod << p_shift) & _W
    if csfu:
        # c's sign fix-up (see alu.xmad): 2^16 less for each negative half whose other
        # source's other half is not zero
        a_other = (av >> (16 - a_shift)) & 0xFFFF
        b_other = (bv >> (16 - b_shift)) & 0xFFFF
        fix = (a16 >> 31) * (1 if b_other != 0 else 0) + (b16 >> 31) * (1 if a_other != 0 else 0)
        cv = (cv - ((fix << 16) & _W)) & _W
    cv = (cv >> c_shift) & c_keep
    cv = (cv + ((bv << 16) & c_carry)) & _W
    r = (prod + cv) & _W
    return np.uint32((r & r_keep) | ((bv << 16) & r_merge))


@njit(cache=True)
def xmad(regs, dst, a, b, c, a_h1, b_h1, modes, a_signed, b_signed, mask, masked):
    """XMAD of :func:`maxsim.functional.alu.xmad` (``b`` also the unselected second source
    register of .MRG and .CBCC; ``modes`` its bits PSL ... MRG) on the lanes of ``mask`` (every
    lane unless ``masked``), into row ``dst`` of ``regs``. Values are 32-bit words held in int64
    (each step wrapped as uint32 arithmetic wraps)."""
    a_shift, b_shift, a_sign, b_sign, p_shift, c_shift, c_keep, c_carry, r_keep, r_merge, csfu = \
        xmad_steps(a_h1, b_h1, a_signed, b_signed, modes)
    row = regs[dst]
    for i in range(regs.shape[1]):
        if masked and not mask[i]:
            continue
        row[i] = xmad_lane(np.int64(a[i]), np.int64(b[i]), np.int64(c[i]), a_shift, b_shift, a_sign, b_sign,
                           p_shift, c_shift, c_keep, c_carry, r_keep, r_merge, csfu)


_NO_MASK = np.zeros(1, dtype=bool)
ROWS_KEPT = 32  # rows of one value kept for the next use (a simulator setting: ~8 MB at most)
_ROWS = {}  # (value, lanes) -> a read-only row of that value


def _row(v, lanes):
    """A source as the passes read it: the lanes' uint32 array, or one value as a row of it."""
    v = np.asarray(v, dtype=np.uint32)
    if v.ndim:
        return v
    key = (int(v), lanes)
    row = _ROWS.get(key)
    if row is None:
        if len(_ROWS) >= ROWS_KEPT:
            _ROWS.clear()
        row = _ROWS[key] = np.full(lanes, v, dtype=np.uint32)
        row.flags.writeable = False
    return row


def run_add(g, dst, a, b, shift, cin, use_x, set_cc, chain_zero, m):
    """:func:`add` on group g's registers and condition code, for the lanes of mask ``m`` (None:
    every lane); ``a``, ``b`` arrays of the group's lanes or scalars."""
    n = g.cc.shape[0]
    add(g.regs, dst, _row(a, n), _row(b, n), shift, cin, use_x, g.cc, set_cc, chain_zero,
        _NO_MASK if m is None else m, m is not None)


def run_xmad(g, dst, a, b, c, a_h1, b_h1, modes, a_signed, b_signed, m):
    """:func:`xmad` on group g's registers for the lanes of mask ``m`` (None: every lane); ``a``,
    ``b``, ``c`` arrays of the group's lanes or scalars."""
    n = g.regs.shape[1]
    xmad(g.regs, dst, _row(a, n), _row(b, n), _row(c, n), a_h1, b_h1, modes, a_signed, b_signed,
         _NO_MASK if m is None else m, m is not None)

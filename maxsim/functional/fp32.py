"""fp32 arithmetic of FFMA, FMUL and FADD, compiled with numba, many instructions per call.

A straight run of float instructions (an SGEMM k-step is 64 FFMAs) is one call: a small table,
one row per instruction, says which register rows (or constants) it reads and writes and its
modifiers; the loop runs the instructions in program order over every lane of the group.

FFMA is the fused multiply-add with one rounding: LLVM's ``llvm.fma.f32`` intrinsic, which is
IEEE 754 fusedMultiplyAdd (the FMA instruction where the CPU has one, the C library's ``fmaf``
where it does not). :func:`maxsim.functional.alu.fma32` computes the same value with numpy by a
different route (round-to-odd in fp64) and the tests hold the two to bit equality. FMUL and FADD
are single fp32 operations, round-to-nearest-even. ``.FTZ`` flushes subnormal inputs and results
to signed zero, ``.SAT`` clamps to [0, 1] with NaN to 0, as in :mod:`maxsim.functional.alu`.

Numba compiles on first use and caches the machine code on disk (``cache=True``).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from ..jit import intrinsic, njit, types

FFMA, FMUL, FADD = 0, 1, 2
OPCODES = {"FFMA": FFMA, "FMUL": FMUL, "FADD": FADD, "FMUL32I": FMUL, "FADD32I": FADD}
# flag bits of a table row: negate / absolute value of source slot n (registers only; constants
# come with theirs applied), then the instruction's modifiers
NEG = (1, 4, 16)
ABS = (2, 8, 32)
FTZ = 64
SAT = 128
COLUMNS = 6  # opcode, destination row, sources a, b, c (row >= 0, or -1 - constant index), flags

_FLT_MIN = np.float32(1.1754944e-38)


@intrinsic
def _fma(typingctx, a, b, c):
    sig = types.float32(types.float32, types.float32, types.float32)

    def codegen(context, builder, signature, args):
        return builder.fma(args[0], args[1], args[2])
    return sig, codegen


@njit(cache=True)
def _source(fr, consts, src, lane, flags, neg, absval):
    if src < 0:
        return consts[-1 - src]
    x = fr[src, lane]
    if flags & absval:
        x = abs(x)
    if flags & neg:
        x = -x
    return x


@njit(cache=True)
def _ftz(x):
    if abs(x) < _FLT_MIN:
        return np.float32(-0.0) if np.signbit(x) else np.float32(0.0)
    return x


@njit(cache=True)
def _row(fr, cmat, src):
    """Source ``src`` as a row and the step between lanes: a register row (step 1), or a constant
    (``cmat``: the constants as a column) read at every lane (step 0)."""
    if src >= 0:
        return fr[src], 1
    return cmat[-1 - src], 0


@njit(cache=True)
def run(fr, table, consts, mask, masked):
    """Execute the rows of ``table`` in order on the float32 register rows ``fr`` (rows x lanes),
    on the lanes where ``mask`` holds (every lane when ``masked`` is false)."""
    lanes = fr.shape[1]
    cmat = consts.reshape((consts.shape[0], 1))
    for k in range(table.shape[0]):
        op = table[k, 0]
        d = table[k, 1]
        a = table[k, 2]
        b = table[k, 3]
        c = table[k, 4]
        fl = table[k, 5]
        if op == FFMA and fl == 0 and a >= 0 and b >= 0 and c >= 0 and not masked:
            ra = fr[a]
            rb = fr[b]
            rc = fr[c]
            rd = fr[d]
            for lane in range(lanes):
                rd[lane] = _fma(ra[lane], rb[lane], rc[lane])
            continue
        if fl == 0 and not masked:
            # no modifier, every lane: a loop per opcode, a constant read as a row of step 0
            ra, sa = _row(fr, cmat, a)
            rb, sb = _row(fr, cmat, b)
            rd = fr[d]
            if op == FFMA:
                rc, sc = _row(fr, cmat, c)
                for lane in range(lanes):
                    rd[lane] = _fma(ra[lane * sa], rb[lane * sb], rc[lane * sc])
            elif op == FMUL:
                for lane in range(lanes):
                    rd[lane] = ra[lane * sa] * rb[lane * sb]
            else:
                for lane in range(lanes):
                    rd[lane] = ra[lane * sa] + rb[lane * sb]
            continue
        for lane in range(lanes):
            if masked and not mask[lane]:
                continue
            x = _source(fr, consts, a, lane, fl, 1, 2)
            y = _source(fr, consts, b, lane, fl, 4, 8)
            if fl & FTZ:
                x = _ftz(x)
                y = _ftz(y)
            if op == FFMA:
                z = _source(fr, consts, c, lane, fl, 16, 32)
                if fl & FTZ:
                    z = _ftz(z)
                r = _fma(x, y, z)
            elif op == FMUL:
                r = x * y
            else:
                r = x + y
            if fl & FTZ:
                r = _ftz(r)
            if fl & SAT:
                if np.isnan(r) or r < 0:
                    r = np.float32(0.0)
                elif r > 1:
                    r = np.float32(1.0)
            fr[d, lane] = r

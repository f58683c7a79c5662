"""Random instruction words of a form of the encoding table (every field and modifier drawn from
its legal values), for the codec's property tests and the nvdisasm oracle."""

from __future__ import annotations

from maxsim.sass import encoding as E
from maxsim.sass import encoding_table as T


def random_word(c, rnd) -> int:
    """A word of compiled form ``c``; ``rnd(n)`` draws an integer in [0, n)."""
    def pick(seq):
        return seq[rnd(len(seq))]

    form = c.form
    w = c.code
    if form.guarded:
        w |= rnd(16) << 16
    pair = any(f.kind == "next" for f in c.fields)  # CAS: b and b + 1
    for f in c.fields:
        k = f.kind
        if k == "reg" and pair and f.pos == 20:
            w |= rnd(254) << f.pos
        elif k == "reg":
            w |= (rnd(255) if rnd(8) else 255) << f.pos
        elif k == "pred":
            w |= rnd(8) << f.pos
        elif k == "const":
            w |= rnd(1 << 19) << 20
        elif k == "cx":
            w |= rnd(1 << 16) << 20 | rnd(32) << 36 | (rnd(255) if rnd(4) else 255) << 8
        elif k in ("simm", "fimm", "uimm20"):
            w |= rnd(1 << 19) << 20 | rnd(2) << 56
        elif k in ("uimm", "sbset"):
            w |= rnd(1 << f.width) << f.pos
        elif k in ("imm32", "fimm32"):
            w |= rnd(1 << 32) << 20
        elif k == "mem":
            w |= rnd(1 << f.width) << f.pos | (rnd(255) if rnd(4) else 255) << f.reg_pos
        elif k == "sreg":
            w |= pick(sorted(T.SPECIAL_REGISTERS.values())) << 20
        elif k == "target":
            w |= pick([0, 8]) << 20  # the next instruction or the one after (the word sits in slot 0)
        elif k == "dim":
            w |= pick(sorted(T.TEXTURE_DIMENSIONS.values())) << f.pos
        elif k == "sb":
            w |= rnd(6) << f.pos
        elif k == "textype":
            w |= pick(sorted(T.TEXTURE_TYPES[form.opcode])) << f.pos
        elif k == "chan":
            pass  # after the registers (it depends on the second destination)
        for b in (f.neg, f.abs, f.inv, f.h1):
            if b >= 0:
                w |= rnd(2) << b
    if any(f.kind == "chan" for f in c.fields):
        w |= rnd(len(T.CHANNELS[0 if w >> 28 & 0xFF == 255 else 1])) << 50
    for g in form.mods:
        values = [v for _, v in g.names] + ([] if g.required else [g.default])
        w |= pick(values)
    both = E._NEGATE_ONE.get(form.opcode)
    if both is not None and w & both == both:  # both negations: the .PO mode, not in the table
        w &= ~(both & -both)
    if form.opcode == "F2F":  # rounding: integer modes between equal types, RN..RZ between different ones
        same = (w >> 8 & 3) == (w >> 10 & 3)
        w &= ~(0xB << 39)
        w |= pick([0, 8, 9, 10, 11] if same else [0, 1, 2, 3]) << 39
        if same and rnd(2):  # a rounding mode between equal types: .PASS
            w = (w & ~(0xB << 39)) | 1 << 39
        if w >> 10 & 3 != 1:  # the high-half selection of an F16 source (nvdisasm prints none for others)
            w &= ~(1 << 41)
    return w


def reuse_bits(c, rnd) -> int:
    """Reuse flags legal for form ``c``: on register source slots (or its .T/.P modifiers)."""
    if c.form.reuse_mods:
        return pick_reuse_mod(c, rnd)
    bits = 0
    for slot in c.slot_of:
        if slot >= 0 and rnd(2):
            bits |= 1 << slot
    return bits


def pick_reuse_mod(c, rnd) -> int:
    options = [0] + [b for _, b in c.form.reuse_mods]
    return options[rnd(len(options))]


def lone_code(entries) -> bytes:
    """Code with each (word, reuse) entry in slot 0 of its own group (NOPs after it)."""
    nop = E._BY_OPCODE["NOP"][0].code | 7 << 16
    out = []
    for w, reuse in entries:
        out += [(w, 0x7E1, reuse), (nop, 0x7E0, 0), (nop, 0x7E0, 0)]
    return E._pack(out)

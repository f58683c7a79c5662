"""Maxwell machine code <-> maxas text: the instruction codec.

The code of a Maxwell kernel (the ``.text`` section of an sm_50/52/53 cubin) is a sequence of
64-bit little-endian words in groups of four: one control word, then three instructions. The
control word carries each instruction's scheduling control (``WW:R:W:Y:S``) and reuse flags.

- :func:`decode` turns code into :class:`DecodedLine` records: control text as maxas prints it
  (``--:-:-:Y:5``), the guard and the instruction in maxas syntax (``.reuse`` on the operands the
  reuse flags name; branch targets as labels ``TARGET1``, ``TARGET2`` ... numbered in order of
  first reference, as ``maxas.pl -e`` writes them). :func:`decode_text` gives the whole body
  (labels and instruction lines) that :func:`maxsim.sass.parse_text` reads.
- :func:`encode` turns decoded instruction records (a :class:`~maxsim.isa.instruction.Kernel` or
  a sequence of :class:`~maxsim.isa.instruction.Instruction`) back into code, branch targets as
  offsets relative to the next instruction, ending as maxas ends a kernel (a ``BRA`` to itself,
  then NOPs to a whole 64-byte line). :func:`encode_text` does the same from text lines, for the
  opcodes the table knows beyond those the simulator runs.

The encodings are those of :mod:`maxsim.sass.encoding_table` (one table, with its sources). An
instruction with no encoding (an immediate too wide for its field, a modifier the opcode cannot
carry, an operand form the hardware lacks) raises :class:`~maxsim.errors.EncodingError` naming
it; a word the table does not know raises it naming the word's byte offset, the opcode its bits
name (:func:`encoding_table.opcode_of_word`) and what of it the table lacks, never the raw word. Nothing is dropped
silently: every bit of a decoded word is accounted for by the form it matched.
"""

from __future__ import annotations

import math
import re
import struct

import attrs
import numpy as np

from ..errors import EncodingError, SassParseError
from ..isa import instruction as ins
from ..isa.opcodes import OPCODES
from . import encoding_table as T

MASK64 = (1 << 64) - 1
_GUARD_BITS = 0xF << 16
_SR_NAMES = {v: k for k, v in T.SPECIAL_REGISTERS.items()}
_DIM_NAMES = {v: k for k, v in T.TEXTURE_DIMENSIONS.items()}
_DST_FIELDS = ("r0", "p3", "p0", "p48", "p45")
_STORES = frozenset(("STS", "STG", "STL", "ST", "RED"))
# [nvdisasm]: the two negation bits (48, 49) of IADD and ISCADD set together are the mode .PO
_NEGATE_ONE = {"IADD": 3 << 48, "ISCADD": 3 << 48, "VMAD": 3 << 53}  # both negations: .PO


# ---------------------------------------------------------------------------------------------
# control words


def control_bits(c: ins.Control) -> int:
    """The 17 control bits of one instruction."""
    return (c.wait << 11 | (7 if c.read_bar == 0 else c.read_bar - 1) << 8
            | (7 if c.write_bar == 0 else c.write_bar - 1) << 5 | (0 if c.yield_ else 1) << 4 | c.stall)


def control_text(bits: int) -> str:
    """maxas's text of 17 control bits (``WW:R:W:Y:S``)."""
    wait = bits >> 11 & 0x3F
    rb = bits >> 8 & 7
    wb = bits >> 5 & 7
    return "{}:{}:{}:{}:{:x}".format("--" if wait == 0 else f"{wait:02x}", "-" if rb == 7 else rb + 1,
                                     "-" if wb == 7 else wb + 1, "-" if bits & 0x10 else "Y", bits & 0xF)


_CONTROL_TEXT = [None] * (1 << 17)


def _control_text_cached(bits):
    t = _CONTROL_TEXT[bits]
    if t is None:
        t = _CONTROL_TEXT[bits] = control_text(bits)
    return t


def instruction_address(index: int) -> int:
    """Byte address of instruction ``index`` (control words take every fourth slot)."""
    return 32 * (index // 3) + 8 * (index % 3 + 1)


def instruction_index(address: int):
    """Instruction index at byte ``address``, or None if it is a control word's (or misaligned)."""
    if address % 8:
        return None
    slot = (address % 32) // 8
    return None if slot == 0 else 3 * (address // 32) + slot - 1


# ---------------------------------------------------------------------------------------------
# operand fields


def _float_text(bits32: int) -> str:
    """A float immediate that reads back to exactly ``bits32``: the shortest decimal form, INF,
    NAN for the quiet NaN, hex bits otherwise (the parser takes hex on float opcodes as bits)."""
    f = np.uint32(bits32).view(np.float32)
    if math.isinf(f):
        return "-INF" if bits32 >> 31 else "INF"
    if math.isnan(f):
        return "NAN" if bits32 == 0x7FC00000 else f"0x{bits32:x}"
    text = np.format_float_positional(f, unique=True, trim="0") if abs(f) >= 1e-4 or f == 0 else \
        np.format_float_scientific(f, unique=True, trim="0")
    if "." not in text and "e" not in text:
        text += ".0"
    text = text.replace("e+", "e")
    if text.endswith("."):
        text += "0"
    if np.float32(float(text)).view(np.uint32) != bits32:
        return f"0x{bits32:x}"
    return text


def _double_text(bits64: int) -> str:
    """A double immediate that reads back to exactly ``bits64`` (INF, NAN, or the shortest decimal)."""
    f = float(np.uint64(bits64).view(np.float64))
    if math.isinf(f):
        return "-INF" if f < 0 else "INF"
    if math.isnan(f):
        return "NAN"
    text = repr(f).replace("e+", "e")
    return text if "." in text or "e" in text else text + ".0"


def _float_bits(op: ins.Operand) -> int:
    """The fp32 bits an immediate of a float opcode stands for (as the executor reads it: hex
    integers are bit patterns, decimal ones numbers)."""
    if op.kind == ins.FIMM:
        return int(np.float32(op.fvalue).view(np.uint32))
    if op.text.lstrip("-")[:2].lower() == "0x":
        return op.value & 0xFFFFFFFF
    return int(np.float32(op.value).view(np.uint32))


def _hex(v: int) -> str:
    return f"-0x{-v:x}" if v < 0 else f"0x{v:x}"


def _reg(r: int) -> str:
    return "RZ" if r == 255 else f"R{r}"


def _pred(p: int) -> str:
    return "PT" if p == 7 else f"P{p}"


@attrs.frozen
class _Field:
    """One operand's place in the word: a kind, its bit positions, and its modifier bits."""
    kind: str  # reg pred const cx simm fimm uimm imm32 fimm32 mem sreg target kw dim sb zero
    pos: int = 0
    width: int = 0
    reg_pos: int = 8  # mem: base register
    scale: int = 1  # mem: offset unit
    neg: int = -1
    abs: int = -1
    inv: int = -1  # '~' (registers) / '!' (predicates)
    h1: int = -1
    word: str = ""  # kw: the keyword
    is_dst: bool = False

    @property
    def bits(self) -> int:
        """Every bit this field owns."""
        b = 0
        k = self.kind
        if k in ("reg",):
            b = 0xFF << self.pos
        elif k == "pred":
            b = 7 << self.pos
        elif k == "const":
            b = 0x7FFFF << 20
        elif k == "cx":
            b = 0xFFFF << 20 | 0x1F << 36 | 0xFF << 8
        elif k in ("simm", "fimm", "uimm20", "dimm"):
            b = 0x7FFFF << 20 | 1 << 56
        elif k in ("uimm", "dim", "sb", "sbset", "textype", "chan", "cc"):
            b = ((1 << self.width) - 1) << self.pos
        elif k in ("imm32", "fimm32"):
            b = 0xFFFFFFFF << 20
        elif k == "mem":
            b = ((1 << self.width) - 1) << self.pos | 0xFF << self.reg_pos
        elif k == "sreg":
            b = 0xFF << 20
        elif k == "target":
            b = 0xFFFFFF << 20
        for m in (self.neg, self.abs, self.inv, self.h1):
            if m >= 0:
                b |= 1 << m
        return b


_SPEC_RE = re.compile(r"(r|p|u|m)(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:x(\d+))?$")


def _field(spec: str, is_dst: bool) -> _Field:
    head, *extra = spec.split()
    kw = {}
    for e in extra:
        key = {"n": "neg", "a": "abs", "~": "inv", "!": "inv", "h": "h1"}[e[0]]
        kw[key] = int(e[1:])
    if head == "c20":
        return _Field("const", **kw, is_dst=is_dst)
    if head == "cx":
        return _Field("cx")
    if head == "i20":
        return _Field("simm")  # the sign is bit 56; a '-' bit would be a second sign: left fixed
    if head == "f20":
        return _Field("fimm")
    if head == "u20s56":
        return _Field("uimm20")
    if head == "d20":
        return _Field("dimm")
    if head == "next20":
        return _Field("next", 20)
    if head == "rz":
        return _Field("rz")
    if head == "textype":
        return _Field("textype", 53, 4)
    if head == "chan":
        return _Field("chan", 50, 3)
    if head == "i32":
        return _Field("imm32", **kw)
    if head == "f32":
        return _Field("fimm32", **kw)
    if head == "sr20":
        return _Field("sreg")
    if head == "t20":
        return _Field("target")
    if head == "zero":
        return _Field("zero")
    if head == "dim28":
        return _Field("dim", 28, 3)
    if head == "sb26":
        return _Field("sb", 26, 3)
    if head == "sbset":
        return _Field("sbset", 0, 6)
    if head == "cc0":
        return _Field("cc", 0, 5)
    if head.startswith("kw:"):
        return _Field("kw", word=head[3:])
    m = _SPEC_RE.match(head)
    if not m:
        raise ValueError(f"bad operand field spec {spec!r}")
    letter, a, b, c, x = m.groups()
    if letter == "r":
        return _Field("reg", int(a), 8, **kw, is_dst=is_dst)
    if letter == "p":
        return _Field("pred", int(a), 3, **kw, is_dst=is_dst)
    if letter == "u":
        return _Field("uimm", int(a), int(b))
    # m<reg>.<pos>.<width>[x<scale>]
    return _Field("mem", int(b), int(c), reg_pos=int(a), scale=int(x or 1))


@attrs.frozen
class _Compiled:
    form: T.Form
    fields: tuple
    n_dst: int
    mask: int  # bits fixed by the form
    code: int  # their value
    name: str  # opcode plus fixed modifiers
    groups: tuple  # (mask, {bits: name}, default, print the default's name)
    slot_of: tuple  # per operand: its reuse slot (bit of the reuse field), or -1


def _compile(form: T.Form) -> _Compiled:
    n_dst = 0  # leading destination operands (the opcode table's n_dst where the form is the same)
    if form.opcode not in _STORES:
        for s in form.operands:
            if s.split()[0] in _DST_FIELDS:
                n_dst += 1
            else:
                break
    spec = OPCODES.get(form.opcode)
    if spec is not None and len(spec.signature) == len(form.operands) and spec.n_dst != n_dst:
        raise ValueError(f"{form.opcode}: {n_dst} destinations in the encoding table, {spec.n_dst} in the opcode table")
    fields = tuple(_field(s, n < n_dst) for n, s in enumerate(form.operands))
    var = 0
    for part in [f.bits for f in fields] + [g.mask for g in form.mods] + [_GUARD_BITS]:
        if var & part:
            raise ValueError(f"{form.opcode} 0x{form.code:016x}: fields overlap in bits 0x{var & part:x}")
        var |= part
    mask = MASK64 & ~var
    if form.code & ~mask:
        raise ValueError(f"{form.opcode}: base code 0x{form.code:016x} overlaps its fields")
    groups = []
    for g in form.mods:
        rev = {}
        for name, bits in g.names:
            rev.setdefault(bits, name)
        groups.append((g.mask, rev, g.default, g.show or g.required))
    # reuse slots [nvdisasm, maxas MaxAs.pm]: the operand read through bits 8-15 is slot 0, the
    # second source (bits 20-27, or 39-46 where the third source is a constant) slot 1, the third
    # source (bits 39-46) slot 2; only the ALU-type opcodes have them
    slot_of = []
    c39 = any(a.kind == "reg" and a.pos == 39 and b.kind == "const" for a, b in zip(fields, fields[1:]))
    for n, f in enumerate(fields):
        slot = -1
        if form.reuse and n >= n_dst and f.kind == "reg":
            slot = {8: 0, 20: 1, 39: 1 if c39 else 2}.get(f.pos, -1)
        slot_of.append(slot)
    if form.reuse_slots:
        slot_of = list(form.reuse_slots)
    return _Compiled(form, fields, n_dst, mask, form.code, ".".join((form.opcode,) + form.fixed_mods),
                     tuple(groups), tuple(slot_of))


COMPILED = tuple(_compile(f) for f in T.FORMS)
_BY_OPCODE = {}
for _c in COMPILED:
    _BY_OPCODE.setdefault(_c.form.opcode, []).append(_c)


def _dispatch_table():
    """Candidate forms by the word's top 16 bits (most specific first)."""
    table = [[] for _ in range(1 << 16)]
    for c in sorted(COMPILED, key=lambda c: -bin(c.mask).count("1")):
        m16, c16 = c.mask >> 48, c.code >> 48
        free = [b for b in range(16) if not m16 >> b & 1]
        for n in range(1 << len(free)):
            key = c16
            for i, b in enumerate(free):
                if n >> i & 1:
                    key |= 1 << b
            table[key].append(c)
    return [tuple(x) for x in table]


_DISPATCH = _dispatch_table()

OPCODES_ENCODED = tuple(sorted(_BY_OPCODE))  # every opcode the table encodes and decodes


# ---------------------------------------------------------------------------------------------
# decoding


@attrs.frozen(slots=True)
class DecodedLine:
    """One decoded instruction."""
    index: int
    address: int  # byte offset in the code
    word: int
    control: str  # "--:-:-:Y:5"
    guard: str  # "", "@P0", "@!P3"
    text: str  # "FFMA R0, R1.reuse, R2, R3" (no ';')
    labels: tuple = ()  # labels that name this instruction
    target: int = -1  # branch target instruction index
    target_label: str = ""

    @property
    def line(self) -> str:
        """The instruction line in maxas layout: control, guard column, text and ';'."""
        return f"{self.control} {self.guard:>4} {self.text};"


def _sext(v: int, bits: int) -> int:
    return v - (1 << bits) if v >> (bits - 1) & 1 else v


def _operand_text(f: _Field, w: int, reuse: bool) -> str:
    k = f.kind
    if k == "reg":
        s = _reg(w >> f.pos & 0xFF)
        if f.h1 >= 0 and w >> f.h1 & 1:
            s += ".H1"
        if f.abs >= 0 and w >> f.abs & 1:
            s = f"|{s}|"
        if reuse:
            s += ".reuse"  # after |..|, as nvdisasm writes |R9|.reuse
        if f.neg >= 0 and w >> f.neg & 1:
            s = "-" + s
        if f.inv >= 0 and w >> f.inv & 1:
            s = "~" + s
        return s
    if k == "pred":
        s = _pred(w >> f.pos & 7)
        return "!" + s if f.inv >= 0 and w >> f.inv & 1 else s
    if k == "const":
        s = f"c[0x{w >> 34 & 0x1F:x}][0x{(w >> 20 & 0x3FFF) << 2:x}]"
        if f.h1 >= 0 and w >> f.h1 & 1:
            s += ".H1"
        if f.abs >= 0 and w >> f.abs & 1:
            s = f"|{s}|"
        if f.neg >= 0 and w >> f.neg & 1:
            s = "-" + s
        if f.inv >= 0 and w >> f.inv & 1:
            s = "~" + s  # (LOP, POPC, FLO: the maxas parser reads '~' on registers only)
        return s
    if k == "simm":
        v = w >> 20 & 0x7FFFF
        return _hex(v - (1 << 19) if w >> 56 & 1 else v)
    if k == "fimm":
        return _float_text((w >> 56 & 1) << 31 | (w >> 20 & 0x7FFFF) << 12)
    if k == "uimm20":
        return f"0x{(w >> 56 & 1) << 19 | w >> 20 & 0x7FFFF:x}"
    if k == "dimm":
        return _double_text((w >> 56 & 1) << 63 | (w >> 20 & 0x7FFFF) << 44)
    if k == "next":
        r = w >> f.pos & 0xFF
        if r >= 254:
            raise KeyError(f"register after R{r} (CAS takes a register pair)")
        return f"R{r + 1}"
    if k == "rz":
        return "RZ"
    if k == "chan":
        names = T.CHANNELS[0 if w >> 28 & 0xFF == 255 else 1]
        v = w >> 50 & 7
        if v >= len(names):
            raise KeyError(f"channel set {v}")
        return names[v]
    if k == "uimm":
        return f"0x{w >> f.pos & ((1 << f.width) - 1):x}"
    if k == "imm32":
        return f"0x{w >> 20 & 0xFFFFFFFF:x}"
    if k == "fimm32":
        return _float_text(w >> 20 & 0xFFFFFFFF)
    if k == "mem":
        r = w >> f.reg_pos & 0xFF
        raw = w >> f.pos & ((1 << f.width) - 1)
        if r == 255:  # an absolute address: the offset is unsigned [nvdisasm]
            return f"[0x{raw * f.scale:x}]" if raw else "[RZ]"
        off = _sext(raw, f.width) * f.scale
        if off == 0:
            return f"[{_reg(r)}]"
        return f"[{_reg(r)}+0x{off:x}]" if off > 0 else f"[{_reg(r)}-0x{-off:x}]"
    if k == "cx":
        bank = w >> 36 & 0x1F
        r = w >> 8 & 0xFF
        if r == 255:  # an absolute offset: unsigned (as memory addresses)
            return f"c[0x{bank:x}][0x{w >> 20 & 0xFFFF:x}]"
        off = _sext(w >> 20 & 0xFFFF, 16)
        if off == 0:
            return f"c[0x{bank:x}][{_reg(r)}]"
        return f"c[0x{bank:x}][{_reg(r)}{'+' if off >= 0 else '-'}0x{abs(off):x}]"
    if k == "sreg":
        n = w >> 20 & 0xFF
        name = _SR_NAMES.get(n)
        if name is None:
            raise KeyError(f"special register number 0x{n:x}")
        return name
    if k == "kw":
        return f.word
    if k == "cc":
        return "CC." + T.CC_TESTS[w & 0x1F]
    if k == "dim":
        n = w >> f.pos & 7
        if n not in _DIM_NAMES:
            raise KeyError(f"texture dimension {n}")
        return _DIM_NAMES[n]
    if k == "sb":
        n = w >> f.pos & 7
        if n > 5:
            raise KeyError(f"scoreboard SB{n}")
        return f"SB{n}"
    if k == "zero":
        return "0x0"
    if k == "sbset":
        m = w & 0x3F
        return "{" + ",".join(str(n) for n in range(5, -1, -1) if m >> n & 1) + "}"
    raise AssertionError(k)


def _bit_list(bits: int) -> str:
    """Bit positions as ``39-44, 50``."""
    pos = [n for n in range(64) if bits >> n & 1]
    runs = []
    for n in pos:
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in runs)


def _known_unmodelled_form(name: str, w: int):
    """What a word of a known opcode is, when its form is one the model leaves out by choice:
    VMNMX on sub-word sources or merging into c [nvdisasm 12.8 on ptxas's sm_52 code for PTX vmax /
    vmin with selectors: 0x3b3c7f9020670409 = VMNMX.UD.U8.U8.MX R9, R4.B1, R6.B2, RZ (selectors in
    bits 36-38 and 28-30: 0-3 a byte, 4 / 5 a half, 6 the register); 0x3b1405e06067040b =
    VMNMX.UD.U32.U32.MX.MRG_8B0 (bits 51-53 below 4: a merge)]."""
    if name != "VMNMX":
        return None
    if (w >> 36) & 7 != 6 or (w >> 28) & 7 != 6:
        return "with a byte or half-word source (.B0-.B3, .H0, .H1: PTX vmin / vmax with a source selector)"
    if (w >> 51) & 7 < 4:
        return "merging into c (.MRG_16H0/H1, .MRG_8B0-B3: PTX vmin / vmax with a destination selector)"
    return None


def _unknown_form(w: int) -> str:
    """What a word the table cannot decode is: the opcode its bits name (the opcode field of
    :data:`encoding_table.OPCODE_FIELD`), and what of it the table lacks: the whole opcode (with
    what it is, when the simulator names it), or the form (the bits where the nearest form of that
    opcode differs)."""
    name = T.opcode_of_word(w)
    if name is None:
        return "the opcode bits (51-63) of this instruction name no Maxwell instruction"
    forms = _BY_OPCODE.get(name, ())
    if not forms:
        from ..isa.opcodes import NOT_MODELLED
        what = NOT_MODELLED.get(name)
        return f"{name} is not in the Maxwell encoding table" + (f" ({what}; not modelled)" if what else
                                                                 " (an opcode the model does not know)")
    known = _known_unmodelled_form(name, w)
    if known:
        return f"{name} {known} is not modelled"
    best = min(forms, key=lambda c: bin((w ^ c.code) & c.mask).count("1"))
    diff = (w ^ best.code) & best.mask
    what = (f"bits {_bit_list(diff)} differ from its nearest {name} form" if diff else
            "a field holds a value the table does not know")
    return f"{name} in a form the Maxwell encoding table does not know ({what})"


def _decode_word(w: int, reuse: int, address: int):
    """(text without guard, guard, target address or None) of one instruction word."""
    for c in _DISPATCH[w >> 48]:
        if w & c.mask == c.code:
            break
    else:
        raise EncodingError(f"code+0x{address:x}: {_unknown_form(w)}")
    form = c.form
    parts = [c.name]
    for gmask, rev, default, show in c.groups:
        v = w & gmask
        if v == default and not show:
            continue
        name = rev.get(v)
        if name is None:
            lo = (gmask & -gmask).bit_length() - 1
            hi = gmask.bit_length() - 1
            known = ", ".join(n for n in rev.values())
            what = _known_unmodelled_form(form.opcode, w)
            if what:
                raise EncodingError(f"code+0x{address:x}: {form.opcode} {what} is not modelled")
            raise EncodingError(f"code+0x{address:x}: {form.opcode} with a modifier the encoding table does not "
                                f"know: value {v >> lo} in bits {lo}-{hi} (known: {known})")
        parts.append(name)
    if form.reuse_mods:
        for name, bits in form.reuse_mods:
            if reuse & bits:
                parts.append(name)
                reuse &= ~bits
    ops = []
    target = None
    for f, slot in zip(c.fields, c.slot_of):
        if f.kind == "textype":
            t = T.TEXTURE_TYPES[form.opcode].get(w >> 53 & 0xF)
            if t is None:
                raise EncodingError(f"code+0x{address:x}: {form.opcode} word 0x{w:016x} has texture type "
                                    f"{w >> 53 & 0xF}, which the table does not know")
            parts[1:1] = t[0]
            ops.append(t[1])
            continue
        if f.kind == "target":
            target = address + 8 + _sext(w >> 20 & 0xFFFFFF, 24)
            ops.append(None)
            continue
        r = slot >= 0 and reuse >> slot & 1
        if r:
            if f.kind != "reg":
                raise EncodingError(f"code+0x{address:x}: reuse flag on operand slot {slot} of {form.opcode}, "
                                    f"which is not a register")
            reuse &= ~(1 << slot)
        try:
            ops.append(_operand_text(f, w, r))
        except KeyError as e:
            raise EncodingError(f"code+0x{address:x}: {form.opcode} word 0x{w:016x}: unknown {e.args[0]}") from None
    if reuse:
        raise EncodingError(f"code+0x{address:x}: reuse flags 0x{reuse:x} of {form.opcode} name no register operand")
    both = _NEGATE_ONE.get(form.opcode)
    if both is not None and w & both == both:
        raise EncodingError(f"code+0x{address:x}: {form.opcode} word 0x{w:016x} negates both sources "
                            f"(IADD.PO), which the table does not know")
    guard = ""
    if form.guarded:
        p = w >> 16 & 7
        if w >> 19 & 1:
            guard = "@!" + _pred(p)
        elif p != 7:
            guard = "@" + _pred(p)
    elif w & _GUARD_BITS:
        raise EncodingError(f"code+0x{address:x}: {form.opcode} takes no guard but word 0x{w:016x} has "
                            f"guard bits")
    if form.opcode in ("TLDS", "TEXS") and len(ops) == 7 and ops[5] == "1D" and ops[3] == "RZ":
        del ops[3]  # a 1D fetch has one coordinate: written without the unused RZ, as nvdisasm and maxas do
    return ".".join(parts), ops, guard, target


def decode(code: bytes, *, start: int = 0, stop_at_self_branch: bool = True) -> list:
    """Decode Maxwell code (groups of a control word and three instructions) into
    :class:`DecodedLine` records, from byte offset ``start`` (a multiple of 32).

    Decoding ends at the end of the code or, as maxas's extractor does, at an unguarded ``BRA``
    to itself with nothing but NOPs after it (the end of every kernel ptxas or maxas writes; the
    NOPs are padding). A ``BRA`` to itself with code after it is an instruction like any other."""
    if start % 32:
        raise EncodingError(f"decode start 0x{start:x} is not at a control word (a multiple of 32 bytes)")
    n_words = (len(code) - start) // 8
    if (len(code) - start) % 32:
        raise EncodingError(f"code of {len(code) - start} bytes is not a whole number of 32-byte groups "
                            f"(a control word and three instructions)")
    words = struct.unpack_from(f"<{n_words}Q", code, start)
    nop, nop_mask = _BY_OPCODE["NOP"][0].code, _BY_OPCODE["NOP"][0].mask
    last = 0  # word number of the last instruction that is not a NOP
    for n in range(n_words - 1, -1, -1):
        if n % 4 and words[n] & nop_mask != nop:
            last = n
            break
    decoded = []  # (address, word, control, head, ops, guard, target)
    for g in range(0, n_words, 4):
        cw = words[g]
        if cw >> 63:
            raise EncodingError(f"code+0x{8 * g:x}: control word 0x{cw:016x} has bit 63 set")
        done = False
        for s in range(3):
            bits = cw >> (21 * s) & 0x1FFFFF
            address = 8 * (g + s + 1)  # from ``start``
            w = words[g + s + 1]
            head, ops, guard, target = _decode_word(w, bits >> 17, address)
            to_self = target == address or (target == address - 8 and address % 32 == 8)  # (ptxas: the group)
            if stop_at_self_branch and to_self and head.startswith("BRA") and not guard and g + s + 1 >= last:
                done = True
                break
            decoded.append((address, w, bits & 0x1FFFF, head, ops, guard, target))
        if done:
            break
    # branch targets -> labels, numbered in order of first reference (as maxas's extractor does)
    labels = {}
    for n, (address, w, ctrl, head, ops, guard, target) in enumerate(decoded):
        if target is not None:
            if target % 32 == 0:  # a group's control word (as ptxas addresses a group's first instruction)
                target += 8
                decoded[n] = (address, w, ctrl, head, ops, guard, target)
            idx = instruction_index(target)
            if idx is None or target < 0:
                raise EncodingError(f"code+0x{address:x}: {head} targets 0x{target:x}, which is not an "
                                    f"instruction")
            if target not in labels:
                labels[target] = f"TARGET{len(labels) + 1}"
    out = []
    for n, (address, w, ctrl, head, ops, guard, target) in enumerate(decoded):
        if target is not None:
            ops = [labels[target] if o is None else o for o in ops]
        text = head + (" " + ", ".join(ops) if ops else "")
        here = (labels[address],) if address in labels else ()
        out.append(DecodedLine(n, address, w, _control_text_cached(ctrl), guard, text, here,
                               -1 if target is None else instruction_index(target),
                               "" if target is None else labels[target]))
    return out


def format_lines(lines) -> str:
    """The maxas text body of decoded lines: labels and instruction lines (a label that names the
    end of the code comes last)."""
    out = []
    for d in lines:
        out.extend(f"{name}:" for name in d.labels)
        out.append(d.line)
    ends = {}  # labels past the last decoded instruction (the tail BRA or beyond)
    for d in lines:
        if d.target >= len(lines):
            ends.setdefault(d.target, d.target_label)
    out.extend(f"{ends[t]}:" for t in sorted(ends))
    return "\n".join(out) + "\n"


def decode_text(code: bytes, *, start: int = 0) -> str:
    """The maxas text form of the code's instructions (labels and instruction lines)."""
    return format_lines(decode(code, start=start))


# ---------------------------------------------------------------------------------------------
# encoding


def _where(instr) -> str:
    return f"{instr.filename}:{instr.line}" if instr.line else instr.filename


def _error(instr, message):
    return EncodingError(f"{_where(instr)}: {instr.full_opcode}: {message}")


def _match_mods(c: _Compiled, mods: tuple):
    """(bits, reuse bits) of the written modifiers for form ``c``, or a reason string."""
    toks = list(mods)
    for m in c.form.fixed_mods:
        if m not in toks:
            return f"needs the modifier .{m}"
        toks.remove(m)
    reuse = 0
    for name, bits in c.form.reuse_mods:
        if name in toks:
            toks.remove(name)
            reuse |= bits
    bits = 0
    for g in c.form.mods:
        # the earliest written name of the group (the longest at that place): PSETP.OR.AND is
        # OR for the first group, AND for the second
        best = None
        for name, v in g.names:
            parts = name.split(".")
            n = len(parts)
            for i in range(len(toks) - n + 1):
                if toks[i:i + n] == parts:
                    if best is None or (i, -n) < (best[0], -best[1]):
                        best = (i, n, v)
                    break
        found = best is not None
        if found:
            i, n, v = best
            del toks[i:i + n]
            bits |= v
        if not found:
            if g.required:
                return f"needs one of {', '.join('.' + x for x, _ in g.names)}"
            bits |= g.default
    if toks:
        return f"modifier .{toks[0]} has no encoding in this form"
    return bits, reuse


_KIND_ACCEPTS = {
    "reg": (ins.REG,), "pred": (ins.PRED,), "const": (ins.CONST,), "cx": (ins.CONST,),
    "simm": (ins.IMM,), "uimm20": (ins.IMM,), "fimm": (ins.FIMM, ins.IMM), "dimm": (ins.FIMM, ins.IMM),
    "next": (ins.REG,), "rz": (ins.REG,), "textype": (ins.WORD,), "chan": (ins.WORD,), "uimm": (ins.IMM,),
    "imm32": (ins.IMM, ins.FIMM),
    "fimm32": (ins.FIMM, ins.IMM), "mem": (ins.MEM,), "sreg": (ins.SREG,), "target": (ins.LABEL,),
    "kw": (ins.WORD,), "dim": (ins.WORD,), "sb": (ins.WORD,), "sbset": (ins.WORD,), "zero": (ins.IMM,),
    "cc": (ins.WORD,),
}


def _encode_operand(f: _Field, op: ins.Operand, n: int, target_offset):
    """Bits of operand number ``n`` (1-based in messages), or a reason string."""
    k = f.kind
    w = 0
    for attr, bit, what in (("neg", f.neg, "'-'"), ("abs", f.abs, "'|..|'"), ("h1", f.h1, ".H1")):
        if getattr(op, attr):
            if bit < 0:
                return f"{what} on operand {n} has no encoding"
            w |= 1 << bit
    if op.not_:
        if f.inv < 0:
            return f"'{'!' if op.kind == ins.PRED else '~'}' on operand {n} has no encoding"
        w |= 1 << f.inv
    if k == "reg":
        return w | op.reg << f.pos
    if k == "pred":
        return w | op.reg << f.pos
    if k == "const":
        if op.value % 4 or op.value > 0xFFFF or op.bank > 0x1F:
            return f"constant c[0x{op.bank:x}][0x{op.value:x}] is not a 4-byte aligned offset below 0x10000"
        return w | (op.value >> 2) << 20 | op.bank << 34
    if k == "cx":
        reg = op.reg if op.reg >= 0 else ins.RZ
        lo, hi = (0, 0xFFFF) if reg == ins.RZ else (-0x8000, 0x7FFF)
        if not lo <= op.value <= hi or op.bank > 0x1F:
            return f"constant c[0x{op.bank:x}][{_hex(op.value)}] does not fit LDC's bank and 16-bit offset fields"
        return w | (op.value & 0xFFFF) << 20 | op.bank << 36 | reg << 8
    if k == "simm":
        u = op.value & 0xFFFFFFFF
        s = u - (1 << 32) if u >> 31 else u
        if not -(1 << 19) <= s < (1 << 19):
            return f"immediate {op.text or _hex(op.value)} does not fit the 20-bit signed immediate field"
        return w | (s & 0x7FFFF) << 20 | (1 << 56 if s < 0 else 0)
    if k == "fimm":
        b = _float_bits(op)
        if b & 0xFFF:
            return (f"float immediate {op.text or op.fvalue!r} needs more than the 19 high bits the "
                    f"immediate field holds (the low 12 bits of its fp32 pattern must be zero)")
        return w | (b >> 12 & 0x7FFFF) << 20 | (b >> 31) << 56
    if k == "dimm":
        b = int(np.float64(op.fvalue if op.kind == ins.FIMM else op.value).view(np.uint64))
        if b & ((1 << 44) - 1):
            return (f"double immediate {op.text or op.fvalue!r} needs more than the 19 high bits the "
                    f"immediate field holds (the low 44 bits of its fp64 pattern must be zero)")
        return w | (b >> 44 & 0x7FFFF) << 20 | (b >> 63) << 56
    if k == "next":
        return w if op.kind == ins.REG and op.reg != ins.RZ else f"operand {n} must be a register"
    if k == "rz":
        return w if op.kind == ins.REG and op.reg == ins.RZ else f"operand {n} must be RZ"
    if k == "uimm20":
        if not 0 <= op.value < (1 << 20):
            return f"immediate {op.text or _hex(op.value)} does not fit the 20-bit unsigned immediate field"
        return w | (op.value & 0x7FFFF) << 20 | (op.value >> 19) << 56
    if k == "uimm" or k == "zero":
        lim = 1 if k == "zero" else 1 << f.width
        if not 0 <= op.value < lim:
            return f"immediate {op.text or _hex(op.value)} does not fit the {f.width}-bit unsigned field" \
                if k == "uimm" else f"operand {n} must be 0x0"
        return w | op.value << f.pos
    if k == "imm32":
        v = int(np.float32(op.fvalue).view(np.uint32)) if op.kind == ins.FIMM else op.value & 0xFFFFFFFF
        return w | v << 20
    if k == "fimm32":
        return w | _float_bits(op) << 20
    if k == "mem":
        if op.value % f.scale:
            return f"address offset {_hex(op.value)} is not a multiple of {f.scale}"
        off = op.value // f.scale
        if op.reg == ins.RZ:  # an absolute address: unsigned
            if not 0 <= off < (1 << f.width):
                return f"absolute address {_hex(op.value)} does not fit the {f.width}-bit unsigned field"
            return w | off << f.pos | op.reg << f.reg_pos
        u = off & 0xFFFFFFFF
        s = u - (1 << 32) if u >> 31 else u
        if not -(1 << (f.width - 1)) <= s < (1 << (f.width - 1)):
            return f"address offset {_hex(op.value)} does not fit the {f.width}-bit signed field"
        return w | (s & ((1 << f.width) - 1)) << f.pos | op.reg << f.reg_pos
    if k == "sreg":
        n_ = T.SPECIAL_REGISTERS.get(op.name)
        if n_ is None:
            return f"special register {op.name} has no S2R number on Maxwell"
        return w | n_ << 20
    if k == "target":
        return w | (target_offset & 0xFFFFFF) << 20
    if k == "kw":
        return w if op.name == f.word else f"operand {n} must be {f.word}"
    if k == "cc":
        test = T.CC_TESTS.index(op.name[3:]) if op.name[3:] in T.CC_TESTS else -1
        return f"unknown condition-code test {op.name}" if test < 0 or test == 15 else w | test
    if k == "dim":
        d = T.TEXTURE_DIMENSIONS.get(op.name)
        return f"unknown texture dimension {op.name}" if d is None else w | d << f.pos
    if k == "sb":
        return w | int(op.name[2:]) << f.pos
    if k == "textype":
        return w  # (with the modifiers, in encode_instruction)
    if k == "chan":
        return w  # (it depends on the second destination: in encode_instruction)
    if k == "sbset":
        m = re.fullmatch(r"\{([0-5](?:,[0-5])*)?\}", op.name.replace(" ", ""))
        if not m:
            return f"expected a scoreboard set such as {{5,0}}, got {op.name}"
        return w | sum(1 << int(x) for x in (m.group(1) or "").split(",") if x)
    raise AssertionError(k)


def _reuse_field(c: _Compiled, operands: tuple):
    """The reuse field of the operands' ``.reuse`` suffixes in form ``c``, or a reason string."""
    mask = 0
    for n, (op, slot) in enumerate(zip(operands, c.slot_of), start=1):
        if op.reuse:
            if slot < 0:
                return f".reuse on operand {n} has no encoding (no reuse slot)"
            mask |= 1 << slot
    return mask


def _full_operands(instr: ins.Instruction) -> ins.Instruction:
    """The instruction with every field of its form written: a 1D TLDS / TEXS (maxas's TLDS
    grammar and nvdisasm's text leave out the second coordinate) gets RZ there."""
    if instr.opcode in ("TLDS", "TEXS") and len(instr.operands) == 6:
        ops = instr.operands
        return attrs.evolve(instr, operands=ops[:3] + (ins.Operand(ins.REG, reg=ins.RZ),) + ops[3:])
    return instr


def encode_instruction(instr: ins.Instruction, target_offset: int = 0):
    """(word, 17 control bits, 4 reuse bits) of one instruction; ``target_offset``: a branch's
    byte offset from the next instruction."""
    forms = _BY_OPCODE.get(instr.opcode)
    if not forms:
        raise _error(instr, f"no Maxwell encoding is known for {instr.opcode}")
    instr = _full_operands(instr)
    reason = None
    for c in forms:
        if len(c.fields) != len(instr.operands):
            reason = reason or f"takes {len(c.fields)} operands here, got {len(instr.operands)}"
            continue
        if any(op.kind not in _KIND_ACCEPTS[f.kind] for f, op in zip(c.fields, instr.operands)):
            if reason is None or reason.startswith("takes"):
                kinds = ", ".join(op.kind for op in instr.operands)
                reason = f"no form takes operands ({kinds})"
            continue
        mods = instr.mods
        textype = None
        if any(f.kind == "textype" for f in c.fields):  # the LOD modifiers go with the dimension
            mods = tuple(x for x in mods if x not in T.TEXTURE_TYPE_MODS)
            want = (tuple(sorted(x for x in instr.mods if x in T.TEXTURE_TYPE_MODS)),
                    instr.operands[[f.kind for f in c.fields].index("textype")].name)
            textype = next((v for v, (ms, dim) in T.TEXTURE_TYPES[c.form.opcode].items()
                            if (tuple(sorted(ms)), dim) == want), None)
            if textype is None:
                reason = f"no texture type is {'.'.join(want[0]) or 'plain'} {want[1]}"
                continue
        m = _match_mods(c, mods)
        if isinstance(m, str):
            reason = m
            continue
        w = c.code | m[0] | (0 if textype is None else textype << 53)
        bad = None
        for n, (f, op) in enumerate(zip(c.fields, instr.operands), start=1):
            b = _encode_operand(f, op, n, target_offset)
            if isinstance(b, str):
                bad = b
                break
            w |= b
        if bad is None:
            for n, f in enumerate(c.fields):
                if f.kind == "next" and instr.operands[n].reg != instr.operands[n - 1].reg + 1:
                    bad = f"operand {n + 1} must be the register after operand {n} (a register pair)"
                if f.kind == "chan":
                    names = T.CHANNELS[0 if instr.operands[0].reg == ins.RZ else 1]
                    if instr.operands[n].name not in names:
                        bad = (f"channels {instr.operands[n].name} with "
                               f"{'one destination' if names is T.CHANNELS[0] else 'two destinations'}: "
                               f"expected one of {', '.join(names)}")
                    else:
                        w |= names.index(instr.operands[n].name) << f.pos
        if bad is not None:
            reason = bad
            continue
        both = _NEGATE_ONE.get(instr.opcode)
        if both is not None and w & both == both:
            reason = "cannot negate both sources (those two bits together mean .PO)"
            continue
        if c.form.guarded:
            w |= (instr.pred | (8 if instr.pred_neg else 0)) << 16
        elif instr.pred != ins.PT or instr.pred_neg:
            reason = "takes no guard"
            continue
        reuse = _reuse_field(c, instr.operands)
        if isinstance(reuse, str):
            reason = reuse
            continue
        if c.form.reuse_mods:
            if reuse:
                reason = ".reuse has no encoding here (the reuse field holds the .T / .P modifiers)"
                continue
            reuse = m[1]
        if instr.control.stall > 15 or instr.control.wait > 0x3F:
            raise _error(instr, "control field out of range")
        return w, control_bits(instr.control), reuse
    raise _error(instr, reason)


def modifier_bits(instr: ins.Instruction):
    """The bits an instruction's modifiers select (defaults filled in), or None if no form takes
    them: two spellings that give the same bits are the same instruction (``F2I`` and
    ``F2I.S32.F32``, ``ISETP.LT.AND`` and ``ISETP.AND.LT``)."""
    instr = _full_operands(instr)
    for c in _BY_OPCODE.get(instr.opcode, ()):
        if len(c.fields) == len(instr.operands) and all(
                op.kind in _KIND_ACCEPTS[f.kind] for f, op in zip(c.fields, instr.operands)):
            mods, lod = instr.mods, ()
            if any(f.kind == "textype" for f in c.fields):  # LOD modifiers: part of the texture type
                mods = tuple(x for x in mods if x not in T.TEXTURE_TYPE_MODS)
                lod = tuple(sorted(x for x in instr.mods if x in T.TEXTURE_TYPE_MODS))
            m = _match_mods(c, mods)
            if not isinstance(m, str):
                return (m, lod) if lod else m
    return None


def _pack(entries) -> bytes:
    """Words of (word, control, reuse) entries, a control word before every three."""
    out = []
    for g in range(0, len(entries), 3):
        grp = entries[g:g + 3]
        cw = 0
        for s, (w, ctrl, reuse) in enumerate(grp):
            cw |= (ctrl | reuse << T.REUSE_SHIFT) << (T.CONTROL_BITS * s)
        out.append(cw)
        out.extend(w for w, _, _ in grp)
    return struct.pack(f"<{len(out)}Q", *out)


def _tail(n: int, group_targets: bool = False):
    """maxas's end of a kernel after ``n`` instructions: BRA to itself, NOPs to a 64-byte line."""
    back = -16 if group_targets and n % 3 == 0 else -8
    bra = (_BY_OPCODE["BRA"][0].code | 7 << 16 | (back & 0xFFFFFF) << 20, T.TAIL_BRA_CONTROL, 0)
    nop = (_BY_OPCODE["NOP"][0].code | 7 << 16, T.TAIL_NOP_CONTROL, 0)
    out = [bra]
    count = n + 1
    while (count + (count + 2) // 3) % 8:  # instruction slots plus control words
        out.append(nop)
        count += 1
    return out


def encode(instructions, *, tail: bool = True, group_targets: bool = False) -> bytes:
    """Encode decoded instructions (a Kernel or a sequence of Instruction records, in order) into
    Maxwell code; with ``tail``, end it as maxas does (BRA to itself, NOP padding).

    A branch targets its instruction's address, as maxas encodes it; with ``group_targets`` a
    target that is the first instruction of a group is addressed by the group's control word
    instead, as ptxas does (both run the same; the option reproduces ptxas's words)."""
    instrs = tuple(instructions.instructions if isinstance(instructions, ins.Kernel) else instructions)
    entries = []
    for n, i in enumerate(instrs):
        off = 0
        if i.target >= 0:
            to = instruction_address(i.target)
            if group_targets and i.target % 3 == 0:
                to -= 8
            off = to - instruction_address(n) - 8
        entries.append(encode_instruction(i, off))
    if tail:
        entries += _tail(len(entries), group_targets)
    while len(entries) % 3:
        entries.append((_BY_OPCODE["NOP"][0].code | 7 << 16, T.TAIL_NOP_CONTROL, 0))
    return _pack(entries)


# ---------------------------------------------------------------------------------------------
# text lines (any opcode of the table, also those the simulator does not run)

_CTRL_RE = re.compile(r"\s*([0-9a-fA-F]{2}|--):([1-6]|-):([1-6]|-):([yY]|-):([0-9a-fA-F])\s+(.*)$")
_GUARD_RE = re.compile(r"@(!?)P([0-6T])\s+(.*)$")
_LABEL_RE = re.compile(r"\s*([A-Za-z_]\w*)\s*:\s*$")


def parse_lines(text: str, filename: str = "<string>") -> tuple:
    """Instruction records of maxas text lines (labels, control field, guard, instruction) for
    any opcode of the encoding table; operands are read as the parser reads them. Only what the
    codec needs is filled in (no register sets or timing class)."""
    from .parser import _Line, _parse_operand  # the operand syntax is the parser's

    raw, labels = [], {}
    for number, src in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        s = src.strip()
        if not s or s.startswith("#") or s.startswith("//"):
            continue
        m = _LABEL_RE.match(s)
        if m:
            labels[m.group(1)] = len(raw)
            continue
        raw.append((number, src))
    out = []
    for index, (number, src) in enumerate(raw):
        line = _Line(src, number, filename)
        m = _CTRL_RE.match(src)
        if not m:
            raise line.error("expected a control field WW:R:W:Y:S", 0)
        ww, rb, wb, y, st, rest = m.groups()
        control = ins.Control(0 if ww == "--" else int(ww, 16), 0 if rb == "-" else int(rb),
                              0 if wb == "-" else int(wb), y in "yY", int(st, 16))
        pred, pred_neg = ins.PT, False
        g = _GUARD_RE.match(rest)
        if g:
            pred_neg = g.group(1) == "!"
            pred = ins.PT if g.group(2) == "T" else int(g.group(2))
            rest = g.group(3)
        body = rest.split(";")[0].strip()
        head, _, tail = body.partition(" ")
        opcode, *mods = head.split(".")
        col = src.index(body)
        operands = tuple(_lenient_operand(t.strip(), line, col, _parse_operand) for t in _split_operands(tail))
        target, target_label = -1, ""
        for op in operands:
            if op.kind == ins.LABEL:
                if op.name not in labels:
                    raise line.error(f"undefined label {op.name!r}", col)
                target, target_label = labels[op.name], op.name
        out.append(ins.Instruction(index=index, opcode=opcode, mods=tuple(mods), operands=operands,
                                   control=control, pred=pred, pred_neg=pred_neg, line=number,
                                   filename=filename, target=target, target_label=target_label))
    return tuple(out)


_CONST_TOKEN = re.compile(r"(~)?(-)?(\|)?c\[0x([0-9a-f]+)\]\[0x([0-9a-f]+)\](\|)?(\.H1)?", re.ASCII)
_CONST_REG_TOKEN = re.compile(r"c\[0x([0-9a-f]+)\]\[(R\d+|RZ)(?:([+-])0x([0-9a-f]+))?\]", re.ASCII)


def _lenient_operand(tok, line, col, parse):
    """The parser's operand, plus what only the codec reads: a scoreboard set ``{5,0}`` and an
    inverted constant ``~c[..][..]`` (LOP, POPC, FLO)."""
    if tok.startswith("{") or tok in T.DIMENSION_WORDS or tok in T.CHANNELS[0] or tok in T.CHANNELS[1]:
        return ins.Operand(ins.WORD, name=tok)
    m = _CONST_REG_TOKEN.fullmatch(tok)
    if m:  # LDC's c[bank][register + offset]
        bank, reg, sign, off = m.groups()
        value = int(off or "0", 16) * (-1 if sign == "-" else 1)
        return ins.Operand(ins.CONST, bank=int(bank, 16), value=value, reg=255 if reg == "RZ" else int(reg[1:]))
    m = _CONST_TOKEN.fullmatch(tok)
    if m:  # any of the 32 banks the field holds (the simulator's parser takes banks 0x0-0x11)
        inv, neg, bar, bank, off, bar2, h1 = m.groups()
        if bool(bar) == bool(bar2):
            return ins.Operand(ins.CONST, bank=int(bank, 16), value=int(off, 16), neg=bool(neg), abs=bool(bar),
                               not_=bool(inv), h1=bool(h1))
    return parse(tok, line, col)


def _split_operands(tail: str) -> list:
    """Operands separated by commas (a scoreboard set ``{5,0}`` is one)."""
    out, depth, cur = [], 0, ""
    for ch in tail:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    if cur.strip():
        out.append(cur)
    return out


def encode_text(text: str, *, filename: str = "<string>", tail: bool = True, group_targets: bool = False) -> bytes:
    """Encode maxas text lines (see :func:`parse_lines`)."""
    try:
        return encode(parse_lines(text, filename), tail=tail, group_targets=group_targets)
    except SassParseError as e:
        raise EncodingError(str(e)) from None

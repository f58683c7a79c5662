"""Parse Maxwell SASS in the maxas text format into a decoded :class:`~maxsim.isa.Kernel`.

The format (header comments, control field ``WW:R:W:Y:S``, predicate column, instruction text ending
in ``;``, labels) is described in docs of the maxas project; see docs/writing-kernels.md. Every problem is reported as
a :class:`~maxsim.errors.SassParseError` naming file, line and column.
"""

from __future__ import annotations

import re
import warnings

from ..errors import SassParseError, SourceWarning
from ..isa import instruction as ins
from ..isa.opcodes import (CHANNEL_SETS, conversion_types, unit_of, vmad_types, KIND_LETTER, NOT_MODELLED, OPCODES, PREDICATE_FORMS, REQUIRED_MODIFIERS,
                           SPECIAL_REGISTERS, TEXTURE_DIMS, TEXTURE_OPS, WORDS, match_modifiers, texture_channels,
                           operand_widths, vector_alignment, vector_width)

# Header values that the hardware bounds (Maxwell: 48 KB static shared memory per CTA, 16 barriers)
_HEADER_RANGE = {"InsCnt": (0, 1 << 31), "RegCnt": (1, ins.NUM_REGS), "SharedSize": (0, 48 * 1024),
                 "BarCnt": (0, 16),
                 # bytes of local memory per thread: at most 512 KB (CUDA C Programming Guide, technical specifications
                 # per compute capability, "Maximum amount of local memory per thread")
                 "LocalSize": (0, 512 * 1024)}

# Immediates with a narrower range than 32 bits: (opcode, operand position) -> (lo, hi, what)
_IMM_RANGE = {("BAR", 0): (0, 15, "barrier"), ("ISCADD", 3): (0, 31, "ISCADD shift"),
              ("ISCADD32I", 3): (0, 31, "ISCADD32I shift"),
              # LOP3's 8-bit truth table (operand 5 in the form with a predicate result)
              ("LOP3", 4): (0, 255, "LOP3 lookup table"), ("LOP3", 5): (0, 255, "LOP3 lookup table"),
              # the texture slot field ([maxas-grammar] TLDS: i36w20, 20 bits)
              **{(op, 3): (0, 0xFFFFF, "texture slot") for op in ("TLD", "TEX", "TLDS", "TEXS")}}

_CTRL_RE = re.compile(r"([0-9a-fA-F]{2}|--):([1-6]|-):([1-6]|-):([yY]|-):([0-9a-fA-F])$", re.ASCII)
_LABEL_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*:\s*$", re.ASCII)
_IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$", re.ASCII)
_REG_RE = re.compile(r"R(\d+|Z)$", re.ASCII)
_PRED_RE = re.compile(r"P([0-6]|T)$", re.ASCII)
_INT_RE = re.compile(r"-?(0[xX][0-9a-fA-F]+|\d+)$", re.ASCII)
# ([maxas-grammar] $f20 / $f20w32 also take a leading '+')
_FLOAT_RE = re.compile(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?$|[-+]?INF$|-?NAN$|[-+]?QNAN$", re.ASCII)
_CONST_RE = re.compile(r"c\[(0[xX][0-9a-fA-F]+|\d+)\]\s*\[(0[xX][0-9a-fA-F]+|\d+)\]$", re.ASCII)
# a register-indexed constant, c[bank][Ra], c[bank][Ra+imm], c[bank][Ra-imm] ([maxas-grammar] $ldc)
_ICONST_RE = re.compile(r"c\[(0[xX][0-9a-fA-F]+|\d+)\]\[(R\d+|RZ)(?:\+?(-?(?:0[xX][0-9a-fA-F]+|\d+)))?\]$", re.ASCII)
# maxas writes the carry-out of an add on its destination: IADD R72.CC, ... ([maxas-grammar] $r0cc)
_DST_CC_RE = re.compile(r"([A-Z][A-Z0-9]*(?:\.[A-Z0-9_]+)*)(\s+)(R\d+|RZ)\.CC(?=\s*,)", re.ASCII)
_CC_MODELLED = ("IADD", "IADD32I", "IADD3", "ISCADD", "LEA", "FSET", "ISET", "IMNMX")  # opcodes whose condition-code output maxsim models
_HEADER_RE = re.compile(r"#\s*(Kernel|Arch|InsCnt|RegCnt|SharedSize|BarCnt|LocalSize)\s*:\s*(\S+)\s*$", re.ASCII)
_PARAMS_RE = re.compile(r"#\s*Params\((\d+)\)\s*:\s*$", re.ASCII)
_PARAM_RE = re.compile(r"#\s*(\d+):(0[xX][0-9a-fA-F]+|\d+):(\d+):(\d+)(?:\s+[A-Za-z_]\w*)?\s*$", re.ASCII)  # name: maxsim.host


def parse_file(path) -> ins.Kernel:
    """Read and parse a SASS file."""
    path = str(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise SassParseError(f"cannot read file: {e.strerror}", path, 0, 0) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise SassParseError("file is not UTF-8 text", path, line, 1) from None
    return parse_text(text, filename=path)


class _Line:
    __slots__ = ("text", "number", "filename")

    def __init__(self, text, number, filename):
        self.text = text
        self.number = number
        self.filename = filename

    def error(self, message, column):
        return SassParseError(message, self.filename, self.number, column + 1)


def _int(text):
    neg = text.startswith("-")
    body = text[1:] if neg else text
    v = int(body, 16) if body[:2].lower() == "0x" else int(body, 10)
    return -v if neg else v


def parse_text(text: str, filename: str = "<string>") -> ins.Kernel:
    """Parse SASS text (LF or CRLF line endings) into a Kernel."""
    header = {}
    params = []
    n_params = None
    raw = []  # (kind, payload, line) where kind in ("label", "ins")
    if text.startswith("\ufeff"):  # a byte-order mark, as Windows editors write
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    params_line = 0
    for number, src in enumerate(text.split("\n"), start=1):
        line = _Line(src, number, filename)
        stripped = src.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            m = _HEADER_RE.match(stripped)
            if m:
                key, value = m.groups()
                if key in ("Kernel", "Arch"):
                    header[key] = value
                else:
                    try:
                        header[key] = _int(value)
                    except ValueError:
                        raise line.error(f"header {key} expects a number, got {value!r}",
                                         src.index(value)) from None
                    lo, hi = _HEADER_RANGE[key]
                    if not lo <= header[key] <= hi:
                        raise line.error(f"header {key} {value} is out of range {lo}..{hi}", src.index(value))
                continue
            m = _PARAMS_RE.match(stripped)
            if m:
                n_params = int(m.group(1))
                params_line = number
                continue
            m = _PARAM_RE.match(stripped)
            if m:
                o, a, s, al = m.groups()
                params.append(ins.Param(int(o), _int(a), int(s), int(al)))
            continue  # other comments are ignored
        m = _LABEL_RE.match(stripped)
        if m:
            raw.append(("label", m.group(1), line))
            continue
        raw.append(("ins", None, line))

    if n_params is not None and n_params != len(params):
        raise SassParseError(f"header announces Params({n_params}) but lists {len(params)}", filename,
                             params_line, 1)

    reg_cnt = header.get("RegCnt", ins.NUM_REGS)

    labels = []
    label_lines = {}
    pending = []
    for kind, payload, line in raw:
        if kind == "label":
            if payload in label_lines:
                raise line.error(f"label {payload!r} already defined on line {label_lines[payload]}", 0)
            label_lines[payload] = line.number
            labels.append((payload, len(pending)))
        else:
            pending.append(line)

    label_map = dict(labels)
    instructions = tuple(_parse_instruction(line, i, reg_cnt, label_map) for i, line in enumerate(pending))
    return ins.Kernel(
        name=header.get("Kernel", "kernel"),
        arch=header.get("Arch", "sm_52"),
        ins_cnt=header.get("InsCnt", max(0, len(instructions) - 1)),
        reg_cnt=reg_cnt,
        shared_size=header.get("SharedSize", 0),
        bar_cnt=header.get("BarCnt", 0),
        local_size=header.get("LocalSize", 0),
        params=tuple(params),
        instructions=instructions,
        labels=tuple(labels),
        filename=filename,
    )


def parse_instruction(text: str, filename: str = "<string>", line: int = 0, index: int = 0,
                      reg_cnt: int = ins.NUM_REGS, labels=None) -> ins.Instruction:
    """Parse one instruction line (control field, guard, text, ';'); ``labels`` maps the label
    names a branch may name to instruction indices."""
    return _parse_instruction(_Line(text, line, filename), index, reg_cnt, dict(labels or {}))


def _parse_instruction(line: _Line, index: int, reg_cnt: int, label_map: dict) -> ins.Instruction:
    src = line.text
    pos = len(src) - len(src.lstrip())
    # control field
    end = src.find(" ", pos)
    tab = src.find("\t", pos)
    if tab != -1 and (end == -1 or tab < end):
        end = tab
    if end == -1:
        end = len(src)
    ctrl_text = src[pos:end]
    m = _CTRL_RE.match(ctrl_text)
    if not m:
        raise line.error(f"expected a control field WW:R:W:Y:S (e.g. --:-:1:-:6), got {ctrl_text!r}", pos)
    ww, rb, wb, y, s = m.groups()
    control = ins.Control(
        wait=0 if ww == "--" else int(ww, 16),
        read_bar=0 if rb == "-" else int(rb),
        write_bar=0 if wb == "-" else int(wb),
        yield_=(y in "yY"),
        stall=int(s, 16),
    )
    if control.wait > 0x3F:
        raise line.error(f"wait mask 0x{control.wait:02x} names a barrier above 6 (mask must be <= 0x3f)", pos)
    pos = end
    while pos < len(src) and src[pos] in " \t":
        pos += 1
    # predicate
    pred, pred_neg = ins.PT, False
    if src.startswith("@", pos):
        j = pos + 1
        if src.startswith("!", j):
            pred_neg = True
            j += 1
        k = j
        while k < len(src) and (src[k].isalnum()):
            k += 1
        pm = _PRED_RE.match(src[j:k])
        if not pm:
            raise line.error(f"expected a predicate P0..P6 or PT after '@', got {src[j:k]!r}", j)
        pred = ins.PT if pm.group(1) == "T" else int(pm.group(1))
        pos = k
        while pos < len(src) and src[pos] in " \t":
            pos += 1
    m = _DST_CC_RE.match(src, pos)
    if m:  # IADD R72.CC, ... is IADD.CC R72, ...: the same text length, so columns stay
        op0 = m.group(1)
        if op0.split(".")[0] not in _CC_MODELLED:
            raise line.error(f"the condition-code output of {op0.split('.')[0]} ({m.group(3)}.CC) is not modelled "
                             f"(only IADD's, IADD32I's, ISCADD's, LEA's carry, FSET's, ISET's and IMNMX's flags)", m.start(3))
        cc = "" if "CC" in op0.split(".")[1:] else ".CC"
        src = src[:pos] + op0 + cc + m.group(2) + m.group(3) + src[m.end():] + " " * (3 - len(cc))
        line = _Line(src, line.number, line.filename)
    # instruction body up to ';'
    semi = src.find(";", pos)
    if semi == -1:
        raise line.error("expected ';' at the end of the instruction", len(src.rstrip()))
    rest = src[semi + 1:].strip()
    if rest and not rest.startswith("#") and not rest.startswith("//"):
        # maxas reads everything after the ';' as a comment (MaxAs.pm, processAsmLine): accepted,
        # with a warning
        col = semi + 2 + (len(src[semi + 1:]) - len(src[semi + 1:].lstrip()))
        warnings.warn(SourceWarning(f"{line.filename}:{line.number}:{col}: text after ';' ignored, as maxas "
                                    f"ignores it: {rest!r}"), stacklevel=2)
    body = src[pos:semi]
    # opcode and modifiers
    k = pos
    while k < semi and not src[k].isspace():
        k += 1
    op_text = src[pos:k]
    if not op_text:
        raise line.error("expected an opcode", pos)
    parts = op_text.split(".")
    opcode, mods = parts[0], tuple(parts[1:])
    spec = OPCODES.get(opcode)
    if opcode in PREDICATE_FORMS and re.match(r"\s*!?P([0-6]|T)\s*,", src[k:semi]):
        spec = PREDICATE_FORMS[opcode]
    if spec is None:
        if opcode in NOT_MODELLED:
            raise line.error(f"opcode {opcode} is not modelled: {NOT_MODELLED[opcode]}", pos)
        raise line.error(f"unknown opcode {opcode!r}", pos)
    if any(not m for m in mods):
        raise line.error(f"empty modifier in {op_text!r}", pos)
    bad = match_modifiers(spec, mods)
    if bad is not None:
        at = [n for n, x in enumerate(mods) if x == bad]
        n = at[1] if len(at) > 1 and any(bad in grp for grp in spec.mod_groups) else at[0]
        col = pos + len(opcode) + sum(len(x) + 1 for x in mods[:n]) + 1
        what = "is repeated in" if n != at[0] else "is not accepted by"
        raise line.error(f"modifier .{bad} {what} {opcode} (in {op_text!r})", col)
    if opcode in ("SSY", "PBK", "PCNT") and not (pred == ins.PT and not pred_neg):
        # [maxas-grammar]: these take no guard (they push a token for every active lane)
        raise line.error(f"{opcode} cannot be guarded", pos)
    need = REQUIRED_MODIFIERS.get(opcode)
    if need and not any(m in need for m in mods):
        raise line.error(f"{opcode} needs one of the modifiers {', '.join('.' + x for x in sorted(need))} "
                         f"(in {op_text!r})", pos)
    if opcode == "BAR" and "RED" in mods and not {"POPC", "AND", "OR"} & set(mods):
        raise line.error(f"BAR.RED needs its reduction, one of .POPC, .AND, .OR (in {op_text!r})", pos)
    if opcode == "F2F":
        dst_type, src_type = conversion_types(opcode, mods)
        bad = next((x for x in mods if x in ("ROUND", "FLOOR", "CEIL", "TRUNC", "PASS")), None)
        if bad and dst_type != src_type:
            raise line.error(f"F2F.{bad} needs equal types (F2F.F32.F32.{bad}): a conversion between "
                             f"types rounds with .RN, .RM, .RP or .RZ (in {op_text!r})", pos)
    # operands
    operands = []
    columns = []
    if body[k - pos:].strip():
        start = k
        pieces = src[k:semi].split(",")
        if opcode == "DEPBAR" and src[k:semi].strip().startswith("{"):  # DEPBAR {5,4}: one operand
            pieces = [src[k:semi]]
        for piece in pieces:
            lead = len(piece) - len(piece.lstrip())
            tok = piece.strip()
            col = start + lead
            if not tok:
                raise line.error("empty operand", col)
            operands.append(_parse_operand(tok, line, col, WORDS.get(opcode, ())))
            columns.append(col)
            start += len(piece) + 1
    if opcode == "B2R" and len(operands) == 2 and operands[1].kind == ins.PRED and operands[1].reg == ins.PT \
            and not operands[1].not_:
        # B2R.RESULT R, PT is B2R.RESULT R (no predicate result), as nvdisasm writes it
        operands.pop()
        columns.pop()
    if opcode in ("TLD", "TEX") and len(operands) == 5 and "B" not in mods:
        # the texture by its slot: no handle register (RZ in its field)
        operands.insert(2, ins.Operand(ins.REG, reg=ins.RZ))
        columns.insert(2, columns[2])
    if opcode in ("TLDS", "TEXS") and len(operands) == 7:
        raise line.error(f"{opcode} with two coordinate registers (a 2D texture) is not modelled: "
                         f"1D textures only", columns[3])
    sig = spec.signature
    need_min = len(sig) if spec.min_operands < 0 else spec.min_operands
    if not need_min <= len(operands) <= len(sig):
        raise line.error(f"{opcode} takes {len(sig)} operand(s), got {len(operands)}", k)
    width = vector_width(opcode, mods, tuple(operands))
    widths = operand_widths(opcode, mods, len(operands), width)
    for n, (op, allowed, col) in enumerate(zip(operands, sig, columns)):
        width = widths[n]
        letters = allowed.split("|")
        letter = KIND_LETTER[op.kind]
        ok = letter in letters or (letter == "R" and "V" in letters)
        if not ok:
            names = {"R": "a register", "V": "a register", "P": "a predicate", "I": "an immediate",
                     "F": "a float immediate", "C": "a constant c[..][..]", "S": "a special register",
                     "L": "a label", "M": "a memory address [R+imm]", "W": "a keyword such as 1D"}
            want = " or ".join(dict.fromkeys(names[x] for x in letters))
            raise line.error(f"operand {n + 1} of {opcode} must be {want}", col)
        if op.kind in (ins.REG, ins.MEM) and op.reg != ins.RZ:
            top = op.reg + (width - 1 if "V" in letters else 0)
            if op.reg >= reg_cnt or top >= reg_cnt:
                raise line.error(f"register R{top} is out of range: the kernel declares RegCnt {reg_cnt} (R0-R{reg_cnt - 1})", col)
            align = vector_alignment(width)
            if "V" in letters and op.reg % align:
                raise line.error(f"vector register group R{op.reg} must be aligned to {align} registers", col)
        if op.kind == ins.PRED and op.not_ and n < spec.n_dst:
            raise line.error(f"destination predicate of {opcode} cannot be negated", col)
        if opcode == "VMAD" and n >= 1:
            vt = vmad_types(mods)
            if op.h1 and (n == 3 or vt[n - 1][1:] != "16"):
                raise line.error(f"the half selector .H1 of VMAD selects the high half of a 16-bit a or b "
                                 f"(VMAD.U16.U16 d, a.H1, b.H1, c)", col)
            if op.abs or (op.neg and n == 2):
                raise line.error(f"VMAD negates the product (-a) or c (-c): operand {n + 1} takes no '-' or '|..|'",
                                 col)
            if n == 3 and op.neg and operands[1].neg:
                raise line.error("VMAD negates either the product (-a) or c, not both (PTX vmad; both bits "
                                 "are the .PO mode, which is not modelled)", col)
        if op.kind in (ins.REG, ins.CONST) and op.h1 and opcode == "VMAD":
            pass
        elif op.kind in (ins.REG, ins.CONST) and op.h1 and opcode == "F2F":
            if not (op.kind == ins.REG and n == 1 and conversion_types(opcode, mods)[1] == "F16"):
                raise line.error(f"the half selector .H1 of F2F selects the high half of an F16 source register "
                                 f"(F2F.<type>.F16 d, Ra.H1)", col)
        elif op.kind in (ins.REG, ins.CONST) and op.h1 and (opcode != "XMAD" or n < spec.n_dst):
            raise line.error(f"the half selector .H1 of {opcode} is not modelled (XMAD sources only)", col)
        if op.kind == ins.CONST and op.reg >= 0:
            if opcode != "LDC":
                raise line.error(f"a register-indexed constant is read by LDC only, not by {opcode}", col)
            if op.reg != ins.RZ and op.reg >= reg_cnt:
                raise line.error(f"register R{op.reg} is out of range: the kernel declares RegCnt {reg_cnt} "
                                 f"(R0-R{reg_cnt - 1})", col)
        if op.kind == ins.LABEL and op.name not in label_map:
            raise line.error(f"undefined label {op.name!r}", col)
        if op.kind == ins.SREG and op.name not in SPECIAL_REGISTERS:
            raise line.error(f"unknown special register {op.name!r}", col)
        if op.kind == ins.WORD and op.name not in WORDS.get(opcode, ()) and not (opcode == "DEPBAR" and op.name.startswith("{")):
            raise line.error(f"unknown keyword {op.name!r} (expected {' or '.join(WORDS.get(opcode, ('no keyword',)))})", col)
        if op.kind == ins.WORD and op.name in TEXTURE_DIMS and op.name != "1D":
            raise line.error(f"{opcode} of a {op.name} texture is not modelled: 1D textures only", col)
        lim = _IMM_RANGE.get((opcode, n))
        if lim and op.kind == ins.IMM and not lim[0] <= op.value <= lim[1]:
            raise line.error(f"{lim[2]} {op.text} is out of range {lim[0]}..{lim[1]}", col)
    if opcode in TEXTURE_OPS:
        _check_texture(opcode, mods, operands, columns, line, reg_cnt)
    return _decode(spec, opcode, mods, tuple(operands), control, pred, pred_neg, line, index, label_map, widths)


def _check_texture(opcode, mods, operands, columns, line, reg_cnt):
    """What a texture fetch by slot needs: a channel set (TLDS/TEXS) its destinations can hold; no
    second source register (LOD, array index) without .B."""
    if opcode in ("TLD", "TEX"):
        if "B" not in mods and operands[2].reg != ins.RZ:
            raise line.error(f"{opcode} without .B takes the texture from its slot: a second source register "
                             f"(LOD or array index) is not modelled for 1D fetches (write RZ)", columns[2])
        return
    chans = operands[5]
    if chans.kind != ins.WORD or chans.name not in CHANNEL_SETS:
        raise line.error(f"operand 6 of {opcode} must be a channel set ({', '.join(CHANNEL_SETS)})", columns[5])
    if operands[3].kind == ins.WORD:
        raise line.error(f"operand 4 of {opcode} must be the texture slot (an immediate)", columns[3])
    n = len(CHANNEL_SETS[chans.name])
    if n <= 2 and operands[0].reg != ins.RZ:
        raise line.error(f"{opcode} with channels {chans.name} writes no second destination: the first operand "
                         f"must be RZ (the hardware reads a second destination as a wider channel set)", columns[0])
    for reg, _ in texture_channels(operands):
        if reg != ins.RZ and reg >= reg_cnt:
            raise line.error(f"register R{reg} is out of range: the kernel declares RegCnt {reg_cnt} "
                             f"(R0-R{reg_cnt - 1})", columns[1 if reg < (operands[1].reg + 2) else 0])


def _parse_operand(tok: str, line: _Line, col: int, words=()) -> ins.Operand:
    if tok in words:
        return ins.Operand(ins.WORD, name=tok)
    if tok.startswith("{") and "SB0" in words:  # DEPBAR's scoreboard set
        if not re.fullmatch(r"\{\s*([0-5]\s*(,\s*[0-5]\s*)*)?\}", tok):
            raise line.error(f"expected a scoreboard set such as {{5,0}}, got {tok!r}", col)
        return ins.Operand(ins.WORD, name="{" + ",".join(x.strip() for x in tok.strip("{}").split(",") if x.strip()) + "}")
    neg = absval = notp = bitnot = False
    t = tok
    if t.startswith("!"):
        notp = True
        t = t[1:]
    if t.startswith("-") and not _INT_RE.match(t) and not _FLOAT_RE.match(t):
        neg = True
        t = t[1:]
    if t.startswith("~"):
        if notp or neg:
            raise line.error(f"cannot combine '~' with '!' or '-' in {tok!r}", col)
        bitnot = True
        t = t[1:]
    if len(t) >= 2 and t.startswith("|") and t.endswith("|"):
        absval = True
        t = t[1:-1]
    elif t.startswith("|") and t.endswith("|.reuse"):  # nvdisasm writes |R9|.reuse for |R9.reuse|
        absval = True
        t = t[1:-len("|.reuse")] + ".reuse"
    if t.startswith("[") :
        if not t.endswith("]"):
            raise line.error(f"memory operand {tok!r} is missing ']'", col)
        inner = t[1:-1].replace(" ", "").replace("+-", "-")  # nvdisasm writes [R4+-0x4]
        reg, off, off_text = ins.RZ, 0, ""
        if inner.startswith("R"):
            plus = max(inner.find("+"), inner.find("-"))
            rtext = inner if plus == -1 else inner[:plus]
            m = _REG_RE.match(rtext)
            if not m:
                raise line.error(f"bad base register in memory operand {tok!r}", col)
            reg = _reg_number(m, line, col)
            if plus != -1:
                off_text = inner[plus + 1:] if inner[plus] == "+" else inner[plus:]
        else:
            off_text = inner
        if off_text:
            if not _INT_RE.match(off_text):
                raise line.error(f"bad offset {off_text!r} in memory operand {tok!r}", col)
            off = _int(off_text)
            if not -(1 << 31) <= off < (1 << 32):
                raise line.error(f"offset {off_text} in memory operand {tok!r} does not fit in 32 bits", col)
        return ins.Operand(ins.MEM, reg=reg, value=off, text=off_text)
    base, *suffixes = t.split(".")
    m = _REG_RE.match(base)
    if m and not notp:
        reg = _reg_number(m, line, col)
        h1 = reuse = False
        for sfx in suffixes:
            if sfx == "reuse":
                reuse = True
            elif sfx == "H1":
                h1 = True
            elif sfx == "H0":
                pass
            elif sfx == "INV":  # maxas's LOP spelling of ~R ([maxas-grammar] LOP: (?<INV>\.INV)?)
                if neg or absval:
                    raise line.error(f"cannot combine .INV with '-' or '|..|' in {tok!r}", col)
                bitnot = True
            elif sfx in ("B0", "B1", "B2", "B3", "H0_H0", "H1_H1", "F32"):
                raise line.error(f"the register part selector .{sfx} in {tok!r} is not modelled", col)
            elif sfx == "CC":
                raise line.error(f"a carry-out .CC is written on the destination of IADD or LEA, not in {tok!r}", col)
            else:
                raise line.error(f"unknown register suffix .{sfx} in {tok!r}", col)
        if bitnot:  # ~R (bitwise not)
            return ins.Operand(ins.REG, reg=reg, not_=True, h1=h1, reuse=reuse)
        return ins.Operand(ins.REG, reg=reg, neg=neg, abs=absval, h1=h1, reuse=reuse)
    if bitnot and not (t.startswith("c[") or _INT_RE.match(t)):
        raise line.error(f"'~' applies to registers, constants and integer immediates only, got {tok!r}", col)
    m = _PRED_RE.match(t)
    if m:
        return ins.Operand(ins.PRED, reg=ins.PT if m.group(1) == "T" else int(m.group(1)), not_=notp)
    if notp:
        raise line.error(f"'!' applies to predicates only, got {tok!r}", col)
    if t.startswith("SR_"):
        return ins.Operand(ins.SREG, name=t)
    const_h1 = t.startswith("c[") and t.endswith(".H1")  # XMAD's high-half selector on a constant
    if t.startswith("c[") and t.endswith(".INV"):  # maxas's LOP spelling of ~c[..][..]
        t, bitnot = t[:-4], True
    m = _CONST_RE.match(t[:-3] if const_h1 else t)
    if m:
        bank, off = _int(m.group(1)), _int(m.group(2))
        if bank > 17 or off > 0xFFFF:
            raise line.error(f"constant {tok!r} is out of range: banks 0x0-0x11, offsets 0x0-0xffff", col)
        return ins.Operand(ins.CONST, bank=bank, value=off, neg=neg, abs=absval, h1=const_h1, not_=bitnot)
    m = _ICONST_RE.match(t.replace(" ", ""))
    if m:
        bank = _int(m.group(1))
        off = _int(m.group(3)) if m.group(3) else 0
        if bank > 17 or not -0x8000 <= off <= 0xFFFF:
            raise line.error(f"constant {tok!r} is out of range: banks 0x0-0x11, offsets -0x8000-0xffff", col)
        if neg or absval or bitnot or const_h1:
            raise line.error(f"a register-indexed constant takes no '-', '|..|', '~' or .H1: {tok!r}", col)
        reg = _reg_number(_REG_RE.match(m.group(2)), line, col)
        return ins.Operand(ins.CONST, bank=bank, value=off, reg=reg, text=m.group(3) or "")
    if t.startswith("c["):
        raise line.error(f"malformed constant {tok!r}: expected c[bank][offset]", col)
    if _INT_RE.match(tok):
        v = _int(tok)
        if not -(1 << 31) <= v < (1 << 32):
            raise line.error(f"immediate {tok} does not fit in 32 bits", col)
        return ins.Operand(ins.IMM, value=v, text=tok)
    if bitnot and _INT_RE.match(t):
        v = _int(t)
        if not -(1 << 31) <= v < (1 << 32):
            raise line.error(f"immediate {t} does not fit in 32 bits", col)
        return ins.Operand(ins.IMM, value=v, text=t, not_=True)
    if _FLOAT_RE.match(tok):  # (nvdisasm writes a quiet NaN immediate as QNAN / -QNAN)
        return ins.Operand(ins.FIMM, fvalue=float(tok.replace("QNAN", "NAN")), text=tok)
    if t in ("1D", "PR") or t in TEXTURE_DIMS or re.fullmatch(r"SB[0-5]", t) or re.fullmatch(r"CC\.[A-Z_]+", t):
        return ins.Operand(ins.WORD, name=t)
    if _IDENT_RE.match(t) and not neg:
        return ins.Operand(ins.LABEL, name=t)
    raise line.error(f"cannot read operand {tok!r}", col)


def _reg_number(m, line, col):
    if m.group(1) == "Z":
        return ins.RZ
    n = int(m.group(1))
    if n > 254:
        raise line.error(f"register R{n} is out of range R0-R254", col)
    return n


def _decode(spec, opcode, mods, operands, control, pred, pred_neg, line, index, label_map, widths):
    """Derive the register sets, operand slots and timing class of one instruction."""
    dst_regs, dst_preds, src_regs, slots = [], [], [], []
    n_dst = spec.n_dst
    sig = spec.signature
    for n, op in enumerate(operands):
        is_vec = "V" in sig[n].split("|")
        w = widths[n] if is_vec else 1
        if n < n_dst:
            if op.kind == ins.REG and op.reg != ins.RZ:
                dst_regs.extend(range(op.reg, op.reg + w))
            elif op.kind == ins.PRED and op.reg != ins.PT:
                dst_preds.append(op.reg)
            continue
        if op.kind in (ins.REG, ins.MEM) or (op.kind == ins.CONST and op.reg >= 0):
            if op.reg != ins.RZ:
                src_regs.extend(range(op.reg, op.reg + w) if op.kind != ins.CONST else (op.reg,))
                if op.kind == ins.MEM and "E" in mods:
                    src_regs.append(op.reg + 1)  # a 64-bit address: the register pair
            if op.kind == ins.REG or len(slots) < 3:
                slots.append(op.reg if op.reg != ins.RZ else -1)
        elif op.kind in (ins.IMM, ins.FIMM, ins.CONST):
            slots.append(-1)
    # slots beyond 3 (vector data of stores) are not operand-collector slots
    # MOV's source sits in the second operand slot (the first is unused), as maxas encodes it
    first_slot = 1 if opcode == "MOV" else 0
    slots = tuple(([-1] * first_slot + slots)[:3])
    reuse_mask = 0
    slot_no = first_slot
    for n, op in enumerate(operands[n_dst:]):
        if op.kind in (ins.REG, ins.MEM, ins.IMM, ins.FIMM, ins.CONST):
            if op.kind == ins.REG and op.reuse and slot_no < 3:
                reuse_mask |= 1 << slot_no
            slot_no += 1
    if opcode in ("TLDS", "TEXS"):
        dst_regs = [r for r, _ in texture_channels(operands) if r != ins.RZ]
    if opcode == "R2P":  # the predicates of its mask
        dst_preds = [n for n in range(7) if operands[2].value >> n & 1]
    target, target_label = -1, ""
    if opcode in ("BRA", "CAL", "SSY", "PBK", "PCNT"):
        target_label = operands[-1].name  # (BRA CC.EQ, L: the label after the condition-code test)
        target = label_map[target_label]
    return ins.Instruction(
        index=index, opcode=opcode, mods=mods, operands=operands, control=control, pred=pred,
        pred_neg=pred_neg, line=line.number, filename=line.filename, dst_regs=tuple(dst_regs),
        dst_preds=tuple(dst_preds), src_regs=tuple(dict.fromkeys(src_regs)), slot_regs=slots,
        reuse_mask=reuse_mask, unit=unit_of(spec, mods), target=target, target_label=target_label)

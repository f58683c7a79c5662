"""Assemble a kernel written in the maxas source language into a decoded kernel and final text.

The steps (each module's documentation gives its rules):

1. :func:`maxsim.asm.source.read_source` splits the file into header, mappings and instruction
   lines and evaluates ``[+ EXPR +]``;
2. constant names are replaced by their values, ``Nx<EXPR>`` immediates evaluated
   (:mod:`maxsim.asm.expressions`), register names looked up (:mod:`maxsim.asm.registers`); an
   unknown name is an error at its column;
3. each ``<SCHEDULE_BLOCK>`` is ordered by :func:`maxsim.asm.schedule.schedule_block`, first with the
   allocated (``~``) registers as names, which gives the order the reuse flags and so the
   bank-aware allocation are computed on, then again with every register a number (the order
   that ships: a dependency through a register two names share is then seen too);
4. control codes: a field written in the source is kept, except the stall count (and a yield flag
   the writer did not set) of an instruction in a schedule block, which the scheduler chooses, as
   maxas does (the block's last instruction keeps a written stall: it meets the code after the
   block); every field of an instruction written without a control field is chosen
   (:func:`maxsim.asm.controls.assign_controls`);
5. reuse flags: those the maxas rule derives (:func:`maxsim.analysis.reuse.reuse_flag_masks`),
   plus any ``.reuse`` the writer wrote;
6. the header: ``RegCnt`` is the highest register used + 1 unless the source declares more,
   ``BarCnt`` the highest BAR number + 1 unless it declares more, ``SharedSize`` the end of the
   farthest shared-memory access at a fixed offset (``[RZ+0x800]``, ``[R3+0x800]``: at least
   0x804) when it declares a smaller one (none declared: 0, the shared memory given at launch), ``InsCnt`` the instructions other than EXIT (as maxas counts
   them); ``Kernel``, ``Arch`` and the parameter list as the source declares them (parameter names
   are kept in :attr:`Assembly.param_names`). A maxas source file's header is the CUDA skeleton's
   (maxas computes the register count when it builds the binary), so a declared value below what the
   code shows is raised to it, and :attr:`Assembly.notes` says so in one line each.

Control codes the writer fixed are not changed even where they leave a hazard open; the hazards
of the result (:func:`maxsim.analysis.controls.check_controls`) are in :attr:`Assembly.hazards`
and ``maxsim asm`` prints them as warnings.
"""

from __future__ import annotations

import os
import re
import types

import attrs

from ..analysis.controls import ALU_UNITS, check_controls
from ..analysis.reuse import reuse_flag_masks, with_reuse_mask
from ..arch.config import load_config
from ..errors import SassParseError
from ..isa import instruction as ins
from ..isa.opcodes import NOT_MODELLED, OPCODES, memory_bytes
from ..sass.parser import parse_instruction, parse_text
from ..sass.printer import format_kernel
from .controls import Spec, assign_controls
from .expressions import INDEX_RE, ExpressionError, evaluate
from .registers import allocate, read_register_map
from .schedule import Item, schedule_block
from .source import Span, is_source, read_source

_NAME_RE = re.compile(r"(?<![\w.$])([A-Za-z_]\w*)(\[\d+\])?", re.ASCII)
# words that are not names: registers, predicates (PR: all of them, P2R / R2P), special registers,
# TLDS/TEXS channel sets
_BUILTIN_RE = re.compile(r"(R\d+|RZ|P[0-6T]|PR|SR_\w+|INF|NAN|c|R|G|B|A|RG|RA|GA|BA|RGB|RGA|RBA|GBA|RGBA|ARRAY_\w+|CUBE)$",
                         re.ASCII)
_GUARD_RE = re.compile(r"@!?P[0-6T]\s+", re.ASCII)
_HEADER_RANGE = {"RegCnt": (1, ins.NUM_REGS), "SharedSize": (0, 48 * 1024), "BarCnt": (0, 16),
                 "LocalSize": (0, 512 * 1024)}  # (LocalSize: as maxsim.sass.parser reads it)
AUTO_KEY = 1 << 10  # keys of allocated names while they have no register (index added)
_NEUTRAL_CTRL = "--:-:-:-:1"


@attrs.frozen
class Assembly:
    """The result of assembling a source file."""

    kernel: ins.Kernel
    registers: dict  # every register name -> its number (fixed and allocated)
    allocated: dict  # the ~ names -> the number each got
    constants: dict  # constant name -> its value text
    param_names: tuple  # names given to the parameters in the header ("" where none)
    hazards: tuple  # control-code hazards of the result (left open by written control codes)
    notes: tuple = ()  # one line per header value set from the code (file:line:col: what and why)

    @property
    def text(self) -> str:
        """The kernel in maxas's final text form (what ``maxsim run`` reads)."""
        return format_kernel(self.kernel)


def load_kernel(path, cfg=None, kernel=None) -> ins.Kernel:
    """A kernel file in either form: the source language is assembled, the final form parsed; a
    .cubin is decoded, a .cu or .ptx compiled for sm_52 and decoded (``kernel``: which of its
    kernels, by name)."""
    from ..cubin import is_binary_path, load
    if is_binary_path(path):
        return load(path, kernel).code
    text, path = _read(path)
    if is_source(text):
        return assemble_text(text, filename=path, cfg=cfg).kernel
    return parse_text(text, filename=path)


def assemble_file(path, cfg=None) -> Assembly:
    text, path = _read(path)
    return assemble_text(text, filename=path, cfg=cfg)


def _read(path):
    path = str(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise SassParseError(f"cannot read file: {e.strerror}", path, 0, 0) from None
    try:
        return data.decode("utf-8"), path
    except UnicodeDecodeError as e:
        raise SassParseError("file is not UTF-8 text", path, data[: e.start].count(b"\n") + 1, 1) from None


@attrs.frozen
class _Ins:
    line: object  # source.Line
    body: Span  # names of constants replaced, index immediates evaluated
    operands_at: int  # where the operands start in body
    order_index: int  # position in written order


def assemble_text(text: str, filename: str = "<string>", cfg=None) -> Assembly:
    """Assemble source ``text`` (see the module documentation)."""
    cfg = cfg if cfg is not None else load_config()
    src = read_source(text, filename)
    constants, where = {}, {}
    for name, value, nspan in src.constants:
        if name in where:
            raise nspan.error(f"duplicate name {name!r} (first defined on line {where[name][0]})")
        constants[name] = value.text
        where[name] = (nspan.line, nspan.col(0))
    regmap = read_register_map(src.registers, taken=where)
    # labels and their instruction indices (blocks hold no labels, so scheduling keeps them)
    labels, n = [], 0
    label_where = {}
    for line in src.lines:
        if line.kind == "label":
            if line.label in label_where or line.label in regmap.where:
                first = label_where.get(line.label) or regmap.where[line.label][0]
                raise SassParseError(f"duplicate name {line.label!r} (first defined on line {first})",
                                     filename, line.line, 1)
            label_where[line.label] = line.line
            labels.append((line.label, n))
        else:
            n += 1
    if n == 0:
        raise SassParseError("no instructions", filename, max(1, len(text.splitlines())), 1)
    label_map = dict(labels)
    code = [_prepare(line, k, constants) for k, line in enumerate(l for l in src.lines if l.kind == "ins")]
    autos = regmap.auto_names
    auto_key = {name: AUTO_KEY + k for k, name in enumerate(sorted(autos))}
    if auto_key:
        # 1. provisional decode and order, allocated names as keys
        provisional = [_decode(c, regmap.fixed, auto_key, label_map, provisional=True) for c in code]
        order = _order(code, provisional, cfg)
        ordered = [provisional[k] for k in order]
        masks = reuse_flag_masks(types.SimpleNamespace(instructions=ordered, labels=labels))
        key_name = {v: k for k, v in auto_key.items()}
        usage = [(tuple(key_name.get(r, r) if r >= 0 else None for r in _bank_slots(i)), i.unit in ALU_UNITS,
                  m | i.reuse_mask) for i, m in zip(ordered, masks)]
        allocated = allocate(regmap, usage, cfg.regfile.banks)
    else:
        allocated = {}
    registers = dict(regmap.fixed)
    registers.update(allocated)
    # 2. final decode and order, every register a number
    final = [_decode(c, registers, {}, label_map, provisional=False) for c in code]
    order = _order(code, final, cfg)
    instrs = tuple(attrs.evolve(_hex_immediates(final[k]), index=i) for i, k in enumerate(order))
    block_end = {}  # block number -> the written index of its last instruction in issue order
    for k in order:
        if code[k].line.block:
            block_end[code[k].line.block] = k
    specs = [_spec(code[k], block_end.get(code[k].line.block) == k) for k in order]
    header, notes = _header(src, instrs)
    notes = [ln.note for ln in src.lines if ln.kind == "ins" and ln.note] + list(notes)
    kernel = ins.Kernel(name=header["Kernel"], arch=header["Arch"],
                        ins_cnt=sum(1 for i in instrs if i.opcode != "EXIT"), reg_cnt=header["RegCnt"],
                        shared_size=header["SharedSize"], bar_cnt=header["BarCnt"], local_size=header["LocalSize"],
                        params=tuple(p for p, _ in src.params), instructions=instrs, labels=tuple(labels),
                        filename=filename)
    kernel = assign_controls(kernel, specs, cfg, strict=False)
    masks = reuse_flag_masks(kernel)
    kernel = attrs.evolve(kernel, instructions=tuple(
        with_reuse_mask(i, m | i.reuse_mask) for i, m in zip(kernel.instructions, masks)))
    return Assembly(kernel, registers, allocated, constants, tuple(name for _, name in src.params),
                    tuple(check_controls(kernel, cfg)), tuple(notes))


def _bank_slots(instr):
    """The source slots the allocation looks at: a store's data registers are not among them (maxas
    encodes them in the destination field, which is read apart from the operand slots)."""
    return instr.slot_regs[:1] if instr.unit in ("sts", "stg") else instr.slot_regs


def _hex_immediates(instr):
    """Immediates and memory offsets written in decimal, printed in hexadecimal (the final form); a
    zero offset left out."""
    ops = tuple(attrs.evolve(op, text="") if op.kind in (ins.IMM, ins.MEM) and op.text and (
        not op.text.lstrip("-").lower().startswith("0x") or (op.kind == ins.MEM and op.value == 0))
        else op for op in instr.operands)
    return attrs.evolve(instr, operands=ops)


def _prepare(line, k, constants) -> _Ins:
    """Replace constant names and evaluate ``Nx<EXPR>`` in an instruction's text."""
    body = line.body
    m = _GUARD_RE.match(body.text)
    start = m.end() if m else 0
    op_at = start
    while start < len(body.text) and not body.text[start].isspace():
        start += 1  # the opcode and its modifiers
    op = body.text[op_at:start]
    if ":" in op:
        raise body.error(f"expected a control field WW:R:W:Y:S (e.g. --:-:1:-:6), got {op!r}", op_at)
    if op.split(".")[0] not in OPCODES:
        name = op.split(".")[0]
        if name in NOT_MODELLED:
            raise body.error(f"opcode {name} is not modelled: {NOT_MODELLED[name]}", op_at)
        raise body.error(f"unknown opcode {name!r}", op_at)
    pos = start
    while True:  # constants, in one pass (a value is not searched for further names)
        m = _NAME_RE.search(body.text, pos)
        if not m:
            break
        if m.group(2) and m.group(0) in constants:
            name = m.group(0)
        elif m.group(1) in constants:
            name = m.group(1)
        else:
            pos = m.end(1)
            continue
        body = body.sub(m.start(), m.start() + len(name), constants[name])
        pos = m.start() + len(constants[name])
    pos = start
    while True:
        m = INDEX_RE.search(body.text, pos)
        if not m:
            break
        try:
            value = int(m.group(1)) * evaluate(m.group(2))
        except ExpressionError as e:
            raise body.error(f"bad expression: {e}", m.start(2) + e.offset) from None
        a = m.start()
        if value < 0:  # [base + -x] is written [base-x]
            k = len(body.text[:a].rstrip())
            if k and body.text[k - 1] == "+":
                a = k - 1
        repl = f"-0x{-value:x}" if value < 0 else f"0x{value:x}"
        body = body.sub(a, m.end(), repl)
        pos = a + len(repl)
    return _Ins(line, body, start, k)


def _decode(c: _Ins, numbers: dict, auto_key: dict, label_map: dict, provisional: bool):
    """Decode one instruction with register names replaced: by their numbers, and (provisionally)
    allocated names by stand-in registers whose numbers are then mapped to the names' keys."""
    body = c.body
    found = []  # (start, end, name)
    pos = c.operands_at
    while True:
        m = _NAME_RE.search(body.text, pos)
        if not m:
            break
        name = m.group(1)
        pos = m.end(1)
        if body.text.startswith("[", m.end(1)) and name == "c":
            continue
        if name in numbers or name in auto_key:
            found.append((m.start(1), m.end(1), name))
        elif not (_BUILTIN_RE.match(name) or name in label_map or name == "PT"):
            raise body.error(f"unknown name {name!r}: not a register, predicate, label, constant or "
                             f"mapped register name", m.start(1))
    stand_in = {}
    if provisional:
        used = {numbers[nm] for _, _, nm in found if nm in numbers}
        used |= {int(x) for x in re.findall(r"(?<![\w.])R(\d+)", body.text)}
        free = (p for p in range(0, ins.NUM_REGS - 3, 4) if not used & set(range(p, p + 4)))
        for _, _, nm in found:
            if nm in auto_key and nm not in stand_in:
                stand_in[nm] = next(free)
    for a, b, nm in reversed(found):
        r = numbers[nm] if nm in numbers else stand_in[nm]
        body = body.sub(a, b, f"R{r}")
    ctrl = c.line.ctrl or _NEUTRAL_CTRL
    text = f"{ctrl} {body.text};"
    try:
        instr = parse_instruction(text, body.filename, body.line, c.order_index, ins.NUM_REGS, label_map)
    except SassParseError as e:
        col = body.col(e.column - 1 - len(ctrl) - 1) if e.column > len(ctrl) + 1 else 1
        raise SassParseError(e.reason, e.filename, e.line, col) from None
    if not stand_in:
        return instr
    key = {r: auto_key[nm] for nm, r in stand_in.items()}
    for r in list(instr.src_regs) + list(instr.dst_regs):
        for nm, p in stand_in.items():
            if not p < r < p + 4:
                continue
            at = next(a for a, _, x in found if x == nm)
            raise c.body.error(f"allocated (~) register {nm!r} cannot name a vector group: give the group "
                               f"fixed, aligned registers", at)
    return attrs.evolve(instr, src_regs=tuple(key.get(r, r) for r in instr.src_regs),
                        dst_regs=tuple(key.get(r, r) for r in instr.dst_regs),
                        slot_regs=tuple(key.get(r, r) for r in instr.slot_regs))


def _order(code, decoded, cfg) -> list:
    """Written order, with each schedule block in the scheduler's order."""
    out, k = [], 0
    while k < len(code):
        b = code[k].line.block
        if not b:
            out.append(k)
            k += 1
            continue
        j = k
        while j < len(code) and code[j].line.block == b:
            j += 1
        items = []
        for x in range(k, j):
            instr = decoded[x]
            if instr.unit in ("branch", "exit"):
                raise code[x].body.error(f"{instr.opcode} inside a SCHEDULE_BLOCK: control flow stays "
                                         f"outside the blocks")
            c = instr.control if code[x].line.ctrl else ins.Control(stall=1)
            items.append(Item(instr, c.wait, frozenset(b for b in (c.read_bar, c.write_bar) if b),
                              code[x].line.ordered))
        out += [k + x for x in schedule_block(items, cfg)]
        k = j
    return out


def _spec(c: _Ins, ends_block: bool) -> Spec:
    """The fixed and open control fields of an instruction (``ends_block``: it issues last in its
    schedule block)."""
    if c.line.ctrl is None:
        return Spec("", wait=None, read_bar=None, write_bar=None, yield_=None, stall=None)
    m = re.match(r"([0-9a-fA-F]{2}|--):([1-6]|-):([1-6]|-):([yY]|-):([0-9a-fA-F])", c.line.ctrl)
    ww, rb, wb, y, s = m.groups()
    wait = 0 if ww == "--" else int(ww, 16)
    rbar, wbar, stall = 0 if rb == "-" else int(rb), 0 if wb == "-" else int(wb), int(s, 16)
    if c.line.block:
        return Spec("", wait=wait, read_bar=rbar, write_bar=wbar, yield_=True if y in "yY" else None,
                    stall=stall if ends_block else None)
    return Spec("", wait=wait, read_bar=rbar, write_bar=wbar, yield_=y in "yY", stall=stall)


def _header(src, instrs) -> dict:
    out = {"Kernel": os.path.splitext(os.path.basename(src.filename))[0] or "kernel", "Arch": "sm_52"}
    for key in ("Kernel", "Arch"):
        if key in src.header:
            out[key] = src.header[key][0]
    declared = {}
    for key, (lo, hi) in _HEADER_RANGE.items():
        if key in src.header:
            value, line, col = src.header[key]
            try:
                v = int(value, 0)
            except ValueError:
                raise SassParseError(f"header {key} expects a number, got {value!r}", src.filename, line, col) from None
            if not lo <= v <= hi:
                raise SassParseError(f"header {key} {value} is out of range {lo}..{hi}", src.filename, line, col)
            declared[key] = (v, line, col)
    notes = []

    def from_code(key, shown, what):
        """The header value: the declared one, raised to what the code shows (with a note)."""
        if key not in declared:
            return shown
        v, line, col = declared[key]
        if v < shown:
            notes.append(f"{src.filename}:{line}:{col}: header {key} {v} is less than {what}: {key} "
                         f"{shown}, from the code (the header of a maxas source is the CUDA skeleton's)")
            return shown
        return v
    top = max([r for i in instrs for r in i.src_regs + i.dst_regs] + [-1]) + 1
    out["RegCnt"] = max(from_code("RegCnt", top, f"the registers the code uses (R0-R{top - 1})"), 1)
    bars = [i.operands[0].value + 1 for i in instrs if i.opcode == "BAR" and i.operands
            and i.operands[0].kind == ins.IMM]
    out["BarCnt"] = from_code("BarCnt", max(bars + [0]), f"the barriers the code uses (0-{max(bars + [1]) - 1})")
    ends = [op.value + memory_bytes(i.mods) for i in instrs if i.unit in ("lds", "sts") and i.opcode != "SHFL"
            for op in i.operands if op.kind == ins.MEM and op.value > 0]
    shared = (max(ends + [0]) + 3) // 4 * 4
    # (a kernel that declares no SharedSize gets its shared memory at launch: --shared)
    out["SharedSize"] = from_code("SharedSize", shared, f"the shared memory the code addresses (up to byte "
                                  f"0x{shared:x})") if "SharedSize" in declared else 0
    # local memory per thread: as declared (LDL / STL address it through a register)
    out["LocalSize"] = declared["LocalSize"][0] if "LocalSize" in declared else 0
    return out, notes


__all__ = ["Assembly", "assemble_text", "assemble_file", "load_kernel", "is_source"]

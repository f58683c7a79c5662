"""Read a kernel written in the maxas source language into its parts, with file:line:column places.

The source language is the maxas "final" SASS text (``docs/maxas-sass-format.md``) plus what the
maxas assembler resolves (``MaxAs.pm``, ``Preprocess``/``Scheduler``; the maxas wiki):

- ``<CONSTANT_MAPPING>`` ... ``</CONSTANT_MAPPING>``: lines ``name : value``; every later use of
  ``name`` (a word, optionally with an index such as ``param_0[1]``) is replaced by ``value``,
  typically a constant-bank operand (``param_k : c[0x0][0x14c]``);
- ``<REGISTER_MAPPING>`` ... ``</REGISTER_MAPPING>``: register names (:mod:`maxsim.asm.registers`);
- ``<SCHEDULE_BLOCK>`` ... ``</SCHEDULE_BLOCK>``: instructions the assembler may reorder and whose
  stall counts it chooses (:mod:`maxsim.asm.schedule`), with ``<ORDERED>`` ... ``</ORDERED>``
  runs kept in their written order; a block holds no label;
- ``<COMMENT>`` ... ``</COMMENT>``: ignored;
- ``[+ EXPR +]`` and ``Nx<EXPR>``: constant expressions (:mod:`maxsim.asm.expressions`);
- an instruction line may leave out its control field; the assembler fills it.

``<CODE>`` blocks, ``[- ... -]`` and ``<INCLUDE>`` are maxas's Perl preprocessor: maxsim does not run
Perl. A file that still holds them is refused (one line naming file and line); ``maxas.pl -p``
writes the expanded file maxsim reads.
"""

from __future__ import annotations

import re

import attrs

from ..errors import SassParseError
from ..isa import instruction as ins
from .expressions import INLINE_RE, ExpressionError, evaluate

CTRL_RE = re.compile(r"([0-9a-fA-F]{2}|--):([1-6]|-):([1-6]|-):([yY]|-):([0-9a-fA-F])(?=\s)", re.ASCII)
_LOOSE_CTRL_RE = re.compile(r"[0-9a-fA-F-]{2}:[^\s:]*:[^\s:]*:[^\s:]*:[^\s:;]*(?=\s)", re.ASCII)
_LABEL_RE = re.compile(r"([A-Za-z_]\w*)\s*:\s*$", re.ASCII)
_TAG_RE = re.compile(r"\s*<(/?)([A-Za-z_]+)(\d*)\b[^>]*>\s*$")
_ANY_TAG_RE = re.compile(r"^\s*</?(CONSTANT_MAPPING|REGISTER_MAPPING|SCHEDULE_BLOCK|ORDERED|COMMENT|CODE\d*|INCLUDE)\b",
                         re.MULTILINE)
_HEADER_RE = re.compile(r"#\s*(Kernel|Arch|InsCnt|RegCnt|SharedSize|BarCnt|LocalSize)\s*:\s*(\S+)\s*$", re.ASCII)
_HEADER_KEY_RE = re.compile(r"#\s*(Kernel|Arch|InsCnt|RegCnt|SharedSize|BarCnt|LocalSize)\s*:", re.ASCII)
_PARAMS_RE = re.compile(r"#\s*Params\((\d+)\)\s*:?\s*$", re.ASCII)
_PARAM_RE = re.compile(r"#\s*(\d+):(0[xX][0-9a-fA-F]+|\d+):(\d+):(\d+)\s*([A-Za-z_]\w*)?\s*,?\s*(?://.*)?$", re.ASCII)
_CONST_NAME_RE = re.compile(r"[A-Za-z_]\w*(\[\d+\])?$", re.ASCII)
SECTIONS = ("CONSTANT_MAPPING", "REGISTER_MAPPING", "SCHEDULE_BLOCK", "ORDERED")


@attrs.frozen
class Span:
    """A piece of one source line: its text and, for each character, its 1-based column."""

    text: str
    line: int
    cols: tuple
    filename: str

    @classmethod
    def of(cls, text, line, filename, start_col=1):
        return cls(text, line, tuple(range(start_col, start_col + len(text))), filename)

    def col(self, i: int) -> int:
        if not self.cols:
            return 1
        return self.cols[i] if 0 <= i < len(self.cols) else self.cols[-1] + 1

    def error(self, message, i=0) -> SassParseError:
        return SassParseError(message, self.filename, self.line, self.col(i))

    def sub(self, start, end, repl) -> "Span":
        """This span with ``text[start:end]`` replaced by ``repl`` (placed at the column of ``start``)."""
        c = self.col(start)
        return Span(self.text[:start] + repl + self.text[end:], self.line,
                    self.cols[:start] + (c,) * len(repl) + self.cols[end:], self.filename)

    def strip(self) -> "Span":
        a = len(self.text) - len(self.text.lstrip())
        b = len(self.text.rstrip())
        return Span(self.text[a:b], self.line, self.cols[a:b], self.filename)

    def slice(self, start, end=None) -> "Span":
        end = len(self.text) if end is None else end
        return Span(self.text[start:end], self.line, self.cols[start:end], self.filename)


@attrs.frozen
class Line:
    """An instruction (``body`` = guard, opcode and operands without ';') or a label of the source."""

    kind: str  # "ins" or "label"
    line: int
    body: Span | None = None
    ctrl: str | None = None  # the control field as written, None if left out
    label: str = ""
    block: int = 0  # SCHEDULE_BLOCK number (1, 2 ...), 0 outside
    ordered: int = 0  # <ORDERED> run number within the file, 0 outside
    note: str = ""  # a warning about the line (file:line:col: what), "" for none


@attrs.frozen
class Source:
    filename: str
    header: dict  # Kernel, Arch, RegCnt, SharedSize, BarCnt as written (InsCnt ignored)
    params: tuple  # (Param, name or "") pairs
    constants: tuple  # (name, value Span, name Span) in file order
    registers: tuple  # REGISTER_MAPPING lines (Spans, comments removed)
    lines: tuple  # Line records in file order


def is_source(text: str) -> bool:
    """Whether ``text`` is in the source language rather than maxas's final form: it has a section
    tag, a constant expression, or an instruction line without a control field."""
    if _ANY_TAG_RE.search(text) or INLINE_RE.search(text) or re.search(r"\d[xX]<", text):
        return True
    for raw in text.splitlines():
        s = raw.strip()
        if not s or s.startswith("#") or s.startswith("//") or _LABEL_RE.match(s):
            continue
        if not _LOOSE_CTRL_RE.match(s + " "):
            return True
    return False


def _perl_refusal(what, filename, line, col):
    return SassParseError(f"{what} is maxas's Perl preprocessor, which maxsim does not run: expand the file "
                          f"with `maxas.pl -p` first", filename, line, col)


def _strip_comment(span: Span) -> Span:
    t = span.text
    cut = len(t)
    for mark in ("//", "#"):
        k = t.find(mark)
        if k != -1:
            cut = min(cut, k)
    return span.slice(0, cut)


def _int(text):
    return int(text, 16) if text[:2].lower() == "0x" else int(text)


def read_source(text: str, filename: str = "<string>") -> Source:
    """Split source ``text`` into header, mappings and instruction lines (see the module doc)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    raw_lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    header, params, constants, registers, lines = {}, [], [], [], []
    n_params, params_line = None, 0
    open_tags = {}  # section -> line it opened on
    block = ordered = blocks = runs = 0
    in_comment = 0
    for number, raw in enumerate(raw_lines, start=1):
        stripped = raw.strip()
        col0 = len(raw) - len(raw.lstrip()) + 1
        # <COMMENT> ... </COMMENT>
        if in_comment:
            if re.match(r"\s*</COMMENT>", raw):
                in_comment = 0
            continue
        if re.match(r"\s*<COMMENT>", raw):
            in_comment = number
            continue
        m = re.match(r"\s*<(CODE\d*)>|\s*<INCLUDE\b", raw)
        if m:
            raise _perl_refusal("<CODE> block" if m.group(1) else "<INCLUDE>", filename, number, col0)
        if not stripped:
            continue
        if stripped.startswith("#") or stripped.startswith("//"):
            if stripped.startswith("#"):
                if _HEADER_KEY_RE.match(stripped):  # a header value may be an expression
                    stripped = _inline_expressions(Span.of(raw, number, filename)).text.strip()
                m = _HEADER_RE.match(stripped)
                if m:
                    header[m.group(1)] = (m.group(2), number, raw.find(m.group(2)) + 1 or col0)
                    continue
                m = _PARAMS_RE.match(stripped)
                if m:
                    n_params, params_line = int(m.group(1)), number
                    continue
                m = _PARAM_RE.match(stripped)
                if m:
                    o, a, s, al, name = m.groups()
                    params.append((ins.Param(int(o), _int(a), int(s), int(al)), name or ""))
            continue
        span = Span.of(raw, number, filename)
        span = _inline_expressions(span)
        stripped = span.text.strip()
        # section tags (a comment may follow)
        m = _TAG_RE.match(_strip_comment(span).text)
        if m and m.group(2) in SECTIONS:
            closing, tag = m.group(1) == "/", m.group(2)
            if not closing:
                if tag in open_tags:
                    raise span.error(f"<{tag}> opened again: the one of line {open_tags[tag]} is not closed",
                                     col0 - 1)
                if tag == "ORDERED" and not block:
                    raise span.error("<ORDERED> belongs inside a <SCHEDULE_BLOCK>", col0 - 1)
                others = [t for t in open_tags if t != "SCHEDULE_BLOCK" or tag != "ORDERED"]
                if others:
                    raise span.error(f"<{tag}> inside <{others[0]}> (opened on line {open_tags[others[0]]})",
                                     col0 - 1)
                open_tags[tag] = number
                if tag == "SCHEDULE_BLOCK":
                    blocks += 1
                    block = blocks
                elif tag == "ORDERED":
                    runs += 1
                    ordered = runs
            else:
                if tag not in open_tags:
                    raise span.error(f"</{tag}> without an opening <{tag}>", col0 - 1)
                if tag == "SCHEDULE_BLOCK" and "ORDERED" in open_tags:
                    raise span.error(f"</SCHEDULE_BLOCK> inside <ORDERED> (opened on line {open_tags['ORDERED']})",
                                     col0 - 1)
                del open_tags[tag]
                if tag == "SCHEDULE_BLOCK":
                    block = 0
                elif tag == "ORDERED":
                    ordered = 0
            continue
        if m and m.group(1) == "" and stripped.startswith("<"):
            raise span.error(f"unknown section <{m.group(2)}{m.group(3)}>", col0 - 1)
        if "CONSTANT_MAPPING" in open_tags:
            body = _strip_comment(span).strip()
            if body.text:
                k = body.text.find(":")
                if k == -1:
                    raise body.error("expected 'name : value' in CONSTANT_MAPPING")
                name, value = body.slice(0, k).strip(), body.slice(k + 1).strip()
                if not _CONST_NAME_RE.match(name.text):
                    raise name.error(f"bad constant name {name.text!r} (a name is a letter or '_' then "
                                     f"letters, digits, '_')")
                if not value.text:
                    raise body.error(f"constant {name.text!r} has no value", k + 1)
                constants.append((name.text, value, name))
            continue
        if "REGISTER_MAPPING" in open_tags:
            body = _strip_comment(span).strip()
            if body.text:
                registers.append(body)
            continue
        m = _LABEL_RE.match(stripped)
        if m:
            if block:
                raise span.error(f"label {m.group(1)!r} inside a SCHEDULE_BLOCK (opened on line "
                                 f"{open_tags['SCHEDULE_BLOCK']}): a block cannot hold labels", col0 - 1)
            lines.append(Line("label", number, label=m.group(1)))
            continue
        lines.append(_instruction(span, block, ordered))
    if in_comment:
        raise SassParseError("<COMMENT> is not closed", filename, in_comment, 1)
    for tag, at in open_tags.items():
        raise SassParseError(f"<{tag}> is not closed", filename, at, 1)
    # the parameter lines listed are the parameters: a source header's Params(N) count is not checked
    # (maxas takes the parameters from the cubin; its own SGEMM sources list 9 under Params(8))
    del n_params, params_line
    return Source(filename, header, tuple(params), tuple(constants), tuple(registers),
                  tuple(x for line in lines for x in expand_macros(line)))


_XMAD_LO_RE = re.compile(r"(@!?P[0-6T]\s+)?XMAD\.LO\s+(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*([^,]+?)\s*,\s*(\w+)\s*$",
                         re.ASCII)


_XMAD_LO2_RE = re.compile(r"(@!?P[0-6T]\s+)?XMAD((?:\.[SU]16){2})?\.LO2(C?)\s+(\w+)\s*,\s*(\w+)\s*,\s*([^,]+?)\s*,"
                          r"\s*([^,]+?)\s*$", re.ASCII)


def expand_macros(line: Line):
    """maxas's multiply macros as the XMADs they stand for (maxas ``MaxAsGrammar.pm``,
    ``replaceXMADs``), the same control field and guard on each:

    * ``XMAD.LO d, a, b, c, x``: ``d = a * b + c`` (32 x 32 bits, low word), ``x`` a scratch register;
    * ``XMAD.LO2 d, a, b, c``: the same for a b of 16 bits (an immediate or a register):
      ``XMAD d, a, b, c; XMAD.PSL d, a.H1, b, d``;
    * ``XMAD.LO2C d, a, c[..][..], c``: the same for an a of 16 bits and a 32-bit constant b:
      ``XMAD d, a, b, c; XMAD.PSL d, a, b.H1, d``;

    ``.LO2`` / ``.LO2C`` may carry two type modifiers (``XMAD.S16.U16.LO2``) passed to both XMADs."""
    if line.kind != "ins" or "XMAD" not in line.body.text or ".LO" not in line.body.text:
        return (line,)
    m2 = _XMAD_LO2_RE.match(line.body.text)
    if m2:
        guard, types, const, d, a, b, c = m2.groups()
        guard, types = guard or "", types or ""
        if d == a:
            raise line.body.error(f"XMAD.LO2{const}: the destination cannot be the first operand ({d})", m2.start(4))
        second = f"XMAD{types}.PSL {d}, {a}, {b}.H1, {d}" if const else f"XMAD{types}.PSL {d}, {a}.H1, {b}, {d}"
        texts = (f"{guard}XMAD{types} {d}, {a}, {b}, {c}", guard + second)
        col = line.body.col(0)
        return tuple(attrs.evolve(line, body=Span(t, line.line, (col,) * len(t), line.body.filename)) for t in texts)
    m = _XMAD_LO_RE.match(line.body.text)
    if not m:
        raise line.body.error("expected XMAD.LO d, a, b, c, x (x: a scratch register)")
    guard, d, a, b, c, x = m.groups()
    if d == a:
        raise line.body.error(f"XMAD.LO: the destination cannot be the first operand ({d})", m.start(2))
    guard = guard or ""
    texts = (f"{guard}XMAD.MRG {x}, {a}, {b}.H1, RZ", f"{guard}XMAD {d}, {a}, {b}, {c}",
             f"{guard}XMAD.PSL.CBCC {d}, {a}.H1, {x}.H1, {d}")
    col = line.body.col(0)
    return tuple(attrs.evolve(line, body=Span(t, line.line, (col,) * len(t), line.body.filename)) for t in texts)


def _inline_expressions(span: Span) -> Span:
    """Replace each ``[+ EXPR +]`` by its value; refuse ``[- CODE -]``."""
    while True:
        m = INLINE_RE.search(span.text)
        if not m:
            return span
        if m.group(1) == "-":
            raise _perl_refusal("[- ... -] code", span.filename, span.line, span.col(m.start()))
        try:
            value = evaluate(m.group(2))
        except ExpressionError as e:
            raise span.error(f"bad expression: {e}", m.start(2) + e.offset) from None
        span = span.sub(m.start(), m.end(), str(value))


def _instruction(span: Span, block: int, ordered: int) -> Line:
    body = span.strip()
    ctrl = None
    m = CTRL_RE.match(body.text + " ")
    if m:
        ctrl = m.group(0)
        body = body.slice(m.end()).strip()
    elif _LOOSE_CTRL_RE.match(body.text + " "):
        bad = _LOOSE_CTRL_RE.match(body.text + " ").group(0)
        raise body.error(f"expected a control field WW:R:W:Y:S (e.g. --:-:1:-:6), got {bad!r}")
    semi = body.text.find(";")
    if semi == -1:
        raise body.error("expected ';' at the end of the instruction", len(body.text.rstrip()))
    rest = body.text[semi + 1:].strip()
    note = ""
    if rest and not rest.startswith("#") and not rest.startswith("//"):
        # maxas reads everything after the ';' as a comment (MaxAs.pm, processAsmLine): accepted,
        # with a note, as a slip of the pen ('@P6 BRA.U SKIP4;S')
        at = semi + 1 + body.text[semi + 1:].find(rest[0])
        note = (f"{body.filename}:{body.line}:{body.col(at)}: text after ';' ignored, as maxas ignores it: "
                f"{rest!r}")
    body = body.slice(0, semi).strip()
    if not body.text:
        raise span.error("expected an instruction before ';'", semi)
    return Line("ins", span.line, body=body, ctrl=ctrl, block=block, ordered=ordered, note=note)

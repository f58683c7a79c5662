"""Register names of the maxas source language and the bank-aware allocation of ``~`` registers.

A ``<REGISTER_MAPPING>`` line is ``NUMBERS : NAMES`` (fixed), ``NUMBERS ~ NAMES`` (allocated by
the assembler) or ``NUMBER = NAMES`` (every name is the one register: names that share it, e.g.
``83 = blkC, blkK`` for values whose live ranges do not overlap). NUMBERS is a comma list of register numbers and ranges (``0-63``, ``3, 2, 11``);
NAMES a comma list of names, where ``x<00-03|32-35>y`` stands for ``x00y ... x03y, x32y ... x35y``
(a range written with a leading zero keeps its width, as Perl's string ranges do). Registers are
R0-R254 (255 registers; RZ is not a name's register). (Grammar: maxas ``MaxAs.pm``,
``setRegisterMap``.)

Fixed lines pair the i-th name with the i-th number (extra numbers are ignored, fewer numbers
than names is an error). When the numbers are consecutive, a ``<...>`` list also defines its bare
name (``j0Ax`` for ``j0Ax<00-03|32-35>`` on R64-R71) as the register of its first member if that
register is even, so vector instructions can name a group by it; an explicit name always wins.

Allocated (``~``) lines give each name a register of the line's NUMBERS, distinct within the
line. The numbers may overlap fixed names or other lines: as in maxas, keeping such registers'
live ranges apart is the writer's business (maxas's SGEMM allocates its prologue temporaries in
R0-R63, which hold the C block only later). A name may ask for a bank: ``name[2]``.

The allocation rule (maxas ``MaxAs.pm``, ``Assemble``; implemented here from its description). A
register's bank is its number mod the config's ``regfile.banks`` (4 on Maxwell):

1. Names that ask for a bank, in name order, take the first free register of the line in that bank.
2. The code is walked in its final (scheduled) order with the reuse flags the assembler will set.
   For every instruction and every source slot holding an allocated name ``r`` that the slot's
   reuse cache does not already hold, each *other* source register ``r2`` of the instruction
   (not RZ, not ``r``, and, for an ALU instruction, not held in its own slot's reuse cache) is
   a *partner*: a fixed register's bank is counted against ``r`` (``banks[bank] += 1``; the number
   of distinct such banks is ``r``'s *restriction*), an allocated one is linked to ``r``; each
   partner counts one *use* of ``r``.
3. Names with partners are allocated most restricted first, then most used, then by name: each
   takes the bank with the fewest counted partners (lowest bank number on a tie) that still has a
   free register on its line, and the first such register; its bank is then counted against
   every linked name not yet allocated.
4. The remaining names, by name, take the first free register of their line.

What the rule promises: an allocated register gets a bank that none of its partners uses (its
fixed partners, and the allocated ones placed before it) whenever its line still has a free
register in such a bank; the allocated partners placed after it then avoid its bank the same way.
So reads of it have no bank conflict whenever the greedy order leaves room (e.g. partners in at
most three banks and a free register in the fourth). A line with more names than registers is an
error.
"""

from __future__ import annotations

import re

import attrs

from ..errors import SassParseError
from ..isa import instruction as ins
from .source import Span

MAX_REGISTER = ins.NUM_REGS - 1  # R254
_NAME_RE = re.compile(r"([A-Za-z_]\w*?)(?:<([^>]*)>(\w*))?(?:\[([0-3])\])?$", re.ASCII)
_NUM_RE = re.compile(r"(\d+)(?:\s*-\s*(\d+))?$", re.ASCII)


@attrs.frozen
class AutoLine:
    """One ``~`` line: its names (with requested banks) and its pool of registers."""

    names: tuple
    pool: tuple
    banks: tuple  # requested bank per name, -1 for none
    line: int


@attrs.frozen
class RegisterMap:
    fixed: dict  # name -> register number
    auto: tuple  # AutoLine records
    where: dict  # name -> (line, column) of its definition

    @property
    def auto_names(self) -> dict:
        """name -> (line index in ``auto``, position on the line)."""
        return {n: (k, i) for k, a in enumerate(self.auto) for i, n in enumerate(a.names)}


def _numbers(span: Span):
    out = []
    pos = 0
    for piece in span.text.split(","):
        tok = piece.strip()
        at = pos + (len(piece) - len(piece.lstrip()))
        pos += len(piece) + 1
        m = _NUM_RE.match(tok)
        if not m:
            raise span.error(f"bad register number or range {tok!r} (expected N or N-M)", at)
        a = int(m.group(1))
        b = int(m.group(2)) if m.group(2) is not None else a
        if b < a:
            raise span.error(f"register range {tok} runs backwards", at)
        if b > MAX_REGISTER:
            raise span.error(f"register range {tok} goes over the limit: registers are 0-{MAX_REGISTER} "
                             f"({ins.NUM_REGS} registers)", at)
        out.extend(range(a, b + 1))
    return out


def _expand(tok: str, span: Span, at: int):
    """(names, bank, group name or None) of one NAMES item."""
    m = _NAME_RE.match(tok)
    if not m:
        raise span.error(f"bad register name {tok!r}", at)
    base, ranges, suffix, bank = m.groups()
    bank = int(bank) if bank is not None else -1
    if ranges is None:
        return [base], bank, None
    names = []
    for part in ranges.split("|"):
        part = part.strip()
        pm = re.match(r"(\d+)(?:\s*-\s*(\d+))?$", part)
        if not pm:
            raise span.error(f"bad name range <{ranges}> in {tok!r} (expected e.g. <0-7> or <00-03|32-35>)", at)
        a, b = pm.group(1), pm.group(2) or pm.group(1)
        if int(b) < int(a):
            raise span.error(f"name range {part} in {tok!r} runs backwards", at)
        width = len(a) if a.startswith("0") else 0
        names += [f"{base}{str(n).zfill(width)}{suffix}" for n in range(int(a), int(b) + 1)]
    return names, bank, base + suffix


def read_register_map(lines, taken=None) -> RegisterMap:
    """The register map of the REGISTER_MAPPING lines (Spans). ``taken``: other names already
    defined (constant names), name -> (line, column), for the duplicate check."""
    fixed, where, autos, groups = {}, dict(taken or {}), [], []
    for span in lines:
        m = re.search(r"[:~=]", span.text)
        if not m:
            raise span.error("expected 'NUMBERS : NAMES', 'NUMBERS ~ NAMES' or 'NUMBER = NAMES' in REGISTER_MAPPING")
        auto = m.group(0) == "~"
        share = m.group(0) == "="
        nums_span, names_span = span.slice(0, m.start()), span.slice(m.end()).strip()
        numbers = _numbers(nums_span)
        names, banks = [], []
        pos = 0
        consecutive = all(b == a + 1 for a, b in zip(numbers, numbers[1:]))
        for piece in names_span.text.split(","):
            tok = piece.strip()
            at = pos + (len(piece) - len(piece.lstrip()))
            pos += len(piece) + 1
            if not tok:
                raise names_span.error("empty register name", at)
            got, bank, group = _expand(tok, names_span, at)
            if bank >= 0 and not auto:
                raise names_span.error(f"{tok!r}: only an allocated (~) register can ask for a bank", at)
            for n in got:
                if n in where:
                    ln, c = where[n]
                    raise names_span.error(f"duplicate name {n!r} (first defined on line {ln})", at)
                if re.fullmatch(r"R\d+|RZ|P[0-6T]|PT|SR_\w+", n):
                    raise names_span.error(f"{n!r} is a register or keyword of the instruction set, not a name", at)
                where[n] = (span.line, names_span.col(at))
                names.append(n)
                banks.append(bank)
            if group and not auto and not share and consecutive:
                first = len(names) - len(got)
                if first < len(numbers) and numbers[first] % 2 == 0:
                    groups.append((group, first, len(fixed), names[first]))
        if not numbers:
            raise span.error("no register numbers")
        if share:
            if len(numbers) > 1:
                raise nums_span.error(f"'=' gives its names one register to share, not {len(numbers)}", 0)
            for n in names:
                fixed[n] = numbers[0]
            continue
        if auto:
            if len(names) > len(numbers):
                raise names_span.error(f"{len(names)} allocated names do not fit in the {len(numbers)} "
                                       f"register(s) of this line", 0)
            autos.append(AutoLine(tuple(names), tuple(numbers), tuple(banks), span.line))
        else:
            if len(names) > len(numbers):
                raise names_span.error(f"{len(names)} names for {len(numbers)} register(s)", 0)
            for n, r in zip(names, numbers):
                fixed[n] = r
    for group, _first, _k, member in groups:  # bare group names, unless a name of their own
        if group not in where:
            fixed[group] = fixed[member]
            where[group] = where[member]
    return RegisterMap(fixed, tuple(autos), where)


@attrs.define
class _Partners:
    banks: list
    restricted: int = 0
    uses: int = 0
    links: list = attrs.Factory(list)


def allocate(regmap: RegisterMap, code, banks: int = 4) -> dict:
    """name -> register of every allocated name (the rule in the module documentation).

    ``code``: the instructions in final order, each as ``(slots, alu, reuse_mask)`` where
    ``slots`` holds, per source slot, a fixed register number, an allocated name, or None;
    ``banks``: register banks, bank = register number mod ``banks`` (the config's
    ``regfile.banks``)."""
    nbanks = banks
    lines = regmap.auto
    if not lines:
        return {}
    line_of = regmap.auto_names
    free = [list(a.pool) for a in lines]
    out = {}

    def take(name, bank=None):
        pool = free[line_of[name][0]]
        for k, r in enumerate(pool):
            if bank is None or r % nbanks == bank:
                out[name] = pool.pop(k)
                return True
        return False

    # 1. requested banks
    for name in sorted(n for a in lines for n, b in zip(a.names, a.banks) if b >= 0):
        a = lines[line_of[name][0]]
        take(name, a.banks[a.names.index(name)])
    # 2. partners, walking the code with the reuse caches
    partners = {}
    held = ({}, {}, {})  # per slot: the operands its reuse cache holds

    def is_auto(x):
        return isinstance(x, str) and x not in out

    def bank_of(x):
        return (out[x] if isinstance(x, str) else x) % nbanks

    for slots, alu, reuse in code:
        for s, r in enumerate(slots):
            if r is None or not is_auto(r) or (alu and r in held[s]):
                continue
            p = partners.setdefault(r, _Partners([0] * nbanks))
            for s2, r2 in enumerate(slots):
                if s2 == s or r2 is None or r2 == r or (alu and r2 in held[s2]):
                    continue
                if is_auto(r2):
                    p.links.append(r2)
                else:
                    b = bank_of(r2)
                    if not p.banks[b]:
                        p.restricted += 1
                    p.banks[b] += 1
                p.uses += 1
        if alu:
            for s, r in enumerate(slots):
                if r is None:
                    continue
                if reuse >> s & 1:
                    held[s][r] = True
                else:
                    held[s].pop(r, None)
    # 3. most restricted, most used, then by name
    for name in sorted((n for n, p in partners.items() if p.uses), key=lambda n: (-partners[n].restricted,
                                                                                 -partners[n].uses, n)):
        if name in out:
            continue
        banks = partners[name].banks
        for bank in sorted(range(nbanks), key=lambda b: (banks[b], b)):
            if take(name, bank):
                for other in partners[name].links:
                    if other in partners and other not in out:
                        partners[other].banks[bank] += 1
                break
    # 4. the rest
    for name in sorted(n for a in lines for n in a.names):
        if name not in out:
            take(name)
    return out


def name_error(span: Span, name: str, at: int) -> SassParseError:
    return span.error(f"unknown name {name!r}: not a register, predicate, label, constant or mapped name", at)

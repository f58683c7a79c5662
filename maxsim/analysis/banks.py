"""Static register-bank and operand-reuse analysis of a decoded kernel.

Pure functions over a :class:`~maxsim.isa.instruction.Kernel`: no execution, no timing. The kernel is
walked once in program (address) order, which is the order the maxas assembler itself uses for its
reuse statistics.

The model
=========

Register file (maxwell-facts.md, "Register file and operand reuse"): ``banks`` banks (4 on Maxwell),
bank = register number mod ``banks``, one read per bank per cycle. Only ALU instructions (timing
class ``alu`` or ``alu_half``: FFMA, FMUL, IADD, XMAD, LOP, shifts, compares, SEL, ...) are counted;
they are the instructions whose operands go through the operand collector in one go and the only
ones that take reuse flags (maxas's "reuse" instruction types x32/shift/cmp). Their register sources
are the three operand slots of :attr:`Instruction.slot_regs`; ``RZ``, immediates and constants read
no bank.

Per ALU instruction:

- ``reads``: register operand reads, counted per slot (``FFMA R0, R4, R4, R0`` makes 3 reads; the
  C operand of FFMA counts, so one FFMA makes 3 reads and 64 FFMAs make 192).
- ``conflicts_no_reuse``: every source comes from the banks. The distinct registers are grouped by
  bank; a bank holding k distinct registers costs k-1 extra reads. The same register read in two
  slots is one bank read.
- ``reuse_hits``: slots whose register is held in that slot's reuse cache; they read no bank.
- ``conflicts_with_reuse`` ("unhidden" conflicts): the same count over the registers left after the
  reuse hits.

Reuse caches (documented choices, all parameters of :class:`ReuseModel`):

- One cache per operand slot, ``entries_per_slot`` = 2 registers (8 bytes per slot, maxas wiki).
- A ``.reuse`` flag on slot n of an instruction inserts that register into cache n once the
  instruction has read its operands (so it serves later instructions, never the flagging one).
- Replacement: LRU ("lru", default) or FIFO ("fifo"). LRU is what maxas's own reuse-flag allocator
  assumes: it remembers, per slot, the instruction that last *used* each register and forgets the
  least recently used one when its list is full. A flagged read of a cached register refreshes it.
- A read of a cached register *without* ``.reuse`` takes it out of the cache (``drop_on_plain_read``).
  This is maxas's own accounting (``registerHealth`` in MaxAs.pm: a slot read without the flag
  deletes the register from that slot's reuse history): the flag means "keep this value for a later
  instruction", so an unflagged read is the value's last use from the cache.
- Invalidation (``invalidate_on_write``): a write to a register removes it from every slot cache
  (maxas's allocator clears its reuse candidates on any instruction that writes the register, ALU or
  memory, predicated or not). It is applied after the instruction's own reads and flag insertions,
  so ``IADD R1, R1.reuse, R2`` leaves nothing stale behind.
- Invalidation (``invalidate_on_branch``): every control transfer empties all caches: after each
  BRA/CAL/RET/EXIT (maxas's allocator clears on BRA, SSY, CAL, PBK, PCNT, JCAL) and before any
  instruction that is a branch or call target (control may arrive there from a branch, so a static
  analysis cannot count on the fall-through contents).
- Instructions that are not ALU instructions neither read nor fill the caches; they only invalidate
  through their writes (and their control transfers).

maxas's published percentages come from ``registerHealth``, which keeps an *unbounded* per-slot set
and never invalidates it; :data:`MAXAS_HEALTH_MODEL` reproduces that accounting for comparison
(``analyze_banks(kernel, MAXAS_HEALTH_MODEL)``). On the maxas SGEMM kernels both models give the
same loop figures. One detail differs: registerHealth counts a conflict each time a bank changes
owner while scanning the slots (``A, B, A`` in one bank counts 2), this analysis counts distinct
registers (1).

Loops
=====

A loop is the range from the target of a backward ``BRA`` (target index <= branch index) to the
branch, inclusive. The main loop is the loop with the most FFMAs (ties: the longer one). For SGEMM
a k-step is 64 FFMAs (one value of k for an 8x8 thread tile); per-k-step figures divide the FFMA
instructions' totals in the main loop by ``ffma / 64``.
"""

from __future__ import annotations

from collections import Counter

import attrs

ALU_UNITS = frozenset(("alu", "alu_half"))
BRANCH_UNITS = frozenset(("branch", "exit"))
FFMA_PER_KSTEP = 64  # SGEMM: one k value for an 8x8 register tile = 64 FFMA


@attrs.frozen
class ReuseModel:
    """Parameters of the register-bank and reuse-cache model (see the module docstring)."""

    banks: int = attrs.field(default=4, validator=attrs.validators.ge(1))
    entries_per_slot: int | None = 2  # None: unbounded (maxas registerHealth accounting)
    policy: str = attrs.field(default="lru", validator=attrs.validators.in_(("lru", "fifo")))
    drop_on_plain_read: bool = True
    invalidate_on_write: bool = True
    invalidate_on_branch: bool = True

    @classmethod
    def from_regfile(cls, regfile, **overrides) -> "ReuseModel":
        """Build from an architecture config's register-file section (attributes ``banks`` and
        ``reuse_entries_per_slot``; a dict with those keys works too)."""
        get = regfile.get if isinstance(regfile, dict) else (lambda k, d=None: getattr(regfile, k, d))
        kw = {"banks": get("banks", 4), "entries_per_slot": get("reuse_entries_per_slot", 2)}
        kw.update(overrides)
        return cls(**kw)

    def to_dict(self) -> dict:
        return attrs.asdict(self)


DEFAULT_MODEL = ReuseModel()
MAXAS_HEALTH_MODEL = ReuseModel(entries_per_slot=None, invalidate_on_write=False,
                                invalidate_on_branch=False)
NO_REUSE_MODEL = ReuseModel(entries_per_slot=0)


@attrs.frozen
class BankRow:
    """Figures of one ALU instruction."""

    index: int
    line: int
    opcode: str  # full opcode with modifiers, e.g. "XMAD.PSL.CBCC"
    slot_regs: tuple  # register in slot 0, 1, 2 (-1: none)
    reuse_mask: int
    hit_mask: int  # bit n: slot n was served by its reuse cache
    reads: int
    reuse_hits: int
    conflicts_no_reuse: int
    conflicts_with_reuse: int

    def to_dict(self) -> dict:
        d = attrs.asdict(self)
        d["slot_regs"] = list(self.slot_regs)
        return d


@attrs.frozen
class BankTotals:
    """Sums over a set of ALU instructions."""

    instructions: int = 0
    ffma: int = 0
    reads: int = 0
    reuse_hits: int = 0
    conflicts_no_reuse: int = 0
    conflicts_with_reuse: int = 0

    @property
    def reuse_hit_rate(self) -> float:
        return self.reuse_hits / self.reads if self.reads else 0.0

    @property
    def hidden_conflicts(self) -> int:
        return self.conflicts_no_reuse - self.conflicts_with_reuse

    @classmethod
    def of(cls, rows) -> "BankTotals":
        n = f = r = h = c0 = c1 = 0
        for row in rows:
            n += 1
            f += row.opcode.split(".")[0] == "FFMA"
            r += row.reads
            h += row.reuse_hits
            c0 += row.conflicts_no_reuse
            c1 += row.conflicts_with_reuse
        return cls(n, f, r, h, c0, c1)

    def scaled(self, factor: float) -> dict:
        """The additive figures multiplied by ``factor`` (e.g. 1 / k-steps)."""
        return {k: getattr(self, k) * factor for k in
                ("reads", "reuse_hits", "conflicts_no_reuse", "conflicts_with_reuse")}

    def to_dict(self) -> dict:
        d = attrs.asdict(self)
        d["reuse_hit_rate"] = self.reuse_hit_rate
        return d


@attrs.frozen
class LoopReport:
    """Figures of one loop (backward branch)."""

    start: int  # index of the first instruction (the branch target)
    end: int  # index of the backward branch
    label: str
    totals: BankTotals  # all ALU instructions of the loop
    ffma_totals: BankTotals  # the FFMA instructions of the loop only

    @property
    def ffma(self) -> int:
        return self.ffma_totals.instructions

    @property
    def k_steps(self) -> float:
        return self.ffma / FFMA_PER_KSTEP

    @property
    def per_kstep(self) -> dict:
        """FFMA figures per 64 FFMAs (reads, reuse_hits, conflicts_no_reuse, conflicts_with_reuse)."""
        return self.ffma_totals.scaled(1 / self.k_steps) if self.ffma else {}

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "label": self.label, "ffma": self.ffma,
                "k_steps": self.k_steps, "totals": self.totals.to_dict(),
                "ffma_totals": self.ffma_totals.to_dict(), "per_kstep": self.per_kstep}


@attrs.frozen
class BankReport:
    kernel: str
    model: ReuseModel
    rows: tuple  # BankRow per ALU instruction, in program order
    totals: BankTotals  # whole kernel
    loops: tuple  # LoopReport per backward branch, in program order
    main_loop: LoopReport | None

    @property
    def reuse_hit_rate_kernel(self) -> float:
        return self.totals.reuse_hit_rate

    @property
    def reuse_hit_rate_loop(self) -> float:
        return self.main_loop.totals.reuse_hit_rate if self.main_loop else 0.0

    @property
    def loop_ffma(self) -> int:
        return self.main_loop.ffma if self.main_loop else 0

    @property
    def per_kstep(self) -> dict:
        return self.main_loop.per_kstep if self.main_loop else {}

    def to_dict(self) -> dict:
        return {
            "kernel": self.kernel,
            "model": self.model.to_dict(),
            "totals": self.totals.to_dict(),
            "reuse_hit_rate_kernel": self.reuse_hit_rate_kernel,
            "reuse_hit_rate_loop": self.reuse_hit_rate_loop,
            "loop_ffma": self.loop_ffma,
            "per_kstep": self.per_kstep,
            "main_loop": self.main_loop.to_dict() if self.main_loop else None,
            "loops": [lp.to_dict() for lp in self.loops],
            "rows": [r.to_dict() for r in self.rows],
        }


def bank_conflicts(regs, banks: int = 4) -> int:
    """Extra bank reads needed to read ``regs`` (register numbers, -1 = none): for each bank,
    (number of distinct registers in it) - 1."""
    per_bank = Counter(r % banks for r in set(regs) if r >= 0)
    return sum(k - 1 for k in per_bank.values())


def find_loops(kernel) -> list:
    """(start, end) index pairs of every backward BRA, in program order."""
    out = []
    for ins in kernel.instructions:
        if ins.opcode == "BRA" and 0 <= ins.target <= ins.index:
            out.append((ins.target, ins.index))
    return out


class _SlotCache:
    """One operand slot's reuse cache: an ordered set, oldest first."""

    __slots__ = ("regs", "capacity", "lru")

    def __init__(self, capacity, lru):
        self.regs = []
        self.capacity = capacity
        self.lru = lru

    def __contains__(self, r):
        return r in self.regs

    def insert(self, r):
        if self.capacity == 0:
            return
        if r in self.regs:
            if self.lru:
                self.regs.remove(r)
                self.regs.append(r)
            return
        if self.capacity is not None and len(self.regs) >= self.capacity:
            del self.regs[0]
        self.regs.append(r)

    def discard(self, r):
        if r in self.regs:
            self.regs.remove(r)

    def clear(self):
        self.regs.clear()


def analyze_banks(kernel, model: ReuseModel | None = None) -> BankReport:
    """Count register-bank conflicts and reuse-cache hits of every ALU instruction of ``kernel``."""
    model = model or DEFAULT_MODEL
    caches = [_SlotCache(model.entries_per_slot, model.policy == "lru") for _ in range(3)]
    targets = {ins.target for ins in kernel.instructions if ins.target >= 0}
    rows = []
    for ins in kernel.instructions:
        if model.invalidate_on_branch and ins.index in targets:
            for c in caches:
                c.clear()
        if ins.unit in ALU_UNITS:
            slots = tuple(ins.slot_regs) + (-1,) * (3 - len(ins.slot_regs))
            hit_mask = 0
            from_bank = []
            reads = 0
            for n, r in enumerate(slots):
                if r < 0:
                    continue
                reads += 1
                if r in caches[n]:
                    hit_mask |= 1 << n
                else:
                    from_bank.append(r)
            # the flags take effect once the operands have been read
            for n, r in enumerate(slots):
                if r < 0:
                    continue
                if ins.reuse_mask >> n & 1:
                    caches[n].insert(r)
                elif model.drop_on_plain_read:
                    caches[n].discard(r)
            rows.append(BankRow(
                index=ins.index, line=ins.line, opcode=ins.full_opcode, slot_regs=slots,
                reuse_mask=ins.reuse_mask, hit_mask=hit_mask, reads=reads,
                reuse_hits=bin(hit_mask).count("1"),
                conflicts_no_reuse=bank_conflicts(slots, model.banks),
                conflicts_with_reuse=bank_conflicts(from_bank, model.banks)))
        if model.invalidate_on_write:
            for r in ins.dst_regs:
                for c in caches:
                    c.discard(r)
        if model.invalidate_on_branch and ins.unit in BRANCH_UNITS:
            for c in caches:
                c.clear()

    totals = BankTotals.of(rows)
    labels = {}
    for name, i in kernel.labels:
        labels.setdefault(i, name)
    loops = []
    for start, end in find_loops(kernel):
        inside = [r for r in rows if start <= r.index <= end]
        loops.append(LoopReport(
            start=start, end=end, label=labels.get(start, f"@{start}"),
            totals=BankTotals.of(inside),
            ffma_totals=BankTotals.of(r for r in inside if r.opcode.split(".")[0] == "FFMA")))
    main = max(loops, key=lambda lp: (lp.ffma, lp.end - lp.start), default=None)
    return BankReport(kernel=kernel.name, model=model, rows=tuple(rows), totals=totals,
                      loops=tuple(loops), main_loop=main)


def executed_bank_figures(report: BankReport, per_instruction) -> dict:
    """Weight the static per-instruction figures by how often each instruction executed.

    ``per_instruction`` is the warp-level execution count of every static instruction (from a
    functional launch). Returns the whole run's unhidden bank conflicts, reuse hits, operand reads
    and reuse hit rate, counted the way this analysis counts them (program order, no warp switches).
    """
    unhidden = hits = reads = no_reuse = 0
    for row in report.rows:
        n = int(per_instruction[row.index])
        unhidden += row.conflicts_with_reuse * n
        no_reuse += row.conflicts_no_reuse * n
        hits += row.reuse_hits * n
        reads += row.reads * n
    return {"register_bank_conflicts": unhidden, "register_bank_conflicts_no_reuse": no_reuse,
            "reuse_hits": hits, "operand_reads": reads,
            "reuse_hit_rate": hits / reads if reads else 0.0}


def opcode_mix(kernel, start: int = 0, end: int | None = None, by: str = "opcode") -> dict:
    """Instruction counts of ``kernel`` (or of instructions ``start..end`` inclusive), most frequent
    first. ``by``: "opcode" (base opcode, e.g. FFMA), "full" (with modifiers, e.g. LDS.U.128) or
    "unit" (timing class)."""
    if by not in ("opcode", "full", "unit"):
        raise ValueError(f"opcode_mix: by must be 'opcode', 'full' or 'unit', not {by!r}")
    last = len(kernel.instructions) - 1 if end is None else end
    key = {"opcode": lambda i: i.opcode, "full": lambda i: i.full_opcode, "unit": lambda i: i.unit}[by]
    counts = Counter(key(i) for i in kernel.instructions if start <= i.index <= last)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _reg(r):
    return "-" if r < 0 else f"R{r}"


def format_bank_report(report: BankReport, rows: str = "unhidden") -> str:
    """A text summary of ``report``. ``rows`` selects the per-instruction table: "all",
    "conflicts" (any conflict with reuse off), "unhidden" (conflicts left with reuse) or "none"."""
    if rows not in ("all", "conflicts", "unhidden", "none"):
        raise ValueError(f"format_bank_report: rows must be all, conflicts, unhidden or none, not {rows!r}")
    m = report.model
    cap = "unbounded" if m.entries_per_slot is None else str(m.entries_per_slot)
    out = [f"Register banks and operand reuse: {report.kernel}",
           f"  model: {m.banks} banks (bank = reg mod {m.banks}); reuse cache {cap} per slot, "
           f"{m.policy.upper()}; drop on unflagged read: {'yes' if m.drop_on_plain_read else 'no'}; "
           f"invalidate on write: {'yes' if m.invalidate_on_write else 'no'}, "
           f"on branch/target: {'yes' if m.invalidate_on_branch else 'no'}",
           ""]
    head = f"  {'':24s}{'ALU ins':>8s}{'FFMA':>7s}{'reads':>8s}{'hits':>7s}{'hit rate':>10s}" \
           f"{'confl. no reuse':>17s}{'unhidden':>10s}"

    def line(name, t):
        return (f"  {name:24s}{t.instructions:8d}{t.ffma:7d}{t.reads:8d}{t.reuse_hits:7d}"
                f"{100 * t.reuse_hit_rate:9.1f}%{t.conflicts_no_reuse:17d}{t.conflicts_with_reuse:10d}")

    out.append(head)
    out.append(line("whole kernel", report.totals))
    for lp in report.loops:
        tag = "main loop" if lp is report.main_loop else "loop"
        out.append(line(f"{tag} {lp.label} [{lp.start}-{lp.end}]", lp.totals))
        if lp.ffma:
            out.append(line("  its FFMAs", lp.ffma_totals))
    lp = report.main_loop
    if lp is not None and lp.ffma:
        k = lp.per_kstep
        out += ["",
                f"  per k-step (64 FFMA; main loop has {lp.ffma} FFMA = {lp.k_steps:g} k-steps):",
                f"    conflicts, reuse off: {k['conflicts_no_reuse']:g}   unhidden with reuse: "
                f"{k['conflicts_with_reuse']:g}   reuse hits: {k['reuse_hits']:g} of "
                f"{k['reads']:g} reads ({100 * lp.ffma_totals.reuse_hit_rate:.1f}%)"]
    if rows != "none":
        pick = {"all": lambda r: True,
                "conflicts": lambda r: r.conflicts_no_reuse > 0,
                "unhidden": lambda r: r.conflicts_with_reuse > 0}[rows]
        sel = [r for r in report.rows if pick(r)]
        out += ["", f"  instructions ({rows}): {len(sel)}"]
        if sel:
            out.append(f"  {'index':>6s}{'line':>6s}  {'opcode':16s}{'slot 0':>8s}{'slot 1':>8s}{'slot 2':>8s}"
                       f"{'reuse':>7s}{'hits':>6s}{'reads':>6s}{'confl.':>7s}{'unhid.':>7s}")
            for r in sel:
                flags = "".join(str(n) if r.reuse_mask >> n & 1 else "." for n in range(3))
                hits = "".join(str(n) if r.hit_mask >> n & 1 else "." for n in range(3))
                out.append(f"  {r.index:6d}{r.line:6d}  {r.opcode:16s}"
                           + "".join(f"{_reg(x):>8s}" for x in r.slot_regs)
                           + f"{flags:>7s}{hits:>6s}{r.reads:6d}{r.conflicts_no_reuse:7d}"
                           f"{r.conflicts_with_reuse:7d}")
    return "\n".join(out) + "\n"

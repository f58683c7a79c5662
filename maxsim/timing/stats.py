"""The statistics of one timing run: filled by the parts of the SM, read by every report.

The ``--json`` keys are the names returned by :meth:`Stats.to_dict`.
"""

from __future__ import annotations

import collections.abc
import itertools

import attrs

STALL_REASONS = (
    "stall_count",  # the control code's stall count of the previous instruction
    "dependency",  # waiting on a dependency barrier (variable-latency result or operand read)
    "barrier_wait",  # waiting at BAR.SYNC for the other warps of the CTA
    "memory_throttle",  # the memory unit or the warp's memory queue is full
    "pipe_busy",  # half-rate pipe, or the scheduler held by register-bank conflicts
    "not_selected",  # ready, but the scheduler issued another warp
)

# per-instruction counters (``Stats.per_pc``: one row per instruction index, these columns), kept
# by both SM cores at the same points as the totals above, so each column sums to its total
PC_FIELDS = (
    "executions",  # warp instructions issued
    "dual_issued",  # issued as the second instruction of a dual issue (no issue cycle of its own)
    "bank_conflicts",  # extra register-bank reads (after the reuse caches)
    "bank_conflict_cycles",  # dispatch cycles lost to them
    "delayed_conflicts",  # collisions with a memory instruction's late operand read
    "reuse_hits",  # operands served by the reuse caches
    "shared_requests",
    "shared_wavefronts",
    "texture_requests",
    "texture_sectors",
    "texture_hits",  # sectors hit in the L1/texture cache
    "l2_hits",  # sectors of its L2 reads that hit (texture misses and global loads)
    "l2_misses",
) + tuple("stall_" + r for r in STALL_REASONS)  # warp-cycles stalled waiting to issue it
(PC_EXEC, PC_DUAL, PC_BANK_CONFLICTS, PC_BANK_CYCLES, PC_DELAYED, PC_REUSE_HITS, PC_SHARED_REQ,
 PC_SHARED_WF, PC_TEX_REQ, PC_TEX_SECTORS, PC_TEX_HITS, PC_L2_HITS, PC_L2_MISSES) = range(13)
PC_STALLS = 13  # the STALL_REASONS, in order
PC_SIZE = len(PC_FIELDS)


class WarpStalls(collections.abc.MutableMapping):
    """Per warp (by label), its stall cycles per reason (``{reason: cycles}``, in STALL_REASONS'
    order): a mapping that keeps the rows of many warps added at once (:meth:`add_rows`, an SM's
    exited warps) as they came, one array of counts per batch, and makes a warp's dictionary only
    when it is read (a whole-GPU run ends hundreds of thousands of warps; most reports read only
    the totals). Reads and writes see it as a plain dictionary in insertion order."""

    __slots__ = ("_d", "_blocks", "_keys")

    def __init__(self, items=()):
        self._d = dict(items)
        self._blocks = []  # (labels, counts: warp x reason array), in the order added, after _d's
        self._keys = set()  # the labels of _blocks

    def add_rows(self, labels, counts) -> None:
        """Add the warps ``labels`` with their stall ``counts`` (warp x reason, an array or rows):
        to a warp already present, else as a new entry."""
        if not len(labels):
            return
        keys = set(labels)
        if len(keys) == len(labels) and self._keys.isdisjoint(keys) and self._d.keys().isdisjoint(keys):
            self._blocks.append((list(labels), counts))
            self._keys |= keys
            return
        d = self._whole()
        for label, row in zip(labels, counts.tolist() if hasattr(counts, "tolist") else counts):
            old = d.get(label)
            if old is None:
                d[label] = dict(zip(STALL_REASONS, row))
            else:
                for r, n in zip(STALL_REASONS, row):
                    old[r] += n

    def add_prefixed(self, other, prefix) -> None:
        """Every warp of ``other`` (a WarpStalls, or a mapping) added under ``prefix + label``, its
        dictionary made only when read if ``other`` had not made it yet."""
        if not isinstance(other, WarpStalls) or other._d:
            for label, reasons in other.items():
                self[prefix + label] = reasons
            return
        for labels, counts in other._blocks:
            self.add_rows([prefix + x for x in labels], counts)

    def _whole(self) -> dict:
        """The plain dictionary, each batch added made entries (in the order they came)."""
        if self._blocks:
            d = self._d
            for labels, counts in self._blocks:
                rows = counts.tolist() if hasattr(counts, "tolist") else counts
                d.update(zip(labels, map(dict, map(zip, itertools.repeat(STALL_REASONS), rows))))
            self._blocks = []
            self._keys = set()
        return self._d

    def __getitem__(self, label):
        return self._whole()[label]

    def __setitem__(self, label, reasons):
        self._whole()[label] = reasons

    def __delitem__(self, label):
        del self._whole()[label]

    def __iter__(self):
        return iter(self._whole())

    def __len__(self):
        return len(self._d) + len(self._keys)

    def __contains__(self, label):
        return label in self._d or label in self._keys

    def __eq__(self, other):
        if isinstance(other, WarpStalls):
            other = other._whole()
        return self._whole() == other

    def __repr__(self):
        return f"WarpStalls({self._whole()!r})"

    def __getstate__(self):
        return self._whole()

    def __setstate__(self, d):
        self._d, self._blocks, self._keys = d, [], set()


@attrs.define
class Stats:
    clock_hz: float = 1.0
    cycles: int = 0
    warp_instructions: int = 0
    thread_instructions: int = 0
    divergent_branches: int = 0  # branches whose active lanes disagreed (each serialises two paths)
    idle_lanes: int = 0  # lanes not active, summed over the warp instructions (divergence, EXIT)
    ffma: int = 0
    flops: int = 0  # 2 per active lane of FFMA, 1 of FMUL/FADD
    dual_issues: int = 0
    opcode_counts: dict = attrs.Factory(dict)
    bank_conflicts: int = 0  # extra bank reads needed (with reuse caches)
    bank_conflict_cycles: int = 0  # issue cycles lost to them (after collector hiding)
    delayed_conflicts: int = 0  # ALU reads that collided with a memory instruction's late read
    reuse_hits: int = 0
    operand_reads: int = 0
    shared_requests: int = 0
    shared_wavefronts: int = 0
    tex_requests: int = 0
    tex_sectors: int = 0
    tex_hits: int = 0
    l2_hits: int = 0
    l2_misses: int = 0
    dram_bytes: int = 0
    stores: int = 0
    hazards: list = attrs.Factory(list)
    stall_reasons: dict = attrs.Factory(lambda: {r: 0 for r in STALL_REASONS})
    warp_stalls: WarpStalls = attrs.Factory(WarpStalls)  # warp label -> {reason: cycles}
    sim_seconds: float = 0.0  # wall time of the timing model
    functional_seconds: float = 0.0  # wall time of the functional run that produced the trace
    schedulers: int = 4
    warps_per_scheduler: float = 0.0
    # per instruction: numpy int64 array (instruction x PC_FIELDS), summed like the totals
    per_pc: object = attrs.field(default=None, eq=False)

    def add_per_pc(self, rows) -> None:
        """Add an SM's per-instruction counters (instruction x PC_FIELDS)."""
        import numpy as np
        rows = np.asarray(rows, dtype=np.int64)
        self.per_pc = rows.copy() if self.per_pc is None else self.per_pc + rows

    def to_dict(self) -> dict:
        cyc = max(self.cycles, 1)
        return {
            "cycles": self.cycles,
            "ipc": self.warp_instructions / cyc,
            "gflops": self.flops / (self.cycles / self.clock_hz) / 1e9 if self.cycles else 0.0,
            "ffma_pipe_utilisation": self.ffma / (cyc * self.schedulers),
            "warp_instructions": self.warp_instructions,
            "divergent_branches": self.divergent_branches,
            # active lanes per warp instruction over 32 (nvprof's warp_execution_efficiency)
            "simd_efficiency": (1.0 - self.idle_lanes / (32 * self.warp_instructions)
                                if self.warp_instructions else 1.0),
            "dual_issues": self.dual_issues,
            "opcode_counts": dict(self.opcode_counts),
            "register_bank_conflicts": self.bank_conflicts,
            "bank_conflict_cycles": self.bank_conflict_cycles,
            "delayed_bank_conflicts": self.delayed_conflicts,
            "reuse_hits": self.reuse_hits,
            "operand_reads": self.operand_reads,
            "reuse_hit_rate": self.reuse_hits / self.operand_reads if self.operand_reads else 0.0,
            "shared_requests": self.shared_requests,
            "shared_bank_conflicts": self.shared_wavefronts - self.shared_requests,
            "texture_requests": self.tex_requests,
            "texture_hit_rate": self.tex_hits / self.tex_sectors if self.tex_sectors else 0.0,
            "l2_hit_rate": self.l2_hits / (self.l2_hits + self.l2_misses) if (self.l2_hits + self.l2_misses) else 0.0,
            "dram_bytes": self.dram_bytes,
            "stall_reasons": dict(self.stall_reasons),
            "stall_reasons_per_warp": {k: dict(v) for k, v in self.warp_stalls.items()},
            "hazards": len(self.hazards),
            "sim_seconds": self.sim_seconds,
            "warp_instructions_per_second": self.warp_instructions / self.sim_seconds if self.sim_seconds else 0.0,
        }

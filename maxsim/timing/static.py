"""What the SM timing model knows of a kernel before it runs: unit codes, per-instruction
tables and how many CTAs fit on one SM. Shared by the compiled core and the reference core."""

from __future__ import annotations

from ..errors import SimulationError
from ..isa.issue import (BITCOUNT_OPCODES, depbar_of, depbar_set, dual_first, dual_second, late_address_word, operand_read_delay,
                         reads_constant_operand)
from ..isa.opcodes import mask_predicates

ALU, ALU_HALF, LDS, STS, TEX, LDG, STG, S2R, BAR, BRANCH, EXIT, NOP = range(12)
UNIT_CODE = {"alu": ALU, "alu_half": ALU_HALF, "lds": LDS, "sts": STS, "tex": TEX, "ldg": LDG,
             "stg": STG, "s2r": S2R, "bar": BAR, "branch": BRANCH, "exit": EXIT, "nop": NOP,
             # the quarter-rate unit issues like the half-rate ALU class but on a pipe of its own;
             # a "fixed" result (LDC) is timed like S2R with its own latency
             "xu": ALU_HALF, "fixed": S2R, "fp64": ALU_HALF}
PIPE = {"alu": 0, "alu_half": 1, "xu": 2, "fp64": 3}  # the scheduler's math pipes
MEMORY = frozenset((LDS, STS, TEX, LDG, STG))
# dual-issue roles of an instruction (bits of StaticInfo.dual; the rules: maxsim.isa.issue)
DUAL_FIRST, DUAL_SECOND, DUAL_CONST = 1, 2, 4
NEVER = 1 << 62


class StaticInfo:
    """Per-instruction tables the timing loop reads (built once per kernel and config)."""

    def __init__(self, kernel, cfg):
        lat = cfg.latency
        n = len(kernel.instructions)
        banks = cfg.regfile.banks
        self.unit = [0] * n
        self.dual = [0] * n  # DUAL_FIRST | DUAL_SECOND | DUAL_CONST bits
        self.read_delay = [0] * n  # cycles after issue at which the source registers are read
        self.late_reg = [-1] * n  # a source read later than the others (a 64-bit address's high word)
        self.late_read = [0] * n  # its extra cycles
        self.stall = [0] * n
        self.yld = [False] * n
        self.waits = [()] * n
        self.depbar = [(0, 0)] * n  # DEPBAR.LE SBn, k: (barrier n + 1, k): wait until k or fewer of its ops are out
        self.rbar = [0] * n
        self.wbar = [0] * n
        self.srcs = [()] * n
        self.dsts = [()] * n
        self.psrcs = [()] * n
        self.pdsts = [()] * n
        self.reads = [()] * n  # ALU operand reads: (slot, reg, bank, flagged)
        self.mem_reads = [()] * n  # banks read late by memory instructions
        self.latency = [0] * n
        self.is_ffma = [False] * n
        self.back_branch = [False] * n
        self.flops = [0] * n
        self.pipe = [0] * n  # math pipe (0 ALU, 1 half-rate, 2 xu)
        self.interval = [0] * n  # cycles the pipe is busy per warp instruction
        intervals = (int(round(cfg.pipes.alu_interval)), int(round(cfg.pipes.alu_half_interval)),
                     int(round(1.0 / cfg.pipes.xu)), int(round(1.0 / cfg.pipes.fp64)))
        for i in kernel.instructions:
            k = i.index
            u = UNIT_CODE[i.unit]
            self.unit[k] = u
            self.dual[k] = (DUAL_FIRST if dual_first(i) else 0) | (DUAL_SECOND if dual_second(i) else 0) | \
                (DUAL_CONST if reads_constant_operand(i) else 0)
            self.read_delay[k] = operand_read_delay(i.unit, i.opcode, lat)
            self.late_reg[k], self.late_read[k] = late_address_word(i, lat)
            self.stall[k] = i.control.stall
            self.yld[k] = i.control.yield_
            # DEPBAR {n, ...} waits for those scoreboards (barriers n + 1) as a wait mask does
            wait = i.control.wait | depbar_set(i)
            self.waits[k] = tuple(b + 1 for b in range(6) if wait >> b & 1)
            self.depbar[k] = depbar_of(i)
            self.rbar[k] = i.control.read_bar
            self.wbar[k] = i.control.write_bar
            self.srcs[k] = tuple(i.src_regs)
            self.dsts[k] = tuple(i.dst_regs)
            ps = [o.reg for o in i.operands[_n_dst(i):] if o.kind == "pred" and o.reg != 7]
            if i.opcode == "P2R":  # the predicates of its mask
                ps += list(mask_predicates(i))
            if i.pred != 7:
                ps.append(i.pred)
            self.psrcs[k] = tuple(ps)
            self.pdsts[k] = tuple(i.dst_preds)
            if u in (ALU, ALU_HALF):
                seen = set()
                reads = []
                for slot, r in enumerate(i.slot_regs):
                    if r < 0:
                        continue
                    reads.append((slot, r, r % banks, bool(i.reuse_mask >> slot & 1), r in seen))
                    seen.add(r)
                self.reads[k] = tuple(reads)
                self.pipe[k] = PIPE[i.unit]
                self.interval[k] = intervals[self.pipe[k]]
                if i.unit == "xu":
                    self.latency[k] = lat.bitcount if i.opcode in BITCOUNT_OPCODES else lat.xu
                elif i.unit == "fp64":
                    self.latency[k] = lat.fp64
                else:
                    self.latency[k] = lat.predicate if i.dst_preds else (lat.alu if u == ALU else lat.alu_half)
            elif u == S2R:
                self.latency[k] = lat.ldc if i.opcode == "LDC" else lat.s2r
                if i.opcode == "LDC":  # each further distinct address of a warp's LDC adds this
                    self.interval[k] = lat.ldc_per_address
            elif u in MEMORY:
                self.mem_reads[k] = tuple(sorted({r % banks for r in i.src_regs}))
                # the earliest a load's result can be written (its memory path's least latency:
                # a shared-memory access, an L1/texture hit): what the hazard check takes as the
                # time a load overwrites its destination, which an earlier instruction may still
                # have to read (ptxas reuses an address register as the next load's destination;
                # the load's own timing comes from the memory model, not from this figure)
                self.latency[k] = lat.lds if u in (LDS, STS) else min(lat.tex_l1_hit, lat.l2_hit)
            self.is_ffma[k] = i.opcode == "FFMA"
            self.flops[k] = 64 if i.opcode == "FFMA" else (
                32 if i.opcode in ("FMUL", "FADD", "FMUL32I", "FADD32I") else 0)
            self.back_branch[k] = i.opcode == "BRA" and i.target <= k


def _n_dst(i):
    from ..isa.opcodes import OPCODES, spec_of
    return spec_of(i).n_dst


def cta_warp_slots(cid, cta_slot, block, warps):
    """The warp slots of CTA ``cid`` (``warps`` warps of a ``block``-thread block) placed in CTA slot
    ``cta_slot`` of an SM: the slots of that CTA slot's own block (slot c holds c x n ... c x n + n - 1,
    n the block's warps), so a CTA's warps spread over the schedulers (slot mod 4) the same way
    whenever it starts, whatever order the other CTAs' warps exited in. choice: the layout GPGPU-Sim
    uses; [jia18] measured warp w of a block on scheduler w mod 4. Handing a new CTA the lowest free
    slots instead could put three of its eight warps on one scheduler behind warps of a CTA still
    ending. More warps than the block holds would overlap another CTA slot's: an error."""
    per = (block + 31) // 32
    if warps > per:
        raise SimulationError(f"CTA {cid} has {warps} warps, more than its block of {block} threads holds")
    return range(cta_slot * per, cta_slot * per + warps)


def pairs(first: int, second: int) -> bool:
    """Whether instructions with dual-issue bits ``first`` (stall 0) and ``second`` (the next one)
    issue in one cycle: :func:`maxsim.isa.issue.can_dual_issue` on the bits of StaticInfo.dual."""
    return bool(first & DUAL_FIRST) and bool(second & DUAL_SECOND) and not (first & second & DUAL_CONST)


def residency(kernel, block, cfg):
    """CTAs of this kernel that fit on one SM at once, and the resource that limits them (the
    rules: :mod:`maxsim.timing.occupancy`)."""
    from .occupancy import occupancy
    occ = occupancy(kernel, block, cfg)
    return occ.ctas, occ.limited_by




# ops remembered per barrier for DEPBAR.LE SBn, k (the timing cores keep the completion cycles of
# each barrier's latest BAR_HIST ops; with more out, the wait is for all but k of those: a bound of
# the model's bookkeeping, not of the hardware, whose count field goes to 63)
BAR_HIST = 8


"""Occupancy: how many CTAs of a kernel one SM holds at once, what limits them, and how to ask
for another residency by declaring more registers.

The rules are those of the CUDA occupancy calculator for compute capability 5.x [cuda-occ], with
every number from ``cfg.sm``:

* **warps**: ``max_warps // warps per CTA`` (64 resident warps on Maxwell);
* **CTA slots**: ``max_ctas`` (32);
* **registers**: a warp is allocated ``ceil(registers x 32 / reg_alloc_granularity)`` units of
  ``reg_alloc_granularity`` (256) registers, and it takes them from the register file of its own
  scheduler partition: each of the ``schedulers`` partitions owns ``registers / schedulers``
  registers (16384 of 65536 on GM204 [wp980]), so a partition holds
  ``floor(16384 / registers per warp)`` warps and the SM ``schedulers`` times as many, which makes
  ``floor(that / warps per CTA)`` CTAs. (``cudaOccMaxBlocksPerSMRegsLimit`` of the CUDA toolkit's
  ``cuda_occupancy.h`` computes the same per sub-partition.) This is why a 64-thread kernel that
  declares 129 registers already drops from 8 to 6 CTAs: 129 x 32 = 4128 rounds up to 4352
  registers per warp, 16384 / 4352 = 3 warps per partition, 12 warps = 6 CTAs;
* **shared memory**: ``shared_bytes // (shared size rounded up to shared_alloc_granularity)``.

The SM holds the smallest of these; the resource that sets it is the limiting one (the first in
the order above on a tie).

A kernel's register count is what its header declares (``RegCnt``), not what its code touches:
the driver allocates the declared count. :func:`with_registers` declares a larger count without
changing the code, which is how maxas ran its 64-thread SGEMM at 3 warps per scheduler ("Max64-3",
[maxas-sgemm]). :func:`registers_for` finds the smallest count that gives a requested residency.
"""

from __future__ import annotations

import attrs

from ..errors import LaunchError, SimulationError
from ..isa.instruction import NUM_REGS


class OccupancyError(LaunchError):
    """A requested register count or residency the kernel cannot have."""


@attrs.frozen
class Occupancy:
    """The residency of one kernel launch configuration on one SM."""

    ctas: int  # resident CTAs per SM
    limited_by: str  # the resource that sets ``ctas``
    limits: dict  # resource -> CTAs it alone would allow ("warps", "ctas", "registers", "shared memory")
    registers: int  # registers per thread (declared)
    warps_per_cta: int
    schedulers: int
    max_warps: int

    @property
    def warps(self) -> int:
        """Resident warps per SM."""
        return self.ctas * self.warps_per_cta

    @property
    def warps_per_scheduler(self) -> float:
        return self.warps / self.schedulers

    @property
    def theoretical(self) -> float:
        """Resident warps / the SM's maximum (nvprof's "theoretical occupancy")."""
        return self.warps / self.max_warps


def registers_per_warp(regs: int, cfg) -> int:
    """Registers allocated to one warp: ``regs x warp_size`` rounded up to the allocation unit."""
    g = cfg.sm.reg_alloc_granularity
    return -(-max(regs, 1) * cfg.sm.warp_size // g) * g


def _limits(regs: int, shared_size: int, block: int, cfg) -> dict:
    sm = cfg.sm
    wpc = -(-block // sm.warp_size)
    per_partition = (sm.registers // sm.schedulers) // registers_per_warp(regs, cfg)
    limits = {
        "warps": sm.max_warps // wpc,
        "ctas": sm.max_ctas,
        "registers": per_partition * sm.schedulers // wpc,
    }
    if shared_size:
        sg = sm.shared_alloc_granularity
        limits["shared memory"] = sm.shared_bytes // (-(-shared_size // sg) * sg)
    return limits


def occupancy(kernel, block: int, cfg) -> Occupancy:
    """Resident CTAs of ``kernel`` in CTAs of ``block`` threads on one SM of ``cfg``, and why.

    Raises :class:`~maxsim.errors.SimulationError` when not even one CTA fits."""
    sm = cfg.sm
    if kernel.reg_cnt > sm.max_regs_per_thread:
        raise SimulationError(f"kernel {kernel.name} uses {kernel.reg_cnt} registers per thread; "
                              f"the SM allows {sm.max_regs_per_thread}")
    if kernel.shared_size > sm.max_shared_per_cta:
        raise SimulationError(f"kernel {kernel.name} needs {kernel.shared_size} bytes of shared memory "
                              f"per CTA; the limit is {sm.max_shared_per_cta}")
    if block > sm.max_threads_per_cta:
        raise SimulationError(f"block of {block} threads exceeds the SM limit of {sm.max_threads_per_cta}")
    limits = _limits(kernel.reg_cnt, kernel.shared_size, block, cfg)
    worst = min(limits, key=limits.get)
    if limits[worst] < 1:
        raise SimulationError(f"kernel {kernel.name} does not fit on one SM (limited by {worst})")
    return Occupancy(ctas=limits[worst], limited_by=worst, limits=limits, registers=kernel.reg_cnt,
                     warps_per_cta=-(-block // sm.warp_size), schedulers=sm.schedulers,
                     max_warps=sm.max_warps)


def registers_used(kernel) -> int:
    """Registers the kernel's code needs: its highest register number + 1 (vector operands count
    every register of the group; RZ is not a register)."""
    top = max((r for i in kernel.instructions for r in i.src_regs + i.dst_regs), default=-1)
    return top + 1


def with_registers(kernel, regs: int):
    """``kernel`` declaring ``regs`` registers per thread, its code unchanged.

    ``regs`` may not be fewer than the code uses (:func:`registers_used`) nor more than the
    instruction set addresses (255)."""
    used = registers_used(kernel)
    if not isinstance(regs, int) or regs < max(used, 1):
        raise OccupancyError(f"kernel {kernel.name} uses {used} registers per thread (R0-R{used - 1}); "
                             f"it cannot run with {regs}: the register count can only be raised")
    if regs > NUM_REGS:
        raise OccupancyError(f"{regs} registers per thread: a Maxwell thread addresses at most "
                             f"{NUM_REGS} (R0-R{NUM_REGS - 1})")
    return kernel if regs == kernel.reg_cnt else attrs.evolve(kernel, reg_cnt=regs)


def residencies(kernel, block: int, cfg) -> list:
    """``[(ctas, first register count, last register count)]``: every residency the kernel can
    have by declaring more registers (from what its code uses up to ``sm.max_regs_per_thread``),
    most CTAs first."""
    out = []
    lo = max(registers_used(kernel), 1)
    for regs in range(lo, cfg.sm.max_regs_per_thread + 1):
        limits = _limits(regs, kernel.shared_size, block, cfg)
        n = min(limits.values())
        if out and out[-1][0] == n:
            out[-1][2] = regs
        else:
            out.append([n, regs, regs])
    return [tuple(x) for x in out if x[0] >= 1]


def _ctas(n) -> str:
    return f"{n} CTA" if n == 1 else f"{n} CTAs"


def _reachable(options) -> str:
    return ", ".join(f"{n} ({a}-{b} registers)" if a != b else f"{n} ({a} registers)" for n, a, b in options)


def registers_for(kernel, block: int, cfg, *, regs=None, warps_per_scheduler=None, ctas_per_sm=None) -> int:
    """The register count that gives the requested residency: ``regs`` itself (checked), or the
    smallest count at which the SM holds exactly ``ctas_per_sm`` CTAs, or exactly
    ``warps_per_scheduler`` warps per scheduler. Give exactly one. Raises
    :class:`OccupancyError` (one line) when the kernel cannot have it."""
    given = [x is not None for x in (regs, warps_per_scheduler, ctas_per_sm)]
    if sum(given) != 1:
        raise OccupancyError("give one of: a register count, warps per scheduler, CTAs per SM")
    sm = cfg.sm
    wpc = -(-block // sm.warp_size)
    if regs is not None:
        if regs > sm.max_regs_per_thread:
            raise OccupancyError(f"{regs} registers per thread: the SM of {cfg.name} allows at most "
                                 f"{sm.max_regs_per_thread}")
        with_registers(kernel, regs)  # checks the lower bound
        occupancy(with_registers(kernel, regs), block, cfg)  # fits at all
        return regs
    if warps_per_scheduler is not None:
        warps = warps_per_scheduler * sm.schedulers
        if warps % wpc:
            fits = [f"{n * wpc // sm.schedulers} ({_ctas(n)})" for n, _, _ in residencies(kernel, block, cfg)
                    if n * wpc % sm.schedulers == 0]
            raise OccupancyError(
                f"{warps_per_scheduler} warps per scheduler is {warps} warps per SM, not a whole number of "
                f"{wpc}-warp CTAs of kernel {kernel.name}; warps per scheduler it can have: "
                f"{', '.join(fits) or 'none (use CTAs per SM)'}")
        what = f"{warps_per_scheduler} warps per scheduler ({_ctas(warps // wpc)} per SM)"
        ctas = warps // wpc
    else:
        ctas = ctas_per_sm
        what = f"{_ctas(ctas)} per SM"
    options = residencies(kernel, block, cfg)
    for n, lo, _ in options:
        if n == ctas:
            return lo
    used = max(registers_used(kernel), 1)
    if not options:
        raise OccupancyError(f"kernel {kernel.name} does not fit on one SM with any register count")
    if ctas > options[0][0]:
        limits = _limits(used, kernel.shared_size, block, cfg)
        worst = min(limits, key=limits.get)
        raise OccupancyError(
            f"{what} is out of reach for kernel {kernel.name}: with the {used} registers its code uses "
            f"the SM holds at most {_ctas(options[0][0])} (limited by {worst}); more registers only lower it")
    raise OccupancyError(f"no register count gives {what} for kernel {kernel.name} "
                         f"({wpc} warps per CTA); CTAs per SM it can have: {_reachable(options)}")

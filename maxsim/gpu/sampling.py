"""Predict a large launch from short simulations of one SM (sampling).

Simulating every instruction of an 8192^3 SGEMM is out of reach, but its structure is regular:

* **Waves.** The block dispatcher hands the first ``S x R`` CTAs (S SMs, R resident per SM)
  round-robin to the SMs, and each later CTA to the SM whose slot frees first. CTAs that start
  together end together, so the busiest SM runs *rounds* of R CTAs (all SMs busy), then a partial
  round of the ``T`` CTAs left (the whole grid if it is less than one wave, else the tail after
  the full waves), dealt round-robin: ``ceil(T / S)`` on the busiest SM. (A tail is dealt that way
  too: the last full wave's slots free within a few hundred cycles across the GPU, while an SM's
  own resident CTAs end further apart, so every SM's first free slot takes a tail CTA before any
  second one does.) The launch takes the sum of the busiest SM's rounds.
* **Steady state in K.** A CTA's time is a fixed cost (prologue, pipeline fill, epilogue) plus a
  cost per main-loop iteration, so the time of a round is affine in K. Each round type is
  simulated at two small K values (both past the pipeline fill) and the line through them is
  evaluated at the real K. When the real K is no larger than the second sample, it is simulated
  directly.
* **The rest of the GPU.** The simulated SM gets its share of the L2 capacity and of the L2 and
  DRAM bandwidth (1 / active SMs), and only the fraction of its L2 misses that reach DRAM in the
  real GPU: data that several CTAs of the same wave read (an SGEMM's A tile is read by every CTA
  of its row) comes from DRAM once per wave. ``footprint(cta)`` names the pieces of data a CTA reads;
  the fraction is (distinct pieces in the wave) / (sum over SMs of the distinct pieces of each SM).
* **Launches smaller than one wave, and tails of at most one CTA per SM,** are simulated whole
  instead (every CTA on its SM, one shared L2 and DRAM, as :func:`~maxsim.gpu.gpu.simulate_gpu`),
  still at two K values
  (``WAVE_K_SAMPLES``) and extrapolated. At low occupancy the SMs' timing depends on each other:
  an SM whose loads sit on the critical path finds in the L2 the tiles that SMs in another phase
  of their loop fetched a little earlier, and that sets which of two periodic schedules its warps
  settle into (sgemm_128 with one CTA per SM: 1041 or alternately 1041 / 1181 cycles per loop
  iteration). One SM with a share of the bandwidth cannot show that. The later K sample pair is
  used because the SMs need a few iterations to settle.

The tests check the prediction against the full simulation on sizes where both run.
"""

from __future__ import annotations

import attrs

from ..timing.memory_system import MemorySystem
from ..timing.run import simulate
from ..timing.sm import residency
from .gpu import simulate_gpu


WAVE_K_SAMPLES = (64, 128)  # K values at which a launch smaller than one wave is simulated whole


@attrs.define
class RoundSample:
    ctas: int  # CTAs the SM runs in this round
    active_sms: int
    dram_factor: float
    ks: tuple  # K values simulated
    cycles: tuple  # cycles of each
    loop_cycles: float  # steady-state cycles per loop iteration (second sample)


@attrs.define
class Prediction:
    cycles: float
    seconds: float
    rounds: list  # (count, RoundSample)
    waves: float
    resident_ctas: int
    sim_seconds: float = 0.0


def sm_rounds(grid_ctas, sms, resident):
    """The rounds SM 0 runs: (how many, CTAs per round, SMs active, first CTA of its wave, wave size)."""
    wave = sms * resident
    full, left = divmod(grid_ctas, wave)
    out = []
    if full:
        out.append((full, resident, sms, 0, wave))
    if left:
        # a partial first wave is dealt round-robin: the busiest SM gets ceil(left / S). So is a
        # tail after full waves, in effect: the slots of the last full wave free within a few
        # hundred cycles across the GPU, and an SM's own CTAs end further apart than that (its
        # warps do not share the schedulers evenly), so each SM's first free slot takes a tail CTA
        # before any SM's second does (the full simulation: sgemm_128 at N = 768 puts its 4 tail
        # CTAs on 4 SMs)
        out.append((1, -(-left // sms), min(sms, left), full * wave, left))
    return out


def round_ctas(rnd, sms, gx):
    """CTA ids (x, y) the sampled SM runs in a round of :func:`sm_rounds`: every ``sms``-th CTA of
    the wave (or tail), which is dealt round-robin."""
    _, count, _, first, _ = rnd
    return [((first + j * sms) % gx, (first + j * sms) // gx) for j in range(count)]


def dram_factor(first, n_ctas, sms, gx, footprint):
    """Fraction of one SM's L2 misses that reach DRAM when the whole wave runs together (the
    wave's ``n_ctas`` CTAs from ``first`` on, dealt round-robin over ``sms`` SMs)."""
    if footprint is None:
        return 1.0
    wave = [(i % gx, i // gx) for i in range(first, first + n_ctas)]
    union = set()
    groups = {}
    for i, cid in enumerate(wave):
        keys = set(footprint(cid))
        union |= keys
        groups.setdefault(i % sms, set()).update(keys)
    total = sum(len(v) for v in groups.values())
    return max(len(union) / total, 1e-3) if total else 1.0


def predict(kernel, block, grid, k, build, cfg, *, k_samples=(32, 64), footprint=None,
            progress=None):
    """Predict the launch of ``kernel`` over ``grid`` with inner dimension ``k``.

    ``build(k_value) -> (params, memory, textures)`` makes the same problem with another K (the
    launch geometry must not depend on K). ``footprint(cta) -> iterable`` names the data a CTA
    reads (see the module docstring); None means no sharing between CTAs.
    """
    gx, gy = grid
    sms = cfg.gpu.sms
    resident, _ = residency(kernel, block, cfg)
    rounds = sm_rounds(gx * gy, sms, resident)
    k1, k2 = k_samples
    out = []
    sim = 0.0
    backlog = (0.0, 0.0)  # L2 and DRAM work the previous round leaves queued, in cycles
    for rnd in rounds:
        n_rounds, ctas, active, first, wave = rnd
        if _simulated_whole(rnd, sms, resident):
            s, t = _whole_wave(kernel, block, grid, k, build, cfg, rnd, progress, backlog)
            out.append((n_rounds, s))
            sim += t
            continue
        ids = round_ctas(rnd, sms, gx)
        factor = dram_factor(first, wave, sms, gx, footprint)
        ks = (k,) if k <= k2 else (k1, k2)
        cyc = []
        loop = None
        for kk in ks:
            params, memory, textures = build(kk)
            ms = MemorySystem(cfg, bandwidth_share=1.0 / active,
                              l2_size_bytes=max(cfg.l2.size // active, cfg.l2.sector * cfg.l2.assoc),
                              dram_traffic_factor=factor)
            _queue_backlog(ms, backlog)
            _, sm = simulate(kernel, grid, block, params, memory, textures, cfg=cfg, ctas=ids,
                             memory_system=ms, hazards=None)
            cyc.append(sm.stats.cycles)
            end = sm.stats.cycles
            left = (max(0.0, ms.l2_server.next_free - end), max(0.0, ms.dram_server.next_free - end))
            loop = sm.loop_cycles_per_iteration()
            sim += sm.stats.sim_seconds + sm.stats.functional_seconds
            if progress is not None:
                progress()
        out.append((n_rounds, RoundSample(ctas, active, factor, ks, tuple(cyc), loop or 0.0)))
        backlog = left
    total = 0.0
    for n_rounds, r in out:
        if len(r.ks) == 1:
            t = r.cycles[0]
        else:
            (ka, kb), (ta, tb) = r.ks, r.cycles
            t = ta + (tb - ta) * (k - ka) / (kb - ka)
        total += n_rounds * t
    seconds = cfg.cycles_to_seconds(total) + cfg.gpu.launch_overhead_us * 1e-6
    return Prediction(cycles=total, seconds=seconds, rounds=out,
                      waves=gx * gy / (sms * resident), resident_ctas=resident, sim_seconds=sim)


def _simulated_whole(rnd, sms, resident):
    """Whether a round is simulated whole: a launch smaller than one wave, or a tail of at most
    one CTA per SM (few warps per SM: the SMs' timing depends on each other, see the module
    docstring)."""
    _, _, _, first, wave = rnd
    return wave < sms * resident and (first == 0 or wave <= sms)


def _queue_backlog(ms, backlog):
    """Occupy the memory system's L2 and DRAM servers for the first ``backlog`` = (L2, DRAM)
    cycles: work the previous round left queued when this one starts. The stores of a CTA's
    epilogue are posted (the CTA ends when it has issued them), so a round ends with the L2 still
    draining them, and the next round's first loads wait behind them. The backlog, in cycles,
    is the same for one SM with its share of the bandwidth as for the whole GPU."""
    l2, dram = backlog
    if l2 > 0:
        ms.l2_server.reserve(0, l2 * ms.l2_server.bytes_per_clk)
    if dram > 0:
        ms.dram_server.reserve(0, dram * ms.dram_server.bytes_per_clk)


def _whole_wave(kernel, block, grid, k, build, cfg, rnd, progress, backlog=(0.0, 0.0)):
    """Simulate a partial wave whole (its CTAs dealt to the SMs round-robin, one shared L2 and
    DRAM, queued behind the previous round's ``backlog``) at ``WAVE_K_SAMPLES`` (or at ``k``
    itself when no larger than the second): ``(RoundSample, simulator seconds)``."""
    _, ctas, active, first, wave = rnd
    gx, gy = grid
    ids = [(i % gx, i // gx) for i in range(first, first + wave)]
    k1, k2 = WAVE_K_SAMPLES
    ks = (k,) if k <= k2 else (k1, k2)
    cyc = []
    loop = None
    sim = 0.0
    for kk in ks:
        params, memory, textures = build(kk)
        ms = MemorySystem(cfg)
        _queue_backlog(ms, backlog)
        r = simulate_gpu(kernel, grid, block, params, memory, textures, cfg=cfg, ctas=ids, hazards=None,
                         memory_system=ms)
        cyc.append(r.cycles)
        busiest = max(r.sms, key=lambda sm: sm.now)
        loop = busiest.loop_cycles_per_iteration()
        sim += r.sim_seconds
        if progress is not None:
            progress()
    return RoundSample(ctas, active, 1.0, ks, tuple(cyc), loop or 0.0), sim


def samples_needed(grid, k, sms, resident, k_samples=(32, 64)):
    """How many short simulations :func:`predict` will run (for progress bars)."""
    n = 0
    for rnd in sm_rounds(grid[0] * grid[1], sms, resident):
        top = WAVE_K_SAMPLES[1] if _simulated_whole(rnd, sms, resident) else k_samples[1]
        n += 1 if k <= top else 2
    return n


__all__ = ["predict", "Prediction", "RoundSample", "sm_rounds", "round_ctas", "dram_factor", "samples_needed",
           "WAVE_K_SAMPLES"]

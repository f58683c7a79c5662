"""Predict a large launch from short simulations of one SM (sampling).

Simulating every instruction of an 8192^3 SGEMM is out of reach, but its structure is regular:

* **Waves.** The block dispatcher hands the first ``S x R`` CTAs (S SMs, R resident per SM)
  round-robin to the SMs, and each later CTA to the SM whose slot frees first. CTAs that start
  together end together, so the busiest SM runs *rounds* of R CTAs (all SMs busy), then a tail
  round: of ``ceil(G / S)`` CTAs if the grid is less than one wave (round-robin), else of up to R
  CTAs, because the SMs that finish the last full wave first take R tail CTAs each (their CTAs end
  within a few dozen cycles of each other, the SMs have drifted apart by far more). The launch
  takes the sum of the busiest SM's rounds.
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
* **Launches smaller than one wave** are simulated whole instead (every CTA on its SM, one shared
  L2 and DRAM, as :func:`~maxsim.gpu.gpu.simulate_gpu`), still at two K values
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
from .gpu import simulate_gpu
from ..timing.run import simulate
from ..timing.sm import residency


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
    if left and not full:
        # a partial first wave is dealt round-robin: the busiest SM gets ceil(left / S)
        out.append((1, -(-left // sms), min(sms, left), 0, left))
    elif left:
        # a tail after full waves goes to the SMs whose slots free first; an SM's resident CTAs
        # started together and end within a few dozen cycles of each other, while the SMs have
        # drifted apart by far more, so the first SMs to finish take up to R tail CTAs each
        per = min(resident, left)
        out.append((1, per, -(-left // per), full * wave, left))
    return out


def round_ctas(rnd, sms, gx):
    """CTA ids (x, y) the sampled SM runs in a round of :func:`sm_rounds`: every ``sms``-th CTA of
    a wave dealt round-robin; in a tail after full waves, ``count`` consecutive CTAs (the SM that
    frees first takes the next CTAs of the queue), so that every id lies inside the tail."""
    _, count, _, first, _ = rnd
    stride = sms if first == 0 else 1
    return [((first + j * stride) % gx, (first + j * stride) // gx) for j in range(count)]


def dram_factor(first, n_ctas, sms, gx, footprint, per_sm=None):
    """Fraction of one SM's L2 misses that reach DRAM when the whole wave runs together.

    The wave's CTAs are dealt round-robin over ``sms`` SMs, or, with ``per_sm``, in runs of
    ``per_sm`` consecutive CTAs (a tail after full waves, as :func:`round_ctas` samples it).
    """
    if footprint is None:
        return 1.0
    wave = [(i % gx, i // gx) for i in range(first, first + n_ctas)]
    union = set()
    groups = {}
    for i, cid in enumerate(wave):
        keys = set(footprint(cid))
        union |= keys
        groups.setdefault(i // per_sm if per_sm else i % sms, set()).update(keys)
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
    for rnd in rounds:
        n_rounds, ctas, active, first, wave = rnd
        if first == 0 and wave < sms * resident:  # the whole launch is one partial wave
            s, t = _whole_wave(kernel, block, grid, k, build, cfg, rnd, progress)
            out.append((n_rounds, s))
            sim += t
            continue
        ids = round_ctas(rnd, sms, gx)
        factor = dram_factor(first, wave, sms, gx, footprint, per_sm=None if first == 0 else ctas)
        ks = (k,) if k <= k2 else (k1, k2)
        cyc = []
        loop = None
        for kk in ks:
            params, memory, textures = build(kk)
            ms = MemorySystem(cfg, bandwidth_share=1.0 / active,
                              l2_size_bytes=max(cfg.l2.size // active, cfg.l2.sector * cfg.l2.assoc),
                              dram_traffic_factor=factor)
            _, sm = simulate(kernel, grid, block, params, memory, textures, cfg=cfg, ctas=ids,
                             memory_system=ms, hazards=None)
            cyc.append(sm.stats.cycles)
            loop = sm.loop_cycles_per_iteration()
            sim += sm.stats.sim_seconds + sm.stats.functional_seconds
            if progress is not None:
                progress()
        out.append((n_rounds, RoundSample(ctas, active, factor, ks, tuple(cyc), loop or 0.0)))
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


def _whole_wave(kernel, block, grid, k, build, cfg, rnd, progress):
    """Simulate a launch smaller than one wave whole at ``WAVE_K_SAMPLES`` (or at ``k`` itself
    when no larger than the second): ``(RoundSample, simulator seconds)``."""
    _, ctas, active, _, _ = rnd
    k1, k2 = WAVE_K_SAMPLES
    ks = (k,) if k <= k2 else (k1, k2)
    cyc = []
    loop = None
    sim = 0.0
    for kk in ks:
        params, memory, textures = build(kk)
        r = simulate_gpu(kernel, grid, block, params, memory, textures, cfg=cfg, hazards=None)
        cyc.append(r.cycles)
        busiest = max(r.sms, key=lambda sm: sm.now)
        loop = busiest.loop_cycles_per_iteration()
        sim += r.sim_seconds
        if progress is not None:
            progress()
    return RoundSample(ctas, active, 1.0, ks, tuple(cyc), loop or 0.0), sim


def samples_needed(grid, k, sms, resident, k_samples=(32, 64)):
    """How many short simulations :func:`predict` will run (for progress bars)."""
    rounds = sm_rounds(grid[0] * grid[1], sms, resident)
    if len(rounds) == 1 and rounds[0][3] == 0 and rounds[0][4] < sms * resident:
        return 1 if k <= WAVE_K_SAMPLES[1] else 2
    per = 1 if k <= k_samples[1] else 2
    return per * len(rounds)


__all__ = ["predict", "Prediction", "RoundSample", "sm_rounds", "round_ctas", "dram_factor", "samples_needed",
           "WAVE_K_SAMPLES"]

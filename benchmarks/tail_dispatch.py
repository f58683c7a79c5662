"""Where a launch's tail goes: the full simulation's block dispatcher against the measured GFLOPS,
and a dispatcher that prefers the SM with the fewest resident CTAs, laid over the same run.

    python benchmarks/tail_dispatch.py [--kernel sgemm_128] [--sizes 1280,1536,1664,1792]
                                       [--config gtx980_oc] [--set KEY=VALUE ...]
                                       [--paces 1,61,122,200] [--sampled]

For each size: a full simulation of the whole GPU (from the L2 the same launch left, as the
measured benchmark times back-to-back launches), its GFLOPS error against the measured curve
(``traces/``), the SMs its tail CTAs ran on (CTA count per SM) and how long the tail took, and how
far apart the slots of the last full wave freed (cycles from the first end to the last; the GPU's
CTAs in lockstep free them within about a thousand cycles).

Then, for each pace P of ``--paces`` (cycles between two CTAs the dispatcher hands out), the SMs
the tail would take under the rule "among the SMs with a free slot at a dispatch moment, the one
with the fewest resident CTAs" (the placement policy Gilman, Ogden, Guo and Walls find on Pascal,
Volta and Turing: the scheduler "chooses the next SM based on the SM's local resource
availability", ACM SIGMETRICS Performance Evaluation Review 48, 2020), laid over this run's ends of
the last full wave (:func:`fewest_resident`): the largest number of tail CTAs on one SM (1: spread,
one per SM; 2: two on some SM, so the tail takes a CTA's time at two per SM). The rule is not the
model's; this shows which tails it would spread, against what the measurements need.
``--sampled``: also the sampled prediction and its cycles against the full simulation's.
"""

from __future__ import annotations

import argparse
import collections
import time

import maxsim.timing.sm as sm_mod
from maxsim.arch.config import load_config, override
from maxsim.timing.occupancy import occupancy
from workloads.compare import load_measurements
from workloads.sgemm.generator import KERNELS, generate_kernel
from workloads.sgemm.predict import predict_sgemm
from setting_arg import setting

_built = []  # the SMs the full simulation built (their CTA logs); l2_start previous builds two sets
_sm_init = sm_mod.SM.__init__


def _init(self, *a, **kw):
    _sm_init(self, *a, **kw)
    _built.append(self)


sm_mod.SM.__init__ = _init


def fewest_resident(frees, n, pace):
    """The SMs of ``n`` tail CTAs under "the SM with the fewest resident CTAs among those with a free
    slot" (ties: the slot that freed first, then the lower SM), the dispatcher handing out one CTA
    every ``pace`` cycles from the first free slot on. ``frees``: ``[(cycle, sm)]``, when each slot
    of the last full wave freed (each slot's CTA is resident until then)."""
    pending = sorted(frees)
    given = []
    t = pending[0][0] if pending else 0
    for _ in range(n):
        t = max(t, pending[0][0])
        resident = collections.Counter(sm for e, sm in pending if e > t)
        resident.update(given)
        pick = min(((resident[sm], e, sm) for e, sm in pending if e <= t))[1:]
        pending.remove(pick)
        given.append(pick[1])
        t += pace
    return given


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="sgemm_128")
    ap.add_argument("--sizes", default="1280,1536,1664,1792")
    ap.add_argument("--config", default="gtx980_oc")
    ap.add_argument("--set", dest="settings", type=setting, action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--paces", default="1,61,122,200")
    ap.add_argument("--sampled", action="store_true")
    args = ap.parse_args()
    cfg = load_config(args.config)
    if args.settings:
        cfg = override(cfg, dict(args.settings))
    name = args.kernel
    measured = load_measurements().get(name, {})
    per_sm = occupancy(generate_kernel(name), KERNELS[name].threads, cfg).ctas
    wave = per_sm * cfg.gpu.sms
    paces = [int(x) for x in args.paces.split(",")]
    for n in (int(x) for x in args.sizes.split(",")):
        _built.clear()
        t0 = time.perf_counter()
        full = predict_sgemm(name, n, cfg, full=True, l2_start="previous")
        wall = time.perf_counter() - t0
        sms = _built[-cfg.gpu.sms:]  # the timed launch's SMs (the one after the warm-up launch)
        log = sorted((s, e, sm.sm_id) for sm in sms for _, s, e in sm.cta_log)
        full_waves, tail = divmod(len(log), wave)
        m = measured.get(n)
        err = f"{100 * (full['gflops'] - m) / m:+6.1f}%" if m else "   n/a"
        line = (f"{name} N={n}: {len(log)} CTAs, tail {tail}; full {full['cycles']:.0f} cycles, "
                f"{full['gflops']:.0f} GFLOPS, measured {m}, error {err} ({wall:.0f} s)")
        if args.sampled:
            samp = predict_sgemm(name, n, cfg, l2_start="previous")
            serr = f"{100 * (samp['gflops'] - m) / m:+.1f}%" if m else "n/a"
            line += (f"; sampled {samp['gflops']:.0f} GFLOPS, error {serr}, cycles against full "
                     f"{100 * (samp['cycles'] - full['cycles']) / full['cycles']:+.2f}%")
        print(line, flush=True)
        if not tail or not full_waves:
            continue
        last = log[(full_waves - 1) * wave:full_waves * wave]
        frees = [(e, sm) for _, e, sm in last]
        spread = max(e for e, _ in frees) - min(e for e, _ in frees)
        ran = collections.Counter(sm for _, _, sm in log[full_waves * wave:])
        took = max(e for _, e, _ in log) - min(s for s, _, _ in log[full_waves * wave:])
        print(f"  last full wave's slots free within {spread} cycles; the tail ran on {len(ran)} SMs, "
              f"at most {max(ran.values())} on one, in {took} cycles")
        for p in paces:
            got = collections.Counter(fewest_resident(frees, tail, p))
            print(f"  fewest resident CTAs, one CTA every {p} cycles: {len(got)} SMs, at most "
                  f"{max(got.values())} on one")


if __name__ == "__main__":
    main()

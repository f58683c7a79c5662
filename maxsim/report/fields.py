"""The fields of a run report (text and ``--json``), assembled from the parts' results.

Top-level ``register_bank_conflicts`` / ``reuse_hit_rate`` are the whole run's figures from the
static analysis weighted by execution counts (comparable with maxas's published figures); the timing
model's own counts for the simulated SM, which also see warp switches and late memory reads, carry
an ``sm_`` prefix.

``timed_sm_profiler_metrics`` are nvprof's metrics (see :mod:`maxsim.report.metrics`) of the timed SM:
it runs alone against the whole L2 and DRAM, so its hit rates and throughputs are one SM's, not the
GPU's. The launch's own figures, ``gpu_profiler_metrics``, come from the whole-GPU prediction
(:meth:`maxsim.host.LaunchReport.fields`); ``profiler_metrics`` is the GPU's when there is a
prediction with memory counters, else the timed SM's, and ``profiler_metrics_of`` says which
("gpu" or "timed_sm").

**Names that say their scope.** A figure of the whole launch carries the plain name: ``seconds``,
``cycles`` and ``gflops`` are the launch's, predicted on the config's GPU (present when there is a
prediction). A figure of the timed SM says so: ``sm_cycles``, ``sm_seconds`` (its cycles at the
clock in effect), ``sm_gflops``, ``sm_ipc``. The names of earlier versions stay one release as
aliases (:data:`RENAMED`): ``gpu_predicted_seconds`` / ``gpu_predicted_gflops`` (the launch's, now
``seconds`` / ``gflops``) and ``ipc`` are still written beside the new keys; ``cycles`` and
``gflops``, which were the timed SM's, now name the launch's figures, so the timed SM's are read as
``sm_cycles`` / ``sm_gflops`` (and from :attr:`LaunchReport.timing <maxsim.host.LaunchReport.timing>`,
the timed SM's own figures, ``timing["cycles"]`` still gives ``sm_cycles`` with a
DeprecationWarning).
"""

from __future__ import annotations

import warnings

from ..analysis import analyze_banks, executed_bank_figures
from ..errors import SimulationError
from ..timing.occupancy import occupancy
from .metrics import profiler_metrics, sm_counters
from .source import instruction_rows

_SM_PREFIXED = ("register_bank_conflicts", "reuse_hits", "operand_reads", "reuse_hit_rate",
                "warp_instructions", "opcode_counts", "cycles", "gflops", "ipc")

# old name -> new name, of the fields renamed to say their scope (kept one release: see above)
RENAMED = {
    "gpu_predicted_seconds": "seconds",  # still written (the same figure)
    "gpu_predicted_gflops": "gflops",  # still written (the same figure)
    "ipc": "sm_ipc",  # still written (the same figure)
    "cycles": "sm_cycles",  # of the timed SM until now; "cycles" is now the launch's
    "gflops": "sm_gflops",  # of the timed SM until now; "gflops" is now the launch's
}
KEPT_ALIASES = ("gpu_predicted_seconds", "gpu_predicted_gflops", "ipc")  # written beside the new names


class TimedSmFields(dict):
    """The timed SM's figures (:func:`timing_fields`): a dict whose old names of renamed figures
    (``cycles``, ``gflops``, ``ipc``) still read the new ones (``sm_cycles``, ...) with a
    DeprecationWarning."""

    def __missing__(self, key):
        new = RENAMED.get(key)
        if new is None or new not in self:
            raise KeyError(key)
        warnings.warn(f"the timed SM's {key!r} is now {new!r}", DeprecationWarning, stacklevel=2)
        return self[new]

    def get(self, key, default=None):
        return self[key] if key in self or (key in RENAMED and RENAMED[key] in self) else default


def launch_fields(prediction, gflops=None) -> dict:
    """The whole launch's figures of a prediction (:class:`maxsim.host.Prediction`): the GPU, its
    SMs, waves and method, ``seconds``, ``cycles`` and ``gflops`` (``gflops`` given, e.g. of the
    problem's nominal flops, else the prediction's), and the old names of earlier versions."""
    p = prediction
    out = {"gpu": p.gpu, "gpu_sms": p.sms, "seconds": p.seconds, "cycles": p.cycles}
    gflops = p.gflops if gflops is None else gflops
    if gflops is not None:
        out["gflops"] = gflops
    out.update(gpu_waves=p.waves, gpu_prediction_method=p.method, gpu_l2_start=p.details.get("l2_start", "empty"))
    out["gpu_predicted_seconds"] = p.seconds  # the old name (RENAMED), one release
    if gflops is not None:
        out["gpu_predicted_gflops"] = gflops
    return out


def functional_fields(kernel, launch_result) -> dict:
    out = {"warp_instructions": launch_result.warp_instructions,
           "opcode_counts": launch_result.opcode_counts}
    out.update(executed_bank_figures(analyze_banks(kernel), launch_result.per_instruction))
    return out


def timing_fields(sm) -> dict:
    """The timed SM's figures (:class:`TimedSmFields`), as ``maxsim run --json`` gives them."""
    out = TimedSmFields()
    seconds = sm.stats.cycles / sm.cfg.clock_hz
    for key, value in sm.stats.to_dict().items():
        out[("sm_" + key) if key in _SM_PREFIXED else key] = value
        if key == "cycles":
            out["sm_seconds"] = seconds
    out["ipc"] = out["sm_ipc"]  # the old name (RENAMED), one release
    out["cycles_per_loop_iteration"] = sm.loop_cycles_per_iteration()
    out["hazard_messages"] = sm.stats.hazards[:20]
    # the clock its cycles become time at: the nominal one x gpu.effective_clock_fraction
    out["sm_clock_mhz"] = sm.cfg.clock_hz / 1e6
    out["timed_sm_profiler_metrics"] = profiler_metrics(sm_counters(sm), seconds, sm.cfg)
    # per instruction (maxsim.report.source): each column sums to the totals above
    out["instructions"] = instruction_rows(sm)
    return out


def occupancy_fields(kernel, block, cfg) -> dict:
    """Residency of the kernel on one SM: CTAs, warps per scheduler, registers per thread, the
    limiting resource and the CTAs each resource alone allows (empty if not one CTA fits)."""
    try:
        occ = occupancy(kernel, block, cfg)
    except SimulationError:
        return {}
    return {"registers_per_thread": occ.registers, "resident_ctas_per_sm": occ.ctas,
            "warps_per_scheduler": occ.warps_per_scheduler, "theoretical_occupancy": occ.theoretical,
            "occupancy_limited_by": occ.limited_by, "occupancy_limits": dict(occ.limits)}

"""Sampled whole-GPU predictions: part of a launch simulated in full detail (every SM, the shared
L2 and DRAM, the block dispatcher) and the rest extrapolated.

* :mod:`.kloop`: launches with an SGEMM-shaped main loop over an inner dimension K (the workload
  says how to build the same launch at another K): :func:`predict`.
* :mod:`.dispatcher`: the CTA-level model of the block dispatcher the methods share.
* :mod:`.records`: what a prediction gives back; :mod:`.settings`: the methods' settings
  (``methods.toml``, each with why it has its value).

How each method works and the figures it was checked against: docs/prediction-methods.md.
"""

from ...timing.memory_system import MemorySystem  # noqa: F401  (the one name the samples take it by)
from .dispatcher import dispatch, resident_at
from .kloop import _predict, predict  # noqa: F401
from .kloop_choose import WINDOW_SHIFTS, _clear_of_ends, _mid_life, _staggered, _tail_sms, _window_times, samples_needed  # noqa: F401
from .kloop_history import _KNOWN, KNOWN_PROBLEMS, _History, _known_sectors, _moved_records, _relocated  # noqa: F401
from .kloop_run import _settled, _share, _sm_loop_cycles, _steady_state, _wave_start, _whole  # noqa: F401
from .records import Phase, Prediction, dram_busy, memory_counters
from .settings import (DRAM_SATURATED, HISTORY_FILL, STEADY_ITERATIONS, STEADY_SKIP, TAIL_SETTLE, WAVE_K_SAMPLES,
                       WAVE_SETTLE, WAVE_SETTLE_MAX_K, WAVE_START_K)

__all__ = ["predict", "Prediction", "Phase", "dispatch", "resident_at", "samples_needed", "memory_counters",
           "dram_busy", "WAVE_K_SAMPLES", "WAVE_SETTLE", "WAVE_SETTLE_MAX_K", "TAIL_SETTLE", "STEADY_ITERATIONS",
           "STEADY_SKIP", "HISTORY_FILL", "WAVE_START_K", "DRAM_SATURATED"]

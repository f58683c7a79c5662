"""The settings of the sampled predictions, read from ``methods.toml`` beside this module (each with
a comment naming why it has its value)."""

from __future__ import annotations

import pathlib
import tomllib

SETTINGS = tomllib.loads((pathlib.Path(__file__).with_name("methods.toml")).read_text())

_K = SETTINGS["kloop"]
WAVE_K_SAMPLES = tuple(_K["wave_k_samples"])  # K values at which a first wave or a tail is simulated whole
WAVE_SETTLE = _K["wave_settle"]  # a wave's cost per iteration has settled when it drifts less than this
WAVE_SETTLE_MAX_K = _K["wave_settle_max_k"]  # ... sampled again up to this K
TAIL_SETTLE = _K["tail_settle"]  # a tail drifting by d that is a share s is sampled again only if d x s exceeds this
STEADY_ITERATIONS = _K["steady_iterations"]  # main-loop iterations each CTA runs in a steady-state window
STEADY_SKIP = _K["steady_skip"]  # ... of which the first are left out (prologue and settling)
STEADY_PAGE_PERIODS = _K["steady_page_periods"]  # page periods a window measures at least (with the TLB history)
HISTORY_FILL = _K["history_fill"]  # history replayed into the L2 before a window, in L2 capacities
WAVE_START_K = _K["wave_start_k"]  # K to which the start of a later wave is simulated
DRAM_SATURATED = _K["dram_saturated"]  # DRAM busy share of a window from which a launch is dram_bound
WINDOW_SHIFTS = _K["window_shifts"]  # candidate window starts tried on each side of the middle
KNOWN_PROBLEMS = _K["known_problems"]  # problems whose CTAs' sectors are kept
TLB_HISTORY = _K["tlb_history"]  # the TLBs before a window hold the launch's pages in the order last read
KLOOP_AGREEMENT = _K["agreement"]  # the K-loop method's interval: its tested agreement with full simulations
SLOT_ORDER = _K["slot_order"]  # which slot a later CTA takes when slots free together in the dispatcher model
if SLOT_ORDER not in ("first_wave_ends", "slot"):
    raise ValueError(f"methods.toml [kloop] slot_order {SLOT_ORDER!r}: expected 'first_wave_ends' or 'slot'")
STAGGER_GROWTH = _K["stagger_growth"]  # how an SM's CTAs' start spacing grows with the waves before them
if STAGGER_GROWTH not in ("waves", "none"):
    raise ValueError(f"methods.toml [kloop] stagger_growth {STAGGER_GROWTH!r}: expected 'waves' or 'none'")

"""Published figures of maxas's SGEMM kernels that a run is set against.

[maxas-sgemm] (the maxas wiki page "SGEMM", docs/maxwell-facts.md): the main loop of the 64-thread
kernel issues in 520 cycles per 512 FFMA per warp-scheduler (98.5% of the FFMA issue slots), the
256-thread kernel's in 518 (98.8%), both at 4 resident warps per scheduler.
"""

MAIN_LOOP_CYCLES = {"sgemm_64": 520, "sgemm_128": 518}  # [maxas-sgemm]
WARPS_PER_SCHEDULER = 4  # [maxas-sgemm] the residency of both figures

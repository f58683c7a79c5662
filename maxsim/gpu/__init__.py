"""Many SMs sharing L2 and DRAM, CTA dispatch in waves."""

from .gpu import GpuResult, simulate_gpu

__all__ = ["simulate_gpu", "GpuResult"]

"""One figure of the validation: what the model gives, what the hardware was measured (or
documented) to do, and whether the two agree within the tolerance of the figure's kind.

The tolerances are criteria of this report, not model parameters: a row passes when
``|simulated - published| <= max(relative * |published|, absolute)``; a row without a published
figure is shown with "—" and neither passes nor fails; a row with a ``limit`` (the MAPE of a
GFLOPS curve) passes when the simulated value is at most the limit.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Kind:
    """A kind of row: its label, the marker of its points in the correlation plot, and its
    tolerance (relative to the published figure, and an absolute floor in the row's unit)."""

    name: str
    label: str
    marker: str
    relative: float
    absolute: float = 0.0

    def tolerance_text(self) -> str:
        if not self.relative and not self.absolute:
            return "exact"
        if not self.relative:
            return f"±{self.absolute:g}"
        rel = f"±{100 * self.relative:g}%"
        return rel if not self.absolute else f"{rel} or ±{self.absolute:g}"


KINDS = {k.name: k for k in (
    Kind("latency", "latency (micro-benchmark)", "o", 0.10),
    Kind("throughput", "throughput / issue (micro-benchmark)", "s", 0.10),
    Kind("register_banks", "register banks and reuse (micro-benchmark)", "D", 0.10),
    Kind("shared_banks", "shared-memory bank conflicts (micro-benchmark)", "^", 0.0),
    Kind("cache_structure", "cache size and line size (micro-benchmark)", "*", 0.0),
    Kind("sgemm_static", "SGEMM static figures (analysis)", "v", 0.05, 0.5),
    Kind("sgemm_loop", "SGEMM main-loop cycles (simulation)", "P", 0.02),
    Kind("sgemm_gflops", "SGEMM GFLOPS (whole-GPU prediction)", "x", 0.10),
    Kind("sgemm_memory", "SGEMM memory figures (whole-GPU prediction)", "h", 0.0, 0.5),
    Kind("sgemm_control", "SGEMM control-code effects (whole-GPU prediction)", "<", 0.0, 1.0),
)}


@attrs.frozen
class Row:
    """One figure. ``source``: the short source name(s) of the published figure, as in
    ``maxsim/arch/gm204.toml``'s header ("[jia18]"); ``note``: how it was measured or why a
    deviation is expected."""

    name: str
    kind: str = attrs.field(validator=attrs.validators.in_(KINDS))
    simulated: float
    published: float | None
    unit: str
    source: str = ""
    note: str = ""
    limit: float | None = None

    @property
    def deviation_percent(self) -> float | None:
        if self.published is None or self.published == 0:
            return None
        return 100.0 * (self.simulated - self.published) / self.published

    @property
    def tolerance(self) -> str:
        if self.limit is not None:
            return f"≤ {self.limit:g}"
        if self.published is None:
            return "—"
        return KINDS[self.kind].tolerance_text()

    @property
    def status(self) -> str:
        """"pass", "deviation", or "—" (no published figure to compare with)."""
        if self.limit is not None:
            return "pass" if self.simulated <= self.limit else "deviation"
        if self.published is None:
            return "—"
        k = KINDS[self.kind]
        ok = abs(self.simulated - self.published) <= max(k.relative * abs(self.published), k.absolute) + 1e-9
        return "pass" if ok else "deviation"

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "simulated": self.simulated,
                "published": self.published, "unit": self.unit, "source": self.source,
                "deviation_percent": self.deviation_percent, "tolerance": self.tolerance,
                "status": self.status, "note": self.note}


# The short source names, as in maxsim/arch/gm204.toml's header and docs/maxwell-facts.md.
SOURCES = {
    "maxas-cc": "maxas wiki, \"Control-Codes\" page (github.com/NervanaSystems/maxas/wiki/Control-Codes)",
    "maxas-sgemm": "maxas wiki, \"SGEMM\" page (github.com/NervanaSystems/maxas/wiki/SGEMM): text and "
                   "benchmark charts (GTX 980 at 1607 MHz, 8 Gbps), read off in traces/maxas_gtx980_sgemm.csv and "
                   "traces/maxas_gtx980_sgemm64_large.csv",
    "maxas-grammar": "maxas lib/MaxAs/MaxAsGrammar.pm, its scheduler's per-class table",
    "maxas-sgemm128": "maxas sgemm/sgemm128.sass (github.com/NervanaSystems/maxas), the hand-scheduled "
                      "256-thread kernel as benchmarked on the GTX 980, with the author's notes",
    "nv-md": "NVIDIA's sm_52 SASS scheduling description (github.com/redplait/denvdis data/sm52_2.txt)",
    "jia18": "Jia, Maggioni, Staiger, Scarpazza: Dissecting the NVIDIA Volta GPU Architecture via "
             "Microbenchmarking, arXiv:1804.06826 (Tesla M60 = GM204 at 1177 MHz)",
    "arafa19": "Arafa et al.: Low Overhead Instruction Latency Characterization for NVIDIA GPGPUs, "
               "HPEC 2019, arXiv:1905.08778 (Maxwell figures)",
    "wp980": "NVIDIA GeForce GTX 980 whitepaper",
    "cuda-pg": "CUDA C Programming Guide: compute capability 5.x, shared memory bank conflicts",
    "mei17-data": "Mei and Chu's microbenchmarks with their raw GTX 980 results "
                  "(github.com/zhanglx13/GPU-Benchmark-Dissecting-GPU-Mem; Mei, Chu, IEEE TPDS 28(1), 2017, "
                  "arXiv:1509.02308)",
    "gm200-chase": "a TLB pointer chase after Mei and Chu on a GTX TITAN X (GM200), "
                   "github.com/lizziew/cuda_playground (README)",
    "nv-forum-l2": "NVIDIA developer forums, \"Pascal L1 cache\" (forums.developer.nvidia.com/t/49571): "
                   "Maxwell-Pascal L1/TEX and L2 lines of four 32 B sectors, a miss fills only the sectors accessed",
}


def source_names(rows) -> list:
    """The short source names the rows cite, in order of first appearance."""
    import re
    out = []
    for r in rows:
        for name in re.findall(r"\[([\w-]+)\]", r.source):
            if name not in out:
                out.append(name)
    return out

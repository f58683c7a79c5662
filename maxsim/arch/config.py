"""Architecture configs: the numbers of the machine model, read from TOML files.

Every parameter of the timing model lives in one of these files, never as a constant in the code.
The shipped configs sit next to this module (package data ``maxsim/arch/*.toml``); each key line
there carries a comment naming its source (short names of ``docs/maxwell-facts.md``).

A config file is one TOML document::

    description = "one line shown by `maxsim configs`"   # top level, optional in a child
    inherit = "gm204"            # optional: a shipped config name or a path (relative to this file)

    [gpu]
    core_clock_mhz = 1607        # only the keys that differ from the parent

Sections and keys are those of the attrs classes below (``GpuConfig`` ... ``DramConfig``); the field
metadata is the schema: the loader checks that every key is present (after inheritance), has the
right type and lies in range, and rejects keys it does not know, raising
:class:`~maxsim.errors.ConfigError` with a one-line message naming the file and the key.

Latencies are in core clock cycles and are end to end, as a microbenchmark sees them: from the issue
of the producing instruction to the first cycle a dependent instruction may issue. Memory latencies
(``l2_hit``, ``dram``) are from the issue of the memory instruction at the SM.
"""

from __future__ import annotations

import functools
import math
import os
import re
import tomllib
from importlib import resources
from pathlib import Path

import attrs

from ..errors import ConfigError

__all__ = [
    "ArchConfig", "GpuConfig", "SmConfig", "PipesConfig", "LatencyConfig", "RegfileConfig",
    "SharedConfig", "L1TexConfig", "L2Config", "DramConfig",
    "load_config", "list_configs", "override", "DEFAULT_CONFIG",
]

DEFAULT_CONFIG = "gm204"


# --------------------------------------------------------------------------------------------
# Schema: each field says what it accepts.  ``kind`` is the Python type TOML must give; ``what``
# is the phrase used in the error message ("must be <what>, got ..."); ``ok`` the range test.

def _field(kind, what, ok=None, choices=None):
    return attrs.field(metadata={"kind": kind, "what": what, "ok": ok, "choices": choices})


def _pos_int():
    return _field(int, "a positive integer", lambda v: v > 0)


def _nonneg_int():
    return _field(int, "a non-negative integer", lambda v: v >= 0)


def _pow2_int():
    return _field(int, "a positive power of two", lambda v: v > 0 and (v & (v - 1)) == 0)


def _pos_float():
    return _field(float, "a positive number", lambda v: v > 0 and math.isfinite(v))


def _nonneg_float():
    return _field(float, "a non-negative number", lambda v: v >= 0 and math.isfinite(v))


def _fraction():
    return _field(float, "a number in [0, 1]", lambda v: 0.0 <= v <= 1.0)


def _unit_fraction():
    return _field(float, "a number in (0, 1]", lambda v: 0.0 < v <= 1.0)


def _bool():
    return _field(bool, "a boolean (true or false)")


def _str():
    return _field(str, "a non-empty string", lambda v: v.strip() != "")


def _choice(*choices):
    return _field(str, "one of " + ", ".join(repr(c) for c in choices), lambda v: v in choices,
                  choices=choices)


@attrs.frozen
class GpuConfig:
    """The whole chip: identity, SM count, clocks, DRAM peak bandwidth."""

    name: str = _str()
    chip: str = _str()
    sm_version: int = _pos_int()  # 50 (GM107) or 52 (GM204, GM200)
    sms: int = _pos_int()
    core_clock_mhz: float = _pos_float()
    mem_clock_mhz: float = _pos_float()  # effective (data rate), e.g. 7000 for 7 Gbps GDDR5
    dram_bus_bits: int = _pos_int()
    dram_bandwidth_gbs: float = _pos_float()  # peak, 1e9 bytes/s; must equal clock x bus / 8
    launch_overhead_us: float = _nonneg_float()
    cta_dispatch_interval: int = _nonneg_int()  # cycles between two CTAs the block dispatcher hands out
    # the first wave's starts: "together" (every CTA of the first wave at cycle 0) or "dispatched"
    # (handed out one at a time in grid order, round-robin over the SMs, cta_dispatch_interval apart)
    first_wave: str = _choice("together", "dispatched")
    # the SMs' (and the L2's) cycles per second as a share of the nominal clock: a cycle lasts
    # 1 / (core_clock_mhz x this) in time; the DRAM keeps its own rate (dram_bandwidth_gbs)
    effective_clock_fraction: float = _unit_fraction()


@attrs.frozen
class SmConfig:
    """Resources and limits of one streaming multiprocessor."""

    schedulers: int = _pos_int()
    scheduler_assignment: str = _choice("warp_id_mod")
    # which warp "oldest" of greedy-then-oldest selection takes when the greedy warp cannot issue:
    # "least_recent" (the ready warp that issued least recently) or "age" (the ready warp of the CTA
    # the SM launched first, then the lowest warp of that CTA)
    oldest_warp: str = _choice("least_recent", "age")
    warp_size: int = _pow2_int()
    max_warps: int = _pos_int()
    max_ctas: int = _pos_int()
    max_threads_per_cta: int = _pos_int()
    registers: int = _pos_int()
    reg_alloc_granularity: int = _pos_int()  # registers per warp
    max_regs_per_thread: int = _pos_int()
    shared_bytes: int = _pos_int()
    max_shared_per_cta: int = _pos_int()
    shared_alloc_granularity: int = _pos_int()
    cta_barriers: int = _pos_int()
    dependency_barriers: int = _pos_int()
    max_stall: int = _pos_int()
    yield_stall_threshold: int = _pos_int()
    cta_launch_cycles: int = _nonneg_int()  # a freed CTA slot takes the next CTA this much later
    icache_bytes: int = _pos_int()
    icache_l15_bytes: int = _pos_int()

    @property
    def max_threads(self) -> int:
        return self.max_warps * self.warp_size

    @property
    def warps_per_scheduler(self) -> int:
        return self.max_warps // self.schedulers


@attrs.frozen
class PipesConfig:
    """Issue and throughput of the execution units."""

    alu: float = _pos_float()  # warp instructions per cycle per scheduler
    alu_half: float = _pos_float()
    xu: float = _pos_float()  # quarter-rate unit (MUFU, conversions, POPC, FLO, SHFL)
    fp64: float = _pos_float()  # double-precision unit (DADD, DMUL, DFMA, DSETP, DMNMX)
    dual_issue: bool = _bool()
    mem_issue_interval: int = _pos_int()  # cycles between warp memory instructions, per scheduler
    shared_queue_depth: int = _pos_int()  # per warp
    global_queue_depth: int = _pos_int()  # per warp (global and texture)

    @property
    def alu_interval(self) -> float:
        """Cycles a scheduler's ALU pipe is busy per full-rate warp instruction."""
        return 1.0 / self.alu

    @property
    def alu_half_interval(self) -> float:
        return 1.0 / self.alu_half


@attrs.frozen
class LatencyConfig:
    """Latencies in core cycles (see the module docstring for what they measure)."""

    alu: int = _pos_int()
    alu_half: int = _pos_int()
    predicate: int = _pos_int()
    barrier_set_delay: int = _nonneg_int()
    s2r: int = _pos_int()
    xu: int = _pos_int()
    fp64: int = _pos_int()
    bitcount: int = _pos_int()
    ldc: int = _pos_int()
    ldc_per_address: int = _nonneg_int()
    lds: int = _pos_int()
    sts: int = _pos_int()
    tex_l1_hit: int = _pos_int()
    l2_hit: int = _pos_int()
    dram: int = _pos_int()
    branch: int = _pos_int()
    branch_taken: int = _pos_int()
    barrier_sync: int = _pos_int()
    exit: int = _pos_int()
    mem_operand_read_shared: int = _nonneg_int()
    mem_operand_read_global: int = _nonneg_int()
    mem_operand_read_address_high: int = _nonneg_int()
    mem_operand_read_tex: int = _nonneg_int()
    mem_operand_read_constant: int = _nonneg_int()
    xu_operand_read: int = _nonneg_int()
    read_barrier_release: int = _pos_int()


@attrs.frozen
class RegfileConfig:
    """Register banks, operand reuse caches and the cost of bank conflicts."""

    banks: int = _pow2_int()
    reuse_slots: int = _pos_int()
    reuse_entries_per_slot: int = _pos_int()
    reuse_lost_on_warp_switch: bool = _bool()
    conflict_penalty: int = _nonneg_int()
    collector_lookahead: int = _nonneg_int()  # cycles before issue the collector may read banks


@attrs.frozen
class SharedConfig:
    """Shared-memory banks (the latency is ``latency.lds`` / ``latency.sts``)."""

    banks: int = _pow2_int()
    bank_width: int = _pow2_int()

    @property
    def bytes_per_clk(self) -> int:
        return self.banks * self.bank_width


@attrs.frozen
class L1TexConfig:
    """The unified L1/texture cache of one SM (hit latency is ``latency.tex_l1_hit``)."""

    size: int = _pos_int()
    line: int = _pow2_int()
    sector: int = _pow2_int()
    assoc: int = _pos_int()
    units: int = _pos_int()
    # which schedulers share a texture unit and its cache: "pooled" (one cache of ``size`` and one
    # server of ``units`` x the throughput for the whole SM), "pairs_01_23" (scheduler s uses unit
    # s // (schedulers / units)) or "pairs_02_13" (unit s % units); split, each unit has ``size /
    # units`` bytes of cache and one unit's throughput
    sharing: str = _choice("pooled", "pairs_01_23", "pairs_02_13")
    throughput_bytes_per_clk: float = _pos_float()
    # the profiler metrics' counting (not timing): a lookup of a sector still being filled is a hit
    count_inflight_as_hit: bool = _bool()
    # whether local loads (LDL) are cached in the L1: the model times them through the L2 only, as
    # global loads, so only false is modelled
    caches_local: bool = _field(bool, "false (local loads go through the L2 only; caching them in the L1 is "
                                "not modelled)", lambda v: v is False)

    @property
    def bytes_per_clk(self) -> float:
        """Texture-path throughput of the whole SM: ``units`` x the per-unit figure."""
        return self.units * self.throughput_bytes_per_clk

    @property
    def caches(self) -> int:
        """Separate caches of the SM: 1 when pooled, else ``units``."""
        return 1 if self.sharing == "pooled" else self.units

    @property
    def cache_bytes_per_clk(self) -> float:
        """Throughput of one cache's texture path (the whole SM's when pooled)."""
        return self.bytes_per_clk / self.caches

    def cache_of(self, scheduler: int, schedulers: int) -> int:
        """The cache (texture unit) scheduler ``scheduler`` of ``schedulers`` fetches through."""
        if self.sharing == "pooled":
            return 0
        if self.sharing == "pairs_01_23":
            return scheduler // (schedulers // self.units)
        return scheduler % self.units

    @property
    def sets(self) -> int:
        """Sets of one cache (``size / caches`` bytes)."""
        return self.size // self.caches // (self.line * self.assoc)

    @property
    def sectors_per_line(self) -> int:
        return self.line // self.sector


@attrs.frozen
class L2Config:
    """The L2 shared by all SMs, in slices (hit latency is ``latency.l2_hit``)."""

    size: int = _pos_int()  # whole chip
    slices: int = _pos_int()
    line: int = _pow2_int()  # tag granularity
    sector: int = _pow2_int()  # data granularity (fill, write-back)
    assoc: int = _pos_int()  # ways per set of a slice
    hash_sets: bool = _bool()
    slice_hash: str = _choice("ipoly", "modulo")
    slice_interleave: int = _pow2_int()  # bytes of consecutive addresses in one slice
    bandwidth_bytes_per_clk: float = _pos_float()  # whole chip (all slices), per core clock
    # a sector filled from DRAM also passes its slice (bytes_per_clk), when it arrives from DRAM
    fills_use_bandwidth: bool = _bool()
    # the profiler metrics' counting (not timing): a read of a sector still being filled is a hit
    count_inflight_as_hit: bool = _bool()

    @property
    def slice_size(self) -> int:
        return self.size // self.slices

    @property
    def sets(self) -> int:
        """Sets per slice."""
        return self.slice_size // (self.line * self.assoc)

    @property
    def slice_bytes_per_clk(self) -> float:
        return self.bandwidth_bytes_per_clk / self.slices


@attrs.frozen
class DramConfig:
    """DRAM beyond the peak in ``gpu`` (the latency is ``latency.dram``)."""

    efficiency: float = _unit_fraction()  # sustained / peak bandwidth
    channels: int = _pos_int()  # independent channels (memory controllers) the L2 slices feed


@attrs.frozen
class TlbConfig:
    """Address translation (:mod:`maxsim.timing.tlb`): an L1 TLB per SM, the L2 TLB of the GPU."""

    page_bytes: int = _pow2_int()
    l1_entries: int = _pos_int()  # per SM
    l1_assoc: int = _pos_int()
    l2_entries: int = _pos_int()  # whole GPU
    l2_assoc: int = _pos_int()
    l1_miss_cycles: int = _nonneg_int()  # an L1 TLB miss that hits the L2 TLB
    walk_cycles: int = _nonneg_int()  # a miss in both TLBs: the page walk

    @property
    def l2_reach_bytes(self) -> int:
        return self.l2_entries * self.page_bytes


_SECTIONS = {
    "gpu": GpuConfig, "sm": SmConfig, "pipes": PipesConfig, "latency": LatencyConfig,
    "regfile": RegfileConfig, "shared": SharedConfig, "l1tex": L1TexConfig, "l2": L2Config,
    "dram": DramConfig, "tlb": TlbConfig,
}
_TOP_KEYS = {"description", "inherit"}


@attrs.frozen(cache_hash=True)  # (hashed per launch: a launch's shape, the caches of its tables)
class ArchConfig:
    """One machine: immutable tree of sections, built by :func:`load_config`."""

    name: str  # config name ("gm204") or the file stem of a user config
    description: str
    source: str  # the file it was read from
    gpu: GpuConfig
    sm: SmConfig
    pipes: PipesConfig
    latency: LatencyConfig
    regfile: RegfileConfig
    shared: SharedConfig
    l1tex: L1TexConfig
    l2: L2Config
    dram: DramConfig
    tlb: TlbConfig

    # ---- derived quantities -----------------------------------------------------------------
    @property
    def clock_hz(self) -> float:
        """The SM clock in effect: the nominal clock x ``gpu.effective_clock_fraction``. Every
        conversion between cycles and time (and DRAM bytes per cycle) uses it."""
        return self.gpu.core_clock_mhz * 1e6 * self.gpu.effective_clock_fraction

    @property
    def nominal_clock_hz(self) -> float:
        return self.gpu.core_clock_mhz * 1e6

    @property
    def dram_peak_bytes_per_clk(self) -> float:
        """Peak DRAM bytes per core cycle for the whole chip."""
        return self.gpu.dram_bandwidth_gbs * 1e9 / self.clock_hz

    @property
    def dram_bytes_per_clk(self) -> float:
        """Sustained DRAM bytes per core cycle for the whole chip (peak x ``dram.efficiency``)."""
        return self.dram_peak_bytes_per_clk * self.dram.efficiency

    @property
    def peak_gflops(self) -> float:
        """FP32 peak at the nominal clock: 2 flops per FFMA lane (the figure GFLOPS are quoted
        against)."""
        lanes = self.gpu.sms * self.sm.schedulers * self.sm.warp_size * self.pipes.alu
        return 2.0 * lanes * self.nominal_clock_hz / 1e9

    def cycles_to_seconds(self, cycles: float) -> float:
        return cycles / self.clock_hz

    def seconds_to_cycles(self, seconds: float) -> float:
        return seconds * self.clock_hz

    def to_dict(self) -> dict:
        """Nested plain dict of every section (for ``--json`` and reports)."""
        out = {"name": self.name, "description": self.description, "source": self.source}
        for sec in _SECTIONS:
            out[sec] = attrs.asdict(getattr(self, sec))
        return out


# --------------------------------------------------------------------------------------------
# Loading

_ARCH_PACKAGE = "maxsim.arch"


def _shipped_dir():
    return resources.files(_ARCH_PACKAGE)


@functools.lru_cache(maxsize=1)
def _shipped_names() -> tuple[str, ...]:
    """The shipped configs' names, sorted (read once: the package's files do not change while it runs)."""
    return tuple(sorted(p.name[:-5] for p in _shipped_dir().iterdir() if p.name.endswith(".toml")))


def _fmt(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return str(value)


_LINE_RE = re.compile(r"at line (\d+)")


def _parse(text: str, display: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = _LINE_RE.search(str(e))
        where = f"{display}:{m.group(1)}" if m else display
        raise ConfigError(f"{where}: bad TOML syntax: {e}") from None


def _read_file(ref, base_dir, chain):
    """Resolve ``ref`` (shipped name or path) to (display, key, text, dir)."""
    if isinstance(ref, str) and ref in _shipped_names() and os.sep not in ref:
        res = _shipped_dir() / f"{ref}.toml"
        return f"{ref}.toml", ("shipped", ref), res.read_text(encoding="utf-8"), None
    path = Path(ref)
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    if not path.is_file():
        shipped = ", ".join(_shipped_names())
        who = f"{chain[-1]}: " if chain else ""
        if os.sep in str(ref) or str(ref).endswith(".toml"):
            raise ConfigError(f"{who}{path}: no such config file (or give a shipped config: {shipped})")
        raise ConfigError(f"{who}no config named {str(ref)!r} (shipped: {shipped}; or give the path "
                          f"of a .toml file)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read config: {e}") from None
    return str(ref if base_dir is None else path), ("file", str(path.resolve())), text, path.parent


def _load_raw(ref, base_dir=None, chain=()):
    """Merged raw tables plus, for each 'sec.key', the file that set it."""
    display, key, text, here = _read_file(ref, base_dir, chain)
    if key in [k for k, _ in chain]:
        raise ConfigError(f"{display}: key 'inherit' makes a cycle: "
                          + " -> ".join(d for _, d in chain) + f" -> {display}")
    chain = (*chain, (key, display))
    doc = _parse(text, display)
    for k, v in doc.items():
        if k in _SECTIONS:
            if not isinstance(v, dict):
                raise ConfigError(f"{display}: key '{k}' must be a table [{k}], got {_fmt(v)}")
        elif k not in _TOP_KEYS:
            raise ConfigError(f"{display}: unknown key '{k}' (sections: {', '.join(_SECTIONS)})")
        elif not isinstance(v, str):
            raise ConfigError(f"{display}: key '{k}' must be a string, got {_fmt(v)}")
    if "inherit" in doc:
        merged, origin, _ = _load_raw(doc["inherit"], here if here is not None else base_dir,
                                      tuple((k, d) for k, d in chain))
    else:
        merged, origin = {"description": ""}, {}
    if "description" in doc:
        merged["description"] = doc["description"]
    for sec in _SECTIONS:
        table = doc.get(sec, {})
        dst = merged.setdefault(sec, {})
        for k, v in table.items():
            dst[k] = v
            origin[f"{sec}.{k}"] = display
    return merged, origin, display


def _check_value(sec: str, fld, value, where: str):
    meta = fld.metadata
    kind, what, ok = meta["kind"], meta["what"], meta["ok"]
    bad = ConfigError(f"{where}: key '{sec}.{fld.name}' must be {what}, got {_fmt(value)}")
    if kind is bool:
        if not isinstance(value, bool):
            raise bad
    elif kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad
    elif kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad
        value = float(value)
    elif kind is str:
        if not isinstance(value, str):
            raise bad
    if ok is not None and not ok(value):
        raise bad
    return value


def _build(name: str, merged: dict, origin: dict, display: str) -> ArchConfig:
    sections = {}
    for sec, cls in _SECTIONS.items():
        table = merged.get(sec, {})
        fields = attrs.fields(cls)
        known = {f.name for f in fields}
        for k in table:
            if k not in known:
                raise ConfigError(f"{origin.get(f'{sec}.{k}', display)}: unknown key '{sec}.{k}'")
        kwargs = {}
        for f in fields:
            if f.name not in table:
                raise ConfigError(f"{display}: missing key '{sec}.{f.name}'")
            kwargs[f.name] = _check_value(sec, f, table[f.name], origin.get(f"{sec}.{f.name}", display))
        sections[sec] = cls(**kwargs)
    cfg = ArchConfig(name=name, description=merged.get("description", ""), source=display, **sections)
    _cross_checks(cfg, origin, display)
    return cfg


def _cross_checks(cfg: ArchConfig, origin: dict, display: str) -> None:
    def fail(key, msg):
        # a cross-check involves several keys, maybe set in different files of an inherit chain:
        # name the file being loaded, and where the blamed key came from if elsewhere
        src = origin.get(key, display)
        frm = f" (set in {src})" if src != display else ""
        raise ConfigError(f"{display}: key '{key}'{frm} {msg}")

    g, sm, l1, l2 = cfg.gpu, cfg.sm, cfg.l1tex, cfg.l2
    expect = g.mem_clock_mhz * g.dram_bus_bits / 8 / 1000
    if abs(g.dram_bandwidth_gbs - expect) > 0.01 * expect:
        fail("gpu.dram_bandwidth_gbs", f"= {g.dram_bandwidth_gbs:g} does not match "
             f"mem_clock_mhz x dram_bus_bits / 8 = {expect:g} GB/s (within 1%)")
    if sm.max_warps % sm.schedulers:
        fail("sm.max_warps", f"= {sm.max_warps} must be a multiple of sm.schedulers ({sm.schedulers})")
    if sm.max_threads_per_cta > sm.max_warps * sm.warp_size:
        fail("sm.max_threads_per_cta", f"= {sm.max_threads_per_cta} exceeds sm.max_warps x sm.warp_size")
    if sm.max_threads_per_cta % sm.warp_size:
        fail("sm.max_threads_per_cta", f"= {sm.max_threads_per_cta} must be a multiple of sm.warp_size")
    if sm.registers % sm.reg_alloc_granularity:
        fail("sm.reg_alloc_granularity", "must divide sm.registers")
    if sm.max_shared_per_cta > sm.shared_bytes:
        fail("sm.max_shared_per_cta", f"= {sm.max_shared_per_cta} exceeds sm.shared_bytes ({sm.shared_bytes})")
    if sm.yield_stall_threshold > sm.max_stall:
        fail("sm.yield_stall_threshold", f"exceeds sm.max_stall ({sm.max_stall})")
    if l1.sector > l1.line:
        fail("l1tex.sector", f"= {l1.sector} exceeds l1tex.line ({l1.line})")
    if l1.size % (l1.line * l1.assoc):
        fail("l1tex.assoc", f"= {l1.assoc}: l1tex.size ({l1.size}) is not a multiple of line x assoc")
    if l1.sharing != "pooled":
        if sm.schedulers % l1.units:
            fail("l1tex.sharing", f"= {l1.sharing!r}: l1tex.units ({l1.units}) must divide sm.schedulers "
                 f"({sm.schedulers})")
        if l1.size % (l1.units * l1.line * l1.assoc):
            fail("l1tex.sharing", f"= {l1.sharing!r}: l1tex.size ({l1.size}) is not a multiple of units x "
                 "line x assoc (each unit's cache holds size / units)")
    if l2.sector > l2.line:
        fail("l2.sector", f"= {l2.sector} exceeds l2.line ({l2.line})")
    if l2.line > 8 * l2.sector:
        fail("l2.line", f"= {l2.line}: at most 8 sectors of l2.sector ({l2.sector}) bytes per line")
    if l2.line > l2.slice_interleave:
        fail("l2.slice_interleave", f"= {l2.slice_interleave} is smaller than l2.line ({l2.line}): a line "
             "must lie in one slice")
    if l2.size % (l2.slices * l2.line * l2.assoc):
        fail("l2.assoc", f"= {l2.assoc}: l2.size ({l2.size}) is not a multiple of slices x line x assoc")
    if l2.slice_hash == "ipoly" and (l2.slices & -l2.slices) > 256:
        fail("l2.slices", f"= {l2.slices}: the ipoly slice hash takes at most 256 slices per power-of-two group")
    if l2.slices % cfg.dram.channels:
        fail("dram.channels", f"= {cfg.dram.channels} must divide l2.slices ({l2.slices}): each slice "
             "feeds one channel")
    if g.dram_bus_bits % cfg.dram.channels:
        fail("dram.channels", f"= {cfg.dram.channels} must divide gpu.dram_bus_bits ({g.dram_bus_bits})")
    for level in ("l1", "l2"):
        entries, assoc = getattr(cfg.tlb, f"{level}_entries"), getattr(cfg.tlb, f"{level}_assoc")
        if entries % assoc:
            fail(f"tlb.{level}_assoc", f"= {assoc} must divide tlb.{level}_entries ({entries})")
    if cfg.regfile.reuse_slots > 3:
        fail("regfile.reuse_slots", "must be at most 3 (an instruction has three source slots)")
    if cfg.pipes.alu > 1:
        fail("pipes.alu", f"= {cfg.pipes.alu:g}: a scheduler issues at most one ALU instruction per cycle")
    # facts of the sm_5x instruction set that the SASS format and the functional model implement
    for key, have, fixed, why in (
            ("sm.warp_size", sm.warp_size, 32, "warps of 32 lanes"),
            ("sm.cta_barriers", sm.cta_barriers, 16, "BAR.SYNC ids 0-15"),
            ("sm.dependency_barriers", sm.dependency_barriers, 6, "control-code barrier fields 1-6"),
            ("sm.max_stall", sm.max_stall, 15, "a 4-bit stall count")):
        if have != fixed:
            fail(key, f"= {have}: fixed at {fixed} by the sm_5x instruction set ({why}) that maxsim executes")


@functools.lru_cache(maxsize=64)
def _load_shipped(name: str) -> ArchConfig:
    merged, origin, display = _load_raw(name)
    return _build(name, merged, origin, display)


def load_config(name_or_path=DEFAULT_CONFIG) -> ArchConfig:
    """Load a shipped config by name ("gm204", "gtx980_oc" ...) or a user's TOML file by path.

    Raises :class:`ConfigError` (one line naming the file and key) for a missing key, wrong type,
    out-of-range value, unknown key, bad ``inherit`` or bad TOML syntax.
    """
    if isinstance(name_or_path, str) and name_or_path in _shipped_names():
        return _load_shipped(name_or_path)
    if isinstance(name_or_path, str) and name_or_path.endswith(".toml") \
            and name_or_path[:-5] in _shipped_names() and not Path(name_or_path).exists():
        return _load_shipped(name_or_path[:-5])
    merged, origin, display = _load_raw(os.fspath(name_or_path))
    return _build(Path(os.fspath(name_or_path)).stem, merged, origin, display)


def list_configs() -> list[tuple[str, str]]:
    """(name, one-line description) of every shipped config, sorted by name."""
    out = []
    for name in _shipped_names():
        out.append((name, _load_shipped(name).description))
    return out


def override(cfg: ArchConfig, changes: dict) -> ArchConfig:
    """A copy of ``cfg`` with ``{"section.key": value}`` changes, validated like a file.

    For experiments and the CLI (``--set regfile.collector_lookahead=0``); errors name the
    pseudo-file "<override>".
    """
    merged = {"description": cfg.description}
    origin = {}
    for sec in _SECTIONS:
        merged[sec] = attrs.asdict(getattr(cfg, sec))
    for dotted, value in changes.items():
        sec, _, key = dotted.partition(".")
        if sec not in _SECTIONS or not key:
            raise ConfigError(f"<override>: unknown key {dotted!r}")
        merged[sec][key] = value
        origin[dotted] = "<override>"
    return _build(cfg.name, merged, origin, cfg.source)

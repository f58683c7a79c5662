"""One launch of any kernel: functional run, outputs, the timed SM and the whole-GPU prediction.

:func:`launch` is the one launch path of maxsim: the command line (``maxsim run KERNEL.sass``), the
SGEMM workload and ``maxsim compare`` go through it. A launch

1. binds the arguments to the kernel (:func:`maxsim.host.args.bind`: parameters by name or offset,
   buffers copied into global memory, textures by number or name);
2. runs the grid (or the CTAs ``ctas``) functionally, recording the trace the timing model reads
   when timing or a prediction is asked for; the output buffers are read back from that run;
3. times one SM (``timing``): the first CTAs of the launch, as many as are resident on an SM at
   once (``sm_ctas`` to choose), replayed from the functional run's trace;
4. predicts the launch on the whole GPU of the config (``predict``): a single CTA is the timed
   SM's run (it has the L2 and DRAM to itself); otherwise every SM of the GPU is simulated
   sharing one L2 and DRAM over the traced grid (:func:`maxsim.gpu.simulate_gpu`), or, given a
   :class:`Sampling` (how the launch scales with an inner dimension K), sampled
   (:func:`maxsim.gpu.sampling.predict`), which is what makes large SGEMMs tractable.
"""

from __future__ import annotations

import functools
import json
import math
import struct

import attrs
import numpy as np

from ..collector import paced_run
from ..errors import LaunchError
from ..functional.launch import GEOMETRY, MAX_THREADS_PER_CTA
from ..isa import instruction as ins
from .args import Bound, bind
from .kernel import Kernel


@attrs.frozen
class Sampling:
    """How a launch scales with an inner dimension K, for a sampled whole-GPU prediction:
    ``build(k) -> (constant bank or parameter list, GlobalMemory, {number: Texture1D})`` makes the
    same launch with another K, each main-loop iteration consumes ``k_step`` of K, and
    ``shift(textures, dk)`` gives the byte ranges whose addresses move when a CTA is ``dk`` further
    along K (see :func:`maxsim.gpu.sampling.predict`)."""

    k: int
    k_step: int
    build: object
    shift: object = None


@attrs.frozen
class Prediction:
    """The launch on the whole GPU of a config."""

    config: str
    gpu: str
    sms: int
    seconds: float
    cycles: float
    waves: float  # CTAs / (SMs x resident CTAs per SM)
    method: str  # "timed SM" (one CTA), "full" (every CTA on every SM), "sampled" (K loop) or a
    # general sampled method of maxsim.gpu.sampling.METHODS ("sampled across waves", ...)
    gflops: float = None  # of the flops the launch executed (None when sampled)
    memory: dict = attrs.field(factory=dict)  # memory-system counters of the launch, with "cycles"
    details: dict = attrs.field(factory=dict)  # sampled: the phases simulated, loop cycles, skew
    simulated_share: float = 1.0  # share of the launch's work simulated in time (1: all of it)
    interval: tuple = None  # (low, high) cycles of the launch: the spread between its samples
    # (None: not sampled, the figure is the simulation's own)


    def to_dict(self) -> dict:
        return attrs.asdict(self)


def _arch(config):
    from ..arch.config import ArchConfig, load_config
    if isinstance(config, ArchConfig):
        return config
    return load_config() if config is None else load_config(config)


def as_kernel(kernel, cfg=None) -> Kernel:
    """A :class:`Kernel` from a Kernel, a decoded kernel, a path or a kernel text."""
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, ins.Kernel):
        return Kernel.of(kernel)
    return Kernel.load(kernel, cfg=cfg)


def _dims(value, what):
    """(x, y, z) of a grid or block given as an int or a tuple of up to three positive integers."""
    parts = (value,) if isinstance(value, (int, np.integer)) else tuple(value)
    if not 1 <= len(parts) <= 3 or not all(isinstance(p, (int, np.integer)) and not isinstance(p, bool)
                                           for p in parts):
        raise LaunchError(f"{what} {value!r}: expected X, (X, Y) or (X, Y, Z) positive integers")
    parts = tuple(int(p) for p in parts) + (1,) * (3 - len(parts))
    if min(parts) < 1:
        raise LaunchError(f"{what} {value!r}: every dimension must be at least 1")
    return parts


def _geometry(grid, block):
    """The launch as the simulator runs it, and as the kernel sees it: a grid of (X, Y, Z) CTAs runs
    as (X, Y * Z) (CTA (x, y, z) is (x, y + Y * z); SR_CTAID.Y/Z undo it) and a block of (X, Y, Z)
    threads as X * Y * Z linear threads (SR_TID.X/Y/Z split the linear id, x fastest, as CUDA
    numbers the threads of a block)."""
    g, b = _dims(grid, "grid"), _dims(block, "block")
    if g[0] >= 1 << 31 or g[1] >= 1 << 16 or g[2] >= 1 << 16 or g[1] * g[2] >= 1 << 16:
        raise LaunchError(f"grid {grid!r}: X < 2^31 and Y * Z < 65,536 CTAs are modelled")
    threads = b[0] * b[1] * b[2]
    if threads > MAX_THREADS_PER_CTA or b[2] > 64:
        shape = f" ({b[0]} x {b[1]} x {b[2]})" if b[1] * b[2] > 1 else ""
        raise LaunchError(f"block of {threads} threads{shape}: at most {MAX_THREADS_PER_CTA} threads per CTA "
                          f"(and Z <= 64)")
    return (g[0], g[1] * g[2]), threads, (b, g)


def with_geometry(const_bank: bytes, dims) -> bytes:
    """Constant bank 0 with the launch's geometry words, as the kernel reads them: blockDim (X, Y, Z)
    at c[0x0][0x8], gridDim (X, Y, Z) at c[0x0][0x14]; ``dims`` = ((threads X, Y, Z), (CTAs X, Y, Z))."""
    (tx, ty, tz), (cx, cy, cz) = dims
    end = GEOMETRY + 24
    bank = const_bank + bytes(max(0, end - len(const_bank)))
    return bank[:GEOMETRY] + struct.pack("<6I", tx, ty, tz, cx, cy, cz) + bank[end:]


@attrs.frozen(slots=False)
class LaunchReport:
    """What one launch gives back (see :func:`launch`)."""

    kernel: Kernel
    grid: tuple
    block: int
    cfg: object = attrs.field(repr=False)  # the architecture config
    bound: Bound = attrs.field(repr=False)
    result: object = attrs.field(repr=False)  # maxsim.functional.LaunchResult
    # the timed SM's figures (:attr:`timing`; None: not timed), or a callable giving them, called
    # when they are first read (the timed SM's figures of a launch no one reads are not assembled)
    _timing: object = attrs.field(default=None, repr=False)
    prediction: Prediction = None
    sm: object = attrs.field(default=None, repr=False)  # the timed SM model
    sm_ctas: int = 0
    timed_in_gpu: bool = False  # the timed SM is SM 0 of the whole-GPU run (a launch simulated once)

    @property
    def config(self) -> str:
        return self.cfg.name

    @property
    def timing(self) -> dict:
        """The timed SM's figures (:func:`maxsim.report.fields.timing_fields`; None when not timed)."""
        t = self._timing
        if callable(t):
            t = t()
            object.__setattr__(self, "_timing", t)
        return t

    @functools.cached_property
    def functional(self) -> dict:
        """Warp instructions, opcode counts and the executed register-bank figures of the run."""
        from ..report.fields import functional_fields
        return functional_fields(self.kernel.code, self.result)

    @functools.cached_property
    def occupancy(self) -> dict:
        """The kernel's residency on one SM (CTAs, warps per scheduler, what limits it)."""
        from ..report.fields import occupancy_fields
        return occupancy_fields(self.kernel.code, self.block, self.cfg)

    @functools.cached_property
    def outputs(self) -> dict:
        """name -> array of every buffer that is not an input only, as the launch left it."""
        return {name: self.read(name) for name, (_, buf) in self.bound.buffers.items() if buf.io != "in"}

    def read(self, name, start=0, count=None) -> np.ndarray:
        """Buffer ``name`` after the launch (its shape), or ``count`` of its elements from ``start``
        (flat)."""
        if name not in self.bound.buffers:
            raise LaunchError(f"no buffer named {name!r} (buffers: {', '.join(self.bound.buffers) or 'none'})")
        addr, buf = self.bound.buffers[name]
        size = math.prod(buf.shape)
        if count is None:
            return self.bound.memory.read(addr, size, buf.dtype).reshape(buf.shape)
        if start < 0 or start + count > size:
            raise LaunchError(f"buffer {name!r} has {size} elements: cannot read {count} from {start}")
        return self.bound.memory.read(addr + start * buf.dtype.itemsize, count, buf.dtype)

    @property
    def seconds(self):
        """The launch's predicted time on the GPU (s; None without a prediction)."""
        return None if self.prediction is None else self.prediction.seconds

    @property
    def cycles(self):
        """The launch's predicted cycles on the GPU (None without a prediction)."""
        return None if self.prediction is None else self.prediction.cycles

    @property
    def gflops(self):
        """The launch's predicted GFLOPS on the GPU (None without a prediction, or when sampled)."""
        return None if self.prediction is None else self.prediction.gflops

    @property
    def sm_cycles(self):
        """The timed SM's cycles (None when not timed)."""
        return None if self.timing is None else self.timing["sm_cycles"]

    @property
    def sm_seconds(self):
        """The timed SM's cycles at the clock in effect (s; None when not timed)."""
        return None if self.timing is None else self.timing["sm_seconds"]

    @property
    def sm_gflops(self):
        """The timed SM's GFLOPS at the clock in effect (None when not timed)."""
        return None if self.timing is None else self.timing["sm_gflops"]

    def fields(self) -> dict:
        """The run's figures as ``maxsim run --json`` gives them (kernel, geometry, functional,
        occupancy, timed SM ``sm_*``, the launch on the GPU: ``seconds``, ``cycles``, ``gflops``,
        ``gpu_*``; see :mod:`maxsim.report.fields` for the names and their old aliases)."""
        out = {"kernel": self.kernel.name, "grid": list(self.grid), "block": self.block, "config": self.config}
        out.update(self.occupancy)
        out.update(self.functional)
        if self.timing is not None:
            out.update(self.timing)
            out["sm_ctas"] = self.sm_ctas
            out["timed_sm_in_gpu"] = self.timed_in_gpu
        if self.prediction is not None:
            from ..report.fields import launch_fields
            p = self.prediction
            out.update(launch_fields(p))
            out.update(how_predicted(p, self.cfg))
            if "dram_bound" in p.details:
                out.update(gpu_dram_busy=p.details["dram_busy"], gpu_dram_bound=p.details["dram_bound"])
            if p.details.get("ctas_run", self.grid[0] * self.grid[1]) < self.grid[0] * self.grid[1]:
                # a prediction for timing only ran a share of the CTAs: the launch's count is estimated
                out.update(warp_instructions=p.details["warp_instructions"], warp_instructions_estimated=True,
                           gpu_ctas_run=p.details["ctas_run"])
        out.update(self.profiler_fields())
        return out

    @property
    def instructions(self) -> list:
        """The timed SM's figures per instruction (``maxsim run --json``'s ``instructions``; see
        :mod:`maxsim.report.source`); empty when the launch was not timed."""
        return (self.timing or {}).get("instructions", [])

    def write_source_page(self, path) -> str:
        """Write the source view of the timed SM (``maxsim run --report``) to ``path``: one
        self-contained HTML page, a row per SASS instruction. Returns the path."""
        if self.timing is None:
            raise LaunchError("the source view needs the timing run: launch with timing=True")
        from ..report.source import write_page
        return write_page(path, self.fields())
    def profiler_fields(self) -> dict:
        """The launch's memory figures, labelled by where they come from: ``gpu_profiler_metrics``
        and ``gpu_texture_hit_rate`` / ``gpu_l2_hit_rate`` / ``gpu_dram_bytes`` of the whole-GPU
        prediction (when there is one with memory counters), beside the timed SM's
        (``timed_sm_profiler_metrics``, ``texture_hit_rate``, ... of :attr:`timing`); and
        ``profiler_metrics``, the launch's figures: the GPU's when predicted, else the timed SM's,
        with ``profiler_metrics_of`` = "gpu" or "timed_sm"."""
        out = {}
        gpu = self.gpu_profiler_metrics()
        if gpu:
            out["gpu_profiler_metrics"] = gpu
            out.update(self._gpu_memory_figures())
            out["profiler_metrics"], out["profiler_metrics_of"] = gpu, "gpu"
        elif self.timing is not None and self.timing.get("timed_sm_profiler_metrics"):
            out["profiler_metrics"], out["profiler_metrics_of"] = self.timing["timed_sm_profiler_metrics"], "timed_sm"
        return out

    def _gpu_memory_figures(self) -> dict:
        """The whole launch's counterparts of the timed SM's ``texture_hit_rate``, ``l2_hit_rate``
        and ``dram_bytes``, as ``gpu_*`` keys (those the prediction's counters give)."""
        p = self.prediction
        if p.method == "timed SM":
            t = self.timing or {}
            return {f"gpu_{k}": t[k] for k in ("texture_hit_rate", "l2_hit_rate", "dram_bytes") if k in t}
        m, out = p.memory, {}
        # the model's own rates, as the timed SM's texture_hit_rate / l2_hit_rate: a lookup merged
        # into a fill under way counts as a hit (the profiler metrics follow nvprof's counting)
        tex = m.get("tex_sector_hits", 0) + m.get("tex_sector_misses", 0)
        if "tex_sector_hits" in m:
            out["gpu_texture_hit_rate"] = m["tex_sector_hits"] / tex if tex else 0.0
        l2 = m.get("l2_read_hits", 0) + m.get("l2_read_misses", 0)
        if "l2_read_hits" in m:
            out["gpu_l2_hit_rate"] = m["l2_read_hits"] / l2 if l2 else 0.0
        if "dram_bytes_read" in m:
            out["gpu_dram_bytes"] = int(round(m["dram_bytes_read"] + m.get("dram_bytes_written", 0)))
        return out

    def gpu_profiler_metrics(self) -> dict:
        """nvprof's metrics (:mod:`maxsim.report.metrics`) of the whole launch on the GPU, from the
        prediction's memory counters (every SM's L1/texture cache, the shared L2 and DRAM) over the
        kernel's predicted time without the launch overhead; a launch of one CTA is the timed SM's
        run. Empty without a prediction that has them."""
        p = self.prediction
        if p is None:
            return {}
        if p.method == "timed SM" and self.timing is not None:
            return dict(self.timing.get("timed_sm_profiler_metrics") or {})
        if not p.memory:
            return {}
        from ..report.metrics import profiler_metrics
        return profiler_metrics(p.memory, self.cfg.cycles_to_seconds(p.cycles), self.cfg)

    def to_json(self, **kw) -> str:
        """The figures (:meth:`fields`) and the output arrays' shapes, dtypes and sums as JSON."""
        out = self.fields()
        out["outputs"] = {n: {"shape": list(a.shape), "dtype": str(a.dtype), "sum": float(a.sum(dtype=np.float64))}
                          for n, a in self.outputs.items()}
        return json.dumps(out, default=float, **kw)


def how_predicted(p, cfg) -> dict:
    """How sure a prediction is: the share of the launch simulated and the interval of its cycles
    (and seconds, with the launch overhead) from the spread between its samples; a prediction that
    simulated everything has its own figure for both ends."""
    lo, hi = p.interval or (p.cycles, p.cycles)
    overhead = p.seconds - cfg.cycles_to_seconds(p.cycles)
    return {"gpu_simulated_share": p.simulated_share,
            "gpu_cycles_interval": [lo, hi],
            "gpu_seconds_interval": [cfg.cycles_to_seconds(lo) + overhead, cfg.cycles_to_seconds(hi) + overhead]}


@paced_run
def launch(kernel, grid=1, block=32, *, shared=0, params=None, buffers=None, textures=None, constants=None,
           config=None,
           timing=True, predict=True, sampling=None, trace=False, sm_ctas=None, ctas=None, occupancy=None,
           hazards="warn", max_cycles=None, max_instructions=None, progress=None, timeline=None,
           expected_instructions=None, l2_start="empty", gpu_method="auto", timing_only=False) -> LaunchReport:
    """Launch ``kernel`` (a :class:`Kernel`, a decoded kernel, a file path or a kernel text) over
    ``grid`` CTAs of ``block`` threads.

    ``shared``: dynamic shared memory in bytes, added to the kernel's ``SharedSize``.
    ``params``: {name or byte offset: int, float or buffer name}; ``buffers``: {name: numpy array
    (copied in, read back) or :class:`~maxsim.host.args.Buffer`}; ``textures``: {texture number or
    name: numpy array (float4) or :class:`~maxsim.host.args.Texture`} (a texture slot, as TLDS and
    TLD without .B address it, is a texture number); ``constants``: {constant bank 1-17: bytes or
    numpy array}, e.g. the kernel's ``__constant__`` data in bank 3. ``config``: an architecture
    config name, TOML path or loaded config (default gm204). ``timing``: time one SM
    (``sm_ctas`` CTAs, default one SM's resident CTAs); ``predict``: the whole-GPU prediction
    (``sampling``: a :class:`Sampling` for a sampled one); ``trace``: record the trace the timing
    model of ``config`` reads even without either (``report.result.trace``). ``ctas``: run only these CTAs (x, y).
    ``occupancy``: ``{"regs": N}``, ``{"warps_per_scheduler": W}`` or ``{"ctas_per_sm": C}``,
    the residency the kernel runs at. ``progress(done, total, what, unit)``: see
    :mod:`maxsim.report.progress`; ``timeline``: a callable given the timed SM (run with its issue
    log). ``l2_start``: what the L2 holds when the predicted launch starts: ``"empty"`` or
    ``"previous"``, what the same launch left there (back-to-back launches, the way benchmarks time
    a kernel: the launch before is run too, functionally where the whole grid is simulated, and
    the buffers read back are those after both). ``gpu_method``: ``"auto"`` (a launch of many
    waves is sampled across waves, :mod:`maxsim.gpu.sampling.waves`; one wave of long CTAs in time
    once its rates are stable, :mod:`~maxsim.gpu.sampling.intime`: a timed SM that is SM 0 of the
    GPU run, ``timing`` with the default CTAs, is extrapolated with it and its figures say so,
    ``sm_prediction_method``; a shape launched again, with the same arguments, reuses the figures
    of its launches once they repeat, its timed SM too, :mod:`~maxsim.gpu.sampling.launches`; the
    functional run stays whole, and a launch whose work differs from theirs is simulated),
    ``"full"`` (every CTA on every SM, whatever the size) or ``"sampled"`` (as "auto").
    The prediction says how it was made (:class:`Prediction`). ``timing_only``: the functional run
    computes only what the timing model reads (addresses, guards, control flow; no buffer can be
    read back), and a launch sampled across waves runs functionally only the CTAs its prediction
    needs (its chunks, their histories and a sample of the rest, whose warp instructions stand for
    the CTAs not run: :func:`maxsim.gpu.sampling.waves.needed`). Returns a :class:`LaunchReport`."""
    how = dict(shared=shared, params=params, buffers=buffers, textures=textures, constants=constants, config=config,
               timing=timing, predict=predict, sampling=sampling, trace=trace, sm_ctas=sm_ctas, ctas=ctas,
               occupancy=occupancy, hazards=hazards, max_cycles=max_cycles, max_instructions=max_instructions,
               progress=progress, timeline=timeline, expected_instructions=expected_instructions,
               l2_start=l2_start, gpu_method=gpu_method, timing_only=timing_only)
    report = _launch(kernel, grid, block, reuse_figures=True, **how)
    if report is None:
        # the launch's work differed from that of the launches whose figures it was to reuse (see
        # maxsim.gpu.sampling.launches): made again from its arguments, simulated
        report = _launch(kernel, grid, block, reuse_figures=False, **how)
    return report


def _launch(kernel, grid, block, *, shared, params, buffers, textures, constants, config, timing, predict, sampling,
            trace, sm_ctas, ctas, occupancy, hazards, max_cycles, max_instructions, progress, timeline,
            expected_instructions, l2_start, gpu_method, timing_only, reuse_figures):
    """:func:`launch`; ``reuse_figures``: whether it may reuse the figures of the launches of its
    shape before it. None when it was to reuse them but its work differs from theirs."""
    import time

    from ..functional.launch import launch as run_functional
    from ..timing.memory_system import L2_STARTS
    if l2_start not in L2_STARTS:
        raise LaunchError(f"l2_start {l2_start!r}: expected one of {', '.join(L2_STARTS)}")
    if gpu_method not in GPU_METHODS:
        raise LaunchError(f"gpu_method {gpu_method!r}: expected one of {', '.join(GPU_METHODS)}")
    cfg = _arch(config)
    k = as_kernel(kernel, cfg)
    (gx, gy), bx, dims = _geometry(grid, block)
    if k.max_threads and bx > k.max_threads:
        raise LaunchError(f"kernel {k.name} was compiled for at most {k.max_threads} threads per CTA "
                          f"(__launch_bounds__), launched with {bx}")
    code = k.code
    if not isinstance(shared, (int, np.integer)) or shared < 0:
        raise LaunchError(f"dynamic shared memory {shared!r}: expected a number of bytes >= 0")
    if shared:
        code = attrs.evolve(code, shared_size=code.shared_size + int(shared))
    if occupancy:
        from ..timing.occupancy import registers_for, with_registers
        code = with_registers(code, registers_for(code, bx, cfg, **occupancy))
    if code is not k.code:
        k = attrs.evolve(k, code=code)
    bound = bind(k, params, buffers, textures, constants)
    bound = attrs.evolve(bound, const_bank=with_geometry(bound.const_bank, dims))
    recorder = None
    if timing or predict or trace:
        from ..functional.trace import TraceRecorder
        from ..timing.summaries import make_summariser
        recorder = TraceRecorder(make_summariser(cfg))
    streamed = predict and sampling is None and ctas is None and gx * gy > 1 and not trace
    shape = reuse = work = timed_how = timed = None
    if streamed and gpu_method == "auto":
        shape, reuse = _repeated_launch(code, (gx, gy), bx, cfg, l2_start, bound)
        if not reuse_figures:
            reuse = None  # (simulated, and recorded as its shape's latest)
        if reuse is not None:
            reuse, work = reuse
            streamed = predict = False  # the figures of the launches before; the functional run goes on
            if timing and timeline is None and progress is None:
                from ..gpu.sampling import launches
                from ..timing.clock import clock_name
                from ..timing.cores import core_name
                timed_how = (hazards, max_cycles, sm_ctas, core_name(None), clock_name(None))
                timed = launches.timed(shape, timed_how)
            recorder = recorder if timing and timed is None else None
    gpu = sm = None
    once = streamed and timing and timed_in_gpu and not sm_ctas and timeline is None and max_cycles is None \
        and l2_start == "empty" and _fits_one_wave(code, gx * gy, bx, cfg)
    # a launch of one wave is watched for stable rates and sampled in time once they are
    # (maxsim.gpu.sampling.intime); its timed SM, when SM 0 of the run, is extrapolated with it
    watch = None
    if streamed and gpu_method != "full" and l2_start == "empty" and _one_wave(code, gx * gy, bx, cfg):
        from ..gpu.sampling.intime import Watch
        watch = Watch()
    if streamed and gpu_method != "full" and l2_start == "empty" and _sampled_across_waves(code, gx * gy, bx, cfg):
        res, gpu = _waves_gpu(code, (gx, gy), bx, cfg, bound, recorder, timing and (sm_ctas or None),
                              max_instructions=max_instructions, progress=progress,
                              expected_instructions=expected_instructions, timing_only=timing_only)
    elif streamed:
        # every CTA on every SM, timed as the functional run goes (see predict_gpu): the traces
        # of the CTAs the timed SM runs are kept, the others let go once timed; a launch of one
        # wave at most is simulated once, its timed SM being SM 0 of the GPU
        res, gpu, sm = _streamed_gpu(code, (gx, gy), bx, cfg, bound, recorder,
                                     False if once else timing and (sm_ctas or None),
                                     max_instructions=max_instructions, progress=progress,
                                     expected_instructions=expected_instructions, l2_start=l2_start,
                                     timed=(hazards,) if once else None, timing_only=timing_only, watch=watch)
    elif timing and not predict and not trace and timed is None:
        # the timed SM needs the traces of the launch's first CTAs only: the others are let go
        res = _first_traces(code, (gx, gy), bx, cfg, bound, recorder, sm_ctas, ctas=ctas,
                            max_instructions=max_instructions, progress=progress,
                            expected_instructions=expected_instructions, timing_only=timing_only)
    else:
        started = time.perf_counter()
        res = run_functional(code, (gx, gy), bx, bound.launch_params, bound.memory, bound.textures,
                             max_instructions=max_instructions, recorder=recorder, ctas=ctas, progress=progress,
                             expected_instructions=expected_instructions, timing_only=timing_only)
        functional_seconds = time.perf_counter() - started
    from ..gpu.sampling import launches
    if reuse is not None:
        done = launches.work_of(res, gx * gy)
        if (work is not None and done != work) or (timed is not None and done != timed[1]):
            launches.forget(shape)  # the figures before are not this launch's: it is simulated
            return None
    report = dict(kernel=k, grid=(gx, gy), block=bx, cfg=cfg, bound=bound, result=res)
    if sm is not None:
        from ..report.fields import timing_fields
        report.update(timing=functools.partial(_timed_fields, sm), sm=sm, sm_ctas=len(sm.cta_log), timed_in_gpu=True)
    elif timed is not None:
        # the run the launches before timed, with the same inputs and work (no trace recorded)
        from ..report.fields import timing_fields
        from ..timing.run import _copy_of
        sm = _copy_of(timed[0], functional_seconds)
        report.update(timing=functools.partial(timing_fields, sm), sm=sm, sm_ctas=len(sm.cta_log))
    elif timing:
        from ..report.fields import timing_fields
        from ..timing.run import simulate
        from ..timing.sm import residency
        ran = list(res.ctas)
        count = min(len(ran), sm_ctas or residency(code, bx, cfg)[0])
        _, sm = simulate(code, (gx, gy), bx, cfg=cfg, ctas=ran[:count], hazards=hazards, max_cycles=max_cycles,
                         progress=progress, log=timeline is not None, launched=res, reuse=True)
        if timeline is not None:
            timeline(sm)
        if timed_how is not None:
            launches.record_timed(shape, timed_how, sm, launches.work_of(res, gx * gy))
        report.update(timing=functools.partial(timing_fields, sm), sm=sm, sm_ctas=count)
    if predict:
        whole = len(res.ctas) == gx * gy
        if gpu is not None:
            report["prediction"] = gpu
        elif whole and gx * gy == 1 and sm is not None and max_cycles is None and l2_start == "empty":
            report["prediction"] = _one_cta(cfg, code, bx, sm)
        elif sampling is not None or whole:
            report["prediction"] = predict_gpu(code, (gx, gy), bx, cfg, sampling=sampling, bound=bound,
                                               traced=res if whole else None, l2_start=l2_start)
    if reuse is not None:
        report["prediction"] = reuse
    elif shape is not None and report.get("prediction") is not None:
        launches.record(shape, report["prediction"], launches.work_of(res, gx * gy))
    return LaunchReport(**report)


def _timed_fields(sm) -> dict:
    """The timed SM's figures (:func:`maxsim.report.fields.timing_fields`), and how they were made
    when it was SM 0 of a run sampled in time (:func:`maxsim.gpu.sampling.intime.complete_timed`)."""
    from ..report.fields import timing_fields
    out = timing_fields(sm)
    out.update(getattr(sm, "sampled_in_time", None) or {})
    return out


# a launch of more than one CTA that fits on the GPU at once (one wave), predicted in full and timed
# with the default CTAs, is simulated once: the timed SM is SM 0 of the whole-GPU run (its CTAs those
# the dispatcher gave it, its L2 and DRAM the GPU's, shared). False: the timed SM is a simulation of
# its own, of the launch's first CTAs with the L2 and DRAM to itself (a simulator setting)
timed_in_gpu = True


def _fits_one_wave(code, ctas, block, cfg):
    """Whether ``ctas`` CTAs of ``block`` threads are resident on the GPU at once (one wave)."""
    from ..timing.sm import residency
    try:
        return ctas <= cfg.gpu.sms * residency(code, block, cfg)[0]
    except Exception:  # a kernel that does not fit is reported by the run itself
        return False


def _streamed_gpu(code, grid, block, cfg, bound, recorder, sm_ctas, l2_start="empty", timed=None, watch=None, **run):
    """The functional run of the whole grid streamed into the whole-GPU simulation (:func:`predict_gpu`
    with ``stream``): ``(launch result, prediction)``. The result's trace holds the warps of the
    CTAs the timed SM will run (``sm_ctas``, default one SM's resident CTAs; none when
    ``sm_ctas`` is false), the first of the launch. ``l2_start="previous"``: the launch is first
    streamed through the GPU once (functionally too, as a launch before it would run), and the
    prediction starts from the L2 that one left; neither run holds the grid's traces. Returns
    ``(launch result, prediction, timed SM)``: with ``timed`` (see :func:`predict_gpu`), SM 0 of
    the run as the timed SM, else None."""
    import collections
    import itertools

    from ..functional.launch import LaunchStream
    from ..functional.trace import TraceRecorder, narrowed
    from ..gpu.gpu import simulate_gpu, stream_ctas
    from ..timing.memory_system import carried_over
    from ..timing.sm import residency
    from ..timing.summaries import make_summariser
    memory_system = None
    if l2_start == "previous":
        before = LaunchStream(code, grid, block, bound.launch_params, bound.memory, bound.textures,
                              recorder=TraceRecorder(make_summariser(cfg)), max_instructions=run.get("max_instructions"),
                              reuse=True)
        memory_system = carried_over(simulate_gpu(code, grid, block, cfg=cfg, hazards=None, stream=before).memory, cfg)
        before.release()
    stream = LaunchStream(code, grid, block, bound.launch_params, bound.memory, bound.textures,
                          recorder=recorder, reuse=True, warp_counts=watch is not None, **run)
    keep = 0 if sm_ctas is False else min(len(stream.ctas), sm_ctas or residency(code, block, cfg)[0])
    items = stream_ctas(stream)
    head = collections.deque(itertools.islice(items, keep))
    # the timed SM's copies hold only their own warps' records (not their functional batch's)
    kept = narrowed([tr for _, traces in head for tr in traces])

    def every():  # the head, let go as the GPU takes it, then the rest
        while head:
            yield head.popleft()
        yield from items
    prediction = predict_gpu(code, grid, block, cfg, stream=(stream, every()), memory_system=memory_system,
                             l2_start=l2_start, timed=timed, watch=watch)
    prediction, sm = prediction if timed else (prediction, None)
    res = stream.finish(dict(enumerate(kept)))
    stream.release()
    return res, prediction, sm


GPU_METHODS = ("auto", "full", "sampled")


def _repeated_launch(code, grid, block, cfg, l2_start, bound):
    """The shape of a launch (for :mod:`maxsim.gpu.sampling.launches`: the kernel, geometry, config,
    L2 at the start and the arguments' places: the constant banks, with the parameters and the
    buffers' addresses, and the textures' addresses, formats and sizes) and ``(prediction, work)``
    it reuses from the launches of that shape before it (None: it is predicted)."""
    from ..gpu.sampling import launches
    textures = tuple((n, t.address, t.format, t.size) for n, t in sorted(bound.textures.items()))
    shape = (code, grid, block, cfg, l2_start, bound.const_bank, tuple(sorted(bound.constants.items())), textures)
    return shape, launches.reused(shape, cfg)


def _sampled_across_waves(code, n_ctas, block, cfg) -> bool:
    from ..gpu.sampling.waves import applies
    from ..timing.sm import residency
    return applies(n_ctas, cfg.gpu.sms * residency(code, block, cfg)[0])


def _one_wave(code, n_ctas, block, cfg) -> bool:
    from ..gpu.sampling.intime import applies
    from ..timing.sm import residency
    return applies(n_ctas, cfg.gpu.sms * residency(code, block, cfg)[0])


def _in_time(r, grid, block, cfg) -> Prediction:
    """The prediction of a launch of one wave whose run stopped once its rates were stable
    (:mod:`maxsim.gpu.sampling.intime`)."""
    from ..gpu.sampling import intime
    t = intime.extrapolate(r.stopped, r.launch, cfg)
    seconds = cfg.cycles_to_seconds(t.cycles) + cfg.gpu.launch_overhead_us * 1e-6
    details = dict(t.details, l2_start="empty", interval_from="the spread between the windows' rates and the check")
    return Prediction(cfg.name, cfg.gpu.name, cfg.gpu.sms, seconds, t.cycles, r.waves, "sampled in time",
                      gflops=t.flops / seconds / 1e9, memory=t.memory, details=details,
                      simulated_share=t.simulated_share, interval=t.interval)


def _waves_gpu(code, grid, block, cfg, bound, recorder, sm_ctas, **run):
    """The functional run of the whole grid, with one-wave chunks of it simulated on the whole GPU
    as they run (:mod:`maxsim.gpu.sampling.waves`): ``(launch result, prediction)``; the result's
    trace holds the warps of the CTAs the timed SM runs (as :func:`_streamed_gpu`)."""
    from ..functional.launch import LaunchStream
    from ..gpu.sampling import waves
    from ..timing.sm import residency
    per_sm = residency(code, block, cfg)[0]
    look = ctas = None
    if run.get("timing_only"):  # only the CTAs the prediction needs (see launch)
        from ..functional.trace import TraceRecorder
        from ..timing.summaries import make_summariser
        gx, gy = grid
        slots = cfg.gpu.sms * per_sm
        first = [(i % gx, i // gx) for i in range(min(gx * gy, 64))]
        look = waves.probe_look(LaunchStream(code, grid, block, bound.launch_params, bound.memory, bound.textures,
                                             recorder=TraceRecorder(make_summariser(cfg)), ctas=first,
                                             timing_only=True), code, cfg, slots)
        ctas = [(i % gx, i // gx) for i in waves.needed(gx * gy, slots, look)]
        run = dict(run, expected_instructions=None)
    stream = LaunchStream(code, grid, block, bound.launch_params, bound.memory, bound.textures,
                          recorder=recorder, ctas=ctas, reuse=True, warp_counts=True, **run)
    keep = 0 if sm_ctas is False else min(len(stream.ctas), sm_ctas or per_sm)
    instr, chunks, kept = waves.stream_and_sample(stream, code, block, cfg, per_sm, keep=keep, look=look)
    res = stream.finish(dict(enumerate(kept)))
    stream.release()
    w = waves.extrapolate(instr, chunks, cfg.gpu.sms * per_sm, cfg)
    seconds = cfg.cycles_to_seconds(w.cycles) + cfg.gpu.launch_overhead_us * 1e-6
    details = dict(w.details, l2_start="empty",
                   interval_from="the spread between the chunks, the launch's start, and the method's measured error")
    return res, Prediction(cfg.name, cfg.gpu.name, cfg.gpu.sms, seconds, w.cycles, w.waves, "sampled across waves",
                           gflops=w.flops / seconds / 1e9, memory=w.memory,
                           details=details, simulated_share=w.simulated_share, interval=w.interval)


def _first_traces(code, grid, block, cfg, bound, recorder, sm_ctas, **run):
    """The functional run of a launch whose trace only the timed SM reads: the result's trace
    holds (copies of) the warps of its first ``sm_ctas`` CTAs (default one SM's resident CTAs)."""
    from ..functional.launch import LaunchStream
    from ..functional.trace import narrowed
    from ..timing.sm import residency
    stream = LaunchStream(code, grid, block, bound.launch_params, bound.memory, bound.textures,
                          recorder=recorder, reuse=True, **run)
    keep = min(len(stream.ctas), sm_ctas or residency(code, block, cfg)[0]) * stream.wpc
    kept = []
    for _, traces in stream:
        if len(kept) < keep:
            kept += narrowed([traces[w] for w in range(len(kept), min(keep, len(kept) + len(traces)))])
        traces = None
        if len(kept) >= keep:
            stream.stop_recording()  # the later CTAs' traces would not be read
    res = stream.finish(dict(enumerate(kept)))
    stream.release()
    return res


def _one_cta(cfg, code, block, sm) -> Prediction:
    """A launch of one CTA: the GPU runs it on one SM with the L2 and DRAM to itself, which is the
    timed SM's simulation."""
    from ..timing.sm import residency
    st = sm.stats
    seconds = cfg.cycles_to_seconds(st.cycles) + cfg.gpu.launch_overhead_us * 1e-6
    return Prediction(cfg.name, cfg.gpu.name, cfg.gpu.sms, seconds, st.cycles,
                      1 / (cfg.gpu.sms * residency(code, block, cfg)[0]), "timed SM",
                      gflops=st.flops / seconds / 1e9)


def predict_gpu(code, grid, block, cfg, *, sampling=None, bound=None, traced=None, hazards=None,
                max_instructions=None, progress=None, args=None, stream=None, l2_start="empty",
                memory_system=None, timed=None, watch=None) -> Prediction:
    """The launch of ``code`` over ``grid`` on the whole GPU of ``cfg``.

    With ``sampling`` (:class:`Sampling`): sampled (:func:`maxsim.gpu.sampling.predict`);
    ``traced``, a traced launch result of the whole grid at ``sampling.k``, lets a launch of at
    most one wave be timed from it (or ``{cta id: warp traces}``). Without: every CTA on every SM
    (:func:`maxsim.gpu.simulate_gpu`), from ``traced`` or from a functional run of ``bound``
    (:class:`~maxsim.host.args.Bound`) or of ``args`` (``(constant bank or parameter list,
    GlobalMemory, {number: Texture1D})``), run a batch of CTAs at a time as the SMs take them
    (the memory held does not grow with the grid: see :func:`maxsim.gpu.simulate_gpu`); or
    from ``stream``, ``(LaunchStream, its CTAs' (cta id, warp traces) in order)``.
    ``l2_start``: what the L2 holds when the launch starts, ``"empty"`` or ``"previous"`` (what the
    same launch left: back-to-back launches, as benchmarks time them). ``memory_system``: the full
    simulation's (default a new one); given with ``l2_start="previous"``, it is taken as holding what
    the launch before left (:func:`~maxsim.timing.memory_system.carried_over`), and the launch is
    not run twice. ``timed`` (``(hazards,)``, full simulation only): SM 0 of the run is also the
    launch's timed SM (:func:`maxsim.gpu.simulate_gpu`); returns ``(prediction, that SM)``.
    ``watch`` (a :class:`maxsim.gpu.sampling.intime.Watch`, with ``stream``): a launch of one wave
    sampled in time once its rates are stable (method "sampled in time"; "full" when they never are)."""
    if isinstance(code, Kernel):
        code = code.code
    if sampling is not None:
        from ..gpu.sampling import predict
        by_cta = traced if isinstance(traced, dict) else None
        if traced is not None and by_cta is None:
            wpc = (block + 31) // 32
            by_cta = {cid: [traced.trace[i * wpc + w] for w in range(wpc)] for i, cid in enumerate(traced.ctas)}
        p = predict(code, block, grid, sampling.k, sampling.build, cfg, k_step=sampling.k_step,
                    shift=sampling.shift, progress=progress, traced=by_cta, l2_start=l2_start)
        steady = [ph for ph in p.phases if ph.name == "steady state"]
        details = {"loop_cycles": (steady or p.phases)[0].loop_cycles, "progress_skew_iterations": p.progress_skew,
                   "sim_seconds": p.sim_seconds, "dram_busy": p.dram_busy, "dram_bound": p.dram_bound,
                   "l2_start": l2_start,
                   "phases": [{"name": ph.name, "ctas": ph.ctas, "k_samples": list(ph.ks), "cycles": list(ph.cycles),
                               "loop_cycles": ph.loop_cycles, "memory": ph.memory} for ph in p.phases]}
        from ..gpu.sampling.kloop import interval, simulated_share
        details["interval_from"] = "the method's tested agreement with full simulations"
        return Prediction(cfg.name, cfg.gpu.name, cfg.gpu.sms, p.seconds, p.cycles, p.waves, "sampled",
                          memory=p.memory, details=details, interval=interval(p),
                          simulated_share=simulated_share(p, grid, sampling.k, sampling.k_step))
    from ..gpu import simulate_gpu
    pair = None
    if traced is not None:
        wpc = (block + 31) // 32
        pair = (traced, [(cid, [traced.trace[i * wpc + w] for w in range(wpc)]) for i, cid in enumerate(traced.ctas)])
    if bound is not None:
        args = (bound.launch_params, bound.memory, bound.textures)
    params, memory, textures = args if args is not None else ((), None, None)
    r = simulate_gpu(code, grid, block, params, memory, textures, cfg=cfg, hazards=hazards,
                     max_instructions=max_instructions, traced=pair, stream=stream,
                     l2_start="empty" if memory_system is not None else l2_start, memory_system=memory_system,
                     timed=timed, watch=watch)
    if r.stopped is not None:
        p = _in_time(r, grid, block, cfg)
        if not timed:
            return p
        from ..gpu.sampling.intime import complete_timed
        if r.timed_sm is None:
            return p, None
        return p, complete_timed(r.timed_sm, r.stopped, r.launch, cfg, block, p.details["memory_factor"])
    stats = r.memory.stats()
    mem = {key: float(v) for key, v in stats.items() if isinstance(v, (int, float))
           and not key.endswith("rate")}
    from ..gpu.sampling import memory_counters  # every SM's L1/texture counters and resident warps
    mem.update(memory_counters(r.memory, r.cycles, r.sms, stats))
    from ..gpu.gpu import wave_alignment
    align = wave_alignment(r.sms, cfg.gpu.sms * r.resident_ctas)
    details = {"l2_start": l2_start}
    if align is not None:
        details["wave_alignment"] = align
    p = Prediction(cfg.name, cfg.gpu.name, cfg.gpu.sms, r.seconds, r.cycles, r.waves, "full",
                   gflops=r.stats.flops / r.seconds / 1e9, memory=mem, details=details)
    return (p, r.timed_sm) if timed else p

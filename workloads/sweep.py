"""Design-space sweeps (``maxsim sweep SPEC.toml``): every point of a grid of configs, kernels,
sizes and residencies run as ``maxsim run --json`` runs it, one row per point in a table.

The spec is a TOML file::

    config = "gtx980_oc"                # the base config of every point: a shipped name or a TOML
                                        # file (relative to the spec); may also be an axis below
    [set]                               # config values of every point, by their TOML names
    "dram.efficiency" = 0.79
    [grid]                              # every combination of these axes
    "l2.size" = [524288, 2097152]       # a config key by its TOML name: a list of values
    "gpu.mem_clock_mhz,gpu.dram_bandwidth_gbs" = [[4000, 128.0], [8000, 256.0]]  # keys set together
    workload = ["sgemm_64", "sgemm_128"]
    n = [1024, 2048]                    # SGEMM sizes: n (square) and optionally m, k
    [[point]]                           # explicit points (each crossed with the grid)
    warps_per_scheduler = 3
    [[kernel]]                          # a kernel file, named as a workload of the grid
    name = "vecadd"
    file = "vecadd.sass"                # relative to the spec
    grid = [8]
    block = 128
    param = ["n=1000", "a=a", "b=b", "c=c"]     # the --param / --buffer / --texture specs of `run`
    buffer = ["a=a.npy:in", "b=b.npy:in", "c=zeros:1000"]
    [plot]                              # the default figure of -o
    x = "gpu.dram_bandwidth_gbs"
    y = "gflops"                        # the launch's predicted GFLOPS (sm_gflops: the timed SM's)

An axis may also be a range: ``{from = 512, to = 4096, step = 512}`` or ``{from = 256, to = 4096,
times = 2}``. Point keys: config keys (``section.key``), ``config``, ``workload``, ``m``/``n``/``k``,
``regs``/``warps_per_scheduler``/``ctas_per_sm`` (one of them), and for a kernel file ``grid``,
``block`` and ``shared``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import time
import tomllib
from pathlib import Path

import attrs

from maxsim.errors import MaxsimError

WORKLOADS = ("sgemm_64", "sgemm_128")
OCCUPANCY_KEYS = ("regs", "warps_per_scheduler", "ctas_per_sm")
SIZE_KEYS = ("m", "n", "k")
FILE_KEYS = ("grid", "block", "shared")
POINT_KEYS = ("config", "workload") + SIZE_KEYS + OCCUPANCY_KEYS + FILE_KEYS
KERNEL_KEYS = ("name", "file", "grid", "block", "shared", "param", "buffer", "texture")
TOP_KEYS = ("config", "description", "set", "grid", "point", "kernel", "plot")
SAVE_EVERY_S = 1.0  # the table is rewritten at most this often while points complete


class SweepError(MaxsimError):
    pass


@attrs.frozen
class Point:
    """One point of a sweep: its parameters as the spec names them (``values``, in the spec's order)
    and its id (a hash of the parameters: the same point of an edited spec keeps its id)."""

    values: tuple  # ((name, value), ...)

    @property
    def id(self) -> str:
        text = json.dumps([[k, v] for k, v in sorted(self.values)], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def get(self, key, default=None):
        return dict(self.values).get(key, default)


@attrs.frozen
class KernelFile:
    name: str
    path: str
    text: str
    grid: tuple
    block: int | tuple
    shared: int
    params: dict
    buffers: dict
    textures: dict


@attrs.frozen
class Spec:
    path: str
    config: str
    config_dir: str
    fixed: tuple            # ((config key, value), ...) of [set]
    points: tuple           # Point, ...
    kernels: dict           # name -> KernelFile
    plot: dict              # {"x": ..., "y": ...} defaults of -o


def _err(path, msg):
    return SweepError(f"{path}: {msg}")


def _axis_values(path, key, value):
    if isinstance(value, list):
        if not value:
            raise _err(path, f"[grid] {key!r}: an empty list of values")
        return value
    if isinstance(value, dict):
        start, stop = value.get("from"), value.get("to")
        step, times = value.get("step"), value.get("times")
        extra = set(value) - {"from", "to", "step", "times"}
        if extra or not isinstance(start, (int, float)) or not isinstance(stop, (int, float)) \
                or (step is None) == (times is None):
            raise _err(path, f"[grid] {key!r}: a range is {{from = A, to = B, step = S}} or "
                             f"{{from = A, to = B, times = F}}")
        out, v = [], start
        if step is not None:
            if step <= 0:
                raise _err(path, f"[grid] {key!r}: step must be > 0")
            while v <= stop + 1e-9 * abs(stop):
                out.append(v)
                v = start + len(out) * step
        else:
            if times <= 1 or start <= 0:
                raise _err(path, f"[grid] {key!r}: times must be > 1 and from > 0")
            while v <= stop * (1 + 1e-9):
                out.append(v)
                v = v * times
        if not out:
            raise _err(path, f"[grid] {key!r}: the range is empty")
        return out
    raise _err(path, f"[grid] {key!r}: expected a list of values or a range table, got {value!r}")


def _check_key(path, where, key, config_keys):
    if key in POINT_KEYS or key in config_keys:
        return
    sec = key.partition(".")[0]
    hint = (f" (config sections: {', '.join(sorted({k.partition('.')[0] for k in config_keys}))})"
            if "." in key else f" (point keys: {', '.join(POINT_KEYS)}, or a config key section.key)")
    if "." in key and sec in {k.partition(".")[0] for k in config_keys}:
        hint = f" (no such key in [{sec}] of the config)"
    raise _err(path, f"{where}: unknown key {key!r}{hint}")


def _config_keys():
    from maxsim.arch.config import load_config
    cfg = load_config("gm204")
    out = set()
    for f in attrs.fields(type(cfg)):
        sec = getattr(cfg, f.name)
        if attrs.has(type(sec)):
            out.update(f"{f.name}.{g.name}" for g in attrs.fields(type(sec)))
    return out


def load_spec(path) -> Spec:
    """Read and check a sweep spec; errors name the file and the key."""
    from maxsim.host.specs import parse_buffer, parse_param, parse_texture
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except FileNotFoundError:
        raise SweepError(f"{path}: no such sweep spec") from None
    except OSError as e:
        raise SweepError(f"{path}: cannot read the sweep spec: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise SweepError(f"{path}: bad TOML syntax: {e}") from None
    here = Path(path).resolve().parent
    for k in doc:
        if k not in TOP_KEYS:
            raise _err(path, f"unknown key {k!r} (a spec has {', '.join(TOP_KEYS)})")
    config_keys = _config_keys()
    fixed = doc.get("set", {})
    if not isinstance(fixed, dict):
        raise _err(path, "[set] must be a table of config keys")
    for k in fixed:
        if k not in config_keys:
            _check_key(path, "[set]", k if "." in k else f"{k}", config_keys)
            raise _err(path, f"[set]: {k!r} is not a config key (section.key)")
    grid = doc.get("grid", {})
    if not isinstance(grid, dict):
        raise _err(path, "[grid] must be a table of axes")
    axes = []
    for key, value in grid.items():
        names = [k.strip() for k in key.split(",")]
        for k in names:
            _check_key(path, "[grid]", k, config_keys)
        values = _axis_values(path, key, value)
        if len(names) > 1:
            for v in values:
                if not isinstance(v, list) or len(v) != len(names):
                    raise _err(path, f"[grid] {key!r}: each value must be a list of {len(names)} "
                                     f"(one per key), got {v!r}")
            axes.append([tuple(zip(names, v)) for v in values])
        else:
            axes.append([((names[0], v),) for v in values])
    explicit = doc.get("point", [{}])
    if isinstance(explicit, dict) or not all(isinstance(p, dict) for p in explicit):
        raise _err(path, "[[point]] entries must be tables")
    for i, p in enumerate(explicit):
        for k in p:
            _check_key(path, f"[[point]] #{i + 1}", k, config_keys)
    kernels = {}
    for i, kt in enumerate(doc.get("kernel", [])):
        where = f"[[kernel]] #{i + 1}"
        if not isinstance(kt, dict):
            raise _err(path, f"{where}: must be a table")
        unknown = set(kt) - set(KERNEL_KEYS)
        if unknown:
            raise _err(path, f"{where}: unknown key {sorted(unknown)[0]!r} (keys: {', '.join(KERNEL_KEYS)})")
        if "name" not in kt or "file" not in kt:
            raise _err(path, f"{where}: needs name and file")
        name = kt["name"]
        if name in WORKLOADS or name in kernels:
            raise _err(path, f"{where}: name {name!r} is taken")
        file = (here / kt["file"]) if not os.path.isabs(kt["file"]) else Path(kt["file"])
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise _err(path, f"{where}: cannot read {file}: {getattr(e, 'strerror', None) or e}") from None
        cwd = os.getcwd()
        try:
            os.chdir(here)  # buffer and texture files relative to the spec
            params = dict(parse_param(s) for s in kt.get("param", []))
            buffers = dict(parse_buffer(s) for s in kt.get("buffer", []))
            textures = dict(parse_texture(s) for s in kt.get("texture", []))
        except MaxsimError as e:
            raise _err(path, f"{where}: {e}") from None
        finally:
            os.chdir(cwd)
        g = kt.get("grid", [1])
        kernels[name] = KernelFile(name=name, path=str(file), text=text,
                                   grid=tuple(g) if isinstance(g, list) else (g,),
                                   block=tuple(kt["block"]) if isinstance(kt.get("block"), list) else kt.get("block", 32),
                                   shared=kt.get("shared", 0), params=params, buffers=buffers, textures=textures)
    points, seen = [], set()
    for p in explicit:
        for combo in itertools.product(*axes):
            values = dict(p)
            for pairs in combo:
                values.update(pairs)
            point = Point(tuple((k, _plain(v)) for k, v in values.items()))
            _check_point(path, point, kernels)
            if point.id not in seen:
                seen.add(point.id)
                points.append(point)
    plot = doc.get("plot", {})
    if not isinstance(plot, dict) or set(plot) - {"x", "y"}:
        raise _err(path, "[plot] takes x and y (column names of the table)")
    config = doc.get("config", "gm204")
    return Spec(path=path, config=config, config_dir=str(here), fixed=tuple(fixed.items()), points=tuple(points),
                kernels=kernels, plot=plot)


def _plain(v):
    return tuple(v) if isinstance(v, list) else v


def _check_point(path, point, kernels):
    v = dict(point.values)
    w = v.get("workload")
    if w is None:
        raise _err(path, f"point {_describe(point)}: no workload (give workload in [grid] or [[point]])")
    if w not in WORKLOADS and w not in kernels:
        raise _err(path, f"point {_describe(point)}: unknown workload {w!r} (expected one of "
                         f"{', '.join(WORKLOADS + tuple(kernels))})")
    occ = [k for k in OCCUPANCY_KEYS if k in v]
    if len(occ) > 1:
        raise _err(path, f"point {_describe(point)}: give one of {', '.join(OCCUPANCY_KEYS)}, not {' and '.join(occ)}")
    wrong = [k for k in (SIZE_KEYS if w in kernels else FILE_KEYS) if k in v]
    if wrong:
        raise _err(path, f"point {_describe(point)}: {wrong[0]!r} does not apply to "
                         f"{'a kernel file' if w in kernels else 'an SGEMM workload'}")


def _describe(point):
    return ", ".join(f"{k}={v}" for k, v in point.values)


def point_config(spec, point):
    """The resolved config of ``point``: the base config, [set], then the point's config keys."""
    from maxsim.arch.config import load_config, override
    from maxsim.errors import ConfigError
    name = point.get("config", spec.config)
    ref = name
    if isinstance(name, str) and name.endswith(".toml") and not os.path.isabs(name) \
            and os.path.exists(os.path.join(spec.config_dir, name)):
        ref = os.path.join(spec.config_dir, name)
    changes = dict(spec.fixed)
    changes.update((k, v) for k, v in point.values if "." in k)
    try:
        cfg = load_config(ref)
        return override(cfg, changes) if changes else cfg
    except ConfigError as e:
        raise SweepError(f"{spec.path}: point {_describe(point)}: {e}") from None


@attrs.frozen
class Task:
    """What a worker needs to run one point."""

    point: Point
    cfg: object
    kernel: KernelFile | None


def run_task(task):
    """The fields of ``maxsim run --json`` for one point (an error names the point)."""
    try:
        return _run(task)
    except SweepError:
        raise
    except MaxsimError as e:
        raise SweepError(f"point {_describe(task.point)}: {e}") from None


def _run(task):
    from maxsim.report.text import summarise
    cfg, v = task.cfg, dict(task.point.values)
    occupancy = next(({k: v[k]} for k in OCCUPANCY_KEYS if k in v), None)
    if task.kernel is None:
        from .sgemm.harness import run_workload
        from .sgemm.published import MAIN_LOOP_CYCLES, WARPS_PER_SCHEDULER
        name = v["workload"]
        n = v.get("n")
        m, k = v.get("m", n), v.get("k", n)
        out = run_workload(name, check="auto", cfg=cfg, m=m, n=n, k=k, occupancy=occupancy)
        out["summary"] = summarise(out, cfg.peak_gflops, cfg.gpu.sms, MAIN_LOOP_CYCLES[name],
                                   reference_warps_per_scheduler=WARPS_PER_SCHEDULER)
        return out
    from maxsim.host import launch
    kf = task.kernel
    r = launch(kf.text, v.get("grid", kf.grid), v.get("block", kf.block), shared=v.get("shared", kf.shared),
               params=kf.params, buffers=kf.buffers, textures=kf.textures, config=cfg, timing=True,
               predict=True, occupancy=occupancy)
    out = {"workload": kf.name}
    out.update(r.fields())
    out["summary"] = summarise(out, cfg.peak_gflops, cfg.gpu.sms)
    return out


def task_key(cache, task):
    from maxsim.cache import config_values
    v = dict(task.point.values)
    launch = {k: val for k, val in v.items() if k in SIZE_KEYS + OCCUPANCY_KEYS + FILE_KEYS}
    if task.kernel is None:
        from .sgemm.generator import generate
        text = generate(v["workload"])
    else:
        kf = task.kernel
        text = kf.text
        launch.update(kernel_grid=kf.grid, kernel_block=kf.block, kernel_shared=kf.shared, params=kf.params,
                      buffers=kf.buffers, textures=kf.textures)
    return cache.key(what="run", workload=v["workload"], kernel=text, launch=launch, config=config_values(task.cfg))


# ---------------------------------------------------------------------------------------------
# the table

NOT_IN_TABLE = ("instructions",)  # fields of run --json a sweep's table leaves out


def flatten(fields, prefix=""):
    """A run's fields as one flat row: nested tables joined by '.', lists as JSON text."""
    out = {}
    for k, v in fields.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, name + "."))
        elif isinstance(v, (list, tuple)):
            out[name] = json.dumps(v, default=float)
        elif hasattr(v, "item") and not isinstance(v, (str, bytes)):
            out[name] = v.item()
        else:
            out[name] = v
    return out


def point_row(point, fields):
    """The table row of a point: its id and parameters (by their names in the spec), then every
    figure of ``run --json`` (a figure named like a parameter but different from it as
    ``run.NAME``)."""
    row = {"point": point.id}
    for k, v in point.values:
        row[k] = json.dumps(list(v)) if isinstance(v, tuple) else v
    # the per-instruction rows (a list of one table per SASS line: the source page's) are not a
    # figure of the point; `maxsim run --json` on the point gives them
    fields = {k: v for k, v in fields.items() if k not in NOT_IN_TABLE}
    for k, v in flatten(fields).items():
        if k not in row:
            row[k] = v
        elif row[k] != v:
            row[f"run.{k}"] = v
    return row


def _column_type(values):
    import pyarrow as pa
    present = [v for v in values if v is not None]
    if not present:
        return pa.null()
    if all(isinstance(v, bool) for v in present):
        return pa.bool_()
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pa.int64()
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return pa.float64()
    return pa.string()


def to_arrow(rows):
    """A pyarrow Table of the rows: a column per name any row has (missing: null), the parameters
    first in the order they appear."""
    import pyarrow as pa
    names = []
    seen = set()
    for r in rows:
        for k in r:
            if k not in seen:
                seen.add(k)
                names.append(k)
    arrays = {}
    for name in names:
        values = [r.get(name) for r in rows]
        t = _column_type(values)
        if t == pa.float64():
            values = [None if v is None else float(v) for v in values]
        elif t == pa.string():
            values = [None if v is None else (v if isinstance(v, str) else json.dumps(v, default=float))
                      for v in values]
        arrays[name] = pa.array(values, type=t)
    return pa.table(arrays) if arrays else pa.table({"point": pa.array([], type=pa.string())})


def write_table(rows, base):
    """Write BASE.parquet and BASE.csv (each atomically: a file is whole or the earlier one)."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq
    table = to_arrow(rows)
    for ext, write in ((".parquet", lambda t, p: pq.write_table(t, p)),
                       (".csv", lambda t, p: pacsv.write_csv(t, p))):
        final = f"{base}{ext}"
        tmp = f"{final}.tmp"
        try:
            write(table, tmp)
            os.replace(tmp, final)
        except OSError as e:
            raise SweepError(f"{final}: cannot write the table: {e.strerror or e}") from None


def read_table(base):
    """The rows of an earlier run's table (Parquet, else CSV), or [] when there is none."""
    import pyarrow.parquet as pq
    path = f"{base}.parquet"
    if not os.path.exists(path):
        if os.path.exists(f"{base}.csv"):
            import pyarrow.csv as pacsv
            try:
                return pacsv.read_csv(f"{base}.csv").to_pylist()
            except Exception as e:  # noqa: BLE001 - pyarrow's parse errors
                raise SweepError(f"{base}.csv: cannot read the table to resume: {e}") from None
        return []
    try:
        return pq.read_table(path).to_pylist()
    except Exception as e:  # noqa: BLE001 - pyarrow's read errors
        raise SweepError(f"{path}: cannot read the table to resume: {e}") from None


# ---------------------------------------------------------------------------------------------
# running

def sweep(spec, base, engine, cache=None, resume=False, progress=None):
    """Run every point of ``spec`` not yet in the table ``base`` (with ``resume``), writing the
    table as points complete. Returns ``(rows, counts)``: the rows in the spec's order, and
    ``{"points", "resumed", "cached", "computed"}``."""
    rows = {}
    if resume:
        for r in read_table(base):
            if r.get("point") is not None:
                rows[r["point"]] = r
    wanted = [p for p in spec.points if p.id not in rows]
    counts = {"points": len(spec.points), "resumed": len(spec.points) - len(wanted), "cached": 0, "computed": 0}
    tasks = [Task(point=p, cfg=point_config(spec, p), kernel=spec.kernels.get(p.get("workload"))) for p in wanted]
    total = len(spec.points)

    def tell():
        if progress is not None:
            progress(sum(1 for p in spec.points if p.id in rows), total, "sweep", "points")

    todo = []
    keys = {}
    for t in tasks:
        if cache is not None:
            keys[t.point.id] = task_key(cache, t)
            hit = cache.get(keys[t.point.id])
            if hit is not None:
                rows[t.point.id] = point_row(t.point, hit)
                counts["cached"] += 1
                continue
        todo.append(t)
    # the costliest first (largest problems): they start early, the small ones fill in
    todo.sort(key=lambda t: -_cost(t))
    last = time.monotonic()
    tell()
    try:
        for i, fields in engine.run(run_task, [(t,) for t in todo]):
            t = todo[i]
            if cache is not None:
                cache.put(keys[t.point.id], fields)
            rows[t.point.id] = point_row(t.point, fields)
            counts["computed"] += 1
            tell()
            if time.monotonic() - last >= SAVE_EVERY_S:
                write_table(_ordered(spec, rows), base)
                last = time.monotonic()
    finally:
        write_table(_ordered(spec, rows), base)
    return _ordered(spec, rows), counts


def _cost(task):
    v = dict(task.point.values)
    if task.kernel is None:
        n = v.get("n", 256)
        return v.get("m", n) * n * v.get("k", n)
    g = v.get("grid", task.kernel.grid)
    return math.prod(g) if isinstance(g, (list, tuple)) else g


def _ordered(spec, rows):
    """The rows of the spec's points in its order, then any other rows of the table (points an
    earlier spec had)."""
    order = [p.id for p in spec.points]
    out = [rows[i] for i in order if i in rows]
    listed = set(order)
    out += [r for i, r in rows.items() if i not in listed]
    return out


# ---------------------------------------------------------------------------------------------
# the plot

def plot_sweep(rows, x, y, path, spec=None):
    """Draw figure ``y`` against column ``x``, one line per combination of the other parameters
    (a config, a kernel, a size...). Returns the path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from maxsim.report.plots import save_figure
    if not rows:
        raise SweepError(f"-o {path}: the table has no rows to plot")
    columns = set().union(*(r.keys() for r in rows))
    for what, name in (("--x", x), ("--y", y)):
        if name not in columns:
            raise SweepError(f"{what} {name}: no such column in the table (e.g. "
                             f"{', '.join(sorted(c for c in columns if not c.startswith(('opcode', 'sm_opcode', 'stall'))))[:300]})")
    params = _parameter_columns(rows, spec)
    def key(r, p):
        return json.dumps(r.get(p), default=str)

    # a line per combination of the parameters that vary, less those that follow x (keys set
    # together with it, as a DRAM clock with its bandwidth)
    xs = {key(r, x) for r in rows}
    others = [p for p in params if p != x and len({key(r, p) for r in rows}) > 1
              and len({(key(r, x), key(r, p)) for r in rows}) > len(xs)]
    lines = {}
    for r in rows:
        if r.get(x) is None or r.get(y) is None:
            continue
        label = ", ".join(f"{p}={_short(r.get(p))}" for p in others) or y
        lines.setdefault(label, []).append((r[x], r[y]))
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for label, pts in lines.items():
        pts.sort(key=lambda p: p[0])
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xlabel(_scoped(x))
    ax.set_ylabel(_scoped(y))
    ax.grid(True, alpha=0.3)
    if len(lines) > 1:
        ax.legend(fontsize=7, ncol=2 if len(lines) > 8 else 1)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path


def _scoped(column):
    """An axis label: the column, and whose figure it is (the launch's or the timed SM's)."""
    if column in ("seconds", "cycles", "gflops"):
        return f"{column} (the launch, predicted on the GPU)"
    if column.startswith("sm_"):
        return f"{column} (the timed SM)"
    return column


def _short(v):
    if isinstance(v, int) and v >= 1 << 20 and v % (1 << 20) == 0:
        return f"{v >> 20} MB"
    if isinstance(v, int) and v >= 1 << 10 and v % (1 << 10) == 0:
        return f"{v >> 10} KB"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _parameter_columns(rows, spec):
    if spec is not None:
        names = []
        for p in spec.points:
            for k, _ in p.values:
                if k not in names:
                    names.append(k)
        return names
    return [k for k in rows[0] if k in POINT_KEYS or "." in k][:8]

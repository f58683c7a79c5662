"""Flattened warp traces (maxsim.timing.sm.flatten_trace / flatten_traces) against a flattening
written out from the trace segments' records, warp by warp: a stencil's CTAs (warps that ran the
same segments, flattened together) and a divergent kernel's (warps through different segments,
several parts each)."""

from __future__ import annotations

import os

import numpy as np

import maxsim
from maxsim.arch.config import load_config
from maxsim.gpu.gpu import trace_ctas
from maxsim.host.kernel import Kernel
from maxsim.timing import sm as S
from maxsim.timing.static import BAR, LDG, LDS, S2R, STG, STS, TEX

ROOT = os.path.join(os.path.dirname(__file__), "..")


def written_out(parts, unit):
    """One warp's flattened trace built position by position from its segments' records."""
    pcs, aux, sec, offs = [], [], [], []
    most = start = 0
    for seg, row in parts:
        p = np.asarray(seg.pcs, dtype=np.int32)
        a = np.full(p.size, -1, dtype=np.int32)
        for q, rec in seg.mem.items():  # (the records in the order the segment holds them)
            kind = unit[p[q]]
            if kind in (LDS, STS, BAR, S2R):
                a[q] = int(rec[row])
            elif kind in (TEX, LDG, STG):
                lst = np.asarray(rec[row], dtype=np.int64)
                a[q] = len(sec)
                offs.append(start + q)
                sec.append(lst.size)
                sec.extend(lst.tolist())
                most = max(most, lst.size)
        pcs.append(p)
        aux.append(a)
        start += p.size
    cat = np.concatenate
    return (cat(pcs) if pcs else np.zeros(0, np.int32), cat(aux) if aux else np.zeros(0, np.int32),
            np.array(sec, dtype=np.int64), np.array(offs, dtype=np.int64), most)


def check(traces, code, cfg):
    _, tables = S.kernel_tables(code, cfg)
    unit, key = tables[3], tables[4]
    parts = [tr.parts for tr in traces]
    want = [written_out(p, unit) for p in parts]
    together = S.flatten_traces(parts, unit, key)
    alone = [S.flatten_trace(p, unit, key) for p in parts]
    for w, (a, b, c) in enumerate(zip(want, together, alone)):
        for got in (b, c):
            for i in range(4):
                assert got[i].dtype == a[i].dtype and np.array_equal(got[i], a[i]), (w, i)
            assert got[4] == a[4], w
    return want


def stencil_traces(n, seed):
    """stencil5 over n x n (CTAs of 32 x 8) run functionally: the kernel, the launch and its warps'
    traces in warp order."""
    k = Kernel.load(os.path.join(ROOT, "workloads/cuda/stencil.cu"), kernel="stencil5")
    a = np.random.default_rng(seed).standard_normal((n, n)).astype(np.float32)
    r = maxsim.launch(k, grid=(n // 32, n // 8), block=(32, 8), timing=False, predict=False, trace=True,
                      params={"in": "a", "out": "o", "h": n, "w": n, "c0": 0.5, "c1": 0.125},
                      buffers=dict(a=a, o=np.zeros_like(a)))
    return k, r, [r.result.trace[w] for w in range(n * n // 32)]


def test_a_stencils_warps_flattened_together_as_written_out():
    k, r, traces = stencil_traces(64, 1)
    want = check(traces, k.code, load_config(r.config))
    assert sum(w[2].size for w in want) > 0  # (global loads flattened: sector lists there)
    assert any(len(tr.parts) > 1 for tr in traces)  # (several parts a warp)


def test_divergent_warps_flattened_as_written_out():
    from sasskit import kernel
    from test_simt import COLLATZ, EPILOGUE, PROLOGUE, collatz_problem
    from maxsim.functional import GlobalMemory
    cfg = load_config("gm204")
    x = collatz_problem(8 * 64)
    k = kernel(*(PROLOGUE + COLLATZ + EPILOGUE), nparams=2, regs=16)
    mem = GlobalMemory()
    src, dst = mem.alloc(4 * x.size), mem.alloc(4 * x.size)
    mem.write(src, x)
    _, ctas = trace_ctas(k, 8, 64, [src, dst], mem, None, cfg)
    traces = [tr for _, trs in ctas for tr in trs]
    want = check(traces, k, cfg)
    assert len({tuple(id(seg) for seg, _ in tr.parts) for tr in traces}) > 1  # (warps through different segments)
    assert max(len(tr.parts) for tr in traces) > 2 and sum(w[2].size for w in want) > 0


def test_sector_lists_held_as_plain_lists_flattened_the_same():
    # records whose sector lists are a plain list of arrays (not one SectorLists array) take the
    # tables' other path: the same flattened traces
    from maxsim.functional.trace import Segment, WarpTrace
    from maxsim.timing.summaries import SectorLists
    k, r, traces = stencil_traces(32, 2)
    copies = {}
    plain = []
    for tr in traces:
        new = WarpTrace(tr.warp)
        for seg, row in tr.parts:
            if id(seg) not in copies:
                c = Segment(seg.warps)
                c.pcs = seg.pcs
                c.mem = {q: ([np.array(x) for x in rec] if isinstance(rec, SectorLists) else rec)
                         for q, rec in seg.mem.items()}
                copies[id(seg)] = c
            new.parts.append((copies[id(seg)], row))
        plain.append(new)
    assert any(isinstance(rec, list) for c in copies.values() for rec in c.mem.values())
    cfg = load_config(r.config)
    for x, y in zip(check(plain, k.code, cfg), check(traces, k.code, cfg)):
        assert all(np.array_equal(u, v) for u, v in zip(x[:4], y[:4])) and x[4] == y[4]


def test_records_read_alone_or_copied_together_flattened_the_same(monkeypatch):
    # a segment whose rows are gathered at once reads its records where they are when they are
    # long (RECORD_SECTORS_ALONE), else copies them into one array first: the same flattened traces
    k, r, traces = stencil_traces(64, 3)
    cfg = load_config(r.config)
    calls = {"alone": 0, "together": 0}

    def counted(name, fn):
        def call(*args):
            calls[name] += 1
            return fn(*args)
        return call
    monkeypatch.setattr(S, "_gather_record", counted("alone", S._gather_record))
    monkeypatch.setattr(S, "_record_lists", counted("together", S._record_lists))
    for least in (0, 1 << 40):
        monkeypatch.setattr(S, "RECORD_SECTORS_ALONE", least)
        S._SEGMENTS.clear()
        S._RECORD_LISTS.clear()
        S._table_bytes[0] = 0
        check(traces, k.code, cfg)
    assert calls["alone"] > 0 and calls["together"] > 0

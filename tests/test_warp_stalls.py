"""The per-warp stall counts of a run (maxsim.timing.stats.WarpStalls): rows added in batches read
as the dictionary made entry by entry would."""

import pickle

import numpy as np

from maxsim.timing.stats import STALL_REASONS, Stats, WarpStalls


def _plain(batches):
    """The dictionary built one warp at a time (counts of a label seen again added)."""
    d = {}
    for labels, rows in batches:
        for label, row in zip(labels, np.asarray(rows).tolist()):
            old = d.setdefault(label, dict.fromkeys(STALL_REASONS, 0))
            for r, n in zip(STALL_REASONS, row):
                old[r] += n
    return d


def test_batches_read_as_a_dictionary():
    rng = np.random.default_rng(3)
    m = len(STALL_REASONS)
    batches = [(["a.w0", "a.w1"], rng.integers(0, 99, (2, m))),
               (["b.w0", "b.w1", "b.w2"], rng.integers(0, 99, (3, m))),
               (["a.w1", "c.w0"], rng.integers(0, 99, (2, m)))]  # a.w1 again: counts added
    ws = WarpStalls()
    for labels, rows in batches[:2]:
        ws.add_rows(labels, rows)
    assert len(ws) == 5 and "b.w2" in ws and "c.w0" not in ws
    ws.add_rows(*batches[2])
    want = _plain(batches)
    assert list(ws.items()) == list(want.items())  # the same order, the same counts
    assert ws == want and len(ws) == 6
    assert all(type(v) is int for d in ws.values() for v in d.values())
    assert pickle.loads(pickle.dumps(ws)) == want


def test_prefixed_and_written():
    m = len(STALL_REASONS)
    one = WarpStalls()
    one.add_rows(["x.w0", "x.w1"], np.arange(2 * m).reshape(2, m))
    total = Stats().warp_stalls
    total.add_prefixed(one, "sm3.")
    total["extra"] = dict.fromkeys(STALL_REASONS, 7)
    assert list(total) == ["sm3.x.w0", "sm3.x.w1", "extra"]
    assert total["sm3.x.w1"] == dict(zip(STALL_REASONS, range(m, 2 * m)))
    total.setdefault("sm3.x.w0", {})["stall_count"] += 100
    assert total["sm3.x.w0"]["stall_count"] == 100
    total.add_prefixed({"y": {"stall_count": 1}}, "sm4.")  # a plain mapping too
    assert total["sm4.y"] == {"stall_count": 1} and len(total) == 4


def test_ended_ctas_warps_read_as_their_views_were(monkeypatch):
    """A whole-GPU run's SMs keep no backward-branch times and hold an ended CTA's warps as the CTA
    alone (maxsim.timing.sm.WarpList); each warp read back is the view it had: number, slot,
    scheduler, CTA, label, exited, no trace, no branch times (against the same run keeping every
    view)."""
    from maxsim.arch.config import load_config, override
    from maxsim.gpu import simulate_gpu
    from maxsim.timing.sm import CtaView, WarpList
    from workloads.sgemm.harness import _kernel, _prepare, _sizes

    cfg = override(load_config("gtx980_oc"), {"gpu.sms": 2})

    def warps():
        geo, lda, ldb, ldc = _sizes("sgemm_128", 384, 384, 32, None, None, None)
        kernel, p = _kernel("sgemm_128", "swirl", "maxas", True, None), _prepare(geo, 384, 384, 32, lda, ldb, ldc,
                                                                                   1.0, 0)
        g = simulate_gpu(kernel, p.grid, p.block, p.params, p.memory, p.textures, cfg=cfg)
        held = [x for sm in g.sms for x in sm.all_warps._items]
        return [[(w.wid, w.slot, w.sched.index, w.cta.cid, w.cta.start, w.label, w.done, tuple(w.parts),
                  w.branch_times, sm.all_warps[w.wid].label, sm.all_warps[-1 - w.wid].wid) for w in sm.all_warps]
                for sm in g.sms], held
    compact, held = warps()
    assert sum(type(x) is CtaView for x in held) >= len(held) // 2  # 9 CTAs on 2 SMs, 2 resident at a time
    monkeypatch.setattr(WarpList, "ended", lambda self, cta, views: None)
    whole, held = warps()
    assert not any(type(x) is CtaView for x in held)
    assert compact == whole

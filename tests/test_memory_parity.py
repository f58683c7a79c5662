"""The compiled memory system gives the numbers of the pure-Python one, exactly.

:class:`~maxsim.timing.memory_core.CompiledMemorySystem` and the reference
:class:`~maxsim.timing.memory_system.MemorySystem` are driven with the same random request streams
(reads, stores, warming, flushes, backlogs, out-of-order cycles, requests with repeated sectors and
long ones) under several configs (GM204 and GM200 geometry, a tiny L2 that evicts all the time,
plain interleaving, a DRAM cut to a sixteenth of its bandwidth), and run the same sampled
whole-GPU predictions of both SGEMMs. Every completion cycle, counter, ``stats()`` key, the L2's
lines in LRU order with their sectors' arrival cycles and dirty bits, and every bandwidth server's
window table must be equal (floats bit for bit).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from maxsim.arch.config import load_config, override
from maxsim.errors import MaxsimError
from maxsim.timing.memory_core import EMPTY, CompiledMemorySystem
from maxsim.timing.memory_system import BandwidthServer, MemorySystem
from maxsim.timing.sm import serves_in_core

CFG = load_config("gtx980_oc")


def twins(cfg, **kw):
    return MemorySystem(cfg, core="python", **kw), MemorySystem(cfg, core="compiled", **kw)


def windows(server):
    """A server's window tables as the reference holds them: ({window: first free}, {window: parent})."""
    if isinstance(server, BandwidthServer):
        return dict(server._nf), dict(server._full)
    ms, k = server._ms, server._k
    keys, vals, pars = ms._HK[k], ms._HV[k], ms._HP[k]
    live = keys != EMPTY
    nf = dict(zip(keys[live].tolist(), vals[live].tolist()))
    full = {key: p for key, p in zip(keys[live].tolist(), pars[live].tolist()) if p != key}
    return nf, full


def lines(l2):
    """Every slice's sets: [(line, [ready or None per sector..., dirty mask]), ...] least recent first."""
    return [[list(st.items()) for st in sl] for sl in l2.sets]


def assert_same_state(ref, new):
    assert ref.stats() == new.stats()
    for key in ("reads", "writes", "l2_read_hits", "l2_pending_hits", "l2_read_misses", "l2_write_sectors",
                "l2_write_hits", "l2_write_misses", "dram_bytes_read", "dram_bytes_written", "last_request",
                "l2_hit_rate"):
        assert getattr(ref, key) == getattr(new, key), key
    assert ref.l2.evictions == new.l2.evictions
    assert lines(ref.l2) == lines(new.l2)
    assert len(ref.l2) == len(new.l2)
    for a, b in zip(ref.slices + ref.channels, new.slices + new.channels):
        assert (a.bytes_per_clk, a.next_free, a.last_end, a.busy, a.bytes) == \
            (b.bytes_per_clk, b.next_free, b.last_end, b.busy, b.bytes)
        assert windows(a) == windows(b)
    for g in ("l2_server", "dram_server"):
        ga, gb = getattr(ref, g), getattr(new, g)
        assert (ga.bytes_per_clk, ga.next_free, ga.busy, ga.bytes) == (gb.bytes_per_clk, gb.next_free, gb.busy,
                                                                      gb.bytes)


def drive(ref, new, seed, ops=1500, hot_lines=300, big=False):
    """The same random stream through both; every answer compared as it comes. Half the lines a
    request touches come from a small hot set (hits, hits on fills under way), half are drawn
    from 2^22 lines (misses)."""
    rng = np.random.default_rng(seed)
    sector, line = ref.sector, ref.l2.line
    spl = line // sector
    hot = rng.choice(1 << 22, size=hot_lines, replace=False) * line  # byte addresses of lines
    now = 0
    for step in range(ops):
        now += int(rng.integers(0, 40))
        if rng.random() < 0.02:
            now += int(rng.integers(1000, 200_000))  # a quiet stretch
        t = max(0, now - int(rng.integers(0, 400))) if rng.random() < 0.3 else now  # out of order
        n = int(rng.integers(1, 300 if big and rng.random() < 0.1 else 40))
        cold = rng.integers(0, 1 << 22, size=n) * line
        picked = np.where(rng.random(n) < 0.5, hot[rng.integers(0, hot_lines, size=n)], cold)
        picked += sector * rng.integers(0, spl, size=n)
        secs = picked.tolist() if rng.random() < 0.5 else picked.astype(np.int64)
        op = rng.random()
        if op < 0.55:
            assert ref.read(t, secs) == new.read(t, secs), step
        elif op < 0.78:
            assert ref.write(t, secs) == new.write(t, secs), step
        elif op < 0.85:
            # the SM core's queue of posted stores: (cycle, count, sectors) each, some of them long
            queue = []
            for _ in range(int(rng.integers(1, 12))):
                m = int(rng.integers(1, 400 if big and rng.random() < 0.2 else 20))
                cyc = max(0, t + int(rng.integers(-50, 50)))
                ss = hot[rng.integers(0, hot_lines, size=m)] + sector * rng.integers(0, spl, size=m)
                queue += [cyc, m] + ss.tolist()
                ref.write(cyc, ss)
            new.write_queue(np.array(queue, dtype=np.int64))
        elif op < 0.92:
            dirty = bool(rng.random() < 0.5)
            ref.warm(secs, dirty)
            new.warm(secs, dirty)
        elif op < 0.94:
            assert ref.flush(t) == new.flush(t), step
        elif op < 0.96:
            group = "l2_server" if rng.random() < 0.5 else "dram_server"
            nbytes = float(rng.integers(1, 50)) * getattr(ref, group).bytes_per_clk
            assert getattr(ref, group).reserve(t, nbytes) == getattr(new, group).reserve(t, nbytes), step
        elif op < 0.965:
            ref.reset_stats()
            new.reset_stats()
        elif op < 0.99:
            s = int(picked[0]) // sector
            ready, dirty = float(rng.integers(0, now + 1)), bool(rng.random() < 0.5)
            ref.l2.insert(s, ready, dirty)
            new.l2.insert(s, ready, dirty)
        else:
            assert_same_state(ref, new)
        if step % 100 == 0:
            assert ref.stats(t + 1) == new.stats(t + 1)
    assert_same_state(ref, new)


CONFIGS = {
    "gm204": (CFG, {}),
    "gm200 (12 slices)": (load_config("titanx"), {}),
    "small L2": (CFG, {"l2_size_bytes": 64 * 1024}),
    "tiny L2, 2 ways": (override(CFG, {"l2.assoc": 2}), {"l2_size_bytes": 8 * 128 * 2 * 4}),
    "plain interleave, one set": (override(CFG, {"l2.hash_sets": False, "l2.slice_hash": "modulo"}),
                                  {"l2_size_bytes": 8 * 128 * 16}),
    "DRAM cut": (CFG, {"bandwidth_share": 1 / 16, "dram_traffic_factor": 0.5}),
    "fills use the slices' bandwidth": (override(CFG, {"l2.fills_use_bandwidth": True}), {"l2_size_bytes": 64 * 1024}),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_random_streams_give_identical_results(name):
    cfg, kw = CONFIGS[name]
    ref, new = twins(cfg, **kw)
    assert type(ref) is MemorySystem and type(new) is CompiledMemorySystem
    drive(ref, new, seed=len(name), big=name == "gm204")


def test_window_tables_prune_as_the_reference_does():
    # > 2 x KEEP windows touched, out of order, with gaps and overloads: the pruning moments and
    # what they forget must match (a request older than the kept windows finds them forgotten)
    ref, new = twins(CFG)
    a, b = ref.slices[3], new.slices[3]
    rng = np.random.default_rng(7)
    t = 0.0
    for i in range(40_000):
        t += float(rng.integers(0, 24))
        now = t - float(rng.integers(0, 3000)) if rng.random() < 0.2 else t
        if rng.random() < 0.001:
            now = max(0.0, t - 200_000.0)  # behind every kept window
        nbytes = float(rng.integers(1, 3000)) if rng.random() < 0.9 else 0.0
        assert a.reserve(now, nbytes) == b.reserve(now, nbytes), i
        assert a.last_end == b.last_end
    assert windows(a) == windows(b)
    assert (a.next_free, a.busy, a.bytes) == (b.next_free, b.busy, b.bytes)
    assert len(a._nf) < 3 * BandwidthServer.KEEP  # it did prune


def test_a_long_store_queue_grows_the_tables_between_its_stores():
    # 20,000 one-sector stores 700 cycles apart: each opens bandwidth windows, far more than the
    # first window tables hold, so the queue must stop and make room on the way
    ref, new = twins(CFG)
    cap = new._HK.shape[1]
    queue = []
    for i in range(20_000):
        sector = (i * 4099 % 100_000) * 256
        queue += [i * 700, 1, sector]
        ref.write(i * 700, [sector])
    new.write_queue(np.array(queue, dtype=np.int64))
    assert new._HK.shape[1] > cap
    assert_same_state(ref, new)


def test_errors_and_views():
    new = MemorySystem(CFG)
    with pytest.raises(MaxsimError, match="negative sector address -32"):
        new.read(0, [0, -32])
    assert new.reads == 0  # nothing happened
    with pytest.raises(MaxsimError, match="unknown memory system core 'fast'"):
        MemorySystem(CFG, core="fast")
    with pytest.raises(ValueError, match="bandwidth_share"):
        MemorySystem(CFG, bandwidth_share=0)
    # a store queue with a negative address: the stores before it happen, the error names it
    ref, new = twins(CFG)
    ref.write(5, [0])
    with pytest.raises(MaxsimError, match="write: negative sector address -64"):
        new.write_queue(np.array([5, 1, 0, 7, 2, 32, -64, 9, 1, 96], dtype=np.int64))
    assert new.writes == 1 and new.l2.is_dirty(0) and not new.l2.contains(96)
    assert_same_state(ref, new)
    ref, new = twins(CFG)
    for ms in (ref, new):
        ms.read(0, [0, 32])
        ms.write(10, [64])
    assert ref.l2.contains(0) and new.l2.contains(0) and not new.l2.contains(96)
    assert new.l2.is_dirty(64) and not new.l2.is_dirty(0)
    assert [new.l2.slice_of(a) for a in range(0, 1 << 16, 256)] == [ref.l2.slice_of(a) for a in range(0, 1 << 16, 256)]
    assert [new.l2.set_index(n) for n in range(0, 4096, 7)] == [ref.l2.set_index(n) for n in range(0, 4096, 7)]
    assert new.l2.n_sets == ref.l2.n_sets and new.channel_of_slice == ref.channel_of_slice
    assert new.l2.dirty_sectors(0) == ref.l2.dirty_sectors(0) == 1
    assert math.isclose(new.l2_server.bytes_per_clk, 379.0)


def _recording(core, log, systems):
    """A MemorySystem factory for the sampler: ``core``'s memory systems, every read's and
    store's answer appended to ``log``."""
    def make(cfg, *args, **kw):
        ms = MemorySystem(cfg, *args, core=core, **kw)
        systems.append(ms)
        read, write, warm = ms.read, ms.write, ms.warm

        def logged_read(now, sectors, sm=0):
            done = read(now, sectors, sm=sm)
            log.append(("read", now, list(sectors), sm, done))
            return done

        def logged_write(now, sectors):
            done = write(now, sectors)
            log.append(("write", now, list(sectors), done))
            return done

        def logged_queue(queue):  # the SM core's posted stores, logged one by one
            i = 0
            while i < len(queue):
                n = int(queue[i + 1])
                logged_write(int(queue[i]), queue[i + 2:i + 2 + n])
                i += 2 + n

        def logged_warm(sectors, dirty=False):
            warm(sectors, dirty)
            log.append(("warm", len(sectors), dirty))

        ms.read, ms.write, ms.warm = logged_read, logged_write, logged_warm
        if hasattr(ms, "write_queue"):
            ms.write_queue = logged_queue
        return ms
    return make


@pytest.mark.parametrize("name, n", [("sgemm_64", 448), ("sgemm_128", 640)])
def test_sampled_prediction_identical_with_either_memory_system(name, n, monkeypatch):
    # 2 SMs: a first wave, full waves (a steady-state window and the start of its wave, both on a
    # warmed L2) and a one-CTA tail behind the last wave's backlog; the SM core is the compiled one
    # in both runs
    from maxsim.gpu import sampling
    from workloads.sgemm.predict import predict_sgemm
    cfg = override(CFG, {"gpu.sms": 2})
    out = {}
    for core in ("python", "compiled"):
        log, systems = [], []
        monkeypatch.setattr(sampling, "MemorySystem", _recording(core, log, systems))
        p = predict_sgemm(name, n, cfg, k=128)
        out[core] = (p, log, systems)
    (p_ref, log_ref, ms_ref), (p_new, log_new, ms_new) = out["python"], out["compiled"]
    assert [ph["name"] for ph in p_new["phases"]] == ["first wave", "steady state", "wave start", "tail"]
    assert all(type(ms) is CompiledMemorySystem for ms in ms_new) and len(ms_new) == len(ms_ref) >= 3
    assert sum(1 for e in log_new if e[0] == "warm") > 0 and sum(1 for e in log_new if e[0] == "write") > 0
    assert len(log_new) > 1000
    assert log_ref == log_new  # every request and its completion cycle, in order
    for a, b in zip(ms_ref, ms_new):
        assert_same_state(a, b)
    assert p_ref.pop("sim_seconds") > 0 and p_new.pop("sim_seconds") > 0  # (the time each took)
    assert p_ref == p_new
    # the compiled memory system as it is: the SM core serves its reads itself (no Python call per
    # read, so no log), with the same prediction and the same final state of every memory system
    systems = []
    monkeypatch.setattr(sampling, "MemorySystem", lambda cfg, *a, **kw: systems.append(
        MemorySystem(cfg, *a, core="compiled", **kw)) or systems[-1])
    p_core = predict_sgemm(name, n, cfg, k=128)
    assert all(serves_in_core(ms) for ms in systems) and len(systems) == len(ms_ref)
    for a, b in zip(ms_ref, systems):
        assert_same_state(a, b)
    p_core.pop("sim_seconds")
    assert p_core == p_ref


def test_reads_served_in_the_core_grow_the_tables_through_python(monkeypatch):
    """With small window tables, reads the SM core serves itself fill them: the core returns ROOM,
    Python grows the tables and every SM takes the new arrays; the prediction and the final state
    of every memory system stay those of the reference memory system."""
    from maxsim.gpu import sampling
    from maxsim.timing import core as K
    from maxsim.timing import memory_core
    from workloads.sgemm.predict import predict_sgemm
    cfg = override(CFG, {"gpu.sms": 2})
    monkeypatch.setattr(memory_core, "_TABLE_MIN", 64)
    statuses = []
    drive = K.drive

    def counting(sms, ms, h, e, xs, rq):
        # every call of the core starts with room in the tables (Python grew them after a ROOM)
        assert not ms[1][memory_core.I_ROOM]
        st = drive(sms, ms, h, e, xs, rq)
        statuses.append(st)
        return st
    monkeypatch.setattr(K, "drive", counting)
    out = {}
    for core in ("python", "compiled"):
        systems = []
        monkeypatch.setattr(sampling, "MemorySystem", lambda c, *a, _core=core, _s=systems, **kw: _s.append(
            MemorySystem(c, *a, core=_core, **kw)) or _s[-1])
        p = predict_sgemm("sgemm_64", 448, cfg, k=128)
        p.pop("sim_seconds")
        out[core] = (p, systems)
    (p_ref, ms_ref), (p_new, ms_new) = out["python"], out["compiled"]
    assert statuses.count(K.ROOM) > 0  # the path under test was taken (only the compiled run has it)
    assert max(ms._HK.shape[1] for ms in ms_new) > 64  # and the tables grew
    assert p_new == p_ref
    for a, b in zip(ms_ref, ms_new):
        assert_same_state(a, b)


@pytest.mark.parametrize("core", ["python", "compiled"])
def test_carried_over_l2_holds_the_same_lines_arrived(core):
    """The L2 the next of two back-to-back launches finds (:func:`carried_over`): every line of every
    set in the same least-recently-used order, the same valid sectors and dirty bits, every fill
    arrived (ready at cycle 0), no work queued and no counts, whichever core."""
    from maxsim.timing.memory_system import carried_over
    cfg = override(CFG, {"l2.size": 65536})  # 64 KB: the traffic below evicts lines and writes back
    ms = MemorySystem(cfg, core=core)
    rng = np.random.default_rng(7)
    t = 0
    for step in range(400):
        secs = sorted({int(x) * 32 for x in rng.integers(0, 6000, 8)})
        t = (ms.write if step % 3 == 0 else ms.read)(t, secs)
    before = ms.l2.sets
    new = carried_over(ms, cfg)
    after = new.l2.sets
    assert new.core == core and new.reads == new.writes == new.dram_bytes_read == 0
    lines = 0
    for sl_a, sl_b in zip(before, after):
        for st_a, st_b in zip(sl_a, sl_b):
            assert list(st_a) == list(st_b)  # the same lines, least recently used first
            for ln in st_a:
                a, b = st_a[ln], st_b[ln]
                assert [r is None for r in a[:-1]] == [r is None for r in b[:-1]] and a[-1] == b[-1]
                assert all(r == 0.0 for r in b[:-1] if r is not None)
                lines += 1
    assert lines > 400 and any(st[ln][-1] for sl in after for st in sl for ln in st)
    # nothing queued: a read of a held sector is an L2 hit at the hit latency
    held = next(ln for sl in after for st in sl for ln in st if st[ln][0] is not None) * 128
    assert new.read(1000, [held]) == 1000 + cfg.latency.l2_hit and new.l2_read_hits == 1


def test_address_translation_identical_in_both_cores():
    """Reads of 4 SMs over 150 pages of 2 MB (more than the L2 TLB's 64 entries and each L1 TLB's 16),
    at times out of order: the same completion cycles, the same TLB entries in the same LRU order
    with the same ready cycles, the same counters; warmed pages too."""
    ref, new = twins(CFG)
    rng = np.random.default_rng(11)
    page = CFG.tlb.page_bytes
    t = 0
    for step in range(3000):
        sm = int(rng.integers(0, 4))
        pages = rng.integers(0, 150, int(rng.integers(1, 3)))
        secs = sorted({int(p) * page + int(rng.integers(0, page // 32)) * 32 for p in pages})
        if step == 1500:
            ref.warm(secs)
            new.warm(secs)
        now = t + int(rng.integers(-40, 40))
        assert ref.read(max(now, 0), secs, sm=sm) == new.read(max(now, 0), secs, sm=sm)
        t += int(rng.integers(0, 30))
    assert ref.tlb.sets() == new.tlb.sets()
    assert ref.tlb.pages_seen() == new.tlb.pages_seen()
    st = ref.stats()
    assert {k: v for k, v in st.items() if k.startswith("tlb")} == \
        {k: v for k, v in new.stats().items() if k.startswith("tlb")}
    assert st["tlb_l2_misses"] > 100 and st["tlb_l1_misses"] > 1000 and st["tlb_first_touches"] > 300
    assert_same_state(ref, new)
    # a page beyond the 32-bit space grows the compiled one's record of pages seen
    far = [(1 << 40) + 64]
    assert ref.read(t, far, sm=1) == new.read(t, far, sm=1)
    assert ref.tlb.pages_seen() == new.tlb.pages_seen()


@pytest.mark.parametrize("stride", [8192, 4096 + 128])
def test_uncoalesced_strided_reads_give_identical_results(stride):
    """A warp's reads of 32 rows of a matrix (one sector each, rows ``stride`` bytes apart, a
    power-of-two multiple of the line or not) walking along the rows, two warps interleaved, with
    stores now and then: each request's 32 lines are told apart through the hash table of lines."""
    ref, new = twins(CFG, l2_size_bytes=256 * 1024)
    for step in range(600):
        warp, j = step % 2, step // 2
        rows = np.arange(32) + 32 * warp
        secs = (rows * stride + 4 * j) // 32 * 32
        t = 3 * step
        assert ref.read(t, secs) == new.read(t, secs), step
        if step % 50 == 49:
            assert ref.write(t, secs[:8]) == new.write(t, secs[:8]), step
    assert_same_state(ref, new)

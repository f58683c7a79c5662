"""Shared memory, L1/texture cache, L2 + DRAM: hand-computed timings."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maxsim.arch.config import load_config, override
from maxsim.timing.memory_system import BandwidthServer, MemorySystem, SectorCache, sectors_of
from maxsim.timing.shared_memory import SharedMemoryTiming
from maxsim.timing.texture import TextureCache

CFG = load_config("gm204")
LANES = np.arange(32, dtype=np.int64)


@pytest.fixture
def smem():
    return SharedMemoryTiming(CFG)


# ---- shared memory: wavefronts -------------------------------------------------------------------

def test_32bit_stride1_is_one_wavefront(smem):
    assert smem.wavefronts(LANES * 4 + 0x100, 4) == 1


def test_32bit_stride2_words_is_two(smem):
    assert smem.wavefronts(LANES * 8, 4) == 2


def test_same_bank_different_words_is_32(smem):
    assert smem.wavefronts(LANES * 128, 4) == 32


def test_all_lanes_same_word_is_broadcast(smem):
    assert smem.wavefronts(np.full(32, 0x40, dtype=np.int64), 4) == 1
    assert smem.wavefronts(np.full(32, 0x40, dtype=np.int64), 16) == 1


def test_128bit_contiguous_is_four(smem):
    # 32 lanes x 16 B = 512 B = 128 words, 4 distinct words in every bank
    assert smem.wavefronts(LANES * 16, 16) == 4


def test_64bit_contiguous_is_two(smem):
    assert smem.wavefronts(LANES * 8, 8) == 2


def test_maxas_lds128_fragment_broadcast_is_one(smem):
    # 32 lanes read only 8 distinct float4 (128 contiguous bytes): one word per bank
    addr = (LANES % 8) * 16 + 0x800
    assert smem.wavefronts(addr, 16) == 1
    # 16 distinct float4 over 256 contiguous bytes: two words per bank
    assert smem.wavefronts((LANES % 16) * 16, 16) == 2


def test_inactive_lanes_and_empty(smem):
    assert smem.wavefronts(LANES[:4] * 128, 4) == 4  # only 4 active lanes, all bank 0
    assert smem.wavefronts(np.array([], dtype=np.int64), 4) == 1
    with pytest.raises(ValueError):
        smem.wavefronts(LANES * 4, 12)


def test_pattern_is_translation_invariant_and_cached(smem):
    a = smem.wavefronts(LANES * 8, 4)
    assert smem.wavefronts(LANES * 8 + 128 * 7, 4) == a
    assert smem.wavefronts(LANES * 8 + 4, 4) == a  # shifted one bank: same conflict degree


def _brute(addrs, width):
    words = {a // 4 + k for a in addrs for k in range(width // 4)}
    per_bank = [0] * 32
    for w in words:
        per_bank[w % 32] += 1
    return max(1, max(per_bank))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4095), min_size=1, max_size=32), st.sampled_from([4, 8, 16]))
def test_wavefronts_match_brute_force(raw, width):
    addrs = [a // width * width for a in raw]
    assert SharedMemoryTiming(CFG).wavefronts(np.array(addrs), width) == _brute(addrs, width)


# ---- shared memory: bank pipeline ----------------------------------------------------------------

def test_shared_port_latency_and_queueing(smem):
    lds = CFG.latency.lds
    assert smem.issue(100, 1) == 100 + lds
    # pipeline free again at 101: a 4-wavefront request at 101 ends 3 cycles later
    assert smem.issue(101, 4) == 101 + 3 + lds
    # arrives at 102 while busy until 105: starts at 105
    assert smem.issue(102, 1) == 105 + lds
    assert smem.issue(200, 2, store=True) == 200 + 1 + CFG.latency.sts
    assert (smem.requests, smem.total_wavefronts, smem.total_replays) == (4, 8, 4)
    assert smem.replays(4) == 3


# ---- helpers --------------------------------------------------------------------------------------

def test_sectors_of():
    assert sectors_of(LANES * 16, 16) == [i * 32 for i in range(16)]
    assert sectors_of(LANES * 4 + 64, 4) == [64, 96, 128, 160]
    assert sectors_of(np.array([30]), 4) == [0, 32]  # straddles a sector boundary
    assert sectors_of(np.array([], dtype=np.int64), 4) == []


def test_bandwidth_server():
    s = BandwidthServer(16.0)
    assert s.reserve(10, 64) == 10  # busy 4 cycles
    assert s.reserve(11, 32) == 14
    assert s.reserve(100, 32) == 100
    assert s.bytes == 128 and s.busy == 8


# ---- L1 / texture cache ---------------------------------------------------------------------------

def test_tld_miss_then_hit_latency():
    ms = MemorySystem(CFG)
    tex = TextureCache(CFG)
    # cold: L1 miss, L2 miss -> DRAM latency from the issue cycle
    assert tex.request(0, [0x1000], ms) == CFG.latency.dram
    # later: L1 hit
    assert tex.request(1000, [0x1000], ms) == 1000 + CFG.latency.tex_l1_hit
    # another SM's L1 (cold) finds the sector in the L2
    other = TextureCache(CFG)
    assert other.request(2000, [0x1000], ms) == 2000 + CFG.latency.l2_hit
    assert (tex.sector_hits, tex.sector_misses) == (1, 1)
    assert (ms.l2_read_hits, ms.l2_read_misses, ms.dram_bytes_read) == (1, 1, 32)


def test_tld_hit_on_pending_fill_waits_for_the_fill():
    ms = MemorySystem(CFG)
    tex = TextureCache(CFG)
    first = tex.request(0, [0x2000], ms)
    assert tex.request(10, [0x2000], ms) == first  # merged with the miss in flight
    assert tex.pending_hits == 1


def test_access_and_fill_primitives():
    tex = TextureCache(CFG)
    hits, misses = tex.access(5, [0, 32, 64, 96, 128])
    assert (hits, misses) == (0, [0, 32, 64, 96, 128])
    tex.fill([0, 32], 300)
    hits, misses = tex.access(6, [0, 32, 64, 160])  # 0, 32 pending until 300; 64 filled at 5
    assert (hits, misses, tex.pending_ready) == (3, [160], 300)
    assert tex.contains(64) and not tex.contains(192)


def test_tex_throughput_limit():
    ms = MemorySystem(CFG)
    tex = TextureCache(CFG)
    secs = [i * 32 for i in range(16)]  # one TLD.128 warp: 512 bytes
    tex.request(0, secs, ms)  # warm (miss)
    t1 = tex.request(10000, secs, ms)
    t2 = tex.request(10000, secs, ms)
    assert t1 == 10000 + CFG.latency.tex_l1_hit
    assert t2 == math.ceil(10000 + 512 / CFG.l1tex.bytes_per_clk) + CFG.latency.tex_l1_hit


def test_l1_lru_eviction():
    tex = TextureCache(CFG)
    sets, ways, line = tex.n_sets, tex.assoc, CFG.l1tex.line
    same_set = [k * sets * line for k in range(ways + 1)]  # ways + 1 lines of set 0
    for a in same_set[:ways]:
        tex.access(0, [a])
    tex.access(1, [same_set[0]])  # line 0 becomes most recent; line 1 is LRU
    tex.access(2, [same_set[ways]])  # evicts line 1
    assert tex.contains(same_set[0]) and not tex.contains(same_set[1]) and tex.contains(same_set[ways])
    assert tex.evictions == 1
    # other sectors of a present line are misses (sector granularity) but do not evict
    assert tex.access(3, [same_set[0] + 32]) == (0, [same_set[0] + 32])
    assert tex.evictions == 1


# ---- L2 + DRAM ------------------------------------------------------------------------------------

def test_dram_queueing_back_to_back():
    ms = MemorySystem(CFG)
    a = [i * 32 for i in range(32)]  # 1 KB of misses
    b = [0x100000 + i * 32 for i in range(32)]
    first = ms.read(0, a)
    second = ms.read(0, b)
    bpc = CFG.dram_bytes_per_clk
    assert first == CFG.latency.dram
    # the second request's DRAM transfer starts when the first's 1024 bytes have passed
    assert second == math.ceil(1024 / bpc + CFG.latency.dram)
    assert second - first == pytest.approx(1024 / bpc, abs=1)
    # far apart: no queueing
    assert ms.read(10_000, [0x200000]) == 10_000 + CFG.latency.dram


def test_bandwidth_share_scales_queueing():
    ms = MemorySystem(CFG, bandwidth_share=1 / 16)
    bpc = CFG.dram_bytes_per_clk / 16
    ms.read(0, [i * 32 for i in range(32)])
    assert ms.read(0, [0x100000]) == math.ceil(1024 / bpc + CFG.latency.dram)


def test_l2_queueing_for_hits():
    ms = MemorySystem(CFG)
    secs = [i * 32 for i in range(64)]
    ms.read(0, secs)
    t1 = ms.read(1000, secs)
    t2 = ms.read(1000, secs)
    assert t1 == 1000 + CFG.latency.l2_hit
    assert t2 == math.ceil(1000 + 2048 / CFG.l2.bandwidth_bytes_per_clk + CFG.latency.l2_hit)


def test_l2_lru_eviction_and_writeback():
    cfg = override(CFG, {"l2.hash_sets": False})
    ms = MemorySystem(cfg, l2_size_bytes=32 * cfg.l2.assoc)  # a single set of `assoc` sectors
    ways = cfg.l2.assoc
    secs = [i * 32 for i in range(ways + 1)]
    ms.write(0, [secs[0]])  # dirty
    for s in secs[1:ways]:
        ms.read(0, [s])
    ms.read(100, [secs[0]])  # hit: sector 0 most recent, sector 1 is LRU
    assert ms.l2_read_hits == 1
    ms.read(200, [secs[ways]])  # evicts clean sector 1: no write-back
    assert ms.dram_bytes_written == 0
    assert ms.read(10_000, [secs[1]]) == 10_000 + cfg.latency.dram  # miss again; evicts sector 2
    assert ms.read(20_000, [secs[0]]) == 20_000 + cfg.latency.l2_hit  # still there
    for k in range(ways):  # stream enough new sectors to push the dirty sector 0 out
        ms.read(30_000 + k, [0x10000 + 32 * k])
    assert ms.dram_bytes_written == 32
    assert ms.l2_read_misses == ways - 1 + 2 + ways


def test_write_is_posted_and_flush_counts_bytes():
    ms = MemorySystem(CFG)
    done = ms.write(50, [0, 32, 64, 96])
    assert done == 50 + CFG.latency.l2_hit
    assert ms.dram_bytes_written == 0
    assert ms.read(1000, [32]) == 1000 + CFG.latency.l2_hit  # written data hits in L2
    end = ms.flush(2000)
    assert ms.dram_bytes_written == 128
    assert end == math.ceil(2000 + 128 / CFG.dram_bytes_per_clk)
    assert ms.flush(3000) == 3000  # nothing dirty left
    st_ = ms.stats()
    assert st_["dram_bytes_written"] == 128 and st_["l2_write_sectors"] == 4


def test_sector_cache_hashing_spreads_power_of_two_strides():
    c = SectorCache(2 * 1024 * 1024, 32, 16, hashed=True)
    sets = {c.set_index(k * 512) for k in range(4096)}  # 16 KB stride
    assert len(sets) > 2000
    plain = SectorCache(2 * 1024 * 1024, 32, 16, hashed=False)
    assert len({plain.set_index(k * 512) for k in range(4096)}) == 8

"""Shared memory, L1/texture cache, L2 + DRAM: hand-computed timings."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maxsim.arch.config import load_config, override
from maxsim.timing.l2 import SliceMap, SlicedL2, gf2_mod
from maxsim.timing.memory_system import BandwidthServer, MemorySystem, ServerGroup, sectors_of
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
# GM204: 8 slices of 256 KB, 128-byte lines of 32-byte sectors, 16 ways, 256-byte slice interleave,
# 379 B/clk for the chip = 47.375 B/clk per slice; 8 DRAM channels, one behind each slice.

SLICE_BPC = CFG.l2.bandwidth_bytes_per_clk / 8  # 47.375
CHAN_BPC = CFG.dram_bytes_per_clk / 8  # 224e9 x 0.79 / (1.216e9 x 0.96 / 0.98) / 8 = 18.57
L2_LAT, DRAM_LAT = CFG.latency.l2_hit, CFG.latency.dram


def test_gm204_geometry_from_the_config():
    ms = MemorySystem(CFG)
    assert (CFG.l2.slices, CFG.l2.line, CFG.l2.sector, CFG.dram.channels) == (8, 128, 32, 8)
    assert ms.l2.n_sets == 2 * 1024 * 1024 // 8 // (128 * 16) == 128
    assert ms.channel_of_slice == list(range(8))
    assert ms.slices[0].bytes_per_clk == pytest.approx(47.375)
    # the DRAM's bandwidth per effective SM cycle (gpu.effective_clock_fraction = 0.96 / 0.98)
    assert ms.channels[0].bytes_per_clk == pytest.approx(224e9 * 0.79 / (1.216e9 * 0.96 / 0.98) / 8, rel=1e-4)


def test_ipoly_slice_mapping_by_hand():
    # granule = address // 256; slice = granule as a GF(2) polynomial modulo x^3 + x + 1 (0b1011)
    m = SliceMap(8, 256)
    assert [m(a) for a in range(0, 2048, 256)] == list(range(8))  # degree < 3: the granule itself
    assert m(255) == 0 and m(256) == 1
    assert m(8 * 256) == 0b011  # x^3 = x + 1
    assert m(9 * 256) == 0b010  # x^3 + 1 = x
    assert m(16 * 256) == 0b110  # x^4 = x^2 + x
    assert m(4096 * 256) == gf2_mod(4096, 0b1011) == 0b111  # x^12 = x^2 + x + 1
    assert SliceMap(8, 256, "modulo")(9 * 256) == 1


def test_ipoly_spreads_every_power_of_two_stride_over_all_slices():
    m = SliceMap(8, 256)
    for k in range(24):
        for base in (0, 8, 40):
            assert {m.of_granule((base + j) << k) for j in range(8)} == set(range(8)), k
    plain = SliceMap(8, 256, "modulo")
    assert len({plain.of_granule(j << 3) for j in range(8)}) == 1  # modulo: all in one slice
    twelve = SliceMap(12, 256)  # GM200: 4 x 3
    for k in range(20):
        assert {twelve.of_granule(j << k) for j in range(96)} == set(range(12)), k


def test_set_hash_spreads_power_of_two_strides():
    l2 = SlicedL2.from_config(CFG)
    sets = {(l2.locate(k * 128)[0], l2.set_index(k * 128)) for k in range(4096)}  # 16 KB stride
    assert len(sets) > 500  # of 8 x 128
    plain = SlicedL2.from_config(override(CFG, {"l2.hash_sets": False}))
    assert len({(plain.locate(k * 128)[0], plain.set_index(k * 128)) for k in range(4096)}) < 100


def _one_set_per_slice(**changes):
    # 8 slices of one 16-way set each, plain interleaving: lines k x 2048 (k = 0, 1, ...) all fall
    # in slice 0, set 0
    cfg = override(CFG, {"l2.hash_sets": False, "l2.slice_hash": "modulo", **changes})
    return cfg, MemorySystem(cfg, l2_size_bytes=8 * 128 * 16)


def test_lru_eviction_order_within_a_set():
    cfg, ms = _one_set_per_slice()
    assert ms.l2.n_sets == 1
    lines = [k * 2048 for k in range(17)]
    for i, a in enumerate(lines[:16]):
        ms.read(i * 1000, [a])
    assert ms.read(20_000, [lines[0]]) == 20_000 + L2_LAT  # hit: line 0 most recent, line 1 LRU
    ms.read(21_000, [lines[16]])  # evicts line 1
    assert ms.l2.contains(lines[0]) and not ms.l2.contains(lines[1]) and ms.l2.contains(lines[16])
    assert ms.read(22_000, [lines[1]]) == 22_000 + DRAM_LAT  # miss again; evicts line 2
    assert not ms.l2.contains(lines[2]) and ms.l2.contains(lines[3])
    assert (ms.l2_read_hits, ms.l2_read_misses, ms.l2.evictions) == (1, 18, 2)
    # other slices untouched
    assert all(len(st) == 0 for sl in ms.l2.sets[1:] for st in sl)


def test_sector_miss_in_a_present_line_fetches_only_that_sector():
    ms = MemorySystem(CFG)
    assert ms.read(0, [0]) == DRAM_LAT
    assert ms.read(1000, [32]) == 1000 + DRAM_LAT  # same line, other sector: a miss, no eviction
    assert ms.read(2000, [0, 32]) == 2000 + L2_LAT
    assert (ms.l2_read_misses, ms.dram_bytes_read, ms.l2.evictions) == (2, 64, 0)


def test_hit_after_another_sms_fill_and_pending_fill_merge():
    ms = MemorySystem(CFG)
    tex_a, tex_b = TextureCache(CFG), TextureCache(CFG)  # two SMs' L1s, one L2
    first = tex_a.request(0, [0x4000], ms)
    assert first == DRAM_LAT
    # SM B asks while A's fill is under way: merged into it (one DRAM read), done when it arrives
    assert tex_b.request(10, [0x4000], ms) == first
    assert (ms.l2_read_hits, ms.l2_pending_hits, ms.l2_read_misses, ms.dram_bytes_read) == (1, 1, 1, 32)
    # after the fill, a third SM hits at the L2 latency
    assert TextureCache(CFG).request(1000, [0x4000], ms) == 1000 + L2_LAT
    assert ms.l2_pending_hits == 1


def test_write_allocate_without_fetch_and_write_back_of_dirty_sectors_only():
    cfg, ms = _one_set_per_slice()
    assert ms.write(50, [0]) == 50 + L2_LAT  # allocates line 0 with sector 0 valid and dirty
    assert (ms.dram_bytes_read, ms.l2_write_misses) == (0, 1)
    assert ms.l2.is_dirty(0) and not ms.l2.contains(32)
    assert ms.read(1000, [0]) == 1000 + L2_LAT  # the stored data hits
    assert ms.read(2000, [32]) == 2000 + DRAM_LAT  # the line's other sectors were not fetched
    ms.write(2500, [0])
    assert ms.l2_write_hits == 1
    # line 0 is now LRU after 15 others fill the set; one more evicts it: 1 dirty sector written
    for k in range(1, 16):
        ms.read(3000 + 1000 * k, [k * 2048])
    assert ms.dram_bytes_written == 0
    ms.read(30_000, [16 * 2048])
    assert ms.dram_bytes_written == 32 and not ms.l2.contains(0)
    # the write-back went to slice 0's channel, after the read that evicted it
    ch = ms.channels[0]
    assert ch.bytes == 18 * 32 and ch.busy == pytest.approx(18 * 32 / CHAN_BPC)


def test_write_back_queues_in_the_slice_channel():
    cfg, ms = _one_set_per_slice()
    ms.write(0, [k * 2048 + 32 * i for k in range(16) for i in range(4)])  # 16 lines of slice 0, dirty
    # a read of 4 sectors of a new line at 10_000 evicts line 0 (4 dirty sectors, 128 B) after
    # queueing its own 128 B in channel 0; the next miss in channel 0 waits for both
    assert ms.read(10_000, [16 * 2048 + 32 * i for i in range(4)]) == 10_000 + DRAM_LAT
    assert ms.dram_bytes_written == 128
    t = ms.read(10_000, [20 * 2048 + 32 * i for i in range(4)])
    # slice 0 takes this request after the first's 128 B; channel 0 holds 256 B from 10_000
    assert t == math.ceil(10_000 + 256 / CHAN_BPC + DRAM_LAT)
    # a miss in another slice (granule 1 = slice 1) does not wait
    assert ms.read(10_000, [256]) == 10_000 + DRAM_LAT


def test_requests_to_the_same_slice_queue_to_different_slices_do_not():
    ms = MemorySystem(CFG)
    a = [i * 32 for i in range(8)]  # 256 B, slice 0
    b = [256 + i * 32 for i in range(8)]  # 256 B, slice 1
    ms.read(0, a + b)  # warm
    assert ms.read(1000, a) == 1000 + L2_LAT
    assert ms.read(1000, a) == math.ceil(1000 + 256 / SLICE_BPC + L2_LAT)  # 1213: behind the first
    assert ms.read(1000, b) == 1000 + L2_LAT  # other slice: no wait
    assert ms.read(1000, a + b) == math.ceil(1000 + 2 * 256 / SLICE_BPC + L2_LAT)  # waits in slice 0


def test_l2_queueing_for_hits():
    # 2 KB of consecutive sectors: 8 granules, one per slice, 256 B each
    ms = MemorySystem(CFG)
    secs = [i * 32 for i in range(64)]
    ms.read(0, secs)
    t1 = ms.read(1000, secs)
    t2 = ms.read(1000, secs)
    assert t1 == 1000 + L2_LAT
    assert t2 == math.ceil(1000 + 256 / SLICE_BPC + L2_LAT)


def _clmul(a, b):
    """Carry-less (GF(2) polynomial) product."""
    out = 0
    while b:
        if b & 1:
            out ^= a
        a <<= 1
        b >>= 1
    return out


# granules that are GF(2) multiples of x^3 + x + 1 fall in slice 0
SLICE0 = [_clmul(k, 0b1011) * 256 for k in range(1, 64)]


def test_dram_queueing_in_a_channel():
    ms = MemorySystem(CFG)
    a = [i * 32 for i in range(8)]  # 256 B of misses, slice 0 / channel 0
    b = [0x100000 + i * 32 for i in range(8)]  # granule 4096 = x^12 -> x^2 + x + 1 = slice 7
    same = [SLICE0[0] + i * 32 for i in range(8)]  # granule 11 = x^3 + x + 1 -> slice 0
    assert ms.l2.slice_of(b[0]) == 7 and ms.l2.slice_of(same[0]) == 0
    assert ms.read(0, a) == DRAM_LAT
    assert ms.read(0, b) == DRAM_LAT  # another slice and channel
    # same slice and channel as a: its DRAM piece starts when a's 256 B have passed the channel
    assert ms.read(0, same) == math.ceil(256 / CHAN_BPC + DRAM_LAT)
    assert ms.read(10_000, [0x200000]) == 10_000 + DRAM_LAT  # later: no queueing


def test_dram_queue_delay_grows_with_load():
    ms = MemorySystem(CFG)
    lines = SLICE0[:40]
    assert {ms.l2.slice_of(a) for a in lines} == {0}
    # light load: one 128-byte miss every 100 cycles, the channel is idle each time
    for j in range(20):
        assert ms.read(100 * j, [lines[j] + 32 * i for i in range(4)]) == 100 * j + DRAM_LAT
    light = ms.stats(2000)
    assert light["dram_mean_queue_delay"] == 0 and light["dram_p95_queue_delay"] == 0
    # heavy load: 20 misses of 128 B at the same cycle. Piece j reaches the channel when the
    # slice has passed j pieces (j x 128 / 47.375) and starts when the channel has passed j
    # pieces (j x 128 / 18.19): it waits j x (128 / 18.19 - 128 / 47.375) = 4.33 j cycles
    ms.reset_stats()
    t0 = 10_000
    done = [ms.read(t0, [lines[20 + j] + 32 * i for i in range(4)]) for j in range(20)]
    step = 128 / CHAN_BPC - 128 / SLICE_BPC
    st_ = ms.stats(t0 + 1000)
    assert st_["dram_read_requests"] == 20
    assert st_["dram_mean_queue_delay"] == pytest.approx(step * 9.5)
    assert st_["dram_queue_delay_cycles"] == pytest.approx(step * 190)
    # the slice: piece j waits j x 128 / 47.375 cycles
    assert st_["l2_slice_requests"] == 20
    assert st_["l2_mean_queue_delay"] == pytest.approx(128 / SLICE_BPC * 9.5)
    assert st_["dram_p95_queue_delay"] == pytest.approx(step * 0.95 * 19)  # numpy's linear p95
    assert done[-1] == math.ceil(t0 + 19 * 128 / CHAN_BPC + DRAM_LAT)
    assert all(b > a for a, b in zip(done, done[1:]))


def test_utilisation_figures():
    ms = MemorySystem(CFG)
    ms.read(0, [i * 32 for i in range(64)])  # 2 KB: 256 B through each slice and each channel
    ms.write(100, [0, 32])  # 64 B more through slice 0 (hits: the read allocated them)
    st_ = ms.stats(1000)
    assert st_["l2_slice0_busy_cycles"] == pytest.approx(320 / SLICE_BPC)
    assert st_["l2_slice1_busy_cycles"] == pytest.approx(256 / SLICE_BPC)
    assert st_["l2_slice0_utilisation"] == pytest.approx(320 / SLICE_BPC / 1000)
    assert st_["l2_busy_cycles"] == pytest.approx((2048 + 64) / 8 / SLICE_BPC)
    assert st_["l2_utilisation"] == pytest.approx((2048 + 64) / 8 / SLICE_BPC / 1000)
    assert st_["l2_max_slice_utilisation"] == pytest.approx(320 / SLICE_BPC / 1000)
    assert st_["dram_max_channel_utilisation"] == pytest.approx(256 / CHAN_BPC / 1000)
    # ratios, means and percentiles end in rate / utilisation / delay; the rest are counts
    assert all(isinstance(v, (int, float)) for v in st_.values())
    assert st_["dram_utilisation"] == pytest.approx(256 / CHAN_BPC / 1000)
    assert st_["dram_channel3_busy_cycles"] == pytest.approx(256 / CHAN_BPC)
    assert (st_["l2_read_sectors"], st_["l2_read_misses"], st_["l2_write_hits"]) == (64, 64, 2)
    assert (st_["l2_bytes_read"], st_["l2_bytes_written"], st_["dram_bytes_read"]) == (2048, 64, 2048)
    assert st_["l2_write_hit_rate"] == 1.0 and st_["mem_reads"] == 1 and st_["mem_writes"] == 1
    tex = TextureCache(CFG)
    tex.request(2000, [0, 32, 64, 96], ms)
    tex.request(3000, [0], ms)
    st_ = ms.stats(4000, l1=[tex])
    assert (st_["tex_requests"], st_["tex_sector_hits"], st_["tex_sector_misses"]) == (2, 1, 4)
    assert st_["tex_bytes"] == 160 and st_["tex_hit_rate"] == pytest.approx(0.2)
    assert st_["tex_utilisation"] == pytest.approx(160 / CFG.l1tex.bytes_per_clk / 4000)
    ms.reset_stats()
    assert ms.stats(1)["l2_busy_cycles"] == 0 and ms.stats(1)["dram_bytes_read"] == 0


def test_bandwidth_share_scales_every_slice_and_channel():
    ms = MemorySystem(CFG, bandwidth_share=1 / 16)
    assert ms.l2_server.bytes_per_clk == pytest.approx(CFG.l2.bandwidth_bytes_per_clk / 16)
    assert ms.dram_server.bytes_per_clk == pytest.approx(CFG.dram_bytes_per_clk / 16)
    a = [i * 32 for i in range(8)]
    assert ms.read(0, a) == DRAM_LAT
    same = [SLICE0[0] + i * 32 for i in range(8)]  # slice 0 again
    # slice piece after 256 B at 47.375 / 16; channel piece after 256 B at 18.19 / 16
    assert ms.read(0, same) == math.ceil(256 / (CHAN_BPC / 16) + DRAM_LAT)


def test_server_group_queues_a_backlog_on_every_member():
    ms = MemorySystem(CFG)
    g = ms.l2_server
    assert isinstance(g, ServerGroup) and g.bytes_per_clk == pytest.approx(379.0)
    g.reserve(0, 100 * g.bytes_per_clk)  # an L2 backlog of 100 cycles
    assert [s.next_free for s in ms.slices] == [pytest.approx(100.0)] * 8
    assert g.next_free == pytest.approx(100.0) and g.busy == pytest.approx(100.0)
    ms.dram_server.reserve(0, 150 * ms.dram_server.bytes_per_clk)  # a DRAM backlog of 150 cycles
    assert ms.dram_server.next_free == pytest.approx(150.0)
    # a miss at cycle 0 waits for its slice until 100, then for its channel until 150
    assert ms.read(0, [0]) == 150 + DRAM_LAT
    assert ms.read(1000, [0]) == 1000 + L2_LAT


def test_write_is_posted_and_flush_writes_back_per_channel():
    ms = MemorySystem(CFG)
    done = ms.write(50, [0, 32, 64, 96])  # one line, slice 0
    assert done == 50 + L2_LAT
    assert ms.dram_bytes_written == 0
    assert ms.read(1000, [32]) == 1000 + L2_LAT  # written data hits in L2
    ms.write(60, [256])  # slice 1
    end = ms.flush(2000)
    assert ms.dram_bytes_written == 160
    assert end == math.ceil(2000 + 128 / CHAN_BPC)  # channel 0's 128 B; channel 1 has 32 B
    assert ms.flush(3000) == 3000  # nothing dirty left
    st_ = ms.stats()
    assert st_["dram_bytes_written"] == 160 and st_["l2_write_sectors"] == 5
    assert st_["elapsed_cycles"] == 1000  # the latest request


def test_numpy_sector_arrays_are_accepted():
    ms = MemorySystem(CFG)
    arr = np.arange(16, dtype=np.int64) * 32
    assert ms.read(0, arr) == DRAM_LAT
    assert ms.read(1000, arr) == 1000 + L2_LAT
    assert ms.write(2000, arr) == 2000 + L2_LAT
    assert ms.read(3000, np.array([], dtype=np.int64)) == 3000


def test_warm_installs_sectors_without_time_or_counters():
    cfg, ms = _one_set_per_slice()
    ms.warm(np.array([0, 32], dtype=np.int64), dirty=True)  # line 0 of slice 0, two dirty sectors
    ms.warm([k * 2048 for k in range(1, 16)])  # 15 more lines fill slice 0's one set
    assert ms.l2.is_dirty(0) and ms.l2.is_dirty(32) and not ms.l2.contains(64)
    st_ = ms.stats(1)
    assert st_["l2_read_sectors"] == st_["l2_write_sectors"] == st_["l2_busy_cycles"] == 0
    assert ms.read(100, [0, 32]) == 100 + L2_LAT  # valid from cycle 0: hits at once
    ms.warm([16 * 2048])  # evicts the LRU line (line 1 x 2048) silently
    assert not ms.l2.contains(2048) and ms.dram_bytes_written == 0
    assert ms.flush(1000) == math.ceil(1000 + 64 / CHAN_BPC)  # the two warmed dirty sectors


@pytest.mark.parametrize("core", ["compiled", "python"])
def test_texture_counters_filled_by_both_sm_cores(core, monkeypatch):
    # two TLDs of texel 0 (one sector) by one warp, the second after the first's data arrived:
    # 2 requests, 1 sector miss, 1 hit, 64 bytes looked up; the L2 sees the one miss
    from maxsim.functional.memory import Texture1D
    from maxsim.sass import parse_text
    from maxsim.timing.run import simulate
    monkeypatch.setenv("MAXSIM_CORE", core)
    text = """# Kernel: tld2
# Arch: sm_52
# InsCnt: 6
# RegCnt: 32
# SharedSize: 0
# BarCnt: 0
# Params(0):
#\tord:addr:size:align
#
# Instructions:

--:-:-:-:1 MOV32I R8, 0x80000000;
--:-:-:-:6 MOV R0, RZ;
--:-:1:-:2 TLD.B.LZ.P R4, R0, R8, 0x0, 1D, 0xf;
01:-:2:-:2 TLD.B.LZ.P R12, R0, R8, 0x0, 1D, 0xf;
02:-:-:-:1 FADD R3, R12, R4;
--:-:-:Y:5 EXIT;
"""
    tex = Texture1D(np.arange(64 * 4, dtype=np.float32).reshape(-1, 4), address=1 << 20)
    ms = MemorySystem(CFG)
    _, sm = simulate(parse_text(text), 1, 32, cfg=CFG, textures={0: tex}, memory_system=ms)
    el = sm.stats.cycles
    st_ = ms.stats(el, l1=[sm.l1])
    assert (st_["tex_requests"], st_["tex_sector_misses"], st_["tex_sector_hits"]) == (2, 1, 1)
    assert st_["tex_bytes"] == 64 and st_["tex_busy_cycles"] == pytest.approx(64 / CFG.l1tex.bytes_per_clk)
    assert st_["tex_utilisation"] == pytest.approx(64 / CFG.l1tex.bytes_per_clk / el)
    assert (st_["l2_read_misses"], st_["dram_bytes_read"]) == (1, 32)


# ---- address translation (maxsim.timing.tlb) -----------------------------------------------------

@pytest.mark.parametrize("core", ["python", "compiled"])
def test_tlb_costs_by_level(core):
    """Hand-computed: an L1 TLB hit costs nothing, an L1 miss that hits the L2 TLB 11 cycles
    (Mei and Chu's 240.8 - 229.7), a miss in both 2,048 (2,447 - 399); an SM's first touch of a
    page costs nothing (the TLBs warm from before the launch)."""
    page, lat2 = CFG.tlb.page_bytes, CFG.latency.l2_hit
    ms = MemorySystem(CFG, core=core)
    l1m, walk = CFG.tlb.l1_miss_cycles, CFG.tlb.walk_cycles
    assert (l1m, walk) == (11, 2048)
    assert ms.read(0, [0], sm=0) == CFG.latency.dram  # a first touch; an L2 miss
    ms.warm([32 * k for k in range(8)])  # sectors 0..255 valid in the L2; page 0 in every TLB
    t = 10_000
    assert ms.read(t, [32], sm=0) == t + lat2  # L1 TLB hit
    for p in range(1, 17):  # 16 more pages (first touches) fill SM 1's L1 TLB: page 0 leaves it
        ms.read(t, [p * page], sm=1)
    assert ms.read(t, [64], sm=1) == t + l1m + lat2  # SM 1's L1 TLB misses, the L2 TLB hits
    # pages 0, 8, 16, ... share an L2 TLB set (8 ways, LRU): SM 2's pages 24-88 push 8, 16, 0
    # and 24 out of it
    for p in range(24, 96, 8):
        ms.read(2 * t, [p * page], sm=2)
    for p in range(100, 116):  # SM 3's L1 TLB loses page 0 (which the warming put there)
        ms.read(3 * t, [p * page], sm=3)
    assert ms.read(4 * t, [128], sm=3) == 4 * t + walk + lat2  # both TLBs miss: a walk
    assert ms.read(4 * t, [160], sm=0) == 4 * t + lat2  # SM 0's L1 TLB still holds page 0
    st = ms.stats()
    assert (st["tlb_l1_misses"], st["tlb_l2_misses"]) == (2, 1)
    assert st["tlb_first_touches"] == 1 + 16 + 9 + 16
    assert st["tlb_lookups"] == 1 + 1 + 16 + 1 + 9 + 16 + 1 + 1


def test_tlb_walk_under_way_is_waited_for():
    """A second SM missing a page whose walk is under way waits for that walk (plus its own L1
    TLB miss), no second walk."""
    page = CFG.tlb.page_bytes
    ms = MemorySystem(CFG, core="python")
    ms.warm([0])  # page 0 in every TLB, seen by every SM, sector 0 valid
    # sixteen more pages (ten in page 0's L2 TLB set) from SMs 1 and 2: page 0 leaves the L2 TLB
    # and their L1 TLBs
    for p in range(8, 136, 8):
        for sm in (1, 2):
            ms.read(0, [p * page], sm=sm)
    assert ms.read(0, [0], sm=1) == 2048 + CFG.latency.l2_hit  # a walk, ready at 2,048
    assert ms.tlb.stats()["tlb_l2_misses"] == 1
    assert ms.read(100, [32], sm=2) == 2048 + 11 + CFG.latency.dram  # waits for that walk, + 11
    assert ms.tlb.stats()["tlb_l2_misses"] == 1


def test_tlb_reads_of_an_unknown_sm_are_refused():
    from maxsim.errors import SimulationError
    for core in ("python", "compiled"):
        with pytest.raises(SimulationError, match="SM 16 is not one of the 16 SMs"):
            MemorySystem(CFG, core=core).read(0, [0], sm=16)


@pytest.mark.parametrize("core", ["python", "compiled"])
@pytest.mark.parametrize("fills", [False, True])
def test_a_fill_passes_its_slice_when_fills_use_bandwidth(core, fills):
    ms = MemorySystem(override(CFG, {"l2.fills_use_bandwidth": fills}), core=core)
    a = [i * 32 for i in range(8)]  # 256 B in slice 0, all missing
    assert ms.read(0, a) == DRAM_LAT
    # with the key, the fill is written into slice 0 from DRAM_LAT - L2_LAT on (256 B), and a read of
    # the same sectors taken by the slice then waits behind it; without, it is taken at once and
    # its data is there at DRAM_LAT
    t = DRAM_LAT - L2_LAT
    expected = math.ceil(DRAM_LAT + 256 / SLICE_BPC) if fills else DRAM_LAT
    assert ms.read(t, a) == expected
    assert ms.stats()["l2_busy_cycles"] * CFG.l2.slices == pytest.approx((3 if fills else 2) * 256 / SLICE_BPC)


def test_the_percentile_of_the_stats_is_numpys_bit_for_bit():
    from maxsim.timing.memory_stats import percentile
    rng = np.random.default_rng(7)
    for trial in range(3000):
        n = int(rng.integers(1, 50))
        v = rng.integers(0, 6, n).astype(np.float64) if trial % 2 else rng.random(n) * 1e3  # ties, or none
        for q in (95, 50, 0, 100, 99.9, 12.5):
            assert percentile(v, q) == float(np.percentile(v, q)), (v, q)
    assert np.isnan(percentile(np.array([1.0, np.nan]), 95))


@pytest.mark.parametrize("core", ["python", "compiled"])
def test_the_counts_only_stats_are_the_additive_counters_of_the_whole_stats(core):
    # (the per-window report of a sampled chunk takes these: the same counts, none of the ratios,
    # means or the 95th percentile, which sorts every DRAM queue delay)
    ms = MemorySystem(CFG, core=core)
    for t in range(0, 4000, 100):
        ms.read(t, [(t * 37 + i * 32) % (1 << 22) for i in range(8)], sm=t % 4)
        ms.write(t + 50, [(t * 11 + i * 32) % (1 << 22) for i in range(4)])
    whole, counts = ms.stats(), ms.stats(counts_only=True)
    assert whole["dram_read_requests"] > 0 and whole["l2_read_misses"] > 0  # (there is something to count)
    assert counts == {k: v for k, v in whole.items()
                      if not k.endswith(("rate", "utilisation", "delay", "p95"))}
    assert "dram_queue_delay_cycles" in counts and "dram_p95_queue_delay" not in counts

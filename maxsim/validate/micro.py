"""The micro-benchmarks of the timing model, run as kernels through the simulator, each set
against its published hardware figure.

Every figure is read from a simulation (issue cycles of the SM's issue log, completion cycles,
statistics), never from the config; the config only sizes a benchmark where a hardware
micro-benchmark would be sized by the cache it targets (footprints from the L1 and L2 sizes).
"""

from __future__ import annotations

import math

import numpy as np

from ..functional import GlobalMemory
from ..gpu.gpu import simulate_gpu
from ..timing.memory_system import MemorySystem
from . import kernels as K
from .rows import Row

CHAIN = 8          # links of a dependent chain / pointer chase
STREAM = 32        # instructions of an independent stream


def _slope(times):
    """Cycles per step of an evenly spaced sequence of cycles (first to last)."""
    return (times[-1] - times[0]) / (len(times) - 1)


# ---------------------------------------------------------------------------------------------
# ALU

def alu_latency(cfg, op="FFMA R0, R1, R2, R0"):
    """Dependent-ALU latency: the shortest stall count at which a chain of dependent instructions
    runs without a read-before-write (the model's check that each reads its producer's result),
    as the cycles per link of that chain. (On Maxwell an ALU result has no interlock: the stall
    count is the only thing that orders the chain, as maxas's Control-Codes page explains; the
    figure is found the way one finds it on hardware, by shortening the stall until results go
    wrong.)"""
    for stall in range(1, 16):
        sm, d = K.run(K.dependent_chain(CHAIN, stall, op=op), cfg=cfg)
        if d["hazards"] == 0:
            return _slope([t for t, _ in K.issues(sm)][:CHAIN])
    return math.inf


def issue_rate(cfg):
    """Independent FFMAs per cycle per scheduler: one warp on each scheduler, a stream of
    independent FFMAs at stall 1 (no bank conflict); the issue rate of each warp's stream."""
    nsch = cfg.sm.schedulers
    sm, d = K.run(K.independent_ffma(STREAM), block=32 * nsch, cfg=cfg)
    rates = [1.0 / _slope([t for t, _ in K.issues(sm, w)][:STREAM]) for w in range(nsch)]
    return sum(rates) / len(rates)


def dual_issue(cfg, second):
    """The most instructions one warp issues in one cycle: an FFMA at stall 0 followed by
    ``second``."""
    sm, d = K.run(K.pair(0, second), cfg=cfg)
    per_cycle = {}
    for t, _ in K.issues(sm, 0):
        per_cycle[t] = per_cycle.get(t, 0) + 1
    return max(per_cycle.values())


def bank_stream_cycles(cfg, conflict, reuse):
    """Cycles per FFMA of a back-to-back stream (:func:`kernels.bank_stream`), over its second
    half (after any start-up effect)."""
    sm, d = K.run(K.bank_stream(STREAM, conflict=conflict, reuse=reuse), cfg=cfg)
    times = [t for t, _ in K.issues(sm)][STREAM // 2:STREAM]
    return _slope(times)


# ---------------------------------------------------------------------------------------------
# shared memory

def memory_issue_rate(cfg):
    """Shared loads one warp issues per cycle: a stream of independent LDS at stall 1."""
    sm, d = K.run(K.lds_stream(CHAIN), cfg=cfg)
    return 1.0 / _slope([t for t, _ in K.issues(sm)][:CHAIN])


def shared_throughput(cfg, warps=8, loads=16):
    """Bytes per cycle the SM's shared memory delivers: ``warps`` warps each issuing ``loads``
    conflict-free LDS.128 (512 bytes a warp) back to back; the bytes of all loads but the first to
    complete over the cycles from the first completion to the last."""
    sm, d = K.run(K.lds128_stream(loads), block=32 * warps, cfg=cfg)
    done = sorted(K.done_times(sm, set(range(2, 2 + loads))))
    return (len(done) - 1) * 512 / (done[-1] - done[0])


def lds_chase_latency(cfg):
    """Cycles per link of a shared-memory pointer chase (every link on word 0: no conflict)."""
    sm, d = K.run(K.lds_chase(CHAIN), cfg=cfg)
    times = [K.first_issue(sm, pc) for pc in range(1, CHAIN + 2)]  # the loads, then the FADD
    return _slope(times)


def lds_use_latency(cfg, stride_words=1):
    """Cycles from an LDS (lane i at word ``i * stride_words``) to the first dependent
    instruction, and the shared wavefronts the request took."""
    shift = 2 + stride_words.bit_length() - 1
    sm, d = K.run(K.lds_kernel(shift), cfg=cfg)
    return K.first_issue(sm, 3) - K.first_issue(sm, 2), d["shared_bank_conflicts"] + d["shared_requests"]


# ---------------------------------------------------------------------------------------------
# texture path

def chase_latency(cfg, level):
    """Cycles per link of a texture pointer chase (64 links, one sector each, all lanes on the
    same chain) whose data sits in the L1/texture cache ("l1"), only in the L2 ("l2") or only in
    DRAM ("dram"), after a warm-up pass over a footprint that fits the L1 (a third of it), fits
    the L2 but not the L1 (4x the L1) or exceeds the L2 (2x the L2, in the order the chase then
    follows, so the L2's LRU has pushed the chase's sectors out). "cold": the chase over data
    nothing has touched before (the warm-up elsewhere), the first touch of each sector - as far
    from the L2 as "dram", at a fraction of the cost (the 2x-L2 warm-up streams 4 MB through the
    memory model)."""
    links = 64
    l1, l2, sector = cfg.l1tex.size, cfg.l2.size, cfg.l2.sector
    warm_bytes, footprint = {"l1": (l1 // 3, l1 // 3), "l2": (4 * l1, 4 * l1),
                             "dram": (2 * l2, 4 * l1), "cold": (512, 4 * l1)}[level]
    warm_fetches = max(1, warm_bytes // (32 * 16))  # one fetch: 32 lanes x 16 bytes
    k = K.tld_chase_kernel(warm_fetches, links)
    away = K.TEXTURE_ADDRESS + 2 * l2 + 4 * l1 if level == "cold" else K.TEXTURE_ADDRESS
    tex = K.chase_textures(footprint, links, sector, warm_fetches * 32 * 16, warm_address=away)
    sm, d = K.run(k, cfg=cfg, textures=tex)
    first = K.chase_pc(warm_fetches)
    times = [K.first_issue(sm, pc) for pc in range(first, first + links + 1)]
    return _slope(times)


def chase_footprint_latency(cfg, footprint, links=64):
    """Mean cycles per link of a texture pointer chase whose ``links`` links are spread evenly over
    ``footprint`` bytes, after a warm-up pass over the same ``footprint`` bytes in address order:
    the link latency as a function of the footprint (the classic P-chase capacity curve)."""
    sector = cfg.l2.sector
    warm_fetches = max(1, footprint // (32 * 16))
    k = K.tld_chase_kernel(warm_fetches, links)
    tex = K.chase_textures(footprint, links, sector, warm_fetches * 32 * 16)
    sm, d = K.run(k, cfg=cfg, textures=tex)
    first = K.chase_pc(warm_fetches)
    return _slope([K.first_issue(sm, pc) for pc in range(first, first + links + 1)])


def l1_capacity(cfg, step=2048, lo=8192, hi=49152):
    """The L1/texture cache's capacity as a P-chase finds it: the largest footprint (scanned in
    ``step`` bytes from ``lo`` to ``hi``) whose warmed chase still runs at the latency of the
    smallest footprint (every link a hit)."""
    base = chase_footprint_latency(cfg, lo)
    best = lo
    for fp in range(lo + step, hi + 1, step):
        if chase_footprint_latency(cfg, fp) > base + 0.5:
            break
        best = fp
    return best


def stride_chase_latencies(cfg, stride_bytes, links=32):
    """Per-link cycles of a pointer chase over untouched data, ``links`` links ``stride_bytes``
    apart in address order (:func:`kernels.stride_textures`)."""
    k = K.tld_chase_kernel(1, links)
    sm, d = K.run(k, cfg=cfg, textures=K.stride_textures(links, stride_bytes))
    first = K.chase_pc(1)
    times = [K.first_issue(sm, pc) for pc in range(first, first + links + 1)]
    return [b - a for a, b in zip(times, times[1:])]


def fetch_granularity(cfg, stride_bytes=16, links=32):
    """The L1/texture cache's fetch (line) size as a fine-grained P-chase finds it: over untouched
    data at a ``stride_bytes`` stride, the bytes the chase walks per link that misses (a miss
    brings in one fetch unit; the links after it within the unit hit)."""
    lat = stride_chase_latencies(cfg, stride_bytes, links)
    fastest = min(lat)
    misses = sum(1 for x in lat if x > fastest + 0.5)
    if not misses:  # every link alike: every one misses (a fetch unit no larger than the stride)
        return float(stride_bytes), lat
    return links * stride_bytes / misses, lat


def texture_throughput(cfg, warps=8, hits=8):
    """Bytes per cycle the SM's texture path delivers from L1 hits: ``warps`` warps each fetching
    their own 512 bytes ``hits`` times back to back; total bytes of all hits but the first to
    complete over the cycles from the first completion to the last."""
    sm, d = K.run(K.tld_stream_kernel(hits), block=32 * warps, cfg=cfg, textures={0: K.texture(32 * warps)})
    done = sorted(K.done_times(sm, set(range(5, 5 + hits))))
    return (len(done) - 1) * 512 / (done[-1] - done[0])


def _stream_kernel(block, fetches, passes=1):
    """Each thread of CTA c fetches texels ``c x block x fetches + i x block + tid`` for i < fetches
    (each warp 512 new bytes per TLD), ``passes`` times over, then waits for the last."""
    n = fetches * passes
    return K.kernel("\n".join(
        ["--:-:1:-:1 S2R R0, SR_TID.X;", "--:-:2:-:1 S2R R1, SR_CTAID.X;",
         "--:-:-:-:1 MOV32I R8, 0x80000000;",
         f"03:-:-:-:{K.s(K.ALU_STALL)} XMAD R2, R1, {hex(block * fetches)}, R0;"]
        + [f"--:-:-:-:{K.s(K.ALU_STALL)} IADD R3, R2, {hex((i % fetches) * block)};\n"
           f"--:-:{'1' if i == n - 1 else '-'}:-:2 TLD.B.LZ.P R{12 + 4 * (i % 4)}, R3, R8, 0x0, 1D, 0xf;"
           for i in range(n)]
        + ["01:-:-:-:1 FADD R5, R12, R12;", K.exit_line()]), regs=32)


def dram_bandwidth(cfg, ctas_per_sm=4, fetches=16):
    """Sustained DRAM read bandwidth of the whole GPU: every SM streams distinct texels (each warp
    ``fetches`` TLDs of 512 new bytes) through the L1 and L2 misses to DRAM; bytes read from DRAM
    over the kernel's cycles. Returns (GB/s, fraction of the config's peak bandwidth)."""
    block = 128  # 4 warps
    ctas = ctas_per_sm * cfg.gpu.sms
    tex = K.texture(ctas * block * fetches)
    r = simulate_gpu(_stream_kernel(block, fetches), ctas, block, textures={0: tex}, cfg=cfg, hazards=None)
    seconds = cfg.cycles_to_seconds(r.cycles)
    gbs = r.memory.dram_bytes_read / seconds / 1e9
    return gbs, gbs / cfg.gpu.dram_bandwidth_gbs


def l2_bandwidth(cfg, ctas_per_sm=4, passes=8):
    """Read bandwidth of the L2 to the SMs: every SM streams texels that the L2 holds (warmed,
    half its capacity) and its L1 cannot (each SM's share is more than twice the L1, read
    ``passes`` times over in the same order: an LRU cache keeps none of it): bytes the SMs fetched
    over the kernel's cycles, per core cycle. Returns (bytes per cycle, share of the fetched
    sectors that hit in the L2, share that hit in the L1s)."""
    block = 128
    ctas = ctas_per_sm * cfg.gpu.sms
    fetches = max(1, cfg.l2.size // 2 // 16 // (ctas * block))  # float4 texels: 16 bytes each
    tex = K.texture(ctas * block * fetches)
    ms = MemorySystem(cfg)
    nbytes = ctas * block * fetches * 16
    ms.warm(list(range(K.TEXTURE_ADDRESS, K.TEXTURE_ADDRESS + nbytes, cfg.l2.sector)))
    r = simulate_gpu(_stream_kernel(block, fetches, passes), ctas, block, textures={0: tex}, cfg=cfg,
                     hazards=None, memory_system=ms)
    hits = ms.l2_read_hits / max(1, ms.l2_read_hits + ms.l2_read_misses)
    l1 = sum(sm.l1.sector_hits for sm in r.sms) / max(1, sum(sm.l1.sector_hits + sm.l1.sector_misses for sm in r.sms))
    return nbytes * passes / r.cycles, hits, l1



# ---------------------------------------------------------------------------------------------
# global loads: latency by level and TLB state, the TLBs' reach (Mei and Chu's pointer chases)

MB = 1 << 20


def ldg_chase(cfg, offsets, passes=1, measure=None):
    """A global-load pointer chase: one thread follows the byte ``offsets`` (from the start of one
    allocation) in order, ``passes`` times (each word holds the address of the next; the last
    points back to the first). Returns (cycles per link over the last pass, or its last ``measure``
    links, the memory system).
    The LDG path reads through the L2 (no L1), as Mei and Chu's ``ld.global.cg`` chase."""
    mem = GlobalMemory()
    base = mem.alloc(max(offsets) + 4)
    addr = [base + o for o in offsets]
    for a, b in zip(addr, addr[1:] + addr[:1]):
        mem.write(a, np.array([b], np.uint32))
    n = len(offsets) * passes
    body = [f"--:-:-:-:{K.s(K.ALU_STALL)} MOV32I R4, {hex(addr[0])};"]
    body += [f"{'--' if i == 0 else '02'}:-:2:-:2 LDG R4, [R4];" for i in range(n)]
    body += ["02:-:-:-:1 IADD R3, R4, R4;", K.exit_line()]
    ms = MemorySystem(cfg)
    sm, d = K.run(K.kernel("\n".join(body)), cfg=cfg, memory=mem, memory_system=ms)
    last = range(1 + n - (measure or len(offsets)), 2 + n)  # the last loads, then the use of the last
    return _slope([K.first_issue(sm, pc) for pc in last]), ms


def _pages(n, page, offset=0):
    return [i * page + offset for i in range(n)]


def latency_by_tlb_state(cfg, state):
    """Cycles per link of an LDG chase whose links hit the L2 and both TLBs ("l2"), hit the L2 and
    miss the SM's L1 TLB but hit the L2 TLB ("l2_l1tlb_miss": one link per page over more pages
    than the L1 TLB holds, fewer than the L2 TLB holds), miss the L2 with the TLBs hitting ("dram":
    new sectors of one page), or miss the L2 and both TLBs ("dram_walk": a first pass over more
    pages than the L2 TLB holds, then the same pages at other sectors)."""
    page, t = cfg.tlb.page_bytes, cfg.tlb
    if state == "l2":
        return ldg_chase(cfg, [256 * i for i in range(CHAIN)], passes=2)[0]
    if state == "l2_l1tlb_miss":
        n = min(t.l1_entries + 8, t.l2_entries)
        return ldg_chase(cfg, _pages(n, page), passes=2)[0]
    if state == "dram":
        return ldg_chase(cfg, [4096 * i for i in range(CHAIN)])[0]
    n = t.l2_entries + t.l2_entries // 4  # a quarter more pages than entries: every set overflows
    return ldg_chase(cfg, _pages(n, page) + _pages(n, page, offset=page // 2), measure=n)[0]


def tlb_misses_over(cfg, footprint, level):
    """Misses in the SM's L1 TLB (``level`` "l1") or in the L2 TLB ("l2": walks) of the second pass
    of a chase with one link per page over ``footprint`` bytes."""
    page = cfg.tlb.page_bytes
    offsets = _pages(max(1, footprint // page), page)
    ms = ldg_chase(cfg, offsets, passes=1)[1]
    first = ms.stats()
    ms2 = ldg_chase(cfg, offsets, passes=2)[1].stats()
    key = "tlb_l1_misses" if level == "l1" else "tlb_l2_misses"
    return ms2[key] - first[key]


def tlb_reach(cfg, level, lo, hi):
    """The largest footprint (2 MB steps from ``lo`` to ``hi`` bytes) whose second pass misses no
    entry of the TLB at ``level``: that TLB's reach as a P-chase finds it; and the misses at the
    first footprint that has some."""
    page = cfg.tlb.page_bytes
    best, misses = lo - page, None
    for fp in range(lo, hi + 1, page):
        m = tlb_misses_over(cfg, fp, level)
        if m:
            misses = (fp, m)
            break
        best = fp
    return best, misses


# ---------------------------------------------------------------------------------------------
# global-memory copy bandwidth (Mei and Chu's global_BW.cu, scaled down)

def _copy_kernel(block, loads, iters, threads):
    """Each thread copies ``loads`` words per iteration (``loads`` LDGs in flight, then their
    STGs), ``iters`` times, grid-stride: thread g copies words ``g + (j x loads + i) x threads``."""
    stride = 4 * threads
    lines = ["--:-:1:-:1 S2R R0, SR_TID.X;", "--:-:2:-:1 S2R R1, SR_CTAID.X;",
             f"03:-:-:-:{K.s(K.ALU_STALL)} XMAD R2, R1, {hex(block)}, R0;",
             f"--:-:-:-:{K.s(K.ALU_STALL)} SHL R2, R2, 0x2;",
             f"--:-:-:-:{K.s(K.ALU_STALL)} IADD R3, R2, c[0x0][0x144];",
             f"--:-:-:-:{K.s(K.ALU_STALL)} IADD R2, R2, c[0x0][0x140];"]
    for j in range(iters):
        for i in range(loads):
            wait = "02" if j and i == 0 else "--"
            lines.append(f"{wait}:-:1:-:1 LDG R{10 + i}, [R2+{hex(i * stride)}];")
        lines.append(f"--:-:-:-:{K.s(K.ALU_STALL)} IADD R2, R2, {hex(loads * stride)};")
        for i in range(loads):
            wait = "01" if i == 0 else "--"
            lines.append(f"{wait}:2:-:-:1 STG [R3+{hex(i * stride)}], R{10 + i};")
        lines.append(f"--:-:-:-:{K.s(K.ALU_STALL)} IADD R3, R3, {hex(loads * stride)};")
    lines.append(K.exit_line())
    return K.kernel("\n".join(lines), regs=32, params=2)


def copy_bandwidth(cfg, ctas, block, loads, iters):
    """GiB/s of a copy kernel on the whole GPU (bytes read plus bytes written over its time, 2^30
    bytes per GiB, as Mei and Chu count): ``ctas`` CTAs of ``block`` threads, each thread with
    ``loads`` loads in flight, ``iters`` times."""
    threads = ctas * block
    words = threads * loads * iters
    mem = GlobalMemory()
    src = mem.alloc(4 * words)
    dst = mem.alloc(4 * words)
    r = simulate_gpu(_copy_kernel(block, loads, iters, threads), ctas, block, [src, dst], mem, cfg=cfg,
                     hazards=None)
    return 2 * 4 * words / cfg.cycles_to_seconds(r.cycles) / 2 ** 30

# ---------------------------------------------------------------------------------------------
# CTA barrier

def bar_sync_cost(cfg, n_chain=10):
    """Cycles from the last warp's arrival at BAR.SYNC to the first instruction after it."""
    sm, d = K.run(K.bar_kernel(n_chain), block=64, cfg=cfg)
    bar_pc = 3 + n_chain
    return K.first_issue(sm, bar_pc + 1, warp=1) - K.first_issue(sm, bar_pc, warp=1)


# ---------------------------------------------------------------------------------------------

def micro_rows(cfg, quick=False, progress=None):
    """The micro-benchmark rows, in table order; ``quick`` measures the DRAM latency on cold data
    instead of after a pass over twice the L2. ``progress(done, total)`` after each benchmark."""
    steps = []

    def step(fn):
        steps.append(fn)
        return fn

    rows = []

    @step
    def _():
        rows.append(Row("FFMA dependent-chain latency", "latency", alu_latency(cfg), 6, "cycles",
                        "[maxas-cc] [arafa19]",
                        "shortest stall with no read-before-write in a chain of 8 dependent FFMAs"))
        rows.append(Row("IADD dependent-chain latency", "latency", alu_latency(cfg, "IADD R0, R0, R1"), 6,
                        "cycles", "[maxas-cc] [arafa19]", "the same with IADD"))

    @step
    def _():
        rows.append(Row("FFMA issue rate per scheduler", "throughput", issue_rate(cfg), 1.0,
                        "warp instr / cycle", "[wp980]",
                        "independent FFMAs, one warp per scheduler; 128 FP32 lanes per SM"))

    @step
    def _():
        rows.append(Row("LDS issue rate, one warp", "throughput", memory_issue_rate(cfg), 0.5,
                        "instr / cycle", "[maxas-sgemm]",
                        "independent LDS at stall 1; maxas: the memory unit works best at half throughput"))
        rows.append(Row("dual issue FFMA + LDS (stall 0)", "throughput",
                        dual_issue(cfg, "--:-:1:-:2 LDS R6, [R4];"), 2, "instr / cycle", "[wp980] [maxas-cc]",
                        "instructions one warp issues in one cycle"))
        rows.append(Row("dual issue FFMA + FFMA (stall 0)", "throughput",
                        dual_issue(cfg, "--:-:-:-:1 FFMA R6, R1, R2, R3;"), 1, "instr / cycle", "[maxas-cc]",
                        "two FFMAs use the same unit: no dual issue"))

    @step
    def _():
        rows.append(Row("register bank conflict, reuse off", "register_banks",
                        bank_stream_cycles(cfg, True, False), 2.0, "cycles / FFMA", "[maxas-sgemm]",
                        "FFMA stream reading R4 and R8 (both bank 0): 1 issue cycle + about 1 per unhidden conflict"))
        rows.append(Row("register bank conflict, R4.reuse", "register_banks",
                        bank_stream_cycles(cfg, True, True), 1.0, "cycles / FFMA", "[maxas-sgemm]",
                        "the same stream with R4 in the reuse cache: the conflict is gone"))
        rows.append(Row("no bank conflict (R4, R10)", "register_banks",
                        bank_stream_cycles(cfg, False, False), 1.0, "cycles / FFMA", "[wp980]",
                        "reference: one FFMA per cycle"))

    @step
    def _():
        rows.append(Row("LDS pointer-chase latency", "latency", lds_chase_latency(cfg), 23, "cycles", "[jia18]",
                        "8 dependent LDS (no conflict); [arafa19] gives 24 issue-to-use"))
        lat1, wf1 = lds_use_latency(cfg, 1)
        rows.append(Row("LDS issue-to-use latency", "latency", lat1, 24, "cycles", "[arafa19]",
                        "one LDS, stride 1 word, then a dependent FADD"))
        rows.append(Row("shared-memory latency, no conflict (Mei-Chu chase)", "latency", lat1, 28, "cycles",
                        "[mei17-data]", "issue-to-use of one LDS; Mei and Chu's 28 is a CUDA C chase timed with "
                                        "clock(), address arithmetic included"))
        for stride in (2, 4, 8, 16, 32):
            lat, wf = lds_use_latency(cfg, stride)
            rows.append(Row(f"LDS {stride}-way bank conflict: wavefronts", "shared_banks", wf, stride,
                            "wavefronts", "[cuda-pg]",
                            f"lane i reads word {stride}i: the request is split into {stride} conflict-free ones"))
            rows.append(Row(f"LDS {stride}-way bank conflict: added latency", "shared_banks", lat - lat1,
                            2 * (stride - 1), "cycles", "[mei17-data]",
                            "issue-to-use minus the conflict-free figure; Mei and Chu: 28 + 2(n - 1) cycles "
                            "under an n-way conflict (latency.txt)"))

    @step
    def _():
        rows.append(Row("L1/texture hit latency (TLD chase)", "latency", chase_latency(cfg, "l1"), 82, "cycles",
                        "[jia18] [arafa19]", "footprint 1/3 of the L1, warmed"))

    @step
    def _():
        rows.append(Row("L2 hit latency (TLD chase)", "latency", chase_latency(cfg, "l2"), 207, "cycles", "[jia18]",
                        "footprint 4x the L1, in the L2; [arafa19] gives 225"))

    @step
    def _():
        if quick:
            rows.append(Row("DRAM latency (TLD chase, cold data)", "latency", chase_latency(cfg, "cold"), 357,
                            "cycles", "[arafa19]", "first touch of every sector; arafa19: texture fetch from "
                                                   "memory 357, global load 375-379"))
        else:
            rows.append(Row("DRAM latency (TLD chase beyond the L2)", "latency", chase_latency(cfg, "dram"), 357,
                            "cycles", "[arafa19]", "after a pass over 2x the L2; arafa19: texture fetch from "
                                                   "memory 357, global load 375-379"))

    @step
    def _():
        page = cfg.tlb.page_bytes
        for state, published, what in (
                ("l2", 229.7, "L2 hit, TLB hit: 8 links in one page, second pass"),
                ("l2_l1tlb_miss", 240.8, "L2 hit, L1 TLB miss, L2 TLB hit: one link per 2 MB page over more "
                                         "pages than the L1 TLB holds, second pass"),
                ("dram", 399, "L2 miss, TLB hit: new sectors of one page"),
                ("dram_walk", 2447, "L2 miss and a miss in both TLBs: pages once over more than the L2 TLB "
                                    "holds, then the same pages at other sectors")):
            rows.append(Row(f"global-load latency: {state.replace('_', ' ')} (LDG chase)", "latency",
                            latency_by_tlb_state(cfg, state), published, "cycles", "[mei17-data]",
                            what + "; Mei and Chu's ld.global.cg chase (pattern_demo_Maxwell.xlsx) includes "
                                   "address arithmetic"))
        reach, (at, misses) = tlb_reach(cfg, "l2", 120 * MB, 140 * MB)
        rows.append(Row("L2 TLB reach (LDG chase, 2 MB steps)", "cache_structure", reach / MB, 130, "MB",
                        "[mei17-data]", "largest footprint, one link per page, whose second pass misses no L2 TLB "
                                        "entry; Mei and Chu: none up to 130 MB, misses from 132 MB "
                                        "(Maxwell_L2TLB_mapping.xlsx; [jia18] ~128 MiB on M60)"))
        rows.append(Row("L2 TLB misses walking 132 MB in 2 MB pages", "cache_structure",
                        tlb_misses_over(cfg, 132 * MB, "l2"), 17, "misses", "[mei17-data]",
                        f"second pass of the chase; the model's first misses: {misses} at {at // MB} MB"))
        l1reach, _ = tlb_reach(cfg, "l1", 16 * MB, 48 * MB)
        rows.append(Row("L1 TLB reach (LDG chase, 2 MB steps)", "cache_structure", l1reach / MB, 32, "MB",
                        "[gm200-chase]", "largest footprint whose second pass misses no L1 TLB entry; "
                                         "GTX TITAN X (GM200) pointer chase: 32 MB"))

    @step
    def _():
        peak = cfg.gpu.dram_bandwidth_gbs * 1e9 / 2 ** 30
        for ctas, block, loads, iters, published, pct, what in (
                (80, 64, 8, 208, 151.5, True, "the best: 80 CTAs of 64 threads, 8 loads in flight each"),
                (16, 1024, 1, 512, 128.2, True, "16 CTAs of 1,024 threads, one load in flight each"),
                (16, 32, 1, 64, 9.98, False, "one warp per SM, one load in flight"),
                (16, 32, 16, 8, 70.4, False, "one warp per SM, 16 loads in flight")):
            gib = copy_bandwidth(cfg, ctas, block, loads, iters)
            if pct:  # a bandwidth-bound figure: as a share of the peak (Mei and Chu's card at 224 GB/s)
                rows.append(Row(f"copy bandwidth, {what.split(':')[0]}", "throughput", 100 * gib / peak,
                                100 * published / (224e9 / 2 ** 30), "% of peak", "[mei17-data]",
                                f"{gib:.1f} GiB/s read + written ({what}, 32 MB each way); Mei and Chu "
                                f"(global_BW.cu, Maxwell.xlsx): {published} GiB/s on a GTX 980 (224 GB/s)"))
            else:  # latency-bound: GiB/s as it is (the core clock of the config sets it)
                rows.append(Row(f"copy bandwidth, {what}", "throughput", gib, published, "GiB/s",
                                "[mei17-data]", f"read + written, latency-bound (Little's law); config "
                                                f"{cfg.name} at {cfg.gpu.core_clock_mhz:g} MHz; Mei and Chu's "
                                                "GTX 980 at stock clocks"))

    @step
    def _():
        rows.append(Row("L1/texture capacity (P-chase footprint)", "cache_structure", l1_capacity(cfg), 24576,
                        "bytes", "[jia18]",
                        "largest warmed footprint whose chase still hits in the L1 (scanned in 2 KB steps)"))
        gran, lat = fetch_granularity(cfg)
        rows.append(Row("L1/texture fetch granularity (stride-16 B chase)", "cache_structure", gran, 32, "bytes",
                        "[jia18] [nv-forum-l2]",
                        "cold chase, 16-byte stride: bytes per link that misses; a miss fetches one 32 B sector"))
        rows.append(Row("latency by stride: 16 B, cold data", "latency", sum(lat) / len(lat),
                        None, "cycles", "",
                        "mean cycles per link: every other link misses to DRAM, the next hits in the L1 "
                        "(no published figure for GM204 here)"))

    @step
    def _():
        rows.append(Row("shared-memory bandwidth per SM (LDS.128)", "throughput", shared_throughput(cfg),
                        128 * 2122 / 2410, "B / cycle", "[jia18]",
                        "8 warps of conflict-free LDS.128 back to back; jia18: 2,122 of a theoretical 2,410 "
                        "GiB/s on M60 (16 SMs x 128 B per cycle), 88%"))

    @step
    def _():
        rows.append(Row("L1/texture throughput per SM", "throughput", texture_throughput(cfg), 15.7, "B / cycle",
                        "[jia18]", "L1 hits of 8 warps back to back; the config reads jia18's figure as "
                                   "one of the SM's two texture units (gm204.toml l1tex)"))

    @step
    def _():
        bpc, hits, l1 = l2_bandwidth(cfg)
        rows.append(Row("L2 bandwidth, L2 hits, all SMs", "throughput", bpc, 446 / 1.177, "B / cycle", "[jia18]",
                        f"every SM streams texels the L2 holds ({100 * hits:.0f}% L2 hits, {100 * l1:.0f}% L1 "
                        "hits); jia18: 446 GB/s on M60 at 1177 MHz, read as bytes per core cycle"))

    @step
    def _():
        gbs, frac = dram_bandwidth(cfg)
        rows.append(Row("DRAM bandwidth, streaming, all SMs", "throughput", 100 * frac, 79, "% of peak", "[jia18]",
                        f"{gbs:.0f} GB/s of {cfg.gpu.dram_bandwidth_gbs:g}; jia18: 127 of 160 GiB/s on M60"))

    @step
    def _():
        rows.append(Row("BAR.SYNC release after the last arrival", "latency", bar_sync_cost(cfg), 5, "cycles",
                        "[maxas-cc]", "maxas: BAR needs a stall count of at least 5"))

    for i, fn in enumerate(steps):
        fn()
        if progress is not None:
            progress(i + 1, len(steps))
    return rows

"""Timing-model validation with hand-written SASS micro-kernels.

Each test runs a tiny kernel (maxas text format, written below) on the SM timing model and checks
a cycle count derived by hand in the comments *from the loaded config* (``cfg.latency.alu`` etc.),
so the tests check the mechanism rather than one set of numbers. Issue cycles are read from the
SM's optional issue log (``simulate(..., log=True)`` -> ``sm.issue_log`` of (cycle, warp, pc)).

Conventions of the model these derivations rely on (see maxsim/timing/sm.py):

* The first warp instruction issues at cycle 0; an instruction's stall count S delays the warp's
  next issue to ``t + S`` (``S = 0``: dual issue, else ``t + 1``).
* ``stats.cycles`` is the cycle after the last issue (the cycle the last EXIT completes its issue
  slot): a kernel whose last EXIT issues at ``T`` reports ``T + 1`` cycles.
* A dependency barrier set by an instruction is visible ``latency.barrier_set_delay`` cycles after
  its issue: a waiting instruction right behind the setter needs stall >= 2 on the setter.
"""

from __future__ import annotations

import math

import pytest

from maxsim.arch.config import load_config, override
from maxsim.errors import HazardError
from maxsim.timing.memory_system import MemorySystem
from maxsim.timing.run import simulate
from maxsim.validate import kernels as K
from maxsim.validate.kernels import FILL, first_issue, issues, kernel, s

# The kernels are those of `maxsim validate` (maxsim/validate/kernels.py), built here with the
# stall counts of the loaded config so the derivations below hold for any config.

CFG = load_config()
LAT = CFG.latency


def run(k, block=32, cfg=CFG, **kw):
    # this module's `simulate` (tests/test_core_parity.py replaces it to run both SM cores)
    res, sm = simulate(k, 1, block, cfg=cfg, log=True, **kw)
    return sm, sm.stats.to_dict()


def exit_line():
    return K.exit_line(LAT.exit)


# FILL: an independent FFMA reading banks 1, 2, 3 (R5, R6, R7): no conflict, leaves bank 0 idle


# ---------------------------------------------------------------------------------------------
# (1) dependent FFMA chain: the stall count is the only interlock of fixed-latency ALU results


def test_dependent_ffma_chain():
    n = 8
    a = LAT.alu  # ALU result readable `alu` cycles after issue: the assembler writes stall = alu
    k = K.dependent_chain(n, a, exit_stall=LAT.exit)
    sm, d = run(k)
    # FFMA i issues at i * alu; the EXIT at n * alu; cycles = last issue + 1
    assert [t for t, _ in issues(sm)] == [i * a for i in range(n + 1)]
    assert d["cycles"] == n * a + 1  # 49 with alu = 6
    assert d["hazards"] == 0  # stall = alu covers the dependency exactly


def test_ffma_chain_one_cycle_short_is_a_hazard():
    # the same chain with stall alu - 1: every FFMA reads R0 one cycle before it is written
    n = 4
    k = K.dependent_chain(n, LAT.alu - 1, exit_stall=LAT.exit)
    sm, d = run(k)
    assert d["cycles"] == n * (LAT.alu - 1) + 1
    assert d["hazards"] == n - 1


# ---------------------------------------------------------------------------------------------
# (2) independent FFMAs: one per cycle per scheduler; warps on different schedulers in parallel

N_INDEP = 16
# banks 1, 2, 3 (no register-bank conflict); destinations never read
INDEP = K.independent_ffma(N_INDEP, exit_stall=LAT.exit)


def test_independent_ffma_one_per_cycle():
    assert CFG.pipes.alu == 1.0
    sm, d = run(INDEP, block=32)
    # stall 1: FFMA i at cycle i, EXIT at N; cycles N + 1
    assert [t for t, _ in issues(sm)] == list(range(N_INDEP + 1))
    assert d["cycles"] == N_INDEP + 1  # 17
    assert d["ipc"] == 1.0


@pytest.mark.parametrize("alu", [0.5, 0.25])
def test_alu_pipe_rate_from_config(alu):
    # pipes.alu warp instructions per cycle per scheduler: independent FFMAs issue every 1 / alu
    # cycles, the gaps counted as pipe_busy
    gap = int(1 / alu)
    sm, d = run(INDEP, cfg=override(CFG, {"pipes.alu": alu}))
    times = [t for t, _ in issues(sm)]
    assert times[:N_INDEP] == [gap * i for i in range(N_INDEP)]
    assert d["stall_reasons"]["pipe_busy"] == (N_INDEP - 1) * (gap - 1)


def test_four_warps_on_four_schedulers_run_in_parallel():
    # block 128: warps 0-3 take schedulers 0-3 (warp slot mod 4) and issue side by side
    nsch = CFG.sm.schedulers
    sm, d = run(INDEP, block=32 * nsch)
    for w in range(nsch):
        assert [t for t, _ in issues(sm, w)] == list(range(N_INDEP + 1))
    assert d["cycles"] == N_INDEP + 1  # same as one warp: 17
    assert d["warp_instructions"] == nsch * (N_INDEP + 1)


def test_two_warps_on_one_scheduler_share_it():
    # block 160 = 5 warps: warps 0 and 4 share scheduler 0 (slot mod 4). Greedy-then-oldest: warp
    # 0 issues every cycle until its EXIT (cycles 0..N), then warp 4 (cycles N+1 .. 2N+1)
    nsch = CFG.sm.schedulers
    sm, d = run(INDEP, block=32 * (nsch + 1))
    assert [t for t, _ in issues(sm, 0)] == list(range(N_INDEP + 1))
    assert [t for t, _ in issues(sm, nsch)] == list(range(N_INDEP + 1, 2 * N_INDEP + 2))
    for w in range(1, nsch):
        assert [t for t, _ in issues(sm, w)] == list(range(N_INDEP + 1))
    assert d["cycles"] == 2 * (N_INDEP + 1)  # 34: scheduler 0 issues 2 x 17 instructions


def test_half_rate_pipe_and_memory_issue_interval():
    # shifts use one of the two ALU pipes (alu_half = 0.5 per cycle): back-to-back independent SHLs
    # with stall 1 issue every 1/alu_half cycles; memory instructions every mem_issue_interval
    half = int(round(1 / CFG.pipes.alu_half))
    mem = CFG.pipes.mem_issue_interval
    for text, gap, reason, shared in (("SHL R{}, R1, 0x2", half, "pipe_busy", 0),
                                      ("LDS R{}, [R1]", mem, "memory_throttle", 128)):
        body = [f"--:-:-:-:1 {text.format(4 + i)};" for i in range(4)] + [FILL, exit_line()]
        sm, d = run(kernel("\n".join(body), shared=shared))
        assert [t for t, _ in issues(sm)] == [0, gap, 2 * gap, 3 * gap, 3 * gap + 1, 3 * gap + 2]
        assert d["stall_reasons"][reason] == 3 * (gap - 1)


# ---------------------------------------------------------------------------------------------
# (3) register banks: bank = reg mod 4, one read per bank per cycle, reuse caches, collector
#
# Filler FFMAs read banks 1, 2, 3 only (R5, R6, R7), so bank 0 is idle around the instructions
# under test, which read R4/R8/R12/R16 (all bank 0) - the conflict-free variants read R10 (bank 2)
# instead of the second bank-0 register.

def _bank_kernel(mid):
    return K.bank_kernel(mid, exit_stall=LAT.exit)


def _cfg(**kv):
    return override(CFG, {k.replace("__", "."): v for k, v in kv.items()})


def test_bank_conflict_costs_one_cycle_without_lookahead():
    # collector_lookahead = 0: every operand read happens in the issue cycle, so the second bank-0
    # read of FFMA R0, R4, R8, R1 waits one cycle; the dispatch and the warp's later issues shift
    # by conflict_penalty
    cfg = _cfg(regfile__collector_lookahead=0)
    pen = cfg.regfile.conflict_penalty
    n_ins = 4 + 1 + 4 + 1
    sm0, free = run(_bank_kernel(["--:-:-:-:1 FFMA R0, R4, R10, R1;"]), cfg=cfg)
    sm1, conf = run(_bank_kernel(["--:-:-:-:1 FFMA R0, R4, R8, R1;"]), cfg=cfg)
    assert free["cycles"] == n_ins  # 10: one per cycle, last issue at n_ins - 1
    assert free["register_bank_conflicts"] == 0
    assert conf["cycles"] == n_ins + pen  # 11
    assert conf["register_bank_conflicts"] == 1 and conf["bank_conflict_cycles"] == pen
    t_conf = first_issue(sm1, 4)
    assert first_issue(sm1, 5) == t_conf + 1 + pen  # the next instruction is pushed back
    # .reuse: the previous instruction keeps R4 in the slot-0 reuse cache, so the conflicting FFMA
    # reads only R8 from bank 0
    mid = ["--:-:-:-:1 FFMA R2, R4{}, R10, R1;", "--:-:-:-:1 FFMA R0, R4, R8, R1;"]
    smr, reuse = run(_bank_kernel([mid[0].format(".reuse"), mid[1]]), cfg=cfg)
    smn, noreuse = run(_bank_kernel([mid[0].format(""), mid[1]]), cfg=cfg)
    assert noreuse["cycles"] == n_ins + 1 + pen  # 12
    assert reuse["cycles"] == n_ins + 1  # 11: conflict removed
    assert reuse["reuse_hits"] == 1 and reuse["register_bank_conflicts"] == 0


@pytest.mark.parametrize("lookahead", [0, 1, 2])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_bank_conflict_run_and_collector_lookahead(m, lookahead):
    # m back-to-back FFMAs (stall 1) each reading two bank-0 registers, bank 0 idle before.
    # The collector books a read in the earliest cycle >= issue - lookahead with the bank free, so
    # the 2m reads fill bank 0 from t0 - L on: the last one lands at t0 - L + 2m - 1 while the last
    # FFMA would dispatch at t0 + m - 1: the run costs max(0, m - L) cycles (penalty 1 per cycle a
    # dispatch waits for its last read). With the default L = 1 a single conflict next to an idle
    # bank is hidden, a second one right behind it is not.
    cfg = _cfg(regfile__collector_lookahead=lookahead, regfile__conflict_penalty=1)
    regs = [(4, 8), (12, 16), (4, 16)]
    mid = [f"--:-:-:-:1 FFMA R{i}, R{a}, R{b}, R1;" for i, (a, b) in enumerate(regs[:m])]
    sm, d = run(_bank_kernel(mid), cfg=cfg)
    base = 4 + m + 4 + 1
    assert d["register_bank_conflicts"] == m
    assert d["bank_conflict_cycles"] == max(0, m - lookahead)
    assert d["cycles"] == base + max(0, m - lookahead)


B0 = "--:-:-:-:1 FFMA R20, R12, R6, R7;"  # reads bank 0 once (R12), no conflict of its own
C1 = "--:-:-:-:1 FFMA R0, R4, R8, R1;"  # two bank-0 reads
C2 = "--:-:-:-:1 FFMA R2, R4, R16, R1;"  # two bank-0 reads


@pytest.mark.parametrize("lookahead", [0, 1, 2])
@pytest.mark.parametrize("case", ["stream_then_conflict", "conflict_stream_conflict",
                                  "conflict_idle_conflict"])
def test_collector_slack_is_used_up_by_a_busy_bank(case, lookahead):
    # The lookahead is L cycles of slack that the collector gains while a bank is idle and keeps
    # while the bank is read once per cycle; each extra read in a cycle uses one up. So:
    #  * B0 x4, C1: the B0 stream reads bank 0 every cycle (booked L cycles early), C1's extra read
    #    costs max(0, 1 - L);
    #  * C1, B0 x3, C2: bank 0 stays saturated from C1 to C2: the 2 extra reads cost max(0, 2 - L);
    #  * C1, FILL x3, C2: bank 0 idle in between, the slack comes back: 2 x max(0, 1 - L).
    mid, cost = {
        "stream_then_conflict": ([B0] * 4 + [C1], max(0, 1 - lookahead)),
        "conflict_stream_conflict": ([C1] + [B0] * 3 + [C2], max(0, 2 - lookahead)),
        "conflict_idle_conflict": ([C1] + [FILL] * 3 + [C2], 2 * max(0, 1 - lookahead)),
    }[case]
    cfg = _cfg(regfile__collector_lookahead=lookahead, regfile__conflict_penalty=1)
    sm, d = run(_bank_kernel(mid), cfg=cfg)
    assert d["cycles"] == 4 + len(mid) + 4 + 1 + cost
    assert d["bank_conflict_cycles"] == cost


def test_reuse_removes_exposed_conflict_default_lookahead():
    # default config (collector_lookahead = 1): two conflicting FFMAs in a row cost 1 cycle (see
    # above); putting R4 in the reuse cache for the second removes its conflict, and the first is
    # hidden by the lookahead: no cost at all
    L = CFG.regfile.collector_lookahead
    assert L == 1
    base = 4 + 2 + 4 + 1
    sm, plain = run(_bank_kernel(["--:-:-:-:1 FFMA R0, R4, R8, R1;",
                                  "--:-:-:-:1 FFMA R2, R4, R16, R1;"]))
    sm, reuse = run(_bank_kernel(["--:-:-:-:1 FFMA R0, R4.reuse, R8, R1;",
                                  "--:-:-:-:1 FFMA R2, R4, R16, R1;"]))
    assert plain["cycles"] == base + (2 - L) * CFG.regfile.conflict_penalty  # 12
    assert plain["register_bank_conflicts"] == 2
    assert reuse["cycles"] == base  # 11
    assert reuse["register_bank_conflicts"] == 1 and reuse["bank_conflict_cycles"] == 0
    assert reuse["reuse_hits"] == 1


def test_reuse_cache_serves_only_its_own_slot():
    # R2 sits in slot 0's reuse cache; the second FFMA names R2 in slots 0 and 1: slot 0 gets it
    # from the cache, slot 1 must read bank 2, where R10 (slot 2) also lives: one conflict. (The
    # register was taken as read once for both slots, although no bank read was made at all.)
    k = kernel(f"""
--:-:-:-:1 FFMA R4, R2.reuse, R5, R7;
--:-:-:-:1 FFMA R8, R2, R2, R10;
{exit_line()}
""")
    sm, d = run(k)
    assert d["reuse_hits"] == 1
    assert d["register_bank_conflicts"] == 1
    # the same register in two slots without reuse is one bank read: no conflict
    sm, d = run(kernel(f"""
--:-:-:-:1 FFMA R8, R2, R2, R11;
{exit_line()}
"""))
    assert d["register_bank_conflicts"] == 0


def test_operand_slots_without_a_reuse_cache():
    # regfile.reuse_slots = 1: only slot 0 has a reuse cache. R4 flagged in slot 0 is served from
    # it; R8 flagged in slot 1 is read from its bank again (bank 0, with R12 of slot 2: a conflict)
    body = ["--:-:-:-:1 FFMA R0, R4.reuse, R8.reuse, R1;", "--:-:-:-:1 FFMA R2, R4, R8, R12;"]
    _, three = run(_bank_kernel(body))
    _, one = run(_bank_kernel(body), cfg=_cfg(regfile__reuse_slots=1))
    assert three["reuse_hits"] == 2 and one["reuse_hits"] == 1
    assert three["register_bank_conflicts"] == 1  # the first FFMA: R4 and R8 on bank 0
    assert one["register_bank_conflicts"] == 2


def test_delayed_conflict_with_memory_operand_read():
    # LDS reads its address register R4 (bank 0) mem_operand_read_shared cycles after issue; an FFMA
    # issued in that cycle that reads bank 0 collides with it (a "delayed" conflict). Without
    # lookahead the FFMA's dispatch waits one cycle.
    cfg = _cfg(regfile__collector_lookahead=0)
    d_read = LAT.mem_operand_read_shared
    pre = ["--:-:-:-:1 LDS R24, [R4];"] + [FILL] * (d_read - 1)
    sm, d = run(kernel("\n".join(pre + ["--:-:-:-:1 FFMA R0, R8, R6, R7;", FILL, exit_line()]),
                       shared=128), cfg=cfg)
    assert first_issue(sm, d_read) == d_read  # the FFMA issues in the LDS's read cycle ...
    assert first_issue(sm, d_read + 1) == d_read + 2  # ... and holds the warp one cycle
    assert d["delayed_bank_conflicts"] == 1 and d["bank_conflict_cycles"] == 1


# ---------------------------------------------------------------------------------------------
# (4), (5) shared memory: LDS latency and bank conflicts (wavefronts)

def _lds_kernel(shift, lds_stall=2):
    # R1 = tid << shift: word stride 2^(shift-2); the dependent FADD waits on the LDS's barrier 2
    return K.lds_kernel(shift, lds_stall, s2r_stall=2, half_stall=LAT.alu_half, exit_stall=LAT.exit)


@pytest.mark.parametrize("cfg", [CFG, override(CFG, {"latency.lds": 30})], ids=["lds24", "lds30"])
def test_lds_latency(cfg):
    sm, d = run(_lds_kernel(2), cfg=cfg)  # stride 1 word: 32 banks, one wavefront
    lat = cfg.latency
    # S2R at 0 (stall 2 so its barrier is visible), SHL waits for it: s2r; LDS after alu_half
    t_lds = lat.s2r + lat.alu_half
    assert first_issue(sm, 2) == t_lds  # 31
    assert first_issue(sm, 3) - t_lds == lat.lds  # 24 (30)
    assert d["cycles"] == t_lds + lat.lds + 2  # FADD, EXIT one cycle later, + 1
    assert d["shared_bank_conflicts"] == 0 and d["shared_requests"] == 1
    assert d["hazards"] == 0


@pytest.mark.parametrize("stride_words", [1, 2, 16, 32])
def test_lds_bank_conflicts(stride_words):
    # lane i reads word i * stride: bank (i * stride) mod 32, so gcd(stride, 32) lanes read distinct
    # words of each bank used: stride 2 puts lanes i and i+16 on one bank (2 wavefronts), stride 32
    # all 32 lanes on bank 0 (32 wavefronts). Each extra wavefront delays the result one cycle.
    ways = math.gcd(stride_words, CFG.shared.banks)
    shift = 2 + stride_words.bit_length() - 1  # byte address = tid << shift
    sm, d = run(_lds_kernel(shift))
    t_lds = LAT.s2r + LAT.alu_half
    assert first_issue(sm, 3) - t_lds == LAT.lds + (ways - 1)  # 24, 25, 39, 55
    assert d["shared_bank_conflicts"] == ways - 1  # 0, 1, 15, 31
    assert d["shared_requests"] == 1


def test_barrier_needs_stall_2():
    # [maxas-cc]: a barrier becomes visible barrier_set_delay (1) cycle after it is set. With
    # stall 1 on the LDS the FADD's wait does not see barrier 2: it issues the next cycle and
    # reads R2 long before the load has written it - a hazard.
    assert LAT.barrier_set_delay == 1
    sm, d = run(_lds_kernel(2, lds_stall=1))
    t_lds = LAT.s2r + LAT.alu_half
    assert first_issue(sm, 3) == t_lds + 1
    assert d["hazards"] == 1


# ---------------------------------------------------------------------------------------------
# (6) texture fetch: L1/texture cache miss -> L2 -> DRAM, then a hit

def _tld_kernel():
    # all 32 lanes fetch texel 0 of texture 0 (one 32-byte sector); the second TLD waits for the
    # first (barrier 1) so it finds the sector in the L1/texture cache
    return K.tld_kernel(LAT.alu, LAT.exit)


def _texture():
    return K.texture()


def test_tld_miss_then_hit():
    # Cold caches. First TLD (issue t0 = 1 + alu): L1 miss; memory_system.read: the L2 server is
    # idle (starts at once), the sector misses in the L2, the DRAM server is idle: ready =
    # start + latency.dram, all counted from the TLD's issue. Second TLD, issued when the first is
    # done: L1 hit, tex_l1_hit after its issue.
    sm, d = run(_tld_kernel(), textures={0: _texture()})
    t0 = 1 + LAT.alu
    assert first_issue(sm, 2) == t0  # 7
    t1 = first_issue(sm, 3)
    assert t1 - t0 == LAT.dram  # 375
    t2 = first_issue(sm, 4)
    assert t2 - t1 == LAT.tex_l1_hit  # 82
    assert d["cycles"] == t0 + LAT.dram + LAT.tex_l1_hit + 2  # 466
    assert d["texture_requests"] == 2
    assert d["texture_hit_rate"] == 0.5  # 1 of 2 sector lookups hit
    assert d["l2_hit_rate"] == 0.0 and d["dram_bytes"] == CFG.l2.sector
    assert d["hazards"] == 0


def test_tld_l2_hit():
    # The sector already sits in the L2 (filled long before the kernel): the first TLD misses in
    # the L1 only and completes latency.l2_hit after its issue.
    tex = _texture()
    ms = MemorySystem(CFG)
    ms.l2.insert(tex.address // CFG.l2.sector, 0)
    sm, d = run(_tld_kernel(), textures={0: tex}, memory_system=ms)
    t0 = 1 + LAT.alu
    assert first_issue(sm, 3) - t0 == LAT.l2_hit  # 207
    assert first_issue(sm, 4) - first_issue(sm, 3) == LAT.tex_l1_hit
    assert d["l2_hit_rate"] == 1.0 and d["dram_bytes"] == 0



def _queue_kernel(n_lds, n_tld=1):
    # n_tld texture fetches (L1 misses, hundreds of cycles), n_lds shared loads (done after
    # ~lds cycles), three 15-cycle FFMAs, then one more texture fetch
    tld = "\n".join(f"--:-:-:-:2 TLD.B.LZ.P R{32 + 4 * i}, R0, R8, 0x0, 1D, 0xf;" for i in range(n_tld))
    lds = "\n".join(f"--:-:-:-:2 LDS R{21 + i}, [R20];" for i in range(n_lds))
    return kernel(f"""
--:-:-:-:1 MOV32I R8, 0x80000000;
--:-:-:-:{s(LAT.alu)} MOV R0, RZ;
{tld}
{lds}
--:-:-:-:f FFMA R1, R2, R3, R4;
--:-:-:-:f FFMA R1, R2, R3, R4;
--:-:-:-:f FFMA R1, R2, R3, R4;
--:-:2:-:2 TLD.B.LZ.P R12, R0, R8, 0x0, 1D, 0xf;
02:-:-:-:1 FADD R3, R12, R12;
{exit_line()}
""", shared=128, regs=96)


@pytest.mark.parametrize("n_lds", [4, 10])
def test_shared_loads_do_not_fill_the_global_queue(n_lds):
    # The per-warp memory queues are separate (shared "about 50", global/texture 7-8 [maxas-cc]),
    # and the shared loads, done long before the first fetch, are no longer outstanding: the last
    # TLD issues right after the FFMAs' stall counts, not when the first TLD completes
    # (10 shared loads + 1 fetch exceed global_queue_depth: counted together they would block)
    sm, d = run(_queue_kernel(n_lds), textures={0: _texture()})
    pc = 2 + 1 + n_lds + 3
    assert first_issue(sm, pc) == first_issue(sm, pc - 1) + 15
    assert d["stall_reasons"]["memory_throttle"] == 0


def test_global_queue_depth_holds_the_next_fetch():
    # global_queue_depth outstanding fetches: the next one waits for the first to complete
    depth = CFG.pipes.global_queue_depth
    sm, d = run(_queue_kernel(0, n_tld=depth), textures={0: _texture()})
    pc = 2 + depth + 3
    assert first_issue(sm, pc) == sm.issue_done[sm.issue_log.index(next(x for x in sm.issue_log if x[2] == 2))]
    assert d["stall_reasons"]["memory_throttle"] > 0

# ---------------------------------------------------------------------------------------------
# (7) BAR.SYNC: the last warp to arrive releases the CTA latency.barrier_sync cycles later

N_CHAIN = 10


def _bar_kernel():
    # warp 0 (tid < 32) branches straight to the barrier; warp 1 runs a dependent chain first
    return K.bar_kernel(N_CHAIN, LAT.alu, 2, LAT.predicate, LAT.branch, LAT.barrier_sync, LAT.exit)


@pytest.mark.parametrize("bar_lat", [LAT.barrier_sync, 20])
def test_bar_sync_waits_for_last_warp(bar_lat):
    cfg = override(CFG, {"latency.barrier_sync": bar_lat})
    sm, d = run(_bar_kernel(), block=64, cfg=cfg)
    bar_pc, after_pc = 3 + N_CHAIN, 4 + N_CHAIN
    # S2R at 0; ISETP when S2R's barrier clears (s2r); BRA predicate cycles later; warp 0 takes
    # it: the target issues max(stall, branch_taken) cycles later; warp 1 falls through after the
    # stall count
    t_bra = LAT.s2r + LAT.predicate  # 38
    start = t_bra + max(LAT.branch, LAT.branch_taken)  # 44
    assert first_issue(sm, bar_pc, warp=0) == start  # warp 0 arrives at 44 and waits
    arrive1 = first_issue(sm, bar_pc, warp=1)
    assert arrive1 == t_bra + LAT.branch + N_CHAIN * LAT.alu  # 103: warp 1 arrives after its chain
    assert first_issue(sm, after_pc, warp=0) == arrive1 + bar_lat  # 108 (123)
    assert first_issue(sm, after_pc, warp=1) == arrive1 + bar_lat
    assert d["cycles"] == arrive1 + bar_lat + 2
    # warp 0 waited at the barrier from the end of its BAR's stall count to the release
    assert d["stall_reasons_per_warp"]["cta0,0.w0"]["barrier_wait"] == \
        (arrive1 + bar_lat) - (start + LAT.barrier_sync)  # 59 (74)


def _guarded_bar_kernel():
    chain = "\n".join([f"--:-:-:-:{s(LAT.alu)} FFMA R4, R5, R6, R4;"] * N_CHAIN)
    # warp 0 (tid < 32) arrives at the guarded barrier; warp 1's guard is false: it goes on
    # through a dependent chain and exits without ever arriving
    return kernel(f"""
--:-:1:-:2 S2R R0, SR_TID.X;
01:-:-:-:{s(LAT.predicate)} ISETP.LT.AND P0, PT, R0, 0x20, PT;
--:-:-:-:{s(LAT.barrier_sync)} @P0 BAR.SYNC 0x0;
{chain}
{exit_line()}
""", bar=1)


def test_guarded_barrier_skipped_by_a_warp():
    # pre-Volta rule (as the functional model runs it): the warp whose guard is false does not
    # arrive, and a warp that exits no longer counts, so warp 0 is released latency.barrier_sync
    # cycles after warp 1's EXIT - not when warp 1 issues its (guard-false) BAR
    sm, d = run(_guarded_bar_kernel(), block=64)
    t_bar = LAT.s2r + LAT.predicate  # both warps issue the BAR here
    assert first_issue(sm, 2, warp=0) == first_issue(sm, 2, warp=1) == t_bar
    assert first_issue(sm, 3, warp=1) == t_bar + LAT.barrier_sync  # warp 1 goes straight on
    t_exit1 = first_issue(sm, 3 + N_CHAIN, warp=1)
    assert t_exit1 == t_bar + LAT.barrier_sync + N_CHAIN * LAT.alu
    assert first_issue(sm, 3, warp=0) == t_exit1 + LAT.barrier_sync
    assert d["stall_reasons_per_warp"]["cta0,0.w1"]["barrier_wait"] == 0


def test_barrier_wait_stays_barrier_wait_when_a_pipe_is_busy_after_release():
    # Warp 0 issues a shift, then reaches BAR.SYNC; warp 1 arrives later after an FFMA chain.
    # With a very slow half-rate pipe, warp 0's shift after the barrier still waits for the pipe
    # after the release: the cycles between its BAR's stall count and the release are barrier
    # wait all the same (they were booked as "dependency" once the pipe was seen busy).
    interval = 30
    cfg = override(CFG, {"pipes.alu_half": 1 / interval})
    chain = "\n".join([f"--:-:-:-:{s(LAT.alu)} FFMA R4, R5, R6, R4;"] * 3)
    k = kernel(f"""
--:-:1:-:2 S2R R0, SR_TID.X;
01:-:-:-:{s(LAT.predicate)} ISETP.LT.AND P0, PT, R0, 0x20, PT;
--:-:-:-:{s(LAT.branch)} @!P0 BRA W1;
--:-:-:-:1 SHL R9, R1, 0x2;
--:-:-:-:{s(LAT.branch)} BRA SYNC;
W1:
{chain}
--:-:-:-:{s(LAT.branch)} BRA SYNC;
SYNC:
--:-:-:-:{s(LAT.barrier_sync)} BAR.SYNC 0x0;
--:-:-:-:1 SHL R10, R1, 0x2;
{exit_line()}
""", bar=1)
    sm, d = run(k, block=64, cfg=cfg)
    bar_pc, shl_pc = 9, 10
    t_bar0 = first_issue(sm, bar_pc, warp=0)
    release = first_issue(sm, bar_pc, warp=1) + cfg.latency.barrier_sync
    t_shl = first_issue(sm, 3, warp=0)
    assert t_bar0 + cfg.latency.barrier_sync < release < t_shl + interval  # the case under test
    assert first_issue(sm, shl_pc, warp=0) == t_shl + interval
    w0 = d["stall_reasons_per_warp"]["cta0,0.w0"]
    assert w0["barrier_wait"] == release - (t_bar0 + cfg.latency.barrier_sync)  # 5
    assert w0["pipe_busy"] >= t_shl + interval - release


# ---------------------------------------------------------------------------------------------
# (8) dual issue: a stall-0 instruction pairs with the next one of the same warp if the two use
# different units

def _pair(first_stall, second):
    return K.pair(first_stall, second, LAT.exit)


def test_dual_issue_ffma_lds():
    lds = "--:-:1:-:2 LDS R6, [R4];"
    sm0, d0 = run(_pair(0, lds))
    sm1, d1 = run(_pair(1, lds))
    assert issues(sm0)[:2] == [(0, 0), (0, 1)]  # FFMA and LDS in cycle 0
    assert d0["dual_issues"] == 1 and d1["dual_issues"] == 0
    assert d0["cycles"] == 0 + 2 + 1  # EXIT 2 (LDS stall) cycles after the pair: 3
    assert d1["cycles"] == d0["cycles"] + 1  # 4


def test_no_dual_issue_of_two_ffma():
    ffma = "--:-:-:-:1 FFMA R6, R1, R2, R3;"
    sm0, d0 = run(_pair(0, ffma))
    sm1, d1 = run(_pair(1, ffma))
    # both FFMAs go to the FP32 pipe: the stall 0 acts as stall 1
    assert [t for t, _ in issues(sm0)] == [0, 1, 2]
    assert d0["dual_issues"] == 0
    assert d0["cycles"] == d1["cycles"] == 3


@pytest.mark.parametrize("second", ["--:-:1:-:2 LDC R6, c[0x0][0x0];", "--:-:1:-:2 MUFU.RCP R6, R7;",
                                    "--:-:1:-:2 I2F.F32.S32 R6, R7;"])
def test_dual_issue_ffma_with_ldc_and_quarter_rate(second):
    # maxas's scheduler pairs an ALU instruction with LDC (its global-memory class) and with the
    # quarter-rate class (maxsim/isa/issue.py)
    sm0, d0 = run(_pair(0, second))
    assert issues(sm0)[:2] == [(0, 0), (0, 1)] and d0["dual_issues"] == 1
    assert d0["cycles"] == 0 + 2 + 1


def test_no_dual_issue_of_ldc_then_ffma():
    k = kernel(f"""
--:-:1:-:0 LDC R6, c[0x0][0x0];
--:-:-:-:1 FFMA R5, R1, R2, R3;
{exit_line()}
""")
    sm, d = run(k)
    assert [t for t, _ in issues(sm)] == [0, 1, 2] and d["dual_issues"] == 0


def test_taken_branch_target_issues_branch_taken_cycles_on():
    # a counted loop written the maxas way: the IADD that advances the counter dual-issues with the
    # BRA and the loop head's ISETP reads it. MOV32I at 1, the first ISETP alu cycles later; each
    # pass: ISETP, predicate cycles to the IADD + BRA, the taken branch's target
    # max(branch, branch_taken) cycles on; the fifth ISETP fails: the BRA falls through, EXIT
    # `branch` cycles on
    k = kernel(f"""
--:-:-:-:1 MOV R1, RZ;
--:-:-:-:{s(LAT.alu)} MOV32I R2, 0x4;
LOOP:
--:-:-:-:{s(LAT.predicate)} ISETP.LT.AND P0, PT, R1, R2, PT;
--:-:-:-:0 @P0 IADD R1, R1, 0x1;
--:-:-:-:{s(LAT.branch)} @P0 BRA LOOP;
{exit_line()}
""")
    sm, d = run(k, hazards="strict")
    step = LAT.predicate + max(LAT.branch, LAT.branch_taken)  # 19
    head = [t for t, pc in issues(sm) if pc == 2]
    assert head == [1 + LAT.alu + i * step for i in range(5)]  # 7, 26, 45, 64, 83
    assert d["dual_issues"] == 5 and d["hazards"] == 0
    assert d["cycles"] == head[-1] + LAT.predicate + LAT.branch + 1  # 102


# ---------------------------------------------------------------------------------------------
# (9) the hazard checker: control codes that let a read happen before the result is written

def _hazard_kernel(stall):
    return kernel(f"""
--:-:-:-:{s(stall)} FFMA R0, R1, R2, R3;
--:-:-:-:{s(LAT.alu)} FFMA R4, R0, R5, R6;
{exit_line()}
""")


def test_hazard_warning_names_both_lines_and_cycle():
    k = _hazard_kernel(1)
    sm, d = run(k)
    assert d["hazards"] == 1
    msg = sm.stats.hazards[0]
    prod, cons = k.instructions[0].where, k.instructions[1].where
    assert msg.startswith(f"{cons}:")  # the consumer's file:line first
    assert f"FFMA at {prod}" in msg  # the producer's line
    assert "at cycle 1" in msg and f"{LAT.alu - 1} cycle(s) before" in msg
    # the model still times it as the control codes say: second FFMA at cycle 1
    assert d["cycles"] == 1 + LAT.alu + 1


def test_hazard_strict_raises():
    with pytest.raises(HazardError, match=r"FFMA reads R0 at cycle 1"):
        run(_hazard_kernel(1), hazards="strict")


def test_no_hazard_with_correct_stall():
    sm, d = run(_hazard_kernel(LAT.alu), hazards="strict")
    assert d["hazards"] == 0


# ---------------------------------------------------------------------------------------------
# (6b) texture throughput: l1tex.units texture units of l1tex.throughput_bytes_per_clk each

def _tld_pair_kernel():
    # lanes fetch texels tid and tid + 32: 32 distinct float4 = 512 bytes = 16 sectors per TLD.
    # Both sets are fetched once and waited for (barriers 1, 2), then fetched again: two L1 hits
    # (pc 6, 7) that issue mem_issue_interval cycles apart and queue on the texture path
    return K.tld_pair_kernel(LAT.alu, LAT.exit)


@pytest.mark.parametrize("units", [1, 2])
def test_texture_path_throughput(units):
    # hand derivation (timing/texture.py, sm.py): a fetch reads its coordinates
    # mem_operand_read_tex cycles after issue, then takes the texture server for
    # 16 sectors x 32 B / (units x throughput) cycles; an L1 hit completes tex_l1_hit cycles after
    # its issue-equivalent start (server start - operand read delay)
    cfg = override(CFG, {"l1tex.units": units})
    sm, d = run(_tld_pair_kernel(), cfg=cfg, textures={0: _texture()})
    rd, bpc = LAT.mem_operand_read_tex, units * CFG.l1tex.throughput_bytes_per_clk
    t6, t7 = first_issue(sm, 6), first_issue(sm, 7)
    assert t7 - t6 == CFG.pipes.mem_issue_interval
    done = {pc: sm.issue_done[i] for i, (_, _, pc) in enumerate(sm.issue_log) if pc in (6, 7)}
    assert done[6] == t6 + LAT.tex_l1_hit
    start7 = math.ceil(max(t7 + rd, t6 + rd + 16 * 32 / bpc))
    assert done[7] == start7 - rd + LAT.tex_l1_hit  # 17 cycles after the first with 2 units, 33 with 1
    assert d["texture_hit_rate"] == 0.5


# ---------------------------------------------------------------------------------------------
# (9) CTA slots: a finished CTA's slots take the next CTA sm.cta_launch_cycles later

@pytest.mark.parametrize("gap", [1, 10])
def test_next_cta_starts_cta_launch_cycles_after_the_last_ends(gap):
    # 32 KB of shared memory per CTA on a 48 KB SM: one CTA resident at a time. The warp retires
    # when its EXIT issues (cycle N_INDEP); the second CTA's first instruction issues gap cycles
    # later
    cfg = override(CFG, {"sm.cta_launch_cycles": gap, "sm.shared_bytes": 49152})
    k = K.independent_ffma(N_INDEP, exit_stall=LAT.exit, shared=32768)
    res, sm = simulate(k, 2, 32, cfg=cfg, log=True)
    firsts = [t for t, lab, pc in sm.issue_log if pc == 0]
    assert sm.max_ctas == 1 and len(firsts) == 2
    assert firsts[1] - firsts[0] == N_INDEP + gap


# ---------------------------------------------------------------------------------------------
# (9b) which ready warp "oldest" means when the greedy warp cannot issue (sm.oldest_warp)

@pytest.mark.parametrize("oldest", ["least_recent", "age"])
@pytest.mark.parametrize("stall,yield_flag", [(2, "-"), (1, "Y")])
def test_oldest_warp_least_recent_or_by_age(oldest, stall, yield_flag):
    # three CTAs of 4 warps: warp 0 of CTA 0, 1 and 2 (A, B, C, launched in that order) share
    # scheduler 0. Each runs n independent FFMAs that let the greedy warp go after every issue
    # (stall 2, or stall 1 with the yield flag), then EXIT.
    # least_recent: A, B, C take turns (A at 0, 3, 6, ...): each EXIT at 3n, 3n + 1, 3n + 2.
    # age: A and B alternate (A at 0, 2, ..., B at 1, 3, ...; one of them is always ready and
    # older than C) and exit at 2n and 2n + 1; C starts at 2n + 2, alone: every `stall` cycles
    # (a yielded warp alone on its scheduler issues again), its EXIT at 2n + 2 + n * stall.
    n = 6
    cfg = override(CFG, {"sm.oldest_warp": oldest})
    k = kernel("\n".join([f"--:-:-:{yield_flag}:{stall} FFMA R{4 + 4 * (i % 4)}, R1, R2, R3;" for i in range(n)]
                         + [exit_line()]))
    res, sm = simulate(k, 3, 128, cfg=cfg, log=True)
    times = {c: [t for t, lab, pc in sm.issue_log if lab == f"cta{c},0.w0"] for c in range(3)}
    if oldest == "least_recent":
        expect = {c: [c + 3 * i for i in range(n + 1)] for c in range(3)}
    else:
        expect = {0: [2 * i for i in range(n + 1)], 1: [1 + 2 * i for i in range(n + 1)],
                  2: [2 * n + 2 + stall * i for i in range(n + 1)]}
    assert times == expect
    assert sm.stats.cycles == max(expect[2]) + 1


# ---------------------------------------------------------------------------------------------
# (12) the quarter-rate xu pipe (MUFU, conversions, POPC, FLO), LDC, SHFL and shared atomics


def test_xu_pipe_rate_and_its_own_pipe():
    # independent POPCs with stall 1 issue every 1/xu cycles (4); an FFMA and a SHL between them
    # go to the other pipes and issue the next cycle
    q = int(round(1 / CFG.pipes.xu))
    body = [f"--:-:-:-:1 POPC R{4 + i}, R1;" for i in range(3)] + [FILL, exit_line()]
    sm, d = run(kernel("\n".join(body)))
    assert [t for t, _ in issues(sm)] == [0, q, 2 * q, 2 * q + 1, 2 * q + 2]
    assert d["stall_reasons"]["pipe_busy"] == 2 * (q - 1)
    body = ["--:-:-:-:1 POPC R4, R1;", FILL, "--:-:-:-:1 SHL R9, R1, 0x2;", exit_line()]
    sm, d = run(kernel("\n".join(body)))
    assert [t for t, _ in issues(sm)][:3] == [0, 1, 2]


@pytest.mark.parametrize("text,lat", [("MUFU.RCP R4, R5", LAT.xu), ("I2F.F32.S32 R4, R5", LAT.xu),
                                      ("POPC R4, R5", LAT.bitcount),
                                      ("SHFL.BFLY PT, R4, R5, 0x1, 0x1f", LAT.lds),
                                      ("LDC R4, c[0x0][0x0]", LAT.ldc)])
def test_variable_latency_results_clear_their_barrier(text, lat):
    # the consumer waits on the producer's write barrier (stall 2: the barrier is visible one
    # cycle after it is set); it issues when the result is there, `lat` cycles after the producer
    body = [f"--:-:1:-:2 {text};", "01:-:-:-:1 FADD R6, R4, R4;", exit_line()]
    sm, d = run(kernel("\n".join(body)))
    assert first_issue(sm, 1) == lat
    assert d["hazards"] == 0


@pytest.mark.parametrize("same_address", [False, True])
def test_shared_atomics_serialise_on_one_address(same_address):
    # 32 lanes add to 32 consecutive words (one wavefront) or all to word 0 (one pass per lane:
    # 31 more wavefronts); the dependent FADD waits on the atomic's barrier
    addr = "[RZ]" if same_address else "[R1]"
    body = ["--:-:1:-:2 S2R R0, SR_TID.X;", f"01:-:-:-:{s(LAT.alu_half)} SHL R1, R0, 0x2;",
            f"--:-:2:-:2 ATOMS.ADD R4, {addr}, R0;", "02:-:-:-:1 FADD R5, R4, R4;", exit_line()]
    sm, d = run(kernel("\n".join(body), shared=128))
    extra = 31 if same_address else 0
    assert first_issue(sm, 3) - first_issue(sm, 2) == LAT.lds + extra
    assert d["shared_bank_conflicts"] == extra and d["shared_requests"] == 1


# ---------------------------------------------------------------------------------------------
# (per instruction) the counters of the source view (maxsim.report.source), stats.per_pc: each is
# kept at the instruction it belongs to; tests/test_core_parity.py also checks every column sums to
# its total in every micro-kernel above


def _at(sm, pc):
    from maxsim.timing.stats import PC_FIELDS
    return dict(zip(PC_FIELDS, sm.stats.per_pc[pc].tolist()))


def test_per_instruction_stalls_and_hit_rates_of_a_texture_miss_then_hit():
    # the TLD kernel of test_tld_miss_then_hit: MOV (pc 1, stall alu), TLD (pc 2, stall 2, sets
    # barrier 1; an L1 miss and an L2 miss), TLD (pc 3, waits on 1; an L1 hit), FADD (pc 4, waits
    # on 2). A warp stalled waiting to issue pc 3 spends 1 cycle on pc 2's stall count, then the
    # DRAM fetch less the 2 cycles of that stall on the dependency; pc 4 likewise the L1 hit.
    sm, d = run(_tld_kernel(), textures={0: _texture()})
    stall = {pc: {r: _at(sm, pc)["stall_" + r] for r in ("stall_count", "dependency")} for pc in range(6)}
    assert stall[2] == {"stall_count": LAT.alu - 1, "dependency": 0}
    assert stall[3] == {"stall_count": 1, "dependency": LAT.dram - 2}  # 1, 373
    assert stall[4] == {"stall_count": 1, "dependency": LAT.tex_l1_hit - 2}  # 1, 80
    first, second = _at(sm, 2), _at(sm, 3)
    assert (first["texture_requests"], first["texture_sectors"], first["texture_hits"]) == (1, 1, 0)
    assert (first["l2_hits"], first["l2_misses"]) == (0, 1)
    assert (second["texture_requests"], second["texture_sectors"], second["texture_hits"]) == (1, 1, 1)
    assert (second["l2_hits"], second["l2_misses"]) == (0, 0)  # an L1 hit never reaches the L2
    assert [_at(sm, pc)["executions"] for pc in range(6)] == [1] * 6


def test_per_instruction_l2_hit_of_a_warm_sector():
    tex = _texture()
    ms = MemorySystem(CFG)
    ms.l2.insert(tex.address // CFG.l2.sector, 0)
    sm, d = run(_tld_kernel(), textures={0: tex}, memory_system=ms)
    assert (_at(sm, 2)["l2_hits"], _at(sm, 2)["l2_misses"]) == (1, 0)


def test_per_instruction_dual_issue_and_bank_conflict():
    # FFMA (stall 0) + LDS issue in one cycle: the LDS is the dual-issued one
    sm, d = run(_pair(0, "--:-:1:-:2 LDS R6, [R4];"))
    assert [_at(sm, pc)["dual_issued"] for pc in range(3)] == [0, 1, 0]
    assert _at(sm, 1)["shared_requests"] == 1 and _at(sm, 1)["shared_wavefronts"] == 1
    # the conflicting FFMA R0, R4, R8, R1 (pc 4; R4 and R8 both in bank 0) without look-ahead
    cfg = _cfg(regfile__collector_lookahead=0)
    sm, d = run(_bank_kernel(["--:-:-:-:1 FFMA R0, R4, R8, R1;"]), cfg=cfg)
    rows = [_at(sm, pc) for pc in range(10)]
    assert [r["bank_conflicts"] for r in rows] == [0] * 4 + [1] + [0] * 5
    assert [r["bank_conflict_cycles"] for r in rows] == [0] * 4 + [cfg.regfile.conflict_penalty] + [0] * 5
    # .reuse on the FFMA before: the conflicting FFMA's R4 comes from the slot-0 reuse cache
    mid = ["--:-:-:-:1 FFMA R2, R4.reuse, R10, R1;", "--:-:-:-:1 FFMA R0, R4, R8, R1;"]
    sm, d = run(_bank_kernel(mid), cfg=cfg)
    assert [_at(sm, pc)["reuse_hits"] for pc in range(11)] == [0] * 5 + [1] + [0] * 5
    assert sum(_at(sm, pc)["bank_conflicts"] for pc in range(11)) == 0


def test_shared_memory_delivers_32_banks_of_4_bytes_a_cycle():
    """Conflict-free LDS.128 from 8 warps: each load is 512 bytes, 4 wavefronts of 32 banks x 4
    bytes, so back to back the SM's shared memory delivers 128 bytes a cycle (the row of `maxsim
    validate` that sets this against [jia18]'s 88% of it)."""
    from maxsim.validate.micro import shared_throughput
    assert shared_throughput(load_config("gm204")) == pytest.approx(128.0)


def test_l2_bandwidth_benchmark_streams_l2_hits_at_the_slices_rate():
    """Every SM streams texels the L2 holds and no L1 can (8 passes over a share larger than its
    L1): no L1 hits, almost every sector an L2 hit, and the bytes per cycle just under the 8
    slices' service rate (gm204.toml l2.bandwidth_bytes_per_clk; the launch and the first fills
    are the rest)."""
    from maxsim.validate.micro import l2_bandwidth
    cfg = load_config("gm204")
    bpc, l2_hits, l1_hits = l2_bandwidth(cfg)
    assert l1_hits == 0 and l2_hits > 0.95
    assert 0.9 * cfg.l2.bandwidth_bytes_per_clk < bpc <= cfg.l2.bandwidth_bytes_per_clk

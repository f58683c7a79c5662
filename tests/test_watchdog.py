"""Kernels that never end are stopped: a loop without effect at once, anything else by the
instruction limit (400,000 warp instructions per warp by default); legitimate long loops are not.

Each message names file, line, CTA and warp. Timings are CPU seconds of this process (the machine
may be shared): the brief's bound is 10 s.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from maxsim.errors import SimulationError
from maxsim.functional import GlobalMemory, launch
from maxsim.functional.watchdog import WARP_INSTRUCTION_BUDGET, instruction_limit, pc_address
from maxsim.sass import parse_text
from sasskit import header

ROOT = Path(__file__).resolve().parents[1]


def _kernel(body, name="spin", regs=8, shared=0, filename="loop.sass"):
    return parse_text(header(name, regs=regs, shared=shared) + body, filename=filename)


def _stopped(k, grid=1, block=32, **kw):
    """Launch ``k``; the SimulationError it must stop with and the CPU seconds it took."""
    t0 = time.process_time()
    with pytest.raises(SimulationError) as e:
        launch(k, grid, block, memory=GlobalMemory(), **kw)
    msg = str(e.value)
    assert "\n" not in msg
    return msg, time.process_time() - t0


def test_pc_addresses_follow_the_maxwell_bundles():
    # a control word, then three instructions, per 32 bytes: 0x08 0x10 0x18 | 0x28 0x30 0x38 | 0x48
    assert [pc_address(i) for i in range(7)] == [0x08, 0x10, 0x18, 0x28, 0x30, 0x38, 0x48]


def test_branch_to_itself_is_stopped_at_once_from_the_command_line(tmp_path):
    """The one-warp `LOOP: BRA LOOP` of a user file: one line naming file, line, CTA, warp, pc."""
    src = tmp_path / "loop.sass"
    src.write_text("--:-:-:-:1      MOV R1, RZ;\nLOOP:\n--:-:-:-:1      BRA LOOP;\n--:-:-:-:1      EXIT;\n")
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "maxsim.cli", "run", str(src)], capture_output=True, text=True,
                       timeout=120, cwd=ROOT, env={**os.environ, "MAXSIM_PROGRESS": "0"})
    wall = time.monotonic() - t0
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == (f"maxsim: error: {src}:3: warp 0 of CTA (0,0,0) loops without effect at pc 0x0010 "
                        f"(BRA LOOP): its registers, predicates and the memory are the same as on its previous "
                        f"pass, so it would never end\n")
    assert wall < 10, wall


def test_loop_that_changes_a_register_forever_is_stopped_by_the_default_limit():
    k = _kernel("--:-:-:-:1      MOV R1, RZ;\nLOOP:\n--:-:-:-:1      IADD R1, R1, 0x1;\n"
                "--:-:-:-:1      BRA LOOP;\n--:-:-:-:1      EXIT;\n")
    msg, cpu = _stopped(k)
    assert "without effect" not in msg
    assert re.match(r"loop\.sass:1[0-9]: kernel ran past the instruction limit of 400000 warp instructions "
                    r"\(400000 per warp x 1 warp\) at pc 0x00(10|18) \((IADD R1, R1, 0x1|BRA LOOP)\)", msg), msg
    assert msg.endswith("(CTA (0,0), warp 0, lane 0)")
    assert cpu < 10, cpu


def test_loop_that_writes_memory_is_not_without_effect():
    """Same registers on every pass, but a store each time: only the limit stops it."""
    k = _kernel("LOOP:\n--:-:-:-:1      STS [RZ], RZ;\n--:-:-:-:1      BRA LOOP;\n--:-:-:-:1      EXIT;\n",
                shared=16)
    msg, cpu = _stopped(k, max_instructions=20_000)
    assert "without effect" not in msg
    assert "instruction limit of 20000 warp instructions (as given)" in msg and "(CTA (0,0), warp 0, lane 0)" in msg


def test_the_default_limit_grows_with_the_launch():
    assert instruction_limit(1) == WARP_INSTRUCTION_BUDGET
    assert instruction_limit(2 * 64) == 128 * WARP_INSTRUCTION_BUDGET
    assert instruction_limit(128, 1000) == 1000


def test_counted_loop_of_100k_iterations_is_not_stopped():
    k = _kernel("--:-:-:-:1      MOV32I R1, 100000;\nLOOP:\n--:-:-:-:1      IADD R1, R1, -0x1;\n"
                "--:-:-:-:d      ISETP.NE.AND P0, PT, R1, RZ, PT;\n--:-:-:-:5  @P0 BRA LOOP;\n"
                "--:-:-:-:1      EXIT;\n")
    res = launch(k, 1, 32)
    assert res.warp_instructions == 1 + 3 * 100_000 + 1


def test_sgemm_at_k_1024_is_not_stopped():
    """The main loop's 128 passes are all different (its pointers and C advance)."""
    from workloads.sgemm.harness import run_sgemm
    r = run_sgemm("sgemm_64", 64, 64, 1024)
    assert r.verified


def test_loop_that_stops_changing_is_caught_when_it_does():
    """A counter runs down to zero, then the loop spins with nothing changing: caught then."""
    k = _kernel("--:-:-:-:1      MOV32I R1, 50;\n--:-:-:-:d      ISETP.NE.AND P0, PT, R1, RZ, PT;\nLOOP:\n"
                "--:-:-:-:1  @P0 IADD R1, R1, -0x1;\n--:-:-:-:d      ISETP.NE.AND P0, PT, R1, RZ, PT;\n"
                "--:-:-:-:5      BRA LOOP;\n--:-:-:-:1      EXIT;\n")
    msg, _ = _stopped(k)
    assert re.match(r"loop\.sass:1[0-9]: warp 0 of CTA \(0,0,0\) loops without effect at pc 0x0030 \(BRA LOOP\)",
                    msg), msg


def test_one_warp_of_one_cta_spinning_is_named():
    """Warp 1 of CTA (1,0) spins; every other warp exits."""
    k = _kernel("--:-:1:-:1      S2R R0, SR_TID.X;\n--:-:2:-:1      S2R R2, SR_CTAID.X;\n"
                "03:-:-:-:d      ISETP.GE.AND P0, PT, R0, 0x20, PT;\n"
                "--:-:-:-:d      ISETP.EQ.AND P0, PT, R2, 0x1, P0;\n"
                "--:-:-:-:5  @P0 BRA SPIN;\n--:-:-:-:5      EXIT;\nSPIN:\n--:-:-:-:5      BRA SPIN;\n")
    msg, _ = _stopped(k, grid=2, block=64)
    assert re.match(r"loop\.sass:\d+: warp 1 of CTA \(1,0,0\) loops without effect at pc 0x0048 \(BRA SPIN\)",
                    msg), msg


def test_warps_in_step_are_counted_in_the_message():
    k = _kernel("LOOP:\n--:-:-:-:1      BRA LOOP;\n--:-:-:-:1      EXIT;\n")
    msg, _ = _stopped(k, grid=(2, 1), block=96)
    assert "warp 0 of CTA (0,0,0) (and 5 other warps in step with it) loops without effect" in msg


def test_cycle_limit_names_the_file(tmp_path, capsys):
    from maxsim.cli import main
    src = tmp_path / "short.sass"
    src.write_text("--:-:-:-:1      MOV R1, RZ;\n--:-:-:-:f      IADD R1, R1, 0x1;\n--:-:-:-:f      IADD R1, R1, 0x1;\n"
                   "--:-:-:-:1      EXIT;\n")
    assert main(["run", str(src), "--max-cycles", "10"]) == 2
    err = capsys.readouterr().err
    assert err == f"maxsim: error: {src}: kernel kernel ran past the cycle limit of 10 cycles on SM 0 " \
                  f"(--max-cycles N sets it)\n"
    assert main(["run", str(src)]) == 0  # the default limit (100,000 + 2,000 per instruction) is far away
    assert "cycles" in capsys.readouterr().out


def test_watchdog_leaves_results_alone():
    """A loop with effect runs to its end with the watchdog on: each thread's sum as numpy's."""
    k = parse_text(header("sums", regs=8, nparams=1) +
                   "--:-:1:-:1      S2R R0, SR_TID.X;\n01:-:-:-:1      MOV R1, RZ;\n--:-:-:-:1      MOV32I R2, 1000;\n"
                   "LOOP:\n--:-:-:-:1      IADD R1, R1, R0;\n--:-:-:-:1      IADD R2, R2, -0x1;\n"
                   "--:-:-:-:d      ISETP.NE.AND P0, PT, R2, RZ, PT;\n--:-:-:-:5  @P0 BRA LOOP;\n"
                   "--:-:-:-:6      SHL R3, R0, 0x2;\n--:-:-:-:6      IADD R3, R3, c[0x0][0x140];\n"
                   "--:-:-:-:1      STG [R3], R1;\n--:-:-:-:1      EXIT;\n", filename="sums.sass")
    mem = GlobalMemory()
    out = mem.alloc(4 * 64)
    res = launch(k, 1, 64, [out], mem)
    assert res.warp_instructions == 2 * (3 + 4 * 1000 + 4)
    assert np.array_equal(mem.read(out, 64, np.uint32), np.arange(64, dtype=np.uint32) * 1000)


def test_returns_to_different_callers_are_not_a_loop():
    """A subroutine without effect called from two places: its RET jumps back twice with the same
    registers, but to different places."""
    k = _kernel("--:-:-:-:5      CAL SUB;\n--:-:-:-:5      CAL SUB;\n--:-:-:-:5      CAL SUB;\n"
                "--:-:-:-:5      EXIT;\nSUB:\n--:-:-:-:5      RET;\n")
    res = launch(k, 1, 32)
    assert res.opcode_counts["RET"] == 3 and res.warp_instructions == 7


def test_the_stores_of_each_kernel_are_its_own_when_found_once_per_kernel():
    """The pcs of a kernel's stores are found once per kernel and kept read-only: a kernel whose loop
    stores is not stopped, one of the same length whose loop does not store is, run one after the
    other and again."""
    from maxsim.functional.watchdog import _store_pcs
    stores = _kernel("LOOP:\n--:-:-:-:1      STS [RZ], RZ;\n--:-:-:-:1      BRA LOOP;\n--:-:-:-:1      EXIT;\n",
                     shared=4)
    spins = _kernel("LOOP:\n--:-:-:-:1      MOV R1, RZ;\n--:-:-:-:1      BRA LOOP;\n--:-:-:-:1      EXIT;\n")
    assert _store_pcs(stores.instructions).tolist() == [0] and _store_pcs(spins.instructions).tolist() == []
    assert not _store_pcs(stores.instructions).flags.writeable
    for _ in range(2):
        msg, _ = _stopped(stores, max_instructions=2000)
        assert "without effect" not in msg and "instruction limit" in msg
        msg, _ = _stopped(spins)
        assert "without effect" in msg

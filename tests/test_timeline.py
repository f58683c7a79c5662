"""Timelines of the timed SM (maxsim.report.timeline, `maxsim run --trace`) and the progress reporter
(maxsim.report.progress, `maxsim run --quiet`)."""

from __future__ import annotations

import io
import json
from collections import Counter, defaultdict

import pytest
from sasskit import kernel, sass

from maxsim.arch.config import load_config
from maxsim.cli import main
from maxsim.report.progress import Progress
from maxsim.report.timeline import Timeline, TimelineError, parse_window, write_trace
from maxsim.timing.run import simulate
from maxsim.timing.stats import STALL_REASONS
from workloads.sgemm.harness import run_workload

CFG = load_config()
LAT = CFG.latency


def _exit():
    return f"--:-:-:-:{LAT.exit:x} EXIT;"


def _chain(n):
    """n dependent FFMAs (stall = ALU latency), then EXIT."""
    return [f"--:-:-:-:{LAT.alu:x} FFMA R0, R1, R2, R0;"] * n + [_exit()]


def _load(path):
    with open(path) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def sgemm_sm():
    """The timed SM of a small sgemm_64 run (one wave of 8 CTAs, 8 loop iterations), logged."""
    box = {}
    run_workload("sgemm_64", m=256, n=128, k=64, timeline=lambda sm: box.setdefault("sm", sm))
    return box["sm"]


@pytest.fixture(scope="module")
def sgemm_trace(sgemm_sm, tmp_path_factory):
    path = tmp_path_factory.mktemp("trace") / "sgemm.json"
    summary = write_trace(sgemm_sm, str(path))
    return summary, _load(path)


def _issue_slices(trace):
    return [e for e in trace["traceEvents"] if e.get("cat") == "issue"]


def _stall_slices(trace):
    return [e for e in trace["traceEvents"] if e.get("cat") == "stall"]


# ---------------------------------------------------------------------------------------------
# the file

def test_trace_is_chrome_json_with_metadata(sgemm_sm, sgemm_trace):
    summary, trace = sgemm_trace
    assert trace["displayTimeUnit"] == "ns"
    other = trace["otherData"]
    assert "1 SM cycle" in other["time_unit"]
    assert other["window_cycles"] == [0, summary.end] and summary.end == sgemm_sm.stats.cycles
    assert other["events"] == len(trace["traceEvents"]) == summary.events
    assert not summary.cut
    events = trace["traceEvents"]
    assert {e["ph"] for e in events} == {"M", "X", "C"}
    procs = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    for s in range(CFG.sm.schedulers):
        assert procs[s] == f"scheduler {s}"
    assert procs[CFG.sm.schedulers] == "SM 0 counters"
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    # one track per warp slot, under its scheduler, named by the warp
    assert len(threads) == len(sgemm_sm.all_warps) == 16
    for w in sgemm_sm.all_warps:
        assert threads[(w.sched.index, w.slot)] == w.label
    for e in events:
        if e["ph"] in "XC":
            assert isinstance(e["ts"], int) and e["ts"] >= 0
        if e["ph"] == "X":
            assert isinstance(e["dur"], int) and e["dur"] >= 1


def test_issue_slices_match_the_issue_log(sgemm_sm, sgemm_trace):
    _, trace = sgemm_trace
    where = {w.label: (w.sched.index, w.slot) for w in sgemm_sm.all_warps}
    per_track = Counter((e["pid"], e["tid"]) for e in _issue_slices(trace))
    want = Counter(where[label] for _, label, _ in sgemm_sm.issue_log)
    assert per_track == want
    assert sum(per_track.values()) == sgemm_sm.stats.warp_instructions
    instrs = sgemm_sm.kernel.instructions
    for e, (t, label, pc) in zip(_issue_slices(trace), sgemm_sm.issue_log):
        assert (e["ts"], e["args"]["warp"], e["args"]["pc"]) == (t, label, pc)
        assert e["name"] == instrs[pc].full_opcode and e["dur"] == 1
        assert e["args"]["line"] == instrs[pc].where
        assert instrs[pc].full_opcode in e["args"]["instruction"]
    assert sum(e["args"]["dual_issued"] for e in _issue_slices(trace)) == sgemm_sm.stats.dual_issues


def test_stall_slices_are_the_sms_stall_attribution(sgemm_sm, sgemm_trace):
    _, trace = sgemm_trace
    stalls = _stall_slices(trace)
    assert stalls
    assert {e["name"] for e in stalls} <= set(STALL_REASONS)
    total = Counter()
    for e in stalls:
        total[e["name"]] += e["dur"]
    assert {r: total[r] for r in STALL_REASONS} == sgemm_sm.stats.stall_reasons
    # per track, stall and issue slices never overlap (a dual-issued pair shares its cycle)
    spans = defaultdict(list)
    for e in _issue_slices(trace) + stalls:
        spans[(e["pid"], e["tid"])].append((e["ts"], e["ts"] + e["dur"]))
    for track in spans.values():
        track = sorted(set(track))
        for (a0, a1), (b0, b1) in zip(track, track[1:]):
            assert a1 <= b0


def test_counters(sgemm_sm, sgemm_trace):
    _, trace = sgemm_trace
    ipc = [e for e in trace["traceEvents"] if e["name"] == "IPC"]
    assert [e["ts"] for e in ipc] == list(range(0, sgemm_sm.stats.cycles, 32))
    issued = sum(e["args"]["IPC"] * (min(e["ts"] + 32, sgemm_sm.stats.cycles) - e["ts"]) for e in ipc)
    assert issued == pytest.approx(sgemm_sm.stats.warp_instructions, rel=1e-4)
    mem = [e for e in trace["traceEvents"] if e["name"] == "memory requests in flight"]
    assert max(e["args"]["shared"] for e in mem) > 0 and max(e["args"]["texture/global"] for e in mem) > 0
    assert all(min(e["args"].values()) >= 0 for e in mem)
    assert mem[-1]["args"] == {"shared": 0, "texture/global": 0}


def test_window_keeps_only_its_cycles(sgemm_sm, tmp_path):
    # one main-loop iteration of warp 0: between two of its backward branches
    bt = sgemm_sm.all_warps[0].branch_times
    start, end = bt[2], bt[3]
    path = tmp_path / "win.json"
    summary = write_trace(sgemm_sm, str(path), f"{start}:{end}")
    trace = _load(path)
    assert (summary.start, summary.end, summary.cut) == (start, end, False)
    assert trace["otherData"]["window_cycles"] == [start, end]
    timed = [e for e in trace["traceEvents"] if e["ph"] in "XC"]
    assert all(start <= e["ts"] < end for e in timed)
    assert all(e["ts"] + e["dur"] <= end for e in timed if e["ph"] == "X")
    where = {w.label: (w.sched.index, w.slot) for w in sgemm_sm.all_warps}
    want = Counter(where[label] for t, label, _ in sgemm_sm.issue_log if start <= t < end)
    assert Counter((e["pid"], e["tid"]) for e in _issue_slices(trace)) == want
    whole = Timeline(sgemm_sm)
    assert len(trace["traceEvents"]) <= whole.count(start, end) + len(sgemm_sm.all_warps)
    assert len(trace["traceEvents"]) < 0.2 * sum(1 for _ in whole.events(0, sgemm_sm.stats.cycles))


def test_event_cap_cuts_the_run_short(sgemm_sm, tmp_path):
    path = tmp_path / "cap.json"
    summary = write_trace(sgemm_sm, str(path), max_events=5000)
    trace = _load(path)
    assert summary.cut and summary.end < sgemm_sm.stats.cycles
    assert summary.wanted_events > 5000
    assert len(trace["traceEvents"]) <= 5000 + len(sgemm_sm.all_warps)
    assert all(e["ts"] < summary.end for e in trace["traceEvents"] if e["ph"] != "M")
    assert "--trace-window" in summary.message()


def test_parse_window():
    assert parse_window("100:200") == (100, 200)
    assert parse_window(":200") == (0, 200)
    assert parse_window("100:") == (100, None)
    assert parse_window("0x10:0x20") == (16, 32)
    for bad in ("100", "a:b", "200:100", "5:5", "-1:5"):
        with pytest.raises(TimelineError):
            parse_window(bad)


def test_needs_the_issue_log(tmp_path):
    _, sm = simulate(kernel(*_chain(2)), 1, 32, cfg=CFG)
    with pytest.raises(TimelineError, match="log=True"):
        write_trace(sm, str(tmp_path / "x.json"))


# ---------------------------------------------------------------------------------------------
# micro-kernels: slice timestamps are the known issue cycles

def test_ffma_chain_slices_at_known_cycles(tmp_path):
    n = 6
    _, sm = simulate(kernel(*_chain(n)), 1, 32, cfg=CFG, log=True)
    write_trace(sm, str(tmp_path / "chain.json"))
    trace = _load(tmp_path / "chain.json")
    a = LAT.alu
    issues = _issue_slices(trace)
    assert [(e["name"], e["ts"]) for e in issues] == [("FFMA", i * a) for i in range(n)] + [("EXIT", n * a)]
    assert [e["args"]["pc"] for e in issues] == list(range(n + 1))
    assert [e["args"]["completes"] for e in issues[:n]] == [i * a + a for i in range(n)]
    # between two issues the warp waits out the stall count: cycles [i*a + 1, (i+1)*a)
    stalls = sorted((e["ts"], e["dur"], e["name"]) for e in _stall_slices(trace))
    assert stalls == [(i * a + 1, a - 1, "stall_count") for i in range(n)]
    assert {e["pid"] for e in issues} == {0} and {e["tid"] for e in issues} == {0}


def test_dual_issued_slice(tmp_path):
    k = kernel("--:-:-:-:0 FFMA R5, R1, R2, R3;", "--:-:1:-:2 LDS R6, [R4];", _exit(), shared=128)
    _, sm = simulate(k, 1, 32, cfg=CFG, log=True)
    write_trace(sm, str(tmp_path / "dual.json"))
    issues = _issue_slices(_load(tmp_path / "dual.json"))
    assert [(e["name"], e["ts"], e["args"]["dual_issued"]) for e in issues] == \
        [("FFMA", 0, False), ("LDS", 0, True), ("EXIT", 2, False)]


def test_logging_does_not_change_the_run():
    k = kernel(*_chain(4))
    _, a = simulate(k, 2, 64, cfg=CFG)
    _, b = simulate(k, 2, 64, cfg=CFG, log=True)
    assert a.stats.to_dict()["cycles"] == b.stats.to_dict()["cycles"]
    assert a.stats.stall_reasons == b.stats.stall_reasons
    assert a.issue_log is None and a.stall_log is None and a.issue_done is None


# ---------------------------------------------------------------------------------------------
# the command line

@pytest.fixture()
def chain_file(tmp_path):
    path = tmp_path / "chain.sass"
    path.write_text(sass(*_chain(4), name="chain"))
    return path


def test_cli_trace(chain_file, tmp_path, capsys):
    out = tmp_path / "t.json"
    assert main(["run", str(chain_file), "--block", "64", "--trace", str(out), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert err == ""  # --quiet: no progress and no trace note (nothing was cut)
    trace = _load(out)
    assert len(_issue_slices(trace)) == 2 * 5
    assert main(["run", str(chain_file), "--trace", str(out), "--trace-window", "6:13"]) == 0
    err = capsys.readouterr().err
    assert "for cycles [6, 13)" in err and "ui.perfetto.dev" in err
    assert [e["ts"] for e in _issue_slices(_load(out))] == [6, 12]


@pytest.mark.parametrize("args, msg", [
    (["--trace-window", "1:2"], "--trace-window needs --trace"),
    (["--trace", "{tmp}/t.json", "--functional"], "timing run"),
    (["--trace", "{tmp}/no/such/t.json"], "does not exist"),
    (["--trace", "{tmp}/t.json", "--trace-window", "9:3"], "START < END"),
    (["--trace", "{tmp}/t.json", "--trace-window", "100000:"], "after the run"),
])
def test_cli_trace_errors(chain_file, tmp_path, capsys, args, msg):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    assert main(["run", str(chain_file)] + args) == 2
    err = capsys.readouterr().err
    assert err.startswith("maxsim: error:") and msg in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------
# progress

class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_progress_draws_when_forced():
    buf = io.StringIO()
    p = Progress(buf, force=True)
    p(5, 10, "timing", "warp instructions")
    p(10, 10, "timing", "warp instructions")
    p.close()
    text = buf.getvalue()
    assert text.startswith("\rtiming") and "50%" in text and "100%" in text and "10/10 warp instructions" in text
    assert text.endswith("\n") and text.count("\n") == 1


def test_progress_silent_when_quiet_or_not_a_terminal(monkeypatch):
    monkeypatch.delenv("MAXSIM_PROGRESS", raising=False)
    for p in (Progress(io.StringIO(), force=True, quiet=True), Progress(io.StringIO())):
        p(1, 2, "x")
        p(2, 2, "x")
        p.close()
        assert p.stream.getvalue() == ""
    monkeypatch.setenv("MAXSIM_PROGRESS", "1")
    p = Progress(io.StringIO())
    p(1, 2, "x")
    assert "50%" in p.stream.getvalue()


def test_progress_rate_limited_and_one_line_per_phase():
    clock = _Clock()
    buf = io.StringIO()
    p = Progress(buf, force=True, rate=10, clock=clock)
    for i in range(100):  # 100 calls within 50 ms: the first is drawn
        clock.now = i * 0.0005
        p(i, 1000, "functional run", "CTAs")
    assert buf.getvalue().count("\r") == 1
    clock.now = 0.2
    p(150, 1000, "functional run", "CTAs")
    assert buf.getvalue().count("\r") == 2
    p(1000, 1000, "functional run", "CTAs")  # the last state is always drawn, and ends the line
    p(1000, 1000, "functional run", "CTAs")  # ... once
    p(1, None, "timing", "warp instructions")  # a new phase: a new line, no total
    p.close()
    lines = buf.getvalue().split("\n")
    assert len(lines) == 3 and lines[-1] == ""
    assert "1,000/1,000 CTAs" in lines[0] and lines[1].startswith("\rtiming  1 warp instructions")


def test_progress_callbacks_through_the_runs():
    calls = []
    out = run_workload("sgemm_64", m=128, n=128, k=16, progress=lambda *a: calls.append(a))
    phases = [c[2] for c in calls]
    assert phases[0] == "functional run" and phases[-1] == "timing"
    # one functional run: the timed SM times that run's trace (no second, traced run of its CTAs)
    assert set(phases) == {"functional run", "timing"}
    for what in set(phases):
        mine = [c for c in calls if c[2] == what]
        assert [c[0] for c in mine] == sorted(c[0] for c in mine)  # done only grows
        assert mine[-1][0] == mine[-1][1]  # and ends at the total
    assert calls[-1][:2] == (out["sm_warp_instructions"], out["sm_warp_instructions"])
    assert [c for c in calls if c[2] == "functional run"][-1][:2] == (4, 4)  # CTAs
    # the run is the same with or without a progress callback
    assert out["sm_cycles"] == run_workload("sgemm_64", m=128, n=128, k=16)["sm_cycles"]


def test_cli_progress_forced_and_quiet(chain_file, capsys, monkeypatch):
    monkeypatch.setenv("MAXSIM_PROGRESS", "1")
    assert main(["run", str(chain_file)]) == 0
    err = capsys.readouterr().err
    assert "\rtiming" in err and "100%" in err
    assert main(["run", str(chain_file), "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["run", str(chain_file), "--functional"]) == 0
    assert "\rfunctional run" in capsys.readouterr().err

"""Sweeps on a real Dask cluster: a `dask scheduler` and `dask worker` processes on 127.0.0.1 (on
free ports), as a user would start them on other machines. The sweep through them gives the
numbers of a run in this process; a worker killed in the middle of a sweep loses no point; a sweep
interrupted with Ctrl-C (SIGINT) and resumed ends with every point once; a scheduler nobody
listens on is one line and exit status 2 within 10 s. Small sizes keep each sweep to seconds."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from maxsim.cli import main

# `dask scheduler`, `dask worker` and `maxsim` of this very environment (wherever pip put the scripts)
DASK = [sys.executable, "-m", "dask"]
MAXSIM = [sys.executable, "-m", "maxsim.cli"]

# figures that measure the simulator's own wall time, not the GPU: they differ from run to run
WALL_TIME = ("sim_seconds", "warp_instructions_per_second")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_worker(address, *more):
    return subprocess.Popen([*DASK, "worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                             "--host", "127.0.0.1", "--memory-limit", "0", *more],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def _wait_for_workers(address, n, timeout=90):
    from distributed import Client
    with Client(address, timeout=30, set_as_default=False) as c:
        c.wait_for_workers(n, timeout=timeout)


@pytest.fixture(scope="module")
def cluster():
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [subprocess.Popen([*DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)]
    try:
        procs += [_start_worker(address), _start_worker(address)]
        _wait_for_workers(address, 2)
        yield address, procs
    finally:
        for p in reversed(procs):  # workers first, then the scheduler; a slow exit is killed
            if p.poll() is None:
                p.terminate()
            try:
                p.wait(timeout=3)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)


def _spec(tmp_path, latencies, n=256):
    spec = tmp_path / "spec.toml"
    values = ", ".join(f"[{a}, {b}]" for a, b in latencies)
    spec.write_text(f'config = "gtx980_oc"\n[grid]\n"latency.l2_hit,latency.dram" = [{values}]\n'
                    f'workload = ["sgemm_64"]\nn = [{n}]\n')
    return spec


def _rows(base):
    return pq.read_table(f"{base}.parquet").to_pylist()


def _deterministic(row):
    return {k: v for k, v in row.items() if k not in WALL_TIME}


def test_a_sweep_on_the_cluster_gives_the_local_numbers(cluster, tmp_path, capsys):
    address, _ = cluster
    spec = _spec(tmp_path, [(207, 375), (400, 700)])
    assert main(["sweep", str(spec), "--scheduler", address, "--no-cache", "--quiet", "--table",
                 str(tmp_path / "remote")]) == 0
    assert f"2 computed on the Dask cluster at {address}" in capsys.readouterr().out
    assert main(["sweep", str(spec), "--jobs", "1", "--no-cache", "--quiet", "--table", str(tmp_path / "local")]) == 0
    remote, local = _rows(tmp_path / "remote"), _rows(tmp_path / "local")
    assert [_deterministic(r) for r in remote] == [_deterministic(r) for r in local]
    assert remote[0]["gflops"] != remote[1]["gflops"]


def test_a_worker_killed_in_the_middle_loses_nothing(cluster, tmp_path):
    """A third worker joins; once the first point is back, and while it runs a point, it is killed
    (SIGKILL) with the tasks it holds; the scheduler gives them to the others and the sweep ends
    with every row once."""
    from maxsim.engine import Engine
    from workloads.sweep import load_spec, sweep
    address, _ = cluster
    victim = _start_worker(address, "--name", "victim")
    try:
        _wait_for_workers(address, 3)
        spec = load_spec(_spec(tmp_path, [(207 + 10 * i, 375) for i in range(6)], n=384))
        killed = []

        def progress(done, total, *_):
            if done >= 1 and not killed:
                # kill it while the scheduler has given it a point to run (not between two)
                client = engine.client()
                mine = [a for a, w in client.scheduler_info()["workers"].items() if w.get("name") == "victim"]
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and not client.processing(workers=mine).get(mine[0]):
                    time.sleep(0.01)
                held = len(client.processing(workers=mine).get(mine[0], ()))
                victim.kill()
                victim.wait(timeout=10)
                killed.append(held)

        with Engine(scheduler=address) as engine:
            rows, counts = sweep(spec, str(tmp_path / "t"), engine, progress=progress)
    finally:
        if victim.poll() is None:
            victim.kill()
    assert len(killed) == 1 and killed[0] >= 1, killed  # it died holding at least one point
    assert counts["computed"] == 6
    table = _rows(tmp_path / "t")
    assert len(table) == 6 and sorted(r["point"] for r in table) == sorted(p.id for p in spec.points)
    assert [r["latency.l2_hit"] for r in table] == [207 + 10 * i for i in range(6)]


def test_ctrl_c_then_resume_gives_every_row_once(cluster, tmp_path):
    address, _ = cluster
    # 16 points: the table is first written a second after the first point completes
    # (sweep.SAVE_EVERY_S), and with 6 points the sweep could end before the interrupt arrived
    # (then a Ctrl-C during the interpreter's exit kills it silently: status -2, nothing on stderr)
    n_points = 16
    spec = _spec(tmp_path, [(207 + 10 * i, 375) for i in range(n_points)], n=384)
    base = tmp_path / "t"
    cmd = [*MAXSIM, "sweep", str(spec), "--scheduler", address, "--no-cache", "--table", str(base)]
    env = dict(os.environ, MAXSIM_PROGRESS="0")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while not Path(f"{base}.parquet").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, "the sweep ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "maxsim: interrupted" and "Traceback" not in err
    done = _rows(base)
    assert 1 <= len(done) < n_points
    resumed = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, env=env, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{len(done)} already in the table" in resumed.stdout
    rows = _rows(base)
    assert len(rows) == n_points and len({r["point"] for r in rows}) == n_points
    assert [r["latency.l2_hit"] for r in rows] == [207 + 10 * i for i in range(n_points)]
    kept = {r["point"]: r for r in rows}
    for r in done:  # the rows from before the interruption are kept as they were
        assert kept[r["point"]]["sim_seconds"] == r["sim_seconds"]


def test_a_scheduler_nobody_listens_on_is_one_line_and_exit_2(tmp_path):
    spec = _spec(tmp_path, [(207, 375)])
    address = f"tcp://127.0.0.1:{_free_port()}"
    start = time.monotonic()
    r = subprocess.run([*MAXSIM, "sweep", str(spec), "--scheduler", address, "--no-cache",
                        "--table", str(tmp_path / "t")], capture_output=True, text=True, timeout=60)
    took = time.monotonic() - start
    assert r.returncode == 2 and took < 10, (r.returncode, took)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"maxsim: error: cannot reach the Dask scheduler at {address}")
    # the same address through the environment variable, as compare and validate read it too
    from maxsim.engine import Engine
    os.environ["MAXSIM_SCHEDULER"] = address
    try:
        assert Engine().scheduler == address and Engine(scheduler="tcp://other:1").scheduler == "tcp://other:1"
    finally:
        del os.environ["MAXSIM_SCHEDULER"]

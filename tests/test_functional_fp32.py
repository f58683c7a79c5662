"""The compiled fp32 table (maxsim.functional.fp32): its loops per opcode against its lane-by-lane
path and numpy."""

import numpy as np

from maxsim.functional import alu, fp32


def test_unmasked_rows_equal_the_lane_by_lane_path_and_numpy():
    rng = np.random.default_rng(11)
    lanes = 50
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, 1.0], dtype=np.float32)
    for trial in range(200):
        fr = (rng.standard_normal((6, lanes)) * 10.0 ** rng.integers(-3, 4)).astype(np.float32)
        fr[rng.random((6, lanes)) < 0.1] = rng.choice(special)
        consts = rng.standard_normal(3).astype(np.float32)
        rows = []
        for _ in range(int(rng.integers(1, 6))):
            op = int(rng.integers(0, 3))
            src = [int(rng.integers(0, 6)) if rng.random() < 0.7 else -1 - int(rng.integers(0, 3)) for _ in range(3)]
            rows.append([op, int(rng.integers(0, 6))] + src + [0])
        table = np.array(rows, dtype=np.int64)
        fast, slow, want = fr.copy(), fr.copy(), fr.copy()
        with np.errstate(all="ignore"):
            fp32.run(fast, table, consts, np.zeros(1, bool), False)
            fp32.run(slow, table, consts, np.ones(lanes, bool), True)
            for op, d, a, b, c, _ in rows:
                x, y, z = (want[s] if s >= 0 else consts[-1 - s] for s in (a, b, c))
                want[d] = alu.fma32(x, y, z) if op == fp32.FFMA else (x * y if op == fp32.FMUL else x + y)
        assert np.array_equal(fast.view(np.uint32), slow.view(np.uint32)), trial
        assert np.array_equal(fast.view(np.uint32), want.view(np.uint32)), trial

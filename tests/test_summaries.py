"""The memory-access summaries the trace records (maxsim.timing.summaries), against numpy."""

import numpy as np

from maxsim.timing.summaries import sectors


def _reference(addr, active, nbytes, sector):
    """Each warp's sectors by numpy: every byte a lane touches, its sector, the distinct ones."""
    per = max(1, -(-nbytes // sector))
    out = []
    for a, act in zip(addr.astype(np.int64), active):
        firsts = a[act] // sector
        lasts = np.minimum((a[act] + nbytes - 1) // sector, firsts + per - 1)
        spans = [np.arange(f, l + 1) for f, l in zip(firsts, lasts)]
        out.append(np.unique(np.concatenate(spans)) * sector if spans else np.zeros(0, np.int64))
    return out


def test_sectors_match_numpy_in_any_lane_order():
    rng = np.random.default_rng(7)
    for trial in range(400):
        nw = int(rng.integers(1, 9))
        nbytes = int(rng.choice([1, 2, 4, 8, 16, 32, 64, 128]))
        sector = int(rng.choice([32, 64, 24]))  # (24: a size that is no power of two)
        addr = rng.integers(0, 4000, size=(nw, 32)).astype(rng.choice([np.uint32, np.int64]))
        if trial % 2:
            addr = np.sort(addr, axis=1)  # lanes in address order (the compiled fast path)
        active = rng.random((nw, 32)) < rng.random()
        got = sectors(addr, active, nbytes, sector)
        want = _reference(addr, active, nbytes, sector)
        assert len(got) == nw
        for w in range(nw):
            assert got[w].tolist() == want[w].tolist(), (trial, w, nbytes, sector)


def test_coalesced_and_strided_warps():
    lanes = np.arange(32)
    addr = np.stack([4 * lanes + 4096, 4096 * lanes + 4096, 4 * lanes[::-1] + 4096]).astype(np.uint32)
    got = sectors(addr, np.ones(addr.shape, bool), 4)
    assert got[0].tolist() == [4096, 4128, 4160, 4192]  # 128 contiguous bytes: 4 sectors
    assert got[1].tolist() == (4096 * lanes + 4096).tolist()  # one sector a lane
    assert got[2].tolist() == got[0].tolist()  # the same bytes, lanes in reverse order

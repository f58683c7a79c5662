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


def test_compiled_wavefronts_match_the_numpy_specification():
    """timing.shared_memory.wavefronts (compiled, warps with the same request counted once) gives
    warp_wavefronts' counts: random requests, repeated ones (every few warps, as the warps of one
    slot of each CTA make), lanes off, and whole warps off."""
    from maxsim.timing.shared_memory import warp_wavefronts, wavefronts
    rng = np.random.default_rng(11)
    for trial in range(300):
        nbytes = int(rng.choice([4, 8, 16]))
        banks, width = [(32, 4), (16, 4), (32, 8)][trial % 3]
        distinct = int(rng.integers(1, 12))
        spread = int(rng.choice([64, 1024, 48 * 1024]))
        base = rng.integers(0, spread, size=(distinct, 32)) // nbytes * nbytes
        if trial % 4 == 0:
            base[:, :16] = base[:, :1] + 4 * np.arange(16)  # half the lanes in order, half anywhere
        pick = rng.integers(0, distinct, size=int(rng.integers(1, 70)))
        if trial % 5 == 0:
            pick = np.tile(np.arange(distinct), 6)  # every CTA's warps make the same requests in turn
        addr = base[pick].astype(rng.choice([np.uint32, np.int64]))
        on = rng.random((distinct, 32)) < max(0.05, rng.random())
        if trial % 3 == 0:
            on[:] = True
        active = on[pick].copy()
        if trial % 7 == 0:
            active[::3] = False  # whole warps off
        got = wavefronts(addr, active, nbytes, banks, width)
        want = warp_wavefronts(addr, active, nbytes, banks, width)
        assert got.dtype == np.int64 and got.tolist() == want.tolist(), (trial, nbytes, banks, width)


def test_compiled_wavefronts_of_known_requests():
    from maxsim.timing.shared_memory import wavefronts
    lanes = np.arange(32)
    addr = np.stack([4 * lanes,                 # one word a bank: 1
                     np.zeros(32, np.int64),    # one word for all (broadcast): 1
                     128 * lanes,               # 32 words in bank 0: 32
                     8 * lanes,                 # two words in each even bank: 2
                     16 * (lanes // 2)])        # 16-byte lanes in pairs (see below)
    act = np.ones(addr.shape, bool)
    assert wavefronts(addr[:4], act[:4], 4).tolist() == [1, 1, 32, 2]
    # 16 distinct float4 (64 words), each bank holding two of them: 2
    assert wavefronts(addr[4:], act[4:], 16).tolist() == [2]
    assert wavefronts(addr[:1], np.zeros((1, 32), bool), 4).tolist() == [0]

"""The compiled LRU list of the sampling history gives the plain-Python model's answers."""

import numpy as np
import pytest

from maxsim.gpu.sector_lru import ReferenceLRU, SectorLRU


@pytest.mark.parametrize("seed", range(4))
def test_compiled_lru_matches_reference_on_random_streams(seed):
    rng = np.random.default_rng(seed)
    evictions = 0
    for _ in range(60):
        capacity = int(rng.integers(1, 40))
        fast, ref = SectorLRU(capacity), ReferenceLRU(capacity)
        universe = int(rng.integers(20, 120))
        for _ in range(400):  # long enough for the ring to be compacted many times
            sectors = rng.choice(universe, size=int(rng.integers(0, 20)), replace=False) * 32
            dirty = bool(rng.random() < 0.05)
            got, want = fast.access(sectors, dirty), ref.access(sectors, dirty)
            assert got == want
            if want:
                evictions += 1
                break
            assert len(fast) == len(ref.lru)
    assert evictions > 10  # the streams do reach dirty evictions


def test_lru_by_hand():
    lru = SectorLRU(2)
    assert not lru.access([0, 32], True)  # two dirty sectors fill it
    assert not lru.access([0], False)  # 0 becomes the most recent: 32 is the LRU
    assert lru.access([64], False)  # 64 evicts 32, which is dirty
    lru = SectorLRU(2)
    assert not lru.access([0, 32], False)
    assert not lru.access([64, 96], False)  # clean evictions only
    assert len(lru) == 2


def test_compiled_lru_matches_reference_on_strided_streams():
    # a few thousand sectors at power-of-two strides (the matrices' rows) and random ones: long
    # probe runs in the table, with evictions shifting entries back across its end
    rng = np.random.default_rng(11)
    capacity = 3000
    fast, ref = SectorLRU(capacity), ReferenceLRU(capacity)
    bases = [0, 1 << 20, 3 << 22]
    for step in range(3000):
        stride = 32 << int(rng.integers(0, 10))
        base = bases[step % 3] + 32 * int(rng.integers(0, 4096))
        sectors = np.unique(base + stride * np.arange(int(rng.integers(1, 60))))
        if rng.random() < 0.3:
            sectors = np.unique(32 * rng.integers(0, 50_000, size=40))
        dirty = bool(rng.random() < 0.002)
        got, want = fast.access(sectors, dirty), ref.access(sectors, dirty)
        assert got == want, step
        if want:
            fast, ref = SectorLRU(capacity), ReferenceLRU(capacity)
        assert len(fast) == len(ref.lru)


def test_sector_set_counts_what_a_python_set_counts():
    from maxsim.gpu.sector_lru import SectorSet
    rng = np.random.default_rng(3)
    seen, ref = SectorSet(64), set()  # grows well past what it was made for
    for _ in range(200):
        a = rng.integers(0, 20000, size=int(rng.integers(0, 300))) * 32
        seen.add(a)
        ref.update(a.tolist())
        assert len(seen) == len(ref)
    assert len(ref) > 10 * 64

"""The L2 cache of a Maxwell GPU: slices behind the memory partitions, lines of 32-byte sectors.

Tags and state only; the time a slice spends on a request (its bandwidth) and DRAM are in
:mod:`maxsim.timing.memory_system`.  Geometry from ``cfg.l2`` (see gm204.toml for the sources):

* ``l2.slices`` slices of ``l2.size / l2.slices`` bytes.  GM204 has four ROP/memory-controller
  partitions, each with two ROP/L2 units of 256 KB in front of a 32-bit memory controller: 8
  slices, each with its own DRAM channel.
* A byte address belongs to the slice chosen by :class:`SliceMap` from its ``l2.slice_interleave``
  -byte granule: an IPOLY hash (the granule number as a polynomial over GF(2), reduced modulo an
  irreducible polynomial of degree log2(slices); Rau, "Pseudo-randomly interleaved memory",
  ISCA 1991).  NVIDIA does not publish its hash; IPOLY has the property the real one must have
  (aligned runs of any power-of-two stride spread over all slices).
* Inside a slice: ``l2.assoc``-way sets of ``l2.line``-byte lines, each of ``line / sector``
  sectors with their own valid state, arrival cycle and dirty bit (tags per 128-byte line, data
  moved per 32-byte sector).  Sets are indexed by a multiplicative hash of the line number when
  ``l2.hash_sets``.  Replacement LRU over lines.
* A line is a list ``[ready_0, ..., ready_{k-1}, dirty_mask]``: ``ready_i`` is the cycle sector
  ``i``'s data is in the slice, or None while the sector is not valid; bit ``i`` of
  ``dirty_mask`` says the sector holds stored data not yet written to DRAM.
"""

from __future__ import annotations

import functools

from collections import OrderedDict

_HASH_MUL = 0x9E3779B1  # Knuth's multiplicative hash constant (2^32 / golden ratio)

# The irreducible polynomial over GF(2) of each degree with the fewest terms (bit i = x^i):
# degree 1: x + 1, 2: x^2 + x + 1, 3: x^3 + x + 1, 4: x^4 + x + 1, 5: x^5 + x^2 + 1,
# 6: x^6 + x + 1, 7: x^7 + x + 1, 8: x^8 + x^4 + x^3 + x + 1. Any with a constant term makes
# every aligned run of 2^degree multiples of a power-of-two stride map to distinct remainders.
IRREDUCIBLE = {1: 0b11, 2: 0b111, 3: 0b1011, 4: 0b10011, 5: 0b100101, 6: 0b1000011,
               7: 0b10000011, 8: 0b100011011}


def gf2_mod(value: int, poly: int) -> int:
    """Remainder of ``value`` (bits = coefficients of a polynomial over GF(2)) modulo ``poly``."""
    d = poly.bit_length() - 1
    n = value.bit_length()
    while n > d:
        value ^= poly << (n - 1 - d)
        n = value.bit_length()
    return value


@functools.lru_cache(maxsize=None)
def _byte_tables(poly, nbytes):
    """Per byte position k < ``nbytes``, the remainder mod ``poly`` of each byte value in place k
    (a tuple of tuples, read only; the same for every SliceMap of that polynomial)."""
    return tuple(tuple(gf2_mod(v << (8 * k), poly) for v in range(256)) for k in range(nbytes))


class SliceMap:
    """Which slice holds a byte address: a hash of its ``interleave``-byte granule.

    ``method`` "ipoly": for ``slices`` = 2^a x m (m odd), the IPOLY remainder of the granule number
    of degree ``a`` picks the slice within a group of 2^a and the granule number modulo m the
    group (m = 1 on GM204 and GM107; GM200's 12 slices have m = 3, and powers of two modulo 3 take
    every value, so power-of-two strides still reach every slice).  "modulo": granule number
    modulo ``slices`` (plain interleaving, for hand-computed cases and comparisons).
    """

    def __init__(self, slices: int, interleave: int, method: str = "ipoly"):
        if slices < 1 or interleave < 1:
            raise ValueError("slices and interleave must be positive")
        self.slices = slices
        self.interleave = interleave
        self.method = method
        a = (slices & -slices).bit_length() - 1  # power-of-two factor 2^a
        self._pow2 = 1 << a
        self._odd = slices >> a
        if method == "ipoly" and a > max(IRREDUCIBLE):
            raise ValueError(f"at most {1 << max(IRREDUCIBLE)} slices in a power-of-two group")
        self._poly = IRREDUCIBLE.get(a)  # None for a = 0 (one slice per group)
        if method not in ("ipoly", "modulo"):
            raise ValueError(f"unknown slice hash {method!r}")
        # the remainder is linear over GF(2): XOR of the remainders of each byte in its place
        self._tables = _byte_tables(self._poly, self.TABLE_BYTES) if self._poly else None

    TABLE_BYTES = 6  # granule numbers below 2^48 use the byte tables

    def _ipoly(self, g: int) -> int:
        if g >> (8 * self.TABLE_BYTES):
            return gf2_mod(g, self._poly)
        r = 0
        for table in self._tables:
            r ^= table[g & 0xFF]
            g >>= 8
            if not g:
                break
        return r

    def of_granule(self, g: int) -> int:
        if self.method == "modulo":
            return g % self.slices
        low = self._ipoly(g) if self._poly else 0
        if self._odd == 1:
            return low
        return low + self._pow2 * (g % self._odd)

    def __call__(self, addr: int) -> int:
        """Slice of byte address ``addr``."""
        return self.of_granule(addr // self.interleave)


def set_geometry(l2, size, slices, line, sector, assoc, interleave, slice_hash, hash_sets):
    """The geometry attributes every L2 model has (this module's and the compiled one's)."""
    if line % sector or interleave % line:
        raise ValueError("sector must divide line, line must divide the slice interleave")
    l2.line = line
    l2.sector = sector
    l2.sectors_per_line = line // sector
    l2.assoc = assoc
    l2.n_slices = slices
    l2.slice_size = max(size // slices, line * assoc)
    l2.n_sets = l2.slice_size // (line * assoc)
    l2.hash_sets = hash_sets
    l2.map = SliceMap(slices, interleave, slice_hash)
    l2._line_shift = line.bit_length() - 1
    l2._lines_per_granule = interleave // line


class SlicedL2:
    """Tag state of every slice: ``sets[slice][set]`` is an OrderedDict line number -> line.

    ``locate(line)`` gives the (slice, set) of a line number and is memoised: the mapping is a
    pure function of the address, and a request touches few distinct lines again and again.
    """

    MEMO_LIMIT = 1 << 20  # lines remembered by locate() before the memo is cleared

    def __init__(self, size: int, slices: int, line: int, sector: int, assoc: int, interleave: int,
                 slice_hash: str = "ipoly", hash_sets: bool = True):
        set_geometry(self, size, slices, line, sector, assoc, interleave, slice_hash, hash_sets)
        self.sets = [[OrderedDict() for _ in range(self.n_sets)] for _ in range(slices)]
        self._memo = {}
        self.evictions = 0

    @classmethod
    def from_config(cls, cfg, size: int | None = None) -> "SlicedL2":
        c = cfg.l2
        return cls(size or c.size, c.slices, c.line, c.sector, c.assoc, c.slice_interleave,
                   c.slice_hash, c.hash_sets)

    # ---- mapping -------------------------------------------------------------------------------
    def set_index(self, line_no: int) -> int:
        """Set of line number ``line_no`` within its slice."""
        if self.hash_sets:
            return (((line_no * _HASH_MUL) & 0xFFFFFFFF) * self.n_sets) >> 32
        # plain: the line's number among the lines of its slice (granule bits above the slice
        # choice, then the line within the granule), modulo the sets
        lpg = self._lines_per_granule
        g, within = divmod(line_no, lpg)
        return ((g // self.n_slices) * lpg + within) % self.n_sets

    def locate(self, line_no: int):
        """(slice number, set OrderedDict) of line number ``line_no``."""
        loc = self._memo.get(line_no)
        if loc is None:
            s = self.map.of_granule(line_no // self._lines_per_granule)
            loc = (s, self.sets[s][self.set_index(line_no)])
            if len(self._memo) >= self.MEMO_LIMIT:
                self._memo.clear()
            self._memo[line_no] = loc
        return loc

    def slice_of(self, addr: int) -> int:
        return self.locate(addr >> self._line_shift)[0]

    # ---- state ---------------------------------------------------------------------------------
    def allocate(self, st: OrderedDict, line_no: int):
        """A new line ``line_no`` (all sectors invalid) in set ``st``; returns (line, victim line
        or None).  Evicts the least recently used line of a full set."""
        victim = None
        if len(st) >= self.assoc:
            victim = st.popitem(last=False)[1]
            self.evictions += 1
        entry = [None] * self.sectors_per_line + [0]
        st[line_no] = entry
        return entry, victim

    def sector_entry(self, addr: int):
        """(line, sector index) of byte address ``addr`` if its line is present (no LRU update)."""
        line_no = addr >> self._line_shift
        _, st = self.locate(line_no)
        return st.get(line_no), (addr // self.sector) % self.sectors_per_line

    def contains(self, addr: int) -> bool:
        """Whether the sector holding byte ``addr`` is valid (no LRU update)."""
        entry, i = self.sector_entry(addr)
        return entry is not None and entry[i] is not None

    def is_dirty(self, addr: int) -> bool:
        entry, i = self.sector_entry(addr)
        return entry is not None and bool(entry[-1] >> i & 1)

    def insert(self, sector_no: int, ready: float, dirty: bool = False) -> None:
        """Place sector number ``sector_no`` (byte address // sector) as valid from cycle ``ready``
        (to preload the L2 before a run); a dirty victim's data is dropped, not written back."""
        addr = sector_no * self.sector
        line_no = addr >> self._line_shift
        _, st = self.locate(line_no)
        entry = st.get(line_no)
        if entry is None:
            entry, _ = self.allocate(st, line_no)
        else:
            st.move_to_end(line_no)
        i = (addr // self.sector) % self.sectors_per_line
        entry[i] = ready
        if dirty:
            entry[-1] |= 1 << i

    def dirty_sectors(self, slice_no: int) -> int:
        return sum(bin(e[-1]).count("1") for st in self.sets[slice_no] for e in st.values())

    def clean_slice(self, slice_no: int) -> int:
        """Clear the dirty bits of one slice (LRU order unchanged); returns how many were set."""
        n = 0
        for st in self.sets[slice_no]:
            for e in st.values():
                if e[-1]:
                    n += bin(e[-1]).count("1")
                    e[-1] = 0
        return n

    def __len__(self) -> int:
        """Valid sectors held."""
        k = self.sectors_per_line
        return sum(1 for sl in self.sets for st in sl for e in st.values() for r in e[:k] if r is not None)

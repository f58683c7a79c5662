"""Memories seen by a kernel: global memory (32-bit addresses), 1D float4 textures, constant bank 0."""

from __future__ import annotations

import numpy as np

from ..errors import LaunchError

GLOBAL_BASE = 0x1000  # first allocated address: low addresses stay unmapped so a null pointer faults
ALLOC_ALIGN = 256


class GlobalMemory:
    """Byte-addressed global memory with 32-bit addresses, stored as 32-bit words.

    Allocations are 256-byte aligned and contiguous from ``GLOBAL_BASE``; an access outside
    ``[GLOBAL_BASE, top)`` or misaligned is an error reported by the executor.
    """

    def __init__(self):
        self.words = np.zeros(0, dtype=np.uint32)
        self.top = GLOBAL_BASE
        self.allocations = []  # (base, nbytes)
        self.invalid = None  # why the contents are not results (a timing-only launch wrote them)

    def alloc(self, nbytes: int) -> int:
        if nbytes <= 0:
            raise LaunchError(f"cannot allocate {nbytes} bytes of global memory")
        base = (self.top + ALLOC_ALIGN - 1) // ALLOC_ALIGN * ALLOC_ALIGN
        top = base + (nbytes + 3) // 4 * 4
        if top > 1 << 32:
            raise LaunchError(f"global memory exhausted: {nbytes} bytes do not fit in the 32-bit address space")
        need = top // 4
        if need > self.words.size:
            grown = np.zeros(max(need, self.words.size * 2), dtype=np.uint32)
            grown[: self.words.size] = self.words
            self.words = grown
        self.top = top
        self.allocations.append((base, nbytes))
        return base

    def _check(self, addr, nbytes):
        if addr % 4 or addr < GLOBAL_BASE or addr + nbytes > self.top:
            raise LaunchError(f"host access to global memory [0x{addr:x}, +{nbytes}) is outside the allocations or not 4-byte aligned")

    def write(self, addr: int, array) -> None:
        data = np.ascontiguousarray(array)
        raw = data.view(np.uint8).reshape(-1)
        if raw.size % 4:
            raw = np.concatenate([raw, np.zeros(4 - raw.size % 4, np.uint8)])
        self._check(addr, raw.size)
        self.words[addr // 4: addr // 4 + raw.size // 4] = raw.view(np.uint32)

    def read(self, addr: int, count: int, dtype=np.float32) -> np.ndarray:
        if self.invalid:
            raise LaunchError(f"global memory holds no results: {self.invalid}")
        dtype = np.dtype(dtype)
        nbytes = count * dtype.itemsize
        self._check(addr, (nbytes + 3) // 4 * 4)
        raw = self.words[addr // 4: addr // 4 + (nbytes + 3) // 4].view(np.uint8)[:nbytes]
        return raw.view(dtype).copy()


class Texture1D:
    """A 1D texture of float4 texels with border addressing (out-of-range texels read as zero)."""

    def __init__(self, texels, address=None):
        """``address``: the global-memory address the texels live at (their cache identity); a
        texture without one gets a private address range of its own."""
        data = np.ascontiguousarray(texels, dtype=np.float32)
        if data.ndim == 1:
            if data.size % 4:
                raise LaunchError(f"a float4 texture needs a multiple of 4 floats, got {data.size}")
            data = data.reshape(-1, 4)
        if data.ndim != 2 or data.shape[1] != 4:
            raise LaunchError(f"a float4 texture needs shape (n, 4), got {data.shape}")
        # the caller's array itself (no copy: a large, sparsely drawn texture stays unmapped)
        self.texels = data.view(np.uint32)
        self.size = data.shape[0]
        if address is None:
            Texture1D._private += 1
            address = Texture1D._private << 40
        self.address = int(address)

    _private = 0

    def fetch(self, coords):
        """The texels (uint32 words, shape (lanes, 4)) at ``coords``; zero outside [0, size)."""
        out = (coords < 0) | (coords >= self.size)
        if not out.any():
            return self.texels[coords]
        if self.size == 0:
            return np.zeros((coords.size, 4), np.uint32)
        vals = self.texels[np.where(out, 0, coords)]
        vals[out] = 0
        return vals


def texture_index(handle: int) -> int:
    """The texture number a bindless handle selects (0x80000001 -> texture 1)."""
    return handle & 0x7FFFFFFF

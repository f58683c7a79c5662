"""Memories seen by a kernel: global memory (32-bit addresses), 1D textures, constant bank 0."""

from __future__ import annotations

import numpy as np

from ..errors import LaunchError

GLOBAL_BASE = 0x1000  # first allocated address: low addresses stay unmapped so a null pointer faults
ALLOC_ALIGN = 256  # [cuda-pg] "Device Memory Accesses": an address returned by the driver's or the
# runtime's allocation routines is aligned to at least 256 bytes
DEVICE_PAGE = 2 << 20  # an allocation of this size or more starts a page of its own (see place())
GUARD_BYTES = 4096  # choice: unmapped bytes before each named buffer after the first, so that an
# access up to 4 KiB past a buffer's end (or before its start) faults instead of reading its neighbour


def place(top: int, nbytes: int) -> int:
    """Where an allocation of ``nbytes`` made when ``top`` is the first free address begins: the
    next ``DEVICE_PAGE`` (2 MB) boundary for an allocation of 2 MB or more, else the next
    ``ALLOC_ALIGN`` (256-byte) boundary.

    What is known: CUDA promises 256-byte alignment only ([cuda-pg]). The GPU maps device memory in
    pages of 2 MB (the GTX 980's TLB entries: [mei17-data] fine_grain_TLB.cu strides by 2 MB pages;
    ``tlb.page_bytes``), the granularity the driver reports for device memory
    (``cuMemGetAllocationGranularity``, CUDA driver API). No source says where ``cuMemAlloc`` puts
    an allocation of that size or more; taking it as pages of its own, smaller ones packed
    together, is a documented choice. It matters above the L2 TLB's reach: a matrix that starts
    inside a page spans one page more, and CTAs that sweep two such matrices in lockstep cross their
    pages at different rows and walk twice per page period instead of once (docs/memory-hierarchy.md,
    "Where B starts"). Shared by :class:`GlobalMemory` and the SGEMM problem's texture addresses."""
    align = DEVICE_PAGE if nbytes >= DEVICE_PAGE else ALLOC_ALIGN
    return -(-top // align) * align


class GlobalMemory:
    """Byte-addressed global memory with 32-bit addresses, stored as 32-bit words.

    Allocations are contiguous from ``GLOBAL_BASE``, each where :func:`place` puts it (256-byte
    aligned; one of 2 MB or more at the start of a 2 MB page); an access outside
    ``[GLOBAL_BASE, top)`` or misaligned is an error reported by the executor. An allocation made
    with a ``name`` (a buffer of :func:`maxsim.host.launch`) is preceded by an unmapped guard of
    ``GUARD_BYTES``: once a memory holds such gaps (``gapped``), every access must lie inside one
    allocation, so a kernel that reads or writes past the end of a buffer faults at that
    instruction and the error names the buffer (:meth:`describe`).
    """

    def __init__(self):
        self.words = np.zeros(0, dtype=np.uint32)
        self.top = GLOBAL_BASE
        self.allocations = []  # (base, nbytes)
        self.names = []  # the name of each allocation ("" when none was given)
        self.gapped = False  # allocations are separated by unmapped guards (check each access)
        self._extents = None  # (allocations, their starts, their ends): see extents()
        self.invalid = None  # why the contents are not results (a timing-only launch wrote them)
        self.variables = {}  # __device__ variable name -> its address (placed by the first launch)

    def variable(self, name: str, size: int, data: bytes) -> int:
        """The address of __device__ variable ``name``: allocated (and given its initial bytes)
        the first time a launch on this memory needs it, then kept, as the device keeps a module's
        variables from launch to launch."""
        addr = self.variables.get(name)
        if addr is None:
            addr = self.alloc(max(1, size), name=f"__device__ {name}")
            if data:
                self.write(addr, np.frombuffer(bytes(data), dtype=np.uint8))
            self.variables[name] = addr
        return addr

    def alloc(self, nbytes: int, name: str = None) -> int:
        if nbytes <= 0:
            raise LaunchError(f"cannot allocate {nbytes} bytes of global memory"
                              + (f" for buffer {name!r}" if name else ""))
        top = self.top
        if name is not None and self.allocations:
            top += GUARD_BYTES
            self.gapped = True
        base = place(top, nbytes)
        top = base + (nbytes + 3) // 4 * 4
        if top > 1 << 32:
            what = f"buffer {name!r}" if name else "an allocation"
            raise LaunchError(f"global memory exhausted: {what} of {nbytes} bytes, placed at 0x{base:x}, does not fit "
                              f"in the 32-bit address space (4 GiB; {self.top - GLOBAL_BASE} bytes allocated before it)")
        need = top // 4
        if need > self.words.size:
            grown = np.zeros(max(need, self.words.size * 2), dtype=np.uint32)
            grown[: self.words.size] = self.words
            self.words = grown
        self.top = top
        self.allocations.append((base, nbytes))
        self.names.append(name or "")
        return base

    def reserve(self, sizes) -> None:
        """Make room at once for named allocations of ``sizes`` bytes made next (in one array, not
        grown allocation by allocation); where they go is as without it."""
        top = self.top
        for n in sizes:
            top = place(top + GUARD_BYTES, n) + (n + 3) // 4 * 4
        need = top // 4
        if top <= 1 << 32 and need > self.words.size:  # (past 4 GiB: alloc says which does not fit)
            grown = np.zeros(need, dtype=np.uint32)
            grown[: self.words.size] = self.words
            self.words = grown

    def extents(self):
        """The allocations' starts (sorted) and ends as int64 arrays (kept until the next one)."""
        ext = getattr(self, "_extents", None)
        if ext is None or ext[0] != len(self.allocations):
            bases = np.array([b for b, _ in self.allocations], dtype=np.int64)
            ends = bases + np.array([(n + 3) // 4 * 4 for _, n in self.allocations], dtype=np.int64)
            self._extents = (len(self.allocations), bases, ends)
        return self._extents[1], self._extents[2]

    def unmapped(self, addr, nbytes):
        """Per lane of ``addr`` (uint32 byte addresses): the access of ``nbytes`` does not lie
        inside one allocation."""
        bases, ends = self.extents()
        a = addr.astype(np.int64)
        i = np.searchsorted(bases, a, side="right") - 1
        return (i < 0) | (a + nbytes > ends[np.maximum(i, 0)])

    def describe(self, addr: int) -> str:
        """Where ``addr`` lies relative to the allocations, in words: 'past the end of buffer x
        [0x1000, 0x1400)', 'before buffer y ...'."""
        if not self.allocations:
            return "no global memory is allocated"
        def name(i):
            base, n = self.allocations[i]
            who = f"buffer {self.names[i]!r}" if self.names[i] else "an allocation"
            return f"{who} [0x{base:x}, 0x{base + n:x})"
        below = [i for i, (b, _) in enumerate(self.allocations) if b <= addr]
        if below:
            i = below[-1]
            base, n = self.allocations[i]
            if addr < base + n:
                return f"inside {name(i)}, but the access runs past its end"
            gap = addr - (base + n)
            return f"{'just' if gap == 0 else f'{gap} bytes'} past the end of {name(i)}"
        return f"{self.allocations[0][0] - addr} bytes before {name(0)}"

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


# texel formats of a 1D texture: name -> (channels, numpy dtype of a channel). Every channel is 32
# bits, as the TLD of the maxas kernels reads them (one 32-bit register per channel)
FORMATS = {f"{kind}{n}": (n, dtype) for kind, dtype in (("float", np.float32), ("int", np.int32),
                                                          ("uint", np.uint32)) for n in (1, 2, 4)}


class Texture1D:
    """A 1D texture with border addressing: a texel outside ``[0, size)`` reads as zero.

    ``format`` (:data:`FORMATS`) gives the channels of a texel, 1, 2 or 4 of 32 bits each (float4:
    16-byte texels, as the SGEMM's A and B). A TLD returns four channels; those a narrower format
    lacks read as (x, 0, 0, 1): zero, and one (1.0 for a float format) in the fourth, the
    component fill of texture fetches from formats with fewer components [ogl-spec] (OpenGL 4.5
    core, table 15.1 "Conversion of a texel to RGBA")."""

    def __init__(self, texels, address=None, format="float4"):
        """``address``: the global-memory address the texels live at (their cache identity); a
        texture without one gets a private address range of its own."""
        if format not in FORMATS:
            raise LaunchError(f"unknown texture format {format!r}: expected one of {', '.join(FORMATS)}")
        channels, dtype = FORMATS[format]
        data = np.asarray(texels)
        if data.dtype != dtype and not np.can_cast(data.dtype, dtype, "same_kind"):
            raise LaunchError(f"a {format} texture needs {np.dtype(dtype).name} values, got {data.dtype}")
        data = np.ascontiguousarray(data, dtype=dtype)
        if data.ndim == 1 and channels > 1:
            if data.size % channels:
                raise LaunchError(f"a {format} texture needs a multiple of {channels} values, got {data.size}")
            data = data.reshape(-1, channels)
        elif data.ndim == 1:
            data = data.reshape(-1, 1)
        if data.ndim != 2 or data.shape[1] != channels:
            raise LaunchError(f"a {format} texture needs shape (n, {channels}), got {data.shape}")
        if channels < 4:
            # widened once to four channels (the TLD path reads four 32-bit words per texel)
            full = np.zeros((data.shape[0], 4), dtype=dtype)
            full[:, :channels] = data
            full[:, 3] = 1
            data = full
        # the caller's array itself when it is float4 already (no copy: a large, sparsely drawn
        # texture stays unmapped)
        self.texels = data.view(np.uint32)
        self.size = data.shape[0]
        self.format = format
        self.texel_bytes = 4 * channels
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

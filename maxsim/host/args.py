"""The arguments of a launch: parameters, global buffers and textures, bound to a kernel.

:func:`bind` checks every argument against the kernel's parameter table and turns them into what
the functional model runs with: constant bank 0 (parameters packed at their offsets), the global
memory (each buffer allocated, named, and copied in unless it is an output only), and the
textures by number. Every mistake is a one-line :class:`~maxsim.errors.LaunchError`.
"""

from __future__ import annotations

import math
import struct

import attrs
import numpy as np

from ..errors import LaunchError
from ..functional.launch import PARAM_BASE
from ..functional.memory import FORMATS, GlobalMemory, Texture1D
from ..memo import Kept

IO = ("in", "out", "inout")


def _shape(value):
    return tuple(int(x) for x in (value if isinstance(value, (tuple, list)) else (value,)))


@attrs.frozen(eq=False)
class Buffer:
    """A global-memory buffer: ``data`` copied in before the launch (unless ``io`` is "out"),
    read back after it as an array of ``shape`` and ``dtype`` (unless ``io`` is "in")."""

    shape: tuple = attrs.field(converter=_shape)
    dtype: np.dtype = attrs.field(converter=np.dtype)
    data: np.ndarray = None
    io: str = "inout"

    @classmethod
    def of(cls, array, io="inout") -> "Buffer":
        a = np.asarray(array)
        return cls(a.shape, a.dtype, a, io)

    @classmethod
    def zeros(cls, shape, dtype=np.float32) -> "Buffer":
        """An output buffer that starts as zeros (no host array is made or copied)."""
        return cls(shape, dtype, None, "out")

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


@attrs.frozen(eq=False)
class Texture:
    """A 1D texture bound to ``data`` in ``format`` (:data:`maxsim.functional.memory.FORMATS`:
    float1/2/4, int1/2/4, uint1/2/4); ``address``: where its texels live for the caches (None: an
    address range of its own, the same at every launch: :func:`texture_address`)."""

    data: np.ndarray
    format: str = "float4"
    address: int = None


@attrs.frozen
class Bound:
    """Arguments bound to a kernel: the packed constant bank, the memory, the buffers' addresses
    and the textures by number."""

    const_bank: bytes
    memory: GlobalMemory
    buffers: dict  # name -> (address, Buffer)
    textures: dict  # texture number -> Texture1D
    constants: dict = attrs.field(factory=dict)  # constant bank (1-17) -> its bytes

    @property
    def launch_params(self):
        """What :func:`maxsim.functional.launch` takes as ``params``: the packed bank 0, with the
        further constant banks when some are given."""
        if not self.constants:
            return self.const_bank
        from ..functional.launch import ConstantBanks
        return ConstantBanks(self.const_bank, dict(self.constants))


def as_buffer(name, value) -> Buffer:
    if isinstance(value, Buffer):
        buf = value
    elif isinstance(value, np.ndarray):
        buf = Buffer.of(value)
    else:
        raise LaunchError(f"buffer {name!r}: expected a numpy array or a maxsim.Buffer, got "
                          f"{type(value).__name__}")
    if buf.io not in IO:
        raise LaunchError(f"buffer {name!r}: io must be one of {', '.join(IO)}, got {buf.io!r}")
    if buf.nbytes <= 0:
        raise LaunchError(f"buffer {name!r} is empty (shape {buf.shape})")
    if buf.dtype.kind not in "biuf" or buf.dtype.itemsize > 8:
        raise LaunchError(f"buffer {name!r}: dtype {buf.dtype} is not a number type of 1-8 bytes")
    return buf


def bind(kernel, params=None, buffers=None, textures=None, constants=None) -> Bound:
    """Bind ``params`` ({name or offset: value}), ``buffers`` ({name: array or Buffer}) and
    ``textures`` ({texture number or name: array or Texture}) to ``kernel`` (a
    :class:`maxsim.host.Kernel`). A parameter value is an int, a float (an fp32 parameter; fp64
    when the parameter has 8 bytes), the name of a buffer (its device address), or bytes / a numpy
    record of the parameter's size (a struct passed by value)."""
    memory = GlobalMemory()
    bound_buffers = {}
    given = []
    for name, value in (buffers or {}).items():
        if not isinstance(name, str) or not name:
            raise LaunchError(f"buffer names must be non-empty strings, got {name!r}")
        given.append((name, as_buffer(name, value)))
    memory.reserve([buf.nbytes for _, buf in given])
    for name, buf in given:
        addr = memory.alloc(buf.nbytes, name=name)
        if buf.io != "out" and buf.data is not None:
            memory.write(addr, np.ascontiguousarray(buf.data, dtype=buf.dtype).reshape(-1))
        bound_buffers[name] = (addr, buf)
    bank = _packed(kernel, params or {}, bound_buffers)
    return Bound(bank, memory, bound_buffers, _textures(kernel, textures or {}), constant_banks(constants))


CONSTANT_BANK_BYTES = 0x10000  # 64 KiB per constant bank ([cuda-pg]: 64 KB of constant memory)


def constant_banks(constants) -> dict:
    """``{bank: bytes}`` of ``constants`` ({bank 1-17: bytes, bytearray or numpy array (its bytes, as
    laid out in memory)}). Bank 0 holds the launch geometry and the parameters: give those as
    parameters."""
    if constants is None:
        return {}
    if not isinstance(constants, dict):
        raise LaunchError(f"constants must be a dict of bank -> bytes or numpy array, got {type(constants).__name__}")
    out = {}
    for bank, data in constants.items():
        if isinstance(bank, (bool, np.bool_)) or not isinstance(bank, (int, np.integer)) or not 0 <= bank <= 17:
            raise LaunchError(f"constant bank {bank!r}: expected a bank number 1-17")
        if bank == 0:
            raise LaunchError("constant bank 0 holds the launch geometry and the parameters: give them as params")
        if isinstance(data, np.ndarray):
            if data.dtype.kind not in "biuf":
                raise LaunchError(f"constant bank {bank}: dtype {data.dtype} is not a number type")
            raw = np.ascontiguousarray(data).tobytes()
        elif isinstance(data, (bytes, bytearray, memoryview)):
            raw = bytes(data)
        else:
            raise LaunchError(f"constant bank {bank}: expected bytes or a numpy array, got {type(data).__name__}")
        if not raw:
            raise LaunchError(f"constant bank {bank} is empty")
        if len(raw) > CONSTANT_BANK_BYTES:
            raise LaunchError(f"constant bank {bank}: {len(raw)} bytes do not fit in a bank of "
                              f"{CONSTANT_BANK_BYTES} bytes")
        out[int(bank)] = raw
    return out


_PACKED = Kept(64)  # (kernel, parameters, buffers' addresses) -> constant bank 0 packed (see _packed)


def _packed(kernel, params, buffers) -> bytes:
    """:func:`_pack`, made once for parameters given alike again: names or offsets with ints, floats
    (by their bits) or buffer names, the buffers at the same addresses (any other value is packed
    each time)."""
    if not isinstance(params, dict):
        return _pack(kernel, params, buffers)
    given = []
    for key, value in params.items():
        t = type(value)
        if type(key) not in (str, int) or t not in (int, float, str):
            return _pack(kernel, params, buffers)
        given.append((key, t, struct.pack("<d", value) if t is float else value))
    key = (id(kernel), tuple(given), tuple((name, addr) for name, (addr, _) in buffers.items()))
    return _PACKED.get(key, lambda: _pack(kernel, params, buffers), owner=kernel)


def _pack(kernel, params, buffers) -> bytes:
    if not isinstance(params, dict):
        raise LaunchError(f"params must be a dict of name or offset -> value, got {type(params).__name__}")
    given = {}
    for key, value in params.items():
        if isinstance(key, (bool, np.bool_)) or not isinstance(key, (str, int, np.integer)):
            raise LaunchError(f"parameter key {key!r}: expected a name or a byte offset")
        p = kernel.param(key if isinstance(key, str) else int(key))
        if p is None:  # a kernel without a parameter table: a 4-byte word at that offset
            from .kernel import KernelParam
            if int(key) < PARAM_BASE or int(key) % 4:
                raise LaunchError(f"parameter offset 0x{int(key):x} is not a 4-byte word at or past 0x{PARAM_BASE:x}")
            p = KernelParam((), -1, int(key), 4)
        if p.offset in given:
            raise LaunchError(f"parameter {p.label} of kernel {kernel.name} is given twice "
                              f"({given[p.offset][0]!r} and {key!r})")
        given[p.offset] = (key, p, value)
    missing = [p.label for p in kernel.params if p.offset not in given]
    if missing:
        raise LaunchError(f"kernel {kernel.name}: parameter{'s' if len(missing) > 1 else ''} "
                          f"{', '.join(missing)} not given")
    end = max([PARAM_BASE] + [p.offset + p.size for _, p, _ in given.values()])
    bank = bytearray(end + 0x100)
    for key, p, value in given.values():
        bank[p.offset:p.offset + p.size] = _encode(kernel, key, p, value, buffers)
    return bytes(bank)


def _encode(kernel, key, p, value, buffers) -> bytes:
    what = f"parameter {key!r} of kernel {kernel.name}"
    if isinstance(value, (bytes, bytearray, np.void)):
        # a struct passed by value: its bytes as the kernel lays it out (e.g. a numpy record)
        raw = bytes(value)
        if len(raw) != p.size:
            raise LaunchError(f"{what} has {p.size} bytes; {len(raw)} bytes given")
        return raw
    if p.size not in (4, 8):
        raise LaunchError(f"{what} has {p.size} bytes; give a struct parameter as bytes or a numpy record "
                          f"of that size (numbers are parameters of 4 or 8 bytes)")
    if isinstance(value, str):
        if value not in buffers:
            known = ", ".join(buffers) or "none"
            raise LaunchError(f"{what} = {value!r}: no buffer of that name (buffers: {known})")
        value = buffers[value][0]
    if isinstance(value, (bool, np.bool_)) or isinstance(value, np.ndarray):
        hint = " (pass arrays as buffers and the buffer's name as the parameter)" \
            if isinstance(value, np.ndarray) else ""
        raise LaunchError(f"{what}: expected an int, a float or a buffer name, got {type(value).__name__}{hint}")
    if isinstance(value, (float, np.floating)):
        return struct.pack("<f" if p.size == 4 else "<d", float(value))
    if isinstance(value, (int, np.integer)):
        v = int(value)
        bits = 8 * p.size
        if not -(1 << (bits - 1)) <= v < (1 << bits):
            raise LaunchError(f"{what} = {v} does not fit in {bits} bits")
        return (v & ((1 << bits) - 1)).to_bytes(p.size, "little")
    raise LaunchError(f"{what}: expected an int, a float or a buffer name, got {type(value).__name__}")


# where a texture bound without an address lives: texture n at (UNPLACED_TEXTURES + n) << 40, above
# any buffer (a choice of this simulator: the caches need an address, the hardware's is the driver's)
UNPLACED_TEXTURES = 0x80


def texture_address(number: int) -> int:
    """The address range of texture ``number`` bound without an address: the same at every launch,
    so two equal launches hash their texels to the same L2 slices and TLB pages (a range counted per
    texture made, as :class:`~maxsim.functional.memory.Texture1D` gives, would move them)."""
    return (UNPLACED_TEXTURES + number) << 40


def _textures(kernel, textures) -> dict:
    named = dict(kernel.textures)
    out = {}
    for key, value in textures.items():
        if isinstance(key, str):
            if key.isdigit():
                number = int(key)
            elif key in named:
                number = named[key]
            else:
                known = ", ".join(named) or "none"
                raise LaunchError(f"texture {key!r}: the kernel names no texture so (named textures: "
                                  f"{known}; or give the texture number)")
        elif isinstance(key, (int, np.integer)) and not isinstance(key, bool) and key >= 0:
            number = int(key)
        else:
            raise LaunchError(f"texture key {key!r}: expected a texture number or a name")
        if isinstance(value, Texture1D):  # already bound (a texture of maxsim.functional)
            out[number] = value
            continue
        tex = value if isinstance(value, Texture) else Texture(value)
        if not isinstance(tex.data, np.ndarray):
            raise LaunchError(f"texture {key!r}: expected a numpy array, got {type(tex.data).__name__}")
        if tex.format not in FORMATS:
            raise LaunchError(f"texture {key!r}: unknown format {tex.format!r} (formats: {', '.join(FORMATS)})")
        try:
            address = texture_address(number) if tex.address is None else tex.address
            out[number] = Texture1D(tex.data, address=address, format=tex.format)
        except LaunchError as e:
            raise LaunchError(f"texture {key!r}: {e}") from None
    return out

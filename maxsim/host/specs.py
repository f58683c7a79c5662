"""Launch arguments written as text, as ``maxsim run KERNEL.sass`` takes them.

* ``--param NAME=VALUE``: NAME a parameter name or a byte offset of constant bank 0 (``0x148``);
  VALUE an integer (``12``, ``0x40``, ``-3``), a float (``2.5``, ``1e-3``, ``inf``) or the name
  of a buffer (its device address).
* ``--buffer NAME=FILE.npy[:in]``: a buffer holding the array of a numpy file, read back after the
  launch (``:in``: an input only, not read back); ``--buffer NAME=zeros:SHAPE[:DTYPE]``: an output
  buffer of zeros, SHAPE ``1000`` or ``64x64``, DTYPE a numpy name (default float32).
* ``--texture NAME=FILE.npy[:FORMAT]``: a 1D texture (NAME a texture number or a name the
  kernel's constants give) bound to the array of a numpy file in FORMAT (default float4; see
  :data:`maxsim.functional.memory.FORMATS`); NAME may be a slot in hexadecimal (``0x62``), as
  TLDS addresses a texture.
* ``--constant BANK=FILE``: the data of constant bank BANK (1-17; e.g. 3, where nvcc puts a
  kernel's ``__constant__`` data): the array of a ``.npy`` file as it lies in memory, or the raw
  bytes of any other file (``.bin``).

Each malformed spec or unreadable file is a one-line :class:`~maxsim.errors.LaunchError` naming
the option and the spec.
"""

from __future__ import annotations

import re

import numpy as np

from ..errors import LaunchError
from ..functional.memory import FORMATS
from .args import Buffer, Texture

_NAME = re.compile(r"^[A-Za-z_]\w*$")


def _split(option, spec):
    name, eq, value = spec.partition("=")
    if not eq or not name or not value:
        raise LaunchError(f"{option} {spec}: expected NAME=VALUE")
    return name.strip(), value.strip()


def parse_param(spec):
    """``(key, value)`` of a ``--param`` spec: key a name or an int offset."""
    name, value = _split("--param", spec)
    if _NAME.match(name):
        key = name
    else:
        try:
            key = int(name, 0)
        except ValueError:
            raise LaunchError(f"--param {spec}: {name!r} is neither a parameter name nor a byte offset") from None
    try:
        return key, int(value, 0)
    except ValueError:
        pass
    try:
        return key, float(value)
    except ValueError:
        pass
    if _NAME.match(value):
        return key, value  # a buffer name
    raise LaunchError(f"--param {spec}: {value!r} is neither a number nor a buffer name")


def _load(option, spec, path):
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise LaunchError(f"{option} {spec}: no file {path}") from None
    except (OSError, ValueError, EOFError) as e:
        raise LaunchError(f"{option} {spec}: cannot read {path} as a numpy .npy file ({e})") from None


def parse_buffer(spec):
    """``(name, Buffer)`` of a ``--buffer`` spec."""
    name, value = _split("--buffer", spec)
    if not _NAME.match(name):
        raise LaunchError(f"--buffer {spec}: buffer name {name!r} is not a word")
    if value.startswith("zeros:"):
        parts = value.split(":")
        if len(parts) not in (2, 3) or not parts[1]:
            raise LaunchError(f"--buffer {spec}: expected zeros:SHAPE[:DTYPE], e.g. zeros:1000:float32")
        try:
            shape = tuple(int(x) for x in parts[1].lower().split("x"))
        except ValueError:
            raise LaunchError(f"--buffer {spec}: shape {parts[1]!r} is not N or NxM...") from None
        if min(shape) < 1:
            raise LaunchError(f"--buffer {spec}: every dimension of the shape must be at least 1")
        try:
            dtype = np.dtype(parts[2] if len(parts) == 3 else "float32")
        except TypeError:
            raise LaunchError(f"--buffer {spec}: unknown dtype {parts[2]!r}") from None
        return name, Buffer.zeros(shape, dtype)
    path, io = value, "inout"
    if value.endswith(":in"):
        path, io = value[:-3], "in"
    return name, Buffer.of(_load("--buffer", spec, path), io)


def parse_texture(spec):
    """``(key, Texture)`` of a ``--texture`` spec: key a texture number or a name."""
    name, value = _split("--texture", spec)
    try:
        key = int(name, 0)
    except ValueError:
        key = name
    if not isinstance(key, int) and not _NAME.match(name):
        raise LaunchError(f"--texture {spec}: {name!r} is neither a texture number nor a name")
    path, fmt = value, "float4"
    head, colon, tail = value.rpartition(":")
    if colon and tail in FORMATS:
        path, fmt = head, tail
    elif colon and not tail.endswith(".npy") and "/" not in tail:
        raise LaunchError(f"--texture {spec}: unknown format {tail!r} (formats: {', '.join(FORMATS)})")
    return key, Texture(_load("--texture", spec, path), fmt)


def parse_constant(spec):
    """``(bank, bytes)`` of a ``--constant BANK=FILE`` spec (FILE a .npy array or raw bytes)."""
    name, path = _split("--constant", spec)
    try:
        bank = int(name, 0)
    except ValueError:
        raise LaunchError(f"--constant {spec}: {name!r} is not a constant bank number (1-17)") from None
    if not 1 <= bank <= 17:
        raise LaunchError(f"--constant {spec}: bank {bank} is not one of 1-17 (bank 0 holds the parameters)")
    if path.endswith(".npy"):
        data = _load("--constant", spec, path)
        if data.dtype.kind not in "biuf":
            raise LaunchError(f"--constant {spec}: {path} holds {data.dtype} values, not numbers")
        return bank, np.ascontiguousarray(data).tobytes()
    try:
        with open(path, "rb") as f:
            return bank, f.read()
    except FileNotFoundError:
        raise LaunchError(f"--constant {spec}: no file {path}") from None
    except OSError as e:
        raise LaunchError(f"--constant {spec}: cannot read {path} ({e.strerror or e})") from None

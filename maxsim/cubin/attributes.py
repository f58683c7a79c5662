"""The kernel attributes of a cubin's ``.nv.info`` sections (NVIDIA's ``EIATTR_*`` records).

Each record is a format byte, an attribute byte and a payload:

- format 0x01 (``EIFMT_NVAL``): no value (two zero bytes follow, keeping records 4-byte aligned);
- format 0x02 (``EIFMT_BVAL``): one byte, padded to two;
- format 0x03 (``EIFMT_HVAL``): a 16-bit value;
- format 0x04 (``EIFMT_SVAL``): a 16-bit byte count, then that many bytes (little-endian words).

The codes and layouts below were read off NVIDIA's ``cuobjdump -elf`` (CUDA 12.8.55), which names
every record of the cubins NVRTC 12.9 and ptxas 12.9 write for sm_52, and checked against maxas's
``Cubin.pm`` (the ``0x00080a04`` / ``0x000c1704`` words it searches for are the headers of
``EIATTR_PARAM_CBANK`` and ``EIATTR_KPARAM_INFO``; register count in bits 24-31 of the text
section's ``sh_info``, barrier count in bits 20-24 of its ``sh_flags``).
"""

from __future__ import annotations

import struct

import attrs

NVAL, BVAL, HVAL, SVAL = 0x01, 0x02, 0x03, 0x04

# code -> name (as cuobjdump prints it, without the EIATTR_ prefix)
NAMES = {
    0x04: "CTAIDZ_USED",
    0x05: "MAX_THREADS",
    0x0A: "PARAM_CBANK",
    0x0F: "EXTERNS",
    0x10: "REQNTID",
    0x11: "FRAME_SIZE",
    0x12: "MIN_STACK_SIZE",
    0x17: "KPARAM_INFO",
    0x19: "CBANK_PARAM_SIZE",
    0x1B: "MAXREG_COUNT",
    0x1C: "EXIT_INSTR_OFFSETS",
    0x1D: "S2RCTAID_INSTR_OFFSETS",
    0x23: "MAX_STACK_SIZE",
    0x28: "COOP_GROUP_INSTR_OFFSETS",
    0x29: "COOP_GROUP_MASK_REGIDS",
    0x2A: "SW1850030_WAR",
    0x2F: "REGCOUNT",
    0x30: "SW2393858_WAR",
    0x37: "CUDA_API_VERSION",
}
CODES = {v: k for k, v in NAMES.items()}


@attrs.frozen
class Attribute:
    code: int
    fmt: int
    value: bytes  # the payload (HVAL: its two bytes)

    @property
    def name(self) -> str:
        return NAMES.get(self.code, f"0x{self.code:02x}")

    @property
    def words(self) -> tuple:
        n = len(self.value) // 4
        return struct.unpack_from(f"<{n}I", self.value)

    @property
    def half(self) -> int:
        return struct.unpack_from("<H", self.value)[0]


def parse(data: bytes, where: str = ".nv.info") -> tuple:
    """The attribute records of one ``.nv.info`` section. A record running past the end of the
    section is an error naming the section and byte offset."""
    out = []
    pos = 0
    while pos < len(data):
        if pos + 2 > len(data):
            raise ValueError(f"{where}: truncated attribute at byte 0x{pos:x}")
        fmt, code = data[pos], data[pos + 1]
        if fmt in (NVAL, BVAL, HVAL):
            out.append(Attribute(code, fmt, b"" if fmt == NVAL else bytes(data[pos + 2:pos + 4])))
            pos += 4
        elif fmt == SVAL:
            if pos + 4 > len(data):
                raise ValueError(f"{where}: truncated attribute at byte 0x{pos:x}")
            size = struct.unpack_from("<H", data, pos + 2)[0]
            if pos + 4 + size > len(data):
                raise ValueError(f"{where}: attribute {NAMES.get(code, hex(code))} at byte 0x{pos:x} "
                                 f"runs past the section's end")
            out.append(Attribute(code, fmt, bytes(data[pos + 4:pos + 4 + size])))
            pos += 4 + size
        else:
            raise ValueError(f"{where}: unknown attribute format 0x{fmt:02x} at byte 0x{pos:x}")
    return tuple(out)


def pack(attributes) -> bytes:
    """The bytes of a sequence of (code name or number, format, payload) records."""
    out = bytearray()
    for code, fmt, value in attributes:
        code = CODES[code] if isinstance(code, str) else code
        if fmt == NVAL:
            out += bytes((fmt, code, 0, 0))
        elif fmt in (BVAL, HVAL):
            out += bytes((fmt, code)) + struct.pack("<H", value)
        else:
            out += bytes((fmt, code)) + struct.pack("<H", len(value)) + bytes(value)
    return bytes(out)


@attrs.frozen
class ParamInfo:
    """One ``EIATTR_KPARAM_INFO`` record: the parameter's ordinal, byte offset inside the
    parameter block (from ``c[0x0][0x140]`` on sm_5x), size in bytes and its pointee's
    log2 alignment (0 when not given)."""

    ordinal: int
    offset: int
    size: int
    log_align: int = 0


def kparam_info(a: Attribute) -> ParamInfo:
    # words: [index, ordinal | offset << 16, flags]; flags: bits 18-31 size, bit 10 set when
    # bits 0-9 give the pointee's log2 alignment, bits 12-16 the constant bank (0x1f: the param bank)
    _index, ord_off, flags = a.words[:3]
    log_align = flags & 0x3FF if flags & 0x400 else 0
    return ParamInfo(ord_off & 0xFFFF, ord_off >> 16, flags >> 18, log_align)


def kparam_record(p: ParamInfo) -> bytes:
    flags = (p.size << 18) | (0x1F << 12) | ((0x400 | p.log_align) if p.log_align else 0)
    return struct.pack("<3I", 0, p.ordinal | (p.offset << 16), flags)

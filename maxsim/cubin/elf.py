"""Read a cubin: the ELF container NVIDIA's compilers write for one GPU architecture.

The file is read with pyelftools. For each kernel (a symbol of type FUNC with a ``.text.NAME``
section) it gives the instruction bytes and what the driver needs to launch it:

- ``.text.NAME``: the code; its section header carries the register count (``sh_info`` bits 24-31)
  and the barrier count (``sh_flags`` bits 20-24) [maxas Cubin.pm, cuobjdump -elf];
- ``.nv.info.NAME``: the kernel's attributes (:mod:`maxsim.cubin.attributes`): parameters
  (``KPARAM_INFO``), the parameter block's size (``CBANK_PARAM_SIZE``, ``PARAM_CBANK``), the
  offsets of its EXITs, ``MAX_THREADS`` / ``REQNTID``; ``.nv.info`` holds per-kernel
  ``REGCOUNT`` / ``FRAME_SIZE`` records;
- ``.nv.shared.NAME``: its static shared memory (a NOBITS section; its size);
- ``.nv.constant0.NAME``: constant bank 0 as the kernel sees it (its size; the driver fills the
  launch words below 0x140 and the parameters);
- ``.nv.constant2`` / ``.nv.constant3`` (or ``.nv.constantN.NAME``): compiler constants and
  ``__constant__`` data, loaded into bank N;
- ``.rel.text.NAME`` / ``.rela.text.NAME``: relocations of the code; the addresses of ``__device__``
  globals are patched in at load time, which maxsim does not model: such a kernel is refused by name.

The ELF header's ``e_flags`` bits 0-7 (and 16-23) hold the SM version (52 for sm_52).
"""

from __future__ import annotations

import io
import os

import attrs

from ..errors import MaxsimError
from . import attributes as ea

PARAM_BASE = 0x140  # sm_5x: the parameter block starts at c[0x0][0x140] (launch words below)
TEXT_ALIGN = 32  # the driver's alignment of a kernel's code: a control word and three instructions


class CubinError(MaxsimError):
    """A file that is not a cubin maxsim can read, or a kernel it cannot load."""


@attrs.frozen
class CubinParam:
    ordinal: int
    offset: int  # byte address in constant bank 0 (PARAM_BASE + offset in the block)
    size: int
    log_align: int = 0


@attrs.frozen
class CubinKernel:
    """One kernel of a cubin (see the module doc)."""

    name: str
    arch: str  # "sm_52"
    code: bytes
    reg_cnt: int
    bar_cnt: int
    shared_size: int
    params: tuple  # CubinParam, by ordinal
    param_size: int  # bytes of the parameter block
    constant0_size: int
    constants: dict = attrs.field(factory=dict)  # {bank: bytes} of banks 1.. (2: compiler, 3: __constant__)
    max_threads: tuple = ()  # (x, y, z) of MAX_THREADS or REQNTID when given
    exit_offsets: tuple = ()
    attributes: tuple = ()  # every Attribute of .nv.info.NAME
    relocations: tuple = ()  # (offset, type, symbol name) of .rel(a).text.NAME
    frame_size: int = 0
    # (bank, offset, type, symbol name) of .rel(a).nv.constantN: words of a constant bank the
    # loader patches with the address of a __device__ variable
    bank_relocations: tuple = ()
    # the cubin's __device__ variables (DeviceVariable): .nv.global.init (initialised) and
    # .nv.global (zero-filled)
    variables: tuple = ()
    # (byte offset, file, line) of the CUDA source lines of the code (a cubin compiled with
    # -lineinfo: .debug_line), in offset order
    source_lines: tuple = ()
    filename: str = "<cubin>"


@attrs.frozen
class DeviceVariable:
    """A __device__ variable: its symbol, section, offset in the section, size and initial bytes
    (zeros for .nv.global)."""

    name: str
    section: str
    offset: int
    size: int
    data: bytes


@attrs.frozen
class Cubin:
    arch: str
    kernels: tuple  # CubinKernel, in symbol-table order
    filename: str = "<cubin>"

    def kernel(self, name=None) -> CubinKernel:
        """The kernel ``name`` (its symbol, or the plain name of a C++ kernel); the only kernel
        when ``name`` is None."""
        if name is None:
            if len(self.kernels) == 1:
                return self.kernels[0]
            raise CubinError(f"{self.filename}: holds {len(self.kernels)} kernels "
                             f"({', '.join(k.name for k in self.kernels)}): choose one with --kernel")
        for k in self.kernels:
            if k.name == name:
                return k
        matches = [k for k in self.kernels if plain_name(k.name) == name]
        if len(matches) == 1:
            return matches[0]
        known = ", ".join(k.name for k in self.kernels) or "none"
        what = "several kernels" if matches else "no kernel"
        raise CubinError(f"{self.filename}: {what} named {name!r} (its kernels: {known})")


def plain_name(symbol: str) -> str:
    """The function name inside an Itanium-mangled C++ symbol (``_Z6reducePKfPfi`` -> ``reduce``);
    a name that is not mangled is itself."""
    if not symbol.startswith("_Z"):
        return symbol
    i = 2
    if symbol.startswith("N", i):  # a nested name: the last component
        i += 1
        last = symbol
        while i < len(symbol) and symbol[i].isdigit():
            j = i
            while symbol[j].isdigit():
                j += 1
            n = int(symbol[i:j])
            last = symbol[j:j + n]
            i = j + n
        return last
    j = i
    while j < len(symbol) and symbol[j].isdigit():
        j += 1
    if j == i:
        return symbol
    return symbol[j:j + int(symbol[i:j])]


def is_cubin(data: bytes) -> bool:
    return data[:4] == b"\x7fELF"


def read_file(path) -> Cubin:
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CubinError(f"{path}: cannot read file: {e.strerror}") from None
    return read_bytes(data, filename=path)


def read_bytes(data: bytes, filename: str = "<cubin>") -> Cubin:
    """The kernels of the cubin ``data`` (errors name ``filename``)."""
    try:
        from elftools.elf.elffile import ELFFile
        from elftools.common.exceptions import ELFError
    except ImportError:  # a dependency of maxsim; only a broken install lacks it
        raise CubinError("reading cubins needs pyelftools: pip install pyelftools") from None
    if not is_cubin(data):
        raise CubinError(f"{filename}: not an ELF file (a cubin starts with \\x7fELF)")
    try:
        elf = ELFFile(io.BytesIO(data))
        return _read(elf, filename)
    except (ELFError, ValueError, KeyError, IndexError, struct_error()) as e:
        raise CubinError(f"{filename}: malformed cubin: {e}") from None


def struct_error():
    import struct
    return struct.error


def _read(elf, filename):
    if elf["e_machine"] not in ("EM_CUDA", 190):
        raise CubinError(f"{filename}: an ELF file for {elf['e_machine']}, not a CUDA cubin")
    sm = elf["e_flags"] & 0xFF
    arch = f"sm_{sm}"
    if not 50 <= sm <= 53:
        raise CubinError(f"{filename}: a cubin for {arch}; maxsim models Maxwell (sm_50, sm_52, sm_53)")
    sections = {}
    by_index = []
    for s in elf.iter_sections():
        sections[s.name] = s
        by_index.append(s)
    symtab = sections.get(".symtab")
    if symtab is None:
        raise CubinError(f"{filename}: no symbol table (.symtab)")
    symbols = list(symtab.iter_symbols())
    # per-kernel records of the global .nv.info: REGCOUNT, FRAME_SIZE (by symbol index)
    global_info = {}
    if ".nv.info" in sections:
        for a in ea.parse(sections[".nv.info"].data(), f"{filename}: .nv.info"):
            if a.fmt == ea.SVAL and len(a.value) >= 8:
                sym, val = a.words[:2]
                global_info.setdefault(sym, {})[a.name] = val
    bank_relocs = []
    for name, s in sections.items():
        for prefix in (".rel.nv.constant", ".rela.nv.constant"):
            if name.startswith(prefix) and name[len(prefix):].isdigit():
                bank = int(name[len(prefix):])
                for r in s.iter_relocations():
                    target = symbols[r["r_info_sym"]].name if r["r_info_sym"] < len(symbols) else "?"
                    bank_relocs.append((bank, r["r_offset"], r["r_info_type"], target))
    variables = []
    for sym in symbols:
        shndx = sym["st_shndx"]
        if sym["st_info"]["type"] != "STT_OBJECT" or not isinstance(shndx, int) or shndx >= len(by_index):
            continue
        sec = by_index[shndx]
        if sec.name not in (".nv.global", ".nv.global.init"):
            continue
        off, size = sym["st_value"], sym["st_size"]
        init = sec.name == ".nv.global.init"
        data = bytes(sec.data()[off:off + size]) if init else bytes(size)
        variables.append(DeviceVariable(sym.name, sec.name, off, size, data.ljust(size, b"\0")))
    line_rows = []
    if ".debug_line" in sections:
        from .lines import line_rows as _rows
        rel = sections.get(".rel.debug_line")
        relocs = {r["r_offset"]: symbols[r["r_info_sym"]].name for r in rel.iter_relocations()
                  if r["r_info_sym"] < len(symbols)} if rel is not None else {}
        line_rows = _rows(sections[".debug_line"].data(), relocs)
    shared_banks = {}
    for name, s in sections.items():
        for bank in (1, 2, 3, 4, 5):
            if name == f".nv.constant{bank}":
                shared_banks[bank] = bytes(s.data())
    kernels = []
    for idx, sym in enumerate(symbols):
        if sym["st_info"]["type"] != "STT_FUNC" or sym["st_shndx"] in ("SHN_UNDEF",):
            continue
        name = sym.name
        text = sections.get(f".text.{name}")
        if text is None:
            continue
        code = bytes(text.data())
        reg_cnt = (text["sh_info"] >> 24) & 0xFF
        bar_cnt = (text["sh_flags"] >> 20) & 0x1F
        shared = sections.get(f".nv.shared.{name}")
        shared_size = shared["sh_size"] if shared is not None else 0
        c0 = sections.get(f".nv.constant0.{name}")
        c0_size = c0["sh_size"] if c0 is not None else 0
        info = sections.get(f".nv.info.{name}")
        attrs_ = ea.parse(info.data(), f"{filename}: .nv.info.{name}") if info is not None else ()
        params, param_size, max_threads, exits = [], 0, (), ()
        for a in attrs_:
            if a.name == "KPARAM_INFO":
                p = ea.kparam_info(a)
                params.append(CubinParam(p.ordinal, PARAM_BASE + p.offset, p.size, p.log_align))
            elif a.name == "CBANK_PARAM_SIZE":
                param_size = a.half
            elif a.name == "PARAM_CBANK" and not param_size:
                param_size = a.words[1] >> 16
            elif a.name in ("MAX_THREADS", "REQNTID"):
                max_threads = tuple(a.words[:3])
            elif a.name == "EXIT_INSTR_OFFSETS":
                exits = a.words
        params.sort(key=lambda p: p.ordinal)
        banks = dict(shared_banks)
        for bank in (1, 2, 3, 4, 5):
            own = sections.get(f".nv.constant{bank}.{name}")
            if own is not None:
                banks[bank] = bytes(own.data())
        relocs = []
        for rname in (f".rel.text.{name}", f".rela.text.{name}"):
            rs = sections.get(rname)
            if rs is None:
                continue
            for r in rs.iter_relocations():
                target = symbols[r["r_info_sym"]].name if r["r_info_sym"] < len(symbols) else "?"
                relocs.append((r["r_offset"], r["r_info_type"], target))
        g = global_info.get(idx, {})
        if g.get("REGCOUNT") and not reg_cnt:
            reg_cnt = g["REGCOUNT"]
        kernels.append(CubinKernel(
            name=name, arch=arch, code=code, reg_cnt=reg_cnt, bar_cnt=bar_cnt, shared_size=shared_size,
            params=tuple(params), param_size=param_size, constant0_size=c0_size, constants=banks,
            max_threads=max_threads, exit_offsets=tuple(exits), attributes=attrs_,
            relocations=tuple(relocs), frame_size=g.get("FRAME_SIZE", 0), bank_relocations=tuple(bank_relocs),
            variables=tuple(variables),
            source_lines=tuple(sorted((a, f, ln) for s, a, f, ln in line_rows if s in (name, f".text.{name}"))),
            filename=filename))
    if not kernels:
        raise CubinError(f"{filename}: the cubin holds no kernel")
    return Cubin(arch, tuple(kernels), filename)

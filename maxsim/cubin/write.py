"""Write a cubin: our own ELF writer, laying the file out the way NVRTC / ptxas 12.x do for sm_52.

The file is ELF64, little-endian, ``e_machine`` EM_CUDA (190), ``EI_OSABI`` 0x33 (the CUDA ABI),
``EI_ABIVERSION`` 7, ``e_version`` the toolkit version ``e_version`` of NVRTC 12.9's cubins (129)
[cuobjdump -elf of NVRTC 12.9 output]. ``e_flags``: the SM version in bits 0-7 and, as the virtual
architecture, bits 16-23; 0x100 ``EF_CUDA_TEXMODE_UNIFIED`` and 0x400 ``EF_CUDA_64BIT_ADDRESS``
(as cuobjdump prints them for NVRTC's output).

Sections, in file order: ``.shstrtab``, ``.strtab``, ``.symtab``, ``.nv.info`` (per-kernel
``REGCOUNT``, ``FRAME_SIZE``, ``MIN_STACK_SIZE``), ``.nv.info.NAME`` (``CUDA_API_VERSION``,
``PARAM_CBANK``, ``CBANK_PARAM_SIZE``, a ``KPARAM_INFO`` per parameter from the last ordinal down,
``MAXREG_COUNT``, ``MAX_THREADS`` when given, ``EXIT_INSTR_OFFSETS``), ``.nv.constant2/3`` when the
kernels use them, ``.nv.constant0.NAME``, ``.text.NAME`` (aligned to 32 bytes; register count in
``sh_info`` bits 24-31 over the kernel symbol's index, barrier count in ``sh_flags`` bits 20-24),
``.nv.shared.NAME`` (NOBITS). Program headers: the header table itself, one loadable segment over
the constant and code sections, one over the shared-memory sections.
"""

from __future__ import annotations

import struct

from . import attributes as ea
from .elf import PARAM_BASE, TEXT_ALIGN, Cubin, CubinKernel

EM_CUDA = 190
ELFOSABI_CUDA = 0x33
ABI_VERSION = 7
TOOLKIT_VERSION = 129  # e_version of CUDA 12.9's cubins
EF_CUDA_TEXMODE_UNIFIED = 0x100
EF_CUDA_64BIT_ADDRESS = 0x400
CUDA_API_VERSION = 0x81  # the EIATTR_CUDA_API_VERSION NVRTC 12.9 writes

SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_NOBITS, SHT_REL = 1, 2, 3, 8, 9
SHT_CUDA_INFO = 0x70000000
SHF_WRITE, SHF_ALLOC, SHF_EXECINSTR, SHF_INFO_LINK = 0x1, 0x2, 0x4, 0x40
STB_LOCAL, STB_GLOBAL = 0, 1
STT_FUNC, STT_SECTION, STT_OBJECT = 2, 3, 1
STO_CUDA_ENTRY = 0x10
PT_LOAD, PT_PHDR = 1, 6


class _Section:
    def __init__(self, name, type_, flags=0, data=b"", align=1, entsize=0, link=0, info=0, size=None):
        self.name, self.type, self.flags, self.data = name, type_, flags, data
        self.align, self.entsize, self.link, self.info = align, entsize, link, info
        self.size = len(data) if size is None else size
        self.offset = 0
        self.index = 0
        self.name_off = 0


def _strtab(names):
    blob, offs = bytearray(b"\0"), {"": 0}
    for n in names:
        if n not in offs:
            offs[n] = len(blob)
            blob += n.encode() + b"\0"
    return bytes(blob), offs


def write_bytes(kernels, arch: str = "sm_52") -> bytes:
    """The cubin of ``kernels`` (:class:`~maxsim.cubin.elf.CubinKernel` records, or a
    :class:`~maxsim.cubin.elf.Cubin`)."""
    if isinstance(kernels, Cubin):
        arch, kernels = kernels.arch, kernels.kernels
    kernels = list(kernels)
    sm = int(arch.split("_")[1])
    for k in kernels:
        if len(k.code) % 8:
            raise ValueError(f"kernel {k.name}: code of {len(k.code)} bytes is not whole 64-bit words")
    # a constant bank every kernel that has it holds alike is one .nv.constantN section; one that
    # differs between kernels (ptxas's per-kernel constants of bank 2) is .nv.constantN.NAME each
    # (a shared section gives its bank to every kernel, so a bank some kernel lacks is per kernel too)
    shared_banks, own_banks = {}, set()
    for bank in sorted({b for k in kernels for b in k.constants}):
        datas = [k.constants.get(bank) for k in kernels]
        if all(d == datas[0] for d in datas):
            shared_banks[bank] = datas[0]
        else:
            own_banks.add(bank)

    # sections (indices fixed first, so the symbols and links can name them)
    secs = [_Section("", 0)]
    shstr = _Section(".shstrtab", SHT_STRTAB)
    strtab = _Section(".strtab", SHT_STRTAB)
    symtab = _Section(".symtab", SHT_SYMTAB, align=8, entsize=24)
    info = _Section(".nv.info", SHT_CUDA_INFO, align=4)
    secs += [shstr, strtab, symtab, info]
    kinfo = {k.name: _Section(f".nv.info.{k.name}", SHT_CUDA_INFO, SHF_INFO_LINK, align=4) for k in kernels}
    secs += list(kinfo.values())
    banks = {b: _Section(f".nv.constant{b}", SHT_PROGBITS, SHF_ALLOC, shared_banks[b], align=4)
             for b in sorted(shared_banks) if shared_banks[b]}
    secs += list(banks.values())
    own = {(k.name, b): _Section(f".nv.constant{b}.{k.name}", SHT_PROGBITS, SHF_ALLOC | SHF_INFO_LINK,
                                 k.constants[b], align=4)
           for k in kernels for b in sorted(own_banks) if k.constants.get(b)}
    secs += list(own.values())
    const0 = {}
    for k in kernels:
        size = max(k.constant0_size, PARAM_BASE + k.param_size)
        const0[k.name] = _Section(f".nv.constant0.{k.name}", SHT_PROGBITS, SHF_ALLOC | SHF_INFO_LINK,
                                  bytes(size), align=4)
    secs += list(const0.values())
    texts = {k.name: _Section(f".text.{k.name}", SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR | (k.bar_cnt << 20),
                              k.code, align=TEXT_ALIGN) for k in kernels}
    secs += list(texts.values())
    shared = {k.name: _Section(f".nv.shared.{k.name}", SHT_NOBITS, SHF_WRITE | SHF_ALLOC | SHF_INFO_LINK,
                               align=4, size=k.shared_size) for k in kernels if k.shared_size}
    secs += list(shared.values())
    # __device__ variables (the same for every kernel of the cubin): .nv.global.init with their
    # initial bytes, .nv.global (zero-filled) by size
    variables = list(kernels[0].variables) if kernels else []
    gsecs = {}
    for name, typ in ((".nv.global.init", SHT_PROGBITS), (".nv.global", SHT_NOBITS)):
        vs = [v for v in variables if v.section == name]
        if vs:
            size = max(v.offset + v.size for v in vs)
            data = bytearray(size)
            for v in vs:
                data[v.offset:v.offset + v.size] = v.data
            gsecs[name] = _Section(name, typ, SHF_WRITE | SHF_ALLOC, bytes(data) if typ == SHT_PROGBITS else b"",
                                   align=8, size=size)
    secs += list(gsecs.values())
    relocs = list(kernels[0].bank_relocations) if kernels else []
    rels = {b: _Section(f".rel.nv.constant{b}", SHT_REL, SHF_INFO_LINK, align=8, entsize=16)
            for b in dict.fromkeys(b for b, *_ in relocs)}
    secs += list(rels.values())
    for i, s in enumerate(secs):
        s.index = i

    # symbols: a section symbol for each code / data section, then the kernels (global)
    local = [s for s in secs if s.type in (SHT_PROGBITS, SHT_NOBITS)]
    syms = [("", 0, 0, 0, 0)]  # name, info, other, shndx, size
    sym_of_section = {}
    for s in local:
        sym_of_section[s.name] = len(syms)
        syms.append((s.name, (STB_LOCAL << 4) | STT_SECTION, 0, s.index, 0))
    first_global = len(syms)
    sym_of_kernel = {}
    for k in kernels:
        sym_of_kernel[k.name] = len(syms)
        syms.append((k.name, (STB_GLOBAL << 4) | STT_FUNC, STO_CUDA_ENTRY, texts[k.name].index, len(k.code), 0))
    sym_of_variable = {}
    for v in variables:
        sym_of_variable[v.name] = len(syms)
        syms.append((v.name, (STB_GLOBAL << 4) | STT_OBJECT, 0, gsecs[v.section].index, v.size, v.offset))
    syms = [s if len(s) == 6 else s + (0,) for s in syms]
    strdata, stroff = _strtab([n for n, *_ in syms])
    strtab.data, strtab.size = strdata, len(strdata)
    symdata = b"".join(struct.pack("<IBBHQQ", stroff[n], inf, oth, shn, value, size)
                       for n, inf, oth, shn, size, value in syms)
    symtab.data, symtab.size = symdata, len(symdata)
    symtab.link, symtab.info = strtab.index, first_global

    # attributes
    glob = []
    for k in kernels:
        glob.append(("REGCOUNT", ea.SVAL, struct.pack("<II", sym_of_kernel[k.name], k.reg_cnt)))
        glob.append(("FRAME_SIZE", ea.SVAL, struct.pack("<II", sym_of_kernel[k.name], k.frame_size)))
    for k in kernels:
        glob.append(("MIN_STACK_SIZE", ea.SVAL, struct.pack("<II", sym_of_kernel[k.name], 0)))
    info.data = ea.pack(glob)
    info.size, info.link = len(info.data), symtab.index
    for k in kernels:
        recs = [("CUDA_API_VERSION", ea.SVAL, struct.pack("<I", CUDA_API_VERSION))]
        recs.append(("PARAM_CBANK", ea.SVAL, struct.pack("<II", sym_of_section[const0[k.name].name],
                                                         PARAM_BASE | (k.param_size << 16))))
        recs.append(("CBANK_PARAM_SIZE", ea.HVAL, k.param_size))
        for p in sorted(k.params, key=lambda p: -p.ordinal):
            rec = ea.kparam_record(ea.ParamInfo(p.ordinal, p.offset - PARAM_BASE, p.size, p.log_align))
            recs.append(("KPARAM_INFO", ea.SVAL, rec))
        recs.append(("MAXREG_COUNT", ea.HVAL, 0xFF))
        if k.max_threads:
            recs.append(("MAX_THREADS", ea.SVAL, struct.pack("<3I", *k.max_threads)))
        if k.exit_offsets:
            recs.append(("EXIT_INSTR_OFFSETS", ea.SVAL, struct.pack(f"<{len(k.exit_offsets)}I", *k.exit_offsets)))
        s = kinfo[k.name]
        s.data = ea.pack(recs)
        s.size, s.link, s.info = len(s.data), symtab.index, texts[k.name].index
        const0[k.name].info = texts[k.name].index
        for b in own_banks:
            if (k.name, b) in own:
                own[(k.name, b)].info = texts[k.name].index
        t = texts[k.name]
        t.link, t.info = symtab.index, (k.reg_cnt << 24) | sym_of_kernel[k.name]
        if k.name in shared:
            shared[k.name].info = texts[k.name].index

    # the words of a constant bank the loader patches with a variable's (or section's) address
    for b, s in rels.items():
        entries = []
        for bank, off, typ, sym in relocs:
            if bank == b:
                index = sym_of_variable.get(sym, sym_of_section.get(sym))
                if index is None:
                    raise ValueError(f"relocation of c[0x{b:x}][0x{off:x}] against {sym!r}, which the cubin does not define")
                entries.append(struct.pack("<QQ", off, (index << 32) | typ))
        s.data = b"".join(entries)
        s.size, s.link, s.info = len(s.data), symtab.index, banks[b].index if b in banks else 0

    shdata, shoff = _strtab([s.name for s in secs])
    shstr.data, shstr.size = shdata, len(shdata)
    for s in secs:
        s.name_off = shoff[s.name]

    # layout: ELF header, section data, section headers, program headers
    out = bytearray(64)
    load_lo = load_hi = None
    for s in secs[1:]:
        pad = (-len(out)) % s.align
        out += bytes(pad)
        s.offset = len(out)
        if s.type != SHT_NOBITS:
            out += s.data
            if s.flags & SHF_ALLOC:
                load_lo = s.offset if load_lo is None else load_lo
                load_hi = len(out)
    nobits_size = sum(s.size for s in secs if s.type == SHT_NOBITS)
    out += bytes((-len(out)) % 8)
    e_shoff = len(out)
    for s in secs:
        if s.type == SHT_NOBITS:
            s.offset = e_shoff
    for s in secs:
        out += struct.pack("<IIQQQQIIQQ", s.name_off, s.type, s.flags, 0, s.offset if s.index else 0,
                           s.size, s.link, s.info, s.align if s.index else 0, s.entsize)
    e_phoff = len(out)
    phdrs = [(PT_PHDR, 5, e_phoff, 0, 0)]
    if load_lo is not None:
        phdrs.append((PT_LOAD, 5, load_lo, load_hi - load_lo, load_hi - load_lo))
    if nobits_size:
        phdrs.append((PT_LOAD, 6, e_shoff, 0, nobits_size))
    n_ph = len(phdrs)
    phdrs[0] = (PT_PHDR, 5, e_phoff, 56 * n_ph, 56 * n_ph)
    for typ, flags, off, filesz, memsz in phdrs:
        out += struct.pack("<IIQQQQQQ", typ, flags, off, 0, 0, filesz, memsz, 8)
    flags = sm | (sm << 16) | EF_CUDA_TEXMODE_UNIFIED | EF_CUDA_64BIT_ADDRESS
    ident = b"\x7fELF" + bytes((2, 1, 1, ELFOSABI_CUDA, ABI_VERSION)) + bytes(7)
    out[:64] = ident + struct.pack("<HHIQQQIHHHHHH", 2, EM_CUDA, TOOLKIT_VERSION, 0, e_phoff, e_shoff, flags,
                                   64, 56, n_ph, 64, len(secs), shstr.index)
    return bytes(out)


def write_file(path, kernels, arch: str = "sm_52") -> None:
    with open(path, "wb") as f:
        f.write(write_bytes(kernels, arch))

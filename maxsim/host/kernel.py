"""A kernel as the host sees it: its code and its parameter table with the parameters' names.

A kernel comes from a file or a text, in maxas's final form or its source language
(:func:`maxsim.asm.load_kernel` tells them apart). Parameter names come from the header's
parameter lines (``#\t0:0x140:4:0 x``, either form) and, in the source language, from the
``<CONSTANT_MAPPING>`` names of constant-bank words at or past ``0x140`` (``param_x :
c[0x0][0x140]`` names the parameter at 0x140 both ``param_x`` and ``x``). A source kernel that
lists no parameter lines takes its parameters from those names (4 bytes each). Mapping names whose
value is an integer (``texA : 0x80000001``) name texture handles for :func:`maxsim.host.launch`.
"""

from __future__ import annotations

import os
import re

import attrs

from ..errors import LaunchError
from ..functional.launch import PARAM_BASE
from ..functional.memory import texture_index
from ..isa import instruction as ins

# a parameter line with a name; maxas's own sources end some with a comma or a // comment
_PARAM_LINE = re.compile(r"#\s*(\d+)\s*:\s*(0x[0-9a-fA-F]+|\d+)\s*:\s*(\d+)\s*:\s*(\d+)\s+([A-Za-z_]\w*)\s*,?\s*(?://.*)?$")
_CONST_WORD = re.compile(r"^c\[0x0\]\[(0x[0-9a-fA-F]+|\d+)\]$")


def compile_options(options=(), defines=None) -> tuple:
    """The compiler's option list: ``options`` as given (one string or a sequence), then each
    define as ``-DNAME=value`` (``-DNAME`` for None), in the order given."""
    if isinstance(options, str):
        options = (options,)
    out = [str(o) for o in (options or ())]
    for name, value in (defines or {}).items():
        if not re.fullmatch(r"[A-Za-z_]\w*", str(name)):
            raise LaunchError(f"define {name!r}: not a C macro name")
        out.append(f"-D{name}" if value is None else f"-D{name}={value}")
    return tuple(out)


@attrs.frozen
class KernelParam:
    """One parameter of the kernel's table: its names (possibly none), position, offset in
    constant bank 0 and size in bytes."""

    names: tuple
    ordinal: int
    offset: int
    size: int

    @property
    def label(self) -> str:
        first = self.names[0] if self.names else f"#{self.ordinal}"
        return f"{first} (c[0x0][0x{self.offset:x}], {self.size} bytes)"


@attrs.frozen
class Kernel:
    """A decoded kernel with its named parameters and texture handles (see the module doc)."""

    code: ins.Kernel
    params: tuple  # KernelParam records, by offset
    textures: tuple = ()  # (name, texture number) pairs from the source's constant names
    notes: tuple = ()  # header values the assembler set from the code, one line each
    banks: dict = attrs.field(factory=dict)  # {bank: bytes}: constant banks besides 0 (a cubin's 2 and 3)
    max_threads: int = 0  # threads per CTA a cubin's kernel was compiled for (__launch_bounds__), 0: any
    compile_options: tuple = ()  # the NVRTC / ptxas options a .cu / .ptx kernel was compiled with (-D included)

    @property
    def name(self) -> str:
        return self.code.name

    @classmethod
    def load(cls, path_or_text, cfg=None, kernel=None, options=(), defines=None) -> "Kernel":
        """A kernel from a file path or a kernel text (a string with a line break is text), in
        either form; or from a .cubin (decoded), a .cu or a .ptx file (compiled for sm_52 with
        NVIDIA's compilers, the extra ``maxsim[cuda]``), ``kernel`` naming which of its kernels
        (needed when it holds several). ``options``: compiler options (NVRTC's for .cu, e.g.
        ``["-use_fast_math"]``; ptxas's for .ptx); ``defines``: {macro: value or None} given to
        NVRTC as ``-Dmacro=value`` (a .cu only). Parameters are named as in the CUDA C signature
        or the PTX ``.entry``; every parameter is also reachable by position (``"#0"``) and
        offset. Errors are one line naming the file and line."""
        from ..cubin import is_binary_path, load
        opts = compile_options(options, defines)
        if not (isinstance(path_or_text, str) and "\n" in path_or_text) and is_binary_path(path_or_text):
            path = os.fspath(path_or_text)
            if opts and path.lower().endswith(".cubin"):
                raise LaunchError(f"{path}: a .cubin is already compiled: compiler options "
                                  f"({' '.join(opts)}) apply to a .cu or .ptx file")
            if defines and path.lower().endswith(".ptx"):
                raise LaunchError(f"{path}: defines (-D) apply to CUDA C (.cu); ptxas takes no macros")
            loaded = load(path_or_text, kernel, opts)
            names = {i: n for i, n in enumerate(loaded.names) if n}
            k = cls.of(loaded.code, names)
            return attrs.evolve(k, banks=dict(loaded.banks), max_threads=loaded.max_threads, compile_options=opts)
        if opts:
            raise LaunchError("compiler options and defines apply to a .cu or .ptx file, not to SASS text")
        from ..asm import assemble_text, is_source
        from ..sass import parse_text
        text, filename = _text_of(path_or_text)
        if is_source(text):
            asm = assemble_text(text, filename=filename, cfg=cfg)
            return attrs.evolve(cls.of(asm.kernel, _header_names(text), asm.constants), notes=asm.notes)
        return cls.of(parse_text(text, filename=filename), _header_names(text))

    @classmethod
    def of(cls, code: ins.Kernel, header_names=None, constants=None) -> "Kernel":
        """Wrap decoded ``code``; ``header_names``: {ordinal: name} from its parameter lines,
        ``constants``: the source's constant names -> value text."""
        header_names = header_names or {}
        by_offset = {}
        for p in code.params:
            names = _aliases(header_names[p.ordinal]) if header_names.get(p.ordinal) else ()
            by_offset[p.offset] = [names, p.ordinal, p.size]
        declared = bool(code.params)
        textures = []
        for name, value in (constants or {}).items():
            value = value.strip()
            m = _CONST_WORD.match(value)
            if m:
                off = int(m.group(1), 0)
                if off < PARAM_BASE:
                    continue
                entry = by_offset.get(off)
                if entry is None:
                    if declared:
                        continue  # a word inside a wider parameter, or not a parameter
                    entry = by_offset[off] = [(), len(by_offset), 4]
                entry[0] = tuple(dict.fromkeys(entry[0] + _aliases(name)))
                continue
            try:
                handle = int(value, 0)
            except ValueError:
                continue
            textures.append((name, texture_index(handle)))
        params = tuple(KernelParam(tuple(v[0]), v[1], off, v[2]) for off, v in sorted(by_offset.items()))
        if not declared and params:
            params = tuple(attrs.evolve(p, ordinal=i) for i, p in enumerate(params))
        return cls(code, params, tuple(textures))

    def param(self, key) -> KernelParam:
        """The parameter named ``key``, or at byte offset ``key`` (an int) of constant bank 0."""
        for p in self.params:
            if (isinstance(key, str) and key in p.names) or (not isinstance(key, str) and p.offset == key):
                return p
        if isinstance(key, str) and key.startswith("#") and key[1:].isdigit():  # by position
            for p in self.params:
                if p.ordinal == int(key[1:]):
                    return p
            raise LaunchError(f"kernel {self.name} has no parameter #{key[1:]} "
                              f"(it takes {len(self.params)})")
        if isinstance(key, str):
            known = ", ".join(p.names[0] for p in self.params if p.names) or "none named"
            raise LaunchError(f"kernel {self.name} has no parameter named {key!r} (its parameters: {known})")
        if self.params:
            offsets = ", ".join(f"0x{p.offset:x}" for p in self.params)
            raise LaunchError(f"kernel {self.name} has no parameter at offset 0x{key:x} "
                              f"(its parameters start at {offsets})")
        return None


def _aliases(name) -> tuple:
    """The names a parameter named ``name`` answers to: ``param_out`` also as ``out`` (maxas names
    parameters ``param_*``); ``param_0[0]``, the first word of a wider parameter as ``maxas.pl -e``
    maps it, also as ``param_0``."""
    out = [name]
    m = re.fullmatch(r"(\w+)\[0\]", name)
    if m:
        out.append(m.group(1))
    base = out[-1]
    if base.startswith("param_") and re.fullmatch(r"[A-Za-z_]\w*", base[6:]):
        out.append(base[6:])
    return tuple(dict.fromkeys(out))


def _text_of(path_or_text):
    """(text, filename) of a path or a kernel text."""
    if isinstance(path_or_text, str) and "\n" in path_or_text:
        return path_or_text, "<string>"
    from ..asm.assemble import _read
    return _read(os.fspath(path_or_text))


def _header_names(text) -> dict:
    """{ordinal: name} of the header's parameter lines that end with a name."""
    out = {}
    for line in text.splitlines():
        m = _PARAM_LINE.match(line.strip())
        if m:
            out[int(m.group(1))] = m.group(5)
    return out

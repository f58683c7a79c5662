"""Decoded Maxwell instructions: immutable records built once by the front end.

Functional and timing code never look at SASS text again; they use these records (and the
per-kernel tables built from them).
"""

from __future__ import annotations

import attrs

RZ = 255  # the zero register: reads 0, writes are discarded
PT = 7  # the always-true predicate
NUM_REGS = 255  # R0..R254

# Operand kinds
REG = "reg"  # general register (reg = 0..254, or RZ = 255)
PRED = "pred"  # predicate register (reg = 0..6, or PT = 7)
IMM = "imm"  # integer immediate (value, signed as written)
FIMM = "fimm"  # floating-point immediate (fvalue)
CONST = "const"  # constant bank c[bank][value]
SREG = "sreg"  # special register (name)
LABEL = "label"  # branch / call target (name)
MEM = "mem"  # memory address [reg + value]
WORD = "word"  # a bare keyword operand, such as the texture dimension 1D


@attrs.frozen(slots=True)
class Operand:
    kind: str
    reg: int = -1
    value: int = 0
    fvalue: float = 0.0
    bank: int = 0
    name: str = ""
    neg: bool = False  # '-x'
    not_: bool = False  # '!Pn'
    abs: bool = False  # '|x|'
    h1: bool = False  # '.H1' half selector (XMAD)
    reuse: bool = False  # '.reuse'
    text: str = ""  # how an immediate or float was written (kept for printing back)


@attrs.frozen(slots=True)
class Control:
    """The 17-bit scheduling control of one instruction (``WW:R:W:Y:S``)."""

    wait: int = 0  # 6-bit wait mask, bit 0 = barrier 1
    read_bar: int = 0  # 1..6, 0 = none
    write_bar: int = 0  # 1..6, 0 = none
    yield_: bool = False
    stall: int = 1  # 0..15


@attrs.frozen(slots=True)
class Instruction:
    index: int  # position in the kernel (0-based)
    opcode: str  # base opcode, e.g. "FFMA"
    mods: tuple  # modifiers in order, e.g. ("U", "128")
    operands: tuple  # Operand records in textual order (destinations first)
    control: Control
    pred: int = PT  # guarding predicate 0..6, PT = 7 (no guard)
    pred_neg: bool = False
    line: int = 0  # 1-based source line
    filename: str = "<string>"
    # Derived at decode time (see maxsim.isa.opcodes.decode):
    dst_regs: tuple = ()  # general registers written (vector groups expanded, RZ dropped)
    dst_preds: tuple = ()  # predicate registers written
    src_regs: tuple = ()  # general registers read (vector groups expanded, RZ dropped)
    slot_regs: tuple = ()  # register read in source-operand slot 0, 1, 2 (-1: not a register / RZ)
    reuse_mask: int = 0  # bit n: slot n carries .reuse
    unit: str = ""  # timing class (see maxsim.isa.opcodes.UNITS)
    target: int = -1  # branch / call target instruction index
    target_label: str = ""
    source: str = ""  # the CUDA source line (file:line) of a cubin compiled with -lineinfo

    @property
    def full_opcode(self) -> str:
        return ".".join((self.opcode,) + tuple(self.mods))

    @property
    def where(self) -> str:
        if self.source:
            return f"{self.filename}:{self.line} ({self.source})"
        return f"{self.filename}:{self.line}"


@attrs.frozen(slots=True)
class Param:
    ordinal: int
    offset: int
    size: int
    align: int


@attrs.frozen(slots=True, cache_hash=True)  # (hashed per launch: a launch's shape, the caches of its tables)
class Kernel:
    name: str
    arch: str
    ins_cnt: int
    reg_cnt: int
    shared_size: int
    bar_cnt: int
    params: tuple  # Param records
    instructions: tuple  # Instruction records
    labels: tuple  # (name, instruction index) pairs, in file order
    filename: str = "<string>"
    # constant banks besides bank 0 that the kernel's image fills (a cubin's .nv.constant2:
    # compiler constants, .nv.constant3: __constant__ data): (bank, bytes) pairs
    banks: tuple = ()
    # bytes of local memory (LDL / STL) each thread has: a cubin's frame size (EIATTR_FRAME_SIZE),
    # the text form's '# LocalSize:' header
    local_size: int = 0
    # __device__ variables: (name, size, initial bytes), placed in global memory at launch; and the
    # constant-bank words that hold their addresses: (bank, byte offset, 8, name, addend)
    variables: tuple = ()
    variable_words: tuple = ()

    @property
    def label_map(self) -> dict:
        return dict(self.labels)

    def labels_at(self, index: int) -> list:
        return [name for name, i in self.labels if i == index]

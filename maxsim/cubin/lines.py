"""The CUDA source line of each instruction of a cubin compiled with line information (NVRTC's
``-lineinfo``): the DWARF line table of its ``.debug_line`` section, whose sequences start at a
kernel's code (a relocation of ``DW_LNE_set_address`` against the kernel's symbol) and give byte
offsets into it, as ``nvdisasm -g`` prints them (``//## File "x.cu", line 12``).

The line-number program is DWARF's (version 2-4, section 6.2 of the DWARF 4 standard).
"""

from __future__ import annotations


def _leb(d, i, signed):
    """A LEB128 number of ``d`` at ``i`` (DWARF 4, 7.6): (value, index after it)."""
    r = s = 0
    while True:
        b = d[i]
        i += 1
        r |= (b & 0x7F) << s
        s += 7
        if b < 0x80:
            return (r - (1 << s) if signed and b & 0x40 else r), i


def _uleb(d, i):
    return _leb(d, i, False)


def _sleb(d, i):
    return _leb(d, i, True)


def _cstr(d, i):
    j = d.index(b"\0", i)
    return d[i:j].decode("utf-8", "replace"), j + 1


def line_rows(data: bytes, relocations: dict) -> list:
    """(symbol, byte offset, file, line) rows of a DWARF line table; ``relocations`` maps the
    section offset of a DW_LNE_set_address operand to the symbol it is relative to."""
    d = bytes(data)
    out = []
    pos = 0
    while pos + 10 <= len(d):
        length = int.from_bytes(d[pos:pos + 4], "little")
        end = pos + 4 + length
        version = int.from_bytes(d[pos + 4:pos + 6], "little")
        prog = pos + 10 + int.from_bytes(d[pos + 6:pos + 10], "little")
        i = pos + 10
        min_inst = d[i]
        i += 2 if version >= 4 else 1  # (maximum_operations_per_instruction from version 4)
        line_base = d[i + 1] - 256 if d[i + 1] > 127 else d[i + 1]
        line_range, opbase = d[i + 2], d[i + 3]
        i += 4
        lengths = list(d[i:i + opbase - 1])
        i += opbase - 1
        dirs = [""]
        while d[i]:
            s, i = _cstr(d, i)
            dirs.append(s)
        i += 1
        files = [""]
        while d[i]:
            s, i = _cstr(d, i)
            di, i = _uleb(d, i)
            _, i = _uleb(d, i)
            _, i = _uleb(d, i)
            files.append(f"{dirs[di]}/{s}" if di < len(dirs) and dirs[di] and not s.startswith("/") else s)
        i = prog
        addr, f, line, sym = 0, 1, 1, None

        def row():
            out.append((sym, addr, files[f] if f < len(files) else "", line))
        while i < end:
            op = d[i]
            i += 1
            if op >= opbase:
                adj = op - opbase
                addr += adj // line_range * min_inst
                line += line_base + adj % line_range
                row()
            elif op == 0:  # extended
                n, i = _uleb(d, i)
                sub = d[i]
                if sub == 1:  # end_sequence
                    addr, f, line, sym = 0, 1, 1, None
                elif sub == 2:  # set_address
                    sym = relocations.get(i + 1)
                    addr = int.from_bytes(d[i + 1:i + n], "little")
                i += n
            elif op == 1:  # copy
                row()
            elif op == 2:
                v, i = _uleb(d, i)
                addr += v * min_inst
            elif op == 3:
                v, i = _sleb(d, i)
                line += v
            elif op == 4:
                f, i = _uleb(d, i)
            elif op == 8:  # const_add_pc
                addr += (255 - opbase) // line_range * min_inst
            elif op == 9:  # fixed_advance_pc
                addr += int.from_bytes(d[i:i + 2], "little")
                i += 2
            elif op in (5, 12):
                _, i = _uleb(d, i)
            elif op not in (6, 7, 10, 11):
                for _ in range(lengths[op - 1]):
                    _, i = _uleb(d, i)
        pos = end
    return out


def source_of(rows, offset: int) -> str:
    """``file:line`` of the code at byte ``offset`` of a kernel from its (offset, file, line) rows
    in offset order ("" before the first)."""
    best = None
    for off, f, line in rows:
        if off > offset:
            break
        best = (f, line)
    return f"{best[0]}:{best[1]}" if best else ""

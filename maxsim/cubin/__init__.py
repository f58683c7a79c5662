"""Cubins: the ELF files NVIDIA's compilers write, read (:mod:`.elf`) and written (:mod:`.write`);
their kernels as maxas's text form (:mod:`.disasm`); kernels from .cubin, .cu and .ptx files
(:mod:`.load`)."""

from .elf import Cubin, CubinError, CubinKernel, CubinParam, plain_name, read_bytes, read_file
from .load import BINARY_SUFFIXES, Loaded, is_binary_path, load
from .write import write_bytes, write_file

__all__ = ["Cubin", "CubinError", "CubinKernel", "CubinParam", "plain_name", "read_bytes", "read_file",
           "write_bytes", "write_file", "load", "Loaded", "is_binary_path", "BINARY_SUFFIXES"]

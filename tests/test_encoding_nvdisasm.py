"""NVIDIA's disassembler as the oracle of the instruction codec.

nvdisasm / cuobjdump 12.8.55 (the last release that reads sm_50/52; the Triton 3.3.1 wheel ships
them, see tests/nvdisasm_tool.py) disassemble

- random words of every form of the encoding table (each field and modifier drawn from its legal
  values), and every kernel of the project as maxsim encodes it: maxsim's decoded text must say
  the same instruction, operand by operand (normalized for the syntax differences listed in
  tests/nvdisasm_tool.py);
- kernels of our own in CUDA C (tests/data/codec_corpus.cu) that NVRTC 12.9 compiles for sm_52:
  maxsim decodes the words ptxas wrote as cuobjdump does, and encodes its text back to the very
  same bytes (control words included).

Skipped, with the reason, where the tools are not installed.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import codec_words
import nvdisasm_tool as N
import nvrtc_tool
import project_kernels
from maxsim.sass import encoding as E

NVDISASM = N.find_nvdisasm()
needs_nvdisasm = pytest.mark.skipif(
    NVDISASM is None, reason="nvdisasm 12.8 not found: pip install triton==3.3.1 (it ships "
                             "triton/backends/nvidia/bin/nvdisasm) or set MAXSIM_NVDISASM")
CORPUS = Path(__file__).resolve().parent / "data" / "codec_corpus.cu"


def _compare(lines, theirs):
    """Disagreements between decoded lines and {address: nvdisasm text}."""
    bad = []
    for d in lines:
        ta = E.instruction_address(d.target) if d.target >= 0 else None
        ours = (d.guard + " " if d.guard else "") + d.text
        other = theirs.get(d.address, "<none>")
        if not N.equivalent(N.normalize_ours(ours, ta), N.normalize_nvdisasm(other)):
            bad.append(f"0x{d.address:x} 0x{d.word:016x}: maxsim {ours!r}, nvdisasm {other!r}")
    return bad


@needs_nvdisasm
def test_the_tool_is_the_12_8_release():
    assert N.tool_version(NVDISASM).startswith(N.VERSION)


@needs_nvdisasm
@pytest.mark.parametrize("seed", range(3))
def test_every_form_of_the_table_agrees_with_nvdisasm(seed):
    rng = random.Random(seed)
    entries, forms = [], []
    for c in E.COMPILED:
        for _ in range(12):
            entries.append((codec_words.random_word(c, rng.randrange), codec_words.reuse_bits(c, rng.randrange)))
            forms.append(c)
    code = codec_words.lone_code(entries)
    lines = [d for d in E.decode(code, stop_at_self_branch=False) if d.index % 3 == 0]
    assert len(lines) == len(entries)
    assert _compare(lines, N.disassemble(NVDISASM, code)) == []
    # and every decoded text encodes to its word again (reuse flags included)
    assert E.encode_text(E.format_lines(E.decode(code, stop_at_self_branch=False)), tail=False) == code


@needs_nvdisasm
@pytest.mark.parametrize("name", [n for n, _ in project_kernels.project_kernels()])
def test_project_kernels_as_maxsim_encodes_them_agree_with_nvdisasm(name):
    import test_encoding

    if name in test_encoding.NOT_ENCODABLE:
        pytest.skip(test_encoding.NOT_ENCODABLE[name])
    k = dict(project_kernels.project_kernels())[name]
    code = E.encode(k)
    lines = E.decode(code)
    assert len(lines) == len(k.instructions)
    assert _compare(lines, N.disassemble(NVDISASM, code)) == []


@pytest.fixture(scope="module")
def ptxas_kernels():
    lib = nvrtc_tool.find_nvrtc()
    if lib is None:
        pytest.skip("NVRTC not found: pip install nvidia-cuda-nvrtc-cu12==12.9.86 or set MAXSIM_NVRTC")
    cuobjdump = N.find_cuobjdump()
    if cuobjdump is None:
        pytest.skip("cuobjdump 12.8 not found: pip install triton==3.3.1")
    cubin = nvrtc_tool.compile_cubin(lib, CORPUS.read_text(), "sm_52")
    return N.cuobjdump_sass(cuobjdump, cubin)


KERNELS = ("saxpy", "reduce_shfl", "histogram", "transpose", "int_math", "float_math", "vote_ballot",
           "stencil", "poly", "scan_block", "divergent_loop", "wide_loads")


@pytest.mark.parametrize("kernel", KERNELS)
def test_ptxas_code_decodes_as_cuobjdump_and_encodes_back_bit_exact(ptxas_kernels, kernel):
    code, texts = ptxas_kernels[kernel]
    lines = E.decode(code)
    assert len(lines) > 10
    assert _compare(lines, texts) == []
    assert E.encode_text(E.format_lines(lines), group_targets=True) == code


def test_the_corpus_names_every_kernel_it_holds():
    import re
    assert set(re.findall(r"__global__ void (\w+)", CORPUS.read_text())) == set(KERNELS)

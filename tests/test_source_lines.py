"""Refusals name the CUDA source line when the cubin carries line information (-lineinfo): the
line of every instruction is the one ``nvdisasm -g`` prints above it."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from maxsim.errors import LaunchError
from nvidia_tools import require_nvrtc

SOURCE = r"""extern "C" __global__ void spin(float* y, int delay)
{
    clock_t t0 = clock();
    while ((int)(clock() - t0) < delay) { }
    y[threadIdx.x] = 1.0f;
}

extern "C" __global__ void scale(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = x[i] * 3.0f;
}
"""


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    require_nvrtc()
    p = tmp_path_factory.mktemp("lines") / "lines.cu"
    p.write_text(SOURCE)
    return p


def test_a_refusal_names_the_cuda_source_line(source):
    from maxsim.host import Kernel, launch
    k = Kernel.load(source, kernel="spin", options=["-lineinfo"])
    with pytest.raises(LaunchError, match=rf"\({re.escape(str(source))}:4\): BRA uses the clock read at .*"
                                          rf"\({re.escape(str(source))}:[34]\)"):
        launch(k, 1, 32, params={"y": "y", "delay": 10}, buffers={"y": np.zeros(32, np.float32)},
               timing=False, predict=False)
    # without line information: the SASS line alone
    plain = Kernel.load(source, kernel="spin")
    assert all(i.source == "" for i in plain.code.instructions)


def test_every_instruction_has_the_line_nvdisasm_prints(source, tmp_path):
    from nvdisasm_tool import find_nvdisasm
    tool = find_nvdisasm()
    if tool is None:
        pytest.skip("nvdisasm is not available")
    from maxsim.cubin import read_bytes
    from maxsim.cubin.build import code_offset
    from maxsim.cubin.load import with_source_lines
    from maxsim.cuda import compile_file
    from maxsim.cubin.disasm import decode_kernel
    data = compile_file(str(source), ("-lineinfo",))
    path = tmp_path / "lines.cubin"
    path.write_bytes(data)
    listing = subprocess.run([tool, "-g", "-c", str(path)], capture_output=True, text=True, check=True).stdout
    theirs = {}  # (kernel, byte offset) -> line
    kernel, line = None, None
    for text in listing.splitlines():
        m = re.search(r"\.text\.(\w+):", text)
        if m:
            kernel, line = m.group(1), None
        m = re.search(r'//## File ".*", line (\d+)', text)
        if m:
            line = int(m.group(1))
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/", text)
        if m and kernel and line is not None:
            theirs[(kernel, int(m.group(1), 16))] = line
    checked = 0
    for k in read_bytes(data).kernels:
        assert k.source_lines
        code = with_source_lines(k, decode_kernel(k)[0])
        for i in code.instructions:
            key = (k.name, code_offset(i.index))
            if key in theirs:
                assert int(i.source.rsplit(":", 1)[1]) == theirs[key], (key, i.source)
                checked += 1
    assert checked > 20

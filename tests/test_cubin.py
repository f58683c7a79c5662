"""Cubins in and out: the ELF container (read with pyelftools, written by maxsim), CUDA C compiled
by NVRTC, and the corpus of CUDA C kernels (workloads/cuda) run against numpy.

NVIDIA's tools are optional here: tests that need NVRTC (the ``maxsim[cuda]`` extra, part of the
test extra) or cuobjdump 12.8 (``MAXSIM_CUOBJDUMP`` or the Triton 3.3.1 wheel; .ci/run fetches it)
are skipped with the reason when they are absent. The corpus runs twice: decoded by NVIDIA's
cuobjdump (an independent decoder, so the functional model is checked on ptxas's real output) and
decoded by maxsim's own codec (``maxsim disasm``), skipped while this build has none.
"""

from __future__ import annotations

import struct
import subprocess
import sys

import attrs
import numpy as np
import pytest

from maxsim.cubin import plain_name, read_bytes, write_bytes
from maxsim.cubin.disasm import header_lines
from maxsim.errors import MaxsimError
from nvidia_tools import cuobjdump, maxas_lines, sass_listing, require_nvrtc
from workloads.cuda import CASES, COEFFS


def _has_codec():
    try:
        from maxsim.cubin.disasm import decoder
        decoder()
        return True
    except MaxsimError:
        return False


needs_cuobjdump = pytest.mark.skipif(cuobjdump() is None, reason="cuobjdump 12.8 not found (set MAXSIM_CUOBJDUMP "
                                     "or install the triton==3.3.1 wheel; .ci/run fetches it)")
needs_codec = pytest.mark.skipif(not _has_codec(), reason="this build has no instruction codec "
                                 "(maxsim.sass.encoding) yet")


@pytest.fixture(scope="module")
def cubins():
    compile_file = require_nvrtc()
    return {name: compile_file(case.path, case.options) for name, case in CASES.items()}


def test_plain_names_of_mangled_kernels():
    assert plain_name("_Z9block_sumPKfPfi") == "block_sum"
    assert plain_name("_ZN2ns6kernelEPf") == "kernel"
    assert plain_name("saxpy") == "saxpy"


def test_a_missing_extra_says_what_to_install(monkeypatch):
    from maxsim.cuda import compile as cc
    monkeypatch.setattr(cc, "_nvidia_dirs", lambda: [])
    cc._nvrtc.cache_clear()
    try:
        with pytest.raises(cc.MissingToolError, match=r'pip install "maxsim\[cuda\]"'):
            cc.compile_cuda("__global__ void k() {}")
        with pytest.raises(cc.MissingToolError, match=r'pip install "maxsim\[cuda\]"'):
            cc.ptxas_path()
    finally:
        cc._nvrtc.cache_clear()


def test_a_compile_error_is_one_line():
    require_nvrtc()
    from maxsim.cuda import CompileError, compile_cuda
    with pytest.raises(CompileError) as e:
        compile_cuda('extern "C" __global__ void k(float* x) { x[0] = undefined_name; }', "bad.cu")
    assert "undefined_name" in str(e.value) and "\n" not in str(e.value)


def test_the_elf_gives_what_the_driver_needs(cubins):
    """Parameters as the CUDA ABI lays them out (8-byte pointers, 4-byte ints from c[0x0][0x140]),
    shared memory and barriers as the source declares them, __constant__ data in bank 3."""
    k = read_bytes(cubins["matmul_tiled"]).kernel("matmul_tiled")
    assert [(p.ordinal, p.offset, p.size) for p in k.params] == [
        (0, 0x140, 8), (1, 0x148, 8), (2, 0x150, 8), (3, 0x158, 4), (4, 0x15C, 4), (5, 0x160, 4)]
    assert k.param_size == 0x24
    assert k.shared_size == 2 * 16 * 16 * 4 and k.bar_cnt == 1
    assert 0 < k.reg_cnt <= 255 and len(k.code) % 32 == 0
    s = read_bytes(cubins["saxpy"]).kernel()
    assert [(p.offset, p.size) for p in s.params] == [(0x140, 4), (0x148, 8), (0x150, 8), (0x158, 4)]
    assert s.shared_size == 0 and s.bar_cnt == 0
    poly = read_bytes(cubins["poly"]).kernel("poly")
    assert poly.constants[3] == COEFFS.tobytes()
    # the exits the attributes list are EXIT instructions: the last 4 bits of their opcode word
    # say so in cuobjdump's listing, checked below; here, they fall on instruction slots
    assert all(off % 32 != 0 and off < len(poly.code) for off in poly.exit_offsets)
    # a C++ kernel answers to its plain name
    assert read_bytes(cubins["block_sum"]).kernel("block_sum").name == "_Z9block_sumPKfPfi"


def test_written_cubins_read_back_the_same(cubins):
    for name, data in cubins.items():
        a = read_bytes(data)
        b = read_bytes(write_bytes(a))
        for ka, kb in zip(a.kernels, b.kernels):
            for f in attrs.fields(type(ka)):
                if f.name not in ("attributes", "filename"):
                    assert getattr(ka, f.name) == getattr(kb, f.name), (name, f.name)


@needs_cuobjdump
def test_nvidia_reads_the_cubins_maxsim_writes(cubins, tmp_path):
    """cuobjdump lists the same kernels, instructions and control words for each NVRTC cubin and
    the cubin maxsim writes from it (container only: the code bytes are carried over)."""
    for name, data in cubins.items():
        orig, ours = tmp_path / f"{name}.cubin", tmp_path / f"{name}_maxsim.cubin"
        orig.write_bytes(data)
        ours.write_bytes(write_bytes(read_bytes(data)))
        a, b = sass_listing(orig), sass_listing(ours)
        assert a.keys() == b.keys() and a == b, name
        for k in read_bytes(data).kernels:
            exits = {off for off, _, text, _ in a[k.name] if text.split()[-1] == "EXIT" or text.endswith(" EXIT")}
            assert set(k.exit_offsets) == exits, name


def _run_case(name, kernel, size):
    from maxsim.host import launch
    grid, block, params, buffers, ref, *textures = CASES[name].setup(size, np.random.default_rng(1))
    r = launch(kernel, grid, block, params=params, buffers=buffers, textures=(textures or [None])[0],
               timing=False, predict=False)
    for b, (exp, rtol, atol) in ref.items():
        got = r.outputs[b].reshape(exp.shape)
        np.testing.assert_allclose(got, exp, rtol=rtol, atol=atol, err_msg=f"{name} {size} {b}")


# kernels the model cannot run yet, with the reason
KNOWN = {}


def _kernel_from_cuobjdump(name, data, tmp_path):
    from maxsim.cubin.load import with_device_variables
    from maxsim.cuda.compile import signature_names
    from maxsim.host import Kernel
    from maxsim.sass import parse_text
    case = CASES[name]
    path = tmp_path / f"{name}.cubin"
    path.write_bytes(data)
    k = read_bytes(data, case.path).kernel(case.kernel)
    names = signature_names(open(case.path).read())[plain_name(k.name)]
    text = "\n".join(header_lines(k, names) + maxas_lines(sass_listing(path)[k.name]))
    code = parse_text(text, filename=case.path)
    code = attrs.evolve(code, banks=tuple(sorted((b, d) for b, d in k.constants.items() if d)))
    code = with_device_variables(k, code)  # (the loader's: __device__ variables, from the ELF)
    return Kernel.of(code, dict(enumerate(names)))


@needs_cuobjdump
@pytest.mark.parametrize("name", sorted(CASES))
def test_corpus_decoded_by_cuobjdump_runs_right(name, cubins, tmp_path):
    if name in KNOWN:
        pytest.xfail(KNOWN[name])
    kernel = _kernel_from_cuobjdump(name, cubins[name], tmp_path)
    for size in CASES[name].sizes:
        _run_case(name, kernel, size)


def _codec_gap(e):
    """An error of the codec's table (a word it cannot decode yet): the test reports it as an
    expected failure naming the word, until the codec learns it."""
    text = str(e)
    if "Maxwell encoding table" in text or "which is not an instruction" in text:
        pytest.xfail(f"the instruction codec cannot decode this kernel yet: {text}")
    raise e


@needs_codec
@pytest.mark.parametrize("name", sorted(CASES))
def test_corpus_decoded_by_maxsim_runs_right(name, cubins):
    from maxsim.host import Kernel
    if name in KNOWN:
        pytest.xfail(KNOWN[name])
    try:
        kernel = Kernel.load(CASES[name].path, kernel=CASES[name].kernel, options=CASES[name].options)
    except MaxsimError as e:
        _codec_gap(e)
    for size in CASES[name].sizes:
        _run_case(name, kernel, size)


def _normal(line):
    """An instruction line in one spelling: the carry-out as a modifier, modifiers sorted,
    [R+-imm] as [R-imm], blanks collapsed."""
    ctrl, rest = line.split(None, 1)
    guard = ""
    if rest.startswith("@"):
        guard, rest = rest.split(None, 1)
    rest = rest.rstrip(";").replace("+-", "-")
    head, _, ops = rest.partition(" ")
    ops = [o.strip() for o in ops.split(",")] if ops.strip() else []
    mods = head.split(".")
    if ops and ops[0].endswith(".CC"):
        ops[0] = ops[0][:-3]
        mods.append("CC")
    if mods[0] in ("LDS", "STS", "LDG", "STG", "LD", "ST") and "32" in mods:
        mods.remove("32")  # the default width, which nvdisasm writes for LDS.U only
    floats = mods[0] in ("FADD", "FMUL", "FFMA", "FADD32I", "FMUL32I", "FFMA32I", "FMNMX", "FSETP", "FSET", "FCMP",
                         "FCHK", "DADD", "DMUL", "DFMA", "DMNMX", "DSETP")
    ops = [_float(o, floats) if floats or not o.lstrip("-").isdigit() else o for o in ops]
    ops = [_word(o) for o in ops]
    return (ctrl, guard, mods[0], tuple(sorted(mods[1:])), tuple(ops))


def _word(o):
    """An integer immediate as its 32-bit word (-0x1 and 0xffffffff are one immediate)."""
    if isinstance(o, str) and o.lstrip("-").lower().startswith("0x"):
        try:
            return f"0x{int(o, 16) & 0xFFFFFFFF:x}"
        except ValueError:
            return o
    return o


def _float(o, floats=True):
    """A float immediate as its fp32 value (nvdisasm prints 20 digits, maxas's form fewer); a NaN
    as its sign (nvdisasm writes -QNAN, maxsim the bit pattern 0xfff00000 that keeps its bits)."""
    if o.lstrip("+-") == "QNAN":
        return "-NAN" if o.startswith("-") else "NAN"
    if o.lower().startswith("0x") and floats:
        try:
            v = int(o, 16)
        except ValueError:
            return o
        if v >> 23 & 0xFF == 0xFF and v & 0x7FFFFF and v < 1 << 32:
            return "-NAN" if v >> 31 else "NAN"
        return o
    try:
        return float(np.float32(float(o))) if not o.lower().lstrip("-").startswith(("0x", "r", "p", "c[", "[")) else o
    except ValueError:
        return o


def _body(lines):
    """The instruction lines up to the kernel's closing BRA to itself (labels dropped)."""
    out = []
    labels = {}
    for ln in lines:
        s = ln.strip()
        if not s or s.startswith("#"):
            continue
        if s.endswith(":"):
            labels[s[:-1]] = len(out)
            continue
        out.append(s)
    for n, s in enumerate(out):  # the self-branch ends the code, as the codec and maxas read it
        head = s.split(None, 1)[1]
        if head.startswith("BRA ") and labels.get(head[4:].rstrip(";").strip()) == n:
            return out[:n]
    return out


# differences the comparison finds, open in the codec (strict: the test fails when they are fixed,
# so the entry is removed)
CODEC_DIFFERENCES = {}


@needs_codec
@needs_cuobjdump
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=CODEC_DIFFERENCES[n], strict=True))
                                  if n in CODEC_DIFFERENCES else n for n in sorted(CASES)])
def test_maxsim_disasm_agrees_with_cuobjdump(name, cubins, tmp_path):
    """Every instruction of every corpus cubin: maxsim's decoding equals cuobjdump's (control code,
    guard, opcode, modifiers and operands; branch targets as labels numbered in order)."""
    from maxsim.cubin.disasm import kernel_text
    data = cubins[name]
    path = tmp_path / f"{name}.cubin"
    path.write_bytes(data)
    listing = sass_listing(path)
    for k in read_bytes(data).kernels:
        try:
            text = kernel_text(k)
        except MaxsimError as e:
            _codec_gap(e)
        ours = [_normal(s) for s in _body(text.splitlines())]
        theirs = [_normal(s) for s in _body(maxas_lines(listing[k.name]))]
        assert len(ours) == len(theirs) > 10, f"{name}: {k.name}"
        for n, (a, b) in enumerate(zip(ours, theirs)):
            assert a == b, f"{name}: {k.name}: instruction {n}: maxsim {a} cuobjdump {b}"


def test_cli_disasm_refuses_a_text_file(tmp_path):
    p = tmp_path / "k.sass"
    p.write_text("--:-:-:-:5 EXIT;\n")
    r = subprocess.run([sys.executable, "-m", "maxsim.cli", "disasm", str(p)], capture_output=True, text=True)
    assert r.returncode == 2 and "expected a .cubin, .cu or .ptx file" in r.stderr and r.stderr.count("\n") == 1


def test_kernel_parameters_by_position_and_name(cubins, tmp_path):
    if not _has_codec() and cuobjdump() is None:
        pytest.skip("no decoder: neither maxsim's codec nor cuobjdump")
    k = (_kernel_from_cuobjdump("vecadd", cubins["vecadd"], tmp_path) if not _has_codec()
         else __import__("maxsim").Kernel.load(CASES["vecadd"].path))
    assert k.param("a").offset == 0x140 and k.param("#1").offset == 0x148 and k.param(0x150).names == ("c",)
    with pytest.raises(MaxsimError, match="no parameter #9"):
        k.param("#9")


def test_struct_layout_of_the_kparam_record():
    """The KPARAM_INFO words, as cuobjdump -elf decodes NVRTC's: ordinal 2 at offset 0x10, 8 bytes,
    constant bank 0x1f."""
    from maxsim.cubin import attributes as ea
    a = ea.parse(bytes.fromhex("04170c00") + struct.pack("<3I", 0, 2 | (0x10 << 16), 0x0021F000))[0]
    assert a.name == "KPARAM_INFO" and ea.kparam_info(a) == ea.ParamInfo(2, 0x10, 8, 0)
    assert ea.kparam_record(ea.ParamInfo(2, 0x10, 8, 0)) == a.value


def _fields(i):
    """An instruction's meaning (a branch's label by its target index, not its name)."""
    from maxsim.isa import instruction as ins
    ops = tuple("label" if o.kind == ins.LABEL else o for o in i.operands)
    return (i.opcode, i.mods, ops, i.control, i.pred, i.pred_neg, i.target)


@needs_codec
@pytest.mark.parametrize("variant", ["sgemm_64", "sgemm_128"])
def test_sgemm_round_trip_through_a_cubin(variant, tmp_path):
    """generate -> cubin (maxsim's encoder and ELF writer) -> read -> decode gives the same kernel:
    header and every instruction record; NVIDIA's cuobjdump lists the same number of instructions
    (the kernel, maxas's closing BRA and the NOP padding)."""
    from maxsim.cubin.build import cubin_kernel
    from maxsim.cubin.disasm import decode_kernel
    from maxsim.sass import parse_text
    from workloads.sgemm.generator import generate
    text = generate(variant)
    k = parse_text(text, filename=variant)
    data = write_bytes([cubin_kernel(k)], arch=k.arch)
    back = read_bytes(data).kernel()
    assert (back.name, back.reg_cnt, back.shared_size, back.bar_cnt) == (k.name, k.reg_cnt, k.shared_size, k.bar_cnt)
    assert [(p.ordinal, p.offset, p.size) for p in back.params] == [(p.ordinal, p.offset, p.size) for p in k.params]
    decoded, _ = decode_kernel(back)
    assert [_fields(i) for i in decoded.instructions] == [_fields(i) for i in k.instructions]
    if cuobjdump() is not None:
        path = tmp_path / "k.cubin"
        path.write_bytes(data)
        listing = sass_listing(path)[k.name]
        assert len(listing) == len(back.code) * 3 // 32
        assert [t for _, _, t, _ in listing[:len(k.instructions)]][-1].endswith("EXIT")
        # and maxsim disasm of the cubin maxsim wrote agrees with cuobjdump instruction by instruction
        from maxsim.cubin.disasm import kernel_text
        ours = [_normal(s) for s in _body(kernel_text(back).splitlines())]
        theirs = [_normal(s) for s in _body(maxas_lines(listing))]
        assert len(ours) == len(theirs) == len(k.instructions)
        for n, (a, b) in enumerate(zip(ours, theirs)):
            assert a == b, f"{variant}: instruction {n}: maxsim {a} cuobjdump {b}"


@needs_codec
def test_the_python_example_of_the_page_runs():
    """The Python example of docs/cubins-and-cuda.md, as written there."""
    import pathlib
    require_nvrtc()
    page = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "cubins-and-cuda.md").read_text()
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/cubins-and-cuda.md", "exec"), {})


@needs_codec
def test_sgemm_from_its_cubin_runs_in_the_same_cycles(tmp_path):
    """The README round trip: the SGEMM written as a cubin runs in the SGEMM harness with the same
    cycles and GFLOPS as its text form (and its C checked against numpy by the harness)."""
    from maxsim.cubin.build import cubin_kernel
    from maxsim.sass import parse_text
    from workloads.sgemm.generator import generate
    from workloads.sgemm.harness import run_workload
    text = generate("sgemm_64")
    (tmp_path / "s.sass").write_text(text)
    (tmp_path / "s.cubin").write_bytes(write_bytes([cubin_kernel(parse_text(text))]))
    runs = [run_workload("sgemm_64", m=128, n=128, k=64, sass_path=str(tmp_path / f"s.{ext}"))
            for ext in ("sass", "cubin")]
    for key in ("sm_cycles", "sm_gflops", "sm_ipc", "warp_instructions"):
        assert runs[0].get(key) == runs[1].get(key), key
    assert runs[0]["sm_cycles"] > 0


def test_ptx_goes_through_ptxas(tmp_path):
    """PTX (here NVRTC's, for compute_52) compiled by ptxas: the same parameter table as CUDA C's
    cubin, parameters named as in the .entry; with the codec, it runs right."""
    require_nvrtc()
    from maxsim.cuda import compile_cuda, compile_file
    from maxsim.cuda.compile import signature_names
    try:
        from maxsim.cuda import ptxas_path
        ptxas_path()
    except MaxsimError as e:
        pytest.skip(str(e))
    src = open(CASES["vecadd"].path).read()
    ptx = compile_cuda(src, "vecadd.cu", ptx=True).decode()
    assert ".entry vecadd(" in ptx and ".target sm_52" in ptx
    path = tmp_path / "vecadd.ptx"
    path.write_text(ptx)
    k = read_bytes(compile_file(path)).kernel("vecadd")
    assert [(p.offset, p.size) for p in k.params] == [(0x140, 8), (0x148, 8), (0x150, 8), (0x158, 4)]
    assert signature_names(ptx, "x.ptx")["vecadd"] == tuple(f"vecadd_param_{i}" for i in range(4))
    if _has_codec():
        from maxsim.host import Kernel, launch
        kern = Kernel.load(path)
        a = np.arange(300, dtype=np.float32)
        r = launch(kern, 3, 128, params={"vecadd_param_0": "a", "#1": "b", 0x150: "c", "vecadd_param_3": 300},
                   buffers={"a": a, "b": a, "c": np.zeros(300, np.float32)}, timing=False, predict=False)
        assert np.array_equal(r.outputs["c"], 2 * a)


DEVICE_VARIABLES = """
__device__ float scale = 2.0f;
extern "C" __global__ void k(float* x) { x[threadIdx.x] *= scale; }
extern "C" __global__ void __launch_bounds__(128) bounded(float* x) { x[threadIdx.x] += 1.0f; }
"""


def test_device_variables_and_launch_bounds(tmp_path):
    """A __device__ variable's address is patched into constant bank 4 at load time: the cubin
    says so (a relocation), and the launch places the variable (its initial value from
    .nv.global.init) and fills the word in; the __launch_bounds__ of a kernel bound its launches."""
    require_nvrtc()
    from maxsim.cuda import compile_cuda
    cub = read_bytes(compile_cuda(DEVICE_VARIABLES))
    assert [(b, sym) for b, _, _, sym in cub.kernel("k").bank_relocations] == [(4, "scale")]
    assert cub.kernel("bounded").max_threads == (128, 1, 1)
    if not _has_codec():
        return
    from maxsim.errors import LaunchError
    from maxsim.host import Kernel, launch
    path = tmp_path / "dev.cu"
    path.write_text(DEVICE_VARIABLES)
    k = Kernel.load(path, kernel="k")
    assert [(name, size, data) for name, size, data in k.code.variables] == [("scale", 4, np.float32(2).tobytes())]
    x = np.arange(64, dtype=np.float32)
    r = launch(k, 1, 64, params={"x": "x"}, buffers={"x": x}, timing=False, predict=False)
    assert np.array_equal(r.outputs["x"], 2 * x)
    b = Kernel.load(path, kernel="bounded")
    with pytest.raises(LaunchError, match="at most 128 threads per CTA"):
        launch(b, 1, 256, params={"x": "x"}, buffers={"x": np.zeros(256, np.float32)}, timing=False, predict=False)
    r = launch(b, 1, 128, params={"x": "x"}, buffers={"x": np.zeros(128, np.float32)}, timing=False, predict=False)
    assert np.array_equal(r.outputs["x"], np.ones(128, np.float32))


@needs_codec
def test_cli_asm_rewrites_a_compiled_kernel_as_a_cubin_that_runs(tmp_path):
    """maxsim asm poly_constant.cu -o poly.cubin: decoded, re-encoded and written with its
    __constant__ coefficients (bank 3); the cubin runs right (parameters by position: a cubin
    carries no names)."""
    require_nvrtc()
    from maxsim.cli import main
    from maxsim.host import Kernel, launch
    out = tmp_path / "poly.cubin"
    assert main(["asm", CASES["poly"].path, "-o", str(out)]) == 0
    k = Kernel.load(out)
    assert k.banks[3] == COEFFS.tobytes() and k.param("#0").offset == 0x140
    grid, block, params, buffers, ref = CASES["poly"].setup(1000, np.random.default_rng(2))
    params = {"#0": "x", "#1": "y", "#2": 1000}
    r = launch(k, grid, block, params=params, buffers=buffers, timing=False, predict=False)
    exp, rtol, atol = ref["y"]
    np.testing.assert_allclose(r.outputs["y"], exp, rtol=rtol, atol=atol)


@needs_codec
@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_kernels_time_the_same_in_both_timing_cores(name):
    """ptxas's SASS (XMAD sequences, IADD32I/LOP32I, SHF, MUFU/RRO, SHFL, ATOMS/RED, MEMBAR, LOP with
    a predicate ...) through the reference timing core and the compiled one: identical figures;
    and the functional results still right."""
    from test_core_parity import twin_simulate
    from maxsim.host import Kernel
    from maxsim.host.args import bind
    from maxsim.host.launch import with_geometry
    case = CASES[name]
    kernel = Kernel.load(case.path, kernel=case.kernel, options=case.options)
    size = case.sizes[1]
    grid, block, params, buffers, ref, *textures = case.setup(size, np.random.default_rng(3))
    bound = bind(kernel, params, buffers, (textures or [None])[0])
    gx, gy = (grid, 1) if isinstance(grid, int) else (tuple(grid) + (1,))[:2]
    bx, by = (block, 1) if isinstance(block, int) else (tuple(block) + (1,))[:2]
    # a 2D block: blockDim and gridDim as the launch gives them (c[0x0][0x8], c[0x0][0x14])
    bank0 = with_geometry(bound.const_bank, ((bx, by, 1), (gx, gy, 1)))
    # hazards="strict": ptxas's code runs on hardware, so the timing model finds no hazard in it
    twin_simulate(kernel.code, (gx, gy), bx * by, bank0, bound.memory, bound.textures, hazards="strict")
    for b, (exp, rtol, atol) in ref.items():
        addr, buf = bound.buffers[b]
        got = bound.memory.read(addr, int(np.prod(buf.shape)), buf.dtype).reshape(exp.shape)
        np.testing.assert_allclose(got, exp, rtol=rtol, atol=atol)


@pytest.mark.parametrize("op", ["IADD32I R0, R0, 0x1", "LOP32I.AND R0, R0, 0xff", "ISCADD32I R0, R0, 0x10, 0x2",
                                "FMUL32I R0, R0, 1.5", "FADD32I R0, R0, 1.5"])
def test_immediate_forms_time_as_full_rate_alu_instructions(op):
    """A dependent chain of ptxas's 32-bit-immediate forms, by hand: instruction i issues at
    i x latency.alu (the stall the assembler writes), cycles = n x alu + 1, no hazard; one cycle
    shorter, every link is a read-after-write hazard (the timing model sees their results)."""
    from maxsim.arch.config import load_config
    from maxsim.timing.run import simulate
    from maxsim.validate import kernels as K
    lat = load_config().latency
    n = 6
    _, sm = simulate(K.dependent_chain(n, lat.alu, op=op, exit_stall=lat.exit), 1, 32, log=True)
    d = sm.stats.to_dict()
    assert [t for t, _ in K.issues(sm)] == [i * lat.alu for i in range(n + 1)]
    assert d["cycles"] == n * lat.alu + 1 and d["hazards"] == 0
    _, sm = simulate(K.dependent_chain(n, lat.alu - 1, op=op, exit_stall=lat.exit), 1, 32, log=True)
    assert sm.stats.to_dict()["hazards"] == n - 1


def test_membar_issues_as_a_nop():
    """MEMBAR.CTA between two independent FFMAs: it takes an issue slot and its stall, nothing else
    (the model keeps each warp's memory operations in order)."""
    from maxsim.arch.config import load_config
    from maxsim.timing.run import simulate
    from maxsim.validate import kernels as K
    lat = load_config().latency
    src = "\n".join(["--:-:-:-:1 FFMA R4, R1, R2, R3;", "--:-:-:-:1 MEMBAR.CTA;", "--:-:-:-:1 FFMA R8, R1, R2, R3;",
                     K.exit_line(lat.exit)])
    _, sm = simulate(K.kernel(src), 1, 32, log=True)
    assert [t for t, _ in K.issues(sm)] == [0, 1, 2, 3]


def test_asm_check_reads_every_kind_of_kernel_file(tmp_path, capsys):
    """`maxsim asm --check` on a .sass file, a .cu file and the cubin written from it: the control
    codes as written; one hazard line per hazard, exit status 1 with hazards, 0 without."""
    require_nvrtc()
    from maxsim.cli import main
    bad = tmp_path / "bad.sass"
    bad.write_text("# Kernel: t\n--:-:1:-:1 S2R R0, SR_TID.X;\n--:-:-:-:6 IADD R1, R0, 0x1;\n--:-:-:-:5 EXIT;\n")
    assert main(["asm", "--check", str(bad)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{bad}:3: variable-latency-without-wait: IADD (line 3) reads R0")
    assert out[-1].endswith("3 instructions, 1 control-code hazard (gm204 latencies)")
    cu = CASES["stencil5"].path  # ptxas's DEPBAR.LE and a guarded LDG group: no hazard
    assert main(["asm", "--check", cu]) == 0
    assert capsys.readouterr().out.strip().endswith("0 control-code hazards (gm204 latencies)")
    cubin = tmp_path / "stencil.cubin"
    assert main(["asm", cu, "-o", str(cubin)]) == 0
    capsys.readouterr()
    assert main(["asm", "--check", str(cubin)]) == 0
    assert "0 control-code hazards" in capsys.readouterr().out

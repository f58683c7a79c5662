"""The launch API (maxsim.host, maxsim.launch) and `maxsim run KERNEL.sass` with arguments.

Our kernels of workloads/kernels/ run against numpy: vecadd exactly (one fp32 add per element), the
tiled reduction bit for bit against the same tree of fp32 adds done by numpy. Bad arguments are one
line naming what is wrong.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import maxsim
from maxsim.cli import main as cli
from maxsim.errors import LaunchError, MaxsimError, SimulationError
from maxsim.host import Buffer, Kernel, Texture, launch

ROOT = Path(__file__).resolve().parents[1]
VECADD = ROOT / "workloads" / "kernels" / "vecadd.sass"
REDUCE = ROOT / "workloads" / "kernels" / "reduce.sass"
TILE = 128  # threads of reduce.sass's CTAs


@pytest.fixture(scope="module")
def vecadd():
    return Kernel.load(VECADD)


@pytest.fixture(scope="module")
def reduce():
    return Kernel.load(REDUCE)


def _vecadd(kernel, n, block, **kw):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    r = maxsim.launch(kernel, grid=-(-n // block), block=block, params={"a": "a", "b": "b", "c": "c", "n": n},
                      buffers={"a": Buffer.of(a, "in"), "b": Buffer.of(b, "in"), "c": Buffer.zeros(n)}, **kw)
    return a, b, r


@pytest.mark.parametrize("n, block", [(1, 32), (100, 64), (1000, 128), (333, 96), (2049, 256)])
def test_vecadd_matches_numpy(vecadd, n, block):
    a, b, r = _vecadd(vecadd, n, block, timing=False, predict=False)
    assert set(r.outputs) == {"c"}
    np.testing.assert_array_equal(r.outputs["c"], a + b)  # one fp32 add: exact
    # a warp whose threads are all past n leaves after 9 instructions (3 S2R, the 3 XMADs of the
    # macro, ISETP, EXIT... counted by the launch), the others run the whole kernel
    assert r.functional["warp_instructions"] == r.result.warp_instructions > 0


def _tree_sums(x, n_ctas):
    """The sums reduce.sass computes, by the same tree of fp32 adds in numpy."""
    t = np.zeros(n_ctas * TILE, np.float32)
    t[:x.size] = x
    t = t.reshape(n_ctas, TILE)
    s = TILE // 2
    while s >= 1:
        t[:, :s] = t[:, :s] + t[:, s:2 * s]  # fp32 + fp32 rounds to fp32, as FADD does
        s //= 2
    return t[:, 0]


@pytest.mark.parametrize("n", [1, 128, 300, 1000])
def test_tiled_reduction_matches_numpy(reduce, n):
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    ctas = -(-n // TILE)
    r = maxsim.launch(reduce, grid=ctas, block=TILE, params={"x": "x", "partial": "partial", "n": n},
                      buffers={"x": Buffer.of(x, "in"), "partial": Buffer.zeros(ctas)}, timing=False, predict=False)
    partial = r.outputs["partial"]
    np.testing.assert_array_equal(partial, _tree_sums(x, ctas))
    assert abs(float(partial.sum(dtype=np.float64)) - float(x.sum(dtype=np.float64))) <= 1e-5 * n


def test_timed_launch_reports_the_sm_and_the_gpu(reduce):
    n = 4 * TILE
    x = np.ones(n, np.float32)
    # sm_ctas: a timed SM of its own holding the four CTAs (the default for a launch of one wave
    # is SM 0 of the whole-GPU run: test_one_wave_is_simulated_once)
    r = maxsim.launch(reduce, grid=4, block=TILE, params={"x": "x", "partial": "p", "n": n},
                      buffers={"x": x, "p": np.zeros(4, np.float32)}, config="gtx980_oc", sm_ctas=4)
    np.testing.assert_array_equal(r.outputs["p"], np.full(4, TILE, np.float32))
    assert set(r.outputs) == {"x", "p"}  # a plain array is copied in and read back
    assert r.sm_ctas == 4 and r.timing["sm_cycles"] > 0 and r.timing["sm_warp_instructions"] == r.result.warp_instructions
    assert r.timing["stall_reasons"]["barrier_wait"] > 0  # its warps wait at BAR.SYNC
    p = r.prediction
    assert p.method == "full" and p.config == "gtx980_oc" and p.sms == 16 and p.cycles > 0
    # 4 CTAs spread over 4 SMs finish no later than on one SM holding all four
    assert p.cycles <= r.timing["sm_cycles"] + 50
    out = json.loads(r.to_json())
    assert out["outputs"]["p"] == {"shape": [4], "dtype": "float32", "sum": 4.0 * TILE}
    assert out["gpu_prediction_method"] == "full" and out["sm_cycles"] == r.timing["sm_cycles"]
    # the plain names are the launch's, sm_ the timed SM's (attributes and fields alike)
    assert (out["cycles"], out["seconds"], out["gflops"]) == (p.cycles, p.seconds, p.gflops) == (r.cycles, r.seconds,
                                                                                                  r.gflops)
    assert (r.sm_cycles, r.sm_seconds, r.sm_gflops) == (out["sm_cycles"], out["sm_seconds"], out["sm_gflops"])
    assert r.sm_seconds == pytest.approx(r.sm_cycles / r.cfg.clock_hz, rel=1e-12)
    # the old names, kept one release: the same figures
    assert (out["gpu_predicted_seconds"], out["gpu_predicted_gflops"], out["ipc"]) == (p.seconds, p.gflops,
                                                                                       out["sm_ipc"])
    with pytest.warns(DeprecationWarning, match="'cycles' is now 'sm_cycles'"):
        assert r.timing["cycles"] == r.sm_cycles
    with pytest.warns(DeprecationWarning, match="'gflops' is now 'sm_gflops'"):
        assert r.timing.get("gflops") == r.sm_gflops
    with pytest.raises(KeyError):
        r.timing["no_such_figure"]


def test_one_wave_is_simulated_once(reduce):
    """A launch that fits on the GPU at once is simulated once: the timed SM is SM 0 of the
    whole-GPU run (CTA 0, the dispatcher's first for it; 4 CTAs on 16 SMs leave it one), whose
    figures are its CTA's and, for the L2 and DRAM, the GPU's; with ``timed_in_gpu`` off the timed
    SM is a simulation of its own, of the same CTA, which then has the L2 and DRAM to itself."""
    from maxsim.host import launch as host_launch
    n = 4 * TILE
    args = dict(grid=4, block=TILE, params={"x": "x", "partial": "p", "n": n}, config="gtx980_oc")
    r = maxsim.launch(reduce, buffers={"x": np.ones(n, np.float32), "p": np.zeros(4, np.float32)}, **args)
    np.testing.assert_array_equal(r.outputs["p"], np.full(4, TILE, np.float32))
    assert r.sm_ctas == 1 and [cid for cid, _, _ in r.sm.cta_log] == [(0, 0)] and r.fields()["timed_sm_in_gpu"]
    per_cta = r.result.warp_instructions // 4  # every CTA runs the same instructions
    assert r.timing["sm_warp_instructions"] == per_cta and r.timing["stall_reasons"]["barrier_wait"] > 0
    assert r.sm.stats.thread_instructions == r.result.cta_threads(0, 1) == r.result.thread_instructions // 4
    p = r.prediction
    assert p.method == "full" and 0 < r.timing["sm_cycles"] <= p.cycles
    # its memory figures are the whole launch's: the four CTAs' reads of x (n floats)
    assert r.sm.stats.l2_hits + r.sm.stats.l2_misses == n * 4 // 32
    host_launch.timed_in_gpu = False
    try:
        solo = maxsim.launch(reduce, buffers={"x": np.ones(n, np.float32), "p": np.zeros(4, np.float32)},
                             sm_ctas=1, **args)
    finally:
        host_launch.timed_in_gpu = True
    assert solo.sm_ctas == 1 and solo.timing["sm_warp_instructions"] == per_cta and not solo.fields()["timed_sm_in_gpu"]
    assert solo.sm.stats.l2_hits + solo.sm.stats.l2_misses == n // 32
    assert solo.prediction.cycles == p.cycles
    # one CTA per SM: the only difference is the L2 and DRAM shared with three others
    assert abs(solo.timing["sm_cycles"] - r.timing["sm_cycles"]) <= 0.1 * solo.timing["sm_cycles"]


def test_predicted_time_runs_at_the_effective_clock(reduce):
    """A launch's predicted time is the launch overhead plus its cycles at the effective clock
    (gtx980_oc: 1607 MHz x 0.96 / 0.98, see gm204.toml); with the fraction set to 1 the same launch
    takes about as many cycles (the DRAM moves a little less per cycle) and less time."""
    from maxsim.arch.config import load_config, override
    n = 4 * TILE
    times = {}
    for f in (None, 1.0):
        cfg = load_config("gtx980_oc")
        if f is not None:
            cfg = override(cfg, {"gpu.effective_clock_fraction": f})
        r = maxsim.launch(reduce, grid=4, block=TILE, params={"x": "x", "partial": "p", "n": n},
                          buffers={"x": np.ones(n, np.float32), "p": np.zeros(4, np.float32)}, config=cfg)
        p = r.prediction
        clock = 1607e6 * cfg.gpu.effective_clock_fraction
        assert p.seconds == pytest.approx(cfg.gpu.launch_overhead_us * 1e-6 + p.cycles / clock, rel=1e-12)
        times[f] = p
    derated, nominal = times[None], times[1.0]
    assert abs(derated.cycles - nominal.cycles) <= 0.01 * nominal.cycles
    assert derated.seconds > nominal.seconds


def test_one_cta_is_predicted_by_the_timed_sm(vecadd):
    _, _, r = _vecadd(vecadd, 64, 64)
    assert r.prediction.method == "timed SM" and r.prediction.cycles == r.timing["sm_cycles"] == r.sm_cycles == r.cycles


def test_launch_after_the_same_launch_finds_its_data_in_the_l2(vecadd):
    """l2_start="previous": the predicted launch is the second of two back to back. vecadd's 3 x 8 KB
    stay in the L2, so its reads all hit there (from an empty L2 they all miss) and it is faster;
    the launch before runs too, and the outputs are those after both (vecadd's the same)."""
    a, b, empty = _vecadd(vecadd, 2048, 128)
    _, _, prev = _vecadd(vecadd, 2048, 128, l2_start="previous")
    np.testing.assert_array_equal(prev.outputs["c"], a + b)
    fe, fp = empty.fields(), prev.fields()
    assert fe["gpu_l2_start"] == "empty" and fp["gpu_l2_start"] == "previous"
    assert prev.prediction.method == empty.prediction.method == "full"
    assert fe["gpu_l2_hit_rate"] == 0 and fp["gpu_l2_hit_rate"] == 1
    assert prev.prediction.cycles < empty.prediction.cycles


def test_parameters_by_offset_and_from_text(vecadd):
    text = VECADD.read_text()
    k = Kernel.load(text)  # a text, not a path
    assert [p.names[0] for p in k.params] == ["a", "b", "c", "n"]
    assert k.param("param_n").offset == 0x14C and k.param(0x148).names[0] == "c"
    a, b, r = _vecadd(k, 50, 32, timing=False, predict=False)
    x = np.arange(50, dtype=np.float32)
    r2 = maxsim.launch(k, 2, 32, params={0x140: "a", 0x144: "a", 0x148: "c", 0x14C: 50},
                       buffers={"a": x, "c": Buffer.zeros(50)}, timing=False, predict=False)
    np.testing.assert_array_equal(r2.outputs["c"], 2 * x)


def test_final_form_with_named_parameter_lines():
    from maxsim.asm import assemble_file
    text = assemble_file(VECADD).text
    assert "#\t0:0x140:4:0\n" in text  # the final form lists the table without names
    named = text.replace("#\t0:0x140:4:0\n", "#\t0:0x140:4:0 a\n").replace("#\t3:0x14c:4:0\n", "#\t3:0x14c:4:0 n\n")
    k = Kernel.load(named)
    assert [p.names for p in k.params] == [("a",), (), (), ("n",)]
    x = np.ones(40, np.float32)
    r = maxsim.launch(k, 2, 32, params={"a": "x", 0x144: "x", 0x148: "y", "n": 40},
                      buffers={"x": x, "y": Buffer.zeros(40)}, timing=False, predict=False)
    np.testing.assert_array_equal(r.outputs["y"], 2 * x)


def test_dynamic_shared_memory(reduce):
    text = REDUCE.read_text().replace("# SharedSize: 512\n", "")
    k = Kernel.load(text)
    assert k.code.shared_size == 0
    args = dict(params={"x": "x", "partial": "p", "n": TILE}, buffers={"x": np.ones(TILE, np.float32),
                                                                      "p": Buffer.zeros(1)}, timing=False, predict=False)
    with pytest.raises(SimulationError, match="out-of-bounds shared access"):
        maxsim.launch(k, 1, TILE, **args)
    r = maxsim.launch(k, 1, TILE, shared=TILE * 4, **args)
    assert r.outputs["p"][0] == TILE


TEXREAD = """\
# Kernel: texread
# Params(2):
#\t0:0x140:4:0 out
#\t1:0x144:4:0 shift
// out[4 t .. 4 t + 3] = the four channels of texel (t + shift) of texture "src" (texture 0)
<CONSTANT_MAPPING>
    param_out   : c[0x0][0x140]
    param_shift : c[0x0][0x144]
    src         : 0x80000000
</CONSTANT_MAPPING>
<REGISTER_MAPPING>
    0-3   : v<0-3>
    4-15  ~ tid, coord, hnd, addr
</REGISTER_MAPPING>
S2R tid, SR_TID.X;
IADD coord, tid, param_shift;
MOV32I hnd, src;
TLD.B.LZ.P R0, coord, hnd, 0x0, 1D, 0xf;
ISCADD addr, tid, param_out, 4;
STG.128 [addr], v;
EXIT;
"""


@pytest.mark.parametrize("fmt, dtype, channels", [("float4", np.float32, 4), ("float1", np.float32, 1),
                                                  ("int2", np.int32, 2), ("uint1", np.uint32, 1)])
def test_texture_formats_and_border(fmt, dtype, channels):
    k = Kernel.load(TEXREAD)
    assert dict(k.textures) == {"src": 0}
    texels = 5
    data = (np.arange(texels * channels) + 1).astype(dtype).reshape(texels, channels)
    shift = -2  # threads 0, 1 read before the texture, 7.. after it
    r = maxsim.launch(k, 1, 32, params={"out": "out", "shift": shift},
                      buffers={"out": Buffer.zeros((32, 4), dtype)},
                      textures={"src": Texture(data if channels > 1 else data.ravel(), fmt)}, timing=False, predict=False)
    want = np.zeros((32, 4), dtype)
    for t in range(32):
        c = t + shift
        if 0 <= c < texels:
            want[t, :channels] = data[c]
            if channels < 4:
                want[t, 3] = 1  # the fourth channel of a narrower format reads one
    np.testing.assert_array_equal(r.outputs["out"], want)


def test_texel_size_enters_the_trace():
    """A float1 texture's texels are 4 bytes: 32 consecutive texels are 4 sectors of 32 bytes,
    a float4 texture's 16."""
    k = Kernel.load(TEXREAD)
    sectors = {}
    for fmt, data in (("float1", np.zeros(64, np.float32)), ("float4", np.zeros((64, 4), np.float32))):
        r = maxsim.launch(k, 1, 32, params={"out": "out", "shift": 0}, buffers={"out": Buffer.zeros((32, 4))},
                          textures={0: Texture(data, fmt)}, predict=False)
        sectors[fmt] = r.sm.stats.tex_sectors
    assert sectors == {"float1": 4, "float4": 16}


def test_a_texture_without_an_address_lives_at_the_same_place_at_every_launch():
    """Texture n bound without an address gets texture_address(n) whatever textures were made before
    (the L2 slices and TLB pages of its texels, hence a launch's cycles, do not depend on them)."""
    from maxsim.functional.memory import Texture1D
    from maxsim.host.args import _textures, texture_address
    k = Kernel.load(TEXREAD)
    first = _textures(k, {"src": Texture(np.zeros((8, 4), np.float32))})
    Texture1D(np.zeros((8, 4), np.float32))  # another texture made between the two launches
    second = _textures(k, {0: Texture(np.zeros((8, 4), np.float32))})
    assert first[0].address == second[0].address == texture_address(0) != texture_address(1)
    assert _textures(k, {0: Texture(np.zeros(8, np.float32), "float1", address=0x1000)})[0].address == 0x1000


@pytest.mark.parametrize("kw, message", [
    (dict(params={"a": "a", "b": "b", "c": "c"}), "parameter n (c[0x0][0x14c], 4 bytes) not given"),
    (dict(params={"a": "a", "b": "b", "c": "c", "n": 8, "m": 8}), "has no parameter named 'm' (its parameters: a, b, c, n)"),
    (dict(params={"a": "a", "b": "nope", "c": "c", "n": 8}), "= 'nope': no buffer of that name (buffers: a, b, c)"),
    (dict(params={"a": np.zeros(8), "b": "b", "c": "c", "n": 8}), "got ndarray (pass arrays as buffers"),
    (dict(params={"a": None, "b": "b", "c": "c", "n": 8}), "expected an int, a float or a buffer name, got NoneType"),
    (dict(params={"a": "a", "b": "b", "c": "c", "n": 1 << 40}), "does not fit in 32 bits"),
    (dict(params={"a": "a", "b": "b", "c": "c", "n": 8, 0x150: 1}), "no parameter at offset 0x150"),
    (dict(params={"a": "a", "b": "b", "c": "c", "n": 8, "param_n": 8}), "is given twice"),
    (dict(grid=(1, 300, 300)), "X < 2^31 and Y * Z < 65,536 CTAs are modelled"),
    (dict(block=(32, 64)), "block of 2048 threads (32 x 64 x 1): at most 1024 threads per CTA"),
    (dict(grid=0), "every dimension must be at least 1"),
    (dict(block=2000), "block of 2000 threads: at most 1024 threads per CTA"),
    (dict(l2_start="warm"), "l2_start 'warm': expected one of empty, previous"),
])
def test_bad_arguments_are_one_line(vecadd, kw, message):
    args = dict(grid=1, block=32, params={"a": "a", "b": "b", "c": "c", "n": 8},
                buffers={"a": np.zeros(8, np.float32), "b": np.zeros(8, np.float32), "c": Buffer.zeros(8)},
                timing=False, predict=False)
    args.update(kw)
    with pytest.raises(LaunchError) as e:
        maxsim.launch(vecadd, **args)
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("short, line, where", [("a", 32, "buffer 'a'"), ("c", 35, "buffer 'c'")])
def test_a_buffer_too_small_faults_at_the_instruction(vecadd, short, line, where):
    n = 100
    bufs = {"a": np.zeros(n, np.float32), "b": np.zeros(n, np.float32), "c": Buffer.zeros(n)}
    bufs[short] = np.zeros(n - 10, np.float32) if short != "c" else Buffer.zeros(n - 10)
    with pytest.raises(SimulationError) as e:
        maxsim.launch(vecadd, 4, 32, params={"a": "a", "b": "b", "c": "c", "n": n}, buffers=bufs,
                      timing=False, predict=False)
    msg = str(e.value)
    # element 90 is the first past the end: CTA 2, warp 0, lane 26 (thread 90 = 2 * 32 + 26)
    assert msg.startswith(f"{VECADD}:{line}: out-of-bounds global access") and "past the end of " + where in msg
    assert "(CTA (2,0), warp 0, lane 26)" in msg, msg


def test_lazy_api_names():
    assert maxsim.launch is maxsim.host.launch and maxsim.Kernel is Kernel
    with pytest.raises(AttributeError):
        maxsim.no_such_name


# ---- the command line --------------------------------------------------------------------------

def _one_line(capsys, argv, *fragments):
    status = cli([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert status == 2 and "Traceback" not in out + err, (status, err)
    lines = err.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith("maxsim: error:"), err
    for f in fragments:
        assert f in err, (f, err)


def test_cli_runs_vecadd_and_saves_the_outputs(tmp_path, capsys):
    n = 300
    a = np.linspace(-1, 1, n, dtype=np.float32)
    b = np.arange(n, dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    status = cli(["run", str(VECADD), "--grid", "3", "--block", "128", "--param", "n=300", "--param", "a=a",
                  "--param", "b=b", "--param", "c=c", "--buffer", f"a={tmp_path / 'a.npy'}:in",
                  "--buffer", f"b={tmp_path / 'b.npy'}:in", "--buffer", "c=zeros:300",
                  "--out", str(tmp_path / "out"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert status == 0
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "c.npy"), a + b)
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["c.npy", "report.json", "summary.txt"]
    assert out["kernel"] == "vecadd" and out["sm_cycles"] > 0 and out["outputs_saved"] == {"c": str(tmp_path / "out" / "c.npy")}
    assert json.loads((tmp_path / "out" / "report.json").read_text())["sm_cycles"] == out["sm_cycles"]
    # the whole-GPU prediction of a file is asked for with --predict
    assert not {"gpu_predicted_seconds", "seconds", "cycles", "gflops"} & set(out)


@pytest.mark.parametrize("extra, fragments", [
    (["--param", "n"], ["--param n: expected NAME=VALUE"]),
    (["--param", "n=1", "--param", "a=1.5.2"], ["'1.5.2' is neither a number nor a buffer name"]),
    (["--buffer", "a=zeros:"], ["expected zeros:SHAPE[:DTYPE]"]),
    (["--buffer", "a=zeros:10:nosuchtype"], ["unknown dtype 'nosuchtype'"]),
    (["--buffer", "a=zeros:0"], ["at least 1"]),
    (["--buffer", "a=missing.npy"], ["no file missing.npy"]),
    (["--texture", "0=missing.npy:float4"], ["no file missing.npy"]),
    (["--texture", "0=t.npy:float3"], ["unknown format 'float3'"]),
    (["--grid", "1,300,300", "--param", "n=1", "--param", "a=a", "--param", "b=a", "--param", "c=a",
      "--buffer", "a=zeros:4"], ["Y * Z < 65,536 CTAs are modelled"]),
    ([], ["takes 4 parameters", "--param NAME=VALUE"]),
    (["--param", "n=4", "--param", "a=a", "--param", "b=a", "--param", "c=q", "--buffer", "a=zeros:4"],
     ["'c' of kernel vecadd = 'q': no buffer of that name"]),
])
def test_cli_bad_specs(capsys, tmp_path, monkeypatch, extra, fragments):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.npy").write_text("not numpy")
    _one_line(capsys, ["run", VECADD, "--functional"] + extra, *fragments)


def test_cli_bad_npy_file(capsys, tmp_path):
    (tmp_path / "bad.npy").write_text("not numpy")
    _one_line(capsys, ["run", VECADD, "--buffer", f"a={tmp_path / 'bad.npy'}"], "cannot read", "as a numpy .npy file")


def test_cli_arguments_do_not_apply_to_sgemm(capsys):
    _one_line(capsys, ["run", "sgemm_64", "--param", "n=1"], "--param does not apply to the sgemm_64 workload")


def test_errors_are_maxsim_errors():
    assert issubclass(LaunchError, MaxsimError)


IDS = """# Kernel: ids
# Params(1):
#\t0:0x140:4:0 out
// every thread writes its ids, packed in hex digits, at its linear position in the launch
<CONSTANT_MAPPING>
    param_out : c[0x0][0x140]
</CONSTANT_MAPPING>
<REGISTER_MAPPING>
    0-15 ~ tx, ty, tz, cx, cy, cz, ntx, lin, blk, addr, v, t0
</REGISTER_MAPPING>
S2R tx, SR_TID.X;
S2R ty, SR_TID.Y;
S2R tz, SR_TID.Z;
S2R cx, SR_CTAID.X;
S2R cy, SR_CTAID.Y;
S2R cz, SR_CTAID.Z;
S2R ntx, SR_NTID.X;
XMAD lin, ty, 4, tx;
XMAD lin, tz, 12, lin;
XMAD blk, cy, 2, cx;
XMAD blk, cz, 6, blk;
XMAD t0, blk, 96, lin;
SHL addr, t0, 2;
IADD addr, addr, param_out;
ISCADD v, ntx, cx, 4;
ISCADD v, v, cz, 4;
ISCADD v, v, cy, 4;
ISCADD v, v, tz, 4;
ISCADD v, v, ty, 4;
ISCADD v, v, tx, 4;
STG [addr], v;
EXIT;
"""


def test_three_dimensional_grid_and_block():
    """A (2, 3, 2) grid of (4, 3, 8)-thread blocks: SR_TID.X/Y/Z, SR_CTAID.X/Y/Z and SR_NTID.X as
    CUDA numbers them (x fastest), checked against numpy's indices; timed and predicted too."""
    r = launch(Kernel.load(IDS), grid=(2, 3, 2), block=(4, 3, 8), params={"out": "out"},
               buffers={"out": Buffer.zeros((12 * 96,), np.uint32)}, timing=True, predict=True)
    out = r.outputs["out"].reshape(2, 3, 2, 8, 3, 4)  # CTA z, y, x; thread z, y, x
    cz, cy, cx, tz, ty, tx = np.indices(out.shape)
    expected = (((((4 * 16 + cx) * 16 + cz) * 16 + cy) * 16 + tz) * 16 + ty) * 16 + tx
    np.testing.assert_array_equal(out, expected)
    assert r.prediction is not None and r.timing is not None


def test_a_kernel_compiled_for_one_launch_serves_the_next_with_its_own_data(vecadd, monkeypatch):
    # launches with the same constants (same n, buffers at the same addresses) share the compiled
    # kernel; each must read its own buffers and write its own output
    import importlib
    launch_mod = importlib.import_module("maxsim.functional.launch")
    built = []
    real = launch_mod.Program

    class Counting(real):
        def __init__(self, *a, **kw):
            built.append(1)
            super().__init__(*a, **kw)
    monkeypatch.setattr(launch_mod, "Program", Counting)
    monkeypatch.setattr(launch_mod, "_IDLE", {})
    outs = []
    for seed in (1, 2, 3):
        rng = np.random.default_rng(seed)
        a = rng.standard_normal(500).astype(np.float32)
        b = rng.standard_normal(500).astype(np.float32)
        r = maxsim.launch(vecadd, grid=4, block=128, params={"a": "a", "b": "b", "c": "c", "n": 500},
                          buffers={"a": Buffer.of(a, "in"), "b": Buffer.of(b, "in"), "c": Buffer.zeros(500)},
                          timing=False, predict=False)
        np.testing.assert_array_equal(r.outputs["c"], a + b)
        outs.append(r.outputs["c"])
    assert len(built) == 1  # compiled once
    assert not np.array_equal(outs[0], outs[1])
    # another n is another constant bank: compiled again, and right
    a, b, r = _vecadd(vecadd, 300, 128, timing=False, predict=False)
    np.testing.assert_array_equal(r.outputs["c"], a + b)
    assert len(built) == 2


def test_a_timed_sm_with_the_inputs_of_an_earlier_one_takes_its_figures(vecadd, monkeypatch):
    # the same kernel over the same addresses, other data: the timed SM's inputs (its CTAs' traces)
    # are the same, so its run is not made again; its figures are a fresh run's
    import collections

    from maxsim.timing import run
    monkeypatch.setattr(run, "_RUNS", collections.OrderedDict())
    wall = {"sim_seconds", "warp_instructions_per_second", "functional_seconds"}

    def once(n, seed):
        rng = np.random.default_rng(seed)
        a = rng.standard_normal(n).astype(np.float32)
        b = rng.standard_normal(n).astype(np.float32)
        r = maxsim.launch(vecadd, grid=8, block=128, params={"a": "a", "b": "b", "c": "c", "n": n},
                          buffers={"a": a, "b": b, "c": np.zeros(n, np.float32)}, predict=False)
        np.testing.assert_array_equal(r.outputs["c"], a + b)  # the functional run goes on
        return r, {k: v for k, v in r.timing.items() if k not in wall}

    (r1, f1), (r2, f2) = once(1000, 1), once(1000, 2)
    assert r2.sm._G is r1.sm._G and r2.sm.stats is not r1.sm.stats  # the run of r1, not made again
    assert f2 == f1 and r2.sm_cycles == r1.sm_cycles > 0
    monkeypatch.setattr(run, "_RUNS", collections.OrderedDict())
    r3, f3 = once(1000, 3)
    assert r3.sm._G is not r1.sm._G and f3 == f2  # a fresh run: the same figures
    r4, f4 = once(900, 4)  # other traces (threads past n leave early): run again
    assert r4.sm._G is not r3.sm._G
    assert f4["sm_warp_instructions"] == r4.result.warp_instructions < f3["sm_warp_instructions"]


def test_parameters_bound_again_alike_or_changed_pack_their_own_bank(vecadd):
    """Constant bank 0 is packed once for parameters given alike again; a changed value, its type
    (an int and a float of the same value) or the sign of a zero packs its own bits."""
    import struct

    from maxsim.host.args import bind
    bufs = {"a": np.zeros(8, np.float32), "b": np.zeros(8, np.float32), "c": np.zeros(8, np.float32)}
    at = vecadd.param("n").offset

    def n_word(n):
        bank = bind(vecadd, {"a": "a", "b": "b", "c": "c", "n": n}, bufs).const_bank
        return bank[at:at + 4]
    assert n_word(5) == struct.pack("<I", 5) and n_word(5) == struct.pack("<I", 5)
    assert n_word(6) == struct.pack("<I", 6)
    assert n_word(5.0) == struct.pack("<f", 5.0)
    assert n_word(0.0) == struct.pack("<f", 0.0) and n_word(-0.0) == struct.pack("<f", -0.0) != n_word(0.0)
    assert n_word(np.float32(2.5)) == struct.pack("<f", 2.5)
    # a buffer placed elsewhere (another one before it) gives its parameter its new address
    r1 = bind(vecadd, {"a": "a", "b": "b", "c": "c", "n": 5}, bufs)
    r2 = bind(vecadd, {"a": "a", "b": "b", "c": "c", "n": 5}, {"x": np.zeros(64, np.float32), **bufs})
    for name in "abc":
        p = vecadd.param(name)
        assert int.from_bytes(r1.const_bank[p.offset:p.offset + p.size], "little") == r1.buffers[name][0]
        assert int.from_bytes(r2.const_bank[p.offset:p.offset + p.size], "little") == r2.buffers[name][0]
    assert r1.buffers["a"][0] != r2.buffers["a"][0]


def test_the_same_ctas_run_again_in_another_order_read_their_own_ids():
    """A batch's warp and CTA ids are made once per batch and shared: the same CTAs launched again,
    alone, in another order or in another grid, each read their own SR_CTAID and SR_TID."""
    k = Kernel.load(IDS)
    cz, cy, cx, tz, ty, tx = np.indices((2, 3, 2, 8, 3, 4))
    expected = ((((((4 * 16 + cx) * 16 + cz) * 16 + cy) * 16 + tz) * 16 + ty) * 16 + tx)
    for ctas in ([(1, 0), (0, 5)], [(0, 5), (1, 0)], [(1, 0), (0, 5)], [(1, 3)]):
        r = launch(k, grid=(2, 3, 2), block=(4, 3, 8), params={"out": "out"},
                   buffers={"out": Buffer.zeros((12 * 96,), np.uint32)}, ctas=ctas, timing=False, predict=False)
        out = r.outputs["out"].reshape(2, 3, 2, 8, 3, 4)
        for x, y in ctas:  # (CTA y numbers z * 3 + y of the three-dimensional grid)
            np.testing.assert_array_equal(out[y // 3, y % 3, x], expected[y // 3, y % 3, x])
        ran = {(y // 3, y % 3, x) for x, y in ctas}
        others = [(z, yy, x) for z in range(2) for yy in range(3) for x in range(2) if (z, yy, x) not in ran]
        assert all(not out[c].any() for c in others)


def test_room_made_at_once_for_the_buffers_places_them_where_allocation_alone_does():
    """GlobalMemory.reserve makes room for the buffers bind places in one array: their addresses,
    the memory's top and the bytes written are those of the allocations made one by one (the
    first at GLOBAL_BASE, each after a 4 KiB guard, 256-byte aligned); a size past 4 GiB reserves
    nothing and its allocation says it does not fit."""
    from maxsim.functional.memory import ALLOC_ALIGN, GLOBAL_BASE, GUARD_BYTES, GlobalMemory
    from maxsim.host.args import bind
    sizes = [10, 4096, 1, 777]
    plain = GlobalMemory()
    want = [plain.alloc(n, name=f"b{i}") for i, n in enumerate(sizes)]
    assert want[0] == GLOBAL_BASE
    for (a, n), b in zip(zip(want, sizes), want[1:]):
        assert b == -(-(a + (n + 3) // 4 * 4 + GUARD_BYTES) // ALLOC_ALIGN) * ALLOC_ALIGN
    reserved = GlobalMemory()
    reserved.reserve(sizes)
    room = reserved.words.size
    assert [reserved.alloc(n, name=f"b{i}") for i, n in enumerate(sizes)] == want
    assert reserved.top == plain.top and reserved.words.size == room >= plain.top // 4  # (not grown again)
    arrays = {f"b{i}": np.arange(n, dtype=np.uint8) for i, n in enumerate(sizes)}
    b = bind(Kernel.load(VECADD), {"a": "b0", "b": "b1", "c": "b2", "n": 1}, arrays)
    assert [b.buffers[f"b{i}"][0] for i in range(len(sizes))] == want
    for i, n in enumerate(sizes):
        np.testing.assert_array_equal(b.memory.read(want[i], n, np.uint8), arrays[f"b{i}"])
    huge = GlobalMemory()
    huge.reserve([1 << 32])
    assert huge.words.size == 0
    with pytest.raises(LaunchError, match="exhausted"):
        huge.alloc(1 << 32, name="x")


def test_a_buffer_of_a_page_or_more_starts_a_page_of_its_own():
    """Buffers of 2 MB or more begin at a 2 MB page boundary, smaller ones are packed 256-byte
    aligned after a 4 KiB guard (maxsim.functional.memory.place), as bind lays out a launch's
    buffers; room made at once is room enough. An allocation that fits the 4 GiB address space
    packed but not on its page is refused, the error naming it and where it was placed."""
    from maxsim.functional.memory import DEVICE_PAGE, GlobalMemory
    from maxsim.host.args import bind
    mb = 1 << 20
    assert DEVICE_PAGE == 2 * mb
    sizes = [10, 3 * mb, 100, 2 * mb, 2 * mb - 4, 8 * mb]
    # by hand: 0x1000; 0x100c + 0x1000 guard -> the page at 2 MB; 5 MB + guard; 0x502064 + guard ->
    # the page at 6 MB; 8 MB + guard (2 MB - 4 is packed); 0xa00ffc + guard -> the page at 12 MB
    want = [0x1000, 0x200000, 0x501000, 0x600000, 0x801000, 0xC00000]
    plain = GlobalMemory()
    assert [plain.alloc(n, name=f"b{i}") for i, n in enumerate(sizes)] == want
    assert plain.top == 0xC00000 + 8 * mb
    reserved = GlobalMemory()
    reserved.reserve(sizes)
    room = reserved.words.size
    assert [reserved.alloc(n, name=f"b{i}") for i, n in enumerate(sizes)] == want
    assert reserved.words.size == room >= reserved.top // 4  # (not grown again)
    arrays = {f"b{i}": np.full(n, i + 1, np.uint8) for i, n in enumerate(sizes)}
    b = bind(Kernel.load(VECADD), {"a": "b0", "b": "b1", "c": "b2", "n": 1}, arrays)
    assert [b.buffers[f"b{i}"][0] for i in range(len(sizes))] == want
    for i, n in enumerate(sizes):
        np.testing.assert_array_equal(b.memory.read(want[i], n, np.uint8), arrays[f"b{i}"])
    unnamed = GlobalMemory()  # no guards: a small allocation at GLOBAL_BASE, a large one on the next page
    assert [unnamed.alloc(4), unnamed.alloc(2 * mb), unnamed.alloc(4)] == [0x1000, 0x200000, 0x400000]
    with pytest.raises(LaunchError, match=r"buffer 'x' of 4294963200 bytes, placed at 0x200000, does not fit "
                                          r"in the 32-bit address space \(4 GiB"):
        GlobalMemory().alloc((1 << 32) - 0x1000, name="x")  # packed at 0x1000 it would end at 4 GiB exactly


SWEEP = """# Kernel: sweep
# Params(4):
#	0:0x140:4:0 a
#	1:0x144:4:0 out
#	2:0x148:4:0 step
#	3:0x14c:4:0 count
// one warp reads a[tid + k * step / 4] for k < count, twice over, in order: out[tid] = their sum
<CONSTANT_MAPPING>
    param_a : c[0x0][0x140]
    param_out : c[0x0][0x144]
    param_step : c[0x0][0x148]
    param_count : c[0x0][0x14c]
</CONSTANT_MAPPING>

<REGISTER_MAPPING>
    0-1 : tid, k
    2-31 ~ t, p, x, sum, pass
</REGISTER_MAPPING>

S2R tid, SR_TID.X;
SHL t, tid, 2;
MOV sum, RZ;
MOV pass, RZ;
PASS:
IADD p, t, param_a;
MOV k, param_count;
LOOP:
LDG x, [p];
FADD sum, sum, x;
IADD p, p, param_step;
IADD32I k, k, -1;
ISETP.NE.AND P0, PT, k, RZ, PT;
@P0 BRA LOOP;
IADD32I pass, pass, 1;
ISETP.LT.AND P1, PT, pass, 2, PT;
@P1 BRA PASS;
IADD p, t, param_out;
STG [p], sum;
EXIT;
"""


@pytest.mark.parametrize("start, pages", [(0, 3), (1 << 20, 4)])
def test_a_matrix_walks_once_per_page_it_spans(start, pages):
    """One warp sweeps 6 MB of an 8 MB buffer twice, 64 KB steps, with TLBs of one entry each: the
    first sweep's translations are first touches (free), the second misses both TLBs once at each
    page it enters, so it walks once per page the sweep spans. From the buffer's start (a page
    boundary: 2 MB or more) that is 3 pages, 3 walks; from 1 MB in, 4. Every request lies in one
    page: 2 x 96 lookups."""
    from maxsim.arch.config import load_config, override
    mb = 1 << 20
    cfg = override(load_config("gm204"), {"tlb.l1_entries": 1, "tlb.l1_assoc": 1, "tlb.l2_entries": 1,
                                          "tlb.l2_assoc": 1})
    a = np.arange(8 * mb // 4, dtype=np.float32) % 1021
    step, count = 64 * 1024, 6 * mb // (64 * 1024)
    r = launch(Kernel.load(SWEEP), grid=1, block=32, buffers={"a": a, "out": Buffer.zeros(32)},
               params={"a": "a", "out": "out", "step": step, "count": count}, config=cfg, gpu_method="full")
    base = r.bound.buffers["a"][0]
    assert base % (2 * mb) == 0
    words = np.arange(32)[:, None] + (start // 4 + np.arange(count) * (step // 4))[None, :]
    if start:  # the same sweep from 1 MB into the buffer: a pointer past the buffer's start
        r = launch(Kernel.load(SWEEP), grid=1, block=32, buffers={"a": a, "out": Buffer.zeros(32)},
                   params={"a": base + start, "out": "out", "step": step, "count": count}, config=cfg,
                   gpu_method="full")
    np.testing.assert_array_equal(r.outputs["out"], 2 * a[words].sum(axis=1, dtype=np.float64).astype(np.float32))
    m = r.sm.memsys.stats()  # (one CTA: the timed SM's run is the launch)
    assert (m["tlb_lookups"], m["tlb_first_touches"]) == (2 * count, pages)
    assert (m["tlb_l1_misses"], m["tlb_l2_misses"]) == (pages, pages)

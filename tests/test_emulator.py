"""The PTX emulator against numpy: users' kernels (tests/user_kernels.py), the project's
own nine kernels through their numba faces, and hand-written PTX whose every result
follows from the PTX ISA's definitions (Python's integers as the oracle).

The tests run under numba's CUDA simulator (conftest), whose numba.cuda cannot make
PTX: a child process with the simulator off compiles every kernel once into a
session-wide disk cache (and compiles the interpreter into numba's cache) first.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from simulator.kernelcode.launch import emulate_kernel, emulating

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
import user_kernels as uk  # noqa: E402

pytestmark = pytest.mark.usefixtures("ptx_cache")


@pytest.mark.parametrize("case", uk.CASES, ids=[c.name for c in uk.CASES])
def test_user_kernel_equals_numpy(case):
    rng = np.random.default_rng(0)
    grid, block, args, shared = case.setup(rng)
    before = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    res = emulate_kernel(case.kernel, grid, block, list(args), shared_bytes=shared)
    assert uk.compare(case, args, case.expected(before)) == []
    assert res.instructions > 0 and 0 < res.simt_efficiency <= 1


def _builtin_problems():
    from simulator.simt.kernels import REGISTRY
    return [(spec, prob) for spec in REGISTRY for prob in spec.variants]


@pytest.mark.parametrize("spec,prob", _builtin_problems(),
                         ids=lambda v: getattr(v, "name", None) or "-")
def test_builtin_kernel_through_its_numba_face(spec, prob):
    rng = np.random.default_rng(0)
    dev = spec.device(spec.problem(**prob))
    inputs = dev.inputs(rng)
    arrays = dict(inputs)
    arrays.update({k: np.zeros(s, np.float32) for k, s in dev.outputs.items()})
    with emulating() as em:
        dev.launch(arrays, 0)
    assert em.launches, "no launch was emulated"
    for name, want in dev.reference(inputs).items():
        got = arrays[name].ravel()
        want = np.asarray(want, dtype=np.float64).ravel()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=name)


# ------------------------------------------------------------------ hand-written PTX

_HEAD = """.version 8.0
.target sm_90
.address_size 64
"""


def _ptx(body: str, params: str, regs: str) -> str:
    return (_HEAD + f".visible .entry k({params})\n{{\n{regs}\n{body}\nret;\n}}\n")


def _thread_index_ptx(params, regs, body):
    """A kernel whose threads each compute %rd9 = global thread index first."""
    pre = """
mov.u32 %r90, %tid.x;
mov.u32 %r91, %ctaid.x;
mov.u32 %r92, %ntid.x;
mad.lo.s32 %r93, %r91, %r92, %r90;
cvt.u64.u32 %rd90, %r93;
"""
    return _ptx(pre + body, params, regs + "\n.reg .b32 %r9<4>;\n.reg .b64 %rd9<1>;")


def _run_binary(op_lines, a, b, out_dtype, extra_regs=""):
    """Each thread reads a[i], b[i] (64-bit), runs ``op_lines`` (%rd3 = f(%rd1, %rd2))
    and stores %rd3 to out[i]."""
    n = a.size
    body = f"""
ld.param.u64 %rd10, [pa];
ld.param.u64 %rd11, [pb];
ld.param.u64 %rd12, [pc];
shl.b64 %rd13, %rd90, 3;
add.s64 %rd14, %rd10, %rd13;
add.s64 %rd15, %rd11, %rd13;
add.s64 %rd16, %rd12, %rd13;
ld.global.u64 %rd1, [%rd14];
ld.global.u64 %rd2, [%rd15];
{op_lines}
st.global.u64 [%rd16], %rd3;
"""
    ptx = _thread_index_ptx(".param .u64 pa, .param .u64 pb, .param .u64 pc",
                            ".reg .b64 %rd<20>;\n.reg .b32 %r<20>;\n.reg .pred %p<4>;\n"
                            + extra_regs, body)
    out = np.zeros(n, dtype=np.uint64)
    emulate_kernel(ptx, 1, n, [a.view(np.uint64), b.view(np.uint64), out])
    return out.view(out_dtype)


M64 = (1 << 64) - 1


def _as_u(x):
    return int(x) & M64


def _as_s(x):
    x = int(x) & M64
    return x - (1 << 64) if x >> 63 else x


@pytest.fixture
def pairs():
    rng = np.random.default_rng(7)
    a = rng.integers(-2**63, 2**63 - 1, 64, dtype=np.int64)
    b = rng.integers(-2**63, 2**63 - 1, 64, dtype=np.int64)
    a[:6] = (0, -1, -2**63, 2**63 - 1, 5, -7)
    b[:6] = (3, 1, -1, 2**62, 0, 2)
    b[10:20] = rng.integers(-100, 100, 10)
    return a, b


def test_64bit_products_match_python_integers(pairs):
    a, b = pairs
    hi_u = _run_binary("mul.hi.u64 %rd3, %rd1, %rd2;", a, b, np.uint64)
    hi_s = _run_binary("mul.hi.s64 %rd3, %rd1, %rd2;", a, b, np.int64)
    for x, y, u, s in zip(a, b, hi_u, hi_s):
        assert int(u) == (_as_u(x) * _as_u(y)) >> 64
        assert int(s) == (int(x) * int(y)) >> 64


def test_integer_division_truncates_as_ptx_says(pairs):
    a, b = pairs
    q = _run_binary("div.s64 %rd3, %rd1, %rd2;", a, b, np.int64)
    r = _run_binary("rem.s64 %rd3, %rd1, %rd2;", a, b, np.int64)
    qu = _run_binary("div.u64 %rd3, %rd1, %rd2;", a, b, np.uint64)
    for x, y, qq, rr, uu in zip(a, b, q, r, qu):
        x, y = int(x), int(y)
        if y == 0:
            continue
        if x == -2**63 and y == -1:
            assert int(qq) == -2**63 and int(rr) == 0
            continue
        t = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        assert int(qq) == t and int(rr) == x - t * y
        assert int(uu) == _as_u(x) // _as_u(y)


def test_carry_chain_adds_128_bits_in_32_bit_pieces(pairs):
    """add.cc / addc / madc as a multi-word add: the low 64 bits of a + b, and of a*b's
    low word plus carries, computed in 32-bit halves."""
    a, b = pairs
    lines = """
mov.b64 {%r1, %r2}, %rd1;
mov.b64 {%r3, %r4}, %rd2;
add.cc.u32 %r5, %r1, %r3;
addc.u32 %r6, %r2, %r4;
mov.b64 %rd3, {%r5, %r6};
"""
    s = _run_binary(lines, a, b, np.uint64)
    assert [int(v) for v in s] == [(_as_u(x) + _as_u(y)) & M64 for x, y in zip(a, b)]
    lines = """
mov.b64 {%r1, %r2}, %rd1;
mov.b64 {%r3, %r4}, %rd2;
sub.cc.u32 %r5, %r1, %r3;
subc.u32 %r6, %r2, %r4;
mov.b64 %rd3, {%r5, %r6};
"""
    d = _run_binary(lines, a, b, np.uint64)
    assert [int(v) for v in d] == [(_as_u(x) - _as_u(y)) & M64 for x, y in zip(a, b)]


def test_shifts_and_bit_fields(pairs):
    a, b = pairs
    sh = _run_binary("cvt.u32.u64 %r1, %rd2;\nand.b32 %r1, %r1, 127;\n"
                     "shr.u64 %rd3, %rd1, %r1;", a, b, np.uint64)
    sa = _run_binary("cvt.u32.u64 %r1, %rd2;\nand.b32 %r1, %r1, 127;\n"
                     "shr.s64 %rd3, %rd1, %r1;", a, b, np.int64)
    for x, y, u, s in zip(a, b, sh, sa):
        k = int(y) & 127
        assert int(u) == (_as_u(x) >> k if k < 64 else 0)
        assert int(s) == int(x) >> min(k, 63)
    ext = _run_binary("cvt.u32.u64 %r1, %rd1;\ncvt.u32.u64 %r2, %rd2;\n"
                      "bfe.s32 %r3, %r1, 4, 9;\ncvt.s64.s32 %rd3, %r3;", a, b, np.int64)
    for x, e in zip(a, ext):
        field = (int(x) >> 4) & 0x1FF
        assert int(e) == (field - 512 if field & 256 else field)


def test_float_to_int_conversions_saturate():
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 3e9, -3e9, np.nan, np.inf, -np.inf,
                  4294967296.0, -1.0], dtype=np.float64)
    out_s = _run_binary("cvt.rni.s32.f64 %r1, %rd1;\ncvt.s64.s32 %rd3, %r1;",
                        x.view(np.int64), x.view(np.int64), np.int64)
    want_s = [0, 2, 2, 0, -2, 2**31 - 1, -2**31, 0, 2**31 - 1, -2**31, 2**31 - 1, -1]
    assert [int(v) for v in out_s] == want_s
    out_u = _run_binary("cvt.rzi.u32.f64 %r1, %rd1;\ncvt.u64.u32 %rd3, %r1;",
                        x.view(np.int64), x.view(np.int64), np.uint64)
    want_u = [0, 1, 2, 0, 0, 3000000000, 0, 0, 2**32 - 1, 0, 2**32 - 1, 0]
    assert [int(v) for v in out_u] == want_u


def test_fp32_arithmetic_is_correctly_rounded():
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(256) * 10.0 ** rng.integers(-20, 20, 256)).astype(np.float32)
    b = (rng.standard_normal(256) * 10.0 ** rng.integers(-20, 20, 256)).astype(np.float32)
    ptx = """
mov.b64 {%r1, %r2}, %rd1;
mov.b64 {%r3, %r4}, %rd2;
mov.b32 %f1, %r1;
mov.b32 %f2, %r3;
div.rn.f32 %f3, %f1, %f2;
mul.rn.f32 %f4, %f1, %f2;
mov.b32 %r5, %f3;
mov.b32 %r6, %f4;
mov.b64 %rd3, {%r5, %r6};
"""
    ptx_regs = ptx.replace("%f", "%ff")
    pad = np.zeros(256, np.float32)
    av = np.stack([a, pad], 1).ravel().view(np.int64)
    bv = np.stack([b, pad], 1).ravel().view(np.int64)
    out = _run_binary(ptx_regs, av, bv, np.uint64, ".reg .f32 %ff<8>;")
    got = out.view(np.float32).reshape(-1, 2)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got[:, 0], a / b)
        np.testing.assert_array_equal(got[:, 1], a * b)


_DIVERGE = """
mov.u32 %r1, %tid.x;
and.b32 %r2, %r1, 1;
setp.eq.u32 %p1, %r2, 0;
mov.u32 %r3, 0;
@%p1 bra $EVEN;
add.u32 %r3, %r3, 1;
add.u32 %r3, %r3, 1;
add.u32 %r3, %r3, 1;
bra.uni $JOIN;
$EVEN:
add.u32 %r3, %r3, 10;
$JOIN:
ld.param.u64 %rd1, [po];
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r3;
"""


def test_divergent_branch_counts_and_reconverges():
    """Odd lanes run 4 instructions, even lanes 1, then all 32 reconverge: warp
    instructions 5 (head) + 4 + 1 + 4 (tail) + exit, thread instructions by lane."""
    ptx = _ptx(_DIVERGE, ".param .u64 po", ".reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n"
               ".reg .pred %p<2>;")
    out = np.zeros(32, np.uint32)
    res = emulate_kernel(ptx, 1, 32, [out])
    assert list(out) == [10 if t % 2 == 0 else 3 for t in range(32)]
    assert res.instructions == 5 + 4 + 1 + 4 + 1
    assert res.thread_instructions == 32 * 5 + 16 * 4 + 16 * 1 + 32 * 5
    by_text = {t: (w, th) for _, t, w, th in res.per_instruction}
    assert by_text["st.global.u32 [%rd3], %r3"] == (1, 32)   # one warp-instruction: reconverged


@pytest.mark.parametrize("boolop,fn", [("and", lambda t, c: t & c), ("or", lambda t, c: t | c),
                                       ("xor", lambda t, c: t ^ c)])
def test_setp_with_two_destinations_combines_each_with_c(boolop, fn):
    """PTX ISA, setp: ``p = BoolOp(t, c)`` and ``q = BoolOp(!t, c)`` where t is the
    comparison (the complement of p only when c does not enter)."""
    body = f"""
mov.u32 %r1, %tid.x;
and.b32 %r2, %r1, 1;
setp.ne.u32 %p3, %r2, 0;
setp.lt.{boolop}.u32 %p1|%p2, %r1, 16, %p3;
selp.u32 %r3, 1, 0, %p1;
selp.u32 %r4, 2, 0, %p2;
or.b32 %r5, %r3, %r4;
ld.param.u64 %rd1, [po];
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r5;
"""
    ptx = _ptx(body, ".param .u64 po", ".reg .b32 %r<8>;\n.reg .b64 %rd<4>;\n.reg .pred %p<4>;")
    out = np.zeros(32, np.uint32)
    emulate_kernel(ptx, 1, 32, [out])
    tid = np.arange(32)
    t, c = tid < 16, tid % 2 == 1
    np.testing.assert_array_equal(out, fn(t, c) * 1 + fn(~t, c) * 2)


def test_out_of_bounds_store_names_the_thread_and_instruction():
    body = """
mov.u32 %r1, %tid.x;
ld.param.u64 %rd1, [po];
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r1;
"""
    ptx = _ptx(body, ".param .u64 po", ".reg .b32 %r<4>;\n.reg .b64 %rd<4>;")
    with pytest.raises(ValueError, match=r"thread \(10, 0, 0\).*st\.global\.u32.*outside "
                                         r"every array"):
        emulate_kernel(ptx, 1, 32, [np.zeros(10, np.uint32)])


def test_barrier_orders_shared_memory_between_warps():
    """Warp 1 writes shared memory, every warp reads a value another warp wrote after a
    bar.sync: right only if the barrier holds warp 0 until warp 1 has written."""
    body = """
mov.u32 %r1, %tid.x;
mov.u64 %rd1, sm;
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
mul.lo.u32 %r2, %r1, 3;
st.shared.u32 [%rd3], %r2;
bar.sync 0;
xor.b32 %r3, %r1, 32;
mul.wide.u32 %rd4, %r3, 4;
add.s64 %rd5, %rd1, %rd4;
ld.shared.u32 %r4, [%rd5];
ld.param.u64 %rd6, [po];
add.s64 %rd7, %rd6, %rd2;
st.global.u32 [%rd7], %r4;
"""
    ptx = (_HEAD + ".shared .align 4 .b8 sm[256];\n"
           + _ptx(body, ".param .u64 po", ".reg .b32 %r<8>;\n.reg .b64 %rd<8>;")[len(_HEAD):])
    out = np.zeros(64, np.uint32)
    emulate_kernel(ptx, 1, 64, [out])
    assert list(out) == [3 * (t ^ 32) for t in range(64)]


def test_shuffle_modes_follow_the_ptx_definition():
    """shfl.sync up/down/bfly/idx with a clamp: each lane's source per the ISA's
    pseudo-code, out-of-range sources keep the lane's own value."""
    results = {}
    for mode, b, c in (("up", 3, 0), ("down", 5, 31), ("bfly", 6, 31), ("idx", 9, 31),
                       ("down", 2, 0x1C1F)):   # segments of 8 lanes (c = 0b11100_00011111)
        body = f"""
mov.u32 %r1, %tid.x;
mul.lo.u32 %r2, %r1, 7;
shfl.sync.{mode}.b32 %r3|%p1, %r2, {b}, {c}, -1;
ld.param.u64 %rd1, [po];
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r3;
"""
        ptx = _ptx(body, ".param .u64 po", ".reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n"
                   ".reg .pred %p<2>;")
        out = np.zeros(32, np.uint32)
        emulate_kernel(ptx, 1, 32, [out])
        results[(mode, c)] = list(out)

    def ref(mode, b, c):
        out = []
        for lane in range(32):
            seg = (c >> 8) & 31
            maxl = (lane & seg) | ((c & 31) & ~seg)
            minl = lane & seg
            j, ok = {"up": (lane - b, lane - b >= maxl), "down": (lane + b, lane + b <= maxl),
                     "bfly": (lane ^ b, (lane ^ b) <= maxl),
                     "idx": (minl | (b & ~seg), (minl | (b & ~seg)) <= maxl)}[mode]
            out.append(7 * (j if ok else lane))
        return out
    assert results[("up", 0)] == ref("up", 3, 0)
    assert results[("down", 31)] == ref("down", 5, 31)
    assert results[("bfly", 31)] == ref("bfly", 6, 31)
    assert results[("idx", 31)] == ref("idx", 9, 31)
    assert results[("down", 0x1C1F)] == ref("down", 2, 0x1C1F)


def test_unsupported_ptx_is_one_clear_error():
    body = "mov.u32 %r1, %tid.x;\nmul24.lo.u32 %r2, %r1, %r1;"
    ptx = _ptx(body, ".param .u64 po", ".reg .b32 %r<4>;")
    with pytest.raises(ValueError, match=r"line \d+: `mul24\.lo\.u32 %r2, %r1, %r1` is not "
                                         "supported"):
        emulate_kernel(ptx, 1, 32, [np.zeros(1)])


@pytest.mark.parametrize("grid,block,msg", [
    (0, 32, r"grid=0: x is 0; allowed 1\.\.2147483647"),
    (1, (32, 33), r"block=\(32, 33\): 1056 threads; allowed at most 1024"),
    (1, (1, 1, 65), r"block=\(1, 1, 65\): z is 65; allowed 1\.\.64"),
    (1.5, 32, r"grid=1\.5: expected an int or a tuple"),
    (True, 32, r"grid=True: expected an int"),
])
def test_launch_arguments_are_checked(grid, block, msg):
    ptx = _ptx("", ".param .u64 po", "")
    with pytest.raises((ValueError, TypeError), match=msg):
        emulate_kernel(ptx, grid, block, [np.zeros(1)])


def test_cli_emulates_the_example_transpose(tmp_path, ptx_cache):
    """`roofsim emulate` from a shell (numba's simulator off, as for a user): the
    transpose's output equals numpy's, and the JSON's counts add up."""
    root = os.path.dirname(HERE)
    js, npz = tmp_path / "em.json", tmp_path / "out.npz"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0", PYTHONPATH=root)
    r = subprocess.run([sys.executable, "-m", "simulator", "emulate",
                        "examples/kernels.py:launch_transpose", "--block", "32x8",
                        "--top", "3", "--json", str(js), "--save", str(npz)],
                       cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "transpose emulated from its PTX (cc 9.0)" in r.stdout
    import json
    doc = json.loads(js.read_text())
    assert doc["instructions"] == sum(p["warp_executions"] for p in doc["per_instruction"])
    assert doc["written_args"] == [1]
    arrays = np.load(npz)
    np.testing.assert_array_equal(arrays["arg1"], arrays["arg0"].T)


def test_record_keeps_each_warp_path_masks_and_addresses():
    ptx = _ptx(_DIVERGE, ".param .u64 po", ".reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n"
               ".reg .pred %p<2>;")
    out = np.zeros(64, np.uint32)
    res = emulate_kernel(ptx, 1, 64, [out], record=True)
    ev, addrs = res.trace["events"], res.trace["addresses"]
    assert len(ev) == res.instructions == 2 * 15
    texts = res.trace["texts"]
    odd = [texts[pc] for w, pc, mask, a in ev if w == 0 and mask == 0xAAAAAAAA]
    assert odd == ["add.u32 %r3, %r3, 1"] * 3 + ["bra.uni $JOIN"]
    stores = [(w, a) for w, pc, mask, a in ev if texts[pc].startswith("st.global")]
    assert [w for w, _ in stores] == [0, 1] and all(a >= 0 for _, a in stores)
    for _, a in stores:
        row = addrs[a]
        assert list(row - row[0]) == [4 * lane for lane in range(32)]
    assert addrs[stores[1][1]][0] - addrs[stores[0][1]][0] == 128


_CALLS = _HEAD + """
.func (.param .b32 func_retval0) twice
(
    .param .b32 twice_param_0
)
;
.visible .entry k(.param .u64 po)
{
.reg .b32 %r<6>;
.reg .b64 %rd<4>;
mov.u32 %r1, %tid.x;
{ // callseq 0, 0
.reg .b32 temp_param_reg;
.param .b32 param0;
st.param.b32 [param0+0], %r1;
.param .b32 retval0;
call.uni (retval0),
twice,
(
param0
);
ld.param.b32 %r2, [retval0+0];
} // callseq 0
{ // callseq 1, 0
.param .b32 param0;
st.param.b32 [param0+0], %r2;
.param .b32 retval0;
call.uni (retval0), twice, (param0);
ld.param.b32 %r3, [retval0+0];
} // callseq 1
ld.param.u64 %rd1, [po];
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r3;
ret;
}
.func (.param .b32 func_retval0) twice(
    .param .b32 twice_param_0
)
{
.reg .b32 %r<4>;
.reg .pred %p<2>;
ld.param.u32 %r1, [twice_param_0];
setp.lt.u32 %p1, %r1, 16;
@%p1 bra $L__BB1_2;
mul.lo.u32 %r2, %r1, 2;
st.param.b32 [func_retval0+0], %r2;
ret;
$L__BB1_2:
add.u32 %r2, %r1, 100;
st.param.b32 [func_retval0+0], %r2;
ret;
}
"""


def test_calls_are_inlined_with_their_own_registers_and_returns():
    """Two calls of a function (declared before, defined after) whose lanes return on
    two paths: f(f(t)), f(x) = x + 100 below 16, 2x from 16."""
    out = np.zeros(64, np.uint32)
    res = emulate_kernel(_CALLS, 1, 64, [out])

    def f(x):
        return x + 100 if x < 16 else 2 * x
    assert list(out) == [f(f(t)) for t in range(64)]
    assert res.simt_efficiency < 1      # warp 0 diverged in the first call


def test_a_call_of_an_external_function_is_refused():
    ptx = _CALLS.replace("call.uni (retval0), twice, (param0);",
                         "call.uni (retval0), vprintf, (param0);")
    with pytest.raises(ValueError, match=r"calls vprintf, which has no body in the PTX"):
        emulate_kernel(ptx, 1, 32, [np.zeros(32, np.uint32)])


def test_an_index_one_past_an_array_is_reported_not_written_into_the_next():
    body = """
mov.u32 %r1, %tid.x;
ld.param.u64 %rd1, [po];
mul.wide.u32 %rd2, %r1, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r1;
"""
    ptx = _ptx(body, ".param .u64 po, .param .u64 pother", ".reg .b32 %r<4>;\n"
               ".reg .b64 %rd<4>;")
    for n in (64, 63, 60):          # a multiple of 256 bytes and not
        other = np.full(256, 7, np.uint32)
        with pytest.raises(ValueError, match=rf"thread \({n}, 0, 0\).*outside every array"):
            emulate_kernel(ptx, 1, 96, [np.zeros(n, np.uint32), other])
        assert (other == 7).all()

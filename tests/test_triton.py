"""Triton's PTX, as torch.compile (Inductor) made it for ResNet-50 on the H100
(data/traces/h100-sxm/triton_resnet50_b8.tar.gz): the emulator reads what Triton writes
(`.reqntid` after the parameters, `.ptr .global .align` pointer parameters,
`createpolicy` and `.L2::cache_hint` loads) and computes what Inductor's kernel source
says, checked against numpy."""
import tarfile
from pathlib import Path

import numpy as np
import pytest

from simulator.kernelcode.launch import emulate_kernel

TAR = Path(__file__).resolve().parents[1] / "data" / "traces" / "h100-sxm" / "triton_resnet50_b8.tar.gz"
NAME = "triton_poi_fused__native_batch_norm_legit_no_training_add_relu_7"


@pytest.fixture(scope="module")
def ptx():
    with tarfile.open(TAR) as tar:
        m = next(m for m in tar.getmembers() if m.name.endswith(NAME + ".ptx"))
        return tar.extractfile(m).read().decode()


def test_inductors_fused_batch_norm_add_relu_equals_numpy(ptx):
    """Inductor's source for it (in the tar's wrapper code): x0 = xindex % 256 (channels
    last); out = relu((x - mean[x0]) / sqrt(var[x0] + 1e-5) * w[x0] + b[x0] + residual),
    in place; XBLOCK 512 over 256 threads, two elements a thread; the last two pointers
    are Triton's scratch."""
    n = 512 * 8
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    mean, var, w, b = (rng.random(256).astype(np.float32) for _ in range(4))
    res = rng.standard_normal(n).astype(np.float32)
    c = np.arange(n) % 256
    want = np.maximum(0, (x.astype(np.float64) - mean[c]) / np.sqrt(var[c] + np.float32(1e-5))
                      * w[c] + b[c] + res)
    args = [x.copy(), mean, var, w, b, res, np.int32(n), np.zeros(1, np.uint8), np.zeros(1, np.uint8)]
    em = emulate_kernel(ptx, (n // 512,), (256,), args, name=NAME)
    np.testing.assert_allclose(args[0], want, rtol=1e-5, atol=1e-5)
    assert em.simt_efficiency == 1.0 and em.instructions > 0


def test_inductors_launches_from_its_wrapper_and_the_trace():
    """Every Triton launch of the compiled forward (68 in the trace): its PTX is the
    configuration that ran -- its block's warps are the traced block's and, for a 1-D
    pointwise kernel, its block's elements times the traced grid cover xnumel (the last
    integer argument) without a block to spare -- and it gets one argument per PTX
    parameter, each buffer as large as the wrapper's shape and strides make it."""
    import json
    import re

    from simulator.kernelcode.inductor import _xblock, launches
    trace = TAR.parent / "torch_resnet50_b8_compiled.json"
    ls = launches(TAR, trace)
    events = [e for e in json.loads(trace.read_text())["traceEvents"]
              if e.get("cat") == "kernel" and e["name"].startswith("triton")]
    assert len(ls) == len(events) == 68
    for lau in ls:
        header = lau.ptx.split("{", 1)[0]
        assert len(re.findall(r"\.param\s", header)) == len(lau.args)
        assert f".reqntid {lau.block[0]}" in header or ".maxntid" in header
        if lau.grid[1:] == (1, 1) and "_per_" not in lau.name:
            n = [a for a in lau.args if np.ndim(a) == 0][-1]
            x = _xblock(lau.ptx)
            assert (lau.grid[0] - 1) * x < n <= lau.grid[0] * x, (lau.name, x, lau.grid, n)
    relu = next(lau for lau in ls if lau.name.endswith("relu_2"))
    assert relu.args[0].size == 8 * 64 * 112 * 112          # the stem's output, from its assert


@pytest.fixture(scope="module")
def forward():
    from simulator.kernelcode.inductor import launches
    return {lau.name: lau for lau in launches(TAR, TAR.parent / "torch_resnet50_b8_compiled.json")}


def _one(forward, suffix):
    return next(lau for name, lau in forward.items() if name.endswith(suffix))


def test_stmatrix_in_triton_s_layout_transform_equals_numpy(forward):
    """triton_poi_fused_convolution_0 (Inductor's source: out[y0 + 3*x2 + 150528*y1] =
    in[x2 + 50176*y3], y0 = y3 % 3, y1 = y3 // 3): the input NCHW (8, 3, 224, 224)
    rewritten NHWC, through shared memory with stmatrix; and its SASS's STSM moves 16
    bytes a lane: 6272 warps, two STSM.x4 (512 bytes each) and two LDS.128 each."""
    from simulator.kernelcode.timing import simulate_kernel
    lau = _one(forward, "_convolution_0")
    assert "stmatrix" in lau.ptx
    x = np.random.default_rng(1).standard_normal(1204224).astype(np.float32)
    out = np.zeros_like(x)
    emulate_kernel(lau.ptx, lau.grid, lau.block, [x, out] + list(lau.args[2:]), name=lau.name,
                   shared_bytes=lau.shared_bytes)
    np.testing.assert_array_equal(out, x.reshape(8, 3, 50176).transpose(0, 2, 1).reshape(-1))
    r = simulate_kernel(lau.ptx, lau.grid, lau.block, lau.args, hw="h100-sxm", name=lau.name,
                        shared_bytes=lau.shared_bytes, l2="warm")
    assert r.bytes_by_level["shared"] == 6272 * (2 * 512 + 2 * 512)
    assert [x["text"].split()[0] for x in r.extra["sass"] if "SM" in x["text"].split()[0]] == \
        ["STSM.16.M88.4"] * 2


def test_ldmatrix_in_triton_s_mean_reduction_equals_numpy(forward):
    """triton_per_fused__..._add_mean_relu_23: ResNet's last block's batch norm, residual
    add and ReLU, then the mean over the 7 x 7 positions (channels last, 2048 channels),
    with an ldmatrix in its layout conversion."""
    lau = _one(forward, "_add_mean_relu_23")
    assert "ldmatrix" in lau.ptx
    rng = np.random.default_rng(2)
    a, res = (rng.standard_normal(802816).astype(np.float32) for _ in range(2))
    mean, var, w, b = (rng.random(2048).astype(np.float32) for _ in range(4))
    out = np.zeros(16384, np.float32)
    emulate_kernel(lau.ptx, lau.grid, lau.block, [out, a, mean, var, w, b, res] + list(lau.args[7:]),
                   name=lau.name, shared_bytes=lau.shared_bytes)
    want = np.maximum(0, (a.reshape(8, 49, 2048).astype(np.float64) - mean)
                      / np.sqrt(var + np.float32(1e-5)) * w + b + res.reshape(8, 49, 2048))
    np.testing.assert_allclose(out, want.mean(axis=1).reshape(-1), rtol=1e-5, atol=1e-5)


_MATRIX_PTX = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry ldm(.param .u64 out, .param .u64 inp) {{
  .reg .b32 %r<20>;
  .reg .b64 %rd<10>;
  .shared .align 16 .b8 sm[512];
  mov.u32 %r1, %tid.x;
  ld.param.u64 %rd1, [inp];
  cvta.to.global.u64 %rd1, %rd1;
  mul.wide.u32 %rd2, %r1, 16;
  add.s64 %rd3, %rd1, %rd2;
  ld.global.v4.u32 {{%r2, %r3, %r4, %r5}}, [%rd3];
  mov.u32 %r6, sm;
  mul.lo.u32 %r7, %r1, 16;
  add.u32 %r8, %r6, %r7;
  {put}
  bar.sync 0;
  {get}
  ld.param.u64 %rd4, [out];
  cvta.to.global.u64 %rd4, %rd4;
  add.s64 %rd5, %rd4, %rd2;
  st.global.v4.u32 [%rd5], {{%r9, %r10, %r11, %r12}};
  ret;
}}
"""


def _fragments(rows, trans):
    """The PTX ISA's m8n8 .b16 fragment of four matrices whose rows are ``rows`` (32 rows
    of 8 halfwords, lane l's address the start of row l): lane l's register m holds row
    l/4, columns 2(l%4) and 2(l%4)+1 of matrix m, low half first; .trans the transpose
    (column l/4 of rows 2(l%4) and 2(l%4)+1)."""
    S = rows.view(np.uint16).reshape(32, 8)
    out = np.zeros((32, 4), np.uint32)
    for lane in range(32):
        for m in range(4):
            if trans:
                lo, hi = S[8 * m + 2 * (lane % 4), lane // 4], S[8 * m + 2 * (lane % 4) + 1, lane // 4]
            else:
                lo, hi = S[8 * m + lane // 4, 2 * (lane % 4)], S[8 * m + lane // 4, 2 * (lane % 4) + 1]
            out[lane, m] = np.uint32(lo) | (np.uint32(hi) << 16)
    return out.reshape(-1)


@pytest.mark.parametrize("trans", ["", ".trans"])
def test_ldmatrix_and_stmatrix_follow_the_ptx_isa_fragment_layout(trans):
    rows = np.random.default_rng(3).integers(0, 2 ** 32, 128, dtype=np.uint64).astype(np.uint32)
    load = _MATRIX_PTX.format(
        put="st.shared.v4.u32 [%r8], {%r2, %r3, %r4, %r5};",
        get=f"ldmatrix.sync.aligned.m8n8.x4{trans}.shared.b16 {{%r9, %r10, %r11, %r12}}, [%r8];")
    out = np.zeros(128, np.uint32)
    emulate_kernel(load, (1,), (32,), [out, rows.copy()], name="ldm")
    np.testing.assert_array_equal(out, _fragments(rows, bool(trans)))
    store = _MATRIX_PTX.format(
        put=f"stmatrix.sync.aligned.m8n8.x4{trans}.shared.b16 [%r8], {{%r2, %r3, %r4, %r5}};",
        get="ld.shared.v4.u32 {%r9, %r10, %r11, %r12}, [%r8];")
    out = np.zeros(128, np.uint32)
    emulate_kernel(store, (1,), (32,), [out, _fragments(rows, bool(trans))], name="ldm")
    np.testing.assert_array_equal(out, rows)


def test_a_forwards_launches_share_their_buffers_and_run_as_one_sequence(forward):
    """inductor.launches gives a buffer one array in every launch that takes it (a
    reused buffer its first name's), so that simulate_launches, given the PTX text, its
    entry and its dynamic shared memory, carries the L2 from one launch to the next: the
    same launch again finds its arrays there."""
    from simulator.kernelcode.inductor import launches
    from simulator.kernelcode.timing import simulate_launches
    ls = launches(TAR, TAR.parent / "torch_resnet50_b8_compiled.json")
    ids = {}
    for lau in ls:
        for a in lau.args:
            if isinstance(a, np.ndarray) and a.size > 1:
                ids.setdefault(id(a), set()).add(lau.name)
    assert any(len(names) > 1 for names in ids.values())     # a buffer two kernels take
    lau = _one(forward, "_relu_4")
    one = (lau.ptx, lau.grid, lau.block, lau.args, lau.name, lau.shared_bytes)
    r = simulate_launches([one, one], hw="h100-sxm", l2="cold")
    first, second = r.launches
    assert second.hit_rates["l2"] > first.hit_rates["l2"] + 0.5
    assert second.cycles < first.cycles

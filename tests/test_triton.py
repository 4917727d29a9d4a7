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

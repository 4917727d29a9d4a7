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

"""SIMT kernels: the numba.cuda face (under the CUDA simulator) against numpy, and its
recorded per-thread global accesses against the pure-Python reference face."""
import numpy as np
import pytest

import hwmodels
from simulator.simt.kernels import gemm_naive, relu
from simulator.simt.kernels.launch import Launch
from simulator.simt.kernels.recorder import recording


def _nonempty(d):
    return {k: v for k, v in d.items() if v}


@pytest.mark.parametrize("grid,block,n", [(2, 4, 10), (1, 32, 20), (3, 8, 24), (5, 2, 7)])
def test_relu_kernel_and_accesses(grid, block, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    arrs, log = recording({"x": x, "y": np.zeros(n, np.float32)})
    lc = relu.launch(grid, block)
    relu.kernel()[grid, block](arrs["x"], arrs["y"], n)
    assert np.array_equal(np.asarray(arrs["y"]), np.maximum(x, 0))
    assert log.by_thread == _nonempty(relu.thread_accesses(lc, n))


@pytest.mark.parametrize("thread_x", ["cols", "rows"])
@pytest.mark.parametrize("M,N,K,block", [(5, 7, 3, (4, 2)), (8, 8, 4, (4, 4)), (3, 9, 2, (2, 3))])
def test_gemm_naive_kernel_and_accesses(thread_x, M, N, K, block):
    rng = np.random.default_rng(M * N)
    A = rng.integers(-3, 4, (M, K)).astype(np.float32)
    B = rng.integers(-3, 4, (K, N)).astype(np.float32)
    arrs, log = recording({"A": A, "B": B, "C": np.zeros((M, N), np.float32)})
    lc = gemm_naive.launch(M, N, block, thread_x)
    gemm_naive.kernel(thread_x)[lc.grid[:2], lc.block[:2]](arrs["A"], arrs["B"], arrs["C"], M, N, K)
    assert np.array_equal(np.asarray(arrs["C"]), A @ B)
    assert log.by_thread == _nonempty(gemm_naive.thread_accesses(lc, M, N, K, thread_x))


def test_coalescing_differs_between_mappings():
    """With threadIdx.x on columns a warp's B loads are consecutive; on rows they are not."""
    M = N = K = 32
    for thread_x, contiguous in (("cols", True), ("rows", False)):
        lc = gemm_naive.launch(M, N, (32, 1), thread_x)
        acc = gemm_naive.thread_accesses(lc, M, N, K, thread_x)
        warp = [acc[((0, 0, 0), (t, 0, 0))] for t in range(32)]
        b_first = [next(i for op, arr, i in w if arr == "B") for w in warp]
        assert (np.diff(b_first) == 1).all() == contiguous


def test_bad_launches():
    with pytest.raises(ValueError, match="2048 threads exceed gtx480's 1024 per block"):
        Launch(1, 2048).check(hwmodels.get("gtx480"))
    with pytest.raises(ValueError, match="grid = 0"):
        Launch(0, 32)
    with pytest.raises(ValueError, match="thread_x = 'diag'"):
        gemm_naive.launch(4, 4, (2, 2), "diag")

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


@pytest.mark.parametrize("M,N,K,tile", [(10, 12, 9, 8), (8, 8, 8, 8), (5, 17, 20, 8), (20, 9, 3, 16),
                                        (32, 32, 32, 32)])
def test_gemm_tiled_kernel_and_accesses(M, N, K, tile):
    from simulator.simt.kernels import gemm_tiled
    rng = np.random.default_rng(M + N + K)
    A = rng.integers(-3, 4, (M, K)).astype(np.float32)
    B = rng.integers(-3, 4, (K, N)).astype(np.float32)
    arrs, log = recording({"A": A, "B": B, "C": np.zeros((M, N), np.float32)})
    lc = gemm_tiled.launch(M, N, tile)
    gemm_tiled.kernel(tile)[lc.grid[:2], lc.block[:2]](arrs["A"], arrs["B"], arrs["C"], M, N, K)
    assert np.array_equal(np.asarray(arrs["C"]), A @ B)
    assert log.by_thread == _nonempty(gemm_tiled.thread_accesses(lc, M, N, K, tile))
    with pytest.raises(ValueError, match="tile = 12"):
        gemm_tiled.launch(M, N, 12)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("shape", [dict(N=1, C=2, H=5, W=4, K=3, R=3, S=3, stride=1, padding=1),
                                   dict(N=2, C=3, H=6, W=5, K=2, R=3, S=2, stride=2, padding=1),
                                   dict(N=1, C=2, H=4, W=4, K=4, R=1, S=1, stride=2, padding=0)])
@pytest.mark.parametrize("block", [32, 7])
def test_conv_direct_kernel_and_accesses(layout, shape, block):
    import workloads
    from simulator.simt.kernels import conv_direct
    op = workloads.Conv2d(layout=layout, **shape)
    rng = np.random.default_rng(3)
    x = rng.integers(-3, 4, (op.N, op.C, op.H, op.W)).astype(np.float32)
    w = rng.integers(-3, 4, (op.K, op.C, op.R, op.S)).astype(np.float32)
    xp = np.pad(x, ((0, 0), (0, 0), (op.padding,) * 2, (op.padding,) * 2))
    ref = np.zeros((op.N, op.K, op.P, op.Q), np.float32)
    for r in range(op.R):
        for s in range(op.S):
            patch = xp[:, :, r:r + op.stride * op.P:op.stride, s:s + op.stride * op.Q:op.stride]
            ref += np.einsum("ncpq,kc->nkpq", patch, w[:, :, r, s])
    if layout == "nhwc":
        x, w, ref = x.transpose(0, 2, 3, 1), w.transpose(2, 3, 1, 0), ref.transpose(0, 2, 3, 1)
    ys = (op.N, op.K, op.P, op.Q) if layout == "nchw" else (op.N, op.P, op.Q, op.K)
    arrs, log = recording({"x": x, "w": w, "y": np.zeros(ys, np.float32)})
    lc = conv_direct.launch(op, block)
    conv_direct.kernel(layout)[lc.grid[0], lc.block[0]](arrs["x"], arrs["w"], arrs["y"],
                                                         *conv_direct.args(op))
    assert np.array_equal(np.asarray(arrs["y"]), ref)
    assert log.by_thread == _nonempty(conv_direct.thread_accesses(lc, op))


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("shape", [dict(N=1, C=2, H=5, W=4, K=3, R=3, S=3, stride=1, padding=1),
                                   dict(N=2, C=3, H=6, W=5, K=5, R=3, S=2, stride=2, padding=1)])
def test_conv_im2col_kernels_and_accesses(layout, shape):
    import workloads
    from simulator.simt.kernels import conv_im2col, gemm_tiled
    from simulator.systolic.lowering import operand_matrices
    op = workloads.Conv2d(layout=layout, **shape)
    # data, im2col matrix (c, r, s column order) and the direct-convolution reference
    # come from the systolic engine's lowering, which is independent code
    A, _, Bm, ref = operand_matrices(op, seed=5)
    rng = np.random.default_rng(5)
    x = rng.integers(-3, 4, size=(op.N, op.C, op.H, op.W)).astype(np.float32)
    w = rng.integers(-3, 4, size=(op.K, op.C, op.R, op.S)).astype(np.float32)
    assert np.array_equal(w.reshape(op.K, -1).T, Bm)       # the same data as the lowering
    if layout == "nchw":
        xin, B = x, np.ascontiguousarray(w.reshape(op.K, -1).T)
    else:
        xin, B = x.transpose(0, 2, 3, 1).copy(), w.transpose(2, 3, 1, 0).reshape(-1, op.K).copy()
    M, N, K = conv_im2col.gemm_dims(op)
    l1, l2 = conv_im2col.launches(op, block=64, tile=8)
    arrs, log = recording({"x": xin, "col": np.zeros((M, K), np.float32)})
    conv_im2col.im2col_kernel(layout)[l1.grid[0], l1.block[0]](arrs["x"], arrs["col"],
                                                                *conv_im2col.im2col_args(op))
    assert log.by_thread == _nonempty(conv_im2col.im2col_accesses(l1, op))
    col = np.asarray(arrs["col"])
    if layout == "nchw":
        assert np.array_equal(col, A)
    arrs2, log2 = recording({"A": col, "B": B, "C": np.zeros((M, N), np.float32)})
    gemm_tiled.kernel(8)[l2.grid[:2], l2.block[:2]](arrs2["A"], arrs2["B"], arrs2["C"], M, N, K)
    assert np.array_equal(np.asarray(arrs2["C"]), ref)
    assert log2.by_thread == _nonempty(gemm_tiled.thread_accesses(l2, M, N, K, 8))


def test_relu_default_grid_fills_every_sm_once_by_the_occupancy_rules():
    """The default grid is sm_count x the blocks one SM holds -- by the block limit where
    blocks are small (32 an SM on the H100, 8 on the GTX 480), by threads where large."""
    import hwmodels
    from simulator.simt import api
    for name, block, per_sm in (("h100-sxm", 32, 32), ("h100-sxm", 256, 8),
                                ("gtx480", 32, 8), ("gtx480", 512, 3)):
        hw = hwmodels.get(name)
        (prog,) = api.build(hw, "relu", n=1 << 20, block=(block,)).programs
        assert prog.launch.grid == (hw.sm_count * per_sm, 1, 1), (name, block)


def test_layout_transform_moves_each_element_once():
    """The layout transform a plan inserts between layers of different layouts: each
    target element reads one source element, every source element once (a permutation,
    both directions, against numpy's transpose); the engine's DRAM traffic, full mode,
    is the tensor read once and written once (8 bytes an element), and no FLOPs."""
    from simulator.simt import api, engine
    from simulator.simt.kernels import layout_transform as lt
    from workloads.ir import Conv2d
    N, C, H, W = 2, 3, 4, 5
    x = np.arange(N * C * H * W)
    for target, src_shape, perm in (("nhwc", (N, C, H, W), (0, 2, 3, 1)),
                                    ("nchw", (N, H, W, C), (0, 3, 1, 2))):
        got = [lt.source_index(o, N, C, H, W, target) for o in range(x.size)]
        assert sorted(got) == list(range(x.size))
        assert np.array_equal(x[got], np.transpose(x.reshape(src_shape), perm).ravel())
    hw = hwmodels.get("h100-sxm")
    conv = Conv2d(name="l", N=4, C=64, H=28, W=28, K=64, R=3, S=3, padding=1, layout="nhwc")
    prob = api.build(hw, "layout-transform", conv=conv)
    n = 4 * 64 * 28 * 28
    assert prob.op.flops() == 0 and prob.op.min_bytes() == 8 * n
    r = engine.simulate(hw, prob.programs, mode="full")
    assert r.bytes_by_level["dram"] == pytest.approx(8 * n, rel=0.01)
    assert r.extra["flops_executed"] == 0

"""Kernels for teaching SIMT: a reduction ladder, a branch inside a warp against one at
warp boundaries, and a shared-memory transpose with and without its padding column.

Each ``launch_*(grid=None, block=None, ...)`` returns ``(kernel, grid, block, args)`` for
``kernel[grid, block](*args)``, with sizes that take tens to hundreds of microseconds on
an H100 (``n``, ``rows``/``cols`` make them smaller). ``examples/teaching.py`` puts
them where a user looks for them; on roofsim (no GPU needed):

    roofsim simulate kernel examples/teaching.py:launch_reduce_interleaved --hw gtx480 --arg n=65536
    roofsim simulate kernel examples/teaching.py:launch_reduce_interleaved --hw gtx480 --arg n=65536 --source
    roofsim simulate kernel examples/teaching.py:launch_transpose_tile32 --hw h100-sxm \\
        --arg rows=1024 --arg cols=1024

The reduction ladder (Mark Harris, "Optimizing Parallel Reduction in CUDA"): every step
sums the same 256-element block shares of x into ``partial`` (one float a block):

1. ``reduce_interleaved``: ``if tid % (2*s) == 0`` -- half the lanes of every warp idle
   from the first step: divergence;
2. ``reduce_strided``: ``index = 2*s*tid`` -- whole warps idle instead, but the lanes of
   a warp hit shared memory 2s words apart: bank conflicts;
3. ``reduce_sequential``: ``if tid < s`` with s halving -- no conflict, no divergence
   until s < 32;
4. ``reduce_first_add``: as 3, each thread adding two elements as it loads (half the
   blocks, half the idle threads);
5. ``reduce_warp_shuffle``: as 4, the tree inside a warp done with ``shfl_down_sync``
   (no shared memory, no barrier) and shared memory only between warps.

``run_all()`` (``python examples/teaching.py``) runs all of them with numba and checks
them against numpy (``small=True``, ``--small``, with NUMBA_ENABLE_CUDASIM=1 runs what
numba's CUDA simulator can: it has no warp shuffles). ``TEACHING_CASES`` are they as
cases of the kernels suite, named ``teaching.<kernel>`` (the ``teaching`` measurement
suite).
"""
from __future__ import annotations

__all__ = ["REDUCTIONS", "run_all"] + [
    f"{kind}{name}" for name in ("interleaved", "strided", "sequential", "first_add",
                                 "warp_shuffle") for kind in ("reduce_", "launch_reduce_")] + [
    f"{kind}{name}" for name in ("branch_in_warp", "branch_at_warp", "transpose_tile32",
                                 "transpose_tile33") for kind in ("", "launch_")]

import math

import numpy as np
from numba import cuda, float32

from .base import Case, from_launcher

THREADS = 256       # every reduction's block: the shared buffer's size
WARPS = THREADS // 32


def _launch_reduce(kernel, n, grid, block, per_thread=1):
    block = block or THREADS
    if block != THREADS:
        raise ValueError(f"block={block!r}: the reductions take {THREADS} threads (their "
                         "shared buffer's size)")
    grid = grid or math.ceil(n / (per_thread * THREADS))
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    partial = np.zeros(grid, np.float32)
    return kernel, grid, block, (x, partial)


@cuda.jit
def reduce_interleaved(x, partial):
    """Step 1: interleaved addressing with a modulo test: divergent warps."""
    sdata = cuda.shared.array(THREADS, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tid
    sdata[tid] = x[i] if i < x.size else float32(0.0)
    cuda.syncthreads()
    s = 1
    while s < cuda.blockDim.x:
        if tid % (2 * s) == 0:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s *= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = sdata[0]


@cuda.jit
def reduce_strided(x, partial):
    """Step 2: interleaved addressing with a strided index: bank conflicts."""
    sdata = cuda.shared.array(THREADS, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tid
    sdata[tid] = x[i] if i < x.size else float32(0.0)
    cuda.syncthreads()
    s = 1
    while s < cuda.blockDim.x:
        index = 2 * s * tid
        if index < cuda.blockDim.x:
            sdata[index] += sdata[index + s]
        cuda.syncthreads()
        s *= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = sdata[0]


@cuda.jit
def reduce_sequential(x, partial):
    """Step 3: sequential addressing: contiguous active threads, no conflicts."""
    sdata = cuda.shared.array(THREADS, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + tid
    sdata[tid] = x[i] if i < x.size else float32(0.0)
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = sdata[0]


@cuda.jit
def reduce_first_add(x, partial):
    """Step 4: the first add during the load: each block sums 2 x blockDim elements."""
    sdata = cuda.shared.array(THREADS, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * (2 * cuda.blockDim.x) + tid
    v = float32(0.0)
    if i < x.size:
        v = x[i]
    if i + cuda.blockDim.x < x.size:
        v += x[i + cuda.blockDim.x]
    sdata[tid] = v
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = sdata[0]


@cuda.jit
def reduce_warp_shuffle(x, partial):
    """Step 5: the first add during the load, then each warp sums its lanes with
    shuffles; one shared word a warp, summed by the first warp the same way."""
    warp_sums = cuda.shared.array(WARPS, float32)
    tid = cuda.threadIdx.x
    lane = tid % 32
    warp = tid // 32
    i = cuda.blockIdx.x * (2 * cuda.blockDim.x) + tid
    v = float32(0.0)
    if i < x.size:
        v = x[i]
    if i + cuda.blockDim.x < x.size:
        v += x[i + cuda.blockDim.x]
    offset = 16
    while offset > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        offset //= 2
    if lane == 0:
        warp_sums[warp] = v
    cuda.syncthreads()
    if warp == 0:
        v = warp_sums[lane] if lane < cuda.blockDim.x // 32 else float32(0.0)
        offset = 16
        while offset > 0:
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
            offset //= 2
        if lane == 0:
            partial[cuda.blockIdx.x] = v


def launch_reduce_interleaved(grid=None, block=None, n=1 << 24):
    """Step 1 on ``n`` float32 values, 256-thread blocks, one element a thread."""
    return _launch_reduce(reduce_interleaved, n, grid, block)


def launch_reduce_strided(grid=None, block=None, n=1 << 24):
    """Step 2, as step 1."""
    return _launch_reduce(reduce_strided, n, grid, block)


def launch_reduce_sequential(grid=None, block=None, n=1 << 24):
    """Step 3, as step 1."""
    return _launch_reduce(reduce_sequential, n, grid, block)


def launch_reduce_first_add(grid=None, block=None, n=1 << 24):
    """Step 4: two elements a thread, half the blocks."""
    return _launch_reduce(reduce_first_add, n, grid, block, per_thread=2)


def launch_reduce_warp_shuffle(grid=None, block=None, n=1 << 24):
    """Step 5: two elements a thread, half the blocks."""
    return _launch_reduce(reduce_warp_shuffle, n, grid, block, per_thread=2)


# ---------------------------------------------------------------------------------------
# A branch inside a warp against one at warp boundaries
# ---------------------------------------------------------------------------------------

STEPS = 64          # iterations of each path's loop


@cuda.jit(device=True)
def _path_a(v):
    for _ in range(STEPS):
        v = v * float32(0.999) + float32(0.5)
    return v


@cuda.jit(device=True)
def _path_b(v):
    for _ in range(STEPS):
        v = math.sqrt(abs(v) + float32(1.0))
    return v


@cuda.jit
def branch_in_warp(x, out):
    """Even threads take path A, odd ones path B: every warp runs both, one after the
    other, with half its lanes idle in each (SIMT efficiency about 1/2)."""
    i = cuda.grid(1)
    if i < x.size:
        if cuda.threadIdx.x % 2 == 0:
            out[i] = _path_a(x[i])
        else:
            out[i] = _path_b(x[i])


@cuda.jit
def branch_at_warp(x, out):
    """Even warps take path A, odd warps path B: the same work, no warp diverges."""
    i = cuda.grid(1)
    if i < x.size:
        if (cuda.threadIdx.x // 32) % 2 == 0:
            out[i] = _path_a(x[i])
        else:
            out[i] = _path_b(x[i])


def _launch_branch(kernel, grid, block, n):
    block = block or 256
    grid = grid or math.ceil(n / block)
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    return kernel, grid, block, (x, np.zeros_like(x))


def launch_branch_in_warp(grid=None, block=None, n=1 << 22):
    """Branch on the lane's parity: ``n`` float32 values, 256-thread blocks."""
    return _launch_branch(branch_in_warp, grid, block, n)


def launch_branch_at_warp(grid=None, block=None, n=1 << 22):
    """Branch on the warp's parity, as launch_branch_in_warp."""
    return _launch_branch(branch_at_warp, grid, block, n)


# ---------------------------------------------------------------------------------------
# Transposes through a 32x32 shared tile, without and with the padding column
# ---------------------------------------------------------------------------------------

TILE = 32
TILE_PAD = TILE + 1  # the padded tile's row: a column's words in 32 different banks
ROWS = 8            # threads a block has in y: each moves TILE / ROWS elements each way


@cuda.jit
def transpose_tile32(a, out):
    """out = a.T through a 32x32 shared tile: reading a tile column, the 32 lanes of a
    warp hit one bank (32-way conflicts)."""
    tile = cuda.shared.array((TILE, TILE), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    rows, cols = a.shape
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, ROWS):
        if x < cols and y + j < rows:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, ROWS):
        if x < rows and y + j < cols:
            out[y + j, x] = tile[tx, ty + j]


@cuda.jit
def transpose_tile33(a, out):
    """As transpose_tile32 with a 32x33 tile: a column's words lie in 32 different banks."""
    tile = cuda.shared.array((TILE, TILE_PAD), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    rows, cols = a.shape
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, ROWS):
        if x < cols and y + j < rows:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, ROWS):
        if x < rows and y + j < cols:
            out[y + j, x] = tile[tx, ty + j]


def _launch_transpose(kernel, grid, block, rows, cols):
    block = block or (TILE, ROWS)
    if tuple(block) != (TILE, ROWS):
        raise ValueError(f"block={block!r}: the transposes take ({TILE}, {ROWS}) threads")
    grid = grid or (math.ceil(cols / TILE), math.ceil(rows / TILE))
    a = np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32)
    return kernel, grid, block, (a, np.zeros((cols, rows), np.float32))


def launch_transpose_tile32(grid=None, block=None, rows=4096, cols=4096):
    """Transpose a rows x cols float32 matrix through the unpadded tile, 32x8 blocks."""
    return _launch_transpose(transpose_tile32, grid, block, rows, cols)


def launch_transpose_tile33(grid=None, block=None, rows=4096, cols=4096):
    """As launch_transpose_tile32, through the padded tile."""
    return _launch_transpose(transpose_tile33, grid, block, rows, cols)


# ---------------------------------------------------------------------------------------
# Running them with numba
# ---------------------------------------------------------------------------------------

REDUCTIONS = ("interleaved", "strided", "sequential", "first_add", "warp_shuffle")


def run_all(small=False):
    """Launch them all with numba (a GPU, or numba's CUDA simulator with ``small``, which
    has no warp shuffles) and check them against numpy."""
    sim = cuda.is_available() is False or small
    n = 5000 if small else 1 << 22
    for name in REDUCTIONS:
        if name == "warp_shuffle" and small:
            continue        # numba's CUDA simulator has no warp shuffles
        kernel, grid, block, (x, partial) = globals()[f"launch_reduce_{name}"](n=n)
        kernel[grid, block](x, partial)
        want = x.astype(np.float64).sum()
        print(f"reduce_{name}: {partial.sum(dtype=np.float64):.6g} (numpy {want:.6g})")
        assert np.isclose(partial.sum(dtype=np.float64), want, rtol=1e-5)
    for name in ("in_warp", "at_warp"):
        kernel, grid, block, (x, out) = globals()[f"launch_branch_{name}"](n=2048 if small else 1 << 20)
        kernel[grid, block](x, out)
        t = np.arange(x.size) % block
        even = (t % 2 == 0) if name == "in_warp" else ((t // 32) % 2 == 0)
        want = np.where(even, _numpy_a(x), _numpy_b(x))
        print(f"branch_{name}: largest error {np.abs(out - want).max():.2g}")
        assert np.allclose(out, want, rtol=1e-4, atol=1e-4)
    for name in ("tile32", "tile33"):
        kernel, grid, block, (a, out) = globals()[f"launch_transpose_{name}"](
            **({"rows": 70, "cols": 45} if small else {}))
        kernel[grid, block](a, out)
        print(f"transpose_{name}: {'ok' if np.array_equal(out, a.T) else 'WRONG'}")
        assert np.array_equal(out, a.T)
    return sim


def _numpy_a(x):
    v = x.astype(np.float32)
    for _ in range(STEPS):
        v = v * np.float32(0.999) + np.float32(0.5)
    return v


def _numpy_b(x):
    v = x.astype(np.float32)
    for _ in range(STEPS):
        v = np.sqrt(np.abs(v) + np.float32(1.0))
    return v


# ---------------------------------------------------------------------------------------
# Their cases in the kernels suite
# ---------------------------------------------------------------------------------------

def _expected_partials(per_thread):
    def expected(args):
        """partial[b]: the sum of block b's per_thread x 256 elements (float64)."""
        x, partial = args
        width = per_thread * 256
        return {1: _padded(x, partial.size * width).reshape(partial.size, width).sum(axis=1)}
    return expected


def _padded(x, size):
    buf = np.zeros(size)
    buf[:x.size] = x
    return buf


def _expected_branch(at_warp):
    def expected(args):
        """out: path A where the thread (at_warp: its warp) is even, else path B (float64
        steps, as the kernel's float32 within the tolerance)."""
        x = args[0]
        t = np.arange(x.size) % 256
        even = ((t // 32) % 2 == 0) if at_warp else (t % 2 == 0)
        return {1: np.where(even, _numpy_a(x), _numpy_b(x))}
    return expected


def _cases() -> list:
    """The launchers as cases named ``teaching.<kernel>``: the reduction ladder at n =
    2^24 and 2^26, the branches at 2^22 and 2^24, the transposes at 4096x4096 and
    8192x4096."""
    reductions = (("n=2^24", {"n": 1 << 24}), ("n=2^26", {"n": 1 << 26}))
    out = []
    for name in REDUCTIONS:
        launcher = globals()[f"launch_reduce_{name}"]
        two = name in ("first_add", "warp_shuffle")
        out.append(Case(f"teaching.reduce_{name}", f"examples/teaching.py: {launcher.__doc__}",
                        globals()[f"reduce_{name}"], from_launcher(launcher, ("n",)),
                        _expected_partials(2 if two else 1), exact=False, rtol=1e-5, atol=1e-3,
                        shapes=reductions, cudasim=name != "warp_shuffle"))
    for name in ("in_warp", "at_warp"):
        launcher = globals()[f"launch_branch_{name}"]
        out.append(Case(f"teaching.branch_{name}", f"examples/teaching.py: {launcher.__doc__}",
                        globals()[f"branch_{name}"], from_launcher(launcher, ("n",)),
                        _expected_branch(name == "at_warp"), exact=False, rtol=1e-4,
                        atol=1e-4, shapes=(("n=2^22", {"n": 1 << 22}), ("n=2^24", {"n": 1 << 24}))))
    for name in ("tile32", "tile33"):
        launcher = globals()[f"launch_transpose_{name}"]
        out.append(Case(f"teaching.transpose_{name}", f"examples/teaching.py: {launcher.__doc__}",
                        globals()[f"transpose_{name}"], from_launcher(launcher, ("rows", "cols")),
                        _expected_transpose,
                        shapes=(("4096x4096", {"rows": 4096, "cols": 4096}),
                                ("8192x4096", {"rows": 8192, "cols": 4096}))))
    return out


def _expected_transpose(args):
    return {1: args[0].T.copy()}


TEACHING_CASES = _cases()

"""The kernels of ``examples/kernels.py``: three numba.cuda kernels as a user writes them
(a shared-memory tree reduction, a padded-tile transpose, a row softmax), each with a
launcher for roofsim, and their cases in the kernels suite (``EXAMPLE_CASES``, named
``examples.block_sum``, ``examples.transpose``, ``examples.softmax``).

Each ``launch_*(grid=None, block=None, ...)`` returns ``(kernel, grid, block, args)``:
what ``kernel[grid, block](*args)`` needs, with realistic default sizes; a ``grid`` or
``block`` given replaces the default. ``run_all()`` launches all three with numba and
checks them against numpy.
"""
from __future__ import annotations

__all__ = ["block_sum", "transpose", "softmax", "launch_block_sum", "launch_transpose",
           "launch_softmax", "run_all"]

import math

import numpy as np
from numba import cuda, float32

from .base import Case, cdiv, from_launcher

# ---------------------------------------------------------------------------------------
# block_sum: a shared-memory tree reduction
# ---------------------------------------------------------------------------------------

MAX_BLOCK = 256   # the shared buffer's size: block_sum and softmax take up to 256 threads


@cuda.jit
def block_sum(x, partial):
    """partial[b] = the sum of block b's share of x. Each thread first adds its elements
    of a grid-stride loop into a register; the block then halves its active threads each
    step (sequential addressing: no bank conflicts, no divergence within a warp until the
    last 5 steps). The host (or a second launch) adds the partial sums."""
    sdata = cuda.shared.array(MAX_BLOCK, float32)
    tid = cuda.threadIdx.x
    acc = float32(0.0)
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        acc += x[i]
    sdata[tid] = acc
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s:
            sdata[tid] += sdata[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        partial[cuda.blockIdx.x] = sdata[0]


def _check_tree_block(block):
    threads = block[0] if isinstance(block, tuple) else block
    if threads > MAX_BLOCK or threads & (threads - 1):
        raise ValueError(f"block={block!r}: a power of two up to {MAX_BLOCK} threads "
                         "(the tree reduction halves it)")


def launch_block_sum(grid=None, block=None, n=1_000_000):
    """Sum ``n`` float32 values: by default 256-thread blocks, 4 elements a thread."""
    block = block or 256
    _check_tree_block(block)
    threads = block[0] if isinstance(block, tuple) else block
    grid = grid or math.ceil(n / (4 * threads))
    blocks = grid[0] if isinstance(grid, tuple) else grid
    x = np.random.default_rng(0).random(n, dtype=np.float32)
    partial = np.zeros(blocks, np.float32)
    return block_sum, grid, block, (x, partial)


# ---------------------------------------------------------------------------------------
# transpose: a padded shared-memory tile
# ---------------------------------------------------------------------------------------

TILE = 32
TILE_PAD = TILE + 1   # a spare column: reading a tile column touches 32 different banks


@cuda.jit
def transpose(a, out):
    """out = a.T through a 32x33 shared tile: blocks of 32 x blockDim.y threads read a
    32x32 tile of ``a`` in coalesced rows and write it transposed, in coalesced rows of
    ``out``; each thread moves 32 / blockDim.y elements each way."""
    tile = cuda.shared.array((TILE, TILE_PAD), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    rows, cols = a.shape
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, cuda.blockDim.y):
        if x < cols and y + j < rows:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx          # now a column of out (a row of a)
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, cuda.blockDim.y):
        if x < rows and y + j < cols:
            out[y + j, x] = tile[tx, ty + j]


def launch_transpose(grid=None, block=None, rows=1000, cols=700):
    """Transpose a rows x cols float32 matrix with 32x8 blocks; the grid covers it."""
    block = block or (TILE, 8)
    if block[0] != TILE or TILE % block[1]:
        raise ValueError(f"block={block!r}: ({TILE}, h) with h dividing {TILE}")
    grid = grid or (math.ceil(cols / TILE), math.ceil(rows / TILE))
    a = np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32)
    out = np.zeros((cols, rows), np.float32)
    return transpose, grid, block, (a, out)


# ---------------------------------------------------------------------------------------
# softmax: one block a row
# ---------------------------------------------------------------------------------------

@cuda.jit
def softmax(x, out):
    """Softmax of each row of x. A block takes rows blockIdx.x, blockIdx.x + gridDim.x,
    ...; for each, its threads stride the row for a maximum and a sum of exp(x - max),
    each combined with a shared-memory tree, then write exp(x - max) / sum."""
    red = cuda.shared.array(MAX_BLOCK, float32)
    tid = cuda.threadIdx.x
    nrows, ncols = x.shape
    for row in range(cuda.blockIdx.x, nrows, cuda.gridDim.x):
        m = float32(-math.inf)
        for c in range(tid, ncols, cuda.blockDim.x):
            m = max(m, x[row, c])
        red[tid] = m
        cuda.syncthreads()
        s = cuda.blockDim.x // 2
        while s > 0:
            if tid < s:
                red[tid] = max(red[tid], red[tid + s])
            cuda.syncthreads()
            s //= 2
        row_max = red[0]
        cuda.syncthreads()

        acc = float32(0.0)
        for c in range(tid, ncols, cuda.blockDim.x):
            acc += math.exp(x[row, c] - row_max)
        red[tid] = acc
        cuda.syncthreads()
        s = cuda.blockDim.x // 2
        while s > 0:
            if tid < s:
                red[tid] += red[tid + s]
            cuda.syncthreads()
            s //= 2
        total = red[0]
        cuda.syncthreads()      # red[0] read by all before the next row overwrites it

        for c in range(tid, ncols, cuda.blockDim.x):
            out[row, c] = math.exp(x[row, c] - row_max) / total


def launch_softmax(grid=None, block=None, rows=256, cols=1000):
    """Softmax of a rows x cols float32 matrix (attention-like logits), 128 threads a
    row, one block a row by default."""
    block = block or 128
    _check_tree_block(block)
    grid = grid or rows
    x = 4 * np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32)
    return softmax, grid, block, (x, np.zeros_like(x))


def run_all(small=False):
    """Launch all three with numba (a GPU, or numba's CUDA simulator with ``small``) and
    check them against numpy."""
    sizes = ({"n": 3000}, {"rows": 50, "cols": 70}, {"rows": 5, "cols": 90}) if small else ({}, {}, {})
    kernel, grid, block, (x, partial) = launch_block_sum(**sizes[0])
    kernel[grid, block](x, partial)
    want = x.astype(np.float64).sum()
    print(f"block_sum: {partial.sum(dtype=np.float64):.6g} (numpy {want:.6g})")
    assert np.isclose(partial.sum(dtype=np.float64), want, rtol=1e-5)

    kernel, grid, block, (a, out) = launch_transpose(**sizes[1])
    kernel[grid, block](a, out)
    print(f"transpose: {'ok' if np.array_equal(out, a.T) else 'WRONG'}")
    assert np.array_equal(out, a.T)

    kernel, grid, block, (x, out) = launch_softmax(**sizes[2])
    kernel[grid, block](x, out)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    print(f"softmax: largest error {np.abs(out - want).max():.2g}")
    assert np.allclose(out, want, rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------------------------------
# Their cases in the kernels suite
# ---------------------------------------------------------------------------------------

def _expected_block_sum(threads):
    def expected(args):
        """partial[b]: block b's threads' grid-stride shares of x, summed (float64)."""
        x, partial = args
        blocks = partial.size
        span = blocks * threads
        buf = np.zeros(cdiv(x.size, span) * span)
        buf[:x.size] = x
        return {1: buf.reshape(-1, blocks, threads).sum(axis=(0, 2))}
    return expected


def _expected_transpose(args):
    return {1: args[0].T.copy()}


def _expected_softmax(args):
    x = args[0].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {1: e / e.sum(axis=1, keepdims=True)}


EXAMPLE_CASES = [
    Case("examples.block_sum", "examples/kernels.py: grid-stride sums into a shared tree, "
         "256 threads, 4 elements a thread", block_sum,
         from_launcher(launch_block_sum, ("n",)), _expected_block_sum(256),
         exact=False, rtol=1e-5, atol=1e-4,
         shapes=(("n=2^24", {"n": 1 << 24}), ("n=2^26", {"n": 1 << 26}))),
    Case("examples.transpose", "examples/kernels.py: padded 32x33 tile, 32x8 blocks",
         transpose, from_launcher(launch_transpose, ("rows", "cols")),
         _expected_transpose,
         shapes=(("4096x4096", {"rows": 4096, "cols": 4096}),
                 ("8192x4096", {"rows": 8192, "cols": 4096}))),
    Case("examples.softmax", "examples/kernels.py: one block a row, 128 threads",
         softmax, from_launcher(launch_softmax, ("rows", "cols")), _expected_softmax,
         exact=False, rtol=1e-5, atol=1e-7,
         shapes=(("4096x1024", {"rows": 4096, "cols": 1024}),
                 ("16384x1000", {"rows": 16384, "cols": 1000}))),
]



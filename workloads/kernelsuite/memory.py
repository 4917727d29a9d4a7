"""Memory-bound kernels: transposes, stencils and indexing (2D/1D grid-stride loops,
scalars, 3D launches, dynamic shared memory, 1-byte outputs)."""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32, int32

from .base import Case, cdiv, p2, padded_blocks, sized

# ---------------------------------------------------------------------------------------
# Transposes
# ---------------------------------------------------------------------------------------

@cuda.jit
def transpose_naive(a, out):
    """out = a.T with one thread per element: reads coalesced, writes strided."""
    col, row = cuda.grid(2)
    if row < a.shape[0] and col < a.shape[1]:
        out[col, row] = a[row, col]


T16 = 16


@cuda.jit
def transpose_tile16(a, out):
    """out = a.T through a 16x16 shared tile, one element a thread, 16x16 blocks; the tile
    is not padded, so the column reads of the tile conflict in shared-memory banks."""
    tile = cuda.shared.array((T16, T16), int32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    rows, cols = a.shape
    col = cuda.blockIdx.x * T16 + tx
    row = cuda.blockIdx.y * T16 + ty
    if row < rows and col < cols:
        tile[ty, tx] = a[row, col]
    cuda.syncthreads()
    # the block writes the transposed tile: block (bx, by) of a becomes (by, bx) of out
    out_col = cuda.blockIdx.y * T16 + tx       # a row index
    out_row = cuda.blockIdx.x * T16 + ty       # a column index
    if out_row < cols and out_col < rows:
        out[out_row, out_col] = tile[tx, ty]


TILE = 32
TILE_PAD = TILE + 1      # one extra column: the tile's column reads hit 32 different banks
BLOCK_ROWS = 8


@cuda.jit
def transpose_padded(a, out):
    """out = a.T as in NVIDIA's transposeNoBankConflicts: a 32x33 padded shared tile and
    32x8 blocks, each thread moving 4 elements in and 4 out."""
    tile = cuda.shared.array((TILE, TILE_PAD), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    rows, cols = a.shape
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if x < cols and y + j < rows:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, BLOCK_ROWS):
        if x < rows and y + j < cols:
            out[y + j, x] = tile[tx, ty + j]


def _setup_transpose(dtype, block, shape, small_shape):
    def setup(rng, small=False, **size):
        rows, cols = sized(size, small, dict(zip(("rows", "cols"), small_shape)),
                           dict(zip(("rows", "cols"), shape)))
        if np.issubdtype(dtype, np.integer):
            a = rng.integers(-1000, 1000, (rows, cols)).astype(dtype)
        else:
            a = rng.standard_normal((rows, cols)).astype(dtype)
        out = np.zeros((cols, rows), dtype)
        tile = TILE if block == (TILE, BLOCK_ROWS) else block[0]
        grid = (cdiv(cols, tile), cdiv(rows, tile))
        return grid, block, (a, out), 0
    return setup


def _expected_transpose(args):
    return {1: args[0].T.copy()}


# ---------------------------------------------------------------------------------------
# Stencils
# ---------------------------------------------------------------------------------------

RADIUS = 3
SBLOCK = 128
STENCIL_SHARED = SBLOCK + 2 * RADIUS


@cuda.jit
def stencil_1d(x, out):
    """out[i] = sum of x[i-3 .. i+3] (zero outside x), the block's window and its halo
    staged in shared memory; the first RADIUS threads load both halos. Launched with
    SBLOCK threads a block."""
    temp = cuda.shared.array(STENCIL_SHARED, float32)
    n = x.size
    gi = cuda.grid(1)
    li = cuda.threadIdx.x + RADIUS
    temp[li] = x[gi] if gi < n else float32(0.0)
    if cuda.threadIdx.x < RADIUS:
        left = gi - RADIUS
        temp[li - RADIUS] = x[left] if left >= 0 else float32(0.0)
        right = gi + SBLOCK
        temp[li + SBLOCK] = x[right] if right < n else float32(0.0)
    cuda.syncthreads()
    if gi < n:
        acc = float32(0.0)
        for k in range(-RADIUS, RADIUS + 1):
            acc += temp[li + k]
        out[gi] = acc


def _setup_stencil_1d(rng, small=False, **size):
    n, = sized(size, small, dict(n=300), dict(n=3000))
    x = rng.standard_normal(n).astype(np.float32)
    return (cdiv(n, SBLOCK),), (SBLOCK,), (x, np.zeros(n, np.float32)), 0


def _expected_stencil_1d(args):
    x = args[0]
    n = x.size
    padded = np.zeros(n + 2 * RADIUS, np.float32)
    padded[RADIUS:RADIUS + n] = x
    acc = np.zeros(n, np.float32)
    for k in range(2 * RADIUS + 1):       # the kernel's order: k = -3, ..., 3
        acc += padded[k:k + n]
    return {1: acc}


@cuda.jit
def jacobi_step(u, unew):
    """One Jacobi sweep of Laplace's equation on a 2D grid: each interior point becomes the
    mean of its 4 neighbours; boundary points are copied."""
    j, i = cuda.grid(2)          # j: column (x), i: row (y)
    ny, nx = u.shape
    if i < ny and j < nx:
        if i == 0 or j == 0 or i == ny - 1 or j == nx - 1:
            unew[i, j] = u[i, j]
        else:
            unew[i, j] = float32(0.25) * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


def _setup_jacobi(rng, small=False, **size):
    ny, nx, block = sized(size, small, dict(ny=20, nx=27, block=(8, 8)),
                          dict(ny=50, nx=70, block=(16, 16)))
    block = tuple(block)
    u = rng.standard_normal((ny, nx)).astype(np.float32)
    grid = (cdiv(nx, block[0]), cdiv(ny, block[1]))
    return grid, block, (u, np.zeros_like(u)), 0


def _expected_jacobi(args):
    u = args[0]
    out = u.copy()
    out[1:-1, 1:-1] = np.float32(0.25) * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return {1: out}


# ---------------------------------------------------------------------------------------
# Indexing: 2D grid-stride, 1D grid-stride, scalars, 3D, dynamic shared memory
# ---------------------------------------------------------------------------------------

@cuda.jit
def scale_offset_2d(img, out, offset):
    """out[r, c] = 3 img[r, c] + offset (r - c) over a 2D grid-stride loop: a grid smaller
    than the image, indexed with cuda.grid(2) and cuda.gridsize(2)."""
    x, y = cuda.grid(2)
    sx, sy = cuda.gridsize(2)
    h, w = img.shape
    for r in range(y, h, sy):
        for c in range(x, w, sx):
            out[r, c] = img[r, c] * 3 + offset * (r - c)


def _setup_scale_offset(rng, small=False, **size):
    h, w, grid, block = sized(size, small, dict(h=20, w=30, grid=(1, 2), block=(8, 4)),
                              dict(h=50, w=70, grid=(2, 2), block=(16, 8)))
    grid, block = tuple(grid), tuple(block)
    img = rng.integers(-100, 100, (h, w)).astype(np.int32)
    return grid, block, (img, np.zeros_like(img), 7), 0


def _expected_scale_offset(args):
    img, _, offset = args
    r, c = np.indices(img.shape)
    return {1: img * 3 + offset * (r - c)}


@cuda.jit
def square_clip_gridstride(x, out):
    """out = min(x^2, 4) over a 1D grid-stride loop (the grid covers a fraction of x)."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, x.size, stride):
        v = x[i]
        out[i] = min(v * v, float32(4.0))


def _setup_gridstride(rng, small=False, **size):
    n, grid, block = sized(size, small, dict(n=300, grid=2, block=32),
                           dict(n=5000, grid=3, block=256))
    x = rng.standard_normal(n).astype(np.float32)
    return (grid,), (block,), (x, np.zeros(n, np.float32)), 0


def _expected_gridstride(args):
    x = args[0]
    return {1: np.minimum(x * x, np.float32(4.0))}


@cuda.jit
def saxpy_scalars(a, x, y, n):
    """y[:n] = a x[:n] + y[:n], with a float32 scalar ``a`` and an int scalar ``n`` (smaller
    than the arrays: elements past n stay as they were)."""
    i = cuda.grid(1)
    if i < n:
        y[i] = a * x[i] + y[i]


def _setup_saxpy(rng, small=False, **sizes):
    size, block = sized(sizes, small, dict(size=100, block=32), dict(size=3000, block=256))
    x = rng.standard_normal(size).astype(np.float32)
    y = rng.standard_normal(size).astype(np.float32)
    n = size - 7
    return (cdiv(n, block),), (block,), (np.float32(2.5), x, y, n), 0


def _expected_saxpy(args):
    a, x, y, n = args
    out = y.astype(np.float64)
    out[:n] = float(a) * x[:n].astype(np.float64) + y[:n]
    return {2: out}


@cuda.jit
def math_functions(x, out):
    """float32 math: out[k] = sqrt|x|, sin x, cos x, log(1+|x|), exp(-|x|), |x|^1.5,
    tanh x, x clamped to [-1, 1]."""
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        a = abs(v)
        out[0, i] = math.sqrt(a)
        out[1, i] = math.sin(v)
        out[2, i] = math.cos(v)
        out[3, i] = math.log(a + float32(1.0))
        out[4, i] = math.exp(-a)
        out[5, i] = math.pow(a, float32(1.5))
        out[6, i] = math.tanh(v)
        out[7, i] = min(max(v, float32(-1.0)), float32(1.0))


def _setup_math(rng, small=False, **size):
    n, block = sized(size, small, dict(n=64, block=32), dict(n=2000, block=128))
    x = rng.uniform(-4, 4, n).astype(np.float32)
    return (cdiv(n, block),), (block,), (x, np.zeros((8, n), np.float32)), 0


def _expected_math(args):
    x32 = args[0]
    x = x32.astype(np.float64)
    a = np.abs(x)
    log1 = np.log((np.abs(x32) + np.float32(1.0)).astype(np.float64))
    return {1: np.stack([np.sqrt(a), np.sin(x), np.cos(x), log1, np.exp(-a), a ** 1.5,
                         np.tanh(x), np.clip(x, -1, 1)])}


@cuda.jit
def volume_3d(vol, out):
    """A 3D launch: out[z, y, x] = 2 vol[z, y, x] + vol[z-1, y, x] (0 at z = 0) + a code of
    the position, indexed with blockIdx/blockDim/threadIdx .x, .y and .z."""
    x = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    y = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    z = cuda.blockIdx.z * cuda.blockDim.z + cuda.threadIdx.z
    d, h, w = vol.shape
    if z < d and y < h and x < w:
        below = vol[z - 1, y, x] if z > 0 else 0
        out[z, y, x] = vol[z, y, x] * 2 + below + (z * 10000 + y * 100 + x)


def _setup_volume(rng, small=False, **size):
    d, h, w, block = sized(size, small, dict(d=5, h=6, w=7, block=(4, 4, 2)),
                           dict(d=10, h=9, w=13, block=(8, 4, 4)))
    block = tuple(block)
    vol = rng.integers(-50, 50, (d, h, w)).astype(np.int32)
    grid = (cdiv(w, block[0]), cdiv(h, block[1]), cdiv(d, block[2]))
    return grid, block, (vol, np.zeros_like(vol)), 0


def _expected_volume(args):
    vol = args[0].astype(np.int64)
    below = np.zeros_like(vol)
    below[1:] = vol[:-1]
    z, y, x = np.indices(vol.shape)
    return {1: vol * 2 + below + z * 10000 + y * 100 + x}


@cuda.jit
def reverse_blocks_dynamic(x, out):
    """Reverse each block-sized segment of x through dynamic shared memory (sized at
    launch: blockDim.x float32s). Past the end of x the segment is padded with zeros, so
    the last, partial segment takes zeros into its first places."""
    buf = cuda.shared.array(0, float32)
    tid = cuda.threadIdx.x
    i = cuda.grid(1)
    buf[tid] = x[i] if i < x.size else float32(0.0)
    cuda.syncthreads()
    if i < x.size:
        out[i] = buf[cuda.blockDim.x - 1 - tid]


REV_BLOCK = 128     # reverse_blocks_dynamic's launch (the reference needs it)


def _setup_reverse(rng, small=False, **size):
    (n,), block = sized(size, small, dict(n=200), dict(n=3000)), REV_BLOCK
    x = rng.standard_normal(n).astype(np.float32)
    return (cdiv(n, block),), (block,), (x, np.zeros(n, np.float32)), block * 4


def _reverse_expected(block):
    def expected(args):
        x = args[0]
        return {1: padded_blocks(x, block)[:, ::-1].reshape(-1)[:x.size]}
    return expected


@cuda.jit
def classify_small_types(v, is_mult3, sign, sat):
    """Writes of 1-byte types: a bool array (v divisible by 3), an int8 array (the sign of
    v) and a uint8 array (v saturated to [0, 255])."""
    i = cuda.grid(1)
    if i < v.size:
        x = v[i]
        is_mult3[i] = x % 3 == 0
        if x > 0:
            sign[i] = 1
        elif x < 0:
            sign[i] = -1
        else:
            sign[i] = 0
        sat[i] = min(max(x, 0), 255)


def _setup_small_types(rng, small=False, **size):
    n, block = sized(size, small, dict(n=100, block=32), dict(n=3000, block=128))
    v = rng.integers(-300, 301, n).astype(np.int32)
    return ((cdiv(n, block),), (block,),
            (v, np.zeros(n, np.bool_), np.zeros(n, np.int8), np.zeros(n, np.uint8)), 0)


def _expected_small_types(args):
    v = args[0]
    return {1: v % 3 == 0, 2: np.sign(v).astype(np.int8), 3: np.clip(v, 0, 255).astype(np.uint8)}


# ---------------------------------------------------------------------------------------
# The cases. Shapes: one launch of roughly 20 us - 5 ms on an H100 (3.35 TB/s): a
# streaming kernel moving 4-8 bytes an element needs 2^22-2^24 elements
# ---------------------------------------------------------------------------------------

def _n(*ks, **extra):
    """Shapes over n = 2^k (``extra``: further size keywords, the same for each)."""
    return tuple((f"n={p2(k)}", {"n": 1 << k, **extra}) for k in ks)


_SQUARES = (("4096x4096", {"rows": 4096, "cols": 4096}), ("8192x4096", {"rows": 8192, "cols": 4096}),
            ("1500x5000", {"rows": 1500, "cols": 5000}))

CASES = [
    Case("transpose_naive", "out = a.T, one thread an element, 16x16 blocks (float32)",
         transpose_naive, _setup_transpose(np.float32, (16, 16), (45, 70), (13, 20)),
         _expected_transpose, shapes=_SQUARES),
    Case("transpose_tile16", "out = a.T through an unpadded 16x16 shared tile (int32)",
         transpose_tile16, _setup_transpose(np.int32, (16, 16), (45, 70), (20, 13)),
         _expected_transpose, shapes=_SQUARES),
    Case("transpose_padded", "out = a.T through a padded 32x33 shared tile, 32x8 blocks",
         transpose_padded, _setup_transpose(np.float32, (TILE, BLOCK_ROWS), (100, 75), (40, 35)),
         _expected_transpose, shapes=_SQUARES),
    Case("stencil_1d", "7-point 1D sum stencil with its halo in shared memory",
         stencil_1d, _setup_stencil_1d, _expected_stencil_1d, shapes=_n(23, 25)),
    Case("jacobi_step", "2D 5-point Jacobi sweep, boundary copied", jacobi_step,
         _setup_jacobi, _expected_jacobi,
         shapes=(("4096x4096", {"ny": 4096, "nx": 4096, "block": (16, 16)}),
                 ("8192x8192", {"ny": 8192, "nx": 8192, "block": (16, 16)}),
                 ("4096x4096/32x4", {"ny": 4096, "nx": 4096, "block": (32, 4)}))),
    Case("scale_offset_2d", "2D grid-stride loop with cuda.grid(2), cuda.gridsize(2)",
         scale_offset_2d, _setup_scale_offset, _expected_scale_offset,
         shapes=(("2048x2048/grid8x16", {"h": 2048, "w": 2048, "grid": (8, 16), "block": (32, 8)}),
                 ("4096x4096/grid16x64", {"h": 4096, "w": 4096, "grid": (16, 64),
                                          "block": (32, 8)}))),
    Case("square_clip_gridstride", "1D grid-stride loop, min(x*x, 4)",
         square_clip_gridstride, _setup_gridstride, _expected_gridstride,
         shapes=(("n=2^23/grid132", {"n": 1 << 23, "grid": 132, "block": 256}),
                 ("n=2^25/grid528", {"n": 1 << 25, "grid": 528, "block": 256}))),
    Case("saxpy_scalars", "saxpy with a float32 scalar a and an int scalar n",
         saxpy_scalars, _setup_saxpy, _expected_saxpy, exact=False, rtol=1e-6, atol=1e-6,
         shapes=tuple((f"size={p2(k)}", {"size": 1 << k, "block": 256}) for k in (23, 25))),
    Case("math_functions", "sqrt, sin, cos, log, exp, pow, tanh, abs, min/max (float32)",
         math_functions, _setup_math, _expected_math, exact=False, rtol=1e-5, atol=1e-6,
         shapes=_n(20, 22, block=128)),
    Case("volume_3d", "3D grid and blocks (blockIdx.z, threadIdx.z)", volume_3d,
         _setup_volume, _expected_volume,
         shapes=(("128x256x256", {"d": 128, "h": 256, "w": 256, "block": (8, 4, 4)}),
                 ("128x256x512/32x4x2", {"d": 128, "h": 256, "w": 512, "block": (32, 4, 2)}))),
    Case("reverse_blocks_dynamic", "segment reversal through dynamic shared memory",
         reverse_blocks_dynamic, _setup_reverse, _reverse_expected(REV_BLOCK), shapes=_n(23, 25)),
    Case("classify_small_types", "bool, int8 and uint8 outputs", classify_small_types,
         _setup_small_types, _expected_small_types, shapes=_n(23, 25, block=128)),
]

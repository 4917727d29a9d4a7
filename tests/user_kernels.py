"""numba.cuda kernels written the way users write them, with numpy references: test
material for the kernel emulator (``simulator.kernelcode``).

Each ``Case`` in ``CASES`` names a kernel (a lazily compiled ``@cuda.jit`` dispatcher:
no signature strings, since an eager compile needs a GPU), a ``setup(rng, small=False)``
returning ``(grid, block, args, shared_bytes)`` for ``kernel[grid, block, 0,
shared_bytes](*args)``, and ``expected(args_before)``: ``{arg index: final content of
that output array}``, computed with numpy from a copy of the arguments taken before the
launch. ``small=True`` gives sizes that numba's CUDA simulator runs in seconds; the
default sizes are a few thousand elements over a few blocks, with sizes that are not
multiples of the block so that bounds checks matter.

``compare(case, args_after, expected)`` checks a launch: integer and bool arrays must
match exactly always; float arrays exactly where ``case.exact`` (the kernel's order of
operations is fixed and no multiply-add can be contracted into an fma), else within
``case.rtol``/``case.atol`` (NVVM contracts ``a*b + c`` into one fma by default, libdevice
math functions differ from numpy's in the last bits, and float atomics add in an
unknown order).

``case.cudasim`` is False for the kernels that use warp shuffles or votes: numba's CUDA
simulator (NUMBA_ENABLE_CUDASIM=1) does not implement them, so those references were
checked by reasoning and against a numpy simulation of the lanes
(``tests/check_user_kernels_cudasim.py``): reduce_warp_shuffle, matvec_warp_per_row,
warp_scan_shuffle and warp_votes.

The module imports with and without NUMBA_ENABLE_CUDASIM (the simulator replaces
``numba.cuda``; nothing here touches a device at import).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np
from numba import cuda, float32, int32, int64, uint32, uint64

WARP = 32
FULL_MASK = 0xFFFFFFFF


def _cdiv(a, b):
    return -(-a // b)


@dataclasses.dataclass(frozen=True)
class Case:
    """One kernel launch and its numpy reference (see the module docstring)."""
    name: str
    description: str
    kernel: object                       # a numba @cuda.jit dispatcher
    setup: Callable                      # setup(rng, small=False) -> (grid, block, args, shared_bytes)
    expected: Callable                   # expected(args_before) -> {arg index: array}
    exact: bool = True
    rtol: float = 0.0
    atol: float = 0.0
    cudasim: bool = True                 # False: warp shuffles or votes (not in numba's simulator)


def compare(case: Case, args_after, expected: dict) -> list:
    """Mismatches between a launch's outputs and ``expected``, as messages (empty: pass).
    Integer and bool outputs compare exactly; floats exactly where ``case.exact``, else
    with ``case.rtol``/``case.atol``."""
    problems = []
    for index, want in expected.items():
        got = np.asarray(args_after[index])
        want = np.asarray(want)
        if got.shape != want.shape:
            problems.append(f"args[{index}]: shape {got.shape}, expected {want.shape}")
            continue
        if np.issubdtype(got.dtype, np.floating) and not case.exact:
            ok = np.isclose(got, want, rtol=case.rtol, atol=case.atol)
        elif np.issubdtype(got.dtype, np.floating):
            ok = (got == want.astype(got.dtype)) | (np.isnan(got) & np.isnan(want))
        else:
            ok = got == want.astype(got.dtype)
        if not np.all(ok):
            bad = np.argwhere(~ok)
            first = tuple(int(v) for v in bad[0])
            problems.append(f"args[{index}]: {len(bad)} of {got.size} differ; first at "
                            f"{first}: got {got[first]!r}, expected {want[first]!r}")
    return problems


def launch(case: Case, rng, small=False):
    """Run ``case`` through numba (a GPU, or the CUDA simulator): the arguments before
    the launch, after it and the expected outputs."""
    grid, block, args, shared = case.setup(rng, small=small)
    before = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    case.kernel[grid, block, 0, shared](*args)
    return before, list(args), case.expected(before)


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
    def setup(rng, small=False):
        rows, cols = small_shape if small else shape
        if np.issubdtype(dtype, np.integer):
            a = rng.integers(-1000, 1000, (rows, cols)).astype(dtype)
        else:
            a = rng.standard_normal((rows, cols)).astype(dtype)
        out = np.zeros((cols, rows), dtype)
        tile = TILE if block == (TILE, BLOCK_ROWS) else block[0]
        grid = (_cdiv(cols, tile), _cdiv(rows, tile))
        return grid, block, (a, out), 0
    return setup


def _expected_transpose(args):
    return {1: args[0].T.copy()}


# ---------------------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------------------

RBLOCK = 256     # the shared buffer's size: the largest block these reductions take


@cuda.jit
def reduce_interleaved(x, partial):
    """Per-block sums, interleaved addressing (Harris's reduction #1): at step s, threads
    whose index is a multiple of 2s add the element s away. Divergent and bank-conflicted,
    as first written."""
    sdata = cuda.shared.array(RBLOCK, float32)
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
def reduce_sequential(x, partial):
    """Per-block sums, sequential addressing with the first add during the load (Harris's
    reduction #4): each block sums 2*blockDim.x elements; at each step the lower half of
    the active threads adds the upper half."""
    sdata = cuda.shared.array(RBLOCK, float32)
    tid = cuda.threadIdx.x
    i = cuda.blockIdx.x * (cuda.blockDim.x * 2) + tid
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
def reduce_warp_shuffle(x, out):
    """The sum of x into out[0]: a grid-stride loop into a register, a shfl_down tree in
    each warp, then one atomicAdd a warp."""
    acc = float32(0.0)
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < x.size:
        acc += x[i]
        i += stride
    offset = WARP // 2
    while offset > 0:
        acc += cuda.shfl_down_sync(FULL_MASK, acc, offset)
        offset //= 2
    if cuda.laneid == 0:
        cuda.atomic.add(out, 0, acc)


def _padded_blocks(x, width):
    """x zero-padded to whole rows of ``width`` and reshaped to (rows, width)."""
    rows = _cdiv(x.size, width)
    buf = np.zeros(rows * width, x.dtype)
    buf[:x.size] = x
    return buf.reshape(rows, width)


def _setup_reduce(block, per_block, n, n_small):
    def setup(rng, small=False):
        size = n_small if small else n
        x = rng.standard_normal(size).astype(np.float32)
        blocks = _cdiv(size, per_block)
        return (blocks,), (block,), (x, np.zeros(blocks, np.float32)), 0
    return setup


def _interleaved_expected(block):
    def expected(args):
        buf = _padded_blocks(args[0], block)
        s = 1                      # the kernel's tree, in float32: exact
        while s < block:
            buf[:, ::2 * s] += buf[:, s::2 * s]
            s *= 2
        return {1: buf[:, 0].copy()}
    return expected


def _sequential_expected(block):
    def expected(args):
        pairs = _padded_blocks(args[0], 2 * block)
        v = pairs[:, :block] + pairs[:, block:]
        s = block // 2             # the kernel's tree, in float32: exact
        while s > 0:
            v[:, :s] += v[:, s:2 * s]
            s //= 2
        return {1: v[:, 0].copy()}
    return expected


def _setup_reduce_shuffle(rng, small=False):
    n, grid, block = (300, 2, 64) if small else (5000, 4, 128)
    x = rng.random(n).astype(np.float32)          # positive: no cancellation in the sum
    return (grid,), (block,), (x, np.zeros(1, np.float32)), 0


def _expected_reduce_shuffle(args):
    x, out = args
    return {1: out + np.float32(x.astype(np.float64).sum())}


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


def _setup_stencil_1d(rng, small=False):
    n = 300 if small else 3000
    x = rng.standard_normal(n).astype(np.float32)
    return (_cdiv(n, SBLOCK),), (SBLOCK,), (x, np.zeros(n, np.float32)), 0


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


def _setup_jacobi(rng, small=False):
    ny, nx, block = (20, 27, (8, 8)) if small else (50, 70, (16, 16))
    u = rng.standard_normal((ny, nx)).astype(np.float32)
    grid = (_cdiv(nx, block[0]), _cdiv(ny, block[1]))
    return grid, block, (u, np.zeros_like(u)), 0


def _expected_jacobi(args):
    u = args[0]
    out = u.copy()
    out[1:-1, 1:-1] = np.float32(0.25) * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return {1: out}


# ---------------------------------------------------------------------------------------
# Scans
# ---------------------------------------------------------------------------------------

SCAN_BLOCK = 256
SCAN_SHARED = 2 * SCAN_BLOCK


@cuda.jit
def scan_hillis_steele(x, out, block_sums):
    """Inclusive prefix sums of each block's segment (Hillis-Steele, double-buffered in
    shared memory, as in GPU Gems 3 ch. 39); each block's total into block_sums."""
    buf = cuda.shared.array(SCAN_SHARED, int32)
    tid = cuda.threadIdx.x
    n = cuda.blockDim.x
    i = cuda.grid(1)
    pout = 0
    pin = 1
    buf[tid] = x[i] if i < x.size else 0
    cuda.syncthreads()
    offset = 1
    while offset < n:
        pout = 1 - pout
        pin = 1 - pout
        if tid >= offset:
            buf[pout * n + tid] = buf[pin * n + tid] + buf[pin * n + tid - offset]
        else:
            buf[pout * n + tid] = buf[pin * n + tid]
        cuda.syncthreads()
        offset *= 2
    if i < x.size:
        out[i] = buf[pout * n + tid]
    if tid == n - 1:
        block_sums[cuda.blockIdx.x] = buf[pout * n + tid]


@cuda.jit
def scan_blelloch(x, out):
    """Exclusive prefix sums of segments of 2*blockDim.x elements (Blelloch's work-efficient
    up-sweep and down-sweep in shared memory), two elements a thread."""
    temp = cuda.shared.array(SCAN_SHARED, int32)
    tid = cuda.threadIdx.x
    n = 2 * cuda.blockDim.x
    base = cuda.blockIdx.x * n
    for e in range(2 * tid, 2 * tid + 2):
        temp[e] = x[base + e] if base + e < x.size else 0
    offset = 1
    d = n >> 1
    while d > 0:                               # up-sweep: partial sums in a tree
        cuda.syncthreads()
        if tid < d:
            ai = offset * (2 * tid + 1) - 1
            bi = offset * (2 * tid + 2) - 1
            temp[bi] += temp[ai]
        offset *= 2
        d >>= 1
    if tid == 0:
        temp[n - 1] = 0
    d = 1
    while d < n:                               # down-sweep
        offset >>= 1
        cuda.syncthreads()
        if tid < d:
            ai = offset * (2 * tid + 1) - 1
            bi = offset * (2 * tid + 2) - 1
            t = temp[ai]
            temp[ai] = temp[bi]
            temp[bi] += t
        d *= 2
    cuda.syncthreads()
    for e in range(2 * tid, 2 * tid + 2):
        if base + e < x.size:
            out[base + e] = temp[e]


HS_BLOCK = 128      # scan_hillis_steele's launch (the reference needs it)


def _setup_hillis_steele(rng, small=False):
    n, block = (300 if small else 3000), HS_BLOCK
    x = rng.integers(0, 100, n).astype(np.int32)
    blocks = _cdiv(n, block)
    return ((blocks,), (block,),
            (x, np.zeros(n, np.int32), np.zeros(blocks, np.int32)), 0)


def _expected_hillis_steele(args):
    x = args[0]
    seg = np.cumsum(_padded_blocks(x, HS_BLOCK), axis=1, dtype=np.int32)
    return {1: seg.reshape(-1)[:x.size], 2: seg[:, -1].copy()}


BL_BLOCK = 64       # scan_blelloch's launch: segments of 128 elements


def _setup_blelloch(rng, small=False):
    n, block = (200 if small else 3000), BL_BLOCK
    x = rng.integers(0, 100, n).astype(np.int32)
    return (_cdiv(n, 2 * block),), (block,), (x, np.zeros(n, np.int32)), 0


def _blelloch_expected(block):
    def expected(args):
        x = args[0]
        seg = _padded_blocks(x, 2 * block)
        excl = np.cumsum(seg, axis=1, dtype=np.int32) - seg
        return {1: excl.reshape(-1)[:x.size]}
    return expected


# ---------------------------------------------------------------------------------------
# Histogram
# ---------------------------------------------------------------------------------------

NBINS = 256


@cuda.jit
def histogram_shared(data, hist):
    """A 256-bin histogram of bytes: each block counts its grid-stride share into a
    shared-memory histogram with shared atomics, then adds its non-empty bins to the
    global histogram with global atomics."""
    local = cuda.shared.array(NBINS, uint32)
    tid = cuda.threadIdx.x
    for b in range(tid, NBINS, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < data.size:
        cuda.atomic.add(local, data[i], 1)
        i += stride
    cuda.syncthreads()
    for b in range(tid, NBINS, cuda.blockDim.x):
        count = local[b]
        if count > 0:
            cuda.atomic.add(hist, b, count)


def _setup_histogram(rng, small=False):
    n, grid, block = (500, 2, 64) if small else (6000, 4, 128)
    # a bell around 128: many threads hit the same bins at once
    data = np.clip(rng.normal(128, 30, n), 0, 255).astype(np.uint8)
    return (grid,), (block,), (data, np.zeros(NBINS, np.uint32)), 0


def _expected_histogram(args):
    data, hist = args
    return {1: hist + np.bincount(data, minlength=NBINS).astype(np.uint32)}


# ---------------------------------------------------------------------------------------
# Row softmax, matrix-vector
# ---------------------------------------------------------------------------------------

SM_BLOCK = 128


@cuda.jit
def softmax_rows(x, out):
    """Softmax of each row, one block a row: block-wide max, then block-wide sum of
    exp(x - max), both as shared-memory tree reductions, then the normalised row."""
    red = cuda.shared.array(SM_BLOCK, float32)
    row = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    ncols = x.shape[1]

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
    cuda.syncthreads()          # everyone has read red[0] before red is reused

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

    for c in range(tid, ncols, cuda.blockDim.x):
        out[row, c] = math.exp(x[row, c] - row_max) / total


def _setup_softmax(rng, small=False):
    rows, cols, block = (3, 70, 32) if small else (24, 300, SM_BLOCK)
    x = (3 * rng.standard_normal((rows, cols))).astype(np.float32)
    return (rows,), (block,), (x, np.zeros_like(x)), 0


def _expected_softmax(args):
    x = args[0].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return {1: e / e.sum(axis=1, keepdims=True)}


@cuda.jit
def matvec_thread_per_row(A, x, y):
    """y = A @ x with one thread a row (each thread walks its row: uncoalesced reads)."""
    row = cuda.grid(1)
    if row < A.shape[0]:
        acc = float32(0.0)
        for j in range(A.shape[1]):
            acc += A[row, j] * x[j]
        y[row] = acc


@cuda.jit
def matvec_warp_per_row(A, x, y):
    """y = A @ x with one warp a row: lanes stride the row's columns (coalesced), then a
    shfl_down reduction; lane 0 writes. Whole warps share a row, so a warp leaves the
    bounds check together and every shuffle has all 32 lanes."""
    warp = cuda.grid(1) // WARP
    lane = cuda.threadIdx.x % WARP
    if warp < A.shape[0]:
        acc = float32(0.0)
        for j in range(lane, A.shape[1], WARP):
            acc += A[warp, j] * x[j]
        for k in range(4, -1, -1):                 # offsets 16, 8, 4, 2, 1
            acc += cuda.shfl_down_sync(FULL_MASK, acc, 1 << k)
        if lane == 0:
            y[warp] = acc


def _setup_matvec_row(rng, small=False):
    rows, cols, block = (40, 16, 32) if small else (500, 64, 128)
    A = rng.standard_normal((rows, cols)).astype(np.float32)
    x = rng.standard_normal(cols).astype(np.float32)
    return (_cdiv(rows, block),), (block,), (A, x, np.zeros(rows, np.float32)), 0


def _setup_matvec_warp(rng, small=False):
    rows, cols, block = (10, 50, 64) if small else (150, 200, 128)
    A = rng.standard_normal((rows, cols)).astype(np.float32)
    x = rng.standard_normal(cols).astype(np.float32)
    warps_per_block = block // WARP
    return ((_cdiv(rows, warps_per_block),), (block,),
            (A, x, np.zeros(rows, np.float32)), 0)


def _expected_matvec(args):
    A, x = args[0], args[1]
    return {2: A.astype(np.float64) @ x.astype(np.float64)}


# ---------------------------------------------------------------------------------------
# Divergence
# ---------------------------------------------------------------------------------------

@cuda.jit
def warp_divergence(x, out):
    """Even and odd lanes of a warp do different work: even lanes take nested ifs on the
    value, odd lanes a loop whose trip count is their lane number."""
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        lane = cuda.threadIdx.x % WARP
        if lane % 2 == 0:
            if v > 0:
                if v > 50:
                    r = v * 3
                else:
                    r = v + 100
            else:
                r = -v
        else:
            r = 0
            for k in range(lane):
                r += v ^ k
        out[i] = r


def _setup_divergence(rng, small=False):
    n, block = (100, 64) if small else (3000, 128)
    x = rng.integers(-100, 101, n).astype(np.int32)
    return (_cdiv(n, block),), (block,), (x, np.zeros(n, np.int32)), 0


def _expected_divergence(args):
    v = args[0].astype(np.int64)
    lane = np.arange(v.size) % WARP         # blocks are whole warps: lane = i % 32
    even = np.where(v > 0, np.where(v > 50, v * 3, v + 100), -v)
    odd = np.zeros_like(v)
    for k in range(WARP):
        odd += np.where(k < lane, v ^ k, 0)
    return {1: np.where(lane % 2 == 0, even, odd).astype(np.int32)}


@cuda.jit
def collatz_steps(start, steps):
    """The number of Collatz steps from start[i] to 1: a data-dependent while loop, so the
    lanes of a warp leave it at different times."""
    i = cuda.grid(1)
    if i < start.size:
        v = int64(start[i])
        count = 0
        while v != 1:
            if v % 2 == 0:
                v //= 2
            else:
                v = 3 * v + 1
            count += 1
        steps[i] = count


def _setup_collatz(rng, small=False):
    n, block = (70, 32) if small else (3000, 128)
    start = rng.integers(1, 10000, n).astype(np.int32)
    return (_cdiv(n, block),), (block,), (start, np.zeros(n, np.int32)), 0


def _expected_collatz(args):
    v = args[0].astype(np.int64)
    count = np.zeros(v.size, np.int32)
    live = v != 1
    while live.any():
        v = np.where(live, np.where(v % 2 == 0, v // 2, 3 * v + 1), v)
        count += live
        live = v != 1
    return {1: count}


# ---------------------------------------------------------------------------------------
# Register-blocked GEMM
# ---------------------------------------------------------------------------------------

GEMM_BM = 32      # rows of C a block computes
GEMM_BN = 32      # columns of C a block computes
GEMM_BK = 8       # the K-slice staged in shared memory at a time
GEMM_TM = 4       # rows of C a thread computes
GEMM_TN = 4       # columns of C a thread computes


@cuda.jit
def gemm_register_blocked(A, B, C):
    """C = A @ B, float32, row-major. 8x8 blocks compute 32x32 tiles of C; each thread
    keeps a 4x4 block of C in a local-array accumulator and, for each k of a 8-wide
    shared-memory slice, loads 4 values of A and 4 of B into registers (local arrays) for
    16 multiply-adds. Tiles are zero-padded at the edges of A and B."""
    sA = cuda.shared.array((GEMM_BK, GEMM_BM), float32)    # A's slice, stored transposed
    sB = cuda.shared.array((GEMM_BK, GEMM_BN), float32)
    acc = cuda.local.array((GEMM_TM, GEMM_TN), float32)
    a_reg = cuda.local.array(GEMM_TM, float32)
    b_reg = cuda.local.array(GEMM_TN, float32)

    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tid = ty * cuda.blockDim.x + tx
    nthreads = cuda.blockDim.x * cuda.blockDim.y
    row0 = cuda.blockIdx.y * GEMM_BM
    col0 = cuda.blockIdx.x * GEMM_BN
    M, K = A.shape
    N = B.shape[1]

    for m in range(GEMM_TM):
        for n in range(GEMM_TN):
            acc[m, n] = 0.0

    for k0 in range(0, K, GEMM_BK):
        for e in range(tid, GEMM_BM * GEMM_BK, nthreads):
            r = e // GEMM_BK
            c = e % GEMM_BK
            if row0 + r < M and k0 + c < K:
                sA[c, r] = A[row0 + r, k0 + c]
            else:
                sA[c, r] = 0.0
        for e in range(tid, GEMM_BK * GEMM_BN, nthreads):
            r = e // GEMM_BN
            c = e % GEMM_BN
            if k0 + r < K and col0 + c < N:
                sB[r, c] = B[k0 + r, col0 + c]
            else:
                sB[r, c] = 0.0
        cuda.syncthreads()
        for kk in range(GEMM_BK):
            for m in range(GEMM_TM):
                a_reg[m] = sA[kk, ty * GEMM_TM + m]
            for n in range(GEMM_TN):
                b_reg[n] = sB[kk, tx * GEMM_TN + n]
            for m in range(GEMM_TM):
                for n in range(GEMM_TN):
                    acc[m, n] += a_reg[m] * b_reg[n]
        cuda.syncthreads()

    for m in range(GEMM_TM):
        for n in range(GEMM_TN):
            r = row0 + ty * GEMM_TM + m
            c = col0 + tx * GEMM_TN + n
            if r < M and c < N:
                C[r, c] = acc[m, n]


def _setup_gemm(rng, small=False):
    M, N, K = (40, 36, 13) if small else (70, 50, 37)
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    block = (GEMM_BN // GEMM_TN, GEMM_BM // GEMM_TM)
    grid = (_cdiv(N, GEMM_BN), _cdiv(M, GEMM_BM))
    return grid, block, (A, B, np.zeros((M, N), np.float32)), 0


def _expected_gemm(args):
    return {2: args[0].astype(np.float64) @ args[1].astype(np.float64)}


MEDIAN_W = 5


@cuda.jit
def median5_local(x, out):
    """out[i] = the median of x[i-2 .. i+2] (x's first and last values repeated past its
    ends): each thread insertion-sorts its window in a local array. The sort indexes the
    array with data-dependent indices, so it stays in local memory (.local in PTX)."""
    i = cuda.grid(1)
    n = x.size
    if i < n:
        window = cuda.local.array(MEDIAN_W, float32)
        for k in range(MEDIAN_W):
            j = min(max(i + k - MEDIAN_W // 2, 0), n - 1)
            window[k] = x[j]
        for k in range(1, MEDIAN_W):
            v = window[k]
            j = k - 1
            while j >= 0 and window[j] > v:
                window[j + 1] = window[j]
                j -= 1
            window[j + 1] = v
        out[i] = window[MEDIAN_W // 2]


def _setup_median(rng, small=False):
    n, block = (100, 32) if small else (3000, 128)
    x = rng.standard_normal(n).astype(np.float32)
    return (_cdiv(n, block),), (block,), (x, np.zeros(n, np.float32)), 0


def _expected_median(args):
    x = args[0]
    padded = np.pad(x, MEDIAN_W // 2, mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(padded, MEDIAN_W)
    return {1: np.sort(windows, axis=1)[:, MEDIAN_W // 2]}


# ---------------------------------------------------------------------------------------
# Device functions
# ---------------------------------------------------------------------------------------

@cuda.jit(device=True)
def clamp(v, lo, hi):
    """v limited to [lo, hi]."""
    return min(max(v, lo), hi)


@cuda.jit(device=True)
def lerp(a, b, t):
    """a + (b - a) t with t clamped to [0, 1] (a device function calling another)."""
    t = clamp(t, float32(0.0), float32(1.0))
    return a + (b - a) * t


@cuda.jit(device=True)
def row_col(i, width):
    """(row, column) of flat index i in a row-major array ``width`` wide: a tuple."""
    return i // width, i % width


@cuda.jit
def device_calls(a, b, t, width, out_val, out_rc):
    """out_val = lerp(a, b, clamp(t)); out_rc[i] = (i // width, i % width): kernels
    calling device functions, one of which calls another and one returns a tuple."""
    i = cuda.grid(1)
    if i < a.size:
        out_val[i] = lerp(a[i], b[i], t[i])
        r, c = row_col(i, width)
        out_rc[i, 0] = r
        out_rc[i, 1] = c


def _setup_device_calls(rng, small=False):
    n, block, width = (100, 32, 7) if small else (3000, 128, 37)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    t = rng.uniform(-0.5, 1.5, n).astype(np.float32)
    return ((_cdiv(n, block),), (block,),
            (a, b, t, width, np.zeros(n, np.float32), np.zeros((n, 2), np.int32)), 0)


def _expected_device_calls(args):
    a, b, t = (v.astype(np.float64) for v in args[:3])
    width = args[3]
    tc = np.clip(t, 0.0, 1.0)
    i = np.arange(a.size)
    return {4: a + (b - a) * tc, 5: np.stack([i // width, i % width], axis=1)}


# ---------------------------------------------------------------------------------------
# fp64, int64 and 32-bit integer arithmetic
# ---------------------------------------------------------------------------------------

@cuda.jit
def axpy_poly_f64(a, x, y, coeffs, p):
    """float64: y = a x + y, and p = the polynomial with coefficients ``coeffs`` (highest
    degree first) at x, by Horner's rule."""
    i = cuda.grid(1)
    if i < x.size:
        xi = x[i]
        y[i] = a * xi + y[i]
        acc = 0.0
        for k in range(coeffs.size):
            acc = acc * xi + coeffs[k]
        p[i] = acc


def _setup_axpy_poly(rng, small=False):
    n, block = (100, 32) if small else (3000, 256)
    x = rng.uniform(-1.5, 1.5, n)
    y = rng.standard_normal(n)
    coeffs = np.array([0.5, -1.25, 2.0, 0.75, -3.0, 1.0])
    return ((_cdiv(n, block),), (block,),
            (1.75, x, y, coeffs, np.zeros(n)), 0)


def _expected_axpy_poly(args):
    a, x, y, coeffs, _ = args
    return {2: a * x + y, 4: np.polyval(coeffs, x)}


SPLITMIX_GAMMA = np.uint64(0x9E3779B97F4A7C15)
SPLITMIX_M1 = np.uint64(0xBF58476D1CE4E5B9)
SPLITMIX_M2 = np.uint64(0x94D049BB133111EB)
S27, S30, S31 = np.uint64(27), np.uint64(30), np.uint64(31)
LCG_MUL = 6364136223846793005        # Knuth's MMIX LCG constants (fit in int64)
LCG_ADD = 1442695040888963407


@cuda.jit
def hash_mix_i64(keys, h, bucket, quot):
    """64-bit integer arithmetic: splitmix64 of each key (uint64 multiplies, shifts and
    xors, wrapping), and a signed int64 LCG step (wrapping) reduced with Python's floor
    ``%`` and ``//`` (which differ from C's for negative values)."""
    i = cuda.grid(1)
    if i < keys.size:
        z = uint64(keys[i]) + SPLITMIX_GAMMA
        z = (z ^ (z >> S30)) * SPLITMIX_M1
        z = (z ^ (z >> S27)) * SPLITMIX_M2
        h[i] = z ^ (z >> S31)
        s = keys[i] * LCG_MUL + LCG_ADD
        bucket[i] = s % 1000003
        quot[i] = s // 97


def _setup_hash(rng, small=False):
    n, block = (100, 32) if small else (3000, 128)
    keys = rng.integers(-2**62, 2**62, n, dtype=np.int64)
    keys[:4] = (0, -1, 2**63 - 1, -2**63)
    return ((_cdiv(n, block),), (block,),
            (keys, np.zeros(n, np.uint64), np.zeros(n, np.int64), np.zeros(n, np.int64)), 0)


def _expected_hash(args):
    keys = args[0]
    with np.errstate(over="ignore"):
        z = keys.astype(np.uint64) + SPLITMIX_GAMMA
        z = (z ^ (z >> S30)) * SPLITMIX_M1
        z = (z ^ (z >> S27)) * SPLITMIX_M2
        z = z ^ (z >> S31)
        s = keys * np.int64(LCG_MUL) + np.int64(LCG_ADD)
    return {1: z, 2: s % 1000003, 3: s // 97}


KNUTH = uint32(2654435761)


@cuda.jit
def bit_ops_i32(u, s, lo, hi, out_u, out_s):
    """32-bit integer operations. Unsigned: popc, clz, brev, ffs, shifts and xor, a
    wrapping multiply. Signed: arithmetic shift, clamp with min/max, abs, floor % and //,
    a logical shift of the bits reinterpreted as unsigned."""
    i = cuda.grid(1)
    if i < u.size:
        v = u[i]
        out_u[0, i] = cuda.popc(v)
        out_u[1, i] = cuda.clz(v)
        out_u[2, i] = cuda.brev(v)
        out_u[3, i] = cuda.ffs(v)
        out_u[4, i] = (v >> 7) ^ (v << 3)
        out_u[5, i] = v * KNUTH
        w = s[i]
        out_s[0, i] = w >> 3
        out_s[1, i] = min(max(w, lo), hi)
        out_s[2, i] = abs(w)
        out_s[3, i] = w % 7
        out_s[4, i] = w // 5
        out_s[5, i] = int32(uint32(w) >> 28)


def _setup_bits(rng, small=False):
    n, block = (64, 32) if small else (2000, 128)
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    u[:4] = (0, 1, 0x80000000, 0xFFFFFFFF)
    s = rng.integers(-2**30, 2**30, n).astype(np.int32)
    s[:3] = (0, -1, -7)
    return ((_cdiv(n, block),), (block,),
            (u, s, -1000, 5000, np.zeros((6, n), np.uint32), np.zeros((6, n), np.int32)), 0)


def _expected_bits(args):
    u, s, lo, hi = args[:4]
    u64 = u.astype(np.uint64)
    bits = (u64[:, None] >> np.arange(32, dtype=np.uint64)) & np.uint64(1)    # bit k
    popc = bits.sum(axis=1)
    clz = np.array([32 - int(v).bit_length() for v in u])
    brev = (bits * (np.uint64(1) << np.arange(31, -1, -1, dtype=np.uint64))).sum(axis=1)
    ffs = np.array([(int(v) & -int(v)).bit_length() for v in u])
    mask = np.uint64(0xFFFFFFFF)
    shx = ((u64 >> np.uint64(7)) ^ (u64 << np.uint64(3))) & mask
    mul = (u64 * np.uint64(2654435761)) & mask
    out_u = np.stack([popc, clz, brev, ffs, shx, mul]).astype(np.uint32)
    s64 = s.astype(np.int64)
    out_s = np.stack([s64 >> 3, np.clip(s64, lo, hi), np.abs(s64), s64 % 7, s64 // 5,
                      s.astype(np.uint32) >> 28]).astype(np.int32)
    return {4: out_u, 5: out_s}


# ---------------------------------------------------------------------------------------
# Warp votes, shuffles and atomics
# ---------------------------------------------------------------------------------------

@cuda.jit
def warp_votes(x, threshold, ballots, counts, all_flags, any_flags):
    """Per warp: the ballot of (x > threshold), its popcount, and all/any of it. Lanes past
    the end of x vote False; all 32 lanes take part in every vote."""
    i = cuda.grid(1)
    warp = i // WARP
    lane = cuda.threadIdx.x % WARP
    pred = i < x.size and x[i] > threshold
    mask = cuda.ballot_sync(FULL_MASK, pred)
    everyone = cuda.all_sync(FULL_MASK, pred)
    anyone = cuda.any_sync(FULL_MASK, pred)
    if lane == 0:
        ballots[warp] = mask
        counts[warp] = cuda.popc(mask)
        all_flags[warp] = everyone
        any_flags[warp] = anyone


def _setup_votes(rng, small=False):
    n, grid, block = (100, 2, 64) if small else (1000, 8, 128)
    x = rng.standard_normal(n).astype(np.float32)
    x[0:32] = 5.0                 # warp 0: everyone votes yes
    x[32:64] = -5.0               # warp 1: no one
    x[64 + 17] = 5.0              # warp 2: at least lane 17
    warps = grid * block // WARP
    return ((grid,), (block,),
            (x, np.float32(0.5), np.zeros(warps, np.uint32), np.zeros(warps, np.int32),
             np.zeros(warps, np.int32), np.zeros(warps, np.bool_)), 0)


def _expected_votes(args):
    x, threshold, ballots = args[0], args[1], args[2]
    pred = np.zeros(ballots.size * WARP, bool)
    pred[:x.size] = x > threshold
    pred = pred.reshape(-1, WARP)
    weights = np.uint64(1) << np.arange(WARP, dtype=np.uint64)
    mask = (pred * weights).sum(axis=1).astype(np.uint32)
    return {2: mask, 3: pred.sum(axis=1), 4: pred.all(axis=1), 5: pred.any(axis=1)}


@cuda.jit
def warp_scan_shuffle(x, scan, warp_max, warp_total):
    """Per warp: an inclusive prefix sum with shfl_up (Kogge-Stone), the warp's maximum
    with a shfl_xor butterfly (every lane ends with it), and lane 31's total broadcast
    with shfl_sync. Lanes past the end of x contribute 0 (and -1 to the max)."""
    i = cuda.grid(1)
    lane = cuda.threadIdx.x % WARP
    warp = i // WARP
    v = int32(0)
    m = int32(-1)
    if i < x.size:
        v = x[i]
        m = x[i]
    d = 1
    while d < WARP:
        t = cuda.shfl_up_sync(FULL_MASK, v, d)
        if lane >= d:
            v += t
        d *= 2
    if i < x.size:
        scan[i] = v
    mask = 16
    while mask > 0:
        m = max(m, cuda.shfl_xor_sync(FULL_MASK, m, mask))
        mask //= 2
    total = cuda.shfl_sync(FULL_MASK, v, WARP - 1)
    if lane == 0:
        warp_max[warp] = m
        warp_total[warp] = total


def _setup_warp_scan(rng, small=False):
    n, grid, block = (90, 1, 96) if small else (1000, 8, 128)
    x = rng.integers(0, 1000, n).astype(np.int32)
    warps = grid * block // WARP
    return ((grid,), (block,),
            (x, np.zeros(n, np.int32), np.zeros(warps, np.int32), np.zeros(warps, np.int32)), 0)


def _expected_warp_scan(args):
    x, _, warp_max = args[0], args[1], args[2]
    v = np.zeros(warp_max.size * WARP, np.int64)
    v[:x.size] = x
    m = np.full(v.size, -1, np.int64)
    m[:x.size] = x
    v, m = v.reshape(-1, WARP), m.reshape(-1, WARP)
    scan = np.cumsum(v, axis=1)
    return {1: scan.reshape(-1)[:x.size], 2: m.max(axis=1), 3: scan[:, -1]}


NGROUPS = 16


@cuda.jit
def atomics_minmax_cas(keys, vals, fvals, gmax, gmin, fmax, seen, distinct, cas_sum):
    """Per key (group): atomic max and min of int32 values, atomic max of float32 values;
    the first thread to flip seen[key] from 0 to 1 with atomic CAS counts a distinct key;
    and an atomic add written as a CAS loop."""
    i = cuda.grid(1)
    if i < keys.size:
        k = keys[i]
        cuda.atomic.max(gmax, k, vals[i])
        cuda.atomic.min(gmin, k, vals[i])
        cuda.atomic.max(fmax, k, fvals[i])
        if cuda.atomic.cas(seen, k, 0, 1) == 0:
            cuda.atomic.add(distinct, 0, 1)
        old = cas_sum[k]
        while True:
            assumed = old
            old = cuda.atomic.cas(cas_sum, k, assumed, int32(assumed + vals[i]))
            if old == assumed:
                break


def _setup_atomics(rng, small=False):
    n, block = (80, 32) if small else (3000, 128)
    keys = rng.integers(0, 12, n).astype(np.int32)      # 12 of the 16 groups occur
    vals = rng.integers(-5000, 5000, n).astype(np.int32)
    fvals = rng.standard_normal(n).astype(np.float32)
    i32 = np.iinfo(np.int32)
    return ((_cdiv(n, block),), (block,),
            (keys, vals, fvals,
             np.full(NGROUPS, i32.min, np.int32), np.full(NGROUPS, i32.max, np.int32),
             np.full(NGROUPS, -np.inf, np.float32), np.zeros(NGROUPS, np.int32),
             np.zeros(1, np.int32), np.zeros(NGROUPS, np.int32)), 0)


def _expected_atomics(args):
    keys, vals, fvals, gmax, gmin, fmax, seen, distinct, cas_sum = (
        np.copy(a) for a in args)
    np.maximum.at(gmax, keys, vals)
    np.minimum.at(gmin, keys, vals)
    np.maximum.at(fmax, keys, fvals)
    seen[np.unique(keys)] = 1
    distinct += np.unique(keys).size
    np.add.at(cas_sum, keys, vals)
    return {3: gmax, 4: gmin, 5: fmax, 6: seen, 7: distinct, 8: cas_sum}


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


def _setup_scale_offset(rng, small=False):
    (h, w), grid, block = ((20, 30), (1, 2), (8, 4)) if small else ((50, 70), (2, 2), (16, 8))
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


def _setup_gridstride(rng, small=False):
    n, grid, block = (300, 2, 32) if small else (5000, 3, 256)
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


def _setup_saxpy(rng, small=False):
    size, block = (100, 32) if small else (3000, 256)
    x = rng.standard_normal(size).astype(np.float32)
    y = rng.standard_normal(size).astype(np.float32)
    n = size - 7
    return (_cdiv(n, block),), (block,), (np.float32(2.5), x, y, n), 0


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


def _setup_math(rng, small=False):
    n, block = (64, 32) if small else (2000, 128)
    x = rng.uniform(-4, 4, n).astype(np.float32)
    return (_cdiv(n, block),), (block,), (x, np.zeros((8, n), np.float32)), 0


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


def _setup_volume(rng, small=False):
    (d, h, w), block = ((5, 6, 7), (4, 4, 2)) if small else ((10, 9, 13), (8, 4, 4))
    vol = rng.integers(-50, 50, (d, h, w)).astype(np.int32)
    grid = (_cdiv(w, block[0]), _cdiv(h, block[1]), _cdiv(d, block[2]))
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


def _setup_reverse(rng, small=False):
    n, block = (200 if small else 3000), REV_BLOCK
    x = rng.standard_normal(n).astype(np.float32)
    return (_cdiv(n, block),), (block,), (x, np.zeros(n, np.float32)), block * 4


def _reverse_expected(block):
    def expected(args):
        x = args[0]
        return {1: _padded_blocks(x, block)[:, ::-1].reshape(-1)[:x.size]}
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


def _setup_small_types(rng, small=False):
    n, block = (100, 32) if small else (3000, 128)
    v = rng.integers(-300, 301, n).astype(np.int32)
    return ((_cdiv(n, block),), (block,),
            (v, np.zeros(n, np.bool_), np.zeros(n, np.int8), np.zeros(n, np.uint8)), 0)


def _expected_small_types(args):
    v = args[0]
    return {1: v % 3 == 0, 2: np.sign(v).astype(np.int8), 3: np.clip(v, 0, 255).astype(np.uint8)}


# ---------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------

def _transpose_cases():
    return [
        Case("transpose_naive", "out = a.T, one thread an element, 16x16 blocks (float32)",
             transpose_naive, _setup_transpose(np.float32, (16, 16), (45, 70), (13, 20)),
             _expected_transpose),
        Case("transpose_tile16", "out = a.T through an unpadded 16x16 shared tile (int32)",
             transpose_tile16, _setup_transpose(np.int32, (16, 16), (45, 70), (20, 13)),
             _expected_transpose),
        Case("transpose_padded", "out = a.T through a padded 32x33 shared tile, 32x8 blocks",
             transpose_padded, _setup_transpose(np.float32, (TILE, BLOCK_ROWS), (100, 75),
                                                (40, 35)),
             _expected_transpose),
    ]


def _reduction_cases():
    return [
        Case("reduce_interleaved", "per-block sums, interleaved addressing, 256 threads",
             reduce_interleaved, _setup_reduce(256, 256, 5000, 600), _interleaved_expected(256)),
        Case("reduce_sequential", "per-block sums, sequential addressing, first add on load",
             reduce_sequential, _setup_reduce(128, 256, 5000, 600), _sequential_expected(128)),
        Case("reduce_warp_shuffle", "total sum: grid-stride, shfl_down tree, atomicAdd a warp",
             reduce_warp_shuffle, _setup_reduce_shuffle, _expected_reduce_shuffle,
             exact=False, rtol=1e-5, atol=1e-4, cudasim=False),
    ]


# ---------------------------------------------------------------------------------------
# fp64 libdevice functions the compiler leaves as calls; contraction by ptxas; fastmath
# ---------------------------------------------------------------------------------------

@cuda.jit
def f64_calls(x, y, out):
    """pow, sin and lgamma in float64: NVVM keeps their slow paths as .func calls
    (__internal_accurate_pow, __internal_trig_reduction_slowpathd, __internal_lgamma_pos)."""
    i = cuda.grid(1)
    if i < x.size:
        out[0, i] = math.pow(x[i], y[i])
        out[1, i] = math.sin(x[i] * 1e6)
        out[2, i] = math.lgamma(x[i])


def _setup_f64_calls(rng, small=False):
    n, block = (64, 32) if small else (1000, 128)
    x = rng.uniform(0.1, 30.0, n)
    y = rng.uniform(-3.0, 3.0, n)
    return (_cdiv(n, block),), (block,), (x, y, np.zeros((3, n))), 0


def _expected_f64_calls(args):
    x, y = args[0], args[1]
    return {2: np.stack([x ** y, np.sin(x * 1e6),
                         np.array([math.lgamma(v) for v in x])])}


@cuda.jit
def float_mod_f64(x, y, out):
    """Python's float % in float64: floor(x / y) then x - y * that, where ptxas fuses
    the multiply and subtract (DFMA): the GPU's result is Python's."""
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] % y[i]


def _setup_float_mod(rng, small=False):
    n, block = (64, 32) if small else (600, 128)
    x = rng.uniform(-20, 20, n)
    y = rng.uniform(-3, 3, n)
    y[np.abs(y) < 0.1] = 0.5
    return (_cdiv(n, block),), (block,), (x, y, np.zeros(n)), 0


def _expected_float_mod(args):
    return {2: np.array([a % b for a, b in zip(args[0], args[1])])}


@cuda.jit(fastmath=True)
def fastmath_rsqrt(x, out):
    """fastmath: approximate division and square root (div.approx, sqrt.approx.ftz)."""
    i = cuda.grid(1)
    if i < x.size:
        out[i] = 1.0 / math.sqrt(x[i]) + x[i] / 3.0


def _setup_fastmath(rng, small=False):
    n, block = (64, 32) if small else (1000, 256)
    return (_cdiv(n, block),), (block,), (rng.uniform(0.01, 100, n).astype(np.float32),
                                         np.zeros(n, np.float32)), 0


def _expected_fastmath(args):
    x = args[0].astype(np.float64)
    return {1: 1 / np.sqrt(x) + x / 3}


CASES = [
    *_transpose_cases(),
    *_reduction_cases(),
    Case("stencil_1d", "7-point 1D sum stencil with its halo in shared memory",
         stencil_1d, _setup_stencil_1d, _expected_stencil_1d),
    Case("jacobi_step", "2D 5-point Jacobi sweep, boundary copied", jacobi_step,
         _setup_jacobi, _expected_jacobi),
    Case("scan_hillis_steele", "inclusive block scan (Hillis-Steele), block totals",
         scan_hillis_steele, _setup_hillis_steele, _expected_hillis_steele),
    Case("scan_blelloch", "exclusive scan of 2*block segments (Blelloch)", scan_blelloch,
         _setup_blelloch, _blelloch_expected(BL_BLOCK)),
    Case("histogram_shared", "256-bin byte histogram: shared atomics, then global atomics",
         histogram_shared, _setup_histogram, _expected_histogram),
    Case("softmax_rows", "row softmax, one block a row, max and sum tree reductions",
         softmax_rows, _setup_softmax, _expected_softmax, exact=False, rtol=1e-5, atol=1e-7),
    Case("matvec_thread_per_row", "y = A x, one thread a row", matvec_thread_per_row,
         _setup_matvec_row, _expected_matvec, exact=False, rtol=1e-5, atol=1e-5),
    Case("matvec_warp_per_row", "y = A x, one warp a row, shfl_down reduction",
         matvec_warp_per_row, _setup_matvec_warp, _expected_matvec, exact=False,
         rtol=1e-5, atol=1e-5, cudasim=False),
    Case("warp_divergence", "odd/even lanes: nested ifs vs a lane-long loop",
         warp_divergence, _setup_divergence, _expected_divergence),
    Case("collatz_steps", "data-dependent while loop (Collatz steps)", collatz_steps,
         _setup_collatz, _expected_collatz),
    Case("gemm_register_blocked", "C = A B, 32x32 block tiles, 4x4 local-array accumulators",
         gemm_register_blocked, _setup_gemm, _expected_gemm, exact=False, rtol=1e-4,
         atol=1e-4),
    Case("median5_local", "median-of-5 filter, insertion sort in a local array",
         median5_local, _setup_median, _expected_median),
    Case("device_calls", "device functions: nested calls and a tuple return",
         device_calls, _setup_device_calls, _expected_device_calls, exact=False,
         rtol=1e-6, atol=1e-6),
    Case("axpy_poly_f64", "float64 axpy and a degree-5 Horner polynomial", axpy_poly_f64,
         _setup_axpy_poly, _expected_axpy_poly, exact=False, rtol=1e-13, atol=1e-13),
    Case("hash_mix_i64", "uint64 splitmix64; int64 LCG with floor % and //", hash_mix_i64,
         _setup_hash, _expected_hash),
    Case("bit_ops_i32", "popc, clz, brev, ffs, shifts, min/max, abs, % and // on 32 bits",
         bit_ops_i32, _setup_bits, _expected_bits),
    Case("warp_votes", "ballot_sync, all_sync, any_sync per warp", warp_votes,
         _setup_votes, _expected_votes, cudasim=False),
    Case("warp_scan_shuffle", "shfl_up scan, shfl_xor max, shfl_sync broadcast",
         warp_scan_shuffle, _setup_warp_scan, _expected_warp_scan, cudasim=False),
    Case("atomics_minmax_cas", "atomic max/min (int32, float32), CAS claim, CAS-loop add",
         atomics_minmax_cas, _setup_atomics, _expected_atomics),
    Case("scale_offset_2d", "2D grid-stride loop with cuda.grid(2), cuda.gridsize(2)",
         scale_offset_2d, _setup_scale_offset, _expected_scale_offset),
    Case("square_clip_gridstride", "1D grid-stride loop, min(x*x, 4)",
         square_clip_gridstride, _setup_gridstride, _expected_gridstride),
    Case("saxpy_scalars", "saxpy with a float32 scalar a and an int scalar n",
         saxpy_scalars, _setup_saxpy, _expected_saxpy, exact=False, rtol=1e-6, atol=1e-6),
    Case("math_functions", "sqrt, sin, cos, log, exp, pow, tanh, abs, min/max (float32)",
         math_functions, _setup_math, _expected_math, exact=False, rtol=1e-5, atol=1e-6),
    Case("volume_3d", "3D grid and blocks (blockIdx.z, threadIdx.z)", volume_3d,
         _setup_volume, _expected_volume),
    Case("reverse_blocks_dynamic", "segment reversal through dynamic shared memory",
         reverse_blocks_dynamic, _setup_reverse, _reverse_expected(REV_BLOCK)),
    Case("classify_small_types", "bool, int8 and uint8 outputs", classify_small_types,
         _setup_small_types, _expected_small_types),
    Case("f64_calls", "float64 pow, sin of large arguments and lgamma: calls NVVM kept",
         f64_calls, _setup_f64_calls, _expected_f64_calls, exact=False, rtol=1e-13,
         atol=1e-13),
    Case("float_mod_f64", "Python's float64 % (a multiply-subtract ptxas fuses)",
         float_mod_f64, _setup_float_mod, _expected_float_mod),
    Case("fastmath_rsqrt", "fastmath=True: approximate division and square root",
         fastmath_rsqrt, _setup_fastmath, _expected_fastmath, exact=False, rtol=1e-5),
]

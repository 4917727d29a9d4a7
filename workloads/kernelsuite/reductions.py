"""Reductions, scans, the shared-memory histogram, row softmax and matrix-vector
products."""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32, int32, uint32

from .base import FULL_MASK, WARP, Case, cdiv, p2, padded_blocks, sized

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


def _setup_reduce(block, per_block, n, n_small):
    def setup(rng, small=False, **sizes):
        size, = sized(sizes, small, dict(n=n_small), dict(n=n))
        x = rng.standard_normal(size).astype(np.float32)
        blocks = cdiv(size, per_block)
        return (blocks,), (block,), (x, np.zeros(blocks, np.float32)), 0
    return setup


def _interleaved_expected(block):
    def expected(args):
        buf = padded_blocks(args[0], block)
        s = 1                      # the kernel's tree, in float32: exact
        while s < block:
            buf[:, ::2 * s] += buf[:, s::2 * s]
            s *= 2
        return {1: buf[:, 0].copy()}
    return expected


def _sequential_expected(block):
    def expected(args):
        pairs = padded_blocks(args[0], 2 * block)
        v = pairs[:, :block] + pairs[:, block:]
        s = block // 2             # the kernel's tree, in float32: exact
        while s > 0:
            v[:, :s] += v[:, s:2 * s]
            s //= 2
        return {1: v[:, 0].copy()}
    return expected


def _setup_reduce_shuffle(rng, small=False, **size):
    n, grid, block = sized(size, small, dict(n=300, grid=2, block=64),
                           dict(n=5000, grid=4, block=128))
    x = rng.random(n).astype(np.float32)          # positive: no cancellation in the sum
    return (grid,), (block,), (x, np.zeros(1, np.float32)), 0


def _expected_reduce_shuffle(args):
    x, out = args
    return {1: out + np.float32(x.astype(np.float64).sum())}


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


def _setup_hillis_steele(rng, small=False, **size):
    (n,), block = sized(size, small, dict(n=300), dict(n=3000)), HS_BLOCK
    x = rng.integers(0, 100, n).astype(np.int32)
    blocks = cdiv(n, block)
    return ((blocks,), (block,),
            (x, np.zeros(n, np.int32), np.zeros(blocks, np.int32)), 0)


def _expected_hillis_steele(args):
    x = args[0]
    seg = np.cumsum(padded_blocks(x, HS_BLOCK), axis=1, dtype=np.int32)
    return {1: seg.reshape(-1)[:x.size], 2: seg[:, -1].copy()}


BL_BLOCK = 64       # scan_blelloch's launch: segments of 128 elements


def _setup_blelloch(rng, small=False, **size):
    (n,), block = sized(size, small, dict(n=200), dict(n=3000)), BL_BLOCK
    x = rng.integers(0, 100, n).astype(np.int32)
    return (cdiv(n, 2 * block),), (block,), (x, np.zeros(n, np.int32)), 0


def _blelloch_expected(block):
    def expected(args):
        x = args[0]
        seg = padded_blocks(x, 2 * block)
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


def _setup_histogram(rng, small=False, **size):
    n, grid, block = sized(size, small, dict(n=500, grid=2, block=64),
                           dict(n=6000, grid=4, block=128))
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


def _setup_softmax(rng, small=False, **size):
    rows, cols, block = sized(size, small, dict(rows=3, cols=70, block=32),
                              dict(rows=24, cols=300, block=SM_BLOCK))
    if block > SM_BLOCK or block & (block - 1):
        raise ValueError(f"block = {block!r}: a power of two up to {SM_BLOCK} (the shared "
                         "buffer's size; the tree halves it)")
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


def _setup_matvec_row(rng, small=False, **size):
    rows, cols, block = sized(size, small, dict(rows=40, cols=16, block=32),
                              dict(rows=500, cols=64, block=128))
    A = rng.standard_normal((rows, cols)).astype(np.float32)
    x = rng.standard_normal(cols).astype(np.float32)
    return (cdiv(rows, block),), (block,), (A, x, np.zeros(rows, np.float32)), 0


def _setup_matvec_warp(rng, small=False, **size):
    rows, cols, block = sized(size, small, dict(rows=10, cols=50, block=64),
                              dict(rows=150, cols=200, block=128))
    A = rng.standard_normal((rows, cols)).astype(np.float32)
    x = rng.standard_normal(cols).astype(np.float32)
    warps_per_block = block // WARP
    return ((cdiv(rows, warps_per_block),), (block,),
            (A, x, np.zeros(rows, np.float32)), 0)


def _expected_matvec(args):
    A, x = args[0], args[1]
    return {2: A.astype(np.float64) @ x.astype(np.float64)}


# ---------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------

def _n(*ks, **extra):
    return tuple((f"n={p2(k)}", {"n": 1 << k, **extra}) for k in ks)


def _dot_tolerance(rows, cols, block=None):
    """A float32 dot product of ``cols`` standard-normal terms rounds about 2.5e-8 cols
    (a random walk of partial sums ~sqrt(j), each rounded to half an ulp): 10 of those,
    and never less than the case's own 1e-5."""
    return 1e-5, max(1e-5, 2.5e-7 * cols)


def _shuffle_tolerance(n, grid, block):
    """The float32 atomicAdds of the warps' sums (one a warp) round about sqrt(warps)
    times: the relative tolerance grows with the square root of the warps, 1e-5 at 16."""
    return 1e-5 * max(1.0, math.sqrt(grid * block / WARP / 16)), 1e-4


_MATRICES = (("4096x4096", {"rows": 4096, "cols": 4096}),
             ("16384x1024", {"rows": 16384, "cols": 1024}))

CASES = [
    Case("reduce_interleaved", "per-block sums, interleaved addressing, 256 threads",
         reduce_interleaved, _setup_reduce(256, 256, 5000, 600), _interleaved_expected(256),
         shapes=_n(23, 25)),
    Case("reduce_sequential", "per-block sums, sequential addressing, first add on load",
         reduce_sequential, _setup_reduce(128, 256, 5000, 600), _sequential_expected(128),
         shapes=_n(23, 25)),
    Case("reduce_warp_shuffle", "total sum: grid-stride, shfl_down tree, atomicAdd a warp",
         reduce_warp_shuffle, _setup_reduce_shuffle, _expected_reduce_shuffle,
         exact=False, rtol=1e-5, atol=1e-4, cudasim=False, tolerance=_shuffle_tolerance,
         shapes=(("n=2^22/grid132x128", {"n": 1 << 22, "grid": 132, "block": 128}),
                 ("n=2^24/grid264x256", {"n": 1 << 24, "grid": 264, "block": 256}))),
    Case("scan_hillis_steele", "inclusive block scan (Hillis-Steele), block totals",
         scan_hillis_steele, _setup_hillis_steele, _expected_hillis_steele, shapes=_n(23, 25)),
    Case("scan_blelloch", "exclusive scan of 2*block segments (Blelloch)", scan_blelloch,
         _setup_blelloch, _blelloch_expected(BL_BLOCK), shapes=_n(23, 25)),
    # atomics on a bell of 256 bins by design: two shapes, both well inside 5 ms
    Case("histogram_shared", "256-bin byte histogram: shared atomics, then global atomics",
         histogram_shared, _setup_histogram, _expected_histogram,
         shapes=(("n=2^22/grid528x128", {"n": 1 << 22, "grid": 528, "block": 128}),
                 ("n=2^24/grid264x256", {"n": 1 << 24, "grid": 264, "block": 256}))),
    Case("softmax_rows", "row softmax, one block a row, max and sum tree reductions",
         softmax_rows, _setup_softmax, _expected_softmax, exact=False, rtol=1e-5, atol=1e-7,
         shapes=(("4096x1024", {"rows": 4096, "cols": 1024, "block": 128}),
                 ("16384x1000", {"rows": 16384, "cols": 1000, "block": 128}),
                 ("1024x8192", {"rows": 1024, "cols": 8192, "block": 128}))),
    Case("matvec_thread_per_row", "y = A x, one thread a row", matvec_thread_per_row,
         _setup_matvec_row, _expected_matvec, exact=False, rtol=1e-5, atol=1e-5,
         tolerance=_dot_tolerance,
         shapes=tuple((label, {**size, "block": 128}) for label, size in _MATRICES)),
    Case("matvec_warp_per_row", "y = A x, one warp a row, shfl_down reduction",
         matvec_warp_per_row, _setup_matvec_warp, _expected_matvec, exact=False,
         rtol=1e-5, atol=1e-5, cudasim=False, tolerance=_dot_tolerance,
         shapes=tuple((label, {**size, "block": 128}) for label, size in _MATRICES)),
]

"""Control flow and local memory: warp divergence, a data-dependent loop, the
register-blocked GEMM, a local-array median filter, device functions."""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, int64

from .base import WARP, Case, cdiv, p2, sized

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


def _setup_divergence(rng, small=False, **size):
    n, block = sized(size, small, dict(n=100, block=64), dict(n=3000, block=128))
    x = rng.integers(-100, 101, n).astype(np.int32)
    return (cdiv(n, block),), (block,), (x, np.zeros(n, np.int32)), 0


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


def _setup_collatz(rng, small=False, **size):
    n, block = sized(size, small, dict(n=70, block=32), dict(n=3000, block=128))
    start = rng.integers(1, 10000, n).astype(np.int32)
    return (cdiv(n, block),), (block,), (start, np.zeros(n, np.int32)), 0


def _expected_collatz(args):
    v = args[0].astype(np.int64)
    count = np.zeros(v.size, np.int32)
    live = np.flatnonzero(v != 1)        # the starts still walking, and where they are
    v = v[live]
    while live.size:
        v = np.where(v % 2 == 0, v // 2, 3 * v + 1)
        count[live] += 1
        going = v != 1
        live, v = live[going], v[going]
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


def _setup_gemm(rng, small=False, **size):
    M, N, K = sized(size, small, dict(m=40, n=36, k=13), dict(m=70, n=50, k=37))
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    block = (GEMM_BN // GEMM_TN, GEMM_BM // GEMM_TM)
    grid = (cdiv(N, GEMM_BN), cdiv(M, GEMM_BM))
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


def _setup_median(rng, small=False, **size):
    n, block = sized(size, small, dict(n=100, block=32), dict(n=3000, block=128))
    x = rng.standard_normal(n).astype(np.float32)
    return (cdiv(n, block),), (block,), (x, np.zeros(n, np.float32)), 0


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


def _setup_device_calls(rng, small=False, **size):
    n, block, width = sized(size, small, dict(n=100, block=32, width=7),
                            dict(n=3000, block=128, width=37))
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    t = rng.uniform(-0.5, 1.5, n).astype(np.float32)
    return ((cdiv(n, block),), (block,),
            (a, b, t, width, np.zeros(n, np.float32), np.zeros((n, 2), np.int32)), 0)


def _expected_device_calls(args):
    a, b, t = (v.astype(np.float64) for v in args[:3])
    width = args[3]
    tc = np.clip(t, 0.0, 1.0)
    i = np.arange(a.size)
    return {4: a + (b - a) * tc, 5: np.stack([i // width, i % width], axis=1)}


# ---------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------

def _n(*ks, **extra):
    return tuple((f"n={p2(k)}", {"n": 1 << k, **extra}) for k in ks)


def _gemm_tolerance(m, n, k):
    """C's float32 dot products of ``k`` standard-normal terms round about 2.5e-8 k: 10
    of those, and never less than the case's own 1e-4."""
    return 1e-4, max(1e-4, 2.5e-7 * k)


CASES = [
    Case("warp_divergence", "odd/even lanes: nested ifs vs a lane-long loop",
         warp_divergence, _setup_divergence, _expected_divergence, shapes=_n(22, 23, block=128)),
    # the numpy reference walks every start to 1: 2^20 and 2^21 starts keep it to seconds
    Case("collatz_steps", "data-dependent while loop (Collatz steps)", collatz_steps,
         _setup_collatz, _expected_collatz, shapes=_n(20, 21, block=128)),
    Case("gemm_register_blocked", "C = A B, 32x32 block tiles, 4x4 local-array accumulators",
         gemm_register_blocked, _setup_gemm, _expected_gemm, exact=False, rtol=1e-4,
         atol=1e-4, tolerance=_gemm_tolerance,
         shapes=(("1024x1024x1024", {"m": 1024, "n": 1024, "k": 1024}),
                 ("2048x2048x512", {"m": 2048, "n": 2048, "k": 512}),
                 ("1000x1500x700", {"m": 1000, "n": 1500, "k": 700}))),
    Case("median5_local", "median-of-5 filter, insertion sort in a local array",
         median5_local, _setup_median, _expected_median, shapes=_n(22, 23, block=128)),
    Case("device_calls", "device functions: nested calls and a tuple return",
         device_calls, _setup_device_calls, _expected_device_calls, exact=False,
         rtol=1e-6, atol=1e-6, shapes=_n(22, 23, block=128, width=1000)),
]

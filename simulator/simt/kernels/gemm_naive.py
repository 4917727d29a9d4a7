"""``gemm-naive``: float32 row-major ``C = A @ B``, one thread per element of C.

2-D grid of 2-D blocks. ``thread_x="cols"`` (the default): ``threadIdx.x`` walks C's
columns, so a warp reads a row of B and writes a row of C with consecutive addresses
(coalesced). ``thread_x="rows"``: ``threadIdx.x`` walks C's rows (the uncoalesced
mapping). Threads outside C do nothing (bounds-checked). Thread (r, c) loads
``A[r, k]`` and ``B[k, c]`` for k = 0..K-1 in order, then stores ``C[r, c]``; indices
below are flat row-major element offsets.
"""
from __future__ import annotations

from numba import cuda, float32  # importing needs no GPU; kernels compile on first launch

from .launch import Launch

NAME = "gemm-naive"
THREAD_X = ("cols", "rows")


@cuda.jit(device=True)
def _dot_store(A, B, C, r, c, M, N, K):
    if r < M and c < N:
        acc = float32(0.0)
        for k in range(K):
            acc += A[r, k] * B[k, c]
        C[r, c] = acc


@cuda.jit
def gemm_naive_cols(A, B, C, M, N, K):
    """threadIdx.x walks C's columns (coalesced)."""
    _dot_store(A, B, C, cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y,
               cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x, M, N, K)


@cuda.jit
def gemm_naive_rows(A, B, C, M, N, K):
    """threadIdx.x walks C's rows (uncoalesced)."""
    _dot_store(A, B, C, cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x,
               cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y, M, N, K)


def kernel(thread_x: str = "cols"):
    if thread_x not in THREAD_X:
        raise ValueError(f"thread_x = {thread_x!r}: allowed: {', '.join(THREAD_X)}")
    return gemm_naive_cols if thread_x == "cols" else gemm_naive_rows


def launch(M: int, N: int, block=(16, 16), thread_x: str = "cols") -> Launch:
    """The grid that covers C with ``block``-shaped blocks for the chosen mapping."""
    if thread_x not in THREAD_X:
        raise ValueError(f"thread_x = {thread_x!r}: allowed: {', '.join(THREAD_X)}")
    bx, by = block
    xs, ys = (N, M) if thread_x == "cols" else (M, N)
    return Launch((-(-xs // bx), -(-ys // by)), (bx, by))


def thread_accesses(lc: Launch, M: int, N: int, K: int, thread_x: str = "cols") -> dict:
    out = {}
    for b, t in lc.threads():
        gx = b[0] * lc.block[0] + t[0]
        gy = b[1] * lc.block[1] + t[1]
        r, c = (gy, gx) if thread_x == "cols" else (gx, gy)
        acc = []
        if r < M and c < N:
            for k in range(K):
                acc += [("ld", "A", r * K + k), ("ld", "B", k * N + c)]
            acc.append(("st", "C", r * N + c))
        out[(b, t)] = acc
    return out


def run(lc: Launch, A, B, thread_x: str = "cols"):
    import numpy as np
    M, K = A.shape
    N = B.shape[1]
    C = np.zeros((M, N), dtype=np.float32)
    kernel(thread_x)[lc.grid[:2], lc.block[:2]](A, B, C, M, N, K)
    return C

"""``gemm-tiled``: float32 row-major ``C = A @ B`` through shared-memory tiles.

Square tiles T in {8, 16, 32}; T x T blocks; one thread per element of C; the grid
``(ceil(N/T), ceil(M/T))`` (x over columns). For each of ``ceil(K/T)`` tiles, thread
(tx, ty) of block (bx, by) loads ``A[row, t T + tx]`` and ``B[t T + ty, col]`` into
shared memory (zero where outside A or B: zero-padded edges), synchronises, does T
MACs from shared memory, synchronises again; finally threads inside C store it.
"""
from __future__ import annotations

from numba import cuda, float32  # importing needs no GPU; kernels compile on first launch

from .launch import Launch

NAME = "gemm-tiled"
TILES = (8, 16, 32)


def _make(T):
    @cuda.jit
    def gemm_tiled(A, B, C, M, N, K):
        sA = cuda.shared.array((T, T), float32)
        sB = cuda.shared.array((T, T), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        row = cuda.blockIdx.y * T + ty
        col = cuda.blockIdx.x * T + tx
        acc = float32(0.0)
        for t in range((K + T - 1) // T):
            ka = t * T + tx
            if row < M and ka < K:
                sA[ty, tx] = A[row, ka]
            else:
                sA[ty, tx] = float32(0.0)
            kb = t * T + ty
            if kb < K and col < N:
                sB[ty, tx] = B[kb, col]
            else:
                sB[ty, tx] = float32(0.0)
            cuda.syncthreads()
            for kk in range(T):
                acc += sA[ty, kk] * sB[kk, tx]
            cuda.syncthreads()
        if row < M and col < N:
            C[row, col] = acc
    return gemm_tiled


_KERNELS = {T: _make(T) for T in TILES}


def _check_tile(T):
    if T not in TILES:
        raise ValueError(f"tile = {T!r}: allowed: {', '.join(map(str, TILES))}")


def kernel(tile: int = 16):
    _check_tile(tile)
    return _KERNELS[tile]


def launch(M: int, N: int, tile: int = 16) -> Launch:
    _check_tile(tile)
    return Launch((-(-N // tile), -(-M // tile)), (tile, tile))


def thread_accesses(lc: Launch, M: int, N: int, K: int, tile: int) -> dict:
    _check_tile(tile)
    T = tile
    out = {}
    for b, t in lc.threads():
        tx, ty = t[0], t[1]
        row, col = b[1] * T + ty, b[0] * T + tx
        acc = []
        for tt in range(-(-K // T)):
            ka, kb = tt * T + tx, tt * T + ty
            if row < M and ka < K:
                acc.append(("ld", "A", row * K + ka))
            if kb < K and col < N:
                acc.append(("ld", "B", kb * N + col))
        if row < M and col < N:
            acc.append(("st", "C", row * N + col))
        out[(b, t)] = acc
    return out

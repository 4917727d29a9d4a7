"""``conv-im2col``: im2col, then ``gemm-tiled``, for any convolution (groups = 1).

Launch 1 (im2col): a 1-D grid, one thread per element of the column matrix
``col[M, Kc]`` (row-major; M = N P Q output pixels in (n, p, q) order, Kc = C R S),
columns ordered (c, r, s) for NCHW input and (r, s, c) for NHWC input so that they
meet the weights in their stored order. A thread loads its input element when the
window position is inside the input and stores it (or 0 for padding).
Launch 2: ``gemm-tiled`` of ``col`` (M x Kc) with the weights as a Kc x K matrix
(NHWC: the R,S,C,K tensor as stored; NCHW: the K,C,R,S tensor transposed once on the
host) into ``y[M, K]``: the output in (n, p, q, k) order (NHWC).
"""
from __future__ import annotations

from numba import cuda  # importing needs no GPU; kernels compile on first launch

from . import gemm_tiled
from .launch import Launch

NAME = "conv-im2col"


@cuda.jit(device=True)
def _gather(x, col, e, nchw, N, C, H, W, R, S, P, Q, stride, pad):
    """col[m, kk] for element e of the column matrix; columns (c, r, s) for NCHW input,
    (r, s, c) for NHWC."""
    Kc = C * R * S
    if e < N * P * Q * Kc:
        m = e // Kc
        kk = e % Kc
        q = m % Q
        p = (m // Q) % P
        n = m // (Q * P)
        if nchw:
            s = kk % S
            r = (kk // S) % R
            c = kk // (S * R)
        else:
            c = kk % C
            s = (kk // C) % S
            r = kk // (C * S)
        h = p * stride + r - pad
        w = q * stride + s - pad
        v = 0.0
        if h >= 0 and h < H and w >= 0 and w < W:
            if nchw:
                v = x[n, c, h, w]
            else:
                v = x[n, h, w, c]
        col[m, kk] = v


@cuda.jit
def im2col_nchw(x, col, N, C, H, W, R, S, P, Q, stride, pad):
    _gather(x, col, cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x, True,
            N, C, H, W, R, S, P, Q, stride, pad)


@cuda.jit
def im2col_nhwc(x, col, N, C, H, W, R, S, P, Q, stride, pad):
    _gather(x, col, cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x, False,
            N, C, H, W, R, S, P, Q, stride, pad)


def _check(op):
    if op.groups != 1:
        raise ValueError(f"conv-im2col needs groups = 1, got {op.groups}")


def im2col_kernel(layout: str):
    if layout not in ("nchw", "nhwc"):
        raise ValueError(f"layout = {layout!r}: allowed: nchw, nhwc")
    return im2col_nchw if layout == "nchw" else im2col_nhwc


def im2col_args(op):
    return (op.N, op.C, op.H, op.W, op.R, op.S, op.P, op.Q, op.stride, op.padding)


def launches(op, block: int = 256, tile: int = 16) -> tuple[Launch, Launch]:
    """(im2col launch, gemm-tiled launch)."""
    _check(op)
    M, Kc = op.N * op.P * op.Q, op.C * op.R * op.S
    return Launch(-(-(M * Kc) // block), block), gemm_tiled.launch(M, op.K, tile)


def gemm_dims(op):
    """(M, N, K) of the GEMM launch."""
    return op.N * op.P * op.Q, op.K, op.C * op.R * op.S


def im2col_accesses(lc: Launch, op) -> dict:
    """Per-thread global accesses of the im2col launch (x in its layout, col row-major)."""
    _check(op)
    N, C, H, W, R, S, P, Q = op.N, op.C, op.H, op.W, op.R, op.S, op.P, op.Q
    Kc = C * R * S
    out = {}
    for b, t in lc.threads():
        e = b[0] * lc.block[0] + t[0]
        acc = []
        if e < N * P * Q * Kc:
            m, kk = divmod(e, Kc)
            q, p, n = m % Q, (m // Q) % P, m // (Q * P)
            if op.layout == "nchw":
                s, r, c = kk % S, (kk // S) % R, kk // (S * R)
            else:
                c, s, r = kk % C, (kk // C) % S, kk // (C * S)
            h, w = p * op.stride + r - op.padding, q * op.stride + s - op.padding
            if 0 <= h < H and 0 <= w < W:
                idx = ((n * C + c) * H + h) * W + w if op.layout == "nchw" else ((n * H + h) * W + w) * C + c
                acc.append(("ld", "x", idx))
            acc.append(("st", "col", e))
        out[(b, t)] = acc
    return out

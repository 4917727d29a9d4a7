"""``conv-direct``: one thread per output element, bounds-checked padding.

A 1-D grid over the output tensor in its memory order: thread ``o`` (``o < size``)
computes output element o. NCHW: o -> (n, k, p, q), W fastest; the reduction runs in
loop order c, r, s with weights stored K, C, R, S. NHWC: o -> (n, p, q, k), K fastest;
the reduction runs r, s, c with weights stored R, S, C, K. Window positions in the
padding are skipped (no load). Any block size; grid = ceil(outputs / block).
"""
from __future__ import annotations

from numba import cuda, float32  # importing needs no GPU; kernels compile on first launch

from .launch import Launch

NAME = "conv-direct"
LAYOUTS = ("nchw", "nhwc")


@cuda.jit
def conv_nchw(x, w, y, N, C, H, W, K, R, S, P, Q, stride, pad):
    o = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if o < N * K * P * Q:
        q = o % Q
        p = (o // Q) % P
        k = (o // (Q * P)) % K
        n = o // (Q * P * K)
        acc = float32(0.0)
        for c in range(C):
            for r in range(R):
                h = p * stride + r - pad
                if h >= 0 and h < H:
                    for s in range(S):
                        ww = q * stride + s - pad
                        if ww >= 0 and ww < W:
                            acc += x[n, c, h, ww] * w[k, c, r, s]
        y[n, k, p, q] = acc


@cuda.jit
def conv_nhwc(x, w, y, N, C, H, W, K, R, S, P, Q, stride, pad):
    o = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if o < N * K * P * Q:
        k = o % K
        q = (o // K) % Q
        p = (o // (K * Q)) % P
        n = o // (K * Q * P)
        acc = float32(0.0)
        for r in range(R):
            h = p * stride + r - pad
            if h >= 0 and h < H:
                for s in range(S):
                    ww = q * stride + s - pad
                    if ww >= 0 and ww < W:
                        for c in range(C):
                            acc += x[n, h, ww, c] * w[r, s, c, k]
        y[n, p, q, k] = acc


def kernel(layout: str = "nchw"):
    if layout not in LAYOUTS:
        raise ValueError(f"layout = {layout!r}: allowed: {', '.join(LAYOUTS)}")
    return conv_nchw if layout == "nchw" else conv_nhwc


def launch(op, block: int = 256) -> Launch:
    outputs = op.N * op.K * op.P * op.Q
    return Launch(-(-outputs // block), block)


def args(op):
    """The scalar arguments after (x, w, y)."""
    return (op.N, op.C, op.H, op.W, op.K, op.R, op.S, op.P, op.Q, op.stride, op.padding)


def thread_accesses(lc: Launch, op) -> dict:
    """Flat element offsets into x, w and y in the op's layout, per thread."""
    if op.groups != 1:
        raise ValueError(f"conv-direct needs groups = 1, got {op.groups}")
    N, C, H, W, K, R, S, P, Q = op.N, op.C, op.H, op.W, op.K, op.R, op.S, op.P, op.Q
    nchw = op.layout == "nchw"
    total = N * K * P * Q
    out = {}
    for b, t in lc.threads():
        o = b[0] * lc.block[0] + t[0]
        acc = []
        if o < total:
            if nchw:
                q, p, k, n = o % Q, (o // Q) % P, (o // (Q * P)) % K, o // (Q * P * K)
                order = [(c, r, s) for c in range(C) for r in range(R) for s in range(S)]
            else:
                k, q, p, n = o % K, (o // K) % Q, (o // (K * Q)) % P, o // (K * Q * P)
                order = [(c, r, s) for r in range(R) for s in range(S) for c in range(C)]
            for c, r, s in order:
                h, w = p * op.stride + r - op.padding, q * op.stride + s - op.padding
                if 0 <= h < H and 0 <= w < W:
                    if nchw:
                        acc += [("ld", "x", ((n * C + c) * H + h) * W + w),
                                ("ld", "w", ((k * C + c) * R + r) * S + s)]
                    else:
                        acc += [("ld", "x", ((n * H + h) * W + w) * C + c),
                                ("ld", "w", ((r * S + s) * C + c) * K + k)]
            acc.append(("st", "y", o))
        out[(b, t)] = acc
    return out

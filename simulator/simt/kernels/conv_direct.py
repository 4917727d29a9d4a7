"""``conv-direct``: one thread per output element, bounds-checked padding.

A 1-D grid over the output tensor in its memory order: thread ``o`` (``o < size``)
computes output element o. NCHW: o -> (n, k, p, q), W fastest; the reduction runs in
loop order c, r, s with weights stored K, C, R, S. NHWC: o -> (n, p, q, k), K fastest;
the reduction runs r, s, c with weights stored R, S, C, K. Window positions in the
padding are skipped (no load). Any block size; grid = ceil(outputs / block).
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, njit  # importing needs no GPU; kernels compile on first launch

from .. import isa
from .launch import Launch

NAME = "conv-direct"
LAYOUTS = ("nchw", "nhwc")
KIND = 3
REGS_ESTIMATE = 32  # stated estimate for targets whose compilation was not read
REGS_COMPILED = {(9, 0): {"nchw": 46, "nhwc": 48}}  # resources suite on the H100
TAPS_PER_TRIP = {"nchw": 1, "nhwc": 2}  # loads of two c taps hoisted together in NHWC (sm_90 SASS)


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


# --- the program face -------------------------------------------------------------------
# params: grid, block, then N C H W K R S P Q stride pad layout(0 nchw, 1 nhwc) at p[6:18],
# base_x, base_w, base_y at p[18:21], taps per trip at p[21]. A trip of the body covers
# one (NCHW) or two (NHWC) taps (c, r, s) in reduction order.

@njit(cache=True)
def setup(p, bx, by, bz, w, tv, g):
    """tv[:, 1:7] = o < total, n, k, p stride - pad, q stride - pad, o; returns C R S if
    some thread of the warp has an output, else 0."""
    N, K, P, Q, st, pad, nhwc = p[6], p[10], p[13], p[14], p[15], p[16], p[17]
    total = N * K * P * Q
    any_ = False
    for lane in range(32):
        tx, ty, tz, ok = isa.thread_of(p, w, lane)
        o = bx * p[3] + tx
        tv[g, lane, 0] = ok
        tv[g, lane, 1] = ok and o < total
        if nhwc:
            k, q, pp, n = o % K, (o // K) % Q, (o // (K * Q)) % P, o // (K * Q * P)
        else:
            q, pp, k, n = o % Q, (o // Q) % P, (o // (Q * P)) % K, o // (Q * P * K)
        tv[g, lane, 2] = n
        tv[g, lane, 3] = k
        tv[g, lane, 4] = pp * st - pad
        tv[g, lane, 5] = q * st - pad
        tv[g, lane, 6] = o
        any_ = any_ or tv[g, lane, 1] != 0
    taps = p[7] * p[11] * p[12]
    return (taps + p[21] - 1) // p[21] if any_ else 0


@njit(cache=True)
def lanes(p, tv, g, it, stream, out):
    """0, 3: load x at the trip's first, second tap; 1, 4: load the weight (all skipped in
    the padding); 2: store y[o]."""
    C, H, W, K, R, S, nhwc = p[7], p[8], p[9], p[10], p[11], p[12], p[17]
    t = it * p[21] + (1 if stream >= 3 else 0)
    if stream != 2 and t >= C * R * S:
        for lane in range(32):
            out[g, lane] = -1
        return 0
    if stream >= 3:
        stream -= 3
    if nhwc:
        c, s, r = t % C, (t // C) % S, t // (C * S)
    else:
        s, r, c = t % S, (t // S) % R, t // (S * R)
    n_ = 0
    for lane in range(32):
        out[g, lane] = -1
        if not tv[g, lane, 1]:
            continue
        if stream == 2:
            out[g, lane] = p[20] + 4 * tv[g, lane, 6]
            n_ += 1
            continue
        n, k = tv[g, lane, 2], tv[g, lane, 3]
        h, ww = tv[g, lane, 4] + r, tv[g, lane, 5] + s
        if h < 0 or h >= H or ww < 0 or ww >= W:
            continue
        if stream == 0:
            idx = ((n * H + h) * W + ww) * C + c if nhwc else ((n * C + c) * H + h) * W + ww
            out[g, lane] = p[18] + 4 * idx
        else:
            idx = ((r * S + s) * C + c) * K + k if nhwc else ((k * C + c) * R + r) * S + s
            out[g, lane] = p[19] + 4 * idx
        n_ += 1
    return n_


def _template(taps):
    # as the sm_90 SASS: NCHW about 38 instructions per tap, its two loads then its FMA;
    # NHWC about 29 per tap with two taps' loads issued together
    a = isa.Asm()
    a.alu("o", n=2)                  # o = global thread index
    a.alu("p", "o")                  # o < total
    a.bra("p")
    a.alu("n", "o", n=24)            # four divisions/remainders by runtime sizes
    a.alu("px", "n", n=4)            # base pointers
    a.body()
    if taps == 1:
        a.alu("h", "px", n=16)       # h, w, bounds
        a.bra("h")
        a.alu("ix", "h", n=17)       # 64-bit offsets of x and w
        a.ldg("xv", 0, "ix")
        a.ldg("wv", 1, "ix")
        a.ffma("acc", "xv", "wv", "acc", stream=0)
        a.bra("px")
    else:
        a.alu("ix", "px", n=24)      # both taps' offsets
        a.ldg("x0", 0, "ix")
        a.ldg("w0", 1, "ix")
        a.ldg("x1", 3, "ix")
        a.ldg("w1", 4, "ix")
        a.alu("px", "px", n=28)
        a.ffma("acc", "x0", "w0", "acc", stream=0)
        a.ffma("acc", "x1", "w1", "acc", stream=3)
        a.alu("p", "px")
        a.bra("p")
    a.epilogue()
    a.stg(2, "acc", "o")
    return a.template()


TEMPLATES = {lay: _template(TAPS_PER_TRIP[lay]) for lay in LAYOUTS}


def program(op, block: int = 256) -> isa.Program:
    if op.groups != 1:
        raise ValueError(f"conv-direct needs groups = 1, got {op.groups}")
    lc = launch(op, block)
    xs, wsz, ys = (o.elements for o in op.operands())
    bases = isa.layout_arrays([("x", xs), ("w", wsz), ("y", ys)])
    t, pro, body, nregs = TEMPLATES[op.layout]
    return isa.Program(
        NAME, KIND, lc, np.array([*lc.grid, *lc.block, *args(op), LAYOUTS.index(op.layout),
                                  bases["x"], bases["w"], bases["y"], TAPS_PER_TRIP[op.layout]],
                                 np.int64),
        t, pro, body, nregs,
        (isa.Stream("x", "global", "x"), isa.Stream("w", "global", "w"), isa.Stream("y", "global", "y"),
         isa.Stream("x+1", "global", "x"), isa.Stream("w+1", "global", "w")),
        tuple((n, bases[n], e) for n, e in (("x", xs), ("w", wsz), ("y", ys))),
        REGS_ESTIMATE, 0, "estimate", op.flops(), op.min_bytes(),
        label=op.name or op.describe())

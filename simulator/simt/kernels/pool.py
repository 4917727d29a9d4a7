"""``pool2d``: max or average pooling, one thread per output element
(``workloads.ir.Pool2d``: ResNet's 3x3/2 max pool and its global average pool).

A 1-D grid over the output tensor in its memory order (any block, default 256): thread
``o`` decodes (n, c, p, q) -- NCHW: q fastest; NHWC: c fastest -- and walks its R x S
window row by row, skipping positions in the padding (no load): the max of what it
read, or their sum over their count. NHWC's 32 lanes read 32 channels side by side;
NCHW's read along a row ``stride`` apart (a global average pool's lanes, one (n, c)
each, read H W apart).
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, njit  # importing needs no GPU; kernels compile on first launch

from .. import isa
from .conv_direct import check_block, one_launch  # the same default block (256) and limit
from .launch import Launch
from .spec import Arg, Device, KernelSpec

NAME = "pool2d"
LAYOUTS = ("nchw", "nhwc")
REGS_ESTIMATE = 24  # stated estimate for targets whose compilation was not read
REGS_COMPILED = {(9, 0): 38}  # registers per thread, resources suite on the H100


@cuda.jit
def pool_kernel(x, y, N, C, H, W, R, S, P, Q, stride, pad, nhwc, avg):
    o = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if o < N * C * P * Q:
        if nhwc:
            c = o % C
            q = (o // C) % Q
            p = (o // (C * Q)) % P
            n = o // (C * Q * P)
        else:
            q = o % Q
            p = (o // Q) % P
            c = (o // (Q * P)) % C
            n = o // (Q * P * C)
        acc = float32(0.0) if avg else float32(-3.0e38)
        cnt = 0
        for r in range(R):
            h = p * stride + r - pad
            if h >= 0 and h < H:
                for s in range(S):
                    w = q * stride + s - pad
                    if w >= 0 and w < W:
                        v = x[((n * H + h) * W + w) * C + c] if nhwc else x[((n * C + c) * H + h) * W + w]
                        if avg:
                            acc += v
                        elif v > acc:
                            acc = v
                        cnt += 1
        if avg:
            acc = acc / float32(cnt)
        y[o] = acc


def launch(op, block: int = 256) -> Launch:
    return Launch(-(-(op.N * op.C * op.P * op.Q) // block), block)


def decode(o: int, op):
    """(n, c, p, q) of output element ``o`` in the op's layout."""
    C, P, Q = op.C, op.P, op.Q
    if op.layout == "nhwc":
        return o // (C * Q * P), o % C, (o // (C * Q)) % P, (o // C) % Q
    return o // (Q * P * C), (o // (Q * P)) % C, (o // Q) % P, o % Q


def in_index(n, c, h, w, op) -> int:
    if op.layout == "nhwc":
        return ((n * op.H + h) * op.W + w) * op.C + c
    return ((n * op.C + c) * op.H + h) * op.W + w


def thread_accesses(lc: Launch, op) -> dict:
    """Per thread: the window's in-bounds inputs row by row, then its output."""
    total = op.N * op.C * op.P * op.Q
    out = {}
    for b, t in lc.threads():
        o = b[0] * lc.block[0] + t[0]
        acc = []
        if o < total:
            n, c, p, q = decode(o, op)
            for r in range(op.R):
                h = p * op.stride + r - op.padding
                for s in range(op.S):
                    w = q * op.stride + s - op.padding
                    if 0 <= h < op.H and 0 <= w < op.W:
                        acc.append(("ld", "x", in_index(n, c, h, w, op)))
            acc.append(("st", "y", o))
        out[(b, t)] = acc
    return out


def reference(x, op):
    """numpy: the padded windows' max (padding at -inf) or the in-bounds mean."""
    full = (op.N, op.C, op.H, op.W) if op.layout == "nchw" else (op.N, op.H, op.W, op.C)
    t = x.reshape(full).astype(np.float64)
    if op.layout == "nhwc":
        t = t.transpose(0, 3, 1, 2)
    pad = op.padding
    fill = -np.inf if op.mode == "max" else 0.0
    tp = np.pad(t, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    ones = np.pad(np.ones((op.H, op.W)), pad)
    out = np.full((op.N, op.C, op.P, op.Q), fill)
    cnt = np.zeros((op.P, op.Q))
    for r in range(op.R):
        for s in range(op.S):
            win = tp[:, :, r:r + op.stride * op.P:op.stride, s:s + op.stride * op.Q:op.stride]
            cnt += ones[r:r + op.stride * op.P:op.stride, s:s + op.stride * op.Q:op.stride]
            out = np.maximum(out, win) if op.mode == "max" else out + win
    if op.mode == "avg":
        out = out / cnt
    if op.layout == "nhwc":
        out = out.transpose(0, 2, 3, 1)
    return out.ravel()


# --- the program face -------------------------------------------------------------------
# params: grid, block, then N C H W R S P Q stride pad nhwc avg at p[6:18], base_x, base_y.
# A trip of the body is one window position (r, s), row by row.

@njit(cache=True)
def setup(p, bx, by, bz, w, tv, g):
    """tv[:, 1] = o (-1 past the tensor), tv[:, 2:5] = n, c and the window's top row,
    tv[:, 5] its left column; returns R S if some lane has an output, else 0."""
    N, C, P, Q, st, pad, nhwc = p[6], p[7], p[12], p[13], p[14], p[15], p[16]
    total = N * C * P * Q
    any_ = False
    for lane in range(32):
        tx, ty, tz, ok = isa.thread_of(p, w, lane)
        o = bx * p[3] + tx
        tv[g, lane, 0] = ok
        if ok and o < total:
            if nhwc:
                c, q, pp, n = o % C, (o // C) % Q, (o // (C * Q)) % P, o // (C * Q * P)
            else:
                q, pp, c, n = o % Q, (o // Q) % P, (o // (Q * P)) % C, o // (Q * P * C)
            tv[g, lane, 1] = o
            tv[g, lane, 2] = n
            tv[g, lane, 3] = c
            tv[g, lane, 4] = pp * st - pad
            tv[g, lane, 5] = q * st - pad
            any_ = True
        else:
            tv[g, lane, 1] = -1
    return p[10] * p[11] if any_ else 0


@njit(cache=True)
def trips(p, bx, by, bz, w):
    """What ``setup`` returns, without the lanes."""
    total = p[6] * p[7] * p[12] * p[13]
    for lane in range(32):
        tx, ty, tz, ok = isa.thread_of(p, w, lane)
        if ok and bx * p[3] + tx < total:
            return p[10] * p[11]
    return 0


@njit(cache=True)
def lanes(p, tv, g, it, stream, out):
    """0: load the window's position ``it`` (skipped in the padding); 1: store y[o];
    2: the row's mask (its first position, the row inside: the h test and the inner
    loop's set-up); 3: the average's division (avg only)."""
    C, H, W, S, nhwc = p[7], p[8], p[9], p[11], p[16]
    if stream == 3 and p[17] == 0:
        for lane in range(32):
            out[g, lane] = -1
        return 0
    r, s = it // S, it % S
    n_ = 0
    for lane in range(32):
        out[g, lane] = -1
        if tv[g, lane, 1] < 0:
            continue
        if stream == 1:
            out[g, lane] = p[19] + 4 * tv[g, lane, 1]
            n_ += 1
            continue
        if stream == 3:
            out[g, lane] = 0
            n_ += 1
            continue
        h, w = tv[g, lane, 4] + r, tv[g, lane, 5] + s
        if h < 0 or h >= H:
            continue
        if stream == 2:
            if s == 0:
                out[g, lane] = 0
                n_ += 1
            continue
        if w < 0 or w >= W:
            continue
        n, c = tv[g, lane, 2], tv[g, lane, 3]
        idx = ((n * H + h) * W + w) * C + c if nhwc else ((n * C + c) * H + h) * W + w
        out[g, lane] = p[18] + 4 * idx
        n_ += 1
    return n_


def _template():
    # as numba-cuda compiles it for sm_90 (resources suite, SASS fast path): a prologue
    # of about 390 instructions -- the index and exit test, four 64-bit divisions for n,
    # c, p, q, then some 200 of window set-up (its bounds, the strides of both layouts,
    # the flags' branches); per row of the window (stream 2: h inside) about 60 of the
    # row's test and the s loop's set-up; per window position about 41 (the s loop is
    # unrolled by four: 166 instructions for four positions, each one's w test, 64-bit
    # offset, load, compare and select); after the loop the average's division and the
    # store (31). Stream 1 (a lane with an output) guards everything past the exit test
    a = isa.Asm()
    a.block("o", None, alu=6, imad=1, uni=2, bra=1)     # o and its exit test
    for _ in range(4):
        a.div64("o", "o", stream=1)
    a.block("px", "o", alu=75, imad=79, uni=48, bra=8, stream=1, wide=9)  # window set-up
    for _ in range(6):
        a.sfu("px", "px", stream=1)                     # the flags' and count's conversions
    a.body()
    a.block("pr", "px", alu=30, imad=15, uni=10, bra=5, stream=2)       # row head: h test, s loop set-up
    a.block("pw", "pr", alu=13, imad=4, bra=1, stream=1)                # w test, loop counters
    a.block("ix", "pw", alu=10, imad=9, stream=0, wide=2)               # 64-bit offset
    a.ldg("v", 0, "ix")
    a.alu("v", "v", stream=0, n=2)                                       # FSETP, the predicate
    a.fmnmx("acc", "v", "acc", stream=0)                                 # FSEL (or FADD: one pipe)
    a.epilogue()
    a.sfu("d", "acc", stream=3)                                          # the average's division
    a.sfu("d", "d", stream=3)
    a.alu("d", "d", stream=3, n=5)
    a.block("iy", "o", alu=13, imad=4, uni=3, bra=2, stream=1, wide=1)
    a.stg(1, "acc", "iy")
    a.bra("iy", stream=1)            # EXIT
    return a.template()


TEMPLATE = _template()


def program(op, block: int = 256) -> isa.Program:
    """The engine's face of one pooling layer."""
    lc = launch(op, block)
    xn, yn = op.N * op.C * op.H * op.W, op.N * op.C * op.P * op.Q
    bases = isa.layout_arrays([("x", xn), ("y", yn)])
    t, pro, body, nregs = TEMPLATE
    p, names = isa.params(lc, N=op.N, C=op.C, H=op.H, W=op.W, R=op.R, S=op.S, P=op.P, Q=op.Q,
                          stride=op.stride, pad=op.padding, nhwc=int(op.layout == "nhwc"),
                          avg=int(op.mode == "avg"), base_x=bases["x"], base_y=bases["y"])
    return isa.Program(
        name=NAME, face="pool", launch=lc, params=p, template=t, pro_end=pro, body_end=body,
        n_regs=nregs,
        streams=(isa.Stream("x", "global", "x"), isa.Stream("y", "global", "y"),
                 isa.Stream("row", "mask"), isa.Stream("avg", "mask")),
        arrays=(("x", bases["x"], xn), ("y", bases["y"], yn)), regs_per_thread=REGS_ESTIMATE,
        smem_per_block=0, resources_source="estimate", flops=op.flops(), min_bytes=op.min_bytes(),
        label=op.name or op.describe(),
        # the window's positions differ in which fall in the padding: the work repeats
        # only with the whole window (no trip sampling)
        trip_period=op.R * op.S, param_names=names)


# --- the registry entry -------------------------------------------------------------------

build = one_launch(program, "op")     # one launch, blocks of 256 unless given


def device(problem) -> Device:
    op = problem["op"]
    bl = check_block(None, problem)
    lc = launch(op, bl)
    xn, yn = op.N * op.C * op.H * op.W, op.N * op.C * op.P * op.Q
    a_ = (op.N, op.C, op.H, op.W, op.R, op.S, op.P, op.Q, op.stride, op.padding,
          int(op.layout == "nhwc"), int(op.mode == "avg"))
    return Device(
        inputs=lambda rng: {"x": rng.standard_normal(xn, dtype=np.float32)},
        outputs={"y": (yn,)},
        calls=lambda a: [(pool_kernel, lc.grid[0], bl, (a["x"], a["y"], *a_))],
        reference=lambda i: {"y": reference(i["x"], op)},
        kernels=(("pool2d", pool_kernel),), shapes=((lc.grid, lc.block),))


def tiny(layout, mode, global_=False):
    from workloads.ir import Pool2d
    if global_:
        return Pool2d(name="pool", N=2, C=3, H=3, W=4, R=3, S=4, mode=mode, layout=layout)
    return Pool2d(name="pool", N=1, C=3, H=5, W=6, R=3, S=3, stride=2, padding=1, mode=mode,
                  layout=layout)


SPEC = KernelSpec(
    name=NAME, summary="max or average pooling, one thread per output, padding skipped",
    args=(Arg("op", "op", "the layer (workloads.ir.Pool2d: its window, stride, padding, mode "
                          "and layout)", required=True, choices=("pool2d",)),
          Arg("block", "dims", "threads per block (default 256)")),
    build=build, op=lambda p: p["op"], device=device,
    accesses=lambda p: (thread_accesses(launch(p["op"], check_block(None, p)), p["op"]),),
    variants=({"op": tiny("nchw", "max"), "block": (64,)},
              {"op": tiny("nhwc", "max"), "block": (64,)},
              {"op": tiny("nchw", "avg", True), "block": (32,)},
              {"op": tiny("nhwc", "avg", True), "block": (32,)}),
    group=lambda p: ("pool2d", p["op"].N, p["op"].C, p["op"].H, p["op"].W, p["op"].R,
                     p["op"].S, p["op"].stride, p["op"].padding, p["op"].mode))

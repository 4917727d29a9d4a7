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

from simulator.arguments import show

from .. import isa
from .launch import Launch
from .spec import Arg, Device, KernelSpec

NAME = "conv-direct"
LAYOUTS = ("nchw", "nhwc")
REGS_ESTIMATE = 32  # stated estimate for targets whose compilation was not read
REGS_COMPILED = {(9, 0): {"nchw": 46, "nhwc": 48}}  # resources suite on the H100
TAPS_PER_TRIP = {"nchw": 1, "nhwc": 4}  # NHWC: the c loop unrolled by four (sm_90 SASS)


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
        raise ValueError(f"layout = {show(layout)}: allowed: {', '.join(LAYOUTS)}")
    return conv_nchw if layout == "nchw" else conv_nhwc


def launch(op, block: int = 256) -> Launch:
    outputs = op.N * op.K * op.P * op.Q
    return Launch(-(-outputs // block), block)


ARG_NAMES = ("N", "C", "H", "W", "K", "R", "S", "P", "Q", "stride", "pad")


def args(op):
    """The scalar arguments after (x, w, y), named by ``ARG_NAMES``."""
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
def _mask(p, tv, g, it, stream, out):
    """The loop-overhead streams (5 and up), active on the trips where that overhead runs.
    NCHW (a trip is one tap c, r, s; s loop unrolled by four, remainder taps after):
    5 a new c; 6 a new r; 7 a new r, h inside; 8 the same when S >= 4 (the unrolled loop's
    set-up); 9 a tap of the unrolled part, h inside; 10, 11, 12 the remainder's first,
    second, third tap, h inside. NHWC (a trip is four c taps): 5 a new r; 6 a new (r, s);
    7 a new (r, s) inside the input."""
    C, H, W, R, S, nhwc = p[7], p[8], p[9], p[11], p[12], p[17]
    t = it * p[21]
    chk = 0
    if nhwc:
        c, s, r = t % C, (t // C) % S, t // (C * S)
        if stream == 5:
            ok = c == 0 and s == 0
        elif stream == 6:
            ok = c == 0
        else:
            ok = c == 0
            chk = 2
    else:
        s, r = t % S, (t // S) % R
        u = 4 * (S // 4)
        chk = 1
        if stream == 5:
            ok = r == 0 and s == 0
            chk = 0
        elif stream == 6:
            ok = s == 0
            chk = 0
        elif stream == 7:
            ok = s == 0
        elif stream == 8:
            ok = s == 0 and S >= 4
        elif stream == 9:
            ok = s < u
        else:
            ok = s == u + stream - 10
    n_ = 0
    for lane in range(32):
        out[g, lane] = -1
        if not ok or not tv[g, lane, 1]:
            continue
        h, ww = tv[g, lane, 4] + r, tv[g, lane, 5] + s
        if chk >= 1 and (h < 0 or h >= H):
            continue
        if chk == 2 and (ww < 0 or ww >= W):
            continue
        out[g, lane] = 0
        n_ += 1
    return n_


@njit(cache=True)
def trips(p, bx, by, bz, w):
    """What ``setup`` returns, without storing the lanes: the trips if some thread of the
    warp has an output (the first one that exists usually has)."""
    total = p[6] * p[10] * p[13] * p[14]
    for lane in range(32):
        tx, ty, tz, ok = isa.thread_of(p, w, lane)
        if ok and bx * p[3] + tx < total:
            return (p[7] * p[11] * p[12] + p[21] - 1) // p[21]
    return 0


@njit(cache=True)
def lanes(p, tv, g, it, stream, out):
    """0, 3, 13, 15: load x at the trip's first, second, third, fourth tap; 1, 4, 14, 16:
    load the weight (all skipped in the padding); 2: store y[o]."""
    if stream >= 5 and stream <= 12:
        return _mask(p, tv, g, it, stream, out)
    C, H, W, K, R, S, nhwc = p[7], p[8], p[9], p[10], p[11], p[12], p[17]
    tap = 0
    if stream == 3 or stream == 4:
        tap = 1
    elif stream == 13 or stream == 14:
        tap = 2
    elif stream >= 15:
        tap = 3
    t = it * p[21] + tap
    if stream != 2 and t >= C * R * S:
        for lane in range(32):
            out[g, lane] = -1
        return 0
    if stream != 2:
        stream = 0 if stream in (0, 3, 13, 15) else 1
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


def _template(layout):
    # as numba-cuda compiles it for sm_90 (resources suite, SASS): the prologue's six 64-bit
    # divisions for n, k, p, q; then the loop nest with its per-loop overheads as streams
    # 5 and up (see _mask) and the taps' loads skipped in the padding
    # (stream 2, the lanes with an output, guards everything past the exit test)
    a = isa.Asm()
    a.block("o", None, alu=16, imad=6, uni=4, bra=1)    # o and its exit test
    for _ in range(6):
        a.div64("o", "o", stream=2)
    if layout == "nchw":
        a.block("px", "o", imad=36, uni=52, bra=5, stream=2, wide=6)  # pointers, the c loop's set-up
    else:
        a.block("px", "o", alu=27, imad=30, uni=31, bra=3, stream=2, wide=8)
    a.body()
    if layout == "nchw":
        a.block("pc", "px", alu=18, imad=10, uni=34, bra=2, stream=5, wide=2)  # c loop head, tail
        a.block("pr", "pc", alu=8, imad=3, uni=18, bra=2, stream=6)    # r head, h test, tail
        a.block("ps", "pr", alu=2, imad=13, uni=12, bra=1, stream=7, wide=2)   # s loop set-up
        a.block("ps", "ps", alu=1, imad=6, uni=9, stream=8)            # unrolled part's set-up
        a.block("h", "ps", alu=15, imad=3, bra=1, stream=9)            # w test (unrolled tap)
        a.block("h", "ps", alu=20, imad=1, uni=6, bra=3, stream=10)    # remainder taps' tests
        a.block("h", "ps", alu=9, imad=3, uni=6, bra=2, stream=11)
        a.block("h", "ps", alu=5, imad=1, uni=4, bra=1, stream=12)
        a.block("ix", "h", alu=10, imad=7, stream=0, wide=2)                  # 64-bit offsets of x, w
        a.ldg("xv", 0, "ix")
        a.ldg("wv", 1, "ix")
        a.ffma("acc", "xv", "wv", "acc", stream=0)
    else:
        a.block("pr", "px", alu=12, imad=7, uni=15, bra=2, stream=5)   # r loop head, tail
        a.block("ps", "pr", alu=14, imad=5, uni=1, bra=2, stream=6)    # s head, w test, tail
        a.block("ps", "ps", alu=30, imad=11, uni=28, bra=2, stream=7, wide=3)  # c loop set-up
        # four taps of the c loop (unrolled by four): 161 instructions, half of them uniform.
        # The first two taps' addresses, their loads, then the last two taps' addresses
        # (while those loads are in flight), the first two FMAs, the last two taps' loads,
        # the loop counters, their FMAs
        a.block("ia", "ps", alu=10, imad=15, uni=20, stream=0, wide=6)
        a.ldg("x0", 0, "ia")
        a.ldg("w0", 1, "ia")
        a.ldg("x1", 3, "ia")
        a.ldg("w1", 4, "ia")
        a.block("ib", "ps", alu=12, imad=20, uni=22, stream=13, wide=6)
        a.ffma("acc", "x0", "w0", "acc", stream=0)
        a.ffma("acc", "x1", "w1", "acc", stream=3)
        a.ldg("x2", 13, "ib")
        a.ldg("w2", 14, "ib")
        a.ldg("x3", 15, "ib")
        a.ldg("w3", 16, "ib")
        a.block("ic", "ps", alu=8, imad=9, uni=32)
        a.ffma("acc", "x2", "w2", "acc", stream=13)
        a.ffma("acc", "x3", "w3", "acc", stream=15)
        a.bra("ic")
    a.epilogue()
    a.block("iy", "o", alu=22, imad=16, uni=5, stream=2, wide=3)
    a.stg(2, "acc", "iy")
    a.bra("iy", stream=2)            # EXIT
    return a.template()


TEMPLATES = {lay: _template(lay) for lay in LAYOUTS}


def program(op, block: int = 256) -> isa.Program:
    if op.groups != 1:
        raise ValueError(f"conv-direct needs groups = 1, got {op.groups}")
    lc = launch(op, block)
    xs, wsz, ys = (o.elements for o in op.operands())
    bases = isa.layout_arrays([("x", xs), ("w", wsz), ("y", ys)])
    t, pro, body, nregs = TEMPLATES[op.layout]
    p, names = isa.params(lc, **dict(zip(ARG_NAMES, args(op))), layout=LAYOUTS.index(op.layout),
                          base_x=bases["x"], base_w=bases["w"], base_y=bases["y"],
                          taps_per_trip=TAPS_PER_TRIP[op.layout])
    return isa.Program(
        name=NAME, face="conv_direct", launch=lc, params=p, template=t, pro_end=pro, body_end=body,
        n_regs=nregs,
        streams=(isa.Stream("x", "global", "x"), isa.Stream("w", "global", "w"),
                 isa.Stream("y", "global", "y"),
                 isa.Stream("x+1", "global", "x"), isa.Stream("w+1", "global", "w"),
                 *(isa.Stream(f"loop{k}", "mask") for k in range(5, 13)),
                 isa.Stream("x+2", "global", "x"), isa.Stream("w+2", "global", "w"),
                 isa.Stream("x+3", "global", "x"), isa.Stream("w+3", "global", "w")),
        arrays=tuple((n, bases[n], e) for n, e in (("x", xs), ("w", wsz), ("y", ys))),
        regs_per_thread=REGS_ESTIMATE, smem_per_block=0, resources_source="estimate",
        flops=op.flops(), min_bytes=op.min_bytes(),
        label=op.name or op.describe(),
        # the per-trip work repeats with each c (NCHW: its R S taps, padding skipped alike
        # for every c) or, NHWC (four taps a trip), with each (r, s) where no tap falls
        # in the padding; with padding, the taps a thread skips differ from one (r, s) to
        # the next, so the work repeats only with the whole window (no trip sampling)
        trip_period=op.R * op.S if op.layout == "nchw" else
        (1 if op.R * op.S == 1 else max(1, op.C // 4) * (op.R * op.S if op.padding else 1)),
        # NHWC with padding: each tap's channel loop (C / 4 trips, four channels a trip)
        # runs alike whatever the tap, so the sampler may cut it tap by tap
        inner_period=(op.C // 4 if op.layout == "nhwc" and op.padding and op.R * op.S > 1
                      and op.C % 4 == 0 else 0),
        param_names=names)


# --- the registry entry -------------------------------------------------------------------

DEFAULT_BLOCK = 256


def check_block(hw, problem) -> int:
    """The block (threads, default 256), within the hardware's limit."""
    b = problem["block"][0] if problem["block"] else DEFAULT_BLOCK
    if hw is not None and b > hw.sm.max_threads_per_block:
        raise ValueError(f"block = {b}: exceeds {hw.name}'s {hw.sm.max_threads_per_block} "
                         "threads per block")
    return b


def one_launch(program, arg: str):
    """The ``build`` of a kernel of one launch, a thread an element: ``program(problem[arg],
    block)`` with the block checked against the hardware (default 256)."""
    def build(hw, problem) -> tuple:
        prog = program(problem[arg], check_block(hw, problem))
        prog.launch.check(hw)
        return (prog,)
    return build


def build(hw, problem) -> tuple:
    """One thread per output element, blocks of 256 (unless given)."""
    return (program(problem["conv"], check_block(hw, problem)),)


def reference_at(x, w, op, idx):
    """numpy reference outputs at flat output indices ``idx`` (in the op's output layout)."""
    out = np.empty(len(idx))
    for j, o in enumerate(idx):
        if op.layout == "nchw":
            q, p, k, n = o % op.Q, (o // op.Q) % op.P, (o // (op.Q * op.P)) % op.K, o // (op.Q * op.P * op.K)
        else:
            k, q, p, n = o % op.K, (o // op.K) % op.Q, (o // (op.K * op.Q)) % op.P, o // (op.K * op.Q * op.P)
        acc = 0.0
        for r in range(op.R):
            h = p * op.stride + r - op.padding
            if not 0 <= h < op.H:
                continue
            for s in range(op.S):
                ww = q * op.stride + s - op.padding
                if not 0 <= ww < op.W:
                    continue
                if op.layout == "nchw":
                    acc += float(np.dot(x[n, :, h, ww].astype(np.float64), w[k, :, r, s]))
                else:
                    acc += float(np.dot(x[n, h, ww, :].astype(np.float64), w[r, s, :, k]))
        out[j] = acc
    return out


def conv_inputs(op):
    """Random activations and weights in the op's layout."""
    xs, wsz, _ = (o.shape for o in op.operands())
    return lambda rng: {"x": rng.standard_normal(xs, dtype=np.float32),
                        "w": rng.standard_normal(wsz, dtype=np.float32)}


def device(problem) -> Device:
    """``reference(inputs, idx)`` gives y at flat indices ``idx`` (all when None): a
    full numpy convolution of a large layer takes long, so the suites check a sample."""
    op = problem["conv"]
    b = check_block(None, problem)
    lc, k, a = launch(op, b), kernel(op.layout), args(op)
    ys = op.operands()[2].shape
    return Device(
        inputs=conv_inputs(op), outputs={"y": ys},
        calls=lambda arr: [(k, lc.grid[0], b, (arr["x"], arr["w"], arr["y"], *a))],
        reference=lambda i, idx=None: {"y": reference_at(
            i["x"], i["w"], op, np.arange(int(np.prod(ys))) if idx is None else idx)},
        kernels=((f"conv-direct {op.layout}", k),), shapes=((lc.grid, lc.block),))


def _op(problem):
    return problem["conv"]


def conv_from_record(r):
    """The Conv2d a conv suite record names."""
    from workloads.ir import Conv2d
    c = r["conv"]
    return Conv2d(name=r["layer"], N=c["n"], C=c["c"], H=c["h"], W=c["w"], K=c["k"], R=c["r"],
                  S=c["s"], stride=c["stride"], padding=c["pad"], layout=r["layout"])


def conv_group(problem):
    """Convolutions of one shape rank together, whatever their layout and algorithm."""
    c = problem["conv"]
    return ("conv", c.N, c.C, c.H, c.W, c.K, c.R, c.S, c.stride, c.padding)


def tiny(layout):
    from workloads.ir import Conv2d
    return Conv2d(name="conv", N=1, C=2, H=4, W=4, K=2, R=3, S=3, padding=1, layout=layout)


SPEC = KernelSpec(
    name=NAME, summary="one thread per output element, every tap read from global memory",
    args=(Arg("conv", "conv", "a convolution (workloads.ir.Conv2d; its layout is the tensors')",
              required=True),
          Arg("block", "dims", "threads per block (default 256)")),
    build=build, op=_op, device=device,
    accesses=lambda p: (thread_accesses(launch(p["conv"], check_block(None, p)), p["conv"]),),
    variants=tuple({"conv": tiny(lay), "block": (64,)} for lay in LAYOUTS),
    from_record=lambda r: {"conv": conv_from_record(r)},
    group=conv_group)

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

import numpy as np
from numba import cuda, njit  # importing needs no GPU; kernels compile on first launch

from simulator.arguments import show

from .. import isa
from . import gemm_tiled
from .conv_direct import LAYOUTS, check_block, conv_from_record, conv_group, conv_inputs, reference_at, tiny
from .launch import Launch
from .spec import Arg, Device, KernelSpec

NAME = "conv-im2col"
REGS_ESTIMATE = 24  # stated estimate until read from the compiled kernel
REGS_COMPILED = {(9, 0): 34}  # registers per thread, resources suite on the H100


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
        raise ValueError(f"layout = {show(layout)}: allowed: nchw, nhwc")
    return im2col_nchw if layout == "nchw" else im2col_nhwc


IM2COL_ARG_NAMES = ("N", "C", "H", "W", "R", "S", "P", "Q", "stride", "pad")


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


# --- the program face -------------------------------------------------------------------
# im2col params: grid, block, then N C H W R S P Q stride pad layout at p[6:17],
# base_x, base_col at p[17:19]. No loop: one element per thread.

@njit(cache=True)
def setup(p, bx, by, bz, w, tv, g):
    """tv[:, 1] = the x byte address the thread reads (-1: padding or none), tv[:, 2] =
    its col byte address (-1: no element). No loop: returns 0."""
    N, C, H, W, R, S, P, Q, st, pad, nhwc = (p[6], p[7], p[8], p[9], p[10], p[11], p[12],
                                             p[13], p[14], p[15], p[16])
    Kc = C * R * S
    total = N * P * Q * Kc
    for lane in range(32):
        tx, ty, tz, ok = isa.thread_of(p, w, lane)
        e = bx * p[3] + tx
        tv[g, lane, 0] = ok
        tv[g, lane, 1] = -1
        tv[g, lane, 2] = -1
        if not ok or e >= total:
            continue
        tv[g, lane, 2] = p[18] + 4 * e
        m, kk = e // Kc, e % Kc
        q, pp, n = m % Q, (m // Q) % P, m // (Q * P)
        if nhwc:
            c, s, r = kk % C, (kk // C) % S, kk // (C * S)
        else:
            s, r, c = kk % S, (kk // S) % R, kk // (S * R)
        h, ww = pp * st + r - pad, q * st + s - pad
        if 0 <= h < H and 0 <= ww < W:
            idx = ((n * H + h) * W + ww) * C + c if nhwc else ((n * C + c) * H + h) * W + ww
            tv[g, lane, 1] = p[17] + 4 * idx
    return 0


@njit(cache=True)
def trips(p, bx, by, bz, w):
    """What ``setup`` returns, without the lanes: no loop."""
    return 0

@njit(cache=True)
def lanes(p, tv, g, it, stream, out):
    """0: load x at the element's window tap (skipped in the padding); 1: store col[e]."""
    n_ = 0
    for lane in range(32):
        out[g, lane] = tv[g, lane, 1 + stream]
        if out[g, lane] >= 0:
            n_ += 1
    return n_


def _template():
    # as numba-cuda compiles it for sm_90 (resources suite, SASS fast path: 590 and 591
    # instructions for NCHW and NHWC input): the index and its exit test, then ten 64-bit
    # divisions and remainders by runtime sizes (m, kk and the window position), the
    # bounds test, the load's address and the load (skipped in the padding), the store
    a = isa.Asm()
    a.alu("e", n=7)                  # S2R tid, ctaid, compare
    a.uni("u", n=14)                 # the element count N P Q Kc
    a.imad("e", "u", n=13, wide=4)           # e = blockIdx.x * blockDim.x + threadIdx.x, 64-bit
    a.bra("e")                       # @!P0 EXIT
    a.alu("m", "e", n=15)            # operands of the first division
    a.bra("m", n=3)
    for _ in range(10):
        a.div64("m", "m")
    a.block("h", "m", alu=14, imad=7, uni=6, bra=1, wide=2)             # h, w and their bounds
    a.block("ix", "h", alu=24, imad=13, uni=5, stream=0, wide=5)        # the input element's address
    a.ldg("v", 0, "ix")
    a.block("ic", "e", alu=11, imad=6, uni=3, wide=1)                   # the column element's address
    a.stg(1, "v", "ic")
    a.bra("ic")                      # EXIT
    return a.template()


TEMPLATE = _template()


def programs(op, block: int = 256, tile: int = 16) -> tuple:
    """(im2col program, gemm-tiled program) sharing the column matrix's address."""
    _check(op)
    l1, _ = launches(op, block, tile)
    M, N, Kc = gemm_dims(op)
    x, wt, y = op.operands()
    bases = isa.layout_arrays([("x", x.elements), ("col", M * Kc), ("wmat", Kc * N), ("y", M * N)])
    t, pro, body, nregs = TEMPLATE
    p, names = isa.params(l1, **dict(zip(IM2COL_ARG_NAMES, im2col_args(op))),
                          layout=op.layout == "nhwc", base_x=bases["x"], base_col=bases["col"])
    first = isa.Program(
        name=NAME, face="conv_im2col", launch=l1, params=p, template=t, pro_end=pro, body_end=body,
        n_regs=nregs, streams=(isa.Stream("x", "global", "x"), isa.Stream("col", "global", "col")),
        arrays=(("x", bases["x"], x.elements), ("col", bases["col"], M * Kc)),
        regs_per_thread=REGS_ESTIMATE, smem_per_block=0, resources_source="estimate", flops=0,
        min_bytes=x.touched_bytes + 4 * M * Kc,
        label=f"im2col of {op.name or op.describe()}", param_names=names)
    second = gemm_tiled.program(M, N, Kc, tile, label=f"GEMM of {op.name or op.describe()}",
                                bases={"A": bases["col"], "B": bases["wmat"], "C": bases["y"]},
                                min_bytes=4 * (Kc * N + M * N))  # col may be read from L2
    return first, second


# --- the registry entry -------------------------------------------------------------------

def build(hw, problem) -> tuple:
    """The im2col launch (blocks of 256 unless given), then gemm-tiled (T = 16 unless
    given) on the column matrix it left."""
    return programs(problem["conv"], check_block(hw, problem), problem["tile"])


def device(problem) -> Device:
    """``reference(inputs, idx)``: y, the (n p q) x k GEMM output, at flat indices idx."""
    op, T = problem["conv"], problem["tile"]
    b = check_block(None, problem)
    l1, l2 = launches(op, b, T)
    M, N, Kc = gemm_dims(op)
    ik, ia, gk = im2col_kernel(op.layout), im2col_args(op), gemm_tiled.kernel(T)
    make = conv_inputs(op)

    def inputs(rng):
        i = make(rng)
        w = i["w"]
        wm = w.reshape(N, Kc).T if op.layout == "nchw" else w.reshape(Kc, N)
        return {**i, "wmat": np.ascontiguousarray(wm)}

    def calls(a):
        return [(ik, l1.grid[0], b, (a["x"], a["col"], *ia)),
                (gk, l2.grid[:2], l2.block[:2], (a["col"], a["wmat"], a["y"], M, N, Kc))]

    def reference(i, idx=None):
        e = np.arange(M * N) if idx is None else np.asarray(idx)
        m, k = e // N, e % N                       # y is (n p q) x k: NHWC order
        if op.layout == "nhwc":
            o = e
        else:
            q, pp, n = m % op.Q, (m // op.Q) % op.P, m // (op.Q * op.P)
            o = ((n * op.K + k) * op.P + pp) * op.Q + q
        return {"y": reference_at(i["x"], i["w"], op, o)}
    return Device(inputs=inputs, outputs={"col": (M, Kc), "y": (M, N)}, calls=calls,
                  reference=reference,
                  kernels=((f"im2col {op.layout}", ik), (f"gemm-tiled {T}", gk)),
                  shapes=((l1.grid, l1.block), (l2.grid, l2.block)))


def _accesses(problem):
    op = problem["conv"]
    l1, l2 = launches(op, check_block(None, problem), problem["tile"])
    M, N, Kc = gemm_dims(op)
    return im2col_accesses(l1, op), gemm_tiled.thread_accesses(l2, M, N, Kc, problem["tile"])


SPEC = KernelSpec(
    name=NAME, summary="im2col into a column matrix, then gemm-tiled on it (two launches)",
    args=(Arg("conv", "conv", "a convolution (workloads.ir.Conv2d; its layout is the tensors')",
              required=True),
          Arg("block", "dims", "threads per block of the im2col launch (default 256)"),
          Arg("tile", "choice", "T of the GEMM launch (default 16)", default=16,
              choices=gemm_tiled.TILES)),
    build=build, op=lambda p: p["conv"], device=device, accesses=_accesses,
    variants=tuple({"conv": tiny(lay), "block": (64,)} for lay in LAYOUTS),
    from_record=lambda r: {"conv": conv_from_record(r)},
    group=conv_group)


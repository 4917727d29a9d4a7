"""``layout-transform``: a convolution's input activations rewritten into its layout.

The kernel a plan inserts where one layer leaves its output in NCHW and the next reads
NHWC (or the other way): the N x C x H x W float32 tensor of the convolution's input,
copied from the other layout into ``conv.layout``. One thread per element on a 1-D grid
(any block, default 256), thread ``o`` writing output element ``o`` in the target
layout's memory order -- stores coalesced, loads strided: to NHWC, a warp's 32 lanes
read 32 channels ``H x W`` elements apart; to NCHW, 32 widths ``C`` elements apart (the
naive transpose; no shared-memory tiling). 8 bytes moved per element, no FLOPs.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, njit  # importing needs no GPU; kernels compile on first launch

from simulator.arguments import show

from .. import isa
from .conv_direct import check_block, one_launch  # the same default block (256) and limit
from .launch import Launch
from .spec import Arg, Device, KernelSpec

NAME = "layout-transform"
LAYOUTS = ("nchw", "nhwc")
REGS_ESTIMATE = 16  # stated estimate for targets whose compilation was not read
REGS_COMPILED = {(9, 0): 30}  # registers per thread, resources suite on the H100 (both directions)
DEFAULT_BLOCK = 256


@cuda.jit
def to_nhwc(x, y, N, C, H, W):
    """y (N, H, W, C) = x (N, C, H, W), both flat."""
    o = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if o < N * C * H * W:
        c = o % C
        w = (o // C) % W
        h = (o // (C * W)) % H
        n = o // (C * W * H)
        y[o] = x[((n * C + c) * H + h) * W + w]


@cuda.jit
def to_nchw(x, y, N, C, H, W):
    """y (N, C, H, W) = x (N, H, W, C), both flat."""
    o = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if o < N * C * H * W:
        w = o % W
        h = (o // W) % H
        c = (o // (W * H)) % C
        n = o // (W * H * C)
        y[o] = x[((n * H + h) * W + w) * C + c]


def kernel(layout: str):
    """The kernel writing ``layout`` (the target)."""
    return to_nhwc if layout == "nhwc" else to_nchw


def source_index(o: int, N: int, C: int, H: int, W: int, target: str) -> int:
    """Element ``o`` of the target layout: its flat index in the source layout."""
    if target == "nhwc":
        c, w, h, n = o % C, (o // C) % W, (o // (C * W)) % H, o // (C * W * H)
        return ((n * C + c) * H + h) * W + w
    w, h, c, n = o % W, (o // W) % H, (o // (W * H)) % C, o // (W * H * C)
    return ((n * H + h) * W + w) * C + c


def launch(elements: int, block: int = DEFAULT_BLOCK) -> Launch:
    return Launch(-(-elements // block), block)


def thread_accesses(lc: Launch, op) -> dict:
    """Per thread: the source element it loads from x and the element it stores to y."""
    N, C, H, W = op.N, op.C, op.H, op.W
    total = N * C * H * W
    out = {}
    for b, t in lc.threads():
        o = b[0] * lc.block[0] + t[0]
        out[(b, t)] = ([("ld", "x", source_index(o, N, C, H, W, op.layout)), ("st", "y", o)]
                       if o < total else [])
    return out


# --- the program face -------------------------------------------------------------------
# params: grid, block, then N, C, H, W, to_nhwc, base_x, base_y

@njit(cache=True)
def setup(p, bx, by, bz, w, tv, g):
    """tv[:, 1] = the element o the lane writes (-1 past the tensor), tv[:, 2] its source
    index. No loop."""
    N, C, H, W, nhwc = p[6], p[7], p[8], p[9], p[10]
    total = N * C * H * W
    for lane in range(32):
        tx, ty, tz, ok = isa.thread_of(p, w, lane)
        o = bx * p[3] + tx
        tv[g, lane, 0] = ok
        if ok and o < total:
            tv[g, lane, 1] = o
            if nhwc:
                c, ww, h, n = o % C, (o // C) % W, (o // (C * W)) % H, o // (C * W * H)
                tv[g, lane, 2] = ((n * C + c) * H + h) * W + ww
            else:
                ww, h, c, n = o % W, (o // W) % H, (o // (W * H)) % C, o // (W * H * C)
                tv[g, lane, 2] = ((n * H + h) * W + ww) * C + c
        else:
            tv[g, lane, 1] = -1
            tv[g, lane, 2] = -1
    return 0


@njit(cache=True)
def trips(p, bx, by, bz, w):
    """What ``setup`` returns, without the lanes: no loop."""
    return 0


@njit(cache=True)
def lanes(p, tv, g, it, stream, out):
    """0: load x at the source index; 1: store y at o (lanes inside the tensor)."""
    n_ = 0
    for lane in range(32):
        if tv[g, lane, 1] < 0:
            out[g, lane] = -1
            continue
        if stream == 0:
            out[g, lane] = p[11] + 4 * tv[g, lane, 2]
        else:
            out[g, lane] = p[12] + 4 * tv[g, lane, 1]
        n_ += 1
    return n_


def _template():
    # as numba-cuda compiles it for sm_90: 356 warp instructions a warp with an element
    # (Nsight Compute, data/diagnostics/h100-sxm/ncu_layout_transform.json, both
    # directions and every size alike): the index and exit test; six 64-bit divisions
    # and remainders (o % C, o // C, % W, // (C W), % H, // (C W H) for NHWC; the same
    # by W, H, C for NCHW) at numba's floor-division fast path each; the source offset,
    # the load and the store
    a = isa.Asm()
    a.block("o", None, alu=8, imad=4, uni=3, bra=1)     # o = blockIdx * blockDim + tid; o < size
    for _ in range(6):
        a.div64("o", "o", stream=1)
    a.block("ix", "o", alu=42, imad=24, uni=6, bra=1, stream=1, wide=4)
    a.ldg("v", 0, "ix")
    a.stg(1, "v", "ix")
    a.bra("v", stream=1)            # EXIT
    return a.template()


TEMPLATE = _template()


def program(op, block: int = DEFAULT_BLOCK) -> isa.Program:
    """The engine's face: ``op``'s input tensor (N C H W) rewritten into ``op.layout``."""
    if op.layout not in LAYOUTS:
        raise ValueError(f"layout = {show(op.layout)}: allowed: {', '.join(LAYOUTS)}")
    n = op.N * op.C * op.H * op.W
    lc = launch(n, block)
    bases = isa.layout_arrays([("x", n), ("y", n)])
    t, pro, body, nregs = TEMPLATE
    p, names = isa.params(lc, N=op.N, C=op.C, H=op.H, W=op.W, to_nhwc=int(op.layout == "nhwc"),
                          base_x=bases["x"], base_y=bases["y"])
    src = "nchw" if op.layout == "nhwc" else "nhwc"
    return isa.Program(
        name=NAME, face="layout_transform", launch=lc, params=p, template=t, pro_end=pro,
        body_end=body, n_regs=nregs,
        streams=(isa.Stream("x", "global", "x"), isa.Stream("y", "global", "y")),
        arrays=(("x", bases["x"], n), ("y", bases["y"], n)), regs_per_thread=REGS_ESTIMATE,
        smem_per_block=0, resources_source="estimate", flops=0, min_bytes=8 * n,
        label=f"{op.N}x{op.C}x{op.H}x{op.W} {src} -> {op.layout}", param_names=names)


# --- the registry entry -------------------------------------------------------------------

build = one_launch(program, "conv")   # one launch, blocks of 256 unless given


def op(problem):
    """The copy it is: N C H W elements read once and written once, no FLOPs."""
    from workloads.ir import Elementwise
    c = problem["conv"]
    src = "nchw" if c.layout == "nhwc" else "nhwc"
    return Elementwise(name=f"{c.name or 'conv'} input {c.N}x{c.C}x{c.H}x{c.W} {src}->{c.layout}",
                       n=c.N * c.C * c.H * c.W, op="copy")


def device(problem) -> Device:
    c = problem["conv"]
    b = check_block(None, problem)
    n = c.N * c.C * c.H * c.W
    lc, k = launch(n, b), kernel(c.layout)
    src_shape = (c.N, c.C, c.H, c.W) if c.layout == "nhwc" else (c.N, c.H, c.W, c.C)
    perm = (0, 2, 3, 1) if c.layout == "nhwc" else (0, 3, 1, 2)
    return Device(
        inputs=lambda rng: {"x": rng.standard_normal(n, dtype=np.float32)},
        outputs={"y": (n,)},
        calls=lambda a: [(k, lc.grid[0], b, (a["x"], a["y"], c.N, c.C, c.H, c.W))],
        reference=lambda i: {"y": np.transpose(i["x"].reshape(src_shape), perm)
                             .astype(np.float64).ravel()},
        kernels=((f"layout-transform to {c.layout}", k),), shapes=((lc.grid, lc.block),))


def tiny(layout):
    from workloads.ir import Conv2d
    return Conv2d(name="conv", N=2, C=3, H=4, W=5, K=2, R=3, S=3, padding=1, layout=layout)


SPEC = KernelSpec(
    name=NAME, summary="a convolution's input rewritten into its layout (naive transpose)",
    args=(Arg("conv", "conv", "the convolution whose input it lays out (into the conv's "
                              "layout, from the other)", required=True),
          Arg("block", "dims", "threads per block (default 256)")),
    build=build, op=op, device=device,
    accesses=lambda p: (thread_accesses(launch(p["conv"].N * p["conv"].C * p["conv"].H
                                               * p["conv"].W, check_block(None, p)), p["conv"]),),
    variants=tuple({"conv": tiny(lay), "block": (64,)} for lay in LAYOUTS),
    group=lambda p: ("layout-transform", p["conv"].N, p["conv"].C, p["conv"].H, p["conv"].W))

"""``batchnorm``: batch norm at inference as roofsim lowers it -- the per-channel shift
``y = x + b[c]``, with the residual add ``+ r`` and the ReLU where the layer has them
(``workloads.ir.BatchNorm``: the scale is folded into the convolution before it).

One thread per element on a 1-D grid (any block, default 256): thread ``i`` reads
``x[i]``, the shift of its channel (``i % C`` in NHWC; ``(i // (H W)) % C`` in NCHW),
``r[i]`` with a residual, and writes ``y[i]``: coalesced loads and stores, the shift
vector from the cache.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, njit  # importing needs no GPU; kernels compile on first launch

from .. import isa
from .conv_direct import check_block, one_launch  # the same default block (256) and limit
from .launch import Launch
from .spec import Arg, Device, KernelSpec

NAME = "batchnorm"
LAYOUTS = ("nchw", "nhwc")
REGS_ESTIMATE = 16  # stated estimate for targets whose compilation was not read
REGS_COMPILED = {(9, 0): 20}  # registers per thread, resources suite on the H100


@cuda.jit
def shift_kernel(x, b, r, y, total, C, HW, nhwc, residual, relu):
    """y = x + b[c] (+ r) (ReLU), flat tensors; ``r`` is not read without ``residual``."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < total:
        c = i % C if nhwc else (i // HW) % C
        v = x[i] + b[c]
        if residual:
            v += r[i]
        if relu and v < 0.0:
            v = 0.0
        y[i] = v


def launch(elements: int, block: int = 256) -> Launch:
    return Launch(-(-elements // block), block)


def channel(i: int, op) -> int:
    return i % op.C if op.layout == "nhwc" else (i // (op.H * op.W)) % op.C


def thread_accesses(lc: Launch, op) -> dict:
    """Per thread: x[i], b[c], r[i] (residual), then the store of y[i]."""
    total = op.elements
    out = {}
    for b, t in lc.threads():
        i = b[0] * lc.block[0] + t[0]
        acc = []
        if i < total:
            acc = [("ld", "x", i), ("ld", "b", channel(i, op))]
            if op.residual:
                acc.append(("ld", "r", i))
            acc.append(("st", "y", i))
        out[(b, t)] = acc
    return out


def reference(x, b, r, op):
    """numpy: the shift broadcast over the layout's channel axis, the add, the ReLU."""
    shape = (1, op.C, 1, 1) if op.layout == "nchw" else (1, 1, 1, op.C)
    full = (op.N, op.C, op.H, op.W) if op.layout == "nchw" else (op.N, op.H, op.W, op.C)
    y = x.reshape(full).astype(np.float64) + b.astype(np.float64).reshape(shape)
    if op.residual:
        y = y + r.reshape(full)
    if op.relu:
        y = np.maximum(y, 0.0)
    return y.ravel()


# --- the program face -------------------------------------------------------------------
# params: grid, block, then total, C, HW, nhwc, residual, relu, base_x, base_b, base_r, base_y

@njit(cache=True)
def setup(p, bx, by, bz, w, tv, g):
    """tv[:, 1] = i (-1 past the tensor), tv[:, 2] its channel. No loop."""
    total, C, HW, nhwc = p[6], p[7], p[8], p[9]
    for lane in range(32):
        tx, ty, tz, ok = isa.thread_of(p, w, lane)
        i = bx * p[3] + tx
        tv[g, lane, 0] = ok
        if ok and i < total:
            tv[g, lane, 1] = i
            tv[g, lane, 2] = i % C if nhwc else (i // HW) % C
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
    """0: load x[i]; 1: load b[c]; 2: load r[i] (a residual only); 3: store y[i];
    4: the ReLU's mask (a ReLU only)."""
    if (stream == 2 and p[10] == 0) or (stream == 4 and p[11] == 0):
        for lane in range(32):
            out[g, lane] = -1
        return 0
    n_ = 0
    for lane in range(32):
        i = tv[g, lane, 1]
        if i < 0:
            out[g, lane] = -1
            continue
        if stream == 0:
            out[g, lane] = p[12] + 4 * i
        elif stream == 1:
            out[g, lane] = p[13] + 4 * tv[g, lane, 2]
        elif stream == 2:
            out[g, lane] = p[14] + 4 * i
        elif stream == 3:
            out[g, lane] = p[15] + 4 * i
        else:
            out[g, lane] = 0
        n_ += 1
    return n_


def _template(layout):
    # as numba-cuda compiles it for sm_90 (resources suite, SASS fast path: 114
    # instructions with NHWC's one 64-bit remainder, i % C; NCHW's (i // HW) % C takes a
    # second division): the index and exit test; the flags' tests; the division(s);
    # then the 64-bit offsets of x, b, r and y (uniform loads of the bases among them),
    # the three loads (r's guarded), the two FADDs, the ReLU's compare and select, the
    # store. Stream 3 (a lane with an element) guards everything past the exit test
    a = isa.Asm()
    a.block("i", None, alu=6, imad=1, uni=2, bra=1)     # i = blockIdx * blockDim + tid; i < size
    a.block("f", "i", alu=3, uni=3, bra=1, stream=3)    # the layout flag's test and branch
    for _ in range(1 if layout == "nhwc" else 2):
        a.div64("c", "i", stream=3)
    a.block("ix", "c", alu=26, imad=6, uni=7, stream=3)  # offsets of x, b, r and y
    a.ldg("xv", 0, "ix")
    a.ldg("bv", 1, "ix")
    a.ldg("rv", 2, "ix")
    a.fadd("v", "xv", "bv", stream=3)
    a.fadd("v", "v", "rv", stream=2)
    a.alu("v", "v", stream=4, n=2)                      # FSETP, ISETP (the ReLU's test)
    a.fmnmx("v", "v", stream=4)                         # FSEL: max(v, 0)
    a.alu("v", "v", stream=3, n=3)                      # BSYNC and the predicate's set-up
    a.stg(3, "v", "ix")
    a.bra("v", stream=3)            # EXIT
    return a.template()


TEMPLATES = {lay: _template(lay) for lay in LAYOUTS}


def program(op, block: int = 256) -> isa.Program:
    """The engine's face of one batch-norm layer."""
    n = op.elements
    lc = launch(n, block)
    sizes = [("x", n), ("b", op.C)] + ([("r", n)] if op.residual else []) + [("y", n)]
    bases = isa.layout_arrays(sizes)
    t, pro, body, nregs = TEMPLATES[op.layout]
    p, names = isa.params(lc, total=n, C=op.C, HW=op.H * op.W, nhwc=int(op.layout == "nhwc"),
                          residual=int(op.residual), relu=int(op.relu), base_x=bases["x"],
                          base_b=bases["b"], base_r=bases.get("r", 0), base_y=bases["y"])
    return isa.Program(
        name=NAME, face="batchnorm", launch=lc, params=p, template=t, pro_end=pro, body_end=body,
        n_regs=nregs,
        streams=(isa.Stream("x", "global", "x"), isa.Stream("b", "global", "b"),
                 isa.Stream("r", "global", "r"), isa.Stream("y", "global", "y"),
                 isa.Stream("relu", "mask")),
        arrays=tuple((name, bases[name], e) for name, e in sizes), regs_per_thread=REGS_ESTIMATE,
        smem_per_block=0, resources_source="estimate", flops=op.flops(), min_bytes=op.min_bytes(),
        label=op.name or op.describe(), param_names=names)


# --- the registry entry -------------------------------------------------------------------

build = one_launch(program, "op")     # one launch, blocks of 256 unless given


def device(problem) -> Device:
    op = problem["op"]
    bl = check_block(None, problem)
    n = op.elements
    lc = launch(n, bl)
    nhwc = int(op.layout == "nhwc")

    def inputs(rng):
        d = {"x": rng.standard_normal(n, dtype=np.float32),
             "b": rng.standard_normal(op.C, dtype=np.float32)}
        if op.residual:
            d["r"] = rng.standard_normal(n, dtype=np.float32)
        return d

    def calls(a):
        r = a["r"] if op.residual else a["x"]
        return [(shift_kernel, lc.grid[0], bl, (a["x"], a["b"], r, a["y"], n, op.C, op.H * op.W,
                                                nhwc, int(op.residual), int(op.relu)))]

    return Device(
        inputs=inputs, outputs={"y": (n,)}, calls=calls,
        reference=lambda i: {"y": reference(i["x"], i["b"], i.get("r"), op)},
        kernels=(("batchnorm", shift_kernel),), shapes=((lc.grid, lc.block),))


def tiny(layout, residual, relu):
    from workloads.ir import BatchNorm
    return BatchNorm(name="bn", N=2, C=3, H=4, W=5, layout=layout, residual=residual, relu=relu)


SPEC = KernelSpec(
    name=NAME, summary="batch norm's shift (scale folded into the conv), + residual, + ReLU",
    args=(Arg("op", "op", "the layer (workloads.ir.BatchNorm: its tensor, layout, residual "
                          "and ReLU)", required=True, choices=("batchnorm",)),
          Arg("block", "dims", "threads per block (default 256)")),
    build=build, op=lambda p: p["op"], device=device,
    accesses=lambda p: (thread_accesses(launch(p["op"].elements, check_block(None, p)), p["op"]),),
    variants=({"op": tiny("nchw", False, True), "block": (64,)},
              {"op": tiny("nhwc", True, True), "block": (64,)},
              {"op": tiny("nchw", True, False), "block": (64,)}),
    group=lambda p: ("batchnorm", p["op"].N, p["op"].C, p["op"].H, p["op"].W, p["op"].residual,
                     p["op"].relu))

"""``relu``: float32 ``y = max(x, 0)`` over ``n`` elements with a grid-stride loop.

Thread ``i = blockIdx.x * blockDim.x + threadIdx.x`` handles ``i, i + T, i + 2T, ...``
below ``n``, where ``T = gridDim.x * blockDim.x`` (any 1-D grid and block). Each
iteration loads ``x[i]`` and stores ``y[i]``: 1 FLOP, 8 bytes per element.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, njit  # importing needs no GPU; kernels compile on first launch

from simulator.arguments import show

from .. import isa
from .launch import Launch
from .spec import Arg, Device, KernelSpec

NAME = "relu"
# registers per thread: numba/ptxas on sm_90 gives a handful for this loop; stated
# estimate until the measurement harness reads it from the compiled kernel.
REGS_ESTIMATE = 8
REGS_COMPILED = {(9, 0): 24}  # registers per thread, resources suite on the H100


@cuda.jit
def relu_kernel(x, y, n):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    stride = cuda.gridDim.x * cuda.blockDim.x
    while i < n:
        v = x[i]
        y[i] = v if v > 0.0 else 0.0
        i += stride


def kernel():
    """The numba.cuda kernel."""
    return relu_kernel


def launch(grid: int, block: int) -> Launch:
    if not isinstance(grid, int) or not isinstance(block, int):
        raise ValueError(f"relu takes a 1-D grid and block, got grid={show(grid)}, block={show(block)}")
    return Launch(grid, block)


def thread_accesses(lc: Launch, n: int) -> dict:
    """{(blockIdx, threadIdx): [(op, array, index), ...]} in program order."""
    if lc.grid[1:] != (1, 1) or lc.block[1:] != (1, 1):
        raise ValueError("relu takes a 1-D grid and block")
    total = lc.grid[0] * lc.block[0]
    out = {}
    for b, t in lc.threads():
        acc = []
        i = b[0] * lc.block[0] + t[0]
        while i < n:
            acc += [("ld", "x", i), ("st", "y", i)]
            i += total
        out[(b, t)] = acc
    return out


def run(lc: Launch, x):
    """Launch the kernel on ``x`` (a numpy float32 vector or device array); returns y."""
    import numpy as np
    y = np.zeros_like(x)
    kernel()[lc.grid[0], lc.block[0]](x, y, x.shape[0])
    return y


# --- the program face -------------------------------------------------------------------
# params: grid, block, then n, base_x, base_y

@njit(cache=True)
def setup(p, bx, by, bz, w, tv, g):
    """tv[:, 1] = the thread's first index i; returns the warp's loop trips."""
    n, stride = p[6], p[0] * p[3]
    for lane in range(32):
        tx, ty, tz, ok = isa.thread_of(p, w, lane)
        tv[g, lane, 0] = ok
        tv[g, lane, 1] = bx * p[3] + tx
    i0 = tv[g, 0, 1]
    return (n - i0 + stride - 1) // stride if i0 < n else 0


@njit(cache=True)
def trips(p, bx, by, bz, w):
    """What ``setup`` returns, without the lanes: the trips of the warp's first thread."""
    n, stride = p[6], p[0] * p[3]
    tx, ty, tz, ok = isa.thread_of(p, w, 0)
    i0 = bx * p[3] + tx
    return (n - i0 + stride - 1) // stride if i0 < n else 0

@njit(cache=True)
def lanes(p, tv, g, it, stream, out):
    """Streams 0: load x[i]; 1: store y[i] (both: lanes with i < n)."""
    n, stride = p[6], p[0] * p[3]
    base = p[7] if stream == 0 else p[8]
    c = 0
    for lane in range(32):
        i = tv[g, lane, 1] + it * stride
        if tv[g, lane, 0] and i < n:
            out[g, lane] = base + 4 * i
            c += 1
        else:
            out[g, lane] = -1
    return c


def _template():
    # as numba-cuda compiles it for sm_90 (resources suite, SASS): the index and its exit
    # test; the loop's trip count by a 32-bit unsigned division (I2F, MUFU.RCP, F2I and
    # an IMAD chain); then the loop, unrolled by four, at about 20 instructions per
    # element: each load waits for the last store (the compiler cannot tell x and y apart)
    a = isa.Asm()
    a.alu("i", n=3)                 # S2R tid, ctaid, blockDim (LDC)
    a.alu("i", "i", n=6)            # i = blockIdx.x * blockDim.x + threadIdx.x; i < n
    a.bra("i")                      # @P0 EXIT
    # past the exit only warps with a lane below n (stream 0's lanes at i) go on
    a.alu("s", "i", n=18, stream=0)  # stride and the trip count's 64-bit operands
    a.bra("s", stream=0)
    a.sfu("d", "s", stream=0)       # I2F.U32.RP
    a.sfu("d", "d", stream=0)       # MUFU.RCP
    a.alu("d", "d", stream=0)       # VIADD
    a.sfu("d", "d", stream=0)       # F2I
    a.alu("d", "d", n=12, stream=0)  # IMAD.HI quotient and its corrections
    a.alu("t", "d", n=14, stream=0)  # trips mod 4, constants, loop set-up
    a.bra("t", stream=0)
    a.body()
    a.alu("ia", "i", n=7)           # 64-bit address of x[i]
    a.imad("ia", "ia", n=2)
    a.ldg("v", 0, "ia")             # v = x[i]
    a.alu("ib", "i", n=5)           # address of y[i]
    a.imad("ib", "ib")
    a.alu("i", "i", n=2)            # i += stride
    a.fmnmx("y", "v", stream=0)     # max(v, 0)
    a.stg(1, "y", "ib")             # y[i] = ...
    a.bra("i")                      # i < n (the test, amortised over four elements)
    a.epilogue()
    a.alu("e")                      # BSYNC; EXIT
    return a.template()


TEMPLATE = _template()


def program(lc: Launch, n: int) -> isa.Program:
    """The engine's face of ``relu`` over ``n`` float32 elements with launch ``lc``."""
    if lc.grid[1:] != (1, 1) or lc.block[1:] != (1, 1):
        raise ValueError("relu takes a 1-D grid and block")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n = {show(n)}: must be a positive integer")
    bases = isa.layout_arrays([("x", n), ("y", n)])
    t, pro, body, nregs = TEMPLATE
    p, names = isa.params(lc, n=n, base_x=bases["x"], base_y=bases["y"])
    return isa.Program(
        name=NAME, face="relu", launch=lc, params=p, template=t, pro_end=pro, body_end=body,
        n_regs=nregs, streams=(isa.Stream("x", "global", "x"), isa.Stream("y", "global", "y")),
        arrays=(("x", bases["x"], n), ("y", bases["y"], n)), regs_per_thread=REGS_ESTIMATE,
        smem_per_block=0, resources_source="estimate", flops=n, min_bytes=8 * n,
        label=f"n={n}", param_names=names)


# --- the registry entry -------------------------------------------------------------------

DEFAULT_BLOCK = 256


def _launch_of(problem, hw=None) -> Launch:
    b = problem["block"][0] if problem["block"] else DEFAULT_BLOCK
    if problem["grid"]:
        g = problem["grid"][0]
    elif hw is not None:
        # every SM filled once: the blocks one SM holds by CUDA's occupancy rules (threads,
        # blocks, registers), not only its threads -- blocks of 32 on an H100 are 32 an
        # SM (its block limit), not 64
        from simulator.simt.occupancy import occupancy
        launch(1, b).check(hw)               # the block's own limits, named as for any grid
        regs = REGS_COMPILED.get(getattr(hw, "cc", None), REGS_ESTIMATE)
        g = hw.sm_count * occupancy(hw, b, regs).blocks_per_sm
    else:
        raise ValueError("relu: give grid (its default fills the SMs of a hardware preset)")
    lc = launch(g, b)
    if hw is not None:
        lc.check(hw)
    return lc


def build(hw, problem) -> tuple:
    """One launch: blocks of 256 and a grid that fills every SM once
    (``sm_count`` x the blocks an SM holds, by the occupancy rules), unless given."""
    return (program(_launch_of(problem, hw), problem["n"]),)


def op(problem):
    from workloads.ir import Elementwise
    return Elementwise(name="relu", n=problem["n"])


def device(problem) -> Device:
    lc, n = _launch_of(problem), problem["n"]
    return Device(
        inputs=lambda rng: {"x": rng.standard_normal(n, dtype=np.float32)},
        outputs={"y": (n,)},
        calls=lambda a: [(relu_kernel, lc.grid[0], lc.block[0], (a["x"], a["y"], n))],
        reference=lambda i: {"y": np.maximum(i["x"], 0)},
        kernels=(("relu", relu_kernel),), shapes=((lc.grid, lc.block),))


SPEC = KernelSpec(
    name=NAME, summary="y = max(x, 0) over n float32 elements, grid-stride loop",
    args=(Arg("n", "size", "elements", required=True),
          Arg("grid", "dims", "blocks (any: the loop strides; default fills every SM once)"),
          Arg("block", "dims", "threads per block (default 256)")),
    build=build, op=op, device=device,
    accesses=lambda p: (thread_accesses(_launch_of(p), p["n"]),),
    variants=({"n": 64, "grid": (1,), "block": (32,)},),
    from_record=lambda r: {"n": r["n"], "grid": r["grid"], "block": r["block"]},
    group=lambda p: ("relu", p["n"]))

"""``matadd``: float32 element-wise sum ``C = A + B`` of two M x N row-major matrices.

One thread per element on a 2-D grid of 2-D blocks: thread (tx, ty) of block (bx, by)
handles row ``by * blockDim.y + ty`` and column ``bx * blockDim.x + tx`` (threadIdx.x
walks the columns: coalesced); threads outside the matrix do nothing (bounds-checked).
Each loads ``A[r, c]`` and ``B[r, c]`` and stores ``C[r, c]``: 1 FLOP and 12 bytes per
element. The SIMT teaching example: 32 x 48 matrices with six 16 x 16 blocks.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, njit  # importing needs no GPU; kernels compile on first launch

from .. import isa
from .launch import Launch
from .spec import Arg, Device, KernelSpec

NAME = "matadd"
REGS_ESTIMATE = 10  # stated estimate until read from the compiled kernel
REGS_COMPILED = {(9, 0): 26}  # registers per thread, resources suite on the H100


@cuda.jit
def matadd_kernel(A, B, C, M, N):
    r = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    c = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if r < M and c < N:
        C[r, c] = A[r, c] + B[r, c]


def kernel():
    return matadd_kernel


def launch(M: int, N: int, block=(16, 16)) -> Launch:
    bx, by = block
    return Launch((-(-N // bx), -(-M // by)), (bx, by))


def thread_accesses(lc: Launch, M: int, N: int) -> dict:
    out = {}
    for b, t in lc.threads():
        r, c = b[1] * lc.block[1] + t[1], b[0] * lc.block[0] + t[0]
        out[(b, t)] = ([("ld", "A", r * N + c), ("ld", "B", r * N + c), ("st", "C", r * N + c)]
                       if r < M and c < N else [])
    return out


def run(lc: Launch, A, B):
    M, N = A.shape
    C = np.zeros_like(A)
    kernel()[lc.grid[:2], lc.block[:2]](A, B, C, M, N)
    return C


# --- the program face -------------------------------------------------------------------
# params: grid, block, then M, N, base_A, base_B, base_C

@njit(cache=True)
def setup(p, bx, by, bz, w, tv, g):
    """tv[:, 1] = the element index r N + c, or -1 outside the matrix. No loop."""
    for lane in range(32):
        tx, ty, tz, ok = isa.thread_of(p, w, lane)
        r, c = by * p[4] + ty, bx * p[3] + tx
        tv[g, lane, 0] = ok
        tv[g, lane, 1] = r * p[7] + c if ok and r < p[6] and c < p[7] else -1
    return 0


@njit(cache=True)
def trips(p, bx, by, bz, w):
    """What ``setup`` returns, without the lanes: no loop."""
    return 0

@njit(cache=True)
def lanes(p, tv, g, it, stream, out):
    """0: load A; 1: load B; 2: store C (lanes inside the matrix)."""
    n_ = 0
    for lane in range(32):
        e = tv[g, lane, 1]
        out[g, lane] = p[8 + stream] + 4 * e if e >= 0 else -1
        n_ += e >= 0
    return n_


def _template():
    a = isa.Asm()
    a.alu("r", n=4)                 # row, column
    a.alu("q", "r", n=2)            # r < M and c < N
    a.bra("q")
    a.alu("pa", "r", n=2)           # element offset
    a.ldg("a", 0, "pa")
    a.ldg("b", 1, "pa")
    a.fadd("c", "a", "b", stream=0)
    a.stg(2, "c", "pa")
    return a.template()


TEMPLATE = _template()


def program(lc: Launch, M: int, N: int) -> isa.Program:
    bases = isa.layout_arrays([("A", M * N), ("B", M * N), ("C", M * N)])
    t, pro, body, nregs = TEMPLATE
    p, names = isa.params(lc, M=M, N=N, base_A=bases["A"], base_B=bases["B"], base_C=bases["C"])
    return isa.Program(
        name=NAME, face="matadd", launch=lc, params=p, template=t, pro_end=pro, body_end=body,
        n_regs=nregs, streams=tuple(isa.Stream(n, "global", n) for n in "ABC"),
        arrays=tuple((n, bases[n], M * N) for n in "ABC"), regs_per_thread=REGS_ESTIMATE,
        smem_per_block=0, resources_source="estimate", flops=M * N, min_bytes=12 * M * N,
        label=f"{M}x{N}", param_names=names)


# --- the registry entry -------------------------------------------------------------------

def _launch_of(problem) -> Launch:
    b = problem["block"] or (16, 16)
    return launch(problem["m"], problem["n"], b + (1,) * (2 - len(b)))


def build(hw, problem) -> tuple:
    """16x16 blocks (unless given), the grid covering the matrix."""
    lc = _launch_of(problem)
    lc.check(hw)
    return (program(lc, problem["m"], problem["n"]),)


def op(problem):
    from workloads.ir import Elementwise
    return Elementwise(name="matadd", n=problem["m"] * problem["n"], op="add")


def device(problem) -> Device:
    lc, M, N = _launch_of(problem), problem["m"], problem["n"]
    g, b = lc.grid[:2], lc.block[:2]
    return Device(
        inputs=lambda rng: {x: rng.standard_normal((M, N), dtype=np.float32) for x in "AB"},
        outputs={"C": (M, N)},
        calls=lambda a: [(matadd_kernel, g, b, (a["A"], a["B"], a["C"], M, N))],
        reference=lambda i: {"C": i["A"].astype(np.float64) + i["B"]},
        kernels=(("matadd", matadd_kernel),), shapes=((lc.grid, lc.block),))


SPEC = KernelSpec(
    name=NAME, summary="C = A + B over M x N float32 matrices, one thread per element",
    args=(Arg("m", "size", "rows", required=True), Arg("n", "size", "columns", required=True),
          Arg("block", "dims", "threads per block, BXxBY (default 16x16)", ndim=2)),
    build=build, op=op, device=device,
    accesses=lambda p: (thread_accesses(_launch_of(p), p["m"], p["n"]),),
    variants=({"m": 8, "n": 8, "block": (8, 8)},),
    group=lambda p: ("matadd", p["m"], p["n"]))

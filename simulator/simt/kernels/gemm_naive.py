"""``gemm-naive``: float32 row-major ``C = A @ B``, one thread per element of C.

2-D grid of 2-D blocks. ``thread_x="cols"`` (the default): ``threadIdx.x`` walks C's
columns, so a warp reads a row of B and writes a row of C with consecutive addresses
(coalesced). ``thread_x="rows"``: ``threadIdx.x`` walks C's rows (the uncoalesced
mapping). Threads outside C do nothing (bounds-checked). Thread (r, c) loads
``A[r, k]`` and ``B[k, c]`` for k = 0..K-1 in order, then stores ``C[r, c]``; indices
below are flat row-major element offsets.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float32, njit  # importing needs no GPU; kernels compile on first launch

from simulator.arguments import show

from .. import isa
from .launch import Launch
from .spec import Arg, Device, KernelSpec

NAME = "gemm-naive"
THREAD_X = ("cols", "rows")
UNROLL = 4          # the k loop unrolled by 4, each k's loads then its FMA: as the SASS
                    # numba-cuda 0.30.4 compiles for sm_90 (data/measurements/h100-sxm/resources.json)
REGS_ESTIMATE = 24  # stated estimate for targets whose compilation was not read
REGS_COMPILED = {(9, 0): 30}  # registers per thread, resources suite on the H100


@cuda.jit(device=True)
def _dot_store(A, B, C, r, c, M, N, K):
    if r < M and c < N:
        acc = float32(0.0)
        for k in range(K):
            acc += A[r, k] * B[k, c]
        C[r, c] = acc


@cuda.jit
def gemm_naive_cols(A, B, C, M, N, K):
    """threadIdx.x walks C's columns (coalesced)."""
    _dot_store(A, B, C, cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y,
               cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x, M, N, K)


@cuda.jit
def gemm_naive_rows(A, B, C, M, N, K):
    """threadIdx.x walks C's rows (uncoalesced)."""
    _dot_store(A, B, C, cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x,
               cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y, M, N, K)


def kernel(thread_x: str = "cols"):
    if thread_x not in THREAD_X:
        raise ValueError(f"thread_x = {show(thread_x)}: allowed: {', '.join(THREAD_X)}")
    return gemm_naive_cols if thread_x == "cols" else gemm_naive_rows


def launch(M: int, N: int, block=(16, 16), thread_x: str = "cols") -> Launch:
    """The grid that covers C with ``block``-shaped blocks for the chosen mapping."""
    if thread_x not in THREAD_X:
        raise ValueError(f"thread_x = {show(thread_x)}: allowed: {', '.join(THREAD_X)}")
    bx, by = block
    xs, ys = (N, M) if thread_x == "cols" else (M, N)
    return Launch((-(-xs // bx), -(-ys // by)), (bx, by))


def thread_accesses(lc: Launch, M: int, N: int, K: int, thread_x: str = "cols") -> dict:
    out = {}
    for b, t in lc.threads():
        gx = b[0] * lc.block[0] + t[0]
        gy = b[1] * lc.block[1] + t[1]
        r, c = (gy, gx) if thread_x == "cols" else (gx, gy)
        acc = []
        if r < M and c < N:
            for k in range(K):
                acc += [("ld", "A", r * K + k), ("ld", "B", k * N + c)]
            acc.append(("st", "C", r * N + c))
        out[(b, t)] = acc
    return out


def run(lc: Launch, A, B, thread_x: str = "cols"):
    import numpy as np
    M, K = A.shape
    N = B.shape[1]
    C = np.zeros((M, N), dtype=np.float32)
    kernel(thread_x)[lc.grid[:2], lc.block[:2]](A, B, C, M, N, K)
    return C


# --- the program face -------------------------------------------------------------------
# params: grid, block, then M, N, K, thread_x (0 cols, 1 rows), base_A, base_B, base_C

@njit(cache=True)
def setup(p, bx, by, bz, w, tv, g):
    """tv[:, 1:4] = r, c, inside C; returns the k-loop trips (0 if no thread is inside C)."""
    any_ = False
    for lane in range(32):
        tx, ty, tz, ok = isa.thread_of(p, w, lane)
        gx, gy = bx * p[3] + tx, by * p[4] + ty
        r, c = (gy, gx) if p[9] == 0 else (gx, gy)
        tv[g, lane, 0] = ok
        tv[g, lane, 1] = r
        tv[g, lane, 2] = c
        tv[g, lane, 3] = ok and r < p[6] and c < p[7]
        any_ = any_ or tv[g, lane, 3] != 0
    return (p[8] + UNROLL - 1) // UNROLL if any_ else 0


@njit(cache=True)
def trips(p, bx, by, bz, w):
    """What ``setup`` returns, without storing the lanes: the k-loop trips if some thread
    of the warp is inside C."""
    for lane in range(32):
        tx, ty, tz, ok = isa.thread_of(p, w, lane)
        gx, gy = bx * p[3] + tx, by * p[4] + ty
        r, c = (gy, gx) if p[9] == 0 else (gx, gy)
        if ok and r < p[6] and c < p[7]:
            return (p[8] + UNROLL - 1) // UNROLL
    return 0

@njit(cache=True)
def lanes(p, tv, g, it, stream, out):
    """Streams 2u: load A[r, k]; 2u+1: load B[k, c] with k = UNROLL it + u;
    2 UNROLL: store C[r, c]."""
    N, K = p[7], p[8]
    k = UNROLL * it + stream // 2
    c_ = 0
    for lane in range(32):
        out[g, lane] = -1
        if not tv[g, lane, 3]:
            continue
        r, c = tv[g, lane, 1], tv[g, lane, 2]
        if stream == 2 * UNROLL:
            out[g, lane] = p[12] + 4 * (r * N + c)
        elif k >= K:
            continue
        elif stream % 2 == 0:
            out[g, lane] = p[10] + 4 * (r * K + k)
        else:
            out[g, lane] = p[11] + 4 * (k * N + c)
        c_ += 1
    return c_


def _template():
    # as numba-cuda compiles it for sm_90 (resources suite, SASS): a 77-instruction prologue,
    # then per k 34 instructions (64-bit index arithmetic, 22 of it on the INT32 pipe and 9
    # IMADs, the two loads, the FMA); four k per trip of the loop, then its test and branch
    a = isa.Asm()
    a.alu("r", n=20)                 # row, col from block and thread indices
    a.uni("u", n=11)
    a.imad("r", "r", n=12, wide=2)
    a.alu("pa", "r", n=31)           # base pointers, r < M and c < N, the trip count
    a.bra("pa", n=3)
    a.body()
    for u in range(UNROLL):
        a.block(f"ia{u}", "pa", alu=6, imad=5, depth=5, wide=2)  # addresses of A[r, k] and B[k, c]
        a.ldg(f"a{u}", 2 * u, f"ia{u}")
        a.ldg(f"b{u}", 2 * u + 1, f"ia{u}")
        a.block("pa", "pa", alu=16, imad=4, depth=4)      # the next k's indices
        a.ffma("acc", f"a{u}", f"b{u}", "acc", stream=2 * u)
    a.bra("pa")                      # k < K
    a.epilogue()
    a.alu("ic", "pa", n=20)          # the remainder test, C[r, c]'s address
    a.uni("u", n=5)
    a.imad("ic", "ic", n=8, wide=1)
    a.stg(2 * UNROLL, "acc", "ic")
    a.bra("ic", n=2)
    return a.template()


TEMPLATE = _template()


def program(lc: Launch, M: int, N: int, K: int, thread_x: str = "cols") -> isa.Program:
    if thread_x not in THREAD_X:
        raise ValueError(f"thread_x = {show(thread_x)}: allowed: {', '.join(THREAD_X)}")
    bases = isa.layout_arrays([("A", M * K), ("B", K * N), ("C", M * N)])
    t, pro, body, nregs = TEMPLATE
    streams = tuple(s for u in range(UNROLL) for s in (isa.Stream(f"A+{u}", "global", "A"),
                                                         isa.Stream(f"B+{u}", "global", "B")))
    p, names = isa.params(lc, M=M, N=N, K=K, thread_x=THREAD_X.index(thread_x),
                          base_A=bases["A"], base_B=bases["B"], base_C=bases["C"])
    return isa.Program(
        name=NAME, face="gemm_naive", launch=lc, params=p, template=t, pro_end=pro, body_end=body,
        n_regs=nregs, streams=streams + (isa.Stream("C", "global", "C"),),
        arrays=tuple((n, bases[n], e) for n, e in (("A", M * K), ("B", K * N), ("C", M * N))),
        regs_per_thread=REGS_ESTIMATE, smem_per_block=0, resources_source="estimate",
        flops=2 * M * N * K, min_bytes=4 * (M * K + K * N + M * N),
        label=f"{M}x{N}x{K} thread-x {thread_x}", param_names=names)


# --- the registry entry -------------------------------------------------------------------

def _launch_of(problem) -> Launch:
    b = problem["block"] or (16, 16)
    return launch(problem["m"], problem["n"], b + (1,) * (2 - len(b)), problem["thread_x"])


def build(hw, problem) -> tuple:
    """16x16 blocks (unless given), threadIdx.x on C's columns (unless given), the grid
    covering C."""
    lc = _launch_of(problem)
    lc.check(hw)
    return (program(lc, problem["m"], problem["n"], problem["k"], problem["thread_x"]),)


def op(problem):
    from workloads.ir import Gemm
    return Gemm(name="gemm", M=problem["m"], N=problem["n"], K=problem["k"])


def gemm_device(M, N, K, kern, g, b, label) -> Device:
    """A GEMM C = A B of M x K by K x N float32 matrices on one kernel launch."""
    return Device(
        inputs=lambda rng: {"A": rng.standard_normal((M, K), dtype=np.float32),
                            "B": rng.standard_normal((K, N), dtype=np.float32)},
        outputs={"C": (M, N)},
        calls=lambda a: [(kern, g, b, (a["A"], a["B"], a["C"], M, N, K))],
        reference=lambda i: {"C": i["A"].astype(np.float64) @ i["B"].astype(np.float64)},
        kernels=((label, kern),), shapes=((g, b),))


def device(problem) -> Device:
    lc, tx = _launch_of(problem), problem["thread_x"]
    return gemm_device(problem["m"], problem["n"], problem["k"], kernel(tx), lc.grid[:2],
                       lc.block[:2], f"gemm-naive {tx}")


SPEC = KernelSpec(
    name=NAME, summary="C = A B, one thread per element of C, no reuse",
    args=(Arg("m", "size", "rows of C", required=True), Arg("n", "size", "columns of C", required=True),
          Arg("k", "size", "the reduction", required=True),
          Arg("thread_x", "choice", "threadIdx.x on C's columns (coalesced) or rows",
              default="cols", choices=THREAD_X),
          Arg("block", "dims", "threads per block, BXxBY (default 16x16)", ndim=2)),
    build=build, op=op, device=device,
    accesses=lambda p: (thread_accesses(_launch_of(p), p["m"], p["n"], p["k"], p["thread_x"]),),
    variants=tuple({"m": 8, "n": 8, "k": 8, "thread_x": tx, "block": (8, 8)} for tx in THREAD_X),
    from_record=lambda r: {"m": r["m"], "n": r["n"], "k": r["k"], "thread_x": r["thread_x"]},
    group=lambda p: ("gemm", p["m"], p["n"], p["k"]))

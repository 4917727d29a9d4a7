"""``gemm-tiled``: float32 row-major ``C = A @ B`` through shared-memory tiles.

Square tiles T in {8, 16, 32}; T x T blocks; one thread per element of C; the grid
``(ceil(N/T), ceil(M/T))`` (x over columns). For each of ``ceil(K/T)`` tiles, thread
(tx, ty) of block (bx, by) loads ``A[row, t T + tx]`` and ``B[t T + ty, col]`` into
shared memory (zero where outside A or B: zero-padded edges), synchronises, does T
MACs from shared memory, synchronises again; finally threads inside C store it.
"""
from __future__ import annotations

from numba import cuda, float32, njit  # importing needs no GPU; kernels compile on first launch

from simulator.arguments import show

from .. import isa
from .launch import Launch
from .spec import Arg, KernelSpec

NAME = "gemm-tiled"
TILES = (8, 16, 32)
REGS_ESTIMATE = 32  # stated estimate until read from the compiled kernel
REGS_COMPILED = {(9, 0): 32}  # registers per thread, resources suite on the H100


def _make(T):
    @cuda.jit
    def gemm_tiled(A, B, C, M, N, K):
        sA = cuda.shared.array((T, T), float32)
        sB = cuda.shared.array((T, T), float32)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        row = cuda.blockIdx.y * T + ty
        col = cuda.blockIdx.x * T + tx
        acc = float32(0.0)
        for t in range((K + T - 1) // T):
            ka = t * T + tx
            if row < M and ka < K:
                sA[ty, tx] = A[row, ka]
            else:
                sA[ty, tx] = float32(0.0)
            kb = t * T + ty
            if kb < K and col < N:
                sB[ty, tx] = B[kb, col]
            else:
                sB[ty, tx] = float32(0.0)
            cuda.syncthreads()
            for kk in range(T):
                acc += sA[ty, kk] * sB[kk, tx]
            cuda.syncthreads()
        if row < M and col < N:
            C[row, col] = acc
    return gemm_tiled


_KERNELS = {T: _make(T) for T in TILES}


def _check_tile(T):
    if T not in TILES:
        raise ValueError(f"tile = {show(T)}: allowed: {', '.join(map(str, TILES))}")


def kernel(tile: int = 16):
    _check_tile(tile)
    return _KERNELS[tile]


def launch(M: int, N: int, tile: int = 16) -> Launch:
    _check_tile(tile)
    return Launch((-(-N // tile), -(-M // tile)), (tile, tile))


def thread_accesses(lc: Launch, M: int, N: int, K: int, tile: int) -> dict:
    _check_tile(tile)
    T = tile
    out = {}
    for b, t in lc.threads():
        tx, ty = t[0], t[1]
        row, col = b[1] * T + ty, b[0] * T + tx
        acc = []
        for tt in range(-(-K // T)):
            ka, kb = tt * T + tx, tt * T + ty
            if row < M and ka < K:
                acc.append(("ld", "A", row * K + ka))
            if kb < K and col < N:
                acc.append(("ld", "B", kb * N + col))
        if row < M and col < N:
            acc.append(("st", "C", row * N + col))
        out[(b, t)] = acc
    return out


# --- the program face -------------------------------------------------------------------
# params: grid, block, then M, N, K, T, base_A, base_B, base_C; shared sA at 0, sB at 4T^2

@njit(cache=True)
def setup(p, bx, by, bz, w, tv, g):
    """tv[:, 1:5] = tx, ty, row, col; returns the number of K tiles."""
    T = p[9]
    for lane in range(32):
        tx, ty, tz, ok = isa.thread_of(p, w, lane)
        tv[g, lane, 0] = ok
        tv[g, lane, 1] = tx
        tv[g, lane, 2] = ty
        tv[g, lane, 3] = by * T + ty
        tv[g, lane, 4] = bx * T + tx
    return (p[8] + T - 1) // T


@njit(cache=True)
def trips(p, bx, by, bz, w):
    """What ``setup`` returns, without the lanes: the K tiles."""
    return (p[8] + p[9] - 1) // p[9]

@njit(cache=True)
def lanes(p, tv, g, it, stream, out):
    """0: load A[row, tT+tx]; 1: load B[tT+ty, col] (zero-padded edges: guarded);
    2, 3: store sA[ty, tx], sB[ty, tx]; 4+2kk, 5+2kk: load sA[ty, kk], sB[kk, tx];
    4+2T: store C[row, col]."""
    M, N, K, T = p[6], p[7], p[8], p[9]
    kk = (stream - 4) // 2
    c_ = 0
    for lane in range(32):
        out[g, lane] = -1
        if not tv[g, lane, 0]:
            continue
        tx, ty, row, col = tv[g, lane, 1], tv[g, lane, 2], tv[g, lane, 3], tv[g, lane, 4]
        a = -1
        if stream == 0:
            if row < M and it * T + tx < K:
                a = p[10] + 4 * (row * K + it * T + tx)
        elif stream == 1:
            if it * T + ty < K and col < N:
                a = p[11] + 4 * ((it * T + ty) * N + col)
        elif stream == 2:
            a = 4 * (ty * T + tx)
        elif stream == 3:
            a = 4 * T * T + 4 * (ty * T + tx)
        elif stream < 4 + 2 * T:
            a = 4 * (ty * T + kk) if stream % 2 == 0 else 4 * T * T + 4 * (kk * T + tx)
        elif row < M and col < N:
            a = p[12] + 4 * (row * N + col)
        if a >= 0:
            out[g, lane] = a
            c_ += 1
    return c_


def _template(T):
    # as numba-cuda compiles it for sm_90 (resources suite, SASS, T = 8, 16, 32): a
    # 70-instruction prologue; per tile trip the guarded 64-bit addresses of the two
    # elements (about 43 instructions, the guards' predicated-off ones issue too), the
    # loads, the loop counter on the uniform datapath, the two shared stores, the barrier,
    # then per four k one LDS.128 of sA[ty, k:k+4] and four LDS of sB[k, tx] with their
    # FMAs, the barrier and the branch; a 30-instruction epilogue
    a = isa.Asm()
    a.alu("row", n=24)                   # row, col, tile pointers
    a.uni("u", n=37)
    a.imad("pa", "row", n=8, wide=2)
    a.bra("pa")
    a.body()
    # the tile elements' guards and addresses: two chains of about eight
    a.block("pa", "pa", alu=33 if T > 8 else 34, imad=10 if T > 8 else 8, depth=8, wide=2)
    a.ldg("ga", 0, "pa")                 # A tile element (guarded; else 0)
    a.ldg("gb", 1, "pa")                 # B tile element
    a.uni("u", n=12)                     # the loop counter
    a.sts(2, "ga")                       # sA[ty, tx]
    a.sts(3, "gb")                       # sB[ty, tx]
    a.bar()
    for g in range(0, T, 4):
        a.lds(f"x{g % 8}", 4 + 2 * g)    # LDS.128: sA[ty, g:g+4] (one request, broadcast)
        for kk in range(g, g + 4):
            a.lds(f"y{kk % 8}", 5 + 2 * kk)
        for kk in range(g, g + 4):
            a.ffma("acc", f"x{g % 8}", f"y{kk % 8}", "acc")
    a.bar()
    a.bra("pa")
    a.epilogue()
    a.alu("ic", "row", n=16)             # row < M and col < N, C[row, col]'s address
    a.uni("u", n=5)
    a.imad("ic", "ic", n=6, wide=1)
    a.stg(4 + 2 * T, "acc", "ic")
    a.bra("ic", n=2)
    return a.template()


TEMPLATES = {T: _template(T) for T in TILES}


def program(M: int, N: int, K: int, tile: int = 16, label: str = "", bases=None,
            min_bytes=None) -> isa.Program:
    """``bases`` (a dict A, B, C -> byte address) places the operands where an earlier
    launch left them (conv-im2col's column matrix)."""
    _check_tile(tile)
    lc = launch(M, N, tile)
    bases = bases or isa.layout_arrays([("A", M * K), ("B", K * N), ("C", M * N)])
    t, pro, body, nregs = TEMPLATES[tile]
    streams = (isa.Stream("A", "global", "A"), isa.Stream("B", "global", "B"),
               isa.Stream("sA st", "shared"), isa.Stream("sB st", "shared"))
    streams += tuple(isa.Stream(f"s{x} ld {kk}", "shared") for kk in range(tile) for x in "AB")
    p, names = isa.params(lc, M=M, N=N, K=K, tile=tile, base_A=bases["A"], base_B=bases["B"],
                          base_C=bases["C"])
    return isa.Program(
        name=NAME, face="gemm_tiled", launch=lc, params=p, template=t, pro_end=pro, body_end=body,
        n_regs=nregs, streams=streams + (isa.Stream("C", "global", "C"),),
        arrays=tuple((n, bases[n], e) for n, e in (("A", M * K), ("B", K * N), ("C", M * N))),
        regs_per_thread=REGS_ESTIMATE, smem_per_block=2 * tile * tile * 4,
        resources_source="estimate (shared: two T x T float32 tiles)", flops=2 * M * N * K,
        min_bytes=4 * (M * K + K * N + M * N) if min_bytes is None else min_bytes,
        label=label or f"{M}x{N}x{K} T={tile}", param_names=names)


# --- the registry entry -------------------------------------------------------------------

def build(hw, problem) -> tuple:
    """T x T blocks (T = 16 unless given), the grid covering C."""
    lc = launch(problem["m"], problem["n"], problem["tile"])
    lc.check(hw)
    return (program(problem["m"], problem["n"], problem["k"], problem["tile"]),)


def device(problem):
    from .gemm_naive import gemm_device
    T = problem["tile"]
    lc = launch(problem["m"], problem["n"], T)
    return gemm_device(problem["m"], problem["n"], problem["k"], kernel(T), lc.grid[:2],
                       lc.block[:2], f"gemm-tiled {T}")


def _op(problem):
    from .gemm_naive import op
    return op(problem)


SPEC = KernelSpec(
    name=NAME, summary="C = A B in T x T tiles staged through shared memory",
    args=(Arg("m", "size", "rows of C", required=True), Arg("n", "size", "columns of C", required=True),
          Arg("k", "size", "the reduction", required=True),
          Arg("tile", "choice", "T: the block is T x T threads (default 16)", default=16, choices=TILES)),
    build=build, op=_op, device=device,
    accesses=lambda p: (thread_accesses(launch(p["m"], p["n"], p["tile"]), p["m"], p["n"], p["k"],
                                        p["tile"]),),
    variants=tuple({"m": 8, "n": 8, "k": 8, "tile": T} for T in TILES),
    from_record=lambda r: {"m": r["m"], "n": r["n"], "k": r["k"], "tile": r["tile"]},
    group=lambda p: ("gemm", p["m"], p["n"], p["k"]))

"""One numba entry point per program function, selecting the kernel by ``Program.kind``.

(numba caches a function that calls fixed globals; one taking another jitted function as
an argument would be recompiled in every process.)
"""
from numba import njit

from .kernels import conv_direct, conv_im2col, gemm_naive, gemm_tiled, matadd, relu

KINDS = {m.KIND: m for m in (relu, gemm_naive, gemm_tiled, conv_direct, conv_im2col, matadd)}


@njit(cache=True)
def setup(kind, p, bx, by, bz, w, tv, g):
    if kind == 0:
        return relu.setup(p, bx, by, bz, w, tv, g)
    if kind == 1:
        return gemm_naive.setup(p, bx, by, bz, w, tv, g)
    if kind == 2:
        return gemm_tiled.setup(p, bx, by, bz, w, tv, g)
    if kind == 3:
        return conv_direct.setup(p, bx, by, bz, w, tv, g)
    if kind == 4:
        return conv_im2col.setup(p, bx, by, bz, w, tv, g)
    return matadd.setup(p, bx, by, bz, w, tv, g)


@njit(cache=True)
def lanes(kind, p, tv, g, it, stream, out):
    if kind == 0:
        return relu.lanes(p, tv, g, it, stream, out)
    if kind == 1:
        return gemm_naive.lanes(p, tv, g, it, stream, out)
    if kind == 2:
        return gemm_tiled.lanes(p, tv, g, it, stream, out)
    if kind == 3:
        return conv_direct.lanes(p, tv, g, it, stream, out)
    if kind == 4:
        return conv_im2col.lanes(p, tv, g, it, stream, out)
    return matadd.lanes(p, tv, g, it, stream, out)

"""One numba entry point per program function, selecting the kernel's address functions
by ``kind``, the index of the program's face in ``FACES`` (``kind_of(prog.face)``; the
engine reads it once per program into ``core.ProgramArrays``).

(numba caches a function that calls fixed globals; one taking another jitted function as
an argument would be recompiled in every process.) A kernel module that brings new
``setup``/``trips``/``lanes`` functions adds itself to ``FACES`` and one branch to each function
below, in the same position; ``tests/test_registry.py`` holds the branches to ``FACES``
and every registered kernel's faces to it.
"""
from numba import njit

from simulator.arguments import show

from . import _stamp  # noqa: F401  (numba caches stamped together)
from .kernels import (
    batchnorm,
    conv_direct,
    conv_im2col,
    gemm_naive,
    gemm_tiled,
    layout_transform,
    matadd,
    pool,
    relu,
)

FACES = ("relu", "gemm_naive", "gemm_tiled", "conv_direct", "conv_im2col", "matadd",
         "layout_transform", "pool", "batchnorm")
MODULES = {"relu": relu, "gemm_naive": gemm_naive, "gemm_tiled": gemm_tiled,
           "conv_direct": conv_direct, "conv_im2col": conv_im2col, "matadd": matadd,
           "layout_transform": layout_transform, "pool": pool, "batchnorm": batchnorm}


def kind_of(face: str) -> int:
    """The index numba dispatches on for the face (a kernel module's name)."""
    try:
        return FACES.index(face)
    except ValueError:
        raise ValueError(f"face={show(face)}: no numba address functions are dispatched for it "
                         f"(dispatch.FACES: {', '.join(FACES)})") from None


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
    if kind == 5:
        return matadd.setup(p, bx, by, bz, w, tv, g)
    if kind == 6:
        return layout_transform.setup(p, bx, by, bz, w, tv, g)
    if kind == 7:
        return pool.setup(p, bx, by, bz, w, tv, g)
    return batchnorm.setup(p, bx, by, bz, w, tv, g)


@njit(cache=True)
def trips(kind, p, bx, by, bz, w):
    """``setup``'s return alone (the warp's loop trips), without the per-lane work: the
    sampler asks it of every warp of a launch."""
    if kind == 0:
        return relu.trips(p, bx, by, bz, w)
    if kind == 1:
        return gemm_naive.trips(p, bx, by, bz, w)
    if kind == 2:
        return gemm_tiled.trips(p, bx, by, bz, w)
    if kind == 3:
        return conv_direct.trips(p, bx, by, bz, w)
    if kind == 4:
        return conv_im2col.trips(p, bx, by, bz, w)
    if kind == 5:
        return matadd.trips(p, bx, by, bz, w)
    if kind == 6:
        return layout_transform.trips(p, bx, by, bz, w)
    if kind == 7:
        return pool.trips(p, bx, by, bz, w)
    return batchnorm.trips(p, bx, by, bz, w)


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
    if kind == 5:
        return matadd.lanes(p, tv, g, it, stream, out)
    if kind == 6:
        return layout_transform.lanes(p, tv, g, it, stream, out)
    if kind == 7:
        return pool.lanes(p, tv, g, it, stream, out)
    return batchnorm.lanes(p, tv, g, it, stream, out)

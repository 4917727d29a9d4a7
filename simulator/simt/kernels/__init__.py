"""SIMT kernel algorithms, one module each, holding the faces that must agree:

* ``kernel()`` -- the numba.cuda kernel that ``simulator/measure`` times on a real GPU
  (and the tests run under numba's CUDA simulator);
* ``thread_accesses(...)`` -- a pure-Python reference of every thread's global-memory
  accesses, in program order, from which the engine's per-warp instruction streams are
  built (issue 4) and against which the kernel's recorded accesses are tested.

Launch semantics are fixed here, since measurements refer to them.
"""
from . import conv_direct, conv_im2col, gemm_naive, gemm_tiled, matadd, relu

KERNELS = {m.NAME: m for m in (relu, matadd, gemm_naive, gemm_tiled, conv_direct, conv_im2col)}

__all__ = ["KERNELS", "relu", "matadd", "gemm_naive", "gemm_tiled", "conv_direct", "conv_im2col"]

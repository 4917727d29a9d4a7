"""SIMT kernel algorithms, one module each, holding the faces that must agree:

* the numba.cuda kernel that ``simulator/measure`` times on a real GPU (and the tests run
  under numba's CUDA simulator);
* the program the engine executes (a warp-instruction template and numba address
  functions, ``setup``/``lanes``);
* a pure-Python reference of every thread's global-memory accesses, against which the
  kernel's recorded accesses and the program's are tested.

Each module declares one ``SPEC`` (``spec.KernelSpec``); the lines below register them.
Adding a kernel is one module and one line here (see ``docs/architecture.md``).
Launch semantics are fixed here, since measurements refer to them.
"""
from . import (
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
from .spec import REGISTRY, Arg, Device, KernelSpec

REGISTRY.add(relu.SPEC)
REGISTRY.add(matadd.SPEC)
REGISTRY.add(gemm_naive.SPEC)
REGISTRY.add(gemm_tiled.SPEC)
REGISTRY.add(conv_direct.SPEC)
REGISTRY.add(conv_im2col.SPEC)
REGISTRY.add(layout_transform.SPEC)
REGISTRY.add(pool.SPEC)
REGISTRY.add(batchnorm.SPEC)

__all__ = ["REGISTRY", "Arg", "Device", "KernelSpec", "relu", "matadd", "gemm_naive", "gemm_tiled",
           "conv_direct", "conv_im2col", "layout_transform", "pool", "batchnorm"]

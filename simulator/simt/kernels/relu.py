"""``relu``: float32 ``y = max(x, 0)`` over ``n`` elements with a grid-stride loop.

Thread ``i = blockIdx.x * blockDim.x + threadIdx.x`` handles ``i, i + T, i + 2T, ...``
below ``n``, where ``T = gridDim.x * blockDim.x`` (any 1-D grid and block). Each
iteration loads ``x[i]`` and stores ``y[i]``: 1 FLOP, 8 bytes per element.
"""
from __future__ import annotations

from numba import cuda  # importing needs no GPU; kernels compile on first launch

from .launch import Launch

NAME = "relu"


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
        raise ValueError(f"relu takes a 1-D grid and block, got grid={grid!r}, block={block!r}")
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

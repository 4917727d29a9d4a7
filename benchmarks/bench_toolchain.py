"""Time to compile a numba kernel to PTX, cubin and SASS with no GPU, and to get them
again from the caches. Prints figures; not a pass/fail test.

Target: the first compile of a kernel in at most 2 s; a cached one after that
in milliseconds. "First" compiles run on an empty disk cache and an empty in-process
cache; "disk" reads a second process would do (in-process cache emptied, disk cache
kept); "memory" the in-process cache. The very first PTX compile of a process also pays
for numba-cuda's and NVVM's start-up; it is shown apart. Run with numba's CUDA simulator
off (the default outside the tests):

    python3 benchmarks/bench_toolchain.py [repeats]
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time

import numpy as np
from numba import cuda, float32


@cuda.jit(device=True)
def _square(x):
    return x * x


@cuda.jit
def calls_device(a, b):
    i = cuda.grid(1)
    if i < a.size:
        b[i] = _square(a[i]) + 1.0


@cuda.jit
def row_sums(a, out, n):
    i = cuda.grid(1)
    s = float32(0.0)
    for k in range(n):
        s += a[i * n + k]
    out[i] = s


@cuda.jit
def tiled_gemm(a, b, c, n):
    sa = cuda.shared.array((16, 16), float32)
    sb = cuda.shared.array((16, 16), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row, col = cuda.grid(2)
    acc = float32(0.0)
    for t in range(n // 16):
        sa[ty, tx] = a[row, t * 16 + tx]
        sb[ty, tx] = b[t * 16 + ty, col]
        cuda.syncthreads()
        for k in range(16):
            acc += sa[ty, k] * sb[k, tx]
        cuda.syncthreads()
    c[row, col] = acc


def _stages(tc, kernel, args):
    """Seconds for PTX, cubin and SASS, one after the other."""
    t0 = time.perf_counter()
    p = tc.kernel_ptx(kernel, args)
    t1 = time.perf_counter()
    tc.cubin(p)
    t2 = time.perf_counter()
    tc.sass(p)
    t3 = time.perf_counter()
    return t1 - t0, t2 - t1, t3 - t2


def main():
    from simulator.kernelcode import toolchain as tc

    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    v = np.zeros(1024, np.float32)
    m = np.zeros((64, 64), np.float32)
    cases = [("calls_device", calls_device, (v, v)), ("row_sums", row_sums, (v, v, 8)),
             ("tiled_gemm", tiled_gemm, (m, m, m, 64))]
    print(f"ptxas    {tc.tool_path('ptxas')}\nnvdisasm {tc.tool_path('nvdisasm')}")
    with tempfile.TemporaryDirectory() as start:
        tc.CACHE_DIR = start
        t = _stages(tc, *cases[0][1:])
        print(f"process start-up (first PTX compile of the process): {t[0]:.2f} s")
    print(f"seconds, median of {repeats} runs        PTX   cubin    SASS   total")
    for name, kernel, args in cases:
        first, disk, memory = [], [], []
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as d:
                tc.CACHE_DIR = d
                tc.clear_memory_cache()
                first.append(_stages(tc, kernel, args))
                tc.clear_memory_cache()
                disk.append(_stages(tc, kernel, args))
                memory.append(_stages(tc, kernel, args))
        for label, runs in (("first", first), ("disk", disk), ("memory", memory)):
            med = [statistics.median(r[k] for r in runs) for k in range(3)]
            print(f"{name:13s} {label:7s}             "
                  + " ".join(f"{x:7.4f}" for x in med) + f" {sum(med):7.3f}")
    tc.CACHE_DIR = None


if __name__ == "__main__":
    main()

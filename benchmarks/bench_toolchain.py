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

#: the kernels suite's kernels it compiles: device functions, a loop over a row, a
#: register-blocked GEMM with shared tiles and local arrays
CASES = ("device_calls", "matvec_thread_per_row", "gemm_register_blocked")


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
    from workloads.kernelsuite import CASES as SUITE
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    by_name = {c.name: c for c in SUITE}
    cases = []
    for name in CASES:
        c = by_name[name]
        _, _, args, _ = c.setup(np.random.default_rng(0), small=True)
        cases.append((name, c.kernel, list(args)))
    print(f"ptxas    {tc.tool_path('ptxas')}\nnvdisasm {tc.tool_path('nvdisasm')}")
    with tempfile.TemporaryDirectory() as start:
        tc.CACHE_DIR = start
        t = _stages(tc, *cases[0][1:])
        print(f"process start-up (first PTX compile of the process): {t[0]:.2f} s")
    print(f"{f'seconds, median of {repeats} runs':33s}    PTX   cubin    SASS   total")
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
            print(f"{name:22s} {label:7s}    "
                  + " ".join(f"{x:7.4f}" for x in med) + f" {sum(med):7.3f}")
    tc.CACHE_DIR = None


if __name__ == "__main__":
    main()

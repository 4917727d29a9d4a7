"""Emulation rate of the PTX emulator (warp-instructions per wall second, one core) on
the users' kernels of tests/user_kernels.py at their test sizes and at larger ones, and
on the examples. Prints figures; not a pass/fail test.

Goal: at least 1 M warp-instructions per second on one core over the test
kernels at realistic sizes (numba's CUDA simulator runs 5-8.5 K and has no shuffles).
Each launch is run ``repeats`` times (the kernel's PTX and the interpreter compiled by
a first, untimed run); the median wall time of the emulation loop is reported, and the
aggregate rate is total instructions over total median time. Run with numba's CUDA
simulator off (the default outside the tests):

    python3 benchmarks/bench_emulator.py [repeats] [scale] [--json FILE] [--note TEXT]

``scale`` multiplies nothing by itself: the "large" column re-runs the launches whose
setups take a size (the examples) at sizes with about 1-10 M warp-instructions.
``--json`` writes the same figures with the date and the machine (benchmarks/_record.py).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import _record
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "examples")]

from simulator.kernelcode.launch import emulate_kernel  # noqa: E402


def _time(kernel, grid, block, args, shared, repeats):
    walls, res = [], None
    for _ in range(repeats):
        fresh = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
        res = emulate_kernel(kernel, grid, block, fresh, shared_bytes=shared)
        walls.append(res.wall_seconds)
    return res, statistics.median(walls)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repeats", nargs="?", type=int, default=3)
    ap.add_argument("scale", nargs="?", help="unused (see above)")
    _record.add_options(ap)
    a = ap.parse_args(argv)
    repeats = a.repeats
    groups = []
    import kernels as examples
    import user_kernels as uk
    rng = np.random.default_rng(0)
    rows = []
    for case in uk.CASES:
        grid, block, args, shared = case.setup(rng)
        emulate_kernel(case.kernel, grid, block,
                       [np.copy(a) if isinstance(a, np.ndarray) else a for a in args],
                       shared_bytes=shared)                       # compile, untimed
        res, wall = _time(case.kernel, grid, block, args, shared, repeats)
        rows.append((case.name, res.instructions, res.simt_efficiency, wall))
    for launcher, sizes in ((examples.launch_block_sum, {"n": 4_000_000}),
                            (examples.launch_transpose, {"rows": 2000, "cols": 2000}),
                            (examples.launch_softmax, {"rows": 1024, "cols": 2000})):
        kernel, grid, block, args = launcher(**sizes)
        emulate_kernel(kernel, grid, block, [np.copy(a) for a in args])
        res, wall = _time(kernel, grid, block, args, 0, repeats)
        rows.append((f"example {launcher.__name__[7:]} {sizes}", res.instructions,
                     res.simt_efficiency, wall))
    print(f"{'launch':52s} {'warp instr':>11s} {'SIMT eff':>8s} {'median s':>9s} "
          f"{'M instr/s':>9s}")
    for name, n, eff, wall in rows:
        print(f"{name:52s} {n:>11,d} {eff:>8.1%} {wall:>9.3f} {n / wall / 1e6:>9.2f}")
    tests = rows[:len(uk.CASES)]
    big = rows[len(uk.CASES):]
    for label, group in (("test kernels (test sizes)", tests), ("examples (large)", big)):
        n = sum(r[1] for r in group)
        t = sum(r[3] for r in group)
        rates = [r[1] / r[3] for r in group]
        print(f"{label}: {n:,} warp-instructions in {t:.2f} s: {n / t / 1e6:.2f} M/s "
              f"aggregate, median per launch {statistics.median(rates) / 1e6:.2f} M/s")
        groups.append({"group": label, "instructions": n, "seconds": t, "aggregate_rate": n / t,
                       "median_rate": statistics.median(rates)})
    return a, {"repeats": repeats,
               "launches": [{"launch": name, "instructions": n, "simt_efficiency": eff,
                             "median_s": wall, "rate": n / wall} for name, n, eff, wall in rows],
               "groups": groups}


if __name__ == "__main__":
    t0 = time.perf_counter()
    args, figures = main()
    print(f"(whole benchmark {time.perf_counter() - t0:.0f} s)")
    if args.json:
        _record.write(args.json, "bench_emulator",
                      {**figures, "whole_s": time.perf_counter() - t0}, args.note)

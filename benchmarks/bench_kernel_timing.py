"""Wall time of ``simulate_kernel`` per launch (compile cached; probe, trace, SASS map
and engine timed together) on one core, sampled mode, on the users' kernels of
tests/user_kernels.py at their test sizes and on the examples, on h100-sxm and gtx480.
Prints figures; not a pass/fail test.

Goal (issue "any kernel, part 2"): median <= 2 s, max <= 20 s a launch. Each launch is
run once untimed (compiles, numba caches) and then ``repeats`` times; the median is
reported. Run with numba's CUDA simulator off (the default outside the tests):

    python3 benchmarks/bench_kernel_timing.py [repeats] [--json FILE] [--note TEXT]

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
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]

import user_kernels as uk  # noqa: E402

import examples.kernels as ek  # noqa: E402
from simulator.kernelcode.timing import simulate_kernel  # noqa: E402


def _launches():
    rng = np.random.default_rng(0)
    for c in uk.CASES:
        grid, block, args, shared = c.setup(rng)
        yield c.name, c.kernel, grid, block, list(args), shared
    for name in ("launch_block_sum", "launch_transpose", "launch_softmax"):
        k, g, b, a = getattr(ek, name)()
        yield name, k, g, b, list(a), 0


def main(repeats: int = 3) -> dict:
    out = {"repeats": repeats, "launches": [], "summary": []}
    for hw in ("h100-sxm", "gtx480"):
        walls, rows = [], []
        for name, k, g, b, a, shared in _launches():
            try:
                simulate_kernel(k, g, b, a, hw=hw, shared_bytes=shared)
            except ValueError as e:          # what the engine or front end refuses
                rows.append((name, "-", "-", str(e)[:60]))
                out["launches"].append({"hw": hw, "kernel": name, "refused": str(e)})
                continue
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                r = simulate_kernel(k, g, b, a, hw=hw, shared_bytes=shared)
                times.append(time.perf_counter() - t0)
            w = statistics.median(times)
            walls.append(w)
            rows.append((name, f"{w:.2f}", f"{r.instructions:,.0f}",
                         f"{r.simulated_fraction:.2f}"))
            out["launches"].append({"hw": hw, "kernel": name, "wall_s": w,
                                    "instructions": r.instructions,
                                    "simulated_fraction": r.simulated_fraction})
        print(f"\n{hw}: simulate_kernel wall per launch, median of {repeats}")
        print(f"{'kernel':28s} {'wall s':>8} {'SASS warp instr':>16} {'fraction':>9}")
        for row in rows:
            print(f"{row[0]:28s} {row[1]:>8} {row[2]:>16} {row[3]:>9}")
        if walls:
            print(f"median {statistics.median(walls):.2f} s, max {max(walls):.2f} s over "
                  f"{len(walls)} launches")
            out["summary"].append({"hw": hw, "median_s": statistics.median(walls),
                                   "max_s": max(walls), "launches": len(walls)})
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repeats", nargs="?", type=int, default=3)
    _record.add_options(ap)
    a = ap.parse_args()
    figures = main(a.repeats)
    if a.json:
        _record.write(a.json, "bench_kernel_timing", figures, a.note)

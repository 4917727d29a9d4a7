"""Launches of any size through ``simulate_kernel`` (sampled mode, h100-sxm, one core): a
GEMM, an all-pairs step, a reduction and an escape-time image at the sizes users run,
each a kernel written as a user writes it. Prints, per launch, the wall seconds (compile
cached: each launch is run once untimed first), the predicted time, the warp
instructions and the process's peak resident memory so far (``resource.getrusage``); a
launch refused or failed prints its error. Not a pass/fail test.

Goals: each predicted in at most 10 s, in under 2 GB. Run with numba's CUDA simulator off (the default
outside the tests):

    python3 benchmarks/bench_any_size.py [--only NAME] [--json FILE] [--note TEXT]

Ctrl-C prints (and with ``--json`` writes) the launches done.
"""
from __future__ import annotations

import argparse
import math
import os
import resource
import sys
import time
import traceback

import _record
import numpy as np
from numba import cuda, float32

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT]

from simulator.kernelcode.timing import simulate_kernel  # noqa: E402
from workloads.kernelsuite import all_cases  # noqa: E402

TILE = 256


@cuda.jit
def nbody_step(pos, acc, n, eps2):
    """All-pairs accelerations, positions (x, y, z, mass) staged through shared memory a
    tile at a time (GPU Gems 3, ch. 31)."""
    sh = cuda.shared.array((TILE, 4), float32)
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    xi = pos[i, 0] if i < n else float32(0)
    yi = pos[i, 1] if i < n else float32(0)
    zi = pos[i, 2] if i < n else float32(0)
    ax = float32(0)
    ay = float32(0)
    az = float32(0)
    for t0 in range(0, n, TILE):
        j = t0 + cuda.threadIdx.x
        for c in range(4):
            sh[cuda.threadIdx.x, c] = pos[j, c] if j < n else float32(0)
        cuda.syncthreads()
        for k in range(TILE):
            dx = sh[k, 0] - xi
            dy = sh[k, 1] - yi
            dz = sh[k, 2] - zi
            r2 = dx * dx + dy * dy + dz * dz + eps2
            inv = float32(1) / math.sqrt(r2 * r2 * r2)
            s = sh[k, 3] * inv
            ax += dx * s
            ay += dy * s
            az += dz * s
        cuda.syncthreads()
    if i < n:
        acc[i, 0] = ax
        acc[i, 1] = ay
        acc[i, 2] = az


@cuda.jit
def grid_sum(x, out):
    """A grid-stride sum: each thread adds its strided elements, the block reduces them in
    shared memory, one atomic add a block."""
    sh = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    s = float32(0)
    while i < x.size:
        s += x[i]
        i += cuda.gridDim.x * cuda.blockDim.x
    sh[t] = s
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if t < step:
            sh[t] += sh[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        cuda.atomic.add(out, 0, sh[0])


@cuda.jit
def mandelbrot(img, x0, y0, dx, dy, max_iter):
    """Escape-time iterations of each pixel (the data decides each loop's trips)."""
    col, row = cuda.grid(2)
    if row < img.shape[0] and col < img.shape[1]:
        cr = x0 + col * dx
        ci = y0 + row * dy
        zr = float32(0)
        zi = float32(0)
        it = 0
        while it < max_iter and zr * zr + zi * zi <= float32(4):
            zr, zi = zr * zr - zi * zi + cr, float32(2) * zr * zi + ci
            it += 1
        img[row, col] = it


def _launches(rng):
    """(name, what, kernel, grid, block, args)."""
    gemm = {c.name: c for c in all_cases()}["gemm_register_blocked"]
    g, b, a, _ = gemm.setup(rng, m=4096, n=4096, k=4096)
    yield "sgemm-4096", "register-blocked SGEMM 4096^3", gemm.kernel, g, b, list(a)
    n = 16384
    pos = rng.random((n, 4), dtype=np.float32)
    yield ("nbody-16384", "all-pairs n-body step, 16,384 bodies, shared-memory tiles",
           nbody_step, n // TILE, TILE, [pos, np.zeros((n, 3), np.float32), n, np.float32(1e-4)])
    x = rng.random(1 << 26, dtype=np.float32)
    yield ("sum-2^26", "grid-stride sum of 2^26 floats, 1024 blocks of 256",
           grid_sum, 1024, 256, [x, np.zeros(1, np.float32)])
    w = 2048
    yield ("mandelbrot-2048", "escape-time image 2048^2, at most 1024 iterations",
           mandelbrot, (w // 16, w // 16), (16, 16),
           [np.zeros((w, w), np.int32), np.float32(-2.0), np.float32(-1.25),
            np.float32(2.5 / w), np.float32(2.5 / w), 1024])


def main(only=None) -> dict:
    rows = []
    rng = np.random.default_rng(0)
    print(f"{'launch':16} {'wall s':>8} {'predicted us':>13} {'warp instr':>11} "
          f"{'peak MB':>8}  what")
    try:
        for name, what, k, g, b, a in _launches(rng):
            if only and name not in only:
                continue
            row = {"launch": name, "what": what, "grid": g, "block": b}
            try:
                simulate_kernel(k, g, b, a, hw="h100-sxm")           # compiles, warms caches
                t0 = time.perf_counter()
                r = simulate_kernel(k, g, b, a, hw="h100-sxm")
                row.update(wall_s=time.perf_counter() - t0, predicted_s=r.seconds,
                           instructions=r.instructions, simulated_fraction=r.simulated_fraction,
                           estimated_error=r.estimated_error,
                           peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
                print(f"{name:16} {row['wall_s']:8.1f} {r.seconds * 1e6:13.1f} "
                      f"{r.instructions:11.3g} {row['peak_rss_mb']:8.0f}  {what}")
            except Exception as e:          # a refusal is a figure too
                row["error"] = f"{type(e).__name__}: {e}"
                print(f"{name:16} {'-':>8} {'-':>13} {'-':>11} {'-':>8}  {what}: "
                      f"{row['error']}")
                if not isinstance(e, ValueError):
                    traceback.print_exc()
            rows.append(row)
    except KeyboardInterrupt:
        print(f"interrupted: {len(rows)} launch(es) done")
    walls = [r["wall_s"] for r in rows if "wall_s" in r]
    if walls:
        print(f"max {max(walls):.1f} s; goal: each at most 10 s")
    return {"launches": rows}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="launch names to run (default: all)")
    _record.add_options(ap)
    opt = ap.parse_args()
    figures = main(opt.only)
    if opt.json:
        _record.write(opt.json, "bench_any_size", figures, opt.note)

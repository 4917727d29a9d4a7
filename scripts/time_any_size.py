"""Time benchmarks/bench_any_size.py's four launches on this machine's GPU with the
project's harness (``simulator.measure.harness``: launches queued behind a spin kernel,
the host's latency hidden; median of 7), each result checked against numpy first; writes
``OUT/any_size.json`` with the provenance. Each launch repeats on one set of buffers:
predict them with ``l2="warm"``.

    PYTHONPATH=/tmp/site:$PWD python3 scripts/time_any_size.py OUT
"""
from __future__ import annotations

import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]

import bench_any_size as b  # noqa: E402

from simulator.measure import harness  # noqa: E402


def _check(name, host, dev):
    """The launch's result against numpy: (relative error or mismatch share, ok)."""
    if name.startswith("sgemm"):
        A, B, _ = host
        C = dev[2].copy_to_host()
        ref = A.astype(np.float64) @ B.astype(np.float64)
        err = float(np.abs(C - ref).max() / np.abs(ref).max())
        return err, err < 1e-4
    if name.startswith("nbody"):
        pos, _, n, eps2 = host
        acc = dev[1].copy_to_host()
        i = np.linspace(0, n - 1, 64).astype(np.int64)
        d = pos[None, :, :3].astype(np.float64) - pos[i, None, :3].astype(np.float64)
        r2 = (d * d).sum(-1) + float(eps2)
        ref = (d * (pos[None, :, 3] / r2 ** 1.5)[..., None]).sum(1)
        err = float(np.abs(acc[i] - ref).max() / np.abs(ref).max())
        return err, err < 1e-3
    if name.startswith("sum"):
        x = host[0]
        got = float(dev[1].copy_to_host()[0])
        ref = float(x.astype(np.float64).sum())
        err = abs(got - ref) / ref
        return err, err < 1e-4
    img = dev[0].copy_to_host()
    _, x0, y0, dx, dy, it_max = host
    rows = np.linspace(0, img.shape[0] - 1, 64).astype(np.int64)
    cols = np.linspace(0, img.shape[1] - 1, 64).astype(np.int64)
    # (numba promotes the pixel's coordinates, an int times a float32, to float64)
    cr = float(x0) + cols[None, :] * float(dx) + np.zeros((64, 1))
    ci = float(y0) + rows[:, None] * float(dy) + np.zeros((1, 64))
    zr, zi = np.zeros_like(cr), np.zeros_like(ci)
    its = np.zeros(cr.shape, np.int32)
    live = np.ones(cr.shape, bool)
    for _ in range(it_max):
        live &= zr * zr + zi * zi <= 4.0
        if not live.any():
            break
        zr, zi = np.where(live, zr * zr - zi * zi + cr, zr), np.where(live, 2 * zr * zi + ci, zi)
        its += live
    off = float((img[np.ix_(rows, cols)] != its).mean())
    return off, off < 0.01           # rounding may differ at the set's edge


def main(out):
    cuda = harness.require_gpu()
    recs = []
    for name, what, k, g, blk, a in b._launches(np.random.default_rng(0)):
        dev = [cuda.to_device(x) if isinstance(x, np.ndarray) else x for x in a]
        k[g, blk](*dev)
        cuda.synchronize()
        err, ok = _check(name, a, dev)
        t = harness.hidden_per_launch(lambda: k[g, blk](*dev))
        recs.append({"launch": name, "what": what, "grid": g, "block": blk, "check_error": err,
                     "ok": bool(ok), **t})
        print(f"{name:16} {t['median_s'] * 1e6:12.1f} us  check {err:.2g} {'ok' if ok else 'FAILED'}",
              flush=True)
    doc = {"suite": "any_size", "l2": "warm: each launch repeats on one set of buffers",
           "provenance": harness.provenance(" ".join(sys.argv)), "records": recs}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "any_size.json"), "w") as f:
        json.dump(doc, f, indent=1, default=lambda x: x.item() if hasattr(x, "item") else str(x))


if __name__ == "__main__":
    main(sys.argv[1])

"""Speed and memory of the SIMT models. Prints figures; not a pass/fail test.

Targets: at least 1 million simulated warp-instructions per second on one core
in full mode; a 1000-point grid sweep with the analytic model in under 10 s; memory use
stated. numba runs the engine on one thread, so one process uses one core.

    python3 benchmarks/bench_simt.py [--json FILE] [--note TEXT]

``--json`` writes the same figures with the date and the machine (benchmarks/_record.py).
"""
from __future__ import annotations

import argparse
import resource
import statistics
import time

import _record


def _rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _record.add_options(ap)
    a = ap.parse_args(argv)
    fig = {"full": [], "sampled": [], "memory": {"engine_state": []}}
    import hwmodels
    from simulator.simt import analytic, api, engine
    from workloads.ir import Conv2d

    fermi, h100 = hwmodels.get("gtx480"), hwmodels.get("h100-sxm")
    cases = [
        (fermi, "relu", dict(n=1 << 22, grid=480, block=256)),
        (fermi, "gemm-naive", dict(m=256, n=256, k=256)),
        (fermi, "gemm-naive", dict(m=256, n=256, k=256, thread_x="rows")),
        (fermi, "gemm-tiled", dict(m=256, n=256, k=256, tile=16)),
        (fermi, "conv-direct", dict(conv=Conv2d(N=1, C=64, H=28, W=28, K=64, R=3, S=3, padding=1))),
        (h100, "gemm-tiled", dict(m=512, n=512, k=256, tile=32)),
        (h100, "conv-direct", dict(conv=Conv2d(N=1, C=64, H=28, W=28, K=64, R=3, S=3, padding=1,
                                               layout="nhwc"))),
    ]
    engine.simulate(fermi, api.build(fermi, "matadd", m=32, n=48).programs)  # JIT / cache warm-up
    print("full mode, one core (median of 3 runs)")
    rates = []
    for hw, kernel, kw in cases:
        prob = api.build(hw, kernel, **kw)
        walls, r = [], None
        for _ in range(3):
            r = engine.simulate(hw, prob.programs, mode="full")
            walls.append(r.wall_seconds)
        w = statistics.median(walls)
        rates.append(r.instructions / w)
        what = f"{prob.kernel} {prob.programs[-1].label}"
        print(f"  {hw.name:8s} {what:42s} {r.instructions / 1e6:6.2f} M "
              f"instr in {w:5.2f} s = {r.instructions / w / 1e6:5.2f} M warp-instr/s")
        fig["full"].append({"hw": hw.name, "launch": what, "instructions": r.instructions,
                            "seconds": w, "rate": r.instructions / w})
    print(f"  range {min(rates) / 1e6:.2f} to {max(rates) / 1e6:.2f} M warp-instructions/s")

    for what, hw, kernel, kw in (
            ("sampled (blocks) against full on a 26-wave GEMM", fermi, "gemm-naive",
             dict(m=1024, n=512, k=256)),
            ("sampled (loop trips) against full on a 512-trip GEMM", fermi, "gemm-naive",
             dict(m=128, n=128, k=2048)),
            ("sampled against full on an H100 relu past the L2, blocks of 2 and 1 trips", h100,
             "relu", dict(n=1 << 24, grid=8448, block=1024))):
        print(what)
        prob = api.build(hw, kernel, **kw)
        f = engine.simulate(hw, prob.programs, mode="full", l2="warm")
        s = engine.simulate(hw, prob.programs, mode="sampled", l2="warm")
        err = s.estimated_error       # None: loop-trip extrapolation alone has no estimate
        print(f"  full {f.cycles:.0f} cycles in {f.wall_seconds:.2f} s; sampled {s.cycles:.0f} "
              f"({s.cycles / f.cycles - 1:+.2%}, "
              + (f"estimated {err:.1%}" if err is not None else "no error estimate")
              + f") in {s.wall_seconds:.2f} s")
        fig["sampled"].append({"what": what, "full_cycles": f.cycles, "full_s": f.wall_seconds,
                               "sampled_cycles": s.cycles, "sampled_s": s.wall_seconds,
                               "error": s.cycles / f.cycles - 1, "estimated_error": err})

    print("1000-point grid sweep, analytic model (relu n=2^24 on gtx480, grids 1..250 x 4 blocks)")
    analytic.predict(fermi, api.build(fermi, "relu", n=1 << 24, grid=1, block=256).programs)
    t0 = time.perf_counter()
    n = 0
    for block in (64, 128, 256, 512):
        for grid in range(1, 251):
            prob = api.build(fermi, "relu", n=1 << 24, grid=grid, block=block)
            analytic.predict(fermi, prob.programs)
            n += 1
    dt = time.perf_counter() - t0
    print(f"  {n} points in {dt:.2f} s ({dt / n * 1e3:.1f} ms per point)")
    fig["sweep"] = {"what": "analytic model, relu n=2^24 on gtx480, grids 1..250 x blocks 64, "
                            "128, 256, 512", "points": n, "seconds": dt}

    print("memory")
    print(f"  peak resident set of this process: {_rss_mib():.0f} MiB (numpy, numba, LLVM included)")
    fig["memory"]["peak_rss_mib"] = _rss_mib()
    import numpy as np
    for hw in (fermi, h100):
        occ_warps = hw.sm_count * hw.sm.max_warps
        state = occ_warps * (32 * 8 * 8 + 32 * 8 + 33 * 8 + 64 * 9 + 15 * 8)
        l2 = hw.l2.size_bytes // hw.l2.sector_bytes * (8 + 8 + 8 + 1)
        l1 = hw.sm_count * hw.sm.l1.size_bytes // hw.sm.l1.sector_bytes * 24
        print(f"  {hw.name}: engine state ~{(state + l1 + l2) / 2**20:.1f} MiB "
              f"(warp slots {state / 2**20:.1f}, L1 tags {l1 / 2**20:.1f}, L2 tags {l2 / 2**20:.1f}); "
              f"independent of the grid size (blocks are generated as they launch)")
        fig["memory"]["engine_state"].append({"hw": hw.name, "mib": (state + l1 + l2) / 2**20,
                                              "warp_slots_mib": state / 2**20,
                                              "l1_tags_mib": l1 / 2**20, "l2_tags_mib": l2 / 2**20})
    del np
    if a.json:
        _record.write(a.json, "bench_simt", fig, a.note)


if __name__ == "__main__":
    main()

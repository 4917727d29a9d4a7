"""The analytic model against the measurements: MAPE per suite and device, what-if pairs
in order, and its time a launch. Prints figures; not a pass/fail test.

Goals (the analytic fast path): at most 12% MAPE on every suite on the H100 and on the
H200 predicted from the H100's calibration, at least 90% of what-if pairs in order, at
most 10 ms a launch once a kernel is compiled. The engine is not run (``engine_budget``
0): this is the analytic model alone, as ``tune``'s first stage, the sweeps and ``plan
--mode analytic`` use it.

    python3 benchmarks/bench_analytic.py [--suites grid,gemm,conv,kernels] [--devices h100-sxm,h200]
        [--json FILE] [--note TEXT]

ms/launch is the model's own time (``Result.wall_seconds``) over the record's launches
(an im2col convolution is two): building the problem, the roofline bound and, for the
kernels suite (users' numba kernels, from their own SASS: the any-kernel path), compiling
each kernel and emulating its sampled blocks -- minutes, once a kernel -- come before it.
``--json`` writes the same figures with the date and the machine (benchmarks/_record.py).
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
from pathlib import Path

import _record

ROOT = Path(__file__).resolve().parents[1]
GOAL_MAPE, GOAL_PAIRS, GOAL_MS = 0.12, 0.90, 10.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suites", default="grid,gemm,conv")
    ap.add_argument("--devices", default="h100-sxm,h200")
    _record.add_options(ap)
    a = ap.parse_args(argv)
    table = []
    import hwmodels
    from simulator.analysis import validate
    from simulator.analysis.measurements import load_suite
    from simulator.simt import api

    # compile (or load from numba's cache) before anything is timed
    h100 = hwmodels.get("h100-sxm")
    api.analytic(h100, api.build(h100, "matadd", m=32, n=48))
    print(f"{'device':9s} {'suite':5s} {'records':>7s} {'MAPE':>6s} {'median err':>10s} "
          f"{'pairs in order':>14s} {'ms/launch (median, max)':>24s}")
    worst = []
    for dev in a.devices.split(","):
        hw = hwmodels.get(dev)
        for suite in a.suites.split(","):
            if suite in ("kernels", "teaching"):
                worst += _kernel_suite(hw, dev, suite, table)
                continue
            sf = load_suite(ROOT / "data" / "measurements" / dev, suite)
            tasks = validate.record_tasks(hw, [sf])
            rows, ms = [], []
            for t in tasks:
                r = validate.predict_record(dataclasses.replace(t, engine_budget=0))
                rows.append(r)
                ms.append(r.analytic.wall_seconds * 1e3 / len(r.analytic.launches))
            sc = validate.score(rows)["analytic"]
            errs = [r.predicted_s("analytic") / r.measured_s - 1 for r in rows]
            pairs = (f"{sc['pairs_in_order']:.1%} of {sc['pairs']}"
                     if sc["pairs_in_order"] is not None else "-")
            print(f"{dev:9s} {suite:5s} {sc['n']:7d} {sc['mape']:6.1%} "
                  f"{statistics.median(errs):+10.1%} {pairs:>14s} "
                  f"{statistics.median(ms):13.1f} {max(ms):10.1f}")
            table.append({"device": dev, "suite": suite, "records": sc["n"], "mape": sc["mape"],
                          "median_error": statistics.median(errs),
                          "pairs_in_order": sc["pairs_in_order"], "pairs": sc["pairs"],
                          "ms_median": statistics.median(ms), "ms_max": max(ms)})
            worst += [(abs(e), e, dev, suite, r.label) for e, r in zip(errs, rows)]
    print("\nlargest errors:")
    for _, e, dev, suite, label in sorted(worst, reverse=True)[:8]:
        print(f"  {e:+7.1%}  {dev} {suite}: {label}")
    print(f"\ngoals: MAPE <= {GOAL_MAPE:.0%} on every suite and device, >= {GOAL_PAIRS:.0%} of "
          f"pairs in order, <= {GOAL_MS:.0f} ms a launch (the model's own time)")
    if a.json:
        _record.write(a.json, "bench_analytic", {
            "goals": {"mape": GOAL_MAPE, "pairs_in_order": GOAL_PAIRS, "ms_a_launch": GOAL_MS},
            "suites": table,
            "largest_errors": [{"error": e, "device": dev, "suite": suite, "launch": label}
                               for _, e, dev, suite, label in sorted(worst, reverse=True)[:8]]},
            a.note)


def _kernel_suite(hw, dev, suite, table):
    """The analytic model on users' kernels (their traced warps), beside the engine."""
    from simulator.analysis import kernel_suite
    rows, _ = kernel_suite.run(hw, ROOT / "data" / "measurements" / dev, suite=suite,
                               mode="analytic")
    hits, n = kernel_suite.pairs_in_order(rows)
    errs = [r["engine_seconds"] / r["measured_seconds"] - 1 for r in rows]
    walls = [r["analytic_wall_seconds"] * 1e3 for r in rows]
    print(f"{dev:9s} {suite[:5]:5s} {len(rows):7d} {statistics.mean(map(abs, errs)):6.1%} "
          f"{statistics.median(errs):+10.1%} {f'{hits / n:.1%} of {n}' if n else '-':>14s} "
          f"{statistics.median(walls):13.1f} {max(walls):10.1f}")
    table.append({"device": dev, "suite": suite, "records": len(rows),
                  "mape": statistics.mean(map(abs, errs)), "median_error": statistics.median(errs),
                  "pairs_in_order": hits / n if n else None, "pairs": n,
                  "ms_median": statistics.median(walls), "ms_max": max(walls)})
    return [(abs(e), e, dev, suite, f"{r['kernel']} {r['shape']}") for e, r in zip(errs, rows)]


if __name__ == "__main__":
    main()

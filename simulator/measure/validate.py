"""Pair every measured kernel launch with the engine's, the analytic model's and the
roofline's prediction, and score them per suite.

The measurements repeat a launch on the same buffers (except the gemm suite, which
rotates buffer sets spanning at least twice the L2), so predictions start with the arrays
in the L2 where they fit, and cold after a rotation.
Predictions of time include the preset's GPU-side ``kernel_launch_s`` per launch (the
measurements, launched back to back, include it); the roofline bound does not (it is a
lower bound on the kernel's own work). The engine runs in sampled mode and only on
records whose sampled run simulates at most ``engine_budget`` warp-instructions; the rest
carry no engine prediction and the report says how many.

Scores per suite and predictor: MAPE (a fraction), Pearson and Spearman correlation
of predicted against measured seconds, and the share of what-if pairs -- two launches
of one problem (grid/block, kernel variant, layout) -- that the predictor ranks in the
measured order; plus ``faster_than_bound``, the measurements faster than their roofline
bound (a sign of an error somewhere).
"""
from __future__ import annotations

import itertools
import math
import time

import numpy as np

PREDICTORS = ("engine", "analytic", "roofline")
KERNEL_SUITES = ("grid", "gemm", "conv")


def _problem(hw, suite, r):
    from workloads.ir import Conv2d

    from simulator.simt import api
    if suite == "grid":
        return api.build(hw, "relu", n=r["n"], grid=r["grid"], block=r["block"]), ("relu", r["n"])
    if suite == "gemm":
        kw = {"thread_x": r["thread_x"]} if r["kernel"] == "gemm-naive" else {"tile": r["tile"]}
        prob = api.build(hw, r["kernel"], m=r["m"], n=r["n"], k=r["k"], **kw)
        return prob, ("gemm", r["m"], r["n"], r["k"])
    c = r["conv"]
    op = Conv2d(name=r["layer"], N=c["n"], C=c["c"], H=c["h"], W=c["w"], K=c["k"], R=c["r"], S=c["s"],
                stride=c["stride"], padding=c["pad"], layout=r["layout"])
    prob = api.build(hw, r["kernel"], conv=op)
    return prob, ("conv", c["n"], c["c"], c["h"], c["w"], c["k"], c["r"], c["s"], c["stride"], c["pad"])


def predict_records(hw, suite, records, engine_budget=2e7, progress=None):
    """Rows: the record's identity, measured seconds and each prediction (None if absent)."""
    from simulator.simt import analytic, api, engine
    rows = []
    for i, r in enumerate(records):
        if not r.get("ok", False):
            continue
        prob, group = _problem(hw, suite, r)
        launch = hw.kernel_launch_s * len(prob.programs)
        # launches repeated on one set of buffers find them in the L2 when they fit there;
        # the gemm suite rotates buffer sets to avoid that
        warm = r.get("buffer_sets", 1) == 1
        if not warm and r.get("rotation_bytes", math.inf) < 2 * hw.l2.size_bytes:
            raise ValueError(f"record {i} of suite {suite!r}: rotation_bytes = {r['rotation_bytes']}: "
                             f"rotating buffer sets must span at least twice the L2 "
                             f"({2 * hw.l2.size_bytes} bytes) for the launch to start cold")
        a = analytic.predict(hw, prob.programs, l2_warm=warm)
        instr = sum(x.warp_instructions for x in a.launches)
        row = {"suite": suite, "group": "/".join(map(str, group)), "kernel": r["kernel"],
               "label": prob.programs[-1].describe(), "measured_s": r["median_s"],
               "measured_min_s": r["min_s"], "measured_max_s": r["max_s"],
               "analytic_s": a.seconds + launch, "roofline_s": api.roofline_seconds(hw, prob.op),
               "engine_s": None, "engine_wall_s": None, "warp_instructions": instr,
               "l2_warm": warm, "flops": prob.op.flops(), "min_bytes": prob.op.min_bytes(),
               "includes_launch_overhead": {"engine": True, "analytic": True, "roofline": False}}
        # the budget counts what sampled mode simulates, not the whole launch
        simulated = sum(x.warp_instructions * engine.simulated_fraction(hw, x.program)
                        for x in a.launches)
        row["engine_simulated_instructions"] = simulated
        if simulated <= engine_budget:
            t0 = time.perf_counter()
            e = engine.simulate(hw, prob.programs, mode="sampled", l2_warm=warm)
            row["engine_s"] = e.seconds + launch
            row["engine_wall_s"] = time.perf_counter() - t0
        rows.append(row)
        if progress:
            progress(suite, i + 1, len(records))
    return rows


def _pearson(x, y):
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, None
    from scipy.stats import pearsonr, spearmanr
    return float(pearsonr(x, y)[0]), float(spearmanr(x, y)[0])


def score(rows) -> dict:
    """Per predictor: n, mape, pearson, spearman, pairs_in_order; and faster_than_bound."""
    out = {"records": len(rows),
           "faster_than_bound": int(sum(r["measured_s"] < r["roofline_s"] for r in rows))}
    for p in PREDICTORS:
        rs = [r for r in rows if r[f"{p}_s"] is not None]
        m = np.array([r["measured_s"] for r in rs])
        q = np.array([r[f"{p}_s"] for r in rs])
        res = {"n": len(rs), "mape": float(np.mean(np.abs(q - m) / m)) if rs else None,
               "pearson": None, "spearman": None, "pairs_in_order": None}
        if len(rs) >= 3:
            res["pearson"], res["spearman"] = _pearson(np.log(q), np.log(m))
        groups = {}
        for r in rs:
            groups.setdefault(r["group"], []).append(r)
        right = total = 0
        for g in groups.values():
            for x, y in itertools.combinations(g, 2):
                dm = x["measured_s"] - y["measured_s"]
                if abs(dm) <= 0.02 * max(x["measured_s"], y["measured_s"]):
                    continue          # a tie within measurement noise ranks nothing
                total += 1
                right += (x[f"{p}_s"] - y[f"{p}_s"]) * dm > 0
        res["pairs_in_order"] = right / total if total else None
        res["pairs"] = total
        out[p] = res
    out["pairs_in_order"] = out["engine"]["pairs_in_order"]
    return out

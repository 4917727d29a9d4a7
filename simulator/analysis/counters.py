"""The engine's counters against Nsight Compute's (the ``counters`` suite): per launch,
warp instructions executed, DRAM bytes (read and written) and L2 bytes, each error
beside the error on time -- the way Accel-Sim's correlator scores a simulator. The
engine runs sampled with a cold L2 (ncu flushes the caches before each profiled
launch); a sampled run's counts are its extrapolation to the whole launch.
"""
from __future__ import annotations

import statistics

COUNTERS = (("instructions", "instructions"), ("dram_bytes", "dram"), ("l2_bytes", "l2"),
            ("seconds", "time"))


def load(folder) -> dict:
    from .measurements import load_suite_json
    return load_suite_json(folder, "counters", "roofsim measure counters")


def rows(hw, folder, mode: str = "sampled") -> list:
    """A row per measured launch: each counter measured and predicted."""
    from simulator.measure.counters import problem_of
    from simulator.simt import api
    doc = load(folder)
    cache, out = {}, []
    for r in doc["records"]:
        item = r["problem"]
        if item not in cache:
            kernel, kw = problem_of(item)
            cache[item] = api.simulate(hw, api.build(hw, kernel, **kw), mode)
        res = cache[item]
        lc = res.launches[r["launch"]]
        pred = {"instructions": lc.instructions, "dram_bytes": lc.bytes_by_level.get("dram"),
                "l2_bytes": lc.bytes_by_level.get("l2"),
                "seconds": (lc.cycles or 0.0) / hw.clock_hz}
        out.append({"problem": item, "launch": r["launch"],
                    **{f"measured_{k}": r.get(k) for k, _ in COUNTERS},
                    **{f"engine_{k}": pred[k] for k, _ in COUNTERS}})
    return out


def scores(rs) -> dict:
    """MAPE and median error of each counter over the launches that have it."""
    out = {}
    for k, name in COUNTERS:
        errs = [r[f"engine_{k}"] / r[f"measured_{k}"] - 1 for r in rs
                if r.get(f"measured_{k}") and r.get(f"engine_{k}") is not None]
        out[name] = {"n": len(errs), "mape": statistics.mean(abs(e) for e in errs) if errs else None,
                     "median_error": statistics.median(errs) if errs else None,
                     "within_goal": None}
    for name, goal in (("instructions", 0.02), ("dram", 0.10), ("l2", 0.15)):
        if out[name]["mape"] is not None:
            out[name]["goal"] = goal
            out[name]["within_goal"] = out[name]["mape"] <= goal
    return out

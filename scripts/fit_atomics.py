"""The L2 atomics figures of a preset from its atomics suite (``roofsim measure atomics``):

    python scripts/fit_atomics.py data/measurements/h100-sxm/atomics.json

A warp's atomic request to one 128-byte line keeps the line's atomic unit busy
``atomic_cycles`` (add; ``atomic_cas_cycles`` for a compare-and-swap) when its lanes hit
distinct words, and ``atomic_lane_cycles`` more for each further lane on one word: the
unit's rate with 2,112 warps on the line (the most warps measured), the per-lane term a
least-squares slope over the spreads with several lanes a word.

The round trip, ``atomic_latency_cycles``, comes from the atomic_trace suite
(``roofsim measure atomic_trace``): one lane of every warp in a CAS loop on one word, the
line keeping up (the shapes with one lane), each success waits the round trip of the
retry that carries the value before it, and the loop between a result and its retry is
a few instructions. It is the round trip at which the SIMT engine's time for those
launches comes out as the H100's time from the first try to the last success (the
engine is linear in it: a run at it and one 100 cycles on give the slope; ``fit_latency``),
the median over those shapes. (The atomics suite's one-warp records wait the round trip
too, but each request's address waits on a 64-bit modulo of the last one's result, a
chain of some 40 instructions the round trip would absorb: they are validation.)

    python scripts/fit_atomics.py data/measurements/h100-sxm/atomics.json \\
        data/measurements/h100-sxm/atomic_trace.json"""
import json
import sys

import numpy as np


def fit(records):
    recs = [r for r in records if r.get("name") == "atomic_line" and r["ok"]]
    most = max(r["warps"] for r in recs)
    busy = {(r["op"], r["spread_words"]): r["cycles_per_request"] for r in recs
            if r["warps"] == most}
    base = {op: busy[(op, 32)] for op in ("add", "cas")}
    x, y = [], []
    for (op, spread), c in busy.items():
        lanes = -(-32 // spread)              # the most lanes on one word
        if lanes > 1:
            x.append(lanes - 1)
            y.append(c - base[op])
    x, y = np.array(x, float), np.array(y, float)
    lane = float((x * y).sum() / (x * x).sum())
    return {"atomic_cycles": base["add"], "atomic_cas_cycles": base["cas"],
            "atomic_lane_cycles": lane}


def fit_latency(trace, hw):
    """``atomic_latency_cycles`` from the atomic_trace suite's file ``trace`` (a dict):
    over its one-lane shapes, the round trip at which the SIMT engine (full mode, on
    ``hw``) takes as long as the H100 took from the first try to the last success (each
    shape's median over its launches), the median."""
    import dataclasses

    import simulator as rs
    from simulator.measure import micro
    clock = trace["provenance"]["attributes"]["clock_rate"] * 1e3
    got = {}
    for r in trace["records"]:
        if r.get("name") == "cas_trace" and r["ok"] and r["lanes"] == 1:
            got.setdefault((r["grid"], r["block"]), []).append(max(r["success_ns"]) * 1e-9 * clock)

    def cycles(grid, block, lat):
        h = dataclasses.replace(hw, l2=dataclasses.replace(hw.l2, atomic_latency_cycles=lat))
        args = [np.zeros(32, np.int32), np.zeros(grid * block, np.int32), 1, 1]
        return rs.simulate_kernel(micro.cas_lanes_kernel, (grid,), (block,), args, hw=h,
                                  mode="full").cycles
    lat0 = hw.l2.atomic_latency_cycles
    out = []
    for (grid, block), times in sorted(got.items()):
        e0, e1 = cycles(grid, block, lat0), cycles(grid, block, lat0 + 100.0)
        out.append(lat0 + (float(np.median(times)) - e0) * 100.0 / (e1 - e0))
    return float(np.median(out))


if __name__ == "__main__":
    import hwmodels
    data = json.load(open(sys.argv[1]))
    hw = hwmodels.get(sys.argv[3] if len(sys.argv) > 3 else "h100-sxm")
    for k, v in fit(data["records"]).items():
        print(f"{k} = {v:.4g}")
    print(f"atomic_latency_cycles = {fit_latency(json.load(open(sys.argv[2])), hw):.4g}")

"""The L2 atomics figures of a preset from its atomics suite (``roofsim measure atomics``):

    python scripts/fit_atomics.py data/measurements/h100-sxm/atomics.json

A warp's atomic request to one 128-byte line keeps the line's atomic unit busy
``atomic_cycles`` (add; ``atomic_cas_cycles`` for a compare-and-swap) when its lanes hit
distinct words, and ``atomic_lane_cycles`` more for each further lane on one word: the
unit's rate with 2,112 warps on the line (the most warps measured), the per-lane term a
least-squares slope over the spreads with several lanes a word. One warp alone waits the
round trip, ``atomic_latency_cycles`` plus its own request's service: the median over
the one-warp records."""
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
    lat = [r["cycles_per_warp_request"] - base[r["op"]] - lane * (-(-32 // r["spread_words"]) - 1)
           for r in recs if r["warps"] == 1]
    return {"atomic_cycles": base["add"], "atomic_cas_cycles": base["cas"],
            "atomic_lane_cycles": lane, "atomic_latency_cycles": float(np.median(lat))}


if __name__ == "__main__":
    data = json.load(open(sys.argv[1]))
    for k, v in fit(data["records"]).items():
        print(f"{k} = {v:.4g}")

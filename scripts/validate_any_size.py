"""benchmarks/bench_any_size.py's four launches predicted against their measurements
(``scripts/time_any_size.py``, data/measurements/DEVICE/any_size.json), written to
data/validation/DEVICE_any_size.json:

    python3 scripts/validate_any_size.py [--hw h200]

Sampled mode, ``l2="warm"`` (each launch was timed repeating on one set of buffers). No
parameter was chosen on these kernels: they are validation only. About 2 minutes on one
core."""
import argparse
import datetime
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]


def main(hw: str) -> Path:
    import bench_any_size as b

    from simulator.kernelcode.timing import simulate_kernel
    src = ROOT / "data" / "measurements" / hw / "any_size.json"
    meas = json.loads(src.read_text())
    by = {r["launch"]: r for r in meas["records"]}
    rows = []
    for name, what, k, g, blk, a in b._launches(np.random.default_rng(0)):
        m = by[name]
        t = time.perf_counter()
        r = simulate_kernel(k, g, blk, a, hw=hw, l2="warm")
        rows.append({"launch": name, "what": what, "measured_s": m["median_s"],
                     "predicted_s": r.seconds, "error": r.seconds / m["median_s"] - 1,
                     "instructions": r.instructions, "wall_s": time.perf_counter() - t})
        print(f"{name:16} measured {m['median_s'] * 1e6:10.1f} us predicted "
              f"{r.seconds * 1e6:10.1f} us {rows[-1]['error']:+.1%}", flush=True)
    out = ROOT / "data" / "validation" / f"{hw}_any_size.json"
    doc = {"hw": hw, "date": datetime.date.today().isoformat(),
           "measurements": str(src.relative_to(ROOT)),
           "device": meas["provenance"].get("device"), "mode": "sampled", "l2": "warm",
           "mape": float(np.mean([abs(x["error"]) for x in rows])), "rows": rows}
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"MAPE {doc['mape']:.1%}; wrote {out.relative_to(ROOT)}")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hw", default="h200")
    main(ap.parse_args().hw)

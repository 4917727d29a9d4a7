"""The SIMT engine against the H100's atomics microbenchmarks, written to
data/validation/h100-sxm_atomics.json:

    python3 scripts/validate_atomics.py [--out FILE]

* the ``atomics`` suite: every record (``micro.atomic_line_kernel``: one warp's round
  trips, or 132 to 2,112 warps on one line, add or CAS, 1 to 32 words), the engine in
  sampled mode against the launch's median time;
* the ``atomic_trace`` suite: every shape of its CAS loop (``micro.cas_lanes_kernel``),
  the engine in full mode against the H100's time from the first try to the last
  success (each shape's median over its launches), and the emulator's tries against the
  H100's.

What set which figure: the unit's rates come from the atomics suite's 2,112-warp
records, the round trip from the atomic_trace suite's one-lane shapes
(``scripts/fit_atomics.py``); the rest of each suite is validation. Takes some 6 minutes
on this project's 2-core machine (one core)."""
import argparse
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def atomics_rows(hw, records):
    import simulator as rs
    from simulator.measure import micro
    rows = []
    for r in records:
        if r.get("name") != "atomic_line" or not r["ok"]:
            continue
        args = [np.zeros(32, np.int32), np.zeros(r["grid"] * r["block"], np.int64), r["iters"],
                r["spread_words"], int(r["op"] == "cas")]
        t = time.perf_counter()
        e = rs.simulate_kernel(micro.atomic_line_kernel, (r["grid"],), (r["block"],), args,
                               hw=hw, mode="sampled")
        rows.append({"op": r["op"], "spread_words": r["spread_words"], "warps": r["warps"],
                     "measured_s": r["median_s"], "engine_s": e.seconds,
                     "set_by_it": r["warps"] == max(x["warps"] for x in records
                                                    if x.get("name") == "atomic_line"),
                     "wall_s": time.perf_counter() - t})
        print(f"atomics {r['op']} spread {r['spread_words']:2d} warps {r['warps']:5d}: "
              f"{e.seconds / r['median_s'] - 1:+.1%}", flush=True)
    return rows


def trace_rows(hw, doc):
    import simulator as rs
    from simulator.kernelcode.launch import emulate_kernel
    from simulator.measure import micro
    clock = doc["provenance"]["attributes"]["clock_rate"] * 1e3
    shapes = {}
    for r in doc["records"]:
        if r.get("name") == "cas_trace" and r["ok"]:
            shapes.setdefault((r["grid"], r["block"], r["lanes"]), []).append(r)
    rows = []
    for (grid, block, lanes), rs_ in sorted(shapes.items()):
        tries = float(np.median([r["total_tries"] for r in rs_]))
        cycles = float(np.median([max(r["success_ns"]) for r in rs_])) * 1e-9 * clock
        counter, got = np.zeros(32, np.int32), np.zeros(grid * block, np.int32)
        emulate_kernel(micro.cas_lanes_kernel, (grid,), (block,), [counter, got, lanes, lanes])
        t = time.perf_counter()
        e = rs.simulate_kernel(micro.cas_lanes_kernel, (grid,), (block,),
                               [np.zeros(32, np.int32), np.zeros(grid * block, np.int32), lanes,
                                lanes], hw=hw, mode="full")
        rows.append({"grid": grid, "block": block, "lanes": lanes, "measured_tries": tries,
                     "emulated_tries": float(got.sum()), "measured_cycles": cycles,
                     "engine_cycles": e.cycles, "set_by_it": lanes == 1,
                     "wall_s": time.perf_counter() - t})
        print(f"atomic_trace {grid}x{block} {lanes:2d} lanes: engine {e.cycles / cycles - 1:+.1%}, "
              f"tries {got.sum() / tries:.2f}x", flush=True)
    return rows


def summary(rows, got, want):
    err = np.array([r[got] / r[want] - 1 for r in rows if not r["set_by_it"]])
    return {"validation_records": int(len(err)), "mape": float(np.abs(err).mean()),
            "largest": float(err[np.argmax(np.abs(err))]),
            "within_10pct": int((np.abs(err) <= 0.10).sum())}


def main(argv=None):
    import hwmodels
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "data" / "validation" / "h100-sxm_atomics.json"))
    a = ap.parse_args(argv)
    hw = hwmodels.get("h100-sxm")
    folder = ROOT / "data" / "measurements" / "h100-sxm"
    atom = atomics_rows(hw, json.loads((folder / "atomics.json").read_text())["records"])
    trace = trace_rows(hw, json.loads((folder / "atomic_trace.json").read_text()))
    doc = {"hw": hw.name, "command": "python3 scripts/validate_atomics.py",
           "date": time.strftime("%Y-%m-%d"),
           "atomics": {"rows": atom, "summary": summary(atom, "engine_s", "measured_s")},
           "atomic_trace": {"rows": trace,
                            "summary": summary(trace, "engine_cycles", "measured_cycles")}}
    from hwmodels.fileio import atomic_write
    atomic_write(a.out, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()

"""The ``kernels`` suite scored: users' numba.cuda kernels that roofsim never wrote
(``simulator.kernelcode.cases``, ``examples/kernels.py``), timed on a GPU and profiled
by Nsight Compute (``simulator.measure.kernels``), against ``simulate_kernel``'s
predictions from each kernel's own SASS.

Per record: the measured median time against the prediction (plus the preset's GPU-side
launch cost, as the other time suites), and the counters Nsight Compute gave against
the engine's: SASS warp instructions, DRAM bytes, L2 bytes. Scores: MAPE per quantity,
and the what-if pairs -- two kernels doing the same work at the same shape, one of which
a teacher would call the better one -- whose predicted order matches the measured one.
"""
from __future__ import annotations

import statistics

import numpy as np

from simulator.arguments import show

#: (kernel, kernel) measured at the same shapes, the same work done two ways
PAIRS = (("transpose_naive", "transpose_padded"), ("transpose_tile16", "transpose_padded"),
         ("reduce_interleaved", "reduce_sequential"),
         ("matvec_thread_per_row", "matvec_warp_per_row"))

#: (name in the rows, ncu metric(s) summed, goal of its MAPE or None)
COUNTERS = (("instructions", ("smsp__inst_executed.sum",), 0.02),
            ("dram_bytes", ("dram__bytes_read.sum", "dram__bytes_write.sum"), 0.10),
            ("l2_bytes", ("lts__t_bytes.sum",), 0.15))


def load(folder) -> dict:
    """``folder/kernels.json`` with every record's fields checked."""
    from .measurements import MISSING, RecordError, load_suite_json, seconds

    def check(path, i, r):
        for f, kind in (("kernel", str), ("shape", str), ("size", dict), ("ok", bool)):
            if not isinstance(r.get(f), kind):
                raise RecordError(path, i, r.get("kernel"), f, r.get(f, MISSING),
                                  f"must be a {kind.__name__}")
        seconds(path, i, r["kernel"], r, "median_s")
        c = r.get("counters")
        if c is not None and not isinstance(c, dict):
            raise RecordError(path, i, r["kernel"], "counters", c,
                              "must be an object of ncu metrics, or null")
        return r
    return load_suite_json(folder, "kernels", "roofsim measure kernels", check)


def _measured(r: dict, metrics) -> float | None:
    c = r.get("counters") or {}
    vals = [c.get(m) for m in metrics]
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in vals):
        return None
    return float(sum(vals))


def predict(hw, r: dict, cases: dict) -> dict:
    """One record's row: measured and predicted time and counters."""
    from simulator.kernelcode.timing import simulate_kernel
    case = cases.get(r["kernel"])
    if case is None:
        raise ValueError(f"kernel {show(r['kernel'])}: no such case (simulator.kernelcode.cases, "
                         "examples/kernels.py)")
    try:
        grid, block, args, shared = case.setup(np.random.default_rng(0), **r["size"])
    except TypeError as e:
        raise ValueError(f"kernel {show(r['kernel'])}: size {show(r['size'])}: {e}") from None
    warm = r.get("buffer_sets", 1) == 1 and not r.get("cold_l2", False)
    res = simulate_kernel(case.kernel, grid, block, list(args), hw=hw, shared_bytes=shared,
                          l2="warm" if warm else "cold")
    row = {"kernel": r["kernel"], "shape": r["shape"], "measured_seconds": r["median_s"],
           "engine_seconds": res.seconds + hw.kernel_launch_s,
           "engine_instructions": res.instructions,
           # as Nsight Compute counts them from the empty L2 it starts each profiled launch
           # with: without the lines earlier launches left dirty, or the final flush
           "engine_dram_bytes": res.bytes_by_level.get("dram")
           - res.extra.get("dram_prior_write_bytes", 0.0) - res.extra.get("dram_flush_bytes", 0.0),
           "engine_l2_bytes": res.bytes_by_level.get("l2"),
           "simulated_fraction": res.simulated_fraction, "wall_seconds": res.wall_seconds}
    for name, metrics, _ in COUNTERS:
        row[f"measured_{name}"] = _measured(r, metrics)
    return row


def run(hw, folder, progress=None):
    """(a row per ``ok`` record predicted, whether Ctrl-C stopped the run). Records of
    another GPU than ``hw``'s are refused (``measurements.check_device``)."""
    from simulator.kernelcode.cases.examples import all_cases

    from .measurements import check_device
    doc = load(folder)
    check_device(hw, folder, "kernels.json", doc["provenance"])
    cases = {c.name: c for c in all_cases()[0]}
    todo = [r for r in doc["records"] if r["ok"]]
    rows = []
    try:
        for k, r in enumerate(todo):
            rows.append(predict(hw, r, cases))
            if progress is not None:
                progress(k + 1, len(todo))
    except KeyboardInterrupt:
        return rows, True
    return rows, False


def pairs_in_order(rows) -> tuple:
    """(pairs whose predicted order is the measured one, pairs) over ``PAIRS`` at every
    shape both kernels were measured at."""
    by = {(r["kernel"], r["shape"]): r for r in rows}
    hits = n = 0
    for a, b in PAIRS:
        for (k, shape), ra in by.items():
            rb = by.get((b, shape))
            if k != a or rb is None:
                continue
            n += 1
            measured = ra["measured_seconds"] > rb["measured_seconds"]
            predicted = ra["engine_seconds"] > rb["engine_seconds"]
            hits += measured == predicted
    return hits, n


def scores(rows) -> dict:
    """MAPE and median error of time and each counter; the what-if pairs in order."""
    out = {}
    for name, _, goal in (("seconds", None, 0.08),) + COUNTERS:
        errs = [r[f"engine_{name}"] / r[f"measured_{name}"] - 1 for r in rows
                if r.get(f"measured_{name}") and r.get(f"engine_{name}") is not None]
        mape = statistics.mean(abs(e) for e in errs) if errs else None
        out[name] = {"n": len(errs), "mape": mape,
                     "median_error": statistics.median(errs) if errs else None,
                     "goal": goal, "within_goal": (mape <= goal) if mape is not None else None}
    hits, n = pairs_in_order(rows)
    out["pairs_in_order"] = {"n": n, "in_order": hits, "fraction": hits / n if n else None,
                             "goal": 0.95}
    return out

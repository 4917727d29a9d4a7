"""The ``kernels`` suite scored: users' numba.cuda kernels that roofsim never wrote
(``workloads.kernelsuite``: its cases and ``examples/kernels.py``'s), timed on a GPU and profiled
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

#: the orders a teacher shows (``teaching`` suite): each tuple slowest first as the
#: measured H100 has them; scored as the predicted order of every pair in it
RANKINGS = (("teaching.reduce_interleaved", "teaching.reduce_strided", "teaching.reduce_sequential",
             "teaching.reduce_first_add", "teaching.reduce_warp_shuffle"),
            ("teaching.branch_in_warp", "teaching.branch_at_warp"),
            ("teaching.transpose_tile32", "teaching.transpose_tile33"))
#: the suites scored here: their files
SUITE_FILES = {"kernels": "kernels.json", "teaching": "teaching.json"}
#: SIMT efficiency: largest difference from Nsight Compute's allowed
SIMT_GOAL = 0.05
#: bank conflicts: MAPE allowed where they are many (at least ``MANY_CONFLICTS`` extra
#: passes per shared-memory instruction measured)
CONFLICTS_GOAL, MANY_CONFLICTS = 0.25, 0.25

#: the L2 bytes as the engine counts them: the crossbar's, between the SMs' L1s and the
#: L2, reads and writes (where a file has them; else ``lts__t_bytes``, every tag lookup)
XBAR = ("l1tex__m_xbar2l1tex_read_bytes.sum", "l1tex__m_l1tex2xbar_write_bytes.sum")
#: (name in the rows, ncu metric(s) summed -- or alternatives, the first a record has --,
#: goal of its MAPE or None)
COUNTERS = (("instructions", ("smsp__inst_executed.sum",), 0.02),
            ("dram_bytes", ("dram__bytes_read.sum", "dram__bytes_write.sum"), 0.10),
            ("l2_bytes", (XBAR, ("lts__t_bytes.sum",)), 0.15))


def load(folder, suite: str = "kernels") -> dict:
    """``folder/<suite>.json`` (kernels or teaching) with every record's fields checked."""
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
    return load_suite_json(folder, suite, f"roofsim measure {suite}", check)


def _measured(r: dict, metrics) -> float | None:
    if metrics and isinstance(metrics[0], tuple):      # alternatives: the first there
        for alt in metrics:
            v = _measured(r, alt)
            if v is not None:
                return v
        return None
    c = r.get("counters") or {}
    vals = [c.get(m) for m in metrics]
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in vals):
        return None
    return float(sum(vals))


def predict(hw, r: dict, cases: dict, mode: str = "sampled") -> dict:
    """One record's row: measured and predicted time and counters (``mode``: the
    engine's, sampled or full, or the analytic model's; the row's ``engine_*`` fields
    hold that predictor's)."""
    from simulator.kernelcode.timing import simulate_kernel
    case = cases.get(r["kernel"])
    if case is None:
        raise ValueError(f"kernel {show(r['kernel'])}: no such case (workloads.kernelsuite, "
                         "examples/kernels.py)")
    try:
        grid, block, args, shared = case.setup(np.random.default_rng(0), **r["size"])
    except TypeError as e:
        raise ValueError(f"kernel {show(r['kernel'])}: size {show(r['size'])}: {e}") from None
    warm = r.get("buffer_sets", 1) == 1 and not r.get("cold_l2", False)
    res = simulate_kernel(case.kernel, grid, block, list(args), hw=hw, shared_bytes=shared,
                          l2="warm" if warm else "cold", mode=mode)
    row = {"kernel": r["kernel"], "shape": r["shape"], "measured_seconds": r["median_s"],
           "engine_seconds": res.seconds + hw.kernel_launch_s,
           "engine_instructions": res.instructions,
           # as Nsight Compute counts them from the empty L2 it starts each profiled launch
           # with: without the lines earlier launches left dirty, or the final flush
           "engine_dram_bytes": res.bytes_by_level.get("dram")
           - res.extra.get("dram_prior_write_bytes", 0.0) - res.extra.get("dram_flush_bytes", 0.0),
           "engine_l2_bytes": res.bytes_by_level.get("l2"),
           "simulated_fraction": res.simulated_fraction, "wall_seconds": res.wall_seconds}
    if mode == "analytic":         # the model's own time, its warps traced
        row["analytic_wall_seconds"] = res.detail.wall_seconds
    for name, metrics, _ in COUNTERS:
        row[f"measured_{name}"] = _measured(r, metrics)
    row["measured_l2_counter"] = ("crossbar" if _measured(r, XBAR) is not None
                                  else "lts__t_bytes" if row["measured_l2_bytes"] is not None
                                  else None)
    threads = _measured(r, ("smsp__thread_inst_executed.sum",))
    row["measured_simt_efficiency"] = (threads / (32 * row["measured_instructions"])
                                       if threads is not None and row["measured_instructions"]
                                       else None)
    row["engine_simt_efficiency"] = res.simt_efficiency
    row["measured_bank_conflicts"] = _measured(
        r, ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"))
    row["measured_shared_instructions"] = _measured(
        r, ("smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_st.sum"))
    row["engine_bank_conflicts"] = res.bank_conflicts
    return row


def run(hw, folder, progress=None, suite: str = "kernels", mode: str = "sampled", every: int = 1):
    """(a row per ``ok`` record of ``suite`` (kernels or teaching) predicted, whether
    Ctrl-C stopped the run); of its records 0, ``every``, 2 ``every``, ... only, where
    given (a sample). Records of another GPU than ``hw``'s are refused
    (``measurements.check_device``)."""
    from workloads.kernelsuite import all_cases, teaching_cases

    from .measurements import check_device
    doc = load(folder, suite)
    check_device(hw, folder, SUITE_FILES[suite], doc["provenance"])
    cases = {c.name: c for c in (teaching_cases() if suite == "teaching" else all_cases())}
    todo = [r for i, r in enumerate(doc["records"]) if r["ok"] and i % every == 0]
    rows = []
    try:
        for k, r in enumerate(todo):
            rows.append(predict(hw, r, cases, mode))
            if progress is not None:
                progress(k + 1, len(todo))
    except KeyboardInterrupt:
        return rows, True
    return rows, False


def _pairs() -> tuple:
    """``PAIRS`` and every pair of each of ``RANKINGS``."""
    return PAIRS + tuple((a, b) for rank in RANKINGS for i, a in enumerate(rank)
                         for b in rank[i + 1:])


def rankings(rows) -> list:
    """Per ranking of ``RANKINGS`` and shape measured: the kernels in measured order
    (slowest first), in predicted order, and whether the two are the same."""
    by = {(r["kernel"], r["shape"]): r for r in rows}
    out = []
    for rank in RANKINGS:
        for shape in sorted({s for k, s in by if k == rank[0]}):
            have = [by[(k, shape)] for k in rank if (k, shape) in by]
            if len(have) < 2:
                continue
            measured = [r["kernel"] for r in sorted(have, key=lambda r: -r["measured_seconds"])]
            predicted = [r["kernel"] for r in sorted(have, key=lambda r: -r["engine_seconds"])]
            out.append({"shape": shape, "measured": measured, "predicted": predicted,
                        "same": measured == predicted})
    return out


def pairs_in_order(rows) -> tuple:
    """(pairs whose predicted order is the measured one, pairs) over ``PAIRS`` and the
    pairs of ``RANKINGS`` at every shape both kernels were measured at."""
    by = {(r["kernel"], r["shape"]): r for r in rows}
    hits = n = 0
    for a, b in _pairs():
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
    diffs = [r["engine_simt_efficiency"] - r["measured_simt_efficiency"] for r in rows
             if r.get("engine_simt_efficiency") is not None
             and r.get("measured_simt_efficiency") is not None]
    out["simt_efficiency"] = {
        "n": len(diffs), "max_abs_error": max(map(abs, diffs)) if diffs else None,
        "within_goal_n": sum(abs(d) <= SIMT_GOAL for d in diffs), "goal": SIMT_GOAL,
        "within_goal": all(abs(d) <= SIMT_GOAL for d in diffs) if diffs else None}
    errs = [r["engine_bank_conflicts"] / r["measured_bank_conflicts"] - 1 for r in rows
            if r.get("engine_bank_conflicts") is not None and r.get("measured_bank_conflicts")
            and r["measured_bank_conflicts"] >= MANY_CONFLICTS * (r.get("measured_shared_instructions") or 0)]
    mape = statistics.mean(abs(e) for e in errs) if errs else None
    out["bank_conflicts"] = {"n": len(errs), "mape": mape,
                             "median_error": statistics.median(errs) if errs else None,
                             "goal": CONFLICTS_GOAL,
                             "within_goal": (mape <= CONFLICTS_GOAL) if mape is not None else None}
    hits, n = pairs_in_order(rows)
    out["pairs_in_order"] = {"n": n, "in_order": hits, "fraction": hits / n if n else None,
                             "goal": 0.95}
    ranks = rankings(rows)
    out["rankings"] = {"n": len(ranks), "same": sum(r["same"] for r in ranks), "each": ranks}
    return out

"""The built-in kernels through the SASS path against their templates (the one-path plan):
for each committed suite record on the H100 (data/measurements/h100-sxm/{grid,gemm,conv}.json),
the template path's prediction as ``roofsim validate`` makes it (``validate.predict_record``:
sampled mode, the record's L2 state, ``hw.kernel_launch_s`` a launch) beside the SASS
path's on the same launches (``Device.calls`` -> ``simulate_launches``, sampled, the same L2
state and launch cost). A template may retire once the SASS path is within 2% of it on
every record and at least as close to the measurements. Prints figures; not a pass/fail
test.

Per kernel: records, median and max |sass/template - 1|, the share within 2%, the MAPE
against the measurements of each path, and the median wall seconds a launch of each.
``--json PATH`` writes every row (template s, sass s, measured s, warp instructions of
each, walls, an error where the SASS path raised). Ctrl-C keeps the rows done. Run with
numba's CUDA simulator off (the default outside the tests):

    python3 benchmarks/bench_one_path.py --every 10 gemm=1 --json out.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT]

from simulator.analysis import validate  # noqa: E402
from simulator.analysis.measurements import problem_of  # noqa: E402
from simulator.api import load_hardware  # noqa: E402
from simulator.kernelcode.timing import simulate_launches  # noqa: E402
from simulator.simt.kernels import REGISTRY  # noqa: E402
from simulator.simt.kernels.spec import host_calls  # noqa: E402

SUITES = ("grid", "gemm", "conv")
WITHIN = 0.02
#: kernels whose inputs steer their code (relu's sign): drawn as the measurement draws
#: them; the others' inputs are zeros (their control flow does not read values)
RANDOM_INPUTS = ("relu",)


def predict(task) -> dict:
    """One record's row: the template path's prediction and the SASS path's."""
    hw, r = task.hw, task.record
    row = validate.predict_record(task)
    prob = problem_of(hw, r)
    out = {"suite": row.suite, "index": task.index, "kernel": row.kernel, "label": row.label,
           "group": row.group, "l2_warm": row.l2_warm, "launches": len(prob.programs),
           "measured_s": row.measured_s, "template_s": row.predicted_s("engine"),
           "template_instructions": row.engine.instructions,
           "template_wall_s": row.engine_wall_s, "sass_s": None, "sass_instructions": None,
           "sass_wall_s": None, "error": None}
    spec = REGISTRY.get(prob.kernel)
    rng = np.random.default_rng(0) if prob.kernel in RANDOM_INPUTS else None
    try:
        calls = host_calls(spec.device(prob.args), rng)
        t0 = time.perf_counter()
        res = simulate_launches(calls, hw=hw, mode="sampled",
                                l2="warm" if row.l2_warm else "cold")
        out.update(sass_wall_s=time.perf_counter() - t0,
                   sass_s=res.seconds + row.launch_overhead_s,
                   sass_instructions=res.instructions,
                   sass_launch_instructions=[x.instructions for x in res.launches],
                   template_launch_instructions=[x.instructions for x in row.engine.launches],
                   sass_traced_blocks=res.extra["traced_blocks"])
    except Exception as e:          # noqa: BLE001 -- a record's failure is a row of the table
        out["error"] = f"{type(e).__name__}: {e}"
        out["traceback"] = traceback.format_exc(limit=6)[-1500:]
    return out


def summary(rows) -> list[dict]:
    """Per kernel (then all): the figures the table prints."""
    out = []
    kernels = sorted({r["kernel"] for r in rows}, key=lambda k: REGISTRY.names().index(k))
    for k in kernels + ["all"]:
        rs = [r for r in rows if k in ("all", r["kernel"])]
        ok = [r for r in rs if r["sass_s"] is not None]
        dev = [abs(r["sass_s"] / r["template_s"] - 1) for r in ok]
        di = [abs(r["sass_instructions"] / r["template_instructions"] - 1) for r in ok]

        def mape(key, rows_=ok):
            return float(np.mean([abs(r[key] / r["measured_s"] - 1) for r in rows_])) \
                if rows_ else None

        def wall(key, rows_):
            w = [r[key] / r["launches"] for r in rows_ if r[key] is not None]
            return statistics.median(w) if w else None
        out.append({
            "kernel": k, "records": len(rs), "failed": len(rs) - len(ok),
            "median_dev": statistics.median(dev) if dev else None,
            "max_dev": max(dev) if dev else None,
            "within_2pct": float(np.mean([d <= WITHIN for d in dev])) if dev else None,
            "median_instr_dev": statistics.median(di) if di else None,
            "mape_template": mape("template_s"), "mape_sass": mape("sass_s"),
            "wall_template_s": wall("template_wall_s", rs), "wall_sass_s": wall("sass_wall_s", ok)})
    return out


def _f(v, fmt):
    return "-" if v is None else format(v, fmt)


def table(summ) -> str:
    head = (f"{'kernel':12s} {'recs':>4} {'fail':>4} {'med|s/t-1|':>10} {'max|s/t-1|':>10} "
            f"{'<=2%':>5} {'med|dI|':>8} {'MAPE tmpl':>9} {'MAPE sass':>9} {'wall t s':>8} "
            f"{'wall s s':>8}")
    lines = [head, "-" * len(head)]
    for s in summ:
        lines.append(
            f"{s['kernel']:12s} {s['records']:>4} {s['failed']:>4} {_f(s['median_dev'], '10.1%')} "
            f"{_f(s['max_dev'], '10.1%')} {_f(s['within_2pct'], '5.0%')} "
            f"{_f(s['median_instr_dev'], '8.1%')} {_f(s['mape_template'], '9.1%')} "
            f"{_f(s['mape_sass'], '9.1%')} {_f(s['wall_template_s'], '8.2f')} "
            f"{_f(s['wall_sass_s'], '8.2f')}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hw", default="h100-sxm")
    ap.add_argument("--measurements", default=os.path.join(ROOT, "data/measurements/h100-sxm"))
    ap.add_argument("--suites", nargs="+", default=list(SUITES), choices=SUITES)
    ap.add_argument("--every", nargs="+", default=["1"], metavar="N|SUITE=N",
                    help="every Nth record of each suite (SUITE=N: of that suite)")
    ap.add_argument("--kernels", nargs="+", default=None, help="only these kernels' records")
    ap.add_argument("--limit", type=int, default=None, help="at most this many records a suite")
    ap.add_argument("--json", default=None, help="write the rows and the summary here")
    ap.add_argument("--max-memory-gb", type=float, default=12.0,
                    help="address-space limit of this process: a record whose SASS path needs "
                         "more fails with MemoryError (a row's error) instead of the machine's "
                         "OOM killer ending the run")
    a = ap.parse_args(argv)
    every = {}
    try:
        for e in a.every:
            suite, _, n = e.rpartition("=")
            every[suite or "*"] = int(n)
    except ValueError:
        ap.error(f"--every {' '.join(a.every)}: N or SUITE=N, N a positive integer")
    if any(n < 1 for n in every.values()) or (a.limit is not None and a.limit < 1) or \
            not set(every) <= {"*", *SUITES}:
        ap.error("--every: N or SUITE=N (SUITE one of grid, gemm, conv), --limit: positive "
                 "integers")
    if a.max_memory_gb > 0:
        import resource
        lim = int(a.max_memory_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (lim, resource.getrlimit(resource.RLIMIT_AS)[1]))
    hw = load_hardware(a.hw)
    files = validate.load_suites(hw, a.measurements, a.suites)
    tasks = []
    for sf in files:
        mine = [t for t in validate.record_tasks(hw, [sf], None)
                if a.kernels is None
                or t.record["kernel"] in a.kernels][::every.get(sf.suite, every.get("*", 1))]
        tasks += mine[:a.limit] if a.limit else mine
    rows, interrupted, t0 = [], False, time.perf_counter()
    try:
        from tqdm import tqdm
        bar = tqdm(tasks, desc="one path", unit="record", file=sys.stderr)
    except ImportError:
        bar = tasks
    try:
        for t in bar:
            rows.append(predict(t))
            if rows[-1]["error"] and hasattr(bar, "write"):
                bar.write(f"{t.suite.suite} record {t.index}: {rows[-1]['error'][:200]}")
    except KeyboardInterrupt:
        interrupted = True
        print(f"\ninterrupted: {len(rows)} of {len(tasks)} records done", file=sys.stderr)
    summ = summary(rows) if rows else []
    print(f"\n{hw.name}: SASS path (simulate_launches) vs template path (validate), sampled, "
          f"launch cost included; {len(rows)} records (--every {' '.join(a.every)})")
    print(table(summ))
    for r in rows:
        if r["error"]:
            print(f"  failed: {r['suite']} #{r['index']} {r['kernel']} {r['label']}: "
                  f"{r['error'][:160]}")
    if a.json:
        doc = {"hw": hw.name, "measurements": os.path.relpath(a.measurements, ROOT),
               "suites": a.suites, "every": every, "limit": a.limit,
               "interrupted": interrupted, "records_total": len(tasks),
               "wall_seconds": time.perf_counter() - t0, "within": WITHIN,
               "summary": summ, "rows": rows}
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
        print(f"wrote {a.json}")
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())

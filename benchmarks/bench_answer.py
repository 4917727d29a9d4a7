"""Answers in seconds: the engine's wall time per launch on every committed suite record
(grid, gemm, conv; H100 and H200), and the whole validation's wall time. Prints figures;
not a pass/fail test.

Goals: median engine time per launch at most 1 s, maximum at most 10 s; the analytic
model at most 10 ms per launch; the whole validation of every suite on both devices,
engine on every record, at most 15 minutes on a 2-core machine.

    python3 benchmarks/bench_answer.py [--workers N] [--suites grid,gemm,conv] [--json FILE] [--note TEXT]

The records run over ``--workers`` local Dask processes (default: one per core); each
record's engine and analytic times are taken inside its worker, on one core.
``--json`` writes the same figures with the date and the machine (benchmarks/_record.py).
"""
from __future__ import annotations

import argparse
import statistics
import time

import _record


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--suites", default="grid,gemm,conv")
    ap.add_argument("--plans-only", action="store_true",
                    help="only the ResNet-50 plans (batch 32, h100-sxm, the four uniform plans)")
    ap.add_argument("--json-dir", metavar="DIR",
                    help="also write each device's rows and scores there as `roofsim validate "
                         "--json` does (scripts/merge_validation.py reads them)")
    _record.add_options(ap)
    args = ap.parse_args()
    fig = {"workers": args.workers, "suites": args.suites.split(",")}
    if not args.plans_only:
        fig["validation"] = validation(args)
        fig["analytic_alone"] = analytic_alone(args)
    fig["plans"] = plans(args)
    if args.json:
        _record.write(args.json, "bench_answer", fig, args.note)


def plans(args):
    """ResNet-50 at batch 32 on h100-sxm, every layer (convolutions, batch norms, pools,
    the FC and its bias, the plan's layout transforms), under the four uniform plans
    (both layouts, direct and im2col): engine, analytic and roofline per layer. Goal: a
    plan within 60 s. Then the oracle's 525 layers (every configuration and transform)."""
    import hwmodels
    from simulator.analysis.plan import UNIFORM, predict_plan, uniform
    hw = hwmodels.get("h100-sxm")
    t0 = time.perf_counter()
    fig = {"hw": "h100-sxm", "workload": "resnet50", "batch": 32, "plans": []}
    for name in UNIFORM:
        out, totals = predict_plan(hw, uniform("resnet50", 32, name), "sampled", False,
                                   args.workers)
        walls = [r["engine_wall_seconds"] for r in out.finished if r.get("same_as") is None]
        print(f"plan {name:12s} {len(out.finished)} layers ({len(walls)} shapes) in "
              f"{out.wall_seconds:5.1f} s (engine s/shape "
              f"median {statistics.median(walls):.2f}, max {max(walls):.2f}); engine total "
              f"{totals['engine'] * 1e3:.2f} ms, analytic {totals['analytic'] * 1e3:.2f} ms")
        fig["plans"].append({"plan": name, "layers": len(out.finished), "shapes": len(walls),
                             "seconds": out.wall_seconds,
                             "engine_s_per_shape_median": statistics.median(walls),
                             "engine_s_per_shape_max": max(walls),
                             "engine_total_ms": totals["engine"] * 1e3,
                             "analytic_total_ms": totals["analytic"] * 1e3})
    print(f"ResNet-50 batch 32, four plans: {time.perf_counter() - t0:.0f} s")
    fig["four_plans_s"] = time.perf_counter() - t0
    from simulator.analysis.plan import choose, network, oracle_layers, time_key
    net = network("resnet50", 32)
    t0 = time.perf_counter()
    layers = oracle_layers(net)
    out, _ = predict_plan(hw, layers, "sampled", False, args.workers)
    choice, best = choose(net, {time_key(lp): r["engine_seconds"] for lp, r in zip(layers, out.results)})
    print(f"oracle, batch 32: {len(layers)} layer configurations and transforms predicted and "
          f"searched in {time.perf_counter() - t0:.0f} s; DP plan {choice.seconds * 1e3:.2f} ms, "
          f"best-of {best * 1e3:.2f} ms")
    fig["oracle"] = {"layers": len(layers), "seconds": time.perf_counter() - t0,
                     "dp_plan_ms": choice.seconds * 1e3, "best_of_ms": best * 1e3}
    return fig


def validation(args):
    import hwmodels
    from simulator.analysis.measurements import load_suite
    from simulator.analysis.validate import predict_suites, score
    suites = args.suites.split(",")
    t0 = time.perf_counter()
    allrows = []
    fig = {"devices": []}
    for hwname, folder in (("h100-sxm", "data/measurements/h100-sxm"),
                           ("h200", "data/measurements/h200")):
        hw = hwmodels.get(hwname)
        files = [load_suite(folder, s) for s in suites]
        out = predict_suites(hw, files, None, args.workers, None,
                             log=lambda line, h=hwname: print(f"  {h} {line}", flush=True))
        rows = out.finished
        allrows += rows
        print(f"{hwname}: {len(rows)} records in {out.wall_seconds:.0f} s")
        dev = {"hw": hwname, "records": len(rows), "seconds": out.wall_seconds, "suites": []}
        fig["devices"].append(dev)
        if args.json_dir:
            from pathlib import Path

            from simulator.table import write_json
            doc = {"hw": hwname, "measurements": folder, "engine_budget": None,
                   "wall_seconds": out.wall_seconds,
                   "suites": {f.suite: {**score([r for r in rows if r.suite == f.suite]),
                                        "device": f.device} for f in files},
                   "rows": [r.to_dict() for r in rows]}
            Path(args.json_dir).mkdir(parents=True, exist_ok=True)
            write_json(Path(args.json_dir) / f"{hwname}.json", doc)
        for s in suites:
            rs = [r for r in rows if r.suite == s]
            sc = score(rs)
            walls = [r.engine_wall_s for r in rs]
            ana = [r.analytic.wall_seconds for r in rs]
            print(f"  {s:5s} engine MAPE {sc['engine']['mape']:6.1%}  pairs in order "
                  f"{sc['engine']['pairs_in_order'] or 0:6.1%}  analytic MAPE "
                  f"{sc['analytic']['mape']:6.1%}  engine s/launch median "
                  f"{statistics.median(walls):5.2f} max {max(walls):5.2f}  analytic ms median "
                  f"{statistics.median(ana) * 1e3:6.1f} max {max(ana) * 1e3:6.1f}")
            dev["suites"].append({"suite": s, "records": len(rs),
                                  "engine_mape": sc["engine"]["mape"],
                                  "engine_pairs_in_order": sc["engine"]["pairs_in_order"],
                                  "analytic_mape": sc["analytic"]["mape"],
                                  "engine_s_median": statistics.median(walls),
                                  "engine_s_max": max(walls),
                                  "analytic_ms_median": statistics.median(ana) * 1e3,
                                  "analytic_ms_max": max(ana) * 1e3})
    walls = [r.engine_wall_s for r in allrows]
    ana = [r.analytic.wall_seconds for r in allrows]
    print(f"all {len(allrows)} records: engine s/launch median {statistics.median(walls):.2f} "
          f"max {max(walls):.2f}; analytic ms median {statistics.median(ana) * 1e3:.1f} "
          f"max {max(ana) * 1e3:.1f}; whole validation (both devices) "
          f"{time.perf_counter() - t0:.0f} s")
    fig["all"] = {"records": len(allrows), "engine_s_median": statistics.median(walls),
                  "engine_s_max": max(walls), "analytic_ms_median": statistics.median(ana) * 1e3,
                  "analytic_ms_max": max(ana) * 1e3, "whole_s": time.perf_counter() - t0}
    return fig


def analytic_alone(args):
    """The analytic model on every record of every suite, here, one launch after another
    on one core with the workers gone (inside the validation's workers it shares the
    machine with the other worker's engine): per suite, median and maximum ms a launch,
    after one warm-up call (numba's cache)."""
    import hwmodels
    from simulator.analysis.measurements import load_suite, problem_of
    from simulator.simt import api
    hw = hwmodels.get("h100-sxm")
    per = {}
    for s in args.suites.split(","):
        probs = [problem_of(hw, r) for r in load_suite("data/measurements/h100-sxm", s).records
                 if r.get("ok")]
        api.analytic(hw, probs[0])
        ts = []
        for prob in probs:
            t = time.perf_counter()
            api.analytic(hw, prob)
            ts.append(time.perf_counter() - t)
        per[s] = ts
        print(f"  analytic alone, h100-sxm {s:5s}: {len(ts)} launches, ms median "
              f"{statistics.median(ts) * 1e3:5.1f} max {max(ts) * 1e3:6.1f}")
    every = [t for ts in per.values() for t in ts]
    print(f"analytic alone, one core: ms median {statistics.median(every) * 1e3:.1f} "
          f"max {max(every) * 1e3:.1f} over {len(every)} launches")
    return {"hw": "h100-sxm",
            "suites": [{"suite": s, "launches": len(ts), "ms_median": statistics.median(ts) * 1e3,
                        "ms_max": max(ts) * 1e3} for s, ts in per.items()],
            "all": {"launches": len(every), "ms_median": statistics.median(every) * 1e3,
                    "ms_max": max(every) * 1e3}}


if __name__ == "__main__":
    main()

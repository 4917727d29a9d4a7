"""``roofsim validate`` (predictions against committed measurements, per suite; counters
and tune rankings too) and ``roofsim calibrate`` (a preset's latencies and bandwidths
from a micro suite)."""
from __future__ import annotations

import sys

import hwmodels
from simulator.analysis.calibrate import calibrate
from simulator.table import format_table

from ..options import add_hw, add_outputs, add_workers, budget, items, load_hw, positive_int
from ..outputs import finish
from . import BY_NAME

NEEDS = ("engine", "dask")
FLAG_OF = {"folder": "measurements"}      # the library's argument -> this command's option


def add_calibrate(sub):
    p = sub.add_parser("calibrate", help=BY_NAME["calibrate"].help)
    add_hw(p)
    p.add_argument("--measurements", required=True, metavar="DIR",
                   help="folder with micro.json (and h2d.json), e.g. data/measurements/h100-sxm")
    p.add_argument("--toml", metavar="FILE", help="save the calibrated preset")
    p.set_defaults(func=run_calibrate)


def add_validate(sub):
    p = sub.add_parser("validate", help=BY_NAME["validate"].help)
    add_hw(p)
    p.add_argument("--measurements", required=True, metavar="DIR",
                   help="folder with the suites' JSON, e.g. data/measurements/h100-sxm")
    p.add_argument("--suites", default="grid,gemm,conv", metavar="LIST",
                   help="grid, gemm, conv (times), or counters alone (Nsight Compute's "
                        "instructions, DRAM and L2 bytes against the engine's), or tune alone "
                        "(roofsim tune's ranking against every candidate measured), or kernels "
                        "alone (users' kernels timed from their SASS: times, counters, SIMT efficiency "
                        "and bank conflicts), or teaching alone (examples/teaching.py's "
                        "reduction ladder, branches and transposes, as kernels, with their "
                        "rankings)")
    p.add_argument("--engine-budget", type=budget, default=None, metavar="N",
                   help="run the engine (sampled) only on records whose sampled run simulates "
                        "at most N warp-instructions (default: every record); 0: analytic and "
                        "roofline only")
    p.add_argument("--every", type=positive_int("--every"), default=1, metavar="N",
                   help="score a sample: records (counters and tune: problems) 0, N, 2N, ... "
                        "of each suite (default 1: all of them)")
    add_workers(p)
    add_outputs(p, plot="predicted vs measured; the relu grid sweep")
    p.set_defaults(func=run_validate)


def run_calibrate(args):
    hw = load_hw(args)
    new, changes = calibrate(hw, args.measurements)
    print(f"{hw.name} from {args.measurements}:")
    print(format_table(["field", "preset", "measured", "source"],
                       [[f, old, val, src] for f, old, val, src in changes],
                       right=[False, True, True, False]))
    if args.toml:
        hwmodels.registry.save_toml(new, args.toml)
        print(f"wrote {args.toml}")


def run_validate(args):
    hw = load_hw(args, "simt")
    suites = items(args.suites, "--suites")
    for alone, fn in (("counters", _counters), ("tune", _tune), ("kernels", _kernels),
                      ("teaching", _kernels)):
        if alone in suites:
            if len(suites) > 1:
                raise ValueError(f"--suites {alone}: give it alone (it scores {alone}, not times)")
            # what only the time suites use: refused, not ignored
            extra = [o for o in ("engine_budget", "workers", "scheduler", "plot")
                     if o in args.given]
            if extra:
                raise ValueError(f"--{extra[0].replace('_', '-')} applies to the time suites "
                                 f"(grid, gemm, conv), not to --suites {alone}")
            return fn(args, hw, alone) if fn is _kernels else fn(args, hw)
    return _times(args, hw, suites)


def _times(args, hw, suites):
    """The time suites: every record predicted by each predictor, scored per suite."""
    from simulator.analysis.plots import validation_chart
    from simulator.analysis.validate import KERNEL_SUITES, PREDICTORS, load_suites, predict_suites, report
    bad = [x for x in suites if x not in KERNEL_SUITES]
    if bad:
        raise ValueError(f"--suites {args.suites!r}: allowed: {', '.join(KERNEL_SUITES)} (any of "
                         "them, comma-separated), or counters, tune, kernels or teaching alone")
    files = load_suites(hw, args.measurements, suites)      # another GPU's: refused
    out = predict_suites(hw, files, args.engine_budget, args.workers, args.scheduler,
                         log=lambda line: print(f"validate: {line}", file=sys.stderr, flush=True),
                         every=args.every)
    rows = out.finished
    doc = report(hw, files, out, args.measurements, args.engine_budget)
    if args.every > 1:
        doc["every"] = args.every
    table = []
    for suite, sc in doc["suites"].items():
        for p in PREDICTORS:
            x = sc[p]
            table.append([suite, p, f"{x['n']}/{sc['records']}",
                          f"{x['mape']:.1%}" if x["mape"] is not None else "-",
                          f"{x['pearson']:.3f}" if x["pearson"] is not None else "-",
                          f"{x['spearman']:.3f}" if x["spearman"] is not None else "-",
                          f"{x['pairs_in_order']:.1%}" if x["pairs_in_order"] is not None else "-",
                          sc["faster_than_bound"] if p == "roofline" else ""])
    which = ("every record" if args.engine_budget is None
             else f"records within {args.engine_budget:.3g} warp-instructions")
    if args.every > 1:
        which += f" of records 0, {args.every}, {2 * args.every}, ..."
    print(f"{hw.name} against {args.measurements} (engine sampled, on {which}; predictions "
          f"include the GPU-side launch cost, the roofline bound does not; "
          f"{out.wall_seconds:.0f} s)")
    if out.interrupted:
        print(f"interrupted: {out.done} of {len(out.results)} records predicted; the "
              "outputs are marked partial")
    if table:
        print(format_table(["suite", "predictor", "records", "MAPE", "Pearson (log)", "Spearman",
                            "pairs in order", "faster than bound"], table,
                           right=[False, False, True, True, True, True, True, True]))
    finish(args, out, [r.to_dict() for r in rows], lambda rs: {**doc, "rows": rs},
           lambda path: validation_chart(rows, path, f"{hw.name} validation", hw))


def _pct(v, fmt="+.1%"):
    return "-" if v is None else format(v, fmt)


def _tune(args, hw):
    """roofsim tune's rankings against every candidate measured."""
    from simulator.analysis import tune
    s = tune.scores(hw, args.measurements, every=args.every)   # another GPU's: refused
    dev = tune.load(args.measurements)["provenance"]["device"]
    k = s["engine_top"]
    part = (f" (stopped: {len(s['problems'])} of {s['problems_total']} problems finished)"
            if s["interrupted"] else "")
    print(f"tune on {hw.name} against {dev}: {len(s['problems'])} problems"
          + (f" (0, {args.every}, {2 * args.every}, ... of those measured)" if args.every > 1 else "")
          + f", {sum(r['candidates'] for r in s['problems'])} candidates measured{part}")
    if s["left_out"]:
        n = len(s["left_out"])
        print(f"left out of the scores: {n} problem{'s' if n > 1 else ''} with fewer than "
              f"{tune.MIN_CANDIDATES} candidates measured (a ranking of one candidate has no "
              f"regret): {', '.join(s['left_out'][:5])}{' ...' if n > 5 else ''}")
    if s["problems"]:
        print(format_table(["problem", "candidates", "measured best", "predicted best", "regret",
                            f"best of top {k}", f"random {k}", "Spearman"],
                           [[r["problem"], r["candidates"], r["best"], r["predicted_best"],
                             _pct(r["regret"]), _pct(r[f"regret_top{k}"]),
                             _pct(r[f"random_{k}"], "+.0%"), _pct(r["spearman"], ".2f")]
                            for r in s["problems"]],
                           right=[False, True, False, False, True, True, True, True]))
        m = s["summary"]
        print(f"regret of the predicted best: median {_pct(m['regret']['median'], '.1%')}, worst "
              f"{_pct(m['regret']['worst'], '.1%')} (goals 3% and 10%); best of the top {k} "
              f"measured: median {_pct(m[f'regret_top{k}']['median'], '.1%')}, worst "
              f"{_pct(m[f'regret_top{k}']['worst'], '.1%')}; random search with {k} measurements: "
              f"median {_pct(m[f'random_{k}']['median'], '.0%')}, worst "
              f"{_pct(m[f'random_{k}']['worst'], '.0%')}; Spearman median "
              f"{_pct(m['spearman']['median'], '.2f')}")
    body = {key: v for key, v in s.items() if key not in ("interrupted",)}
    if args.every > 1:
        body["every"] = args.every
    finish(args, s["interrupted"], s["problems"], lambda rs: {"hw": hw.name, **body, "problems": rs})


def _counters(args, hw):
    """The engine's counts against Nsight Compute's."""
    from simulator.analysis import counters as cn
    doc = cn.load(args.measurements)
    dev = doc["provenance"]["device"]
    rows, stopped = cn.run(hw, args.measurements, every=args.every)  # another GPU's: refused
    one = [r for r in rows if sum(x["problem"] == r["problem"] for x in rows) == 1]
    sc, sc1 = cn.scores(rows), cn.scores(one)
    skipped = cn.left_out(doc)
    print(f"counters on {hw.name} against Nsight Compute ({dev}): {len(rows)} launches "
          f"({len(one)} of one-launch problems"
          + (f"; problems 0, {args.every}, {2 * args.every}, ... of the file" if args.every > 1 else "")
          + "); engine sampled, L2 cold"
          + (f"; {skipped} records with \"ok\": false left out" if skipped else "")
          + (f" (stopped: {len(rows)} of {len(doc['records']) - skipped} launches finished)"
             if stopped else ""))
    print(format_table(["counter", "launches", "MAPE", "median error", "goal",
                        "MAPE, one-launch problems"],
                       [[name, s["n"], f"{s['mape']:.1%}" if s["mape"] is not None else "-",
                         f"{s['median_error']:+.1%}" if s["median_error"] is not None else "-",
                         f"{s['goal']:.0%}" if s.get("goal") else "-",
                         f"{sc1[name]['mape']:.1%}" if sc1[name]["mape"] is not None else "-"]
                        for name, s in sc.items()],
                       right=[False, True, True, True, True, True]))
    finish(args, stopped, rows, lambda rs: {"hw": hw.name, "measurements": args.measurements,
                                            **({"every": args.every} if args.every > 1 else {}),
                                            "scores": sc, "scores_one_launch": sc1, "rows": rs})


def _kernels(args, hw, suite="kernels"):
    """Users' kernels (the kernels suite) or examples/teaching.py's (teaching) timed from
    their SASS against their measured times and counters."""
    from simulator.analysis import kernel_suite as ks

    def progress(done, total):
        print(f"validate {suite}: {done} of {total} records", file=sys.stderr, flush=True)
    rows, stopped = ks.run(hw, args.measurements, progress, suite, every=args.every)
    sc = ks.scores(rows)
    print(f"{suite} on {hw.name} against {args.measurements}: {len(rows)} launches"
          + (f" (records 0, {args.every}, {2 * args.every}, ...)" if args.every > 1 else "")
          + " of users' "
          "kernels timed from their SASS (engine sampled; predictions include the GPU-side "
          "launch cost)" + (" (stopped)" if stopped else ""))
    shown = ("seconds",) + tuple(c[0] for c in ks.COUNTERS) + ("bank_conflicts",)
    print(format_table(["quantity", "launches", "MAPE", "median error", "goal"],
                       [[name, sc[name]["n"],
                         f"{sc[name]['mape']:.1%}" if sc[name]["mape"] is not None else "-",
                         f"{sc[name]['median_error']:+.1%}" if sc[name]["median_error"] is not None
                         else "-", f"{sc[name]['goal']:.0%}"] for name in shown],
                       right=[False, True, True, True, True]))
    e = sc["simt_efficiency"]
    if e["n"]:
        print(f"SIMT efficiency: largest difference {e['max_abs_error']:.3f}; "
              f"{e['within_goal_n']} of {e['n']} launches within {e['goal']} of Nsight Compute's")
    p = sc["pairs_in_order"]
    if p["n"]:
        print(f"what-if pairs in order: {p['in_order']} of {p['n']} ({p['fraction']:.0%}; goal "
              f"{p['goal']:.0%})")
    for r in sc["rankings"]["each"]:
        names = [k.rpartition(".")[2] for k in r["predicted"]]
        measured = [k.rpartition(".")[2] for k in r["measured"]]
        print(f"ranking at {r['shape']}, predicted slowest first: {' > '.join(names)} ("
              + ("as measured)" if r["same"] else f"measured: {' > '.join(measured)})"))
    worst = sorted(rows, key=lambda r: -abs(r["engine_seconds"] / r["measured_seconds"] - 1))[:8]
    print(format_table(["kernel", "shape", "measured us", "predicted us", "error"],
                       [[r["kernel"], r["shape"], r["measured_seconds"] * 1e6,
                         r["engine_seconds"] * 1e6,
                         f"{r['engine_seconds'] / r['measured_seconds'] - 1:+.1%}"] for r in worst],
                       right=[False, False, True, True, True]))
    finish(args, stopped, rows, lambda rs: {"hw": hw.name, "measurements": args.measurements,
                                            **({"every": args.every} if args.every > 1 else {}),
                                            "scores": sc, "rows": rs})

"""``roofsim plan``: a network as roofsim's kernels -- every layer's predicted time under
a plan, or (``--oracle``) the fastest plan, written as a plan file."""
from __future__ import annotations

from collections import Counter

from hwmodels.fileio import atomic_write
from simulator.analysis import plan as pl
from simulator.table import format_table

from ..options import add_engine, add_hw, add_outputs, add_workers, load_hw, positive_int
from ..outputs import finish, write_outputs, write_partial
from . import BY_NAME

NEEDS = ("engine", "dask")

DESCRIPTION = (
    "Predict every layer of a network run as roofsim's kernels -- convolutions, batch norms, "
    "pools, the FC and the layout transforms a plan implies -- with the engine (sampled), the "
    "analytic model and the roofline bound; or, with --oracle, pick the fastest plan from "
    "those predictions and write it as a plan file.")


def add_plan(sub):
    p = sub.add_parser("plan", help=BY_NAME["plan"].help, description=DESCRIPTION)
    add_hw(p)
    p.add_argument("--workload", default="resnet50", metavar="NET", help="a network (default resnet50)")
    p.add_argument("--batch", type=positive_int("batch"),
                   help="batch size (default: the workload's own, 1 for a named network)")
    p.add_argument("--plan", metavar="PLAN",
                   help="direct-nchw, direct-nhwc, im2col-nchw, im2col-nhwc (every convolution so), "
                        "or a plan file (.toml or .json: a default and per-layer exceptions)")
    p.add_argument("--oracle", metavar="FILE",
                   help="predict every layer in each configuration and every transform, pick the "
                        "fastest plan (dynamic program over the layers, switching costs included) "
                        "and write it to FILE as a plan file")
    p.add_argument("--vs", metavar="ARRAY",
                   help="a systolic preset (tpu-v1, systolic-8x8, or a TOML): its per-layer "
                        "time of the same network beside the GPU's, in the table, --json and "
                        "--plot")
    add_engine(p, modes=("sampled", "analytic"), policy=False)
    add_workers(p)
    add_outputs(p, plot="")
    p.set_defaults(func=run)


def _us(v):
    return "-" if v is None else v * 1e6


def run(args):
    from simulator.analysis.plots import plan_chart
    hw = load_hw(args, "simt")
    if (args.plan is None) == (args.oracle is None):
        raise ValueError("give --plan (a plan to predict) or --oracle FILE (pick the fastest plan "
                         "and write it), one of them")
    args.plan = pl.uniform_name(args.plan) or args.plan    # the one rule: im2col-nhwc, any case
    net = pl.network(args.workload, args.batch)
    if args.batch is None:
        args.batch = pl.batch_of(net)    # --batch left out: the workload's own
    if args.oracle:
        for opt in ("vs", "plot"):
            if getattr(args, opt):
                raise ValueError(f"--{opt} applies to a plan's prediction, not to --oracle")
        if not args.oracle.lower().endswith((".toml", ".json")):
            raise ValueError(f"--oracle {args.oracle!r}: a plan file ends in .toml or .json")
        return _oracle(args, hw, net)
    layers = pl.expand(net, pl.configs_of(net, args.plan))
    vs = _vs(args, net) if args.vs else None
    out, totals = pl.predict_plan(hw, layers, args.mode, args.l2, args.workers,
                                  args.scheduler)
    rows = out.finished
    if vs is not None:
        sys_hw, per = vs
        rows = [{**r, "systolic_seconds": per.get(r["layer"])} for r in rows]
        totals = {**totals, "systolic": sum(per.values())}
    eng = args.mode != "analytic"
    extra = sum(lp.algorithm == "transform" for lp in layers)
    print(f"{args.workload} batch {args.batch} on {hw.name}, plan {args.plan}: {len(layers)} "
          f"layers{f' ({extra} layout transforms)' if extra else ''}, "
          f"{'engine (sampled), ' if eng else ''}analytic, roofline; L2 {args.l2}"
          + (f"; beside it {vs[0].name}'s array ({vs[0].rows}x{vs[0].cols}, {vs[0].dataflow}) "
             "on the convolutions and FC" if vs else ""))
    cols = ["layer", "kernel", "shape", "engine us", "analytic us", "roofline us"]
    body = [[r["layer"], r["kernel"], r["shape"], _us(r["engine_seconds"]),
             _us(r["analytic_seconds"]), _us(r["roofline_seconds"])] for r in rows]
    foot = ["total", "", "", _us(totals["engine"]), _us(totals["analytic"]), _us(totals["roofline"])]
    if vs is not None:
        cols.append(f"{vs[0].name} us")
        body = [b + [_us(r["systolic_seconds"])] for b, r in zip(body, rows)]
        foot.append(_us(totals["systolic"]))
    print(format_table(cols, body + [foot], right=[False, False, False] + [True] * (len(cols) - 3)))
    if vs is not None:
        print(f"{vs[0].name}: batch norm, ReLU, adds, pools and transforms are not run on the "
              "array (-); its total is the convolutions' and the FC's")
    doc = {"hw": hw.name, "workload": args.workload, "batch": args.batch, "plan": args.plan,
           "mode": args.mode, "l2": args.l2, "total_seconds": totals,
           "wall_seconds": out.wall_seconds}
    if vs is not None:
        doc["systolic_hw"] = vs[0].name
    if out.interrupted:
        doc.update(layers_done=out.done, layers_total=len(out.results))
    finish(args, out, rows, lambda rs: {**doc, "layers": rs}, lambda path: plan_chart(rows, path, doc))


def _vs(args, net):
    """``--vs HW``: (the systolic preset, {layer: seconds}) of the network's convolutions
    and FC on it."""
    import hwmodels
    sys_hw = hwmodels.get(args.vs)
    per, closed = pl.systolic_layers(sys_hw, net)
    if closed:
        print(f"--vs {sys_hw.name}: too many folds for the pipeline model; its stalls from the "
              "closed form")
    return sys_hw, per


def _oracle(args, hw, net):
    """``--oracle FILE``: the plan picked from the predictions, written to FILE; the
    picks of every predictor in a table."""
    rep = pl.oracle(hw, net, args.mode, args.l2, args.workers, args.scheduler)
    for lp, why in rep.refused:
        print(f"left out of the search: {lp.op.name} as {lp.kernel} {lp.layout} ({why.split(': ', 1)[-1]})")
    out = rep.outcome
    if out.interrupted:
        print(f"stopped after {out.done} of {len(rep.layers)} layer predictions: no plan picked"
              if out.done < len(rep.layers) else
              f"stopped while searching for the plan (all {out.done} layer predictions done): "
              "no plan picked")
        # the predictions that finished, as the CSV and JSON of a finished run hold them
        write_partial(args, rep.rows(), lambda rs: {"hw": hw.name, "workload": args.workload,
                                              "batch": args.batch, "layers": rs})
        print(f"--oracle {args.oracle} not written")
        raise KeyboardInterrupt
    table = []
    for p, pick in rep.picks.items():
        mix = Counter(pl.config_name(c) for c in rep.choices[p].configs.values() if isinstance(c, tuple))
        uni = pick["uniform_seconds"]
        table.append([p, pick["best_of_seconds"] * 1e3, pick["seconds"] * 1e3,
                      pick["switch_seconds"] * 1e3,
                      *("-" if uni[u] is None else uni[u] * 1e3 for u in pl.UNIFORM),
                      ", ".join(f"{n} {k}" for k, n in mix.most_common())])
    by = rep.picked_by
    print(f"{args.workload} batch {args.batch} on {hw.name}: the oracle over {len(rep.layers)} layer "
          f"configurations and transforms (ms)")
    print(format_table(["predictor", "best-of", "DP plan", "transforms", *pl.UNIFORM,
                        "DP plan's convolutions"], table, right=[False] + [True] * 7 + [False]))
    comment = (f"roofsim plan --oracle: {args.workload} batch {args.batch} on {hw.name}, picked "
               f"from the {by} predictions\npredicted {rep.picks[by]['seconds'] * 1e3:.3f} ms ({by}); "
               f"best-of bound {rep.picks[by]['best_of_seconds'] * 1e3:.3f} ms")
    atomic_write(args.oracle, pl.plan_json(net, rep.configs, comment.replace("\n", "; "))
                 if args.oracle.lower().endswith(".json") else pl.plan_text(net, rep.configs, comment))
    print(f"wrote {args.oracle} (the {by} predictions' plan)")
    doc = {"hw": hw.name, "workload": args.workload, "batch": args.batch, "mode": args.mode,
           "l2": args.l2, "picked_by": by, "oracle": rep.picks, "wall_seconds": out.wall_seconds}
    rows = rep.rows()
    write_outputs(args, rows, lambda: {**doc, "layers": rows})

"""``roofsim tune``: every configuration of roofsim's kernels for one GEMM or
convolution, ranked by predicted time."""
from __future__ import annotations

import workloads
from simulator.table import format_table

from ..options import add_hw, add_outputs, load_hw, positive_int
from ..outputs import finish
from . import BY_NAME

NEEDS = ("engine",)

DESCRIPTION = (
    "Enumerate the knobs roofsim's kernels have for one GEMM or convolution (algorithm, "
    "layout, tile, thread mapping, block), rank every candidate with the analytic model, then "
    "the best few with the engine, and print each with what limits it.")


def add_tune(sub):
    p = sub.add_parser("tune", help=BY_NAME["tune"].help, description=DESCRIPTION)
    add_hw(p)
    p.add_argument("--workload", required=True, metavar="OP",
                   help="gemm:MxNxK or conv:n=..,c=..,h=..,w=..,k=..,r=..,s=..,stride=..,pad=..")
    p.add_argument("--batch", type=positive_int("batch"), help="a convolution's n, or a GEMM's M x B")
    p.add_argument("--engine-top", type=positive_int("engine-top", 100, minimum=0), default=3,
                   metavar="N", help="run the engine on the N best by the analytic model (default 3)")
    add_outputs(p)
    p.set_defaults(func=run)


def run(args):
    from simulator.analysis.tune import candidates, ranking
    hw = load_hw(args, "simt")
    net = workloads.resolve(args.workload, batch=args.batch)
    if len(net.ops) != 1:
        raise ValueError(f"--workload {args.workload!r}: tune takes one GEMM or convolution "
                         "(gemm:MxNxK or conv:n=..,...), not a network")
    op = net.ops[0]
    n = len(candidates(op))
    got = ranking(hw, op, args.engine_top)
    rows = got.rows
    part = ""
    if got.interrupted:
        timed = sum(r["engine_seconds"] is not None for r in rows)
        part = (f" (stopped: {len(rows)} of {n} candidates predicted, {timed} by the engine; "
                "ranked by what finished)")
    top = min(args.engine_top, n)
    on = (f"on the best {top}" if top < n else f"on all {n}") if top else "on none (--engine-top 0)"
    print(f"{op.describe()} on {hw.name}: {n} candidates; analytic model on each, engine "
          f"(sampled) {on}{part}")
    if rows:
        print(format_table(["rank", "candidate", "engine us", "analytic us", "limited by"],
                           [[r["rank"], r["label"],
                             "-" if r["engine_seconds"] is None else r["engine_seconds"] * 1e6,
                             "-" if r["analytic_seconds"] is None else r["analytic_seconds"] * 1e6,
                             r["limiter"]] for r in rows],
                           right=[True, False, True, True, False]))
    out = [{k: v for k, v in r.items() if k != "candidate"} for r in rows]
    finish(args, got.interrupted, out,
           lambda rs: {"hw": hw.name, "op": op.describe(), "ranking": rs})

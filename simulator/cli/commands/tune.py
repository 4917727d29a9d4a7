"""``roofsim tune``: every configuration of roofsim's kernels for one GEMM or
convolution, ranked by predicted time."""
from __future__ import annotations

import workloads
from simulator.table import format_table

from ..options import add_hw, add_outputs, load_hw, positive_int
from ..outputs import write_outputs
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
    from simulator.analysis.tune import rank
    hw = load_hw(args, "simt")
    net = workloads.resolve(args.workload, batch=args.batch)
    if len(net.ops) != 1:
        raise ValueError(f"--workload {args.workload!r}: tune takes one GEMM or convolution "
                         "(gemm:MxNxK or conv:n=..,...), not a network")
    rows = rank(hw, net.ops[0], args.engine_top)
    print(f"{net.ops[0].describe()} on {hw.name}: {len(rows)} candidates; analytic model on "
          f"each, engine (sampled) on the best {args.engine_top}")
    print(format_table(["rank", "candidate", "engine us", "analytic us", "limited by"],
                       [[r["rank"], r["label"],
                         "-" if r["engine_seconds"] is None else r["engine_seconds"] * 1e6,
                         "-" if r["analytic_seconds"] is None else r["analytic_seconds"] * 1e6,
                         r["limiter"]] for r in rows],
                       right=[True, False, True, True, False]))
    out = [{k: v for k, v in r.items() if k != "candidate"} for r in rows]
    write_outputs(args, out, lambda: {"hw": hw.name, "op": net.ops[0].describe(), "ranking": out})

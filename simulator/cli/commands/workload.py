"""``roofsim workload list`` and ``roofsim workload show``: the networks and op forms,
and every layer of one with its FLOPs and compulsory bytes."""
from __future__ import annotations

from simulator.table import format_table
from workloads.networks import NETWORKS, SINGLE_OP_FORMS
from workloads.scalesim import to_topology_csv

from ..options import DTYPE_CHOICES, LAYOUTS, Parser, load_workload, positive_int
from ..outputs import write_outputs

NEEDS = ()


def add_workload(sub):
    wl = sub.add_parser("workload", help="workloads").add_subparsers(
        dest="wlcmd", metavar="ACTION", parser_class=Parser)
    wl.required = True
    p = wl.add_parser("list", help="list networks and single-op forms")
    p.set_defaults(func=run_list)
    p = wl.add_parser("show", help="layers with FLOPs and compulsory bytes")
    p.add_argument("workload", metavar="W")
    p.add_argument("--batch", type=positive_int("batch"))
    p.add_argument("--resolution", type=positive_int("resolution"))
    p.add_argument("--dtype", choices=DTYPE_CHOICES)
    p.add_argument("--layout", choices=LAYOUTS)
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--scalesim-csv", metavar="FILE", help="write it as a SCALE-Sim topology CSV")
    p.set_defaults(func=run_show)


def run_list(args):
    rows = [[n, d] for n, (_, d) in NETWORKS.items()] + [[k, v] for k, v in SINGLE_OP_FORMS.items()]
    print(format_table(["workload", "what"], rows, right=[False, False]))


def run_show(args):
    net = load_workload(args)
    topology = None
    if args.scalesim_csv:            # refused (a batch, groups) before anything is shown
        # SCALE-Sim's topology holds shapes only: a dtype or layout typed would be dropped
        dropped = [o for o in ("dtype", "layout") if o in args.given]
        if dropped:
            raise ValueError(f"--{dropped[0]} applies to the table and --csv/--json, not to "
                             "--scalesim-csv (a SCALE-Sim topology holds shapes only)")
        topology = to_topology_csv(net)
    print(f"{net.name}: {net.description}")
    rows = [[op.name, op.kind, op.describe(), op.macs(), op.flops(), op.min_bytes()] for op in net.ops]
    rows.append(["total", "", f"{len(net.ops)} layers", net.macs(), net.flops(), net.min_bytes()])
    print(format_table(["layer", "kind", "shape", "MACs", "FLOPs", "compulsory bytes"], rows,
                       right=[False, False, False, True, True, True]))
    write_outputs(args, [op.to_dict() for op in net.ops], net.to_dict)
    if topology is not None:
        from hwmodels.fileio import atomic_write
        atomic_write(args.scalesim_csv, topology)
        left = sum(op.kind in ("batchnorm", "pool2d") for op in net.ops)
        print(f"wrote {args.scalesim_csv} (SCALE-Sim conv topology format"
              + (f"; {left} batch norms and pools left out: a topology lists the array's layers)"
                 if left else ")"))

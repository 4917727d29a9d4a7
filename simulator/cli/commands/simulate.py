"""``roofsim simulate systolic`` (every layer on a TPU-style array) and ``roofsim
simulate simt`` (one kernel launch, or two, on a SIMT GPU)."""
from __future__ import annotations

from hwmodels.units import format_seconds, format_si
from simulator.table import format_table

from .. import kernel_options as ko
from ..options import (
    L2_NOTE,
    TIMELINE_INSTRUCTIONS,
    Parser,
    add_engine,
    add_hw,
    add_outputs,
    add_workload,
    load_hw,
    load_workload,
    one_dims,
    set_fields,
)
from ..outputs import hw_dict, partial_of, write_json, write_outputs, write_partial, write_timeline
from . import BY_NAME
from .array import add_array
from .simulate_kernel import add_kernel, print_traffic, sampling_note

NEEDS = ("kernels", "engine")

SIMT_DESCRIPTION = (
    "Simulate a kernel on a SIMT GPU preset. Default launches: relu blocks of 256 with a grid "
    "filling every SM once; gemm-naive 16x16 blocks (threadIdx.x on columns); gemm-tiled "
    "T=16; conv-direct and conv-im2col blocks of 256. Default mode: sampled (a slice of the "
    "SMs with its share of the L2 and DRAM, runs of over 7 alike waves cut to 4 + 2, loops "
    "of over 192 trips cut and extrapolated; it prints what it simulated and its estimated "
    "error).")
TIMELINE_HELP = ("the layers and their folds in time, a Chrome trace (open it in "
                 "chrome://tracing or ui.perfetto.dev)")


def add_simulate(sub, help_only=False):
    sim = sub.add_parser("simulate", help=BY_NAME["simulate"].help).add_subparsers(
        dest="engine", metavar="ENGINE", parser_class=Parser)
    sim.required = True
    p = sim.add_parser("systolic", help="TPU-style systolic array, per layer and in total")
    add_hw(p)
    add_workload(p)
    p.add_argument("--dataflow", choices=("os", "ws", "is"),
                   help="output-, weight- or input-stationary (default: the .cfg's, else ws)")
    p.add_argument("--array", metavar="RxC", help="override the array shape, e.g. 128x128")
    p.add_argument("--mode", choices=("default", "scalesim"), default="default",
                   help="default: physically faithful; scalesim: SCALE-Sim 3.0.0's conventions")
    p.add_argument("--stalls", choices=("pipeline", "closed-form"),
                   help="default mode's stall model: the access/execute pipeline (default; "
                        "simulates every fold, slow for tiny arrays) or max(0, DRAM time - "
                        "compute time)")
    add_outputs(p, plot="utilisation per layer and a fold-by-PE heatmap", timeline=TIMELINE_HELP)
    p.set_defaults(func=run_systolic, dtype=None, in_thread=True)

    p = sim.add_parser("simt", help="Fermi-style SIMT GPU running one kernel launch (or two)",
                       description=SIMT_DESCRIPTION)
    ko.add_problem(p, ko.kernels(live=not help_only))
    p.add_argument("--grid", metavar="G[xG2]", help="relu's grid (any; default: fills the SMs once)")
    p.add_argument("--block", metavar="B[xB2]", help="threads per block (gemm-naive: BxB2)")
    add_engine(p)
    add_outputs(p, csv=False, timeline=(
        "engine modes: every block on its SM in time and the first "
        f"{TIMELINE_INSTRUCTIONS:,} instructions issued, a Chrome trace (open it in "
        "chrome://tracing or ui.perfetto.dev)"))
    p.set_defaults(func=run_simt, in_thread=True)

    add_kernel(sim)
    add_array(sim)


# ---------------------------------------------------------------- systolic

def array_shape(text):
    """``RxC`` -> (rows, cols), read as the API's ``array="RxC"`` is."""
    from simulator.arguments import dims_text
    t = dims_text(text or "", 2)
    if t is None:
        raise ValueError(f"--array {text!r}: expected ROWSxCOLS with positive integers, e.g. 128x128")
    return t


def run_systolic(args):
    from simulator.analysis.plots import systolic_chart
    from simulator.analysis.traces import systolic_trace
    from simulator.systolic.engine import ARRAY_KINDS, simulate_network
    done, doc = [], {"predictor": "systolic"}
    # Ctrl-C: the layers that finished, marked partial (the JSON even before the first)
    partial_of(args).keep(lambda: write_partial(
        args, [{"layer": lr.workload, **lr.systolic.to_dict()} for lr in list(done)],
        lambda rs: {**doc, "layers_done": len(rs),
                    "layers": [{**lr.to_dict(), "partial": True} for lr in done[:len(rs)]]}))
    hw = load_hw(args)
    net = load_workload(args)
    doc.update(hardware=hw.name, workload=net.name, mode=args.mode,
               layers_total=sum(op.kind in ARRAY_KINDS for op in net.ops))
    rows, cols = array_shape(args.array) if args.array is not None else (None, None)
    dataflow = args.dataflow or getattr(hw, "dataflow", "ws")
    set_keys = set(set_fields(args))
    for opt, given, keys in (("--array", args.array, ("rows", "cols")),
                             ("--dataflow", args.dataflow, ("dataflow",))):
        both = sorted(set_keys & set(keys))
        if given is not None and both:
            raise ValueError(f"{opt} {given} and --set {both[0]}=... both set the array's "
                             f"{'shape' if opt == '--array' else 'dataflow'}; give one")
    if args.mode == "scalesim" and args.stalls is not None:
        raise ValueError("--stalls applies to --mode default only (scalesim mode has "
                         "SCALE-Sim's own stall model)")
    res = simulate_network(hw, net, dataflow, args.mode, rows, cols,
                           stalls=args.stalls or "pipeline", trace=bool(args.timeline),
                           on_layer=done.append)
    t = res.systolic
    print(f"{net.name} on {hw.name}: {t.rows}x{t.cols} array, {dataflow}, {args.mode} mode"
          f"{', stalls from the ' + t.stalls + ' model' if args.mode == 'default' else ''}, "
          f"{format_si(hw.clock_hz, 'Hz')}, DRAM {format_si(hw.dram.bandwidth_bytes_per_s, 'B/s')}")
    rows_out = []
    for r in res.layers + (res,):
        x = r.systolic
        rows_out.append([r.workload if r is not res else "total", r.instructions,
                         x.compute_cycles, x.stall_cycles, r.cycles, r.utilization,
                         x.compute_utilization, x.mapping_efficiency, x.sram_reads.ifmap,
                         x.sram_reads.filter, x.sram_writes.ofmap, r.bytes_by_level["dram"],
                         r.seconds * 1e6])
    print(format_table(["layer", "folds", "compute cyc", "stall cyc", "total cyc", "util",
                        "cmp util", "map eff", "SRAM ifmap rd", "SRAM filt rd", "SRAM ofmap wr",
                        "DRAM B", "us"], rows_out, right=[False] + [True] * 12))
    print("util = MACs / (PEs x total cycles); cmp util = MACs / (PEs x compute cycles)")
    if t.not_on_array:
        print(f"not on the array: {len(t.not_on_array)} layers (batch norms, pools, biases: a TPU "
              "applies them as results drain), left out of the total")
    with partial_of(args).final():
        write_outputs(args, [{"layer": r.workload, **r.systolic.to_dict()} for r in res.layers],
                      res.to_dict, lambda path: systolic_chart(res, path))
        if args.timeline:
            write_timeline(args.timeline, systolic_trace(res, hw.clock_hz))


# ---------------------------------------------------------------- simt

def run_simt(args):
    from simulator.analysis.compare import predict
    from simulator.analysis.traces import simt_trace
    from simulator.simt import api
    doc = {}
    # Ctrl-C before the answer: the JSON still written, partial, with what is known
    partial_of(args).keep(lambda: write_partial(args, [], lambda rs: doc))
    hw = load_hw(args, "simt", " (try gtx480, v100, h100-sxm)")
    doc.update(hardware=hw_dict(hw), kernel=args.kernel, mode=args.mode)
    if args.timeline and args.mode == "analytic":
        raise ValueError("--timeline needs the engine (--mode full or sampled); the analytic "
                         "model has no time line")
    name, kw = ko.problem_args(args, one_dims(args.grid, "--grid"), one_dims(args.block, "--block"))
    prob = api.build(hw, name, **kw)
    pred = predict(hw, prob, args.mode, args.policy, trace=TIMELINE_INSTRUCTIONS if args.timeline else 0,
                   l2=args.l2)
    r, a = pred.chosen, pred.analytic
    lc = r.last_launch
    print(f"{prob.kernel} on {hw.name}: " + "; ".join(p.describe() for p in prob.programs))
    print(f"  occupancy {lc.blocks_per_sm} blocks/SM, {lc.warps_per_sm} warps/SM "
          f"({lc.occupancy:.0%}, limited by {lc.limited_by}); {lc.waves:.2f} waves; "
          f"{lc.regs_per_thread} regs/thread ({lc.resources_source}); L2 {args.l2}"
          + L2_NOTE[args.l2])
    what = {"full": "engine (every block)", "sampled": "engine" + sampling_note(r),
            "analytic": "analytic model"}[args.mode]
    print(f"  {what}: {r.cycles:.0f} cycles = {format_seconds(r.seconds)}; "
          f"{r.instructions:.0f} warp instructions"
          + (f", IPC {r.ipc:.2f}" if pred.engine is not None else ""))
    print(f"  analytic model: {format_seconds(a.seconds)} (limited by "
          f"{a.limiter}); roofline bound: {format_seconds(pred.roofline.seconds)}")
    print_traffic(r)
    print(f"  wall time: model {r.wall_seconds:.3f} s, analytic {a.wall_seconds:.3f} s")
    with partial_of(args).final():
        if args.json:
            write_json(args.json, {"hardware": hw_dict(hw), **pred.to_dict()})
        if args.timeline:
            write_timeline(args.timeline, simt_trace(pred.engine, hw.clock_hz))

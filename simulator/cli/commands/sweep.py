"""``roofsim sweep grid`` (predicted time for every grid and block pair of a kernel) and
``roofsim sweep layout`` (NCHW against NHWC for every convolution of a network)."""
from __future__ import annotations

from simulator.table import format_table

from .. import kernel_options as ko
from ..options import (
    MAX_SWEEP,
    Parser,
    add_engine,
    add_hw,
    add_outputs,
    add_workers,
    int_list,
    load_hw,
    positive_int,
    workers,
)
from ..outputs import finish
from . import BY_NAME

NEEDS = ("kernels", "engine", "dask")


def add_sweep(sub, help_only=False):
    table = ko.kernels(live=not help_only)
    sw = sub.add_parser("sweep", help=BY_NAME["sweep"].help).add_subparsers(
        dest="sweep", metavar="WHAT", parser_class=Parser)
    sw.required = True
    p = sw.add_parser("grid", help="predicted time for every grid and block pair",
                      description="Engine and analytic model side by side for every (grid, block) "
                      "pair. --grids applies to relu (grid-stride); other kernels sweep --blocks. "
                      "--launch FILE.py:LAUNCHER sweeps a numba.cuda kernel of yours instead "
                      "(the launcher gets each grid and block; timed from its SASS by the "
                      "engine).")
    ko.add_problem(p, table, required=False)
    p.add_argument("--launch", metavar="FILE.py:LAUNCHER",
                   help="a kernel of yours: a Python file and the function in it that returns "
                   "(kernel, grid, block, args) for grid= and block= (in place of --kernel)")
    p.add_argument("--grids", metavar="LIST", help="e.g. 1-64 or 15,30,45,60 or 8-1024:8")
    p.add_argument("--blocks", metavar="LIST", required=True, help="e.g. 64,128,256 or 16x16,32x8")
    add_engine(p, mode_help="engine mode (analytic: the analytic model only, milliseconds per point)")
    add_workers(p)
    add_outputs(p, plot="time against grid size, one line per block")
    p.set_defaults(func=run_grid)

    p = sw.add_parser("layout", help="NCHW against NHWC for every convolution of a network",
                      description="Default mode analytic (milliseconds per layer); --mode sampled "
                      "runs the engine too (on two cores about 10 s for ResNet-50 at batch 1, 40 s "
                      "at batch 32).")
    add_hw(p)
    p.add_argument("--kernel", choices=ko.convolution_kernels(table), default="conv-direct",
                   help="a kernel that computes a convolution")
    p.add_argument("--workload", default="resnet50", metavar="W",
                   help="a network or a convolution with the layers to compare (default resnet50)")
    p.add_argument("--batch", type=positive_int("batch"))
    p.add_argument("--block", type=positive_int("block"), help="threads per block (default 256)")
    add_engine(p, default="analytic")
    add_workers(p)
    add_outputs(p)
    p.set_defaults(func=run_layout)


def run_grid(args):
    from simulator.analysis.plots import grid_sweep_chart
    from simulator.analysis.sweeps import grid_sweep
    hw = load_hw(args, "simt")
    if (args.kernel is None) == (args.launch is None):
        raise ValueError("sweep grid: give --kernel NAME (a built-in kernel) or --launch "
                         "FILE.py:LAUNCHER (a kernel of yours), one of them")
    if args.launch is not None:
        return _run_launcher_grid(args, hw)
    table = ko.kernels()
    takes = {a["name"]: a for k in table if k["name"] == args.kernel for a in k["args"]}
    if "block" not in takes:
        raise ValueError(f"{args.kernel} takes no block (its block follows from its problem: "
                         "compare its variants with simulate simt)")
    block_dims = takes["block"]["ndim"]
    blocks = int_list(args.blocks, "--blocks", dims=2)
    flat = [b for b in blocks if isinstance(b, tuple) and len(b) > block_dims]
    if flat:
        raise ValueError(f"--blocks {args.blocks!r}: {args.kernel} takes a "
                         f"{block_dims}-D block; {'x'.join(map(str, flat[0]))} is "
                         f"{len(flat[0])}-D")
    if args.grids is not None:
        if "grid" not in takes:
            raise ValueError(f"--grids applies to {', '.join(ko.taking('grid', table))}; "
                             f"{args.kernel}'s grid follows from the block (sweep --blocks only)")
        grids = int_list(args.grids, "--grids")
    else:
        if "grid" in takes:
            raise ValueError(f"{args.kernel} needs --grids")
        grids = [None]
    if len(blocks) * len(grids) > MAX_SWEEP:
        raise ValueError(f"--grids x --blocks: {len(grids):,} x {len(blocks):,} launches; a sweep "
                         f"takes at most {MAX_SWEEP:,}")
    name, kw = ko.problem_args(args)
    pairs = [(g, b) for b in blocks for g in grids]
    rows, out = grid_sweep(hw, name, kw, pairs, args.mode, args.policy, args.l2,
                           workers(args), args.scheduler)
    eng = args.mode != "analytic"
    print((f"{args.kernel} on {hw.name}: {len(rows)} launches, {args.mode} engine"
           if eng else f"{args.kernel} on {hw.name}: {len(rows)} launches, analytic model only")
          + f"; L2 {args.l2}")
    if out.interrupted:
        print(f"interrupted: {out.done} of {len(out.results)} points; the outputs are marked partial")
    show = rows if len(rows) <= 60 else rows[:30] + rows[-30:]
    print(format_table(["grid", "block", "blocks", "waves", "occupancy", "engine us", "analytic us"],
                       [[r["grid"], r["block"], r["blocks"], r["waves"], r["occupancy"],
                         r["engine_seconds"] * 1e6 if eng else "-", r["analytic_seconds"] * 1e6]
                        for r in show], right=[False, False] + [True] * 5))
    if len(rows) > 60:
        print(f"(first and last 30 of {len(rows)} rows; --csv has them all)")
    finish(args, out, rows, lambda rs: {"hw": hw.name, "kernel": args.kernel, "mode": args.mode,
                                        "l2": args.l2, "rows": rs},
           lambda path: grid_sweep_chart(rows, path, f"{args.kernel} on {hw.name}"))


def run_layout(args):
    from simulator.analysis.sweeps import layout_pairs, layout_sweep
    hw = load_hw(args, "simt")
    pairs = layout_pairs(args.workload, args.batch)
    rows, out = layout_sweep(hw, args.kernel, pairs, args.block, args.mode, args.policy,
                             args.l2, workers(args), args.scheduler)
    key = "engine" if args.mode != "analytic" else "analytic"
    print(f"{args.kernel} on {hw.name}, {args.workload} batch {args.batch or 1}: NCHW vs NHWC "
          f"({key}{', ' + args.mode if key == 'engine' else ''}; L2 {args.l2})")
    if not rows:
        raise KeyboardInterrupt
    tot = {lay: sum(r[f"{lay}_{key}_seconds"] for r in rows) for lay in ("nchw", "nhwc")}
    print(format_table(["layer", "shape", "NCHW us", "NHWC us", "NHWC speed-up"],
                       [[r["layer"], r["shape"], r[f"nchw_{key}_seconds"] * 1e6,
                         r[f"nhwc_{key}_seconds"] * 1e6, r["nhwc_speedup"]] for r in rows]
                       + [["total", "", tot["nchw"] * 1e6, tot["nhwc"] * 1e6,
                           tot["nchw"] / tot["nhwc"]]],
                       right=[False, False, True, True, True]))
    if out.interrupted:
        print(f"interrupted: {len(rows)} of {len(pairs)} layers; the outputs are marked partial")
    finish(args, out, rows, lambda rs: {"hw": hw.name, "kernel": args.kernel, "l2": args.l2,
                                        "rows": rs})


def _run_launcher_grid(args, hw):
    """``sweep grid --launch``: the user's launcher at every (grid, block), each launch
    timed from its SASS (``simulate_kernel``), in turn; Ctrl-C keeps the rows done."""
    from simulator.analysis.plots import grid_sweep_chart
    from simulator.kernelcode.timing import simulate_kernel
    from simulator.kernelcode.userfile import call_launcher
    given = [n for n in (*ko.problem_options(ko.kernels()), "shape", "layer", "batch", "layout")
             if getattr(args, n, None) is not None]
    if given:
        raise ValueError(f"--{given[0].replace('_', '-')}: a built-in kernel's problem; with "
                         "--launch the launcher sets up the problem")
    if args.mode == "analytic":
        raise ValueError("--mode analytic: a kernel of yours (--launch) is timed by the engine; "
                         "use --mode sampled or full")
    blocks = int_list(args.blocks, "--blocks", dims=3)
    grids = int_list(args.grids, "--grids", dims=3) if args.grids is not None else [None]
    if len(blocks) * len(grids) > MAX_SWEEP:
        raise ValueError(f"--grids x --blocks: {len(grids):,} x {len(blocks):,} launches; a sweep "
                         f"takes at most {MAX_SWEEP:,}")
    rows, name = [], args.launch
    try:
        for b in blocks:
            for g in grids:
                kernel, grid, block, kargs = call_launcher(args.launch, g, b)
                r = simulate_kernel(kernel, grid, block, kargs, hw=hw, mode=args.mode,
                                    l2=args.l2, policy=args.policy or "gto")
                lc = r.last_launch
                name = r.workload
                rows.append({"grid": _short(lc.grid), "block": _short(lc.block),
                             "blocks": r.extra["total_blocks"], "waves": lc.waves,
                             "occupancy": lc.occupancy, "blocks_per_sm": lc.blocks_per_sm,
                             "engine_seconds": r.seconds, "instructions": r.instructions,
                             "sampled": r.sampled, "engine_estimated_error": r.estimated_error,
                             "sim_wall_seconds": r.wall_seconds})
                print(f"  grid {rows[-1]['grid']:>10} block {rows[-1]['block']:>8}: "
                      f"{r.seconds * 1e6:10.2f} us", flush=True)
    except KeyboardInterrupt:
        print(f"interrupted: {len(rows)} of {len(blocks) * len(grids)} points; the outputs are "
              "marked partial")
        finish(args, True, rows, lambda rs: {"hw": hw.name, "launch": args.launch,
                                             "mode": args.mode, "l2": args.l2, "rows": rs})
    print(f"{name} ({args.launch}) on {hw.name}: {len(rows)} launches, {args.mode} engine, "
          f"timed from its SASS; L2 {args.l2}")
    print(format_table(["grid", "block", "blocks", "waves", "occupancy", "engine us",
                        "SASS instructions"],
                       [[r["grid"], r["block"], r["blocks"], r["waves"], r["occupancy"],
                         r["engine_seconds"] * 1e6, r["instructions"]] for r in rows],
                       right=[False, False] + [True] * 5))
    finish(args, False, rows, lambda rs: {"hw": hw.name, "launch": args.launch,
                                          "mode": args.mode, "l2": args.l2, "rows": rs},
           lambda path: grid_sweep_chart(rows, path, f"{name} on {hw.name}"))


def _short(d) -> str:
    d = tuple(d)
    while len(d) > 1 and d[-1] == 1:
        d = d[:-1]
    return "x".join(map(str, d))

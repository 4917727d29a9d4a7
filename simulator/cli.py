"""The ``roofsim`` command line (also ``python -m simulator``).

Bad input ends with exit code 2 and one line naming the problem; no traceback.
"""
from __future__ import annotations

import os
import signal
import sys


def _interrupted_while_loading(signum, frame):
    # Ctrl-C before main() runs (the imports below take tens of milliseconds): the same
    # one line and exit code as later, no traceback from inside an import
    os.write(2, b"roofsim: interrupted\n")
    os._exit(130)


# only where this module starts the ``roofsim`` command, not where a program imports it
if (os.path.basename(sys.argv[0] if sys.argv else "") in ("roofsim", "__main__.py")
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
    signal.signal(signal.SIGINT, _interrupted_while_loading)

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import re  # noqa: E402

from hwmodels.units import format_bytes, format_seconds, format_si, parse_quantity

DTYPE_CHOICES = ("fp32", "fp16", "bf16", "int8", "fp64", "tf32")


class UsageError(Exception):
    pass


# the help of options many commands share, where a command gives none of its own
COMMON_HELP = {
    "--csv": "write the table as CSV to FILE",
    "--json": "write the result, with its inputs, as JSON to FILE",
    "--plot": "draw the chart to FILE (.png, .svg or .pdf)",
    "--toml": "write the hardware as a TOML preset to FILE",
    "--batch": "batch size (default 1)",
    "--resolution": "input height and width of a network (default: its own)",
    "--dtype": "element type (default fp32)",
    "--layout": "activation layout of the convolutions (default nchw)",
    "--policy": "the engine's warp scheduler: gto (greedy then oldest, the default) or lrr "
                "(loose round robin); the analytic model has none",
    "--kernel": "a registered kernel (roofsim simulate simt --help lists them)",
    "--mode": "how to predict (see the command's description)",
    "--suites": "comma-separated suites, e.g. grid,gemm,conv",
    "hw": "a hardware preset name (roofsim hw list), a TOML file or a SCALE-Sim .cfg",
    "workload": "a network (resnet50...), gemm:MxNxK, relu:N, conv:n=..,c=..,... or a "
                "SCALE-Sim topology CSV",
}


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        raise UsageError(f"{self.prog}: {message}")

    def add_argument(self, *names, **kw):
        if not kw.get("help") and names and names[0] in COMMON_HELP:
            kw["help"] = COMMON_HELP[names[0]]
        action = super().add_argument(*names, **kw)
        if names and names[0] in ("--csv", "--json") and "--no-timing" not in self._option_string_actions:
            super().add_argument("--no-timing", action="store_true",
                                 help="leave the run's own wall times out of --csv and --json, "
                                      "so that two runs' files compare equal")
        return action


def _set_fields(args) -> list:
    """The hardware fields the command's --set options name, in order."""
    return [str(x).partition("=")[0].strip() for x in (getattr(args, "set", None) or [])]


def _hw(args):
    import hwmodels
    keys = _set_fields(args)
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise ValueError(f"--set {twice[0]}=...: given {keys.count(twice[0])} times; set each "
                         "field once")
    hw = hwmodels.get(args.hw)
    return hwmodels.with_overrides(hw, args.set or [])


MAX_COUNT = 2**48     # any count typed on the command line (elements, sizes, batch...)


def _budget(text):
    """--engine-budget: a whole number of warp instructions, 0 up to 1e15."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{str(text)[:40]!r} is not a number") from None
    if not 0 <= v <= 1e15 or v != int(v):
        raise argparse.ArgumentTypeError(f"{str(text)[:40]!r}: a whole number of warp "
                                         "instructions from 0 to 1e15")
    return v


def _positive_seconds(name):
    """A positive, finite number of seconds (a plain number: ``600``, ``1.5``)."""
    def conv(text):
        t = str(text).strip()
        if not re.fullmatch(r"[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?", t):
            raise argparse.ArgumentTypeError(f"{t[:40]!r}: expected a positive number of seconds, "
                                             "e.g. 600")
        v = float(t)
        if not 0 < v < 1e9:
            raise argparse.ArgumentTypeError(f"{t[:40]}: expected a positive number of seconds "
                                             "under 1e9")
        return v
    conv.__name__ = name
    return conv


def _positive_int(name, maximum=MAX_COUNT, minimum=1):
    def conv(text):
        t = str(text).strip()
        if len(t) > 18:
            raise argparse.ArgumentTypeError(f"{t[:12]}... ({len(t)} characters) is too large; "
                                             f"at most {maximum}")
        try:
            v = _ascii_int(t)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{t[:40]!r} is not an integer") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"{v} must be >= {minimum}")
        if v > maximum:
            raise argparse.ArgumentTypeError(f"{v} is too large; at most {maximum}")
        return v
    conv.__name__ = name
    return conv


def default_dtype(hw) -> str:
    """fp32 where the hardware computes it, else its fastest precision (tpu-v1: int8)."""
    supported = hw.peak_rates().supported()
    if "fp32" in supported:
        return "fp32"
    return max((q for q in supported if q != "tf32"), key=hw.peak_flop_per_s)


def _workload(args, hw=None):
    import workloads
    if getattr(args, "dtype", "absent") is None and hw is not None:
        args.dtype = default_dtype(hw)
    storage = "fp32" if getattr(args, "dtype", None) == "tf32" else getattr(args, "dtype", None)
    return workloads.resolve(args.workload, batch=args.batch, resolution=args.resolution,
                             dtype=storage, layout=getattr(args, "layout", None))


def _add_hw(p, required=True):
    p.add_argument("--hw", required=required, metavar="NAME|FILE",
                   help="hardware preset name (`roofsim hw list`), a TOML file or a SCALE-Sim "
                        ".cfg file")
    p.add_argument("--set", action="append", metavar="FIELD=VALUE",
                   help="override one hardware field, e.g. l2.size_bytes=8MiB (repeatable)")


def _add_workload(p):
    p.add_argument("--workload", required=True, metavar="W",
                   help="resnet50, conv-ablation, gemm:MxNxK, relu:N, conv:n=..,c=..,..., or a "
                        "SCALE-Sim topology CSV")
    p.add_argument("--batch", type=_positive_int("batch"), help="batch size (default 1)")
    p.add_argument("--resolution", type=_positive_int("resolution"),
                   help="input height and width for networks (resnet50: 224, conv-ablation: 56)")
    p.add_argument("--layout", choices=("nchw", "nhwc"), help="activation layout (default nchw)")


# ---------------------------------------------------------------- hw

def cmd_hw_list(args):
    import hwmodels
    from simulator.table import format_table
    rows = []
    for n in hwmodels.names():
        hw = hwmodels.get(n)
        prec = hw.fastest_precision()
        dram = hw.memory_levels()[0]
        rows.append([n, hw.family, f"{hw.peak_flop_per_s(prec) / 1e12:.4g} ({prec})",
                     f"{dram.bandwidth_bytes_per_s / 1e9:.4g}", hw.description])
    print(format_table(["name", "family", "peak TFLOP/s", "DRAM GB/s", "description"], rows,
                       right=[False, False, True, True, False]))


def _hw_summary(hw) -> dict:
    rates = hw.peak_rates()
    return {
        "peak_flop_per_s": {q: hw.peak_flop_per_s(q) for q in rates.supported()},
        "memory_levels": [{"name": lv.name, "bandwidth_bytes_per_s": lv.bandwidth_bytes_per_s,
                           "inner_capacity_bytes": lv.inner_capacity_bytes,
                           "private_units": lv.private_units,
                           "ridge_flop_per_byte": {q: hw.peak_flop_per_s(q) / lv.bandwidth_bytes_per_s
                                                   for q in rates.supported()}}
                          for lv in hw.memory_levels()],
    }


def cmd_hw_show(args):
    import hwmodels
    from hwmodels.schema import doc
    from simulator.table import format_table, write_json
    hw = _hw(args)
    print(f"{hw.name}: {hw.description}  [family {hw.family}]")
    rows = []

    def walk(obj, prefix):
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if dataclasses.is_dataclass(v):
                walk(v, f"{prefix}{f.name}.")
            elif f.name not in ("name", "description"):
                rows.append([f"{prefix}{f.name}", _pretty(f.name, v), doc(type(obj), f.name)])
    walk(hw, "")
    print(format_table(["field", "value", "meaning"], rows, right=[False, True, False]))
    s = _hw_summary(hw)
    print()
    print("derived:")
    for q, v in s["peak_flop_per_s"].items():
        print(f"  peak {q:5s} {format_si(v, 'FLOP/s')}")
    for lv in s["memory_levels"]:
        ridges = ", ".join(f"{q} {r:.3g}" for q, r in lv["ridge_flop_per_byte"].items())
        print(f"  {lv['name']:5s} {format_si(lv['bandwidth_bytes_per_s'], 'B/s')}, "
              f"on-chip inside {format_bytes(lv['inner_capacity_bytes'])}; ridge FLOP/B: {ridges}")
    if args.json:
        write_json(args.json, {"hardware": hwmodels.to_dict(hw), "derived": s})
        print(f"wrote {args.json}")
    if args.toml:
        hwmodels.save_toml(hw, args.toml)
        print(f"wrote {args.toml}")


def _pretty(name, v):
    if isinstance(v, tuple):        # e.g. sm.shared_carveouts_bytes = 0,8,16,...,228 KiB
        if v and name.endswith("_bytes") and all(x % 1024 == 0 for x in v):
            return ",".join(str(x // 1024) for x in v) + " KiB"
        return ",".join(_pretty(name, x) for x in v) if v else "-"
    if v is None or isinstance(v, (str, bool)):
        return "-" if v is None else str(v)
    if name.endswith("_bytes_per_s"):
        return format_si(v, "B/s")
    if name.endswith("_bytes"):
        return format_bytes(v) if v >= 1024 else f"{v} B"
    if name.endswith("_hz"):
        return format_si(v, "Hz")
    if name.endswith("_s"):
        return format_seconds(v)
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


# ---------------------------------------------------------------- workload

def cmd_workload_list(args):
    from workloads.networks import NETWORKS, SINGLE_OP_FORMS
    from simulator.table import format_table
    rows = [[n, d] for n, (_, d) in NETWORKS.items()] + [[k, v] for k, v in SINGLE_OP_FORMS.items()]
    print(format_table(["workload", "what"], rows, right=[False, False]))


def cmd_workload_show(args):
    from simulator.table import format_table
    net = _workload(args)
    topology = None
    if args.scalesim_csv:            # refused (a batch, groups) before anything is shown
        from workloads.scalesim import to_topology_csv
        topology = to_topology_csv(net)
    print(f"{net.name}: {net.description}")
    rows = [[op.name, op.kind, op.describe(), op.macs(), op.flops(), op.min_bytes()] for op in net.ops]
    rows.append(["total", "", f"{len(net.ops)} layers", net.macs(), net.flops(), net.min_bytes()])
    print(format_table(["layer", "kind", "shape", "MACs", "FLOPs", "compulsory bytes"], rows,
                       right=[False, False, False, True, True, True]))
    _write_outputs(args, [op.to_dict() for op in net.ops], net.to_dict, None)
    if topology is not None:
        from hwmodels.fileio import atomic_write
        atomic_write(args.scalesim_csv, topology)
        left = sum(op.kind in ("batchnorm", "pool2d") for op in net.ops)
        print(f"wrote {args.scalesim_csv} (SCALE-Sim conv topology format"
              + (f"; {left} batch norms and pools left out: a topology lists the array's layers)"
                 if left else ")"))


# ---------------------------------------------------------------- roofline

def cmd_roofline(args):
    from simulator.analysis.roofline import roofline
    from simulator.table import format_table
    hw = _hw(args)
    net = _workload(args, hw)
    rep = roofline(hw, net, precision=args.dtype)
    print(f"{net.name} on {hw.name}, {rep.precision}: peak {format_si(rep.peak_flop_per_s, 'FLOP/s')}")
    for lv in rep.levels:
        print(f"  {lv.name:5s} {format_si(lv.bandwidth_bytes_per_s, 'B/s'):>11s}  ridge "
              f"{rep.ridge(lv.name):8.3g} FLOP/B  (on-chip inside: {format_bytes(lv.inner_capacity_bytes)})")
    rows = [[p.layer, p.kind, p.flops / 1e9, p.dram_bytes / 1e6, p.intensity_flop_per_byte,
             p.attainable_flop_per_s / 1e12, p.bound_seconds * 1e6, p.bound_by] for p in rep.points]
    t = rep.totals()
    rows.append(["total", f"{t['layers']} ops", t["flops"] / 1e9, t["dram_bytes"] / 1e6,
                 t["intensity_flop_per_byte"], t["attainable_flop_per_s"] / 1e12,
                 t["bound_seconds"] * 1e6, _dominant(t["seconds_by_bound"])])
    print(format_table(["layer", "kind", "GFLOP", "DRAM MB", "FLOP/B", "TFLOP/s", "bound us",
                        "bound by"], rows, right=[False, False, True, True, True, True, True, False]))
    share = ", ".join(f"{k} {v / t['bound_seconds']:.0%}" for k, v in t["seconds_by_bound"].items())
    print(f"lower-bound time {format_seconds(t['bound_seconds'])} ({share} of it); DRAM bytes are "
          "max(compulsory, pebble bound); launch overheads not included")
    from simulator.analysis.plots import roofline_chart
    _write_outputs(args, [p.row() for p in rep.points], rep.to_dict, lambda path: roofline_chart(rep, path))


def _write_outputs(args, rows, to_dict, plot):
    """--csv, --json and --plot, each only when asked for (to_dict is called lazily)."""
    from simulator.table import write_csv, write_json
    if getattr(args, "csv", None):
        write_csv(args.csv, rows)
        print(f"wrote {args.csv}")
    if getattr(args, "json", None):
        write_json(args.json, to_dict())
        print(f"wrote {args.json}")
    if getattr(args, "plot", None):
        plot(args.plot)
        print(f"wrote {args.plot}")


def _dominant(d):
    return max(d, key=d.get) if d else "-"


def cmd_roofline_compare(args):
    import hwmodels
    from simulator.analysis.plots import tpu_paper_chart
    from simulator.table import format_table
    names = _items(args.hw, "--hw")
    hws = [hwmodels.get(n) for n in names]
    rows = []
    for hw in hws:
        prec = hw.fastest_precision()
        peak = hw.peak_flop_per_s(prec)
        bw = hw.memory_levels()[0].bandwidth_bytes_per_s
        rows.append([hw.name, prec, peak / 1e12, bw / 1e9, peak / bw, peak / bw / 2])
    print(format_table(["hardware", "precision", "peak T/s", "DRAM GB/s", "ridge op/B",
                        "ridge MAC/B"], rows, right=[False, False, True, True, True, True]))
    if args.plot:
        tpu_paper_chart(args.plot, hws)
        print(f"wrote {args.plot}")


# ---------------------------------------------------------------- datamove

def cmd_datamove(args):
    from simulator.analysis.datamovement import data_movement, h2d_seconds, network_h2d_bytes
    from simulator.table import format_table, write_csv, write_json
    import hwmodels
    hw = _hw(args)
    net = _workload(args, hw)
    s = parse_quantity(args.onchip_bytes, "bytes", "--onchip-bytes") if args.onchip_bytes else None
    if s is not None and s <= 0:
        raise ValueError(f"--onchip-bytes {args.onchip_bytes!r}: must be > 0")
    word = max(op.dtype_bytes for op in net.ops)
    if s is not None and s < word:
        raise ValueError(f"--onchip-bytes {args.onchip_bytes!r}: less than one word ({word} B "
                         f"for {net.name}'s elements); at least {word}B")
    rows = data_movement(hw, net, s)
    link = hw.host_link
    print(f"{net.name} on {hw.name}: on-chip memory S = {format_bytes(rows[0].onchip_bytes)}"
          f"{' (--onchip-bytes)' if s else ' (registers + L1/shared + L2 or SRAMs)'}; host link: "
          f"{link.kind + ', pinned ' + format_si(link.pinned_bandwidth_bytes_per_s, 'B/s') + ', pageable ' + format_si(link.pageable_bandwidth_bytes_per_s, 'B/s') if link else 'none (host CPU)'}")
    table = [[r.layer, r.kind, r.compulsory_bytes / 1e6, r.pebble_bytes / 1e6,
              r.lower_bound_bytes / 1e6, r.h2d_bytes / 1e6,
              None if r.h2d_pinned_seconds is None else r.h2d_pinned_seconds * 1e6,
              None if r.h2d_pageable_seconds is None else r.h2d_pageable_seconds * 1e6] for r in rows]
    hb = network_h2d_bytes(net)
    table.append(["network", "input + weights", sum(r.compulsory_bytes for r in rows) / 1e6,
                  sum(r.pebble_bytes for r in rows) / 1e6, sum(r.lower_bound_bytes for r in rows) / 1e6,
                  hb / 1e6, None if not link else h2d_seconds(hb, link, True) * 1e6,
                  None if not link else h2d_seconds(hb, link, False) * 1e6])
    print(format_table(["layer", "kind", "compulsory MB", "pebble MB", "bound MB", "H2D MB",
                        "H2D pinned us", "H2D pageable us"], table,
                       right=[False, False, True, True, True, True, True, True]))
    print("pebble: Q >= G/sqrt(2 T S) - 2S words (G MACs, T filter taps; segment argument of "
          "Hong-Kung/Irony-Toledo-Tiskin); bound = max(compulsory, pebble)")
    if args.csv:
        write_csv(args.csv, [r.to_dict() for r in rows])
        print(f"wrote {args.csv}")
    if args.json:
        write_json(args.json, {"hardware": hwmodels.to_dict(hw), "workload": net.to_dict(),
                               "onchip_bytes": rows[0].onchip_bytes,
                               "layers": [r.to_dict() for r in rows],
                               "network_h2d_bytes": hb})
        print(f"wrote {args.json}")


# ---------------------------------------------------------------- simulate systolic

def _array_shape(text):
    import re
    m = re.fullmatch(r"\s*([0-9]+)\s*[xX]\s*([0-9]+)\s*", text or "")
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        raise ValueError(f"--array {text!r}: expected ROWSxCOLS with positive integers, e.g. 128x128")
    return int(m.group(1)), int(m.group(2))


def cmd_simulate_systolic(args):
    from simulator.systolic.engine import simulate_network
    from simulator.table import format_table
    hw = _hw(args)
    net = _workload(args)
    rows, cols = _array_shape(args.array) if args.array is not None else (None, None)
    dataflow = args.dataflow or getattr(hw, "dataflow", "ws")
    set_keys = set(_set_fields(args))
    for opt, given, keys in (("--array", args.array, ("rows", "cols")),
                             ("--dataflow", args.dataflow, ("dataflow",))):
        both = sorted(set_keys & set(keys))
        if given is not None and both:
            raise ValueError(f"{opt} {given} and --set {both[0]}=... both set the array's "
                             f"{'shape' if opt == '--array' else 'dataflow'}; give one")
    if args.mode == "scalesim" and args.stalls is not None:
        raise ValueError("--stalls applies to --mode default only (scalesim mode has "
                         "SCALE-Sim's own stall model)")
    res = simulate_network(hw, net, dataflow, args.mode, rows, cols, stalls=args.stalls or "pipeline")
    t = res.extra
    print(f"{net.name} on {hw.name}: {t['rows']}x{t['cols']} array, {dataflow}, {args.mode} mode"
          f"{', stalls from the ' + t['stalls'] + ' model' if args.mode == 'default' else ''}, "
          f"{format_si(hw.clock_hz, 'Hz')}, DRAM {format_si(hw.dram.bandwidth_bytes_per_s, 'B/s')}")
    rows_out = []
    for r in res.layers + (res,):
        x = r.extra
        rows_out.append([r.workload if r is not res else "total", r.instructions,
                         x["compute_cycles"], x["stall_cycles"], r.cycles, r.utilization,
                         x["compute_utilization"], x["mapping_efficiency"], x["sram_ifmap_reads"],
                         x["sram_filter_reads"], x["sram_ofmap_writes"], r.bytes_by_level["dram"],
                         r.seconds * 1e6])
    print(format_table(["layer", "folds", "compute cyc", "stall cyc", "total cyc", "util",
                        "cmp util", "map eff", "SRAM ifmap rd", "SRAM filt rd", "SRAM ofmap wr",
                        "DRAM B", "us"], rows_out, right=[False] + [True] * 12))
    print("util = MACs / (PEs x total cycles); cmp util = MACs / (PEs x compute cycles)")
    skipped = res.extra.get("not_on_array")
    if skipped:
        print(f"not on the array: {len(skipped)} layers (batch norms, pools, biases: a TPU applies "
              "them as results drain), left out of the total")
    from simulator.analysis.plots import systolic_chart
    _write_outputs(args, [{"layer": r.workload, **r.extra} for r in res.layers], res.to_dict,
                   lambda path: systolic_chart(res, path))
    if args.timeline:
        from simulator.analysis.traces import systolic_trace
        pipes = None
        if args.mode == "default" and (args.stalls or "pipeline") == "pipeline":
            # the access/execute pipeline again, recording its transfers and matrix-unit
            # spans (the run above kept only their totals)
            import dataclasses as _dc

            from simulator.systolic.engine import ARRAY_KINDS
            from simulator.systolic.engine import split_groups
            from simulator.systolic.pipeline import pipeline_layer
            t = res.extra
            hw_arr = _dc.replace(hw, rows=t["rows"], cols=t["cols"])
            pipes = {op.name: pipeline_layer(hw_arr, split_groups(op)[0], dataflow, trace=True)
                     for op in net.ops if op.kind in ARRAY_KINDS}
        _write_timeline(args.timeline, systolic_trace(res, hw.clock_hz, pipes))


# ---------------------------------------------------------------- occupancy

def cmd_occupancy(args):
    from simulator.simt.occupancy import occupancy
    from simulator.table import write_json
    hw = _hw(args)
    if getattr(hw, "family", None) != "simt":
        raise ValueError(f"--hw {hw.name}: not a SIMT GPU (occupancy is CUDA's; `roofsim hw list` "
                         "shows each preset's family)")
    smem = (int(args.smem) if re.fullmatch(r"[0-9]+", args.smem.strip())
            else int(parse_quantity(args.smem, "bytes", "--smem")))
    occ = occupancy(hw, args.block, args.regs, smem)
    print(f"{hw.name} (cc {hw.compute_capability}): block {args.block} threads, {args.regs} registers/thread, "
          f"{smem} B shared/block")
    print(f"  {occ.blocks_per_sm} blocks/SM, {occ.warps_per_sm} warps/SM "
          f"({occ.occupancy:.0%} of {hw.sm.max_warps}), limited by {occ.limited_by}")
    print("  blocks allowed by: " + ", ".join(f"{k} {v if v < (1 << 30) else '-'}"
                                           for k, v in occ.limits.items()))
    print(f"  allocated per block: {occ.registers_per_block} registers, "
          f"{occ.shared_bytes_per_block} B shared memory")
    if args.json:
        write_json(args.json, {"hardware": hw.name, "block": args.block, "regs": args.regs,
                               "smem_bytes": smem, **occ.to_dict()})
        print(f"wrote {args.json}")


# ---------------------------------------------------------------- simt

MAX_SWEEP = 10_000    # launches (or sizes) one sweep takes


def _items(text, name) -> list:
    """A comma-separated option's items: none empty (``1,,2``), none given twice (each
    would count twice in a table or a score)."""
    items = [x.strip() for x in str(text).split(",")]
    if any(not x for x in items):
        raise ValueError(f"{name} {text!r}: an empty item; separate items by single commas")
    seen = set()
    for x in items:
        if x in seen:
            raise ValueError(f"{name} {text!r}: {x!r} given twice; give each item once")
        seen.add(x)
    return items


def _ascii_int(v: str) -> int:
    """int() of plain ASCII digits only (Python's own int() reads any script's digits)."""
    if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", v):
        raise ValueError(v)
    return int(v)


def _int_list(text, name, dims=1):
    """'1,2,4', '1-64', '8-1024:8' or (dims 2) '16x16,32x8' -> list of ints or tuples."""
    out = []
    for part in _items(text, name):
        try:
            if "x" in part.lower():
                t = tuple(_ascii_int(v) for v in part.lower().split("x"))
                if len(t) > dims:
                    raise ValueError
                out.append(t)
            elif "-" in part:
                rng, _, step = part.partition(":")
                lo, hi = (_ascii_int(v) for v in rng.split("-"))
                st = _ascii_int(step) if step else 1
                if lo < 1 or hi < lo or st < 1:
                    raise ValueError
                if len(out) + (hi - lo) // st + 1 > MAX_SWEEP:
                    raise UsageError(f"roofsim: error: {name} {part!r}: {(hi - lo) // st + 1:,} "
                                     f"sizes; a sweep takes at most {MAX_SWEEP:,} (a coarser "
                                     "STEP, or a few ranges)")
                out += list(range(lo, hi + 1, st))
            else:
                out.append(_ascii_int(part))
        except ValueError:
            raise ValueError(f"{name} {part!r}: expected N, A-B, A-B:STEP"
                             + (" or AxB" if dims > 1 else "") + ", comma-separated") from None
    seen = set()
    twice = next((v for v in out if v in seen or seen.add(v)), None)
    if twice is not None:
        raise ValueError(f"{name} {text!r}: {twice} given twice (ranges included); each size "
                         f"once")
    bad = [v for v in out if min(v if isinstance(v, tuple) else (v,)) < 1]
    if bad or not out:
        raise ValueError(f"{name} {text!r}: give one or more positive sizes")
    return out


def _conv_from_args(args):
    import workloads
    from workloads.networks import parse_conv_shape
    if args.shape and args.layer:
        raise ValueError("give --shape or --layer, not both")
    layout = args.layout or "nchw"
    if args.shape:
        if args.batch is not None:
            raise ValueError("--batch applies to --layer; put n= in --shape")
        from workloads.ir import Conv2d
        return Conv2d(name="conv", layout=layout, **parse_conv_shape(args.shape))
    if args.layer:
        net = workloads.resolve("resnet50", batch=args.batch or 1, layout=layout)
        for op in net.ops:
            if op.name == args.layer and op.kind == "conv2d":
                return op
        names = [op.name for op in net.ops if op.kind == "conv2d"]
        raise ValueError(f"--layer {args.layer!r} is not a ResNet-50 convolution; e.g. "
                         f"{', '.join(names[:4])} ... {names[-1]}")
    return None


def _op_from_args(args, kinds):
    """The pool or batch-norm layer (``kinds``: the IR kinds the kernel takes) from
    --shape (its fields) or --layer (a ResNet-50 layer of that kind), in --layout."""
    import workloads
    from workloads.ir import BatchNorm, Pool2d
    from workloads.networks import parse_op_shape
    if args.shape and args.layer:
        raise ValueError("give --shape or --layer, not both")
    layout = args.layout or "nchw"
    kind = kinds[0]
    if args.shape:
        if args.batch is not None:
            raise ValueError("--batch applies to --layer; put n= in --shape")
        cls = Pool2d if kind == "pool2d" else BatchNorm
        return cls(name=kind, layout=layout, **parse_op_shape(kind, args.shape))
    if args.layer:
        net = workloads.resolve("resnet50", batch=args.batch or 1, layout=layout)
        for op in net.ops:
            if op.name == args.layer and op.kind in kinds:
                return op
        names = [op.name for op in net.ops if op.kind in kinds]
        raise ValueError(f"--layer {args.layer!r} is not a ResNet-50 {kind} layer; e.g. "
                         f"{', '.join(names[:4])}{' ... ' + names[-1] if len(names) > 4 else ''}")
    return None


CONV_OPTIONS = ("shape", "layer", "layout", "batch")


def _kernels_taking(name):
    from simulator.simt.kernels import REGISTRY
    return [s.name for s in REGISTRY if any(a.name == name for a in s.args)]


def _convolution_kernels():
    """The registered kernels whose operation is the convolution they take (not, say,
    the layout transform of its input): what ``sweep layout`` compares."""
    from simulator.simt.kernels import REGISTRY
    return [s.name for s in REGISTRY if any(a.name == "conv" for a in s.args)
            and s.variants and s.op(s.problem(**s.variants[0])).kind == "conv2d"]


def _problem(args, hw, grid=None, block=None):
    """The registered kernel's problem from the command line: every option the kernel's
    SPEC.args name, and an error for an option it does not take."""
    from simulator.simt import api
    name, kw = _problem_args(args, grid, block)
    return api.build(hw, name, **kw)


def _problem_args(args, grid=None, block=None):
    """(kernel name, its arguments) from the command line (see ``_problem``)."""
    from simulator.simt.kernels import REGISTRY
    spec = REGISTRY.get(args.kernel)
    takes = {a.name: a for a in spec.args}
    kw = {}
    for name in _problem_options():
        v = getattr(args, name, None)
        if name not in takes:
            if v is not None:
                raise ValueError(f"--{name.replace('_', '-')} applies to "
                                 f"{', '.join(_kernels_taking(name))}, not {spec.name}")
            continue
        if v is not None:
            kw[name] = v
    if "conv" in takes:
        conv = _conv_from_args(args)
        if conv is None:
            raise ValueError(f"{spec.name} needs --shape or --layer")
        kw["conv"] = conv
    elif "op" in takes:
        op = _op_from_args(args, takes["op"].choices)
        if op is None:
            raise ValueError(f"{spec.name} needs --shape or --layer")
        kw["op"] = op
    else:
        for opt in CONV_OPTIONS:
            if getattr(args, opt, None) is not None:
                raise ValueError(f"--{opt} applies to {', '.join(_kernels_taking('conv') + _kernels_taking('op'))}")
    for name, v in (("grid", grid), ("block", block)):
        if v is None:
            continue
        if name not in takes:
            raise ValueError(f"--{name} applies to {', '.join(_kernels_taking(name))} "
                             f"({spec.name}'s {name} follows from its problem)")
        kw[name] = v
    for a in spec.args:
        if a.required and a.name not in kw:
            raise ValueError(f"{spec.name} needs --{a.name.replace('_', '-')} ({a.help})")
    return spec.name, kw


def _one_dims(text, name):
    if text is None:
        return None
    v = _int_list(text, name, dims=2)
    if len(v) != 1:
        raise ValueError(f"{name} {text!r}: give one size")
    return v[0]


def _sampling_note(r) -> str:
    if not r.sampled:
        return " (every block)"
    parts = []
    for lc in r.launches:
        if not lc.sampled:
            continue
        s = lc.sampling
        what = []
        if s.get("sms", s.get("sm_count")) != s.get("sm_count"):
            what.append(f"{s['sms']} of {s['sm_count']} SMs")
        if s.get("skips"):
            what.append(f"{s['simulated_blocks']} of {s['total_blocks']} blocks")
        if "trip_caps" in s:
            what.append("loop cut at " + ", ".join(map(str, s["trip_caps"]))
                        + f" of {s['trips']} trips")
        what = ", ".join(what) or "sampled"
        err = (f"est. error {lc.estimated_error:.1%}" if lc.estimated_error is not None
               else "error not estimated")
        parts.append(f"{what}, {lc.simulated_fraction:.1%} of its work simulated, {err}")
    return " (sampled: " + "; ".join(parts) + ")"


def cmd_simulate_simt(args):
    from simulator.analysis.compare import predict
    hw = _hw(args)
    if getattr(hw, "family", None) != "simt":
        raise ValueError(f"--hw {hw.name}: not a SIMT GPU (try gtx480, v100, h100-sxm)")
    if args.timeline and args.mode == "analytic":
        raise ValueError("--timeline needs the engine (--mode full or sampled); the analytic "
                         "model has no time line")
    prob = _problem(args, hw, _one_dims(args.grid, "--grid"), _one_dims(args.block, "--block"))
    pred = predict(hw, prob, args.mode, args.policy, trace=TIMELINE_INSTRUCTIONS if args.timeline else 0,
                   l2_warm=args.l2 == "warm")
    r, a = pred.chosen, pred.analytic
    lc = r.last_launch
    print(f"{prob.kernel} on {hw.name}: " + "; ".join(p.describe() for p in prob.programs))
    print(f"  occupancy {lc.blocks_per_sm} blocks/SM, {lc.warps_per_sm} warps/SM "
          f"({lc.occupancy:.0%}, limited by {lc.limited_by}); {lc.waves:.2f} waves; "
          f"{lc.regs_per_thread} regs/thread ({lc.resources_source}); L2 {args.l2}"
          + (" (the launch's buffers start in the L2, as after an identical launch)"
             if args.l2 == "warm" else " (empty at the start)"))
    what = {"full": "engine (every block)", "sampled": "engine" + _sampling_note(r),
            "analytic": "analytic model"}[args.mode]
    print(f"  {what}: {r.cycles:.0f} cycles = {format_seconds(r.seconds)}; "
          f"{r.instructions:.0f} warp instructions"
          + (f", IPC {r.ipc:.2f}" if pred.engine is not None else ""))
    print(f"  analytic model: {format_seconds(a.seconds)} (limited by "
          f"{a.limiter}); roofline bound: {format_seconds(pred.roofline.seconds)}")
    print("  bytes: " + ", ".join(f"{k} {format_bytes(v)}" for k, v in r.bytes_by_level.items()))
    if r.stalls_by_cause:
        tot = sum(r.stalls_by_cause.values()) or 1
        print("  scheduler stall cycles: " + ", ".join(
            f"{k} {v / tot:.0%}" for k, v in r.stalls_by_cause.items() if v))
    print(f"  wall time: model {r.wall_seconds:.3f} s, analytic {a.wall_seconds * 1e3:.1f} ms")
    if args.json:
        from simulator.table import write_json
        write_json(args.json, {"hardware": _hw_dict(hw), **pred.to_dict()})
        print(f"wrote {args.json}")
    if args.timeline:
        from simulator.analysis.traces import simt_trace
        _write_timeline(args.timeline, simt_trace(pred.engine, hw.clock_hz))


def _write_timeline(path, doc):
    import json

    from hwmodels.fileio import atomic_write
    atomic_write(path, json.dumps(doc, separators=(",", ":")) + "\n")
    n = sum(e["ph"] != "M" for e in doc["traceEvents"])
    print(f"wrote {path} ({n:,} events; open it in chrome://tracing or ui.perfetto.dev)")


def _hw_dict(hw):
    from hwmodels import to_dict
    return to_dict(hw)


def _short(dims):
    return "x".join(map(str, dims[:2] if dims[1] > 1 else dims[:1]))


def _sweep_rows(args, hw, pairs):
    """A row per (grid, block) pair, the points spread over Dask workers."""
    from simulator.analysis.compare import PointTask, predict_point
    from simulator.parallel import map_tasks
    from simulator.simt import api
    tasks = []
    for g, b in pairs:
        name, kw = _problem_args(args, g, b)
        api.build(hw, name, **kw)             # a bad point fails here, before any work
        tasks.append(PointTask(hw, name, kw, args.mode, args.policy, args.l2 == "warm"))
    out = map_tasks(predict_point, tasks, workers=_workers(args), scheduler=args.scheduler,
                    label="sweep")
    rows = []
    for p in out.finished:
        prob = p.problem
        lc = p.chosen.last_launch
        rows.append({"grid": _short(prob.grid), "block": _short(prob.block),
                     "blocks": prob.programs[-1].launch.blocks,
                     "engine_seconds": p.engine.seconds if p.engine else None,
                     "analytic_seconds": p.analytic.seconds,
                     "occupancy": lc.occupancy, "blocks_per_sm": lc.blocks_per_sm,
                     "waves": lc.waves, "sampled": bool(p.engine and p.engine.sampled),
                     "engine_estimated_error": p.engine.estimated_error if p.engine else None,
                     "sim_wall_seconds": p.engine.wall_seconds if p.engine else None})
    return rows, out


def cmd_sweep_grid(args):
    from simulator.analysis.plots import grid_sweep_chart
    from simulator.simt.kernels import REGISTRY
    from simulator.table import format_table
    hw = _hw(args)
    if getattr(hw, "family", None) != "simt":
        raise ValueError(f"--hw {hw.name}: not a SIMT GPU")
    takes = {a.name for a in REGISTRY.get(args.kernel).args}
    if "block" not in takes:
        raise ValueError(f"{args.kernel} takes no block (its block follows from its problem: "
                         "compare its variants with simulate simt)")
    block_dims = REGISTRY.get(args.kernel).arg("block").ndim
    blocks = _int_list(args.blocks, "--blocks", dims=2)
    flat = [b for b in blocks if isinstance(b, tuple) and len(b) > block_dims]
    if flat:
        raise ValueError(f"--blocks {args.blocks!r}: {args.kernel} takes a "
                         f"{block_dims}-D block; {'x'.join(map(str, flat[0]))} is "
                         f"{len(flat[0])}-D")
    if args.grids is not None:
        if "grid" not in takes:
            raise ValueError(f"--grids applies to {', '.join(_kernels_taking('grid'))}; "
                             f"{args.kernel}'s grid follows from the block (sweep --blocks only)")
        grids = _int_list(args.grids, "--grids")
    else:
        if "grid" in takes:
            raise ValueError(f"{args.kernel} needs --grids")
        grids = [None]
    if len(blocks) * len(grids) > MAX_SWEEP:
        raise ValueError(f"--grids x --blocks: {len(grids):,} x {len(blocks):,} launches; a sweep "
                         f"takes at most {MAX_SWEEP:,}")
    pairs = [(g, b) for b in blocks for g in grids]
    rows, out = _sweep_rows(args, hw, pairs)
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
    _finish(args, out, rows, lambda rs: {"hw": hw.name, "kernel": args.kernel, "mode": args.mode,
                                         "l2": args.l2, "rows": rs},
            lambda path: grid_sweep_chart(rows, path, f"{args.kernel} on {hw.name}"))


def cmd_sweep_layout(args):
    import workloads

    from simulator.analysis.compare import predict
    from simulator.simt import api
    from simulator.table import format_table
    hw = _hw(args)
    if getattr(hw, "family", None) != "simt":
        raise ValueError(f"--hw {hw.name}: not a SIMT GPU")
    from simulator.analysis.compare import PointTask, predict_point
    from simulator.parallel import map_tasks
    plain = workloads.resolve(args.workload, batch=args.batch)
    if not any(op.kind == "conv2d" for op in plain.ops):
        raise ValueError(f"--workload {args.workload[:60]!r}: no convolution to compare layouts "
                         "on (a tensor layout applies to convolutions)")
    nets = {lay: workloads.resolve(args.workload, batch=args.batch, layout=lay)
            for lay in ("nchw", "nhwc")}
    pairs = [(a, b) for a, b in zip(nets["nchw"].ops, nets["nhwc"].ops)
             if a.kind == "conv2d" and a.groups == 1]
    if not pairs:
        raise ValueError(f"--workload {args.workload!r}: no convolution to compare layouts on")
    tasks = []
    for a, b in pairs:
        for op in (a, b):
            api.build(hw, args.kernel, conv=op, block=args.block)   # fails here, not in a worker
            tasks.append(PointTask(hw, args.kernel, {"conv": op, "block": args.block}, args.mode,
                                   args.policy, args.l2 == "warm"))
    out = map_tasks(predict_point, tasks, workers=_workers(args), scheduler=args.scheduler,
                    label="layers")
    rows = []
    for j, (a, b) in enumerate(pairs):
        got = out.results[2 * j:2 * j + 2]
        if None in got:
            continue
        row = {"layer": a.name, "shape": a.describe().rsplit(" ", 1)[0]}
        for lay, p in zip(("nchw", "nhwc"), got):
            row[f"{lay}_engine_seconds"] = p.engine.seconds if p.engine else None
            row[f"{lay}_analytic_seconds"] = p.analytic.seconds
        key = "engine" if args.mode != "analytic" else "analytic"
        row["nhwc_speedup"] = row[f"nchw_{key}_seconds"] / row[f"nhwc_{key}_seconds"]
        rows.append(row)
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
    _finish(args, out, rows, lambda rs: {"hw": hw.name, "kernel": args.kernel, "l2": args.l2,
                                         "rows": rs})


# ---------------------------------------------------------------- measure

def cmd_measure(args):
    from pathlib import Path

    from simulator.measure import NoGPU, SUITES, run
    from simulator.table import format_table, write_json
    net_opts = [o for o in ("workload", "batch", "plan", "reps") if getattr(args, o, None) is not None]
    if args.suite == "torchvision":
        bad = [o for o in net_opts if o not in ("batch", "reps")]
        if bad:
            raise ValueError(f"--{bad[0]} applies to the network suite")
    elif args.suite != "network" and net_opts:
        raise ValueError(f"--{net_opts[0]} applies to the network suite")
    names = list(SUITES) if args.suite == "all" else [args.suite]
    out = Path(args.out)
    if not out.is_dir():
        raise ValueError(f"--out {args.out!r}: no such folder (create it first)")
    if args.suite == "network":
        return _measure_network(args, out)
    if args.suite == "torchvision":
        return _measure_torchvision(args, out)
    if args.suite == "counters":
        return _measure_counters(args, out)
    if args.suite == "tune":
        return _measure_tune(args, out)
    for name in names:
        try:
            data = run(name, command="roofsim " + " ".join(sys.argv[1:]), deadline_s=args.deadline)
        except NoGPU as e:
            raise ValueError(str(e)) from None
        path = out / f"{name}.json"
        write_json(path, data)
        recs = data["records"]
        bad = [r for r in recs if not r.get("ok", True)]
        print(f"{name}: {len(recs)} records in {data['wall_seconds']:.1f} s on "
              f"{data['provenance']['device']}; {len(bad)} failed their check; wrote {path}")
        if name == "micro":
            rows = [[r["name"], r.get("median_s"), r.get("bandwidth_bytes_per_s") or r.get("flop_per_s")
                     or r.get("blocks_per_s") or r.get("latency_s"), r["ok"]] for r in recs]
            print(format_table(["what", "median s", "rate / latency", "ok"], rows,
                               right=[False, True, True, False]))
        if name == "slices":
            rows = [[r["stride_lines"], r["footprint_bytes"], r["median_s"], r["bandwidth_bytes_per_s"],
                     r["ok"]] for r in recs]
            print(format_table(["stride (lines)", "footprint B", "median s", "B/s", "ok"], rows,
                               right=[True, True, True, True, False]))
        if name == "lines":
            clock = 1e3 * (data["provenance"]["attributes"].get("clock_rate") or 0)   # kHz
            rows = [[r["warps_per_sm"], r["lines_per_request"], r["median_s"],
                     r["requests_per_sm_per_s"], clock / r["requests_per_sm_per_s"] if clock else None,
                     r["ok"]] for r in recs]
            print(format_table(["warps/SM", "lines/request", "median s", "requests/SM/s",
                                "cycles/request", "ok"], rows,
                               right=[True, True, True, True, True, False]))


def _measure_network(args, out):
    """``measure network``: each plan's forward pass at each batch, checked and timed the
    three ways, into DIR/network_bB.json (B: the batches, joined by -)."""
    from simulator.analysis import plan as pl
    from simulator.measure import NoGPU
    from simulator.measure.network import run_network
    from simulator.table import write_json
    if args.deadline is not None:
        raise ValueError("--deadline applies to the gemm and conv suites")
    batches = _int_list(args.batch or "1", "--batch")
    if any(b > 4096 for b in batches):
        raise ValueError(f"--batch {args.batch}: at most 4096")
    plans = _items(args.plan or "direct-nchw", "--plan")
    workload = args.workload or "resnet50"
    from simulator.simt.kernels import REGISTRY
    for b in batches:
        net = pl.network(workload, b)
        for p in plans:
            names = pl.UNIFORM if p == "oracle" else (p,)
            for name in names:           # every plan and its launches checked before any work
                for lp in pl.expand(net, pl.configs_of(net, name)):
                    spec = REGISTRY.get(lp.kernel)
                    try:
                        spec.device(spec.problem(**pl.kernel_args(lp)))
                    except ValueError as e:
                        raise ValueError(f"--plan {name} at batch {b}: layer {lp.op.name} "
                                         f"({lp.kernel}): {e}") from None
    try:
        data = run_network(workload, batches, plans, reps=args.reps or 5,
                           command="roofsim " + " ".join(sys.argv[1:]))
    except NoGPU as e:
        raise ValueError(str(e)) from None
    path = out / f"network_b{'-'.join(map(str, batches))}.json"
    write_json(path, data)
    bad = [r for r in data["records"] if not r.get("ok", True)]
    print(f"network: {len(data['records'])} plans measured in {data['wall_seconds']:.1f} s on "
          f"{data['provenance']['device']}; {len(bad)} failed their check; wrote {path}")


def _measure_tune(args, out):
    """``measure tune``: every candidate roofsim tune ranks, measured, into DIR/tune.json."""
    import time as _time

    from simulator.measure import NoGPU, harness
    from simulator.measure.tune import run_tune
    from simulator.table import write_json
    try:
        c = harness.require_gpu()
    except NoGPU as e:
        raise ValueError(str(e)) from None
    prov = harness.provenance("roofsim " + " ".join(sys.argv[1:]))
    t0 = _time.time()
    recs = run_tune(c)
    data = {"suite": "tune", "schema_version": 1, "provenance": prov,
            "wall_seconds": _time.time() - t0, "records": recs}
    path = out / "tune.json"
    write_json(path, data)
    print(f"tune: {len(recs)} candidates measured in {data['wall_seconds']:.1f} s; "
          f"{sum(not r['ok'] for r in recs)} failed their check; wrote {path}")


def _measure_counters(args, out):
    """``measure counters``: roofsim's kernels under Nsight Compute, into DIR/counters.json."""
    from simulator.measure import NoGPU
    from simulator.measure.counters import run_counters
    from simulator.table import write_json
    if args.deadline is not None:
        raise ValueError("--deadline applies to the gemm and conv suites")
    try:
        data = run_counters(command="roofsim " + " ".join(sys.argv[1:]))
    except NoGPU as e:
        raise ValueError(str(e)) from None
    path = out / "counters.json"
    write_json(path, data)
    print(f"counters: {len(data['records'])} launches profiled in {data['wall_seconds']:.1f} s on "
          f"{data['provenance']['device']}; wrote {path}")


def _measure_torchvision(args, out):
    """``measure torchvision``: the framework's ResNet-50 end to end (where PyTorch is
    importable; one line and exit 0 where it is not)."""
    from simulator.measure import NoGPU
    from simulator.measure.framework import NoFramework, run_framework
    from simulator.table import write_json
    if args.deadline is not None:
        raise ValueError("--deadline applies to the gemm and conv suites")
    batches = _int_list(args.batch or "1,8,32", "--batch")
    if any(b > 4096 for b in batches):
        raise ValueError(f"--batch {args.batch}: at most 4096")
    try:
        data = run_framework(batches, reps=args.reps or 20, command="roofsim " + " ".join(sys.argv[1:]))
    except NoFramework as e:
        print(str(e))
        return
    except NoGPU as e:
        raise ValueError(str(e)) from None
    path = out / "torchvision.json"
    write_json(path, data)
    for r in data["records"]:
        print(f"  torchvision resnet50 {r['memory_format']:<13} batch {r['batch']:3d}: "
              f"{r['median_s'] * 1e3:8.3f} ms  {'ok' if r['ok'] else 'FAILED'}")
    print(f"torchvision: {len(data['records'])} records; wrote {path}")


def cmd_check(args):
    """``roofsim check``: a trace's kernels against their ops' roofline bounds."""
    from simulator.analysis.check import check, read
    from simulator.analysis.plots import check_chart
    from simulator.table import format_table
    hw = _hw(args)
    if getattr(hw, "family", None) != "simt":
        raise ValueError(f"--hw {hw.name}: not a GPU preset (check holds GPU kernels to its roofs)")
    precision = args.precision or "fp32"
    allowed = hw.peak_rates().supported()
    if precision not in allowed:
        raise ValueError(f"--precision {precision}: {hw.name} has no {precision} peak; allowed: "
                         f"{', '.join(allowed)}")
    doc = check(hw, read(args.trace), precision)
    doc = {"trace": args.trace, "hw": hw.name, "precision": precision, **doc}
    tot = doc["total_seconds"]
    print(f"{args.trace} on {hw.name} ({precision}): {len(doc['kernels'])} kernels, "
          f"{tot * 1e3:.3f} ms of GPU time; {doc['mapped_fraction']:.1%} of it mapped to ops")
    rows = [[k, v["kernels"], v["seconds"] * 1e3, v["seconds"] / tot if tot else 0,
             v["bound_seconds"] * 1e3 if v["bound_seconds"] else "-",
             v["bound_seconds"] / v["seconds"] if v["bound_seconds"] else "-"]
            for k, v in sorted(doc["by_kind"].items(), key=lambda kv: -kv[1]["seconds"])]
    print(format_table(["op", "kernels", "ms", "share", "bound ms", "fraction of roof"], rows,
                       right=[False, True, True, True, True, True]))
    unmapped = [r for r in doc["kernels"] if r["shape"] is None]
    if unmapped:
        share = sum(r["seconds"] for r in unmapped) / tot if tot else 0
        print(f"not mapped to an op: {len(unmapped)} kernels, {share:.1%} of GPU time"
              + (" (kept: " + "; ".join(r["name"][:50] for r in unmapped[:5])
                 + (" ..." if len(unmapped) > 5 else "") + ")"))
    bad = [r for r in doc["kernels"] if r["faster_than_bound"]]
    print(f"faster than their bound: {len(bad)}"
          + ("".join(f"\n  {r['name'][:60]}  {r['shape'] or ''}  {r['seconds'] * 1e6:.2f} us < "
                     f"{r['bound_seconds'] * 1e6:.2f} us" for r in bad[:10])))
    if bad:
        print("  (an error in the trace, the shapes -- operands that alias move fewer bytes than "
              "their shapes say -- or the hardware model)")
    _write_outputs(args, doc["kernels"], lambda: doc, lambda path: check_chart(doc, hw, path, precision))


def cmd_calibrate(args):
    import hwmodels
    from simulator.analysis.calibrate import calibrate
    from simulator.table import format_table
    hw = _hw(args)
    new, changes = calibrate(hw, args.measurements)
    print(f"{hw.name} from {args.measurements}:")
    print(format_table(["field", "preset", "measured", "source"],
                       [[f, old, val, src] for f, old, val, src in changes],
                       right=[False, True, True, False]))
    if args.toml:
        hwmodels.registry.save_toml(new, args.toml)
        print(f"wrote {args.toml}")


def _device_of(args, hw, doc, name):
    """The device a suite file was measured on, refused unless it can be ``hw``'s GPU
    (the same rule as the time suites: ``measurements.same_gpu``)."""
    from simulator.analysis.measurements import same_gpu
    prov = doc.get("provenance") or {}
    dev = str(prov.get("device", ""))
    if not same_gpu(hw, dev, prov.get("compute_capability")):
        raise ValueError(f"--measurements {args.measurements}: {name} was measured on {dev!r}, "
                         f"not a {hw.name}")
    return dev


def _validate_tune(args, hw):
    """``validate --suites tune``: roofsim tune's rankings against every candidate measured."""
    from simulator.analysis import tune
    from simulator.table import format_table
    doc = tune.load(args.measurements)
    dev = _device_of(args, hw, doc, "tune.json")
    s = tune.scores(hw, args.measurements)
    k = s["engine_top"]
    print(f"tune on {hw.name} against {dev}: {len(s['problems'])} problems, "
          f"{sum(r['candidates'] for r in s['problems'])} candidates measured")
    print(format_table(["problem", "candidates", "measured best", "predicted best", "regret",
                        f"best of top {k}", f"random {k}", "Spearman"],
                       [[r["problem"], r["candidates"], r["best"], r["predicted_best"],
                         f"{r['regret']:+.1%}", f"{r[f'regret_top{k}']:+.1%}",
                         f"{r[f'random_{k}']:+.0%}", f"{r['spearman']:.2f}"] for r in s["problems"]],
                       right=[False, True, False, False, True, True, True, True]))
    m = s["summary"]
    print(f"regret of the predicted best: median {m['regret']['median']:.1%}, worst "
          f"{m['regret']['worst']:.1%} (goals 3% and 10%); best of the top {k} measured: median "
          f"{m[f'regret_top{k}']['median']:.1%}, worst {m[f'regret_top{k}']['worst']:.1%}; random "
          f"search with {k} measurements: median {m[f'random_{k}']['median']:.0%}, worst "
          f"{m[f'random_{k}']['worst']:.0%}; Spearman median {m['spearman']['median']:.2f}")
    _write_outputs(args, s["problems"], lambda: {"hw": hw.name, **s}, lambda path: None)


def cmd_tune(args):
    """``roofsim tune``: every configuration of roofsim's kernels for one op, ranked."""
    import workloads
    from simulator.analysis.tune import rank
    from simulator.table import format_table
    hw = _hw(args)
    if getattr(hw, "family", None) != "simt":
        raise ValueError(f"--hw {hw.name}: not a SIMT GPU")
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
    _write_outputs(args, out, lambda: {"hw": hw.name, "op": net.ops[0].describe(), "ranking": out},
                   lambda path: None)


def _validate_counters(args, hw):
    """``validate --suites counters``: the engine's counts against Nsight Compute's."""
    from simulator.analysis import counters as cn
    from simulator.table import format_table
    doc = cn.load(args.measurements)
    dev = _device_of(args, hw, doc, "counters.json")
    rows = cn.rows(hw, args.measurements)
    one = [r for r in rows if sum(x["problem"] == r["problem"] for x in rows) == 1]
    sc, sc1 = cn.scores(rows), cn.scores(one)
    print(f"counters on {hw.name} against Nsight Compute ({dev}): {len(rows)} launches "
          f"({len(one)} of one-launch problems); engine sampled, L2 cold")
    print(format_table(["counter", "launches", "MAPE", "median error", "goal",
                        "MAPE, one-launch problems"],
                       [[name, s["n"], f"{s['mape']:.1%}" if s["mape"] is not None else "-",
                         f"{s['median_error']:+.1%}" if s["median_error"] is not None else "-",
                         f"{s['goal']:.0%}" if s.get("goal") else "-",
                         f"{sc1[name]['mape']:.1%}" if sc1[name]["mape"] is not None else "-"]
                        for name, s in sc.items()],
                       right=[False, True, True, True, True, True]))
    _write_outputs(args, rows, lambda: {"hw": hw.name, "measurements": args.measurements,
                                        "scores": sc, "scores_one_launch": sc1, "rows": rows},
                   lambda path: None)


def cmd_validate(args):
    from simulator.analysis.plots import validation_chart
    from simulator.analysis.measurements import load_suite
    from simulator.analysis.validate import KERNEL_SUITES, PREDICTORS, predict_suites, score
    from simulator.table import format_table
    hw = _hw(args)
    if getattr(hw, "family", None) != "simt":
        raise ValueError(f"--hw {hw.name}: not a SIMT GPU")
    suites = _items(args.suites, "--suites")
    for alone, fn in (("counters", _validate_counters), ("tune", _validate_tune)):
        if alone in suites:
            if len(suites) > 1:
                raise ValueError(f"--suites {alone}: give it alone (it scores {alone}, not times)")
            return fn(args, hw)
    bad = [x for x in suites if x not in KERNEL_SUITES]
    if bad:
        raise ValueError(f"--suites {args.suites!r}: allowed: {', '.join(KERNEL_SUITES)}, counters")
    files = [load_suite(args.measurements, suite) for suite in suites]
    for sf in files:
        if not sf.of(hw):
            raise ValueError(f"--measurements {args.measurements}: {sf.path.name} was measured "
                             f"on {sf.device!r}, not a {hw.name} ({hw.description}); score a "
                             f"preset against its own GPU's measurements (a preset names its "
                             f"GPU's model in its name or description, or names none and "
                             f"shares its compute capability)")
    out = predict_suites(hw, files, args.engine_budget, args.workers, args.scheduler,
                         log=lambda line: print(f"validate: {line}", file=sys.stderr, flush=True))
    rows = out.finished
    report = {"hw": hw.name, "measurements": args.measurements, "suites": {},
              "engine_budget": args.engine_budget, "wall_seconds": out.wall_seconds}
    if out.interrupted:
        report.update(records_done=out.done, records_total=len(out.results))
    for sf in files:
        rs = [r for r in rows if r.suite == sf.suite]
        if rs:
            report["suites"][sf.suite] = {**score(rs), "device": sf.device}
    table = []
    for suite, sc in report["suites"].items():
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
    _finish(args, out, [r.to_dict() for r in rows], lambda rs: {**report, "rows": rs},
            lambda path: validation_chart(rows, path, f"{hw.name} validation", hw))


def cmd_plan(args):
    from simulator.analysis import plan as pl
    from simulator.analysis.plots import plan_chart
    from simulator.table import format_table
    hw = _hw(args)
    if getattr(hw, "family", None) != "simt":
        raise ValueError(f"--hw {hw.name}: not a SIMT GPU")
    if (args.plan is None) == (args.oracle is None):
        raise ValueError("give --plan (a plan to predict) or --oracle FILE (pick the fastest plan "
                         "and write it), one of them")
    net = pl.network(args.workload, args.batch)
    if args.oracle:
        for opt in ("vs", "plot"):
            if getattr(args, opt):
                raise ValueError(f"--{opt} applies to a plan's prediction, not to --oracle")
        if not args.oracle.lower().endswith((".toml", ".json")):
            raise ValueError(f"--oracle {args.oracle!r}: a plan file ends in .toml or .json")
        return _plan_oracle(args, hw, net)
    layers = pl.expand(net, pl.configs_of(net, args.plan))
    vs = _systolic_layers(args, net) if args.vs else None
    out, totals = pl.predict_plan(hw, layers, args.mode, args.l2 == "warm", args.workers,
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

    def us(v):
        return "-" if v is None else v * 1e6
    cols = ["layer", "kernel", "shape", "engine us", "analytic us", "roofline us"]
    body = [[r["layer"], r["kernel"], r["shape"], us(r["engine_seconds"]),
             us(r["analytic_seconds"]), us(r["roofline_seconds"])] for r in rows]
    foot = ["total", "", "", us(totals["engine"]), us(totals["analytic"]), us(totals["roofline"])]
    if vs is not None:
        cols.append(f"{vs[0].name} us")
        body = [b + [us(r["systolic_seconds"])] for b, r in zip(body, rows)]
        foot.append(us(totals["systolic"]))
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
    _finish(args, out, rows, lambda rs: {**doc, "layers": rs},
            lambda path: plan_chart(rows, path, doc))


def _systolic_layers(args, net):
    """``plan --vs HW``: the network's convolutions and FC on a systolic preset (its own
    dataflow, the default engine mode): (hardware, {layer: seconds})."""
    import hwmodels
    from simulator.systolic.engine import simulate_network
    sys_hw = hwmodels.get(args.vs)
    if getattr(sys_hw, "family", None) != "systolic":
        raise ValueError(f"--vs {args.vs}: not a systolic array (e.g. tpu-v1, systolic-8x8)")
    try:
        res = simulate_network(sys_hw, net, getattr(sys_hw, "dataflow", "ws"))
    except ValueError as e:
        if "--stalls closed-form" not in str(e):
            raise
        # a small array's many folds: the closed form's stalls instead of the pipeline's
        print(f"--vs {sys_hw.name}: too many folds for the pipeline model; its stalls from the "
              "closed form")
        res = simulate_network(sys_hw, net, getattr(sys_hw, "dataflow", "ws"), stalls="closed-form")
    return sys_hw, {lr.workload: lr.seconds for lr in res.layers}


def _plan_oracle(args, hw, net):
    """``plan --oracle FILE``: every layer predicted in each configuration and every
    transform, then per predictor the best-of bound and the dynamic program's plan; the
    plan picked from the engine's predictions (the analytic model's with --mode
    analytic) written to FILE."""
    from hwmodels.fileio import atomic_write
    from simulator.analysis import plan as pl
    from simulator.table import format_table
    from simulator.table import write_json
    layers, refused = pl.launchable(hw, pl.oracle_layers(net))
    for lp, why in refused:
        print(f"left out of the search: {lp.op.name} as {lp.kernel} {lp.layout} ({why.split(': ', 1)[-1]})")
    out, _ = pl.predict_plan(hw, layers, args.mode, args.l2 == "warm", args.workers, args.scheduler)
    if out.interrupted:
        print(f"stopped after {out.done} of {len(layers)} layer predictions: no plan picked")
        if args.json:
            write_json(args.json, {"hw": hw.name, "workload": args.workload, "batch": args.batch,
                                   "partial": True, "layers": [{**r, "partial": True} for r in out.finished]})
            print(f"wrote {args.json} (partial)")
        for opt in ("csv", "oracle"):
            if getattr(args, opt):
                print(f"--{opt} not written")
        raise KeyboardInterrupt
    picks, table = {}, []
    for p in pl.PREDICTORS:
        if p == "engine" and args.mode == "analytic":
            continue
        sec = {pl.time_key(lp): r[f"{p}_seconds"] for lp, r in zip(layers, out.results)}
        choice, best = pl.choose(net, sec)
        uni = {u: pl.plan_seconds(net, pl.uniform_configs(net, u), sec) for u in pl.UNIFORM}
        from collections import Counter
        mix = Counter(pl.config_name(c) for c in choice.configs.values() if isinstance(c, tuple))
        picks[p] = {"seconds": choice.seconds, "switch_seconds": choice.switch_seconds,
                    "best_of_seconds": best, "uniform_seconds": uni,
                    "configs": {k: pl.config_name(v) for k, v in choice.configs.items()}}
        table.append([p, best * 1e3, choice.seconds * 1e3, choice.switch_seconds * 1e3,
                      *("-" if uni[u] is None else uni[u] * 1e3 for u in pl.UNIFORM),
                      ", ".join(f"{n} {k}" for k, n in mix.most_common())])
    by = "engine" if args.mode != "analytic" else "analytic"
    print(f"{args.workload} batch {args.batch} on {hw.name}: the oracle over {len(layers)} layer "
          f"configurations and transforms (ms)")
    print(format_table(["predictor", "best-of", "DP plan", "transforms", *pl.UNIFORM, "DP plan's convolutions"],
                       table, right=[False] + [True] * 7 + [False]))
    comment = (f"roofsim plan --oracle: {args.workload} batch {args.batch} on {hw.name}, picked "
               f"from the {by} predictions\npredicted {picks[by]['seconds'] * 1e3:.3f} ms ({by}); "
               f"best-of bound {picks[by]['best_of_seconds'] * 1e3:.3f} ms")
    configs = pl.configs_from_names(picks[by]["configs"])
    atomic_write(args.oracle, pl.plan_json(net, configs, comment.replace("\n", "; "))
                 if args.oracle.lower().endswith(".json") else pl.plan_text(net, configs, comment))
    print(f"wrote {args.oracle} (the {by} predictions' plan)")
    doc = {"hw": hw.name, "workload": args.workload, "batch": args.batch, "mode": args.mode,
           "l2": args.l2, "picked_by": by, "oracle": picks, "wall_seconds": out.wall_seconds}
    rows = [{**r, "key": " ".join(map(str, pl.time_key(lp)))} for lp, r in zip(layers, out.results)]
    _write_outputs(args, rows, lambda: {**doc, "layers": rows}, lambda path: None)


def _finish(args, out, rows, to_dict, plot=None):
    """--csv, --json and --plot of a run over ``map_tasks`` (``out``): the rows (dicts)
    and the document ``to_dict(rows)``; where Ctrl-C stopped it, each row and the
    document marked ``partial``, then the interrupt passed on (exit 130)."""
    if out.interrupted:
        rows = [{**r, "partial": True} for r in rows]
    if rows:
        _write_outputs(args, rows, lambda: {**to_dict(rows),
                                            **({"partial": True} if out.interrupted else {})},
                       plot or (lambda path: None))
    elif out.interrupted:
        # stopped before any row finished: the JSON still says so (partial, no rows); a
        # table or chart of nothing is not written, and the user is told
        from simulator.table import write_json
        if getattr(args, "json", None):
            write_json(args.json, {**to_dict([]), "partial": True})
            print(f"wrote {args.json} (partial: nothing finished)")
        skipped = [f"--{o}" for o in ("csv", "plot") if getattr(args, o, None)]
        if skipped:
            print(f"nothing finished: {' and '.join(skipped)} not written")
    if out.interrupted:
        raise KeyboardInterrupt


OUTPUT_OPTIONS = ("csv", "json", "plot", "toml", "scalesim_csv", "oracle", "timeline")  # files a command writes
TIMELINE_INSTRUCTIONS = 20_000      # issued instructions a --timeline keeps


def _max_workers() -> int:
    """Four local worker processes a core: past that they only contend (and each holds an
    interpreter and numba's cache)."""
    from simulator.parallel import default_workers
    return 4 * default_workers()


MAX_WORKERS = _max_workers()


def _check_outputs(args):
    """Refuse output paths that cannot be written before any work, not after it."""
    import os
    from pathlib import Path
    given = [(opt, getattr(args, opt, None)) for opt in OUTPUT_OPTIONS if getattr(args, opt, None)]
    seen = {}
    for opt, path in given:
        real = str(Path(path).resolve())
        if real in seen:
            raise ValueError(f"--{opt.replace('_', '-')} {path!r}: the same file as "
                             f"--{seen[real].replace('_', '-')}; give each output its own")
        seen[real] = opt
    for opt in OUTPUT_OPTIONS:
        path = getattr(args, opt, None)
        name = "--" + opt.replace("_", "-")
        if str(path).strip() == "-":
            raise ValueError(f"{name} '-': give a file name ('-' is not standard output here; "
                             "/dev/stdout is)")
        if not path:
            continue
        folder = Path(path).resolve().parent
        if Path(path).is_dir():
            raise ValueError(f"{name} {path!r}: is a folder, not a file")
        if not folder.is_dir():
            raise ValueError(f"{name} {path!r}: folder {str(folder)!r} does not exist")
        if not os.access(folder, os.W_OK):
            raise ValueError(f"{name} {path!r}: folder {str(folder)!r} is not writable")


# ---------------------------------------------------------------- parser

def _problem_options() -> list:
    """Every problem argument a registered kernel takes, besides its convolution and its
    grid and block (which have options of their own)."""
    from simulator.simt.kernels import REGISTRY
    names = []
    for spec in REGISTRY:
        names += [a.name for a in spec.args if a.kind in ("size", "choice") and a.name not in names]
    return names


def _add_simt_problem(p):
    from simulator.simt.kernels import REGISTRY
    _add_hw(p)
    p.add_argument("--kernel", required=True, choices=REGISTRY.names())
    for name in _problem_options():
        takers = [(s, s.arg(name)) for s in REGISTRY if any(a.name == name for a in s.args)]
        arg = takers[0][1]
        helps = "; ".join(f"{s.name}: {a.help}" for s, a in takers)
        if arg.kind == "size":
            p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=_positive_int(name),
                           help=helps)
        else:
            choices = tuple(dict.fromkeys(c for _, a in takers for c in a.choices))
            p.add_argument(f"--{name.replace('_', '-')}", dest=name, choices=choices,
                           type=type(choices[0]), help=helps)
    if _kernels_taking("conv"):
        p.add_argument("--shape", metavar="n=..,c=..,h=..,w=..,k=..,r=..,s=..,stride=..,pad=..",
                       help="a convolution; pool2d: n=,c=,h=,w=,r=,s= and optionally stride= "
                            "(default 1), pad= (0), mode=max|avg (max); batchnorm: n=,c=,h=,w= and "
                            "optionally relu=0|1, residual=0|1 (0)")
        p.add_argument("--layer", metavar="NAME", help="a ResNet-50 layer of the kernel's kind, e.g. "
                                                       "layer1.0.conv2, maxpool, layer1.0.bn3")
        p.add_argument("--batch", type=_positive_int("batch"), help="batch for --layer (default 1)")
        p.add_argument("--layout", choices=("nchw", "nhwc"),
                       help="the tensors' layout for convolutions, pools and batch norms (default "
                            "nchw); layout-transform: the layout it writes, from the other")


def _workers(args):
    """--workers, or for the analytic model alone (milliseconds a point) 1: starting
    worker processes would cost more than it saves."""
    if args.workers is None and getattr(args, "mode", None) == "analytic" and not args.scheduler:
        return 1
    return args.workers


def _add_workers(p):
    p = p.add_mutually_exclusive_group()      # a scheduler's cluster has its own workers
    p.add_argument("--workers", type=_positive_int("workers", MAX_WORKERS), metavar="N",
                   help="local worker processes (Dask LocalCluster; default: one per core; "
                        "1: run here)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on an existing Dask cluster, e.g. tcp://10.0.0.5:8786")


def build_parser(kernels: bool = True) -> Parser:
    """The parser. ``kernels=False`` leaves out the options read from the kernel registry
    (importing the kernels brings in numba.cuda, half a second that commands without
    kernels need not pay)."""
    ap = Parser(prog="roofsim", description="Roofline bounds, SIMT and systolic simulation, "
                "and GPU measurement of tensor programs.")
    ap.add_argument("--version", action="version", version=_version())
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True

    hw = sub.add_parser("hw", help="hardware presets").add_subparsers(dest="hwcmd", metavar="ACTION",
                                                                      parser_class=Parser)
    hw.required = True
    p = hw.add_parser("list", help="list presets")
    p.set_defaults(func=cmd_hw_list)
    p = hw.add_parser("show", help="every field of one hardware, with derived peaks and ridges")
    p.add_argument("hw", metavar="NAME|FILE")
    p.add_argument("--set", action="append", metavar="FIELD=VALUE", help="override a field")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--toml", metavar="FILE", help="save as a TOML file to edit and load with --hw")
    p.set_defaults(func=cmd_hw_show)

    wl = sub.add_parser("workload", help="workloads").add_subparsers(dest="wlcmd", metavar="ACTION",
                                                                     parser_class=Parser)
    wl.required = True
    p = wl.add_parser("list", help="list networks and single-op forms")
    p.set_defaults(func=cmd_workload_list)
    p = wl.add_parser("show", help="layers with FLOPs and compulsory bytes")
    p.add_argument("workload", metavar="W")
    p.add_argument("--batch", type=_positive_int("batch"))
    p.add_argument("--resolution", type=_positive_int("resolution"))
    p.add_argument("--dtype", choices=DTYPE_CHOICES)
    p.add_argument("--layout", choices=("nchw", "nhwc"))
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--scalesim-csv", metavar="FILE", help="write it as a SCALE-Sim topology CSV")
    p.set_defaults(func=cmd_workload_show)

    p = sub.add_parser("roofline", help="hierarchical roofline bound per op and for the network")
    _add_hw(p)
    _add_workload(p)
    p.add_argument("--dtype", choices=DTYPE_CHOICES,
                   help="data type and precision (tf32: fp32 data on TF32 matrix units); default "
                        "fp32, or the hardware's fastest precision when it has no fp32 (tpu-v1: int8)")
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--plot", metavar="FILE", help="PNG, SVG or PDF")
    p.set_defaults(func=cmd_roofline)

    p = sub.add_parser("roofline-compare",
                       help="several hardware rooflines on one chart (default: the TPU paper's)")
    p.add_argument("--hw", default="tpu-v1,k80,haswell-e5-2699v3", metavar="A,B,...",
                   help="comma-separated hardware presets or files (default: the TPU paper's three)")
    p.add_argument("--plot", metavar="FILE")
    p.set_defaults(func=cmd_roofline_compare)

    sim = sub.add_parser("simulate", help="run an engine").add_subparsers(
        dest="engine", metavar="ENGINE", parser_class=Parser)
    sim.required = True
    p = sim.add_parser("systolic", help="TPU-style systolic array, per layer and in total")
    _add_hw(p)
    _add_workload(p)
    p.add_argument("--dataflow", choices=("os", "ws", "is"),
                   help="output-, weight- or input-stationary (default: the .cfg's, else ws)")
    p.add_argument("--array", metavar="RxC", help="override the array shape, e.g. 128x128")
    p.add_argument("--mode", choices=("default", "scalesim"), default="default",
                   help="default: physically faithful; scalesim: SCALE-Sim 3.0.0's conventions")
    p.add_argument("--stalls", choices=("pipeline", "closed-form"),
                   help="default mode's stall model: the access/execute pipeline (default; "
                        "simulates every fold, slow for tiny arrays) or max(0, DRAM time - "
                        "compute time)")
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--plot", metavar="FILE", help="utilisation per layer and a fold-by-PE heatmap")
    p.add_argument("--timeline", metavar="FILE.json",
                   help="the layers and their folds in time, a Chrome trace (open it in "
                        "chrome://tracing or ui.perfetto.dev)")
    p.set_defaults(func=cmd_simulate_systolic, dtype=None, in_thread=True)

    p = sim.add_parser("simt", help="Fermi-style SIMT GPU running one kernel launch (or two)",
                       description="Simulate a kernel on a SIMT GPU preset. Default launches: relu "
                       "blocks of 256 with a grid filling every SM once; gemm-naive 16x16 blocks "
                       "(threadIdx.x on columns); gemm-tiled T=16; conv-direct and conv-im2col "
                       "blocks of 256. Default mode: sampled (a slice of the SMs with its share "
                       "of the L2 and DRAM, runs of over 7 alike waves cut to 4 + 2, loops of over "
                       "192 trips cut and extrapolated; it prints what it simulated and its "
                       "estimated error).")
    if kernels:
        _add_simt_problem(p)
    p.add_argument("--grid", metavar="G[xG2]", help="relu's grid (any; default: fills the SMs once)")
    p.add_argument("--block", metavar="B[xB2]", help="threads per block (gemm-naive: BxB2)")
    p.add_argument("--mode", choices=("full", "sampled", "analytic"), default="sampled")
    p.add_argument("--policy", choices=("gto", "lrr"))
    p.add_argument("--l2", choices=("cold", "warm"), default="cold",
                   help="cold: the L2 starts empty (default); warm: the launch's buffers start "
                        "in it, as after an identical launch (what repeated measurements see)")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--timeline", metavar="FILE.json",
                   help="engine modes: every block on its SM in time and the first "
                        f"{TIMELINE_INSTRUCTIONS:,} instructions issued, a Chrome trace (open it in "
                        "chrome://tracing or ui.perfetto.dev)")
    p.set_defaults(func=cmd_simulate_simt, in_thread=True)

    sw = sub.add_parser("sweep", help="what-if sweeps on the SIMT model").add_subparsers(
        dest="sweep", metavar="WHAT", parser_class=Parser)
    sw.required = True
    p = sw.add_parser("grid", help="predicted time for every grid and block pair",
                      description="Engine and analytic model side by side for every (grid, block) "
                      "pair. --grids applies to relu (grid-stride); other kernels sweep --blocks.")
    if kernels:
        _add_simt_problem(p)
    p.add_argument("--grids", metavar="LIST", help="e.g. 1-64 or 15,30,45,60 or 8-1024:8")
    p.add_argument("--blocks", metavar="LIST", required=True, help="e.g. 64,128,256 or 16x16,32x8")
    p.add_argument("--mode", choices=("full", "sampled", "analytic"), default="sampled",
                   help="engine mode (analytic: the analytic model only, milliseconds per point)")
    p.add_argument("--policy", choices=("gto", "lrr"))
    p.add_argument("--l2", choices=("cold", "warm"), default="cold",
                   help="cold: the L2 starts empty (default); warm: the launch's buffers start "
                        "in it, as after an identical launch")
    _add_workers(p)
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--plot", metavar="FILE", help="time against grid size, one line per block")
    p.set_defaults(func=cmd_sweep_grid)
    p = sw.add_parser("layout", help="NCHW against NHWC for every convolution of a network",
                      description="Default mode analytic (milliseconds per layer); --mode sampled "
                      "runs the engine too (on two cores about 10 s for ResNet-50 at batch 1, 40 s "
                      "at batch 32).")
    _add_hw(p)
    p.add_argument("--kernel", choices=_convolution_kernels() if kernels else None,
                   default="conv-direct", help="a kernel that computes a convolution")
    p.add_argument("--workload", default="resnet50", metavar="W",
                   help="a network or a convolution with the layers to compare (default resnet50)")
    p.add_argument("--batch", type=_positive_int("batch"))
    p.add_argument("--block", type=_positive_int("block"), help="threads per block (default 256)")
    p.add_argument("--mode", choices=("full", "sampled", "analytic"), default="analytic")
    p.add_argument("--policy", choices=("gto", "lrr"))
    p.add_argument("--l2", choices=("cold", "warm"), default="cold",
                   help="cold: the L2 starts empty (default); warm: the launch's buffers start "
                        "in it, as after an identical launch")
    _add_workers(p)
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--json", metavar="FILE")
    p.set_defaults(func=cmd_sweep_layout)

    p = sub.add_parser("occupancy", help="resident blocks and warps per SM (CUDA's rules)")
    _add_hw(p)
    p.add_argument("--block", type=_positive_int("block"), required=True, help="threads per block")
    p.add_argument("--regs", type=_positive_int("regs", minimum=0), required=True,
                   help="registers per thread")
    p.add_argument("--smem", default="0", metavar="BYTES",
                   help="shared memory per block: bytes, or with a unit (48KiB)")
    p.add_argument("--json", metavar="FILE")
    p.set_defaults(func=cmd_occupancy)

    p = sub.add_parser("measure", help="time the kernels on this machine's NVIDIA GPU (numba.cuda)",
                       description="Run a measurement suite on a real GPU and write SUITE.json "
                       "(records with provenance) into --out.")
    p.add_argument("suite", choices=("micro", "grid", "gemm", "conv", "h2d", "resources", "slices", "lines", "all",
                                     "network", "torchvision", "counters", "tune"),
                   help="the measurement suite to run (all: every one but network; network: a "
                        "whole forward pass, see --workload, --batch, --plan; torchvision: PyTorch's "
                        "ResNet-50 where PyTorch is importable, --batch default 1,8,32; counters: the kernels "
                        "under Nsight Compute, instructions and bytes)")
    p.add_argument("--out", default=".", metavar="DIR", help="existing folder for SUITE.json")
    p.add_argument("--deadline", type=_positive_seconds("deadline"), metavar="SECONDS",
                   help="gemm, conv: start no new shape after this many seconds; keep what "
                        "finished")
    p.add_argument("--workload", metavar="NET", help="network: the network (default resnet50)")
    p.add_argument("--batch", metavar="B[,B...]", help="network: batch sizes (default 1)")
    p.add_argument("--plan", metavar="PLAN[,PLAN...]",
                   help="network: uniform plans (direct-nchw, direct-nhwc, im2col-nchw, "
                        "im2col-nhwc), plan files, or oracle (the plan picked from this run's "
                        "measurements of the four uniform plans); default direct-nchw")
    p.add_argument("--reps", type=_positive_int("reps", 100), metavar="N",
                   help="network, torchvision: repetitions of each timing (default 5; torchvision "
                        "20)")
    p.set_defaults(func=cmd_measure)

    p = sub.add_parser("check", help="is a measured time plausible? a trace's kernels against "
                       "their roofline bounds", description="Read a PyTorch profiler Chrome trace "
                       "(.json, record_shapes=True), an Nsight Compute raw CSV or a plain CSV "
                       "(name,op,seconds with op a workload spec), map each GPU kernel to the op it "
                       "computes, and hold its time to that op's roofline bound on --hw: achieved "
                       "FLOP/s and bytes/s, the fraction of the roof, and a flag where it is faster "
                       "than its bound. Kernels it cannot map are kept, with their share of time.")
    _add_hw(p)
    p.add_argument("--trace", required=True, metavar="FILE",
                   help="a PyTorch profiler Chrome trace (.json), an Nsight Compute raw CSV, or a "
                        "CSV with the header name,op,seconds")
    p.add_argument("--precision", choices=("fp32", "tf32", "fp16", "bf16", "int8", "fp64"),
                   help="the arithmetic the kernels used (default fp32)")
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--plot", metavar="FILE", help="the kernels on the roofline")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("tune", help="the simulator as a cost model: every configuration of "
                       "roofsim's kernels for a GEMM or a convolution, ranked",
                       description="Enumerate the knobs roofsim's kernels have for one GEMM or "
                       "convolution (algorithm, layout, tile, thread mapping, block), rank every "
                       "candidate with the analytic model, then the best few with the engine, and "
                       "print each with what limits it.")
    _add_hw(p)
    p.add_argument("--workload", required=True, metavar="OP",
                   help="gemm:MxNxK or conv:n=..,c=..,h=..,w=..,k=..,r=..,s=..,stride=..,pad=..")
    p.add_argument("--batch", type=_positive_int("batch"), help="a convolution's n, or a GEMM's M x B")
    p.add_argument("--engine-top", type=_positive_int("engine-top", 100, minimum=0), default=3,
                   metavar="N", help="run the engine on the N best by the analytic model (default 3)")
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--json", metavar="FILE")
    p.set_defaults(func=cmd_tune)

    p = sub.add_parser("calibrate", help="latency and bandwidth parameters from a micro suite")
    _add_hw(p)
    p.add_argument("--measurements", required=True, metavar="DIR",
                   help="folder with micro.json (and h2d.json), e.g. data/measurements/h100-sxm")
    p.add_argument("--toml", metavar="FILE", help="save the calibrated preset")
    p.set_defaults(func=cmd_calibrate)

    p = sub.add_parser("validate", help="predictions against committed measurements, per suite")
    _add_hw(p)
    p.add_argument("--measurements", required=True, metavar="DIR",
                   help="folder with the suites' JSON, e.g. data/measurements/h100-sxm")
    p.add_argument("--suites", default="grid,gemm,conv", metavar="LIST",
                   help="grid, gemm, conv (times), or counters alone (Nsight Compute's "
                        "instructions, DRAM and L2 bytes against the engine's)")
    p.add_argument("--engine-budget", type=_budget, default=None, metavar="N",
                   help="run the engine (sampled) only on records whose sampled run simulates "
                        "at most N warp-instructions (default: every record); 0: analytic and "
                        "roofline only")
    _add_workers(p)
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--plot", metavar="FILE", help="predicted vs measured; the relu grid sweep")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("plan", help="a network as roofsim's kernels: per-layer and total "
                       "predicted time of a plan, or the fastest plan", description="Predict every "
                       "layer of a network run as roofsim's kernels -- convolutions, batch norms, "
                       "pools, the FC and the layout transforms a plan implies -- with the engine "
                       "(sampled), the analytic model and the roofline bound; or, with --oracle, "
                       "pick the fastest plan from those predictions and write it as a plan file.")
    _add_hw(p)
    p.add_argument("--workload", default="resnet50", metavar="NET", help="a network (default resnet50)")
    p.add_argument("--batch", type=_positive_int("batch"), default=1)
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
    p.add_argument("--mode", choices=("sampled", "analytic"), default="sampled")
    p.add_argument("--l2", choices=("cold", "warm"), default="cold",
                   help="each layer's L2 at its start (default cold)")
    _add_workers(p)
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--plot", metavar="FILE")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("datamove", help="compulsory bytes, pebble lower bound, host-to-device time")
    _add_hw(p)
    _add_workload(p)
    p.add_argument("--dtype", choices=DTYPE_CHOICES,
                   help="default fp32, or the hardware's fastest precision when it has no fp32")
    p.add_argument("--onchip-bytes", metavar="S",
                   help="fast-memory size for the pebble bound, with a unit (e.g. 8MiB); "
                        "default: all the chip's storage")
    p.add_argument("--csv", metavar="FILE")
    p.add_argument("--json", metavar="FILE")
    p.set_defaults(func=cmd_datamove)
    return ap


def _version():
    from simulator import __version__
    return f"roofsim {__version__}"


def main(argv=None) -> int:
    """Run one command; the exit code: 0 done, 2 bad input (one line on stderr naming
    the field, the value and what is allowed), 130 interrupted (Ctrl-C; what finished is
    written, marked partial), 1 an internal error (one line too; ``ROOFSIM_DEBUG=1``
    shows its traceback). Never a traceback otherwise."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_loading:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # started with standard output or error closed (`roofsim ... >&-`): what would be
    # printed goes nowhere, and the command still does its work (its --csv, --json)
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        # the kernel registry only for the commands that take kernels (and for help)
        args = build_parser(kernels=not argv or bool({"simt", "sweep", "plan", "-h", "--help"}
                                                     & set(argv))
                            ).parse_args(_join_negative_values(argv))
        _refuse_empty_values(args)
        if hasattr(args, "policy"):
            if args.policy is not None and getattr(args, "mode", None) == "analytic":
                raise UsageError(f"roofsim: --policy {args.policy}: the analytic model has no warp "
                                 f"scheduler; --policy applies to --mode sampled or full")
            args.policy = args.policy or "gto"
        plot = getattr(args, "plot", None)
        if plot and str(plot).rsplit(".", 1)[-1].lower() not in ("png", "svg", "pdf"):
            raise ValueError(f"--plot {plot!r}: the file must end in .png, .svg or .pdf")
        _check_outputs(args)          # every output path, before any work
        from simulator import table
        table.NO_TIMING = bool(getattr(args, "no_timing", False))
        if getattr(args, "in_thread", False):
            _run_interruptibly(args)
        else:
            args.func(args)
        sys.stdout.flush()
        return 0
    except UsageError as e:
        print(_one_line(e), file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `roofsim hw list | head -1`: the reader left, not an error
        try:
            # nothing more reaches the closed pipe, not even the interpreter's last flush
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except (ValueError, OSError, OverflowError) as e:
        print(f"roofsim: error: {_one_line(e)}", file=sys.stderr)
        return 2
    except MemoryError:
        print("roofsim: error: not enough memory for this input; make it smaller",
              file=sys.stderr)
        return 2
    except (KeyboardInterrupt, SystemError) as e:
        from simulator.parallel import interrupted
        if not interrupted(e):
            return _internal(e)
        print("roofsim: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 -- the last line of defence: one line, exit 1
        return _internal(e)


def _refuse_empty_values(args):
    """An option given an empty value (``--shape ''``, ``--onchip-bytes=``) is an error,
    never read as "not given" (and so as the default) by a later ``if args.x:``."""
    for name, value in vars(args).items():
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and not v.strip() for v in values):
            flag = "--" + name.replace("_", "-")
            raise UsageError(f"roofsim: {flag} {value if isinstance(value, str) else ''!r}: an "
                             f"empty value; give one")


def _run_interruptibly(args):
    """``args.func(args)`` on a thread of its own, so that Ctrl-C stops the command within
    a fraction of a second even inside one long numba call (which does not look at
    signals): the main thread waits, and on SIGINT the process ends at once, exit 130.
    Such a command writes its outputs only when done, each atomically, so nothing
    half-written is left."""
    import os
    import threading
    box = {}

    def work():
        try:
            args.func(args)
        except BaseException as e:  # noqa: BLE001 -- handed to the main thread
            box["error"] = e
    t = threading.Thread(target=work, name="roofsim-command", daemon=True)
    t.start()
    import time
    t0, shown = time.monotonic(), False
    tty = sys.stderr.isatty()
    try:
        while t.is_alive():
            t.join(0.05)
            waited = int(time.monotonic() - t0)
            if tty and waited > 2 and waited != shown:   # a long run: time so far, how to stop
                print(f"\r  running {waited:5d} s (Ctrl-C stops)", end="", file=sys.stderr,
                      flush=True)
                shown = waited
        if shown:
            print("\r" + " " * 40 + "\r", end="", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print("roofsim: interrupted", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(130)
    if "error" in box:
        raise box["error"]


def _one_line(e: BaseException) -> str:
    """The error as one printable line: runs of spaces, tabs and line breaks become one
    space; any other character a terminal would act on (a record separator, an escape,
    a NUL, typed into a value) is shown escaped, as ``\\x1e``."""
    text = " ".join(re.split(r"[ \t\n\r]+", str(e).strip()))
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return text or type(e).__name__


def _internal(e: BaseException) -> int:
    """An error that is roofsim's, not the input's: one line (the traceback with
    ROOFSIM_DEBUG=1), exit 1."""
    import os
    if os.environ.get("ROOFSIM_DEBUG"):
        import traceback
        traceback.print_exception(e)
    print(f"roofsim: internal error: {type(e).__name__}: {_one_line(e)[:300]} (a bug in roofsim; "
          "ROOFSIM_DEBUG=1 shows where)", file=sys.stderr)
    return 1


def _join_negative_values(argv):
    """``--opt -1KiB`` as ``--opt=-1KiB``: argparse takes a value that starts with '-' and
    is not a plain number for an option, and says "expected one argument"; joined, the
    option's own parser names the value and what is allowed."""
    out, i = [], 0
    while i < len(argv):
        a = argv[i]
        b = argv[i + 1] if i + 1 < len(argv) else ""
        if (a.startswith("--") and "=" not in a and len(b) > 1 and b[0] == "-"
                and (b[1].isdigit() or b[1] == ".")):
            out.append(f"{a}={b}")
            i += 2
        else:
            out.append(a)
            i += 1
    return out
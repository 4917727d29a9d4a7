"""The bounds: ``roofsim roofline`` (a hierarchical roofline per op and for the
network), ``roofsim roofline-compare`` (several hardware's roofs on one chart) and
``roofsim datamove`` (compulsory bytes, the pebble bound, host-to-device time)."""
from __future__ import annotations

import hwmodels
from hwmodels.units import format_bytes, format_seconds, format_si, parse_quantity
from simulator.analysis.datamovement import data_movement, h2d_seconds, network_h2d_bytes
from simulator.analysis.roofline import roofline
from simulator.table import format_table

from ..options import add_hw, add_outputs, add_workload, items, load_hw, load_workload
from ..outputs import write_outputs
from . import BY_NAME

NEEDS = ()
FLAG_OF = {"precision": "dtype"}     # the library's precision is --dtype here


def add_roofline(sub):
    p = sub.add_parser("roofline", help=BY_NAME["roofline"].help)
    add_hw(p)
    add_workload(p, dtype=True)
    add_outputs(p, plot="PNG, SVG or PDF")
    p.set_defaults(func=run_roofline)


def add_roofline_compare(sub):
    p = sub.add_parser("roofline-compare", help=BY_NAME["roofline-compare"].help)
    p.add_argument("--hw", default="tpu-v1,k80,haswell-e5-2699v3", metavar="A,B,...",
                   help="comma-separated hardware presets or files (default: the TPU paper's three)")
    p.add_argument("--plot", metavar="FILE")
    p.set_defaults(func=run_roofline_compare)


def add_datamove(sub):
    p = sub.add_parser("datamove", help=BY_NAME["datamove"].help)
    add_hw(p)
    add_workload(p)
    p.add_argument("--dtype", choices=("fp32", "fp16", "bf16", "int8", "fp64", "tf32"),
                   help="default fp32, or the hardware's fastest precision when it has no fp32")
    p.add_argument("--onchip-bytes", metavar="S",
                   help="fast-memory size for the pebble bound, with a unit (e.g. 8MiB); "
                        "default: all the chip's storage")
    add_outputs(p)
    p.set_defaults(func=run_datamove)


def run_roofline(args):
    from simulator.analysis.plots import roofline_chart
    hw = load_hw(args)
    net = load_workload(args, hw)
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
    write_outputs(args, [p.row() for p in rep.points], rep.to_dict,
                  lambda path: roofline_chart(rep, path))


def _dominant(d):
    return max(d, key=d.get) if d else "-"


def run_roofline_compare(args):
    from simulator.analysis.plots import tpu_paper_chart
    hws = [hwmodels.get(n) for n in items(args.hw, "--hw")]
    names = [h.name for h in hws]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:            # (a preset and a TOML copy of it: two rows, one name)
        raise ValueError(f"--hw {args.hw!r}: {twice!r} is named twice; each chart line is a "
                         "hardware of its own name")
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


def run_datamove(args):
    hw = load_hw(args)
    net = load_workload(args, hw)
    s = parse_quantity(args.onchip_bytes, "bytes", "--onchip-bytes") if args.onchip_bytes else None
    if s is not None and s <= 0:
        raise ValueError(f"--onchip-bytes {args.onchip_bytes!r}: must be > 0")
    word = max(op.dtype_bytes for op in net.ops)
    if s is not None and s < word:
        raise ValueError(f"--onchip-bytes {args.onchip_bytes!r}: less than one word ({word} B "
                         f"for {net.name}'s elements); at least {word}B")
    rows = data_movement(hw, net, s)
    link = hw.host_link
    where = " (--onchip-bytes)" if s else " (registers + L1/shared + L2 or SRAMs)"
    host = (f"{link.kind}, pinned {format_si(link.pinned_bandwidth_bytes_per_s, 'B/s')}, pageable "
            f"{format_si(link.pageable_bandwidth_bytes_per_s, 'B/s')}" if link else "none (host CPU)")
    print(f"{net.name} on {hw.name}: on-chip memory S = {format_bytes(rows[0].onchip_bytes)}"
          f"{where}; host link: {host}")
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
    write_outputs(args, [r.to_dict() for r in rows],
                  lambda: {"hardware": hwmodels.to_dict(hw), "workload": net.to_dict(),
                           "onchip_bytes": rows[0].onchip_bytes,
                           "layers": [r.to_dict() for r in rows], "network_h2d_bytes": hb})

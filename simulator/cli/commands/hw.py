"""``roofsim hw list`` and ``roofsim hw show``: the presets, and every field of one."""
from __future__ import annotations

import dataclasses

import hwmodels
from hwmodels.schema import doc
from hwmodels.units import format_bytes, format_seconds, format_si
from simulator.analysis.roofline import ceilings
from simulator.table import format_table

from ..options import Parser, load_hw
from ..outputs import write_json

NEEDS = ()


def add_hw(sub):
    hw = sub.add_parser("hw", help="hardware presets").add_subparsers(
        dest="hwcmd", metavar="ACTION", parser_class=Parser)
    hw.required = True
    p = hw.add_parser("list", help="list presets")
    p.set_defaults(func=run_list)
    p = hw.add_parser("show", help="every field of one hardware, with derived peaks and ridges")
    p.add_argument("hw", metavar="NAME|FILE")
    p.add_argument("--set", action="append", metavar="FIELD=VALUE", help="override a field")
    p.add_argument("--json", metavar="FILE")
    p.add_argument("--toml", metavar="FILE", help="save as a TOML file to edit and load with --hw")
    p.set_defaults(func=run_show)


def run_list(args):
    rows = []
    for n in hwmodels.names():
        hw = hwmodels.get(n)
        prec = hw.fastest_precision()
        dram = hw.memory_levels()[0]
        rows.append([n, hw.family, f"{hw.peak_flop_per_s(prec) / 1e12:.4g} ({prec})",
                     f"{dram.bandwidth_bytes_per_s / 1e9:.4g}", hw.description])
    print(format_table(["name", "family", "peak TFLOP/s", "DRAM GB/s", "description"], rows,
                       right=[False, False, True, True, False]))


def run_show(args):
    hw = load_hw(args)
    print(f"{hw.name}: {hw.description}  [family {hw.family}]")
    rows = []

    def walk(obj, prefix):
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if dataclasses.is_dataclass(v):
                walk(v, f"{prefix}{f.name}.")
            elif f.metadata.get("only") and not prefix.endswith(f"{f.metadata['only']}."):
                continue                    # e.g. the L2's atomics figures, not the L1's
            elif f.name not in ("name", "description"):
                rows.append([f"{prefix}{f.name}", pretty(f.name, v), doc(type(obj), f.name)])
    walk(hw, "")
    print(format_table(["field", "value", "meaning"], rows, right=[False, True, False]))
    s = ceilings(hw)
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
    if args.toml:
        hwmodels.save_toml(hw, args.toml)
        print(f"wrote {args.toml}")


def pretty(name, v):
    """A field's value in its unit (the field's name says which)."""
    if isinstance(v, tuple):        # e.g. sm.shared_carveouts_bytes = 0,8,16,...,228 KiB
        if v and name.endswith("_bytes") and all(x % 1024 == 0 for x in v):
            return ",".join(str(x // 1024) for x in v) + " KiB"
        return ",".join(pretty(name, x) for x in v) if v else "-"
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

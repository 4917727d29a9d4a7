"""``roofsim check``: is a measured time plausible? A trace's kernels against their ops'
roofline bounds."""
from __future__ import annotations

from simulator.analysis.check import check, check_device, read
from simulator.table import format_table

from ..options import add_hw, add_outputs, load_hw
from ..outputs import write_outputs
from . import BY_NAME

NEEDS = ()
FLAG_OF = {"path": "trace"}      # the library's argument -> this command's option

DESCRIPTION = (
    "Read a PyTorch profiler Chrome trace (JSON, record_shapes=True), an Nsight Compute raw "
    "CSV or a plain CSV (name,op,seconds with op a workload spec), map each GPU kernel to the "
    "op it computes, and hold its time to that op's roofline bound on --hw: achieved FLOP/s "
    "and bytes/s, the fraction of the roof, and a flag where it is faster than its bound. "
    "Kernels it cannot map are kept, with their share of time.")


#: kernels listed by time on the console
TOP = 10


def _short(name: str, width: int = 48) -> str:
    """A kernel's name cut to ``width``: a C++ kernel's ``void`` and namespaces dropped
    first, so that what is left names the kernel."""
    n = (name[5:] if name.startswith("void ") else name).replace("(anonymous namespace)::", "")
    cut = min([i for i in (n.find("<"), n.find("(")) if i >= 0], default=len(n))
    n = n[:cut].rsplit("::", 1)[-1] + n[cut:]
    return _cut(n, width)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _top(rows, n):
    """The ``n`` kernels that take the most time, the calls of one kernel on one shape
    summed: [name, role, op, shape, math, calls, seconds, bound seconds, fraction of
    roof]."""
    by = {}
    for r in rows:
        k = (r["name"], r["shape"], r["math"])
        t = by.setdefault(k, [r["name"], r["role"], r["op"], r["shape"], r["math"], 0, 0.0,
                              0.0, False])
        t[5] += 1
        t[6] += r["seconds"]
        t[7] += r["bound_seconds"] or 0.0
        t[8] = t[8] or r["bound_seconds"] is not None
    out = sorted(by.values(), key=lambda t: -t[6])[:n]
    return [t[:7] + ([t[7], t[7] / t[6] if t[6] else None] if t[8] else [None, None])
            for t in out]


def add_check(sub):
    p = sub.add_parser("check", help=BY_NAME["check"].help, description=DESCRIPTION)
    add_hw(p)
    p.add_argument("--trace", required=True, metavar="FILE",
                   help="a PyTorch profiler Chrome trace (JSON), an Nsight Compute raw CSV, or a "
                        "CSV with the header name,op,seconds (the kind read from its content)")
    p.add_argument("--precision", choices=("fp32", "tf32"),
                   help="the arithmetic of the trace's fp32 ops: fp32 (the default) or tf32 "
                        "(fp32 data on TF32 tensor cores); an op of another dtype read from the "
                        "trace (fp64, fp16, bf16, int8) is held to its own dtype's peak")
    add_outputs(p, plot="the kernels on the roofline")
    p.set_defaults(func=run)


def run(args):
    from simulator.analysis.plots import check_chart
    hw = load_hw(args, "simt", " (check holds GPU kernels to its roofs)")
    precision = args.precision or "fp32"
    allowed = hw.peak_rates().supported()
    if precision not in allowed:
        raise ValueError(f"--precision {precision}: {hw.name} has no {precision} peak; allowed: "
                         f"{', '.join(allowed)}")
    kernels = read(args.trace)
    check_device(hw, args.trace)
    try:
        doc = check(hw, kernels, precision)
    except ValueError as e:                 # (about a kernel of the trace: say which trace)
        raise ValueError(f"{args.trace}: {e}") from None
    doc = {"trace": args.trace, "hw": hw.name, "precision": precision, **doc}
    tot = doc["total_seconds"]
    others = sorted({r["math"] for r in doc["kernels"] if r["math"] not in (None, precision)})
    label = precision + "".join(f", {m} where the kernels or dtypes say so" if i == len(others) - 1
                                else f", {m}" for i, m in enumerate(others))
    print(f"{args.trace} on {hw.name} ({label}): {len(doc['kernels'])} kernels, "
          f"{tot * 1e3:.3f} ms of GPU time; {doc['mapped_fraction']:.1%} of it mapped to ops")

    def frac(v):
        # over the kind's possible rows only: an impossible one is counted apart
        return (v["possible_bound_seconds"] / v["possible_seconds"]
                if v["possible_bound_seconds"] and v["possible_seconds"] else "-")
    rows = [[k, v["kernels"], v["seconds"] * 1e3, v["seconds"] / tot if tot else 0,
             v["bound_seconds"] * 1e3 if v["bound_seconds"] else "-", frac(v), v["impossible"]]
            for k, v in sorted(doc["by_kind"].items(), key=lambda kv: -kv[1]["seconds"])]
    print(format_table(["op", "kernels", "ms", "share", "bound ms", "fraction of roof",
                        "impossible"], rows, right=[False] + [True] * 6))
    top = _top(doc["kernels"], TOP)
    print(f"the {len(top)} kernels that take the most time (calls of one kernel on one shape "
          "summed):")
    print(format_table(
        ["kernel", "op", "shape", "math", "calls", "us", "bound us", "fraction of roof"],
        [[_short(name, 40) + (f" ({role})" if role else ""), op, _cut(shape or "-", 34),
          math or "-", calls, sec * 1e6, b * 1e6 if b is not None else "-",
          f if f is not None else "-"]
         for name, role, op, shape, math, calls, sec, b, f in top],
        right=[False, False, False, False, True, True, True, True]))
    unmapped = [r for r in doc["kernels"] if r["shape"] is None]
    if unmapped:
        share = sum(r["seconds"] for r in unmapped) / tot if tot else 0
        print(f"not mapped to an op: {len(unmapped)} kernels, {share:.1%} of GPU time"
              + (" (kept: " + "; ".join(r["name"][:50] for r in unmapped[:5])
                 + (" ..." if len(unmapped) > 5 else "") + ")"))
        why = {}
        for r in unmapped:
            if r["note"]:
                why[r["note"]] = why.get(r["note"], 0) + 1
        for note, n in why.items():
            print(f"  {n} of them: {note}")
    bad = [r for r in doc["kernels"] if r["faster_than_bound"]]
    print(f"faster than their bound: {len(bad)}"
          + ("".join(f"\n  {_short(r['name'])}: {r['why']}" if r.get("why") else
                     f"\n  {_short(r['name'])}  {r['shape'] or ''}  {r['seconds'] * 1e6:.2f} us < "
                     f"{r['bound_seconds'] * 1e6:.2f} us" for r in bad[:10])))
    if bad:
        print("  (an error in the trace, the shapes -- operands that alias move fewer bytes than "
              "their shapes say -- or the hardware model)")
    write_outputs(args, doc["kernels"], lambda: doc, lambda path: check_chart(doc, hw, path, precision))

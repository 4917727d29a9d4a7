"""``roofsim check``: are timings measured with other people's tools plausible?

Reads a trace, maps each GPU kernel to the op it computes, and holds its time to that
op's roofline bound on a hardware preset. Three inputs:

* a PyTorch profiler Chrome trace (``torch.profiler.profile(record_shapes=True)``, then
  ``export_chrome_trace``; a ``.json``): each kernel (``cat == "kernel"``) is joined to
  the operator that launched it through the trace's ``External id``, and the operator's
  ``Input Dims`` and ``Concrete Inputs`` give the op (convolution, linear/GEMM, batch
  norm, pooling, element-wise, copy);
* an Nsight Compute CSV (``ncu --csv --page raw``): each kernel's time and, where
  present, its DRAM bytes; no shapes, so no op -- the DRAM bytes it moved are held to
  the DRAM roof instead;
* a plain CSV a person writes (header ``name,op,seconds``; ``op`` a workload spec such as
  ``gemm:1024x1024x1024`` or ``conv:n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1``).

The bound is ``roofline.bound`` with the op's buffers allowed to start in the L2 (the
least any run of it can take): a kernel faster than it is flagged -- an error in the
trace, the shapes or the hardware model. Several kernels of one operator share its op:
each gets the op's bound in proportion to its time. Kernels that map to no op are kept,
listed with their share of GPU time.
"""
from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("convolution", "gemm", "elementwise", "pooling", "normalization", "copy", "other")


@dataclass
class Kernel:
    """One GPU kernel of a trace."""

    name: str
    seconds: float
    op: object = None            # a workloads.ir op, or None when unmapped
    kind: str = "other"
    source: str = ""             # the operator (or row) it came from
    group: object = None         # kernels of one operator call share it
    counters: dict = field(default_factory=dict)


def _dims(v):
    return [int(x) for x in v] if isinstance(v, list) else []


def _ints(text):
    text = str(text).strip("[] ")
    return [int(x) for x in text.split(",") if x.strip()] if text else []


def _prod(xs):
    return math.prod(xs) if xs else 0


def op_of(name: str, dims: list, concrete: list):
    """(kind, workloads.ir op or None) of a PyTorch operator call."""
    from workloads.ir import BatchNorm, Conv2d, Elementwise, Gemm, Pool2d
    d = [_dims(x) for x in dims]
    c = list(concrete) + [""] * 10
    n = name.split("::")[-1].rstrip("_")
    if n in ("cudnn_convolution", "convolution", "_convolution", "conv2d") and len(d) > 1 \
            and len(d[0]) == 4 and len(d[1]) == 4:
        (N, C, H, W), (K, Cg, R, S) = d[0], d[1]
        if n == "cudnn_convolution":        # input, weight, padding, stride, dilation, groups
            pad, stride, dil, groups = _ints(c[2]), _ints(c[3]), _ints(c[4]), _ints(c[5])
        elif n == "conv2d":                 # input, weight, bias, stride, padding, dilation, groups
            stride, pad, dil, groups = _ints(c[3]), _ints(c[4]), _ints(c[5]), _ints(c[6])
        else:                               # input, weight, bias, stride, padding, dilation, transposed, output_padding, groups
            stride, pad, dil, groups = _ints(c[3]), _ints(c[4]), _ints(c[5]), _ints(c[8])
        stride, pad = (stride or [1])[0], (pad or [0])[0]
        g = (groups or [1])[0]
        if any(x != 1 for x in dil or [1]):
            return "convolution", None
        return "convolution", Conv2d(name=name, N=N, C=C, H=H, W=W, K=K, R=R, S=S, stride=stride,
                                     padding=pad, groups=g if C == Cg * g else 1)
    if n in ("addmm", "mm", "matmul", "linear") and len(d) > 1:
        if n == "addmm" and len(d) > 2:
            a, b = d[1], d[2]
            if len(a) == 2 and len(b) == 2:
                return "gemm", Gemm(name=name, M=a[0], N=b[1], K=a[1])
        if n == "linear" and len(d[0]) >= 2 and len(d[1]) == 2:
            return "gemm", Gemm(name=name, M=_prod(d[0][:-1]), N=d[1][0], K=d[1][1])
        if len(d[0]) == 2 and len(d[1]) == 2:
            return "gemm", Gemm(name=name, M=d[0][0], N=d[1][1], K=d[0][1])
        return "gemm", None
    if n in ("cudnn_batch_norm", "batch_norm", "native_batch_norm", "_native_batch_norm_legit_no_training") \
            and d and len(d[0]) == 4:
        N, C, H, W = d[0]
        return "normalization", BatchNorm(name=name, N=N, C=C, H=H, W=W)
    if n in ("max_pool2d_with_indices", "max_pool2d") and d and len(d[0]) == 4:
        N, C, H, W = d[0]
        k, s, p = _ints(c[1]), _ints(c[2]), _ints(c[3])
        k = k or [1]
        return "pooling", Pool2d(name=name, N=N, C=C, H=H, W=W, R=k[0], S=k[-1],
                                 stride=(s or k)[0], padding=(p or [0])[0], mode="max")
    if n in ("mean", "adaptive_avg_pool2d", "_adaptive_avg_pool2d") and d and len(d[0]) == 4:
        N, C, H, W = d[0]
        return "pooling", Pool2d(name=name, N=N, C=C, H=H, W=W, R=H, S=W, mode="avg")
    if n in ("relu", "clamp_min", "threshold", "sigmoid", "add", "mul", "sub", "hardtanh") and d and d[0]:
        op = {"relu": "relu", "clamp_min": "relu", "threshold": "relu", "hardtanh": "relu",
              "sigmoid": "sigmoid"}.get(n, "add")
        if op == "add" and (len(d) < 2 or d[1] != d[0]):
            op = "relu"                       # a scalar operand: one input read
        return "elementwise", Elementwise(name=name, n=_prod(d[0]), op=op)
    if n in ("copy", "contiguous", "clone", "to", "_to_copy") and d and d[0]:
        return "copy", Elementwise(name=name, n=_prod(d[0]), op="copy")
    return "other", None


def read_torch(path) -> list:
    """The kernels of a PyTorch profiler Chrome trace, each joined to its operator."""
    try:
        doc = json.loads(Path(path).read_text(errors="replace"))
    except RecursionError:
        raise ValueError(f"{path}: not a trace (JSON nested too deep)") from None
    except ValueError as e:
        raise ValueError(f"{path}: not valid JSON ({str(e)[:120]})") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise ValueError(f"{path}: no traceEvents list (a PyTorch profiler Chrome trace has one)")
    ops = {}
    for e in events:
        if isinstance(e, dict) and e.get("cat") == "cpu_op":
            ext = (e.get("args") or {}).get("External id")
            if ext is not None:
                ops.setdefault(ext, []).append(e)
    out = []
    for e in events:
        if not isinstance(e, dict) or e.get("cat") != "kernel":
            continue
        args = e.get("args") or {}
        ext = args.get("External id")
        kind, op, source = "other", None, ""
        for c in sorted(ops.get(ext, []), key=lambda o: -float(o.get("ts", 0))):   # innermost first
            a = c.get("args") or {}
            k, o = op_of(c.get("name", ""), a.get("Input Dims") or [], a.get("Concrete Inputs") or [])
            if o is not None or k != "other":
                kind, op, source = k, o, c.get("name", "")
                break
            source = source or c.get("name", "")
        try:
            sec = float(e["dur"]) * 1e-6
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{path}: kernel {str(e.get('name'))[:60]!r} has no duration") from None
        out.append(Kernel(str(e.get("name", "")), sec, op, kind, source, ext))
    if not out:
        raise ValueError(f"{path}: no GPU kernels (profile with ProfilerActivity.CUDA)")
    return out


_TIME_UNITS = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0, "ns": 1e-9, "us": 1e-6,
               "ms": 1e-3, "s": 1.0}
NCU_COUNTERS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
                "smsp__inst_executed.sum")


def _unit_scale(unit: str) -> float:
    """ncu's units: byte and inst with an optional K, M or G; anything else as written."""
    if unit and unit[0] in "KMG" and unit[1:] in ("byte", "inst", "B"):
        return {"K": 1e3, "M": 1e6, "G": 1e9}[unit[0]]
    return 1.0


def read_ncu(path, metrics=NCU_COUNTERS) -> list:
    """The kernels of an Nsight Compute raw CSV: time and, where present, ``metrics``."""
    rows = [r for r in csv.reader(Path(path).read_text(errors="replace").splitlines()) if r]
    if len(rows) < 3 or "Kernel Name" not in rows[0] or "gpu__time_duration.sum" not in rows[0]:
        raise ValueError(f"{path}: not an Nsight Compute raw CSV (needs Kernel Name and "
                         "gpu__time_duration.sum; ncu --csv --page raw)")
    head, units = rows[0], rows[1]
    col = {h: i for i, h in enumerate(head)}
    t = col["gpu__time_duration.sum"]
    out = []
    for r in rows[2:]:
        if len(r) != len(head) or r[0] == "ID":
            continue
        unit = _TIME_UNITS.get(units[t])
        if unit is None:
            raise ValueError(f"{path}: gpu__time_duration.sum in {units[t]!r}; allowed: "
                             f"{', '.join(_TIME_UNITS)}")
        counters = {}
        for key in metrics:
            if key in col and r[col[key]] not in ("", "n/a"):
                try:
                    counters[key] = float(r[col[key]].replace(",", "")) * _unit_scale(units[col[key]])
                except ValueError:
                    raise ValueError(f"{path}: {key} = {r[col[key]][:30]!r} is not a number") from None
        out.append(Kernel(r[col["Kernel Name"]], float(r[t].replace(",", "")) * unit,
                          counters=counters, source="ncu", group=("ncu", len(out))))
    if not out:
        raise ValueError(f"{path}: no kernel rows")
    return out


def read_plain(path) -> list:
    """A hand-written CSV: name, op (a workload spec), seconds."""
    import workloads
    rows = list(csv.DictReader(Path(path).read_text(errors="replace").splitlines()))
    if not rows or not {"name", "op", "seconds"} <= set(rows[0]):
        raise ValueError(f"{path}: a plain trace has the header name,op,seconds")
    out = []
    for i, r in enumerate(rows, start=2):
        try:
            sec = float(r["seconds"])
        except (TypeError, ValueError):
            raise ValueError(f"{path} line {i}: seconds = {str(r['seconds'])[:30]!r} is not a "
                             "number") from None
        if not sec > 0 or sec == float("inf"):
            raise ValueError(f"{path} line {i}: seconds = {sec!r}: must be a positive finite number")
        try:
            net = workloads.resolve(r["op"])
        except ValueError as e:
            raise ValueError(f"{path} line {i}: op: {e}") from None
        if len(net.ops) != 1:
            raise ValueError(f"{path} line {i}: op {r['op'][:40]!r} is a network; give one op")
        op = net.ops[0]
        kind = {"conv2d": "convolution", "gemm": "gemm", "elementwise": "elementwise",
                "pool2d": "pooling", "batchnorm": "normalization"}.get(op.kind, "other")
        out.append(Kernel(r["name"], sec, op, kind, "csv", ("csv", i)))
    return out


def read(path) -> list:
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path={str(path)!r}: no such file")
    if p.suffix.lower() == ".json":
        return read_torch(p)
    head = p.read_text(errors="replace")[:4096]
    return read_ncu(p) if "Kernel Name" in head else read_plain(p)


def check(hw, kernels, precision: str = "fp32") -> dict:
    """Each kernel against its op's bound: {"kernels": rows, "by_kind": totals,
    "mapped_fraction", "faster_than_bound", "total_seconds"}."""
    from .roofline import bound
    groups = {}
    for k in kernels:
        groups.setdefault(k.group if k.group is not None else id(k), []).append(k)
    dram_bw = hw.memory_levels()[0].bandwidth_bytes_per_s
    rows = []
    for ks in groups.values():
        op = ks[0].op
        total = sum(k.seconds for k in ks)
        b = bound(hw, op.with_dtype("fp32") if op.dtype != "fp32" else op, precision, l2_warm=True) \
            if op is not None else None
        for k in ks:
            row = {"name": k.name, "seconds": k.seconds, "op": ks[0].kind if op is not None else "other",
                   "source": k.source, "shape": op.describe() if op is not None else None,
                   "flops": None, "compulsory_bytes": None, "bound_seconds": None,
                   "fraction_of_roof": None, "achieved_flop_per_s": None,
                   "achieved_bytes_per_s": None, "faster_than_bound": False}
            if b is not None:
                share = k.seconds / total if total > 0 else 1 / len(ks)
                row.update(flops=op.flops() * share, compulsory_bytes=op.min_bytes() * share,
                           bound_seconds=b.seconds * share, limiter=b.limiter)
                row["fraction_of_roof"] = b.seconds / total if total > 0 else None
                row["achieved_flop_per_s"] = op.flops() / total if total > 0 else None
                row["achieved_bytes_per_s"] = op.min_bytes() / total if total > 0 else None
                row["faster_than_bound"] = bool(total < b.seconds * (1 - 1e-9))
            elif "dram__bytes_read.sum" in k.counters:
                moved = k.counters["dram__bytes_read.sum"] + k.counters.get("dram__bytes_write.sum", 0.0)
                row.update(compulsory_bytes=None, achieved_bytes_per_s=moved / k.seconds,
                           bound_seconds=moved / dram_bw, fraction_of_roof=moved / dram_bw / k.seconds,
                           faster_than_bound=bool(moved / k.seconds > dram_bw * (1 + 1e-9)),
                           limiter="dram (counted bytes)")
            rows.append(row)
    total = sum(r["seconds"] for r in rows)
    mapped = sum(r["seconds"] for r in rows if r["shape"] is not None)
    by_kind = {}
    for r in rows:
        t = by_kind.setdefault(r["op"], {"kernels": 0, "seconds": 0.0, "bound_seconds": 0.0})
        t["kernels"] += 1
        t["seconds"] += r["seconds"]
        t["bound_seconds"] += r["bound_seconds"] or 0.0
    return {"kernels": rows, "by_kind": by_kind, "total_seconds": total,
            "mapped_fraction": mapped / total if total else 0.0,
            "faster_than_bound": sum(r["faster_than_bound"] for r in rows)}

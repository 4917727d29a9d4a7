"""``roofsim check``: are timings measured with other people's tools plausible?

Reads a trace, maps each GPU kernel to the op it computes, and holds its time to that
op's roofline bound on a hardware preset. Three inputs:

* a PyTorch profiler Chrome trace (``torch.profiler.profile(record_shapes=True)``, then
  ``export_chrome_trace``; a ``.json``): each kernel (``cat == "kernel"``) is joined to
  the operator that launched it through the trace's ``External id``, and the operator's
  ``Input Dims`` and ``Concrete Inputs`` give the op (convolution, linear/GEMM, batch
  norm, pooling, element-wise, copy);
* an Nsight Compute CSV (``ncu --csv --page raw``): each kernel's time and, where
  present, its byte counters; no shapes, so no op -- the bytes it moved are held to the
  roof of each level counted instead (DRAM: ``dram__bytes_read.sum`` plus
  ``dram__bytes_write.sum``, whichever of them is there; L2: ``lts__t_bytes.sum``), and
  every metric read must be in a unit of its own kind (``trace_fields.ncu_units``);
* a plain CSV a person writes (header ``name,op,seconds[,dtype]``; ``op`` a workload spec
  such as ``gemm:1024x1024x1024``, ``conv:n=8,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1``,
  ``layernorm:8192x768`` or ``attention:b=8,h=12,q=128,kv=128,d=64``; ``dtype`` one of
  fp64, fp32, tf32 -- fp32 data on TF32 tensor cores --, fp16, bf16, int8, empty for fp32).

The bound is ``roofline.bound`` with the op's buffers allowed to start in the L2 (the
least any run of it can take): a kernel faster than it is flagged -- an error in the
trace, the shapes or the hardware model. Several kernels of one operator share its op:
each gets the op's bound in proportion to its time. Kernels that map to no op are kept,
listed with their share of GPU time, with a note where a kernel of a known kind maps to
no op (another dtype, a transposed or dilated convolution, an asymmetric stride, an
adaptive pool to other than 1x1, an empty tensor, inputs' shapes missing: ``trace_ops``)
or where it is joined to no operator (no ``External id``, or one no operator has). A
trace's GPUs are held to the preset's by ``gpus.check_trace_device``.

Each input kind has one schema, checked on load (``read`` picks the kind from the
content: a JSON object with ``traceEvents``, an ncu header with ``ID`` and ``Kernel
Name``, names stripped of the spaces around them, or the header ``name,op,seconds``):
times finite, from :data:`MIN_SECONDS` (a nanosecond) to :data:`MAX_SECONDS` (an hour),
the suites' range (a PyTorch trace's ``dur`` may also be 0, not -0.0: the profiler writes
it for a kernel shorter than its resolution); sizes integers >= 0; counts (bytes, instructions)
finite, >= 0 and at most :data:`MAX_COUNT`; numbers in text in ASCII decimal notation
only; no key twice in a JSON object read, no column twice in a CSV header (the shared
limits and parser: ``trace_fields``). Every name read (kernel, operator, CSV row) is
made printable on load (``trace_fields.printable``: control characters and lone
surrogates become escapes such as ``\x1b`` and ``\ud800``), so every output gets the
same safe name. An operator call is mapped to its op by ``trace_ops.op_of``, which reads
every argument that changes the op's shape: a call that cannot come from PyTorch is
refused, one workloads.ir cannot hold faithfully is kept unmapped with a note. A kernel
of 0 s (a profiler's rounding) is kept and divides nothing. Errors name the file, the
record (event index and name, or CSV line), the field, its value and what is allowed.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from simulator.arguments import show

from .gpus import check_trace_device as check_device  # noqa: F401  (check's API)
from .gpus import trace_devices as devices  # noqa: F401  (check's API)
from .kernel_names import helper_of, math_of
from .trace_fields import MAX_COUNT, MAX_SECONDS, MIN_SECONDS, columns, decimal, ncu_units, printable
from .trace_fields import in_range as _in_range
from .trace_fields import show as _show
from .trace_ops import TORCH_DTYPES, op_of  # noqa: F401  (op_of: check's API)

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable, Sequence

    from hwmodels.schema import Hardware

KINDS = ("convolution", "gemm", "elementwise", "pooling", "normalization", "softmax", "attention",
         "embedding", "copy", "other")


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
    note: str = ""               # why a kernel of a known kind maps to no op
    math: str | None = None      # the arithmetic it ran, where the trace says (a plain
    #                              CSV's dtype column: tf32 for fp32 data on TF32 cores)


# ---------------------------------------------------------------------------------------
# Reading a trace: one schema per input kind, checked on load. Each reader turns the
# file's records into typed records (a field at a time: its type, then its range), and
# an error names the file, the record (event index and kernel/operator name, or CSV
# line), the field, the value (cut short) and what is allowed.

from .trace_files import csv_rows, kind_of, trace_text  # noqa: E402,F401 -- readers and API

# --- PyTorch profiler Chrome traces ------------------------------------------------------

class _Obj(dict):
    """A JSON object that remembers a key given twice (json keeps the last silently)."""
    twice = None


def _pairs(pairs):
    o = _Obj()
    for k, v in pairs:
        if k in o and o.twice is None:
            o.twice = (k, o[k], v)
        o[k] = v
    return o


@dataclass(frozen=True)
class TorchKernel:
    """A kernel event (``cat == "kernel"``) as checked: its time in seconds (>= 0) and
    the ``External id`` of the operator call that launched it."""

    index: int
    name: str
    seconds: float
    ext: int | None


@dataclass(frozen=True)
class TorchOp:
    """An operator event (``cat == "cpu_op"``) as checked: ``dims`` one entry per input
    (a shape, a list of shapes for a TensorList, or () for a non-tensor), ``types`` its
    ``Input type``, ``concrete`` its ``Concrete Inputs`` (text, parsed by the op that
    needs them)."""

    index: int
    name: str
    ts: float
    ext: int | None
    dims: tuple
    types: tuple
    concrete: tuple


def _number(at, field, v, allowed, **limits):
    """A JSON number (not a bool) in range, as a float."""
    try:
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and _in_range(float(v), **limits)
    except OverflowError:           # an integer past float's range
        ok = False
    if not ok:
        raise ValueError(f"{at}: {field} = {_show(v)}: {allowed}")
    return float(v)


def _ext(at, args):
    v = args.get("External id")
    if v is not None and (not isinstance(v, int) or isinstance(v, bool)):
        raise ValueError(f"{at}: args.External id = {_show(v)}: an integer")
    return v


def _args(at, e):
    a = e.get("args", {})
    if not isinstance(a, dict):
        raise ValueError(f"{at}: args = {_show(a)}: an object")
    if getattr(a, "twice", None):
        k, v1, v2 = a.twice
        raise ValueError(f"{at}: args.{k} is given twice ({_show(v1, 20)}, then {_show(v2, 20)}); "
                         "one value a key")
    return a


def _event(path, i, e, what) -> tuple:
    """A trace event's name, where it is (for messages) and its args; ``what`` is
    ``kernel`` or ``operator``."""
    name = e.get("name")
    if not isinstance(name, str):
        article = "an" if what[0] in "aeiou" else "a"
        raise ValueError(f"{path}: event {i} ({article} {what}): name = {_show(name)}: a string")
    at = f"{path}: event {i}, {what} {_show(name, 60)}"
    return name, at, _args(at, e)


def _torch_kernel(path, i, e) -> TorchKernel:
    name, at, a = _event(path, i, e, "kernel")
    if "dur" not in e:
        raise ValueError(f"{at}: no dur (its duration in microseconds)")
    allowed = (f"a duration is a finite number of microseconds, >= 0 and at most an hour "
               f"({MAX_SECONDS * 1e6:.4g}): 0 (what the profiler writes for a kernel shorter than "
               f"its resolution) or from {MIN_SECONDS * 1e6:g} (a nanosecond)")
    us = _number(at, "dur", e["dur"], allowed, lo=0, hi=MAX_SECONDS * 1e6)
    if 0 < us < MIN_SECONDS * 1e6 or math.copysign(1.0, us) < 0:
        raise ValueError(f"{at}: dur = {_show(e['dur'])}: {allowed}" + (
            "; -0.0 is a negative zero, not the profiler's 0" if us == 0 else ""))
    return TorchKernel(i, printable(name), us * 1e-6, _ext(at, a))


def _is_size(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _shape(at, field, v, nested=True):
    """A shape (a list of sizes: integers >= 0), a TensorList's list of shapes, or ()
    for an operand with no tensor."""
    if not isinstance(v, list):
        raise ValueError(f"{at}: {field} = {_show(v)}: a shape (a list of sizes)")
    if nested and v and all(isinstance(x, list) for x in v):      # a TensorList
        return tuple(_shape(at, f"{field}[{j}]", x, nested=False) for j, x in enumerate(v))
    for j, x in enumerate(v):
        if not _is_size(x):
            raise ValueError(f"{at}: {field}[{j}] = {_show(x)}: a size is an integer >= 0")
    return tuple(v)


def _strings(at, field, v):
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValueError(f"{at}: {field} = {_show(v)}: a list of strings")
    return tuple(v)


def _torch_op(path, i, e) -> TorchOp:
    name, at, a = _event(path, i, e, "operator")
    ts = _number(at, "ts", e.get("ts"), "a finite number (its start in microseconds)")
    dims = a.get("Input Dims", [])
    if not isinstance(dims, list):
        raise ValueError(f"{at}: args.Input Dims = {_show(dims)}: a list, one shape per input")
    dims = tuple(_shape(at, f"args.Input Dims[{j}]", d) for j, d in enumerate(dims))
    return TorchOp(i, printable(name), ts, _ext(at, a), dims,
                   tuple(printable(t) for t in _strings(at, "args.Input type", a.get("Input type", []))),
                   _strings(at, "args.Concrete Inputs", a.get("Concrete Inputs", [])))


def _torch_events(path, text):
    """The checked kernels and operator calls of a PyTorch profiler Chrome trace."""
    try:
        doc = json.loads(text, object_pairs_hook=_pairs)
    except RecursionError:
        raise ValueError(f"{path}: not a trace (JSON nested too deep)") from None
    except ValueError as e:
        raise ValueError(f"{path}: not valid JSON ({str(e)[:120]})") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if isinstance(doc, dict) and doc.twice and doc.twice[0] == "traceEvents":
        raise ValueError(f"{path}: traceEvents is given twice; one list of events")
    if not isinstance(events, list):
        raise ValueError(f"{path}: no traceEvents list (a PyTorch profiler Chrome trace is a JSON "
                         "object with one)")
    kernels, ops = [], []
    for i, e in enumerate(events):
        if not isinstance(e, dict):
            raise ValueError(f"{path}: event {i} = {_show(e)}: an object")
        cat = e.get("cat")
        if cat not in ("kernel", "cpu_op"):
            continue
        if e.twice:
            k, v1, v2 = e.twice
            raise ValueError(f"{path}: event {i}, {'kernel' if cat == 'kernel' else 'operator'} "
                             f"{_show(e.get('name'), 60)}: {k} is given twice ({_show(v1, 20)}, then "
                             f"{_show(v2, 20)}); one value a key")
        (kernels if cat == "kernel" else ops).append(
            _torch_kernel(path, i, e) if cat == "kernel" else _torch_op(path, i, e))
    return kernels, ops


def read_torch(path: str | os.PathLike) -> list[Kernel]:
    """The kernels of a PyTorch profiler Chrome trace, each joined to its operator."""
    return _read_torch(path, trace_text(path))


def _read_torch(path, text) -> list:
    kernels, calls = _torch_events(path, text)
    ops = {}
    for c in calls:
        if c.ext is not None:
            ops.setdefault(c.ext, []).append(c)
    out = []
    for k in kernels:
        kind, op, source, note = "other", None, "", ""
        for c in sorted(ops.get(k.ext, []), key=lambda o: -o.ts):        # innermost first
            try:
                ck, co, cn = op_of(c.name, c.dims, c.concrete, c.types, kernel=k.name)
            except ValueError as e:
                raise ValueError(f"{path}: event {c.index}, operator {_show(c.name, 60)}: {e}") from None
            if co is not None or ck != "other":
                kind, op, source, note = ck, co, c.name, cn
                break
            source = source or c.name
        if op is None and not note and kind == "other" and not source:
            # joined to no operator at all: say why (an operator of a kind roofsim does not
            # model, source set, needs no note)
            note = ("no External id: nothing joins it to the operator that launched it" if k.ext is None
                    else "its External id matches no operator call (cpu_op event) of the trace")
        out.append(Kernel(k.name, k.seconds, op, kind, source, k.ext, note=note))
    if not out:
        raise ValueError(f"{path}: no GPU kernels (profile with ProfilerActivity.CUDA)")
    return out


# --- Nsight Compute raw CSVs ---------------------------------------------------------------

NCU_COUNTERS = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum",
                "smsp__inst_executed.sum")


def _csv_number(at, field, v, allowed, **limits):
    """A CSV field's number in range, as a float: ASCII decimal notation only
    (``trace_fields.decimal``; ncu writes 54,848)."""
    x = decimal(v)
    if x is None or not _in_range(x, **limits):
        raise ValueError(f"{at}: {field} = {_show(v)}: {allowed}" + (
            " (written in ASCII decimal notation, as 54,848 or 5.4848e4)" if x is None else ""))
    return x


def read_ncu(path: str | os.PathLike, metrics: Sequence[str] = NCU_COUNTERS) -> list[Kernel]:
    """The kernels of an Nsight Compute raw CSV: time and, where present, ``metrics``."""
    return _read_ncu(path, trace_text(path), metrics)


def _read_ncu(path, text, metrics=NCU_COUNTERS) -> list:
    try:
        rows = list(csv_rows(text))
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    # names and units with spaces around them (as kind_of reads them) are the same names
    rows = [(i, [x.strip() for x in r]) if j < 2 else (i, r) for j, (i, r) in enumerate(rows)]
    need = ("ID", "Kernel Name", "gpu__time_duration.sum")
    if not rows or not set(need) <= set(rows[0][1]):
        raise ValueError(f"{path}: not an Nsight Compute raw CSV (its header needs "
                         f"{', '.join(need)}; ncu --csv --page raw)")
    (hline, head), units = rows[0], (rows[1] if len(rows) > 1 else (None, None))
    col = columns(path, hline, head)
    if units[1] is None or len(units[1]) != len(head):
        raise ValueError(f"{path} line {units[0] or hline + 1}: the units row has "
                         f"{len(units[1] or [])} fields; the header has {len(head)}")
    uline, units = units
    t = col["gpu__time_duration.sum"]
    wanted = [m for m in metrics if m in col and m != "gpu__time_duration.sum"]
    scales = {}
    for m in ["gpu__time_duration.sum"] + wanted:     # each metric in a unit of its own kind
        allowed = ncu_units(m)
        if units[col[m]] not in allowed:
            raise ValueError(f"{path} line {uline}: {m} in {_show(units[col[m]])}; "
                             f"allowed: {', '.join(allowed)}")
        scales[m] = allowed[units[col[m]]]
    scale = scales["gpu__time_duration.sum"]
    out = []
    for line, r in rows[2:]:
        if [x.strip() for x in r] == head:     # ncu repeats its header for each process
            continue
        if len(r) != len(head):
            raise ValueError(f"{path} line {line}: {len(r)} fields; the header has {len(head)}")
        at = f"{path} line {line}, kernel {_show(r[col['Kernel Name']], 60)}"
        sec = _csv_number(at, "gpu__time_duration.sum", r[t], f"a duration in {units[t]}: a finite "
                          f"number >= {MIN_SECONDS / scale:.4g} (a nanosecond), at most an hour "
                          f"({MAX_SECONDS / scale:.4g})",
                          lo=MIN_SECONDS / scale, hi=MAX_SECONDS / scale) * scale
        counters = {}
        for m in wanted:
            v = r[col[m]]
            if v.strip() not in ("", "n/a"):
                u = scales[m]
                counters[m] = _csv_number(at, m, v, f"a count in {units[col[m]] or 'units'}: a finite "
                                          f"number >= 0, at most {MAX_COUNT / u:.4g} "
                                          f"(2**64 {units[col[m]] or 'units'}"
                                          f"{'' if u == 1 else ' of one'}, a 64-bit counter) or n/a",
                                          lo=0, hi=MAX_COUNT / u) * u
        out.append(Kernel(printable(r[col["Kernel Name"]]), sec, counters=counters, source="ncu",
                          group=("ncu", len(out))))
    if not out:
        raise ValueError(f"{path}: no kernel rows")
    return out


# --- plain CSVs ------------------------------------------------------------------------------

def read_plain(path: str | os.PathLike) -> list[Kernel]:
    """A hand-written CSV: name, op (a workload spec), seconds."""
    return _read_plain(path, trace_text(path))


#: a plain CSV's columns: the three it needs, then the optional dtype
PLAIN_COLUMNS = ("name", "op", "seconds", "dtype")
#: a plain CSV's dtypes: workloads.ir's, and tf32 (fp32 data on TF32 tensor cores)
PLAIN_DTYPES = ("fp64", "fp32", "tf32", "fp16", "bf16", "int8")


def _read_plain(path, text) -> list:
    import workloads
    try:
        rows = list(csv_rows(text))
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    head = [h.strip() for h in rows[0][1]] if rows else []
    if not {"name", "op", "seconds"} <= set(head):
        raise ValueError(f"{path}: a plain trace has the header name,op,seconds (and an optional "
                         "dtype column)")
    col = columns(path, rows[0][0], head)
    extra = [h for h in head if h not in PLAIN_COLUMNS]
    if extra:
        hint = " (a row's arithmetic is its dtype column: fp32, tf32, bf16, ...)" if any(
            h.lower() in ("precision", "math", "type") for h in extra) else ""
        raise ValueError(f"{path} line {rows[0][0]}: column {extra[0]!r} is not one roofsim reads; "
                         f"the columns are {', '.join(PLAIN_COLUMNS)}{hint}")
    out = []
    for i, r in rows[1:]:
        if len(r) != len(head):
            raise ValueError(f"{path} line {i}: {len(r)} fields; the header {','.join(head)[:60]} has "
                             f"{len(head)}")
        at = f"{path} line {i}"
        sec = _csv_number(at, "seconds", r[col["seconds"]],
                          f"must be a positive finite number of seconds, at least {MIN_SECONDS:g} (a "
                          f"nanosecond) and at most an hour ({MAX_SECONDS:g})",
                          lo=MIN_SECONDS, hi=MAX_SECONDS)
        dt = r[col["dtype"]].strip() if "dtype" in col else ""
        if dt and dt not in PLAIN_DTYPES:
            raise ValueError(f"{at}: dtype = {_show(r[col['dtype']])}: one of {', '.join(PLAIN_DTYPES)} "
                             "(tf32: fp32 data on TF32 tensor cores), or empty for fp32")
        try:
            net = workloads.resolve(r[col["op"]], dtype="fp32" if dt in ("", "tf32") else dt)
        except ValueError as e:
            raise ValueError(f"{at}: op: {e}") from None
        if len(net.ops) != 1:
            raise ValueError(f"{at}: op {r[col['op']][:40]!r} is a network; give one op")
        op = net.ops[0]
        kind = {"conv2d": "convolution", "gemm": "gemm", "bmm": "gemm", "elementwise": "elementwise",
                "pool2d": "pooling", "batchnorm": "normalization", "attention": "attention",
                "embedding": "embedding"}.get(op.kind, "other")
        if op.kind == "rowop":
            kind = "normalization" if op.op == "layernorm" else "softmax"
        out.append(Kernel(printable(r[col["name"]]), sec, op, kind, "csv", ("csv", i),
                          math="tf32" if dt == "tf32" else None))
    if not out:
        raise ValueError(f"{path}: no rows under the header name,op,seconds")
    return out


def read(path: str | os.PathLike) -> list[Kernel]:
    """The kernels of a trace, its kind (PyTorch profiler JSON, Nsight Compute raw CSV or
    plain CSV) read from its content, whatever its name."""
    text = trace_text(path)
    kind = kind_of(path, text)
    return {"torch": _read_torch, "ncu": _read_ncu, "plain": _read_plain}[kind](path, text)


#: the byte counters ncu reports for each memory level: a kernel must move what they
#: count through the level, so its time is at least their sum over the level's bandwidth
COUNTED_BYTES = (("dram", ("dram__bytes_read.sum", "dram__bytes_write.sum")), ("l2", ("lts__t_bytes.sum",)))


def _counted(counters) -> dict:
    """{level: bytes} of the byte counters present (reads and writes summed, whichever
    of them the trace has)."""
    return {lv: sum(counters[m] for m in ms if m in counters)
            for lv, ms in COUNTED_BYTES if any(m in counters for m in ms)}


def _counted_bound(k, level_bw) -> dict:
    """A kernel with no op but counted bytes, held to the roof of each level counted: its
    bound the longest of bytes over bandwidth; its achieved bytes/s the DRAM's, where
    counted."""
    moved = {lv: b for lv, b in _counted(k.counters).items() if lv in level_bw}
    if not moved:
        return {}
    times = {lv: b / level_bw[lv] for lv, b in moved.items()}
    lim = max(times, key=times.get)
    b = times[lim]
    s = k.seconds
    dram = moved.get("dram")
    return dict(compulsory_bytes=None, bound_seconds=b, limiter=f"{lim} (counted bytes)",
                achieved_bytes_per_s=dram / s if s > 0 and dram is not None else None,
                fraction_of_roof=b / s if s > 0 else None,
                faster_than_bound=bool(s < b * (1 - 1e-9)) if s > 0 else b > 0)


def _math(op, ks, precision: str) -> str:
    """The arithmetic an operator call's kernels run (``kernel_names.math_of`` on its
    kernels that are not helpers): a tensor-core mode the names give for fp32 data
    (TF32), fp32 where they name fp32 SIMT code, else ``precision`` for fp32 ops; an op of
    another dtype runs at its own."""
    if op.dtype != "fp32":
        return op.dtype
    named = {k.math or math_of(k.name) for k in ks if helper_of(k.name) is None}
    return "tf32" if "tf32" in named else "fp32" if "fp32" in named else precision


def check(hw: Hardware, kernels: Iterable[Kernel], precision: str = "fp32") -> dict:
    """Each kernel against its op's bound: {"kernels": rows, "by_kind": totals,
    "mapped_fraction", "faster_than_bound", "total_seconds"}.

    ``precision`` is the arithmetic of the fp32 ops whose kernels' names do not say it
    (``kernel_names.math_of``: cuDNN's ``..._tf32f32_...`` and CUTLASS's ``tensorop_s1688gemm``
    run TF32 tensor cores, ``..._ffma_...`` and ``sgemm`` fp32 SIMT): ``fp32`` or ``tf32``
    (fp32 data on TF32 tensor cores); an op of another dtype (fp64, fp16, bf16, int8) is
    held to its own dtype's peak. Each row says the arithmetic it was held to (``math``)
    and, for a helper kernel (a layout transform, a split-K reduction), what it is
    (``role``); a flagged row says why (``why``). A kernel of zero seconds (a profiler may
    round one to 0) is kept: it
    has no achieved rates, and it is faster than its bound wherever its op needs time."""
    from .roofline import bound
    if precision not in ("fp32", "tf32"):
        raise ValueError(f"precision={show(precision)}: the arithmetic of the trace's fp32 ops, fp32 or "
                         "tf32 (fp32 data on TF32 tensor cores); an op of another dtype is held to "
                         "its own dtype's peak")
    allowed = hw.peak_rates().supported()
    groups = {}
    for k in kernels:
        groups.setdefault(k.group if k.group is not None else id(k), []).append(k)
    level_bw = {lv.name: lv.bandwidth_bytes_per_s for lv in hw.memory_levels()}
    rows = []
    # a trace calls the same few shapes over and over (every step of a training loop):
    # each shape's bound, FLOPs and bytes computed once (the operator's name aside)
    memo = {}
    for ks in groups.values():
        op = ks[0].op
        total = sum(k.seconds for k in ks)
        b = prec = None
        if op is not None:
            prec = _math(op, ks, precision)
            if prec not in allowed:
                said = (f" its name says {prec} tensor cores," if prec != op.dtype and prec != precision
                        else "")
                raise ValueError(f"kernel {ks[0].name[:60]!r} ({ks[0].source or ks[0].kind}) is {op.dtype} "
                                 f"data,{said} and hw {show(hw.name)} has no {prec} peak; it has: "
                                 f"{', '.join(allowed)}")
            key = (replace(op, name=""), prec)
            if key not in memo:
                memo[key] = (bound(hw, op, prec, l2="warm"), op.flops(), op.min_bytes())
            b, op_flops, op_bytes = memo[key]
        for k in ks:
            row = {"name": k.name, "seconds": k.seconds, "op": ks[0].kind if op is not None else "other",
                   "source": k.source, "shape": op.describe() if op is not None else None,
                   "dtype": op.dtype if op is not None else None, "math": prec,
                   "role": helper_of(k.name), "note": k.note or None, "why": None,
                   "flops": None, "compulsory_bytes": None, "bound_seconds": None,
                   "fraction_of_roof": None, "achieved_flop_per_s": None,
                   "achieved_bytes_per_s": None, "faster_than_bound": False}
            if b is not None:
                share = k.seconds / total if total > 0 else 1 / len(ks)
                row.update(flops=op_flops * share, compulsory_bytes=op_bytes * share,
                           bound_seconds=b.seconds * share, limiter=b.limiter)
                row["fraction_of_roof"] = b.seconds / total if total > 0 else None
                row["achieved_flop_per_s"] = op_flops / total if total > 0 else None
                row["achieved_bytes_per_s"] = op_bytes / total if total > 0 else None
                row["faster_than_bound"] = bool(total < b.seconds * (1 - 1e-9))
                if row["faster_than_bound"]:
                    row["why"] = (
                        f"{total * 1e6:.3g} us" + (f" for the {len(ks)} kernels of its {ks[0].source} "
                                                   "call together" if len(ks) > 1 else "")
                        + f"; {op.describe()} in {prec} needs at least {b.seconds * 1e6:.3g} us "
                        f"(its {b.limiter} roof)" + (
                            " if its inputs are distinct tensors (a trace does not say: x + x "
                            "reads one)" if op.kind == "elementwise" and op.reads() > 1 else ""))
            elif _counted(k.counters):
                row.update(_counted_bound(k, level_bw))
            rows.append(row)
    total = sum(r["seconds"] for r in rows)
    mapped = sum(r["seconds"] for r in rows if r["shape"] is not None)
    by_kind = {}
    for r in rows:
        t = by_kind.setdefault(r["op"], {"kernels": 0, "seconds": 0.0, "bound_seconds": 0.0,
                                         "impossible": 0, "possible_seconds": 0.0,
                                         "possible_bound_seconds": 0.0})
        t["kernels"] += 1
        t["seconds"] += r["seconds"]
        t["bound_seconds"] += r["bound_seconds"] or 0.0
        # a kind's fraction of its roof is over the rows that are possible: an impossible
        # row (faster than its bound) is counted apart, never mixed into a ratio above 1
        if r["faster_than_bound"]:
            t["impossible"] += 1
        elif r["bound_seconds"]:
            t["possible_seconds"] += r["seconds"]
            t["possible_bound_seconds"] += r["bound_seconds"]
    return {"kernels": rows, "by_kind": by_kind, "total_seconds": total,
            # (a trace whose kernels all last 0 us: the share of its kernels mapped)
            "mapped_fraction": (mapped / total if total else
                                sum(r["shape"] is not None for r in rows) / len(rows) if rows else 0.0),
            "faster_than_bound": sum(r["faster_than_bound"] for r in rows)}

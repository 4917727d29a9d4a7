"""The engine's counters against Nsight Compute's (the ``counters`` suite): per launch,
warp instructions executed, DRAM bytes (read and written) and L2 bytes, each error
beside the error on time -- the way Accel-Sim's correlator scores a simulator. The
engine runs sampled with the L2 empty (``l2="flushed"``: ncu flushes the caches before each
profiled launch); a sampled run's counts are its extrapolation to the whole launch.
"""
from __future__ import annotations

import statistics
from pathlib import Path
from typing import TYPE_CHECKING

from simulator.arguments import show

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence

    from hwmodels.schema import SIMTGPU
    from workloads.ir import TensorOp

PROBLEMS = tuple(
    [f"gemm-naive=gemm:{s}x{s}x{s}#{tx}" for s in (256, 512, 1024) for tx in ("cols", "rows")]
    + [f"gemm-tiled=gemm:{s}x{s}x{s}#{t}" for s in (256, 512, 1024) for t in (8, 16, 32)]
    + ["relu=relu:16777216", "relu=relu:1048576"]
    + [f"{k}={layer}@{lay}" for layer in ("layer1.0.conv2/1", "layer3.0.conv2/8", "layer2.0.conv1/8")
       for k in ("conv-direct", "conv-im2col") for lay in ("nchw", "nhwc")]
    + ["batchnorm=layer1.0.bn3/8@nchw", "batchnorm=layer1.0.bn3/8@nhwc", "pool2d=maxpool/8@nhwc",
       "layout-transform=layer2.0.conv1/8@nhwc"])


LAYOUTS = ("nchw", "nhwc")


def problem_of(item: str, hw: SIMTGPU | None = None) -> tuple[str, dict]:
    """(kernel name, its problem arguments) of a ``KERNEL=WORKLOAD[@LAYOUT][#VARIANT]``
    item (WORKLOAD: a workload spec, or a ResNet-50 layer and its batch,
    ``layer3.0.conv2/8``; VARIANT: gemm-naive's thread_x or gemm-tiled's tile). A
    ValueError says what of the item cannot be read."""
    import workloads
    from simulator.simt.kernels import REGISTRY
    if not isinstance(item, str) or "=" not in item:
        raise ValueError("a problem is KERNEL=WORKLOAD[@LAYOUT][#VARIANT] "
                         "(gemm-tiled=gemm:256x256x256#16, conv-direct=layer1.0.conv2/1@nhwc)")
    kernel, rest = item.split("=", 1)
    rest, _, variant = rest.partition("#")
    spec_s, at, layout = rest.partition("@")
    spec = REGISTRY.get(kernel)
    if "/" in spec_s:
        layout = layout or "nchw"
        if layout not in LAYOUTS:
            raise ValueError(f"layout {show(layout)}: allowed: {', '.join(LAYOUTS)}")
        name, _, batch = spec_s.partition("/")
        if not (batch.isascii() and batch.isdigit()) or int(batch) < 1:
            raise ValueError(f"batch {show(batch)} of layer {show(name)}: must be a positive integer")
        ops = workloads.resolve("resnet50", batch=int(batch), layout=layout).ops
        found = [o for o in ops if o.name == name]
        if not found:
            raise ValueError(f"layer {show(name)} is not a ResNet-50 layer (conv1, layer1.0.conv2, "
                             f"layer2.0.bn1, maxpool, ...)")
        op = found[0]
    else:
        if at:
            raise ValueError(f"a layout (@{layout}) is for a ResNet-50 layer (NAME/BATCH), "
                             f"not {show(spec_s)}")
        op = one_op(spec_s)
    takes = {a.name for a in spec.args}
    if variant and op.kind != "gemm":
        raise ValueError(f"a variant (#{variant}) is gemm-naive's thread_x or gemm-tiled's tile")
    if "conv" in takes:
        return kernel, {"conv": op}
    if "op" in takes:
        return kernel, {"op": op}
    if {"m", "n", "k"} <= takes:
        if op.kind != "gemm":
            raise ValueError(f"{kernel} computes a GEMM, not a {op.kind}")
        kw = {"m": op.M, "n": op.N, "k": op.K}
        if variant:
            if kernel == "gemm-naive":
                kw["thread_x"] = variant
            elif variant.isdigit():
                kw["tile"] = int(variant)
            else:
                raise ValueError(f"variant #{variant}: {kernel}'s tile is an integer")
        return kernel, kw
    if op.kind != "elementwise" or "grid" not in takes:
        raise ValueError(f"{kernel} on a {op.kind} is not a problem of the counters suite")
    # relu: the grid that fills an H100 once (132 SMs x 8 blocks of 256)
    return kernel, {"n": op.n, "grid": (1056,), "block": (256,)}


def one_op(spec: str) -> TensorOp:
    """The op of a workload spec naming one op (``gemm:256x256x256``); a network
    (``resnet50``) is refused: a problem is one op, not a network's first layer."""
    import workloads
    ops = workloads.resolve(spec).ops
    if len(ops) != 1:
        raise ValueError(f"workload {show(spec)} is {len(ops)} ops (a network); a problem is one op "
                         f"(gemm:MxNxK, relu:N) or a ResNet-50 layer NAME/BATCH")
    return ops[0]


def launches_of(item: str) -> int:
    from simulator.simt.kernels import REGISTRY
    kernel, kw = problem_of(item)
    spec = REGISTRY.get(kernel)
    return len(spec.device(spec.problem(**kw)).shapes)


COUNTERS = (("instructions", "instructions"), ("dram_bytes", "dram"), ("l2_bytes", "l2"),
            ("seconds", "time"))


def load(folder: str | os.PathLike) -> dict:
    """``folder/counters.json``, every record checked (``check_record``) before any engine
    work: a ValueError names the file, the record and the field."""
    from .measurements import load_suite_json
    launches, seen = {}, {}

    def check(path, i, r):
        rec = check_record(path, i, r, launches)
        key = (rec["problem"], rec["launch"])
        if key in seen:
            raise ValueError(f"{path}: record {i} ({show(rec['problem'])}, launch {rec['launch']}) "
                             f"repeats record {seen[key]}: a launch is profiled once, and a "
                             f"repeat would count twice in every score")
        seen[key] = i
        return rec
    doc = load_suite_json(folder, "counters", "roofsim measure counters", check)
    check_metrics(Path(folder) / "counters.json", doc)
    if not any(r["ok"] for r in doc["records"]):
        raise ValueError(f"{Path(folder) / 'counters.json'}: no successful record (\"ok\": "
                         f"true) of {len(doc['records'])}; nothing to score")
    return doc


#: the ncu metrics the scored fields come from (``simulator.measure.counters``): seconds,
#: instructions, dram_bytes (read plus write) and l2_bytes
SCORED_METRICS = ("gpu__time_duration.sum", "smsp__inst_executed.sum", "dram__bytes_read.sum",
                  "dram__bytes_write.sum", "lts__t_bytes.sum")


def check_metrics(path: str | os.PathLike, doc: dict) -> None:
    """A counters file's ``metrics``: the list of ncu metrics profiled (distinct, non-empty
    strings), holding every one the scored fields come from (:data:`SCORED_METRICS`)."""
    m = doc.get("metrics")
    if not isinstance(m, list) or not m or not all(isinstance(x, str) and x.strip() for x in m) \
            or len(set(m)) != len(m):
        raise ValueError(f"{path}: field 'metrics' = {show(m) if 'metrics' in doc else 'missing'}: "
                         "the ncu metrics profiled, a list of distinct metric names")
    lack = [x for x in SCORED_METRICS if x not in m]
    if lack:
        raise ValueError(f"{path}: field 'metrics' lacks {', '.join(lack)}: the scored fields come "
                         f"from {', '.join(SCORED_METRICS)}")


def left_out(doc: dict) -> int:
    """How many of a loaded counters file's records the scores leave out (``ok`` false: a
    launch whose profile failed its check)."""
    return sum(not r["ok"] for r in doc["records"])


# a record's byte counts (0 to measurements.MAX_BYTES; ncu's may be fractional) and its
# other figures; null where ncu did not give one (the scores leave such a launch out of
# that counter)
BYTE_FIELDS = ("dram_bytes", "l2_bytes", "l1_bytes", "l2_sm_bytes", "l2_sm_read_bytes",
               "l2_sm_write_bytes", "l2_fabric_bytes", "xbar_to_l1_bytes", "l1_to_xbar_bytes")


def check_record(path: str | os.PathLike, i: int, r: dict, launches: dict) -> dict:
    """Record ``i`` of a counters file: its problem readable (``problem_of``), its launch
    one the problem makes, its time within measurements.MIN_SECONDS..MAX_SECONDS, its
    instructions a positive whole number, its bytes 0 to MAX_BYTES, ``ok`` true or false;
    returns it. ``launches`` caches each problem's number of launches."""
    from .measurements import MAX_BYTES, MISSING, RecordError, number, seconds
    item = r.get("problem")
    if not isinstance(item, str):
        raise RecordError(path, i, None, "problem", item if "problem" in r else MISSING,
                          "must be a string KERNEL=WORKLOAD[@LAYOUT][#VARIANT]")
    if item not in launches:
        try:
            launches[item] = launches_of(item)
        except ValueError as e:
            raise RecordError(path, i, item, "problem", item, str(e)) from None
    n = launches[item]
    j = r.get("launch", MISSING)
    if isinstance(j, bool) or not isinstance(j, int) or not 0 <= j < n:
        raise RecordError(path, i, item, "launch", j, f"must be an integer from 0 to {n - 1} "
                          f"(the problem makes {n} launch{'es' if n > 1 else ''})")
    if not isinstance(r.get("ok"), bool):
        raise RecordError(path, i, item, "ok", r.get("ok", MISSING), "must be true or false")
    k = r.get("ncu_kernel", "kernel")
    if not isinstance(k, str) or not k.strip():
        raise RecordError(path, i, item, "ncu_kernel", k, "must be the profiled kernel's name, a "
                          "non-empty string")
    seconds(path, i, item, r, "seconds", optional=True)
    number(path, i, item, r, "instructions", what="a whole number of warp instructions",
           integer="whole", optional=True)
    for f in BYTE_FIELDS:
        number(path, i, item, r, f, strict=False, maximum=MAX_BYTES, what="a number of bytes",
               optional=True)
    number(path, i, item, r, "achieved_occupancy", strict=False, maximum=1.0,
           what="a fraction of the SM's warps", optional=True)
    return r


def _simulate(task):
    """One problem's launches as the engine runs them (a map_tasks task): each alone from
    an empty L2, as ncu's cache control (``--cache-control all``, its default) flushes the
    L2 before every profiled launch -- the second launch of a problem finds none of what
    the first wrote there, and reads it from DRAM."""
    from simulator.simt import api, engine
    hw, item, mode = task
    kernel, kw = problem_of(item)
    api.announce_compiling()
    return [engine.simulate(hw, [p], mode=mode, l2="flushed").launches[0]
            for p in api.build(hw, kernel, **kw).programs]


def run(hw: SIMTGPU, folder: str | os.PathLike, mode: str = "sampled",
        every: int = 1) -> tuple[list[dict], bool]:
    """(a row per measured launch whose problem the engine finished, whether Ctrl-C
    stopped it): each counter measured and predicted; of the file's problems 0, ``every``,
    2 ``every``, ... only, where given (a sample). Counters of another GPU than
    ``hw``'s are refused (``measurements.check_device``)."""
    from simulator.parallel import map_tasks

    from .measurements import check_device
    doc = load(folder)
    check_device(hw, folder, "counters.json", doc["provenance"])
    measured = [r for r in doc["records"] if r["ok"]]      # ok false: left out (left_out)
    items = list(dict.fromkeys(r["problem"] for r in measured))[::every]
    measured = [r for r in measured if r["problem"] in items]
    out = map_tasks(_simulate, [(hw, it, mode) for it in items], workers=1, label="counters")
    res_of = dict(zip(items, out.results))
    rows = []
    for r in measured:
        res = res_of[r["problem"]]
        if res is None:
            continue
        lc = res[r["launch"]]
        pred = {"instructions": lc.instructions, "dram_bytes": lc.bytes_by_level.get("dram"),
                "l2_bytes": lc.bytes_by_level.get("l2"),
                "seconds": (lc.cycles or 0.0) / hw.clock_hz}
        rows.append({"problem": r["problem"], "launch": r["launch"],
                     # the engine's L2 bytes are the SMs' requests: held to the crossbar's
                     # count where the file has it, else to lts__t_bytes (l2_measured)
                     **{f"measured_{k}": l2_measured(r) if k == "l2_bytes" else r.get(k)
                        for k, _ in COUNTERS},
                     "measured_l2_all_bytes": r.get("l2_bytes"),
                     **{f"engine_{k}": pred[k] for k, _ in COUNTERS}})
    return rows, out.interrupted


def l2_measured(r: dict) -> float | None:
    """A record's L2 bytes as the engine counts them: what the SMs' L1s and the L2
    exchanged over the crossbar (``xbar_to_l1_bytes`` + ``l1_to_xbar_bytes``: every
    sector an SM asked for, and every one it wrote), where the file has them; else
    ``lts__t_bytes`` (an older file). The L2's own lookups count otherwise: the request
    coalescer in front of it merges SMs' requests for one sector that arrive together
    (``lts__t_sectors_srcunit_tex`` is 10-40% under the crossbar's reads in the tiled
    GEMMs, equal in streaming kernels), and ``lts__t_bytes`` adds a second lookup for
    each that missed the near L2 partition and crossed the fabric to the far one."""
    x, w = r.get("xbar_to_l1_bytes"), r.get("l1_to_xbar_bytes")
    if x is not None and w is not None:
        return x + w
    return r.get("l2_bytes")


def rows(hw: SIMTGPU, folder: str | os.PathLike, mode: str = "sampled") -> list:
    """A row per measured launch: each counter measured and predicted."""
    out, stopped = run(hw, folder, mode)
    if stopped:
        raise KeyboardInterrupt
    return out


def scores(rs: Sequence[dict]) -> dict:
    """MAPE and median error of each counter over the launches that have it."""
    out = {}
    for k, name in COUNTERS:
        errs = [r[f"engine_{k}"] / r[f"measured_{k}"] - 1 for r in rs
                if r.get(f"measured_{k}") and r.get(f"engine_{k}") is not None]
        out[name] = {"n": len(errs), "mape": statistics.mean(abs(e) for e in errs) if errs else None,
                     "median_error": statistics.median(errs) if errs else None,
                     "within_goal": None}
    for name, goal in (("instructions", 0.02), ("dram", 0.10), ("l2", 0.15)):
        if out[name]["mape"] is not None:
            out[name]["goal"] = goal
            out[name]["within_goal"] = out[name]["mape"] <= goal
    return out

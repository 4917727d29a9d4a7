"""The engine's counters against Nsight Compute's (the ``counters`` suite): per launch,
warp instructions executed, DRAM bytes (read and written) and L2 bytes, each error
beside the error on time -- the way Accel-Sim's correlator scores a simulator. The
engine runs sampled with a cold L2 (ncu flushes the caches before each profiled
launch); a sampled run's counts are its extrapolation to the whole launch.
"""
from __future__ import annotations

import statistics

PROBLEMS = tuple(
    [f"gemm-naive=gemm:{s}x{s}x{s}#{tx}" for s in (256, 512, 1024) for tx in ("cols", "rows")]
    + [f"gemm-tiled=gemm:{s}x{s}x{s}#{t}" for s in (256, 512, 1024) for t in (8, 16, 32)]
    + ["relu=relu:16777216", "relu=relu:1048576"]
    + [f"{k}={layer}@{lay}" for layer in ("layer1.0.conv2/1", "layer3.0.conv2/8", "layer2.0.conv1/8")
       for k in ("conv-direct", "conv-im2col") for lay in ("nchw", "nhwc")]
    + ["batchnorm=layer1.0.bn3/8@nchw", "batchnorm=layer1.0.bn3/8@nhwc", "pool2d=maxpool/8@nhwc",
       "layout-transform=layer2.0.conv1/8@nhwc"])


def problem_of(item: str, hw=None):
    """(kernel name, its problem arguments) of a ``KERNEL=WORKLOAD[@LAYOUT][#VARIANT]``
    item (VARIANT: gemm-naive's thread_x or gemm-tiled's tile)."""
    import workloads
    from simulator.simt.kernels import REGISTRY
    kernel, rest = item.split("=", 1)
    rest, _, variant = rest.partition("#")
    spec_s, _, layout = rest.partition("@")
    layout = layout or "nchw"
    spec = REGISTRY.get(kernel)
    if "/" in spec_s:
        name, batch = spec_s.split("/")
        op = next(o for o in workloads.resolve("resnet50", batch=int(batch), layout=layout).ops
                  if o.name == name)
    else:
        op = workloads.resolve(spec_s).ops[0]
    takes = {a.name for a in spec.args}
    if "conv" in takes:
        return kernel, {"conv": op}
    if "op" in takes:
        return kernel, {"op": op}
    if op.kind == "gemm":
        kw = {"m": op.M, "n": op.N, "k": op.K}
        if variant:
            kw["thread_x" if kernel == "gemm-naive" else "tile"] = (variant if kernel == "gemm-naive"
                                                                     else int(variant))
        return kernel, kw
    # relu: the grid that fills an H100 once (132 SMs x 8 blocks of 256)
    return kernel, {"n": op.n, "grid": (1056,), "block": (256,)}


def launches_of(item) -> int:
    from simulator.simt.kernels import REGISTRY
    kernel, kw = problem_of(item)
    spec = REGISTRY.get(kernel)
    return len(spec.device(spec.problem(**kw)).shapes)


COUNTERS = (("instructions", "instructions"), ("dram_bytes", "dram"), ("l2_bytes", "l2"),
            ("seconds", "time"))


def load(folder) -> dict:
    from .measurements import load_suite_json
    return load_suite_json(folder, "counters", "roofsim measure counters")


def rows(hw, folder, mode: str = "sampled") -> list:
    """A row per measured launch: each counter measured and predicted."""
    from simulator.simt import api
    doc = load(folder)
    cache, out = {}, []
    for r in doc["records"]:
        item = r["problem"]
        if item not in cache:
            kernel, kw = problem_of(item)
            cache[item] = api.simulate(hw, api.build(hw, kernel, **kw), mode)
        res = cache[item]
        lc = res.launches[r["launch"]]
        pred = {"instructions": lc.instructions, "dram_bytes": lc.bytes_by_level.get("dram"),
                "l2_bytes": lc.bytes_by_level.get("l2"),
                "seconds": (lc.cycles or 0.0) / hw.clock_hz}
        out.append({"problem": item, "launch": r["launch"],
                    **{f"measured_{k}": r.get(k) for k, _ in COUNTERS},
                    **{f"engine_{k}": pred[k] for k, _ in COUNTERS}})
    return out


def scores(rs) -> dict:
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

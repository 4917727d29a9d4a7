"""The ``counters`` suite: roofsim's kernels under Nsight Compute, counters and not only
times -- warp instructions executed, DRAM, L2 and L1 bytes, achieved occupancy -- for
``roofsim validate --suites counters`` to hold the engine's own counts to (the way
Accel-Sim's correlator does).

``ncu --clock-control none --csv --page raw`` profiles one child process that launches
every problem of ``PROBLEMS`` once (``python3 -m simulator.measure.counters --child``);
ncu flushes the caches before each profiled launch (its default), so each starts cold,
as the engine's default run does. A problem is ``KERNEL=WORKLOAD[@LAYOUT]``: a workload
spec (``gemm:MxNxK``, ``relu:N``) or a ResNet-50 layer with its batch
(``layer3.0.conv2/8``).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import time

METRICS = ("gpu__time_duration.sum", "smsp__inst_executed.sum", "dram__bytes_read.sum",
           "dram__bytes_write.sum", "lts__t_bytes.sum", "l1tex__t_bytes.sum",
           "sm__warps_active.avg.pct_of_peak_sustained_active")

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


def _child(items):
    """Launch each problem once (the process ncu profiles)."""
    import numpy as np
    from numba import cuda

    from simulator.simt.kernels import REGISTRY

    from .suites import _device_arrays
    for item in items:
        kernel, kw = problem_of(item)
        spec = REGISTRY.get(kernel)
        dev = spec.device(spec.problem(**kw))
        arrays = _device_arrays(cuda, dev, dev.inputs(np.random.default_rng(0)))
        dev.launch(arrays)
        cuda.synchronize()


def launches_of(item) -> int:
    from simulator.simt.kernels import REGISTRY
    kernel, kw = problem_of(item)
    spec = REGISTRY.get(kernel)
    return len(spec.device(spec.problem(**kw)).shapes)


def run_counters(command=None, items=PROBLEMS) -> dict:
    """Profile every problem under ncu; a record per launch."""
    from simulator.analysis.check import read_ncu

    from . import harness
    if shutil.which("ncu") is None:
        raise harness.NoGPU("no ncu: the counters suite needs Nsight Compute's ncu on PATH")
    harness.require_gpu()
    prov = harness.provenance(command)
    t0 = time.time()
    out = subprocess.run(["ncu", "--clock-control", "none", "--csv", "--page", "raw",
                          "--print-units", "base", "--metrics",
                          ",".join(METRICS), sys.executable, "-W", "ignore", "-m",
                          "simulator.measure.counters", "--child", *items],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"ncu failed ({out.returncode}): {out.stderr.strip()[-300:]}")
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "ncu.csv"
        p.write_text("\n".join(line for line in out.stdout.splitlines() if line.startswith('"')))
        kernels = read_ncu(p, metrics=METRICS)
    want = [(item, j) for item in items for j in range(launches_of(item))]
    if len(kernels) != len(want):
        raise RuntimeError(f"ncu profiled {len(kernels)} launches; the problems make {len(want)}")
    prov["ncu"] = subprocess.run(["ncu", "--version"], capture_output=True,
                                 text=True).stdout.strip().splitlines()[-1]
    recs = []
    for (item, j), k in zip(want, kernels):
        c = k.counters
        recs.append({"problem": item, "launch": j, "ncu_kernel": k.name[:120], "seconds": k.seconds,
                     "instructions": c.get("smsp__inst_executed.sum"),
                     "dram_bytes": (c.get("dram__bytes_read.sum", 0.0)
                                    + c.get("dram__bytes_write.sum", 0.0)),
                     "l2_bytes": c.get("lts__t_bytes.sum"), "l1_bytes": c.get("l1tex__t_bytes.sum"),
                     "achieved_occupancy": (c.get("sm__warps_active.avg.pct_of_peak_sustained_active")
                                            or 0.0) / 100, "ok": True})
    return {"suite": "counters", "schema_version": 1, "provenance": prov,
            "wall_seconds": time.time() - t0, "metrics": list(METRICS), "records": recs}


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "--child":
    _child(sys.argv[2:])

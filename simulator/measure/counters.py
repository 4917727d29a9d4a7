"""The ``counters`` suite: roofsim's kernels under Nsight Compute, counters and not only
times -- warp instructions executed, DRAM, L2 and L1 bytes, achieved occupancy -- for
``roofsim validate --suites counters`` to hold the engine's own counts to (the way
Accel-Sim's correlator does).

L2 traffic is counted three ways: ``xbar_to_l1_bytes`` and ``l1_to_xbar_bytes`` (the
crossbar between the SMs' L1s and the L2: every sector an SM asked for and wrote, the
quantity the engine counts); ``l2_sm_bytes`` (the L2's lookups from the SMs,
``lts__t_sectors_srcunit_tex``, reads and writes also apart: fewer where its request
coalescer merged SMs' requests for one sector); ``l2_bytes`` (``lts__t_bytes``: every
tag lookup, those again in the far partition over the fabric, ``l2_fabric_bytes``,
included).

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

from simulator.analysis.counters import PROBLEMS, launches_of, problem_of

METRICS = ("gpu__time_duration.sum", "smsp__inst_executed.sum", "dram__bytes_read.sum",
           "dram__bytes_write.sum", "lts__t_bytes.sum", "l1tex__t_bytes.sum",
           "sm__warps_active.avg.pct_of_peak_sustained_active",
           # the L2's tag lookups by where they come from: the SMs' L1s (reads and writes:
           # what the engine counts as L2 traffic) and the fabric between the two L2
           # partitions (a lookup that missed the near partition, looked up again in the
           # far one) -- lts__t_bytes counts both, and more
           "lts__t_sectors_srcunit_tex.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
           "lts__t_sectors_srcunit_tex_op_write.sum", "lts__t_sectors_srcunit_ltcfabric.sum",
           # the same traffic seen from the SMs' side of the crossbar
           "l1tex__m_xbar2l1tex_read_bytes.sum", "l1tex__m_l1tex2xbar_write_bytes.sum")
SECTOR_BYTES = 32           # an L2 sector

def _child(items):
    """Launch each problem once (the process ncu profiles)."""
    import numpy as np
    from numba import cuda

    from simulator.simt.kernels import REGISTRY

    from .suites import device_arrays
    for item in items:
        kernel, kw = problem_of(item)
        spec = REGISTRY.get(kernel)
        dev = spec.device(spec.problem(**kw))
        arrays = device_arrays(cuda, dev, dev.inputs(np.random.default_rng(0)))
        dev.launch(arrays)
        cuda.synchronize()


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
                     **{f: (c[m] * SECTOR_BYTES if m in c else None) for f, m in (
                         ("l2_sm_bytes", "lts__t_sectors_srcunit_tex.sum"),
                         ("l2_sm_read_bytes", "lts__t_sectors_srcunit_tex_op_read.sum"),
                         ("l2_sm_write_bytes", "lts__t_sectors_srcunit_tex_op_write.sum"),
                         ("l2_fabric_bytes", "lts__t_sectors_srcunit_ltcfabric.sum"))},
                     "xbar_to_l1_bytes": c.get("l1tex__m_xbar2l1tex_read_bytes.sum"),
                     "l1_to_xbar_bytes": c.get("l1tex__m_l1tex2xbar_write_bytes.sum"),
                     "achieved_occupancy": (c.get("sm__warps_active.avg.pct_of_peak_sustained_active")
                                            or 0.0) / 100, "ok": True})
    return {"suite": "counters", "schema_version": 1, "provenance": prov,
            "wall_seconds": time.time() - t0, "metrics": list(METRICS), "records": recs}


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "--child":
    _child(sys.argv[2:])

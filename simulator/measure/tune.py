"""The ``tune`` suite: every configuration ``roofsim tune`` ranks, measured, for a problem
set of GEMMs and ResNet-50 convolutions -- what the ranking's regret is scored against.

Each candidate (``simulator.analysis.tune.candidates``) is launched on random inputs,
checked against numpy at 64 random outputs, and timed as the other suites time a
kernel (``harness.time_launch``: back to back behind a spin kernel, 3 samples).
"""
from __future__ import annotations

import time

from simulator.analysis.tune import PROBLEMS, candidates, op_of


def _reference_at(dev, inputs, got, idx, gemm):
    import numpy as np
    if gemm:
        A, B = inputs["A"].astype(np.float64), inputs["B"].astype(np.float64)
        n = B.shape[1]
        return np.array([A[i // n] @ B[:, i % n] for i in idx])
    return dev.reference(inputs, idx)["y"]


def run_tune(c, seed=0, problems=PROBLEMS, log=print) -> list:
    import numpy as np

    from simulator.simt.kernels import REGISTRY

    from . import harness
    from .suites import device_arrays
    rng = np.random.default_rng(seed)
    recs = []
    for problem in problems:
        op = op_of(problem)
        t0 = time.time()
        for cand in candidates(op):
            spec = REGISTRY.get(cand.kernel)
            try:
                dev = spec.device(spec.problem(**cand.args))
            except ValueError as e:
                recs.append({"problem": problem, "candidate": cand.label(), "ok": False,
                             "skipped": str(e)[:120]})
                continue
            inputs = dev.inputs(np.random.default_rng(int(rng.integers(1 << 31))))
            arrays = device_arrays(c, dev, inputs)
            dev.launch(arrays)
            out_name = "C" if op.kind == "gemm" else "y"
            got = arrays[out_name].copy_to_host().reshape(-1)
            idx = rng.integers(0, got.size, 64)
            err = harness.rel_error(got[idx], _reference_at(dev, inputs, got, idx, op.kind == "gemm"))
            t = harness.time_launch(lambda st, d=dev, a=arrays: d.launch(a, st), reps=3)
            recs.append({"problem": problem, "candidate": cand.label(), "kernel": cand.kernel,
                         **{k: t[k] for k in ("median_s", "min_s", "max_s", "reps", "inner")},
                         "host_bound": t.get("host_bound", False), "rel_error": err,
                         "ok": bool(err < 1e-4 and np.isfinite(got).all())})
        log(f"tune: {problem}: {len(candidates(op))} candidates in {time.time() - t0:.1f} s")
    return recs


def run_suite(command=None) -> dict:
    """The whole suite on this machine's GPU, as the suite file holds it (raises NoGPU,
    one line, without one)."""
    from . import harness
    c = harness.require_gpu()
    prov = harness.provenance(command)
    t0 = time.time()
    recs = run_tune(c)
    return {"suite": "tune", "schema_version": 1, "provenance": prov,
            "wall_seconds": time.time() - t0, "records": recs}

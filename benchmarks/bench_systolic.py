"""Speed of the systolic models. Prints figures; not a pass/fail test.

Targets: the whole of ResNet-50 on a 256x256 array in the closed-form model
in under 1 s; a real ResNet-50 layer on a 128x128 array in the cycle-level array in
seconds. The SCALE-Sim comparison lives in compare_scalesim.py.

    python3 benchmarks/bench_systolic.py [--json FILE] [--note TEXT]

``--json`` writes the same figures with the date and the machine (benchmarks/_record.py).
"""
from __future__ import annotations

import argparse
import statistics
import time

import _record


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _record.add_options(ap)
    a = ap.parse_args(argv)
    import hwmodels
    import workloads
    from simulator.systolic import run_array, simulate_network

    net = workloads.resnet50()
    hw = hwmodels.get("tpu-v1")
    simulate_network(hw, net, "ws", stalls="closed-form")  # JIT / cache warm-up
    array_layers = sum(o.kind in ("conv2d", "gemm") for o in net.ops)
    print(f"ResNet-50 batch 1 ({array_layers} layers on the array), 256x256 array")
    closed, cycle = [], []
    for df in ("os", "ws", "is"):
        for stalls in ("closed-form", "pipeline"):
            ts = []
            for _ in range(5):
                t0 = time.perf_counter()
                res = simulate_network(hw, net, df, stalls=stalls)   # a Result
                ts.append(time.perf_counter() - t0)
            print(f"  {df} closed form, stalls from {stalls:11s}: "
                  f"median {statistics.median(ts) * 1e3:7.1f} ms "
                  f"(min {min(ts) * 1e3:.1f}, max {max(ts) * 1e3:.1f}); {res.cycles:,} cycles, "
                  f"utilisation {res.utilization:.1%}")
            closed.append({"dataflow": df, "stalls": stalls, "median_ms": statistics.median(ts) * 1e3,
                           "min_ms": min(ts) * 1e3, "max_ms": max(ts) * 1e3,
                           "cycles": res.cycles, "utilization": res.utilization})
    print("cycle-level array, 128x128, one layer each (data generation and check included)")
    run_array(workloads.Gemm(M=4, N=4, K=4), "ws", 2, 2)  # warm-up
    for name in ("conv1", "layer1.0.conv2", "layer3.0.conv2", "fc"):
        op = next(o for o in net.ops if o.name == name)
        for df in ("os", "ws", "is"):
            t0 = time.perf_counter()
            r = run_array(op, df, 128, 128)
            dt = time.perf_counter() - t0
            print(f"  {name:15s} {df}: {r.cycles:8d} cycles, {r.macs / 1e6:7.1f} M MACs, "
                  f"correct={r.correct}, {dt:.2f} s")
            cycle.append({"layer": name, "dataflow": df, "cycles": int(r.cycles), "macs": int(r.macs),
                          "correct": bool(r.correct), "seconds": dt})
    if a.json:
        _record.write(a.json, "bench_systolic", {
            "workload": "resnet50", "batch": 1, "array_layers": array_layers, "array": "256x256",
            "closed_form": closed, "cycle_level": cycle, "cycle_level_array": "128x128"}, a.note)


if __name__ == "__main__":
    main()

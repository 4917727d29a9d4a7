"""Speed of the bounds: roofline + data movement per preset, and the CLI end to end.

Prints figures; not a pass/fail test. Target: the command
`roofsim roofline --hw h100-sxm --workload resnet50 --batch 8 --csv out.csv --plot out.png`
in under 2 s of wall time.

    python3 benchmarks/bench_roofline.py [--json FILE] [--note TEXT]

``--json`` writes the same figures with the date and the machine (benchmarks/_record.py).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import _record


def timeit(fn, repeat=7):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), min(ts), max(ts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _record.add_options(ap)
    a = ap.parse_args(argv)
    import hwmodels
    import workloads
    from simulator.analysis import data_movement, roofline

    net = workloads.resnet50(batch=8)
    print(f"ResNet-50 batch 8: {len(net.ops)} ops")
    print(f"{'hardware':20s} {'roofline ms':>12s} {'datamove ms':>12s}")
    presets = []
    for name in hwmodels.names():
        hw = hwmodels.get(name)
        prec = "fp32" if "fp32" in hw.peak_rates().supported() else "int8"
        n = net.with_dtype(prec)
        r, _, _ = timeit(lambda: roofline(hw, n))
        d, _, _ = timeit(lambda: data_movement(hw, n))
        print(f"{name:20s} {r * 1e3:12.2f} {d * 1e3:12.2f}")
        presets.append({"hw": name, "precision": prec, "roofline_ms": r * 1e3,
                        "datamove_ms": d * 1e3})

    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "simulator", "roofline", "--hw", "h100-sxm", "--workload",
               "resnet50", "--batch", "8", "--csv", os.path.join(tmp, "out.csv"),
               "--plot", os.path.join(tmp, "out.png")]
        med, lo, hi = timeit(lambda: subprocess.run(cmd, check=True, capture_output=True), repeat=5)
        print(f"CLI roofline resnet50 batch 8 with --csv and --plot (PNG): median {med:.2f} s "
              f"(min {lo:.2f}, max {hi:.2f}) wall, process start and imports included")
        cmd2 = cmd[:-2]
        med2, lo2, hi2 = timeit(lambda: subprocess.run(cmd2, check=True, capture_output=True), repeat=5)
        print(f"CLI roofline without --plot: median {med2:.2f} s (min {lo2:.2f}, max {hi2:.2f})")
    if a.json:
        _record.write(a.json, "bench_roofline", {
            "workload": "resnet50", "batch": 8, "ops": len(net.ops), "presets": presets,
            "cli": [{"command": "roofline resnet50 batch 8 with --csv and --plot (PNG)",
                     "median_s": med, "min_s": lo, "max_s": hi},
                    {"command": "roofline resnet50 batch 8 with --csv",
                     "median_s": med2, "min_s": lo2, "max_s": hi2}]}, a.note)


if __name__ == "__main__":
    main()

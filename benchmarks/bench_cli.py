"""How long the command line takes to answer ``--help``, each command's, from a fresh
process (what a user waits for at a shell). Prints figures; not a pass/fail test.

Target: under 0.5 s for ``roofsim --help`` and every command's ``--help`` (Python's own
start is part of it: printed first, for scale).

    python3 benchmarks/bench_cli.py [REPEATS]
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time

HELPS = [["--help"], ["hw", "--help"], ["workload", "--help"], ["roofline", "--help"],
         ["roofline-compare", "--help"], ["datamove", "--help"], ["simulate", "--help"],
         ["simulate", "simt", "--help"], ["simulate", "systolic", "--help"],
         ["sweep", "grid", "--help"], ["sweep", "layout", "--help"], ["occupancy", "--help"],
         ["measure", "--help"], ["check", "--help"], ["tune", "--help"], ["calibrate", "--help"],
         ["validate", "--help"], ["plan", "--help"]]


def _time(argv, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), max(times)


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    base, _ = _time([sys.executable, "-c", "pass"], repeats)
    print(f"python -c pass: median {base:.3f} s ({repeats} runs each, a fresh process each)")
    worst = 0.0
    for argv in HELPS:
        med, mx = _time([sys.executable, "-m", "simulator", *argv], repeats)
        worst = max(worst, med)
        print(f"  roofsim {' '.join(argv):32s} median {med:.3f} s  max {mx:.3f} s")
    print(f"slowest median {worst:.3f} s (target 0.5 s: {'met' if worst < 0.5 else 'missed'})")


if __name__ == "__main__":
    main()

"""Whole-network figures from committed data (docs/networks.md's tables):

    python3 scripts/network_report.py [GPU ...]      # default: h100-sxm h200

Per GPU: each measured plan at each batch timed three ways against each predictor's
total; the regret of the plans picked from predictions and the dynamic program's
predicted total against its measurement; per-layer errors by layer kind; torchvision
beside roofsim's best plan and the roofline bound. Reads data/measurements/GPU and
data/plans/GPU only (simulator.analysis.networks).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import simulator as rs  # noqa: E402
from simulator.table import format_table  # noqa: E402


def ms(v):
    return "-" if v is None else f"{v * 1e3:.3f}"


def pct(v):
    return "-" if v is None else f"{v * 100:+.1f}%"


def report(gpu):
    s = rs.network_summary(gpu)
    print(f"== {gpu}: ResNet-50 forward passes as roofsim's kernels (ms)")
    print(format_table(
        ["batch", "plan", "layers", "end to end", "queued", "per-layer sum", "subtraction",
         "engine", "err", "analytic", "err", "roofline"],
        [[r["batch"], r["plan"], r["layers"], ms(r["end_to_end_s"]), ms(r["queued_s"]),
          ms(r["per_layer_sum_s"]), ms(r["subtraction_sum_s"]), ms(r.get("engine_s")),
          pct(r.get("engine_error")), ms(r.get("analytic_s")), pct(r.get("analytic_error")),
          ms(r.get("roofline_s"))] for r in s["plans"]],
        right=[True, False] + [True] * 10))
    print()
    print(format_table(["batch", "picked from", "measured ms", "best measured ms", "regret",
                        "DP predicted ms", "DP error"],
                       [[r["batch"], r["picked_from"], ms(r["measured_s"]), ms(r["best_s"]),
                         pct(r["regret"]), ms(r.get("dp_predicted_s")), pct(r.get("dp_error"))]
                        for r in s["regret"]], right=[True, False] + [True] * 5))
    print()
    kinds = sorted({k for p in s["layer_errors"].values() for k in p})
    print("per-layer MAPE against the per-layer measurement, uniform plans, all batches")
    print(format_table(["predictor"] + [f"{k} (n)" for k in kinds],
                       [[p] + [f"{e[k]['mape'] * 100:.1f}% ({e[k]['n']})" if k in e else "-"
                               for k in kinds] for p, e in s["layer_errors"].items()],
                       right=[False] + [True] * len(kinds)))
    print()
    rows = []
    for b in sorted({r["batch"] for r in s["plans"]}):
        plans = [r for r in s["plans"] if r["batch"] == b]
        best = min(plans, key=lambda r: r["queued_s"])
        tv = {t["memory_format"]: t["median_s"] for t in s["torchvision"] if t["batch"] == b}
        rows.append([b, ms(tv.get("nchw")), ms(tv.get("channels_last")), best["plan"],
                     ms(best["queued_s"]), ms(best["end_to_end_s"]),
                     f"{best['queued_s'] / tv['nchw']:.2f}x" if tv.get("nchw") else "-",
                     f"{best['end_to_end_s'] / tv['nchw']:.2f}x" if tv.get("nchw") else "-",
                     ms(best.get("roofline_s"))])
    print("abstraction cost: torchvision's ResNet-50 (fp32, TF32 off) beside roofsim's best plan")
    print(format_table(["batch", "torch NCHW", "torch channels-last", "roofsim best plan",
                        "queued", "end to end", "queued / torch", "e2e / torch", "roofline bound"],
                       rows, right=[True, True, True, False, True, True, True, True, True]))
    print()
    print("timing methods: what the per-layer events add (us a layer), the host's launch gaps "
          "(end to end less queued, ms), negative layer subtractions")
    print(format_table(["batch", "plan", "per-layer - queued", "e2e - queued", "host issue",
                        "negative subtractions"],
                       [[r["batch"], r["plan"],
                         f"{(r['per_layer_sum_s'] - r['queued_s']) / r['layers'] * 1e6:.2f}",
                         ms(r["end_to_end_s"] - r["queued_s"]), ms(r["host_issue_s"]),
                         f"{r['negative_subtractions']} of {r['layers']}"] for r in s["plans"]],
                       right=[True, False, True, True, True, True]))
    print()


if __name__ == "__main__":
    for g in sys.argv[1:] or ["h100-sxm", "h200"]:
        report(g)

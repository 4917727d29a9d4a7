"""Eager PyTorch against TorchScript and torch.compile, per model and batch, and the
per-layer oracle between them, from committed data (docs/networks.md, "Eager against
compiled" tables):

    python3 scripts/compiled_report.py [GPU]      # default: h100-sxm

Reads data/measurements/GPU/compiled/ (roofsim measure compiled) through
simulator.compiled_summary; beside ResNet-50, roofsim's own kernels' best plan
(data/measurements/GPU/network_b*.json) and the roofline bound.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import simulator as rs  # noqa: E402
from simulator.table import format_table  # noqa: E402

SHORT = {"eager": "eager", "torchscript": "TorchScript", "inductor": "compile",
         "inductor-max-autotune": "compile max-autotune"}


def ms(v):
    return "-" if v is None else f"{v * 1e3:.3f}"


def pct(v):
    return "-" if v is None else f"{v * 100:+.0f}%"


def short_mix(text):
    for c in sorted(SHORT, key=len, reverse=True):
        text = text.replace(f"{c} x", f"{SHORT[c].replace('compile max-autotune', 'max-autotune')} x")
    return text


def label(forward):
    kind, _, c = forward.partition("-")
    if kind == "dp":
        return f"oracle ({c.replace('_', '-')})"
    return f"{SHORT.get(c, c)}{' (units)' if kind == 'chain' else ''}"


def report(gpu):
    s = rs.compiled_summary(gpu)
    configs = list(SHORT)
    print(f"== {gpu}: forwards, ms as issued (end to end) / queued (the GPU's own time)")
    rows = []
    for (model, batch) in sorted({(r["model"], r["batch"]) for r in s["forwards"]}):
        fw = {r["forward"]: r for r in s["forwards"] if r["model"] == model and r["batch"] == batch}
        for kind in ("whole", "chain"):
            rows.append([model, batch, "whole model" if kind == "whole" else "per unit"]
                        + [f"{ms(fw[f'{kind}-{c}']['end_to_end_s'])} / {ms(fw[f'{kind}-{c}']['queued_s'])}"
                           if f"{kind}-{c}" in fw else "-" for c in configs])
    print(format_table(["model", "batch", "built"] + [SHORT[c] for c in configs], rows,
                       right=[False, True, False] + [True] * len(configs)))
    print()
    print("the oracle per unit (eager, TorchScript, compile, max-autotune; measured switch costs)")
    print(format_table(
        ["model", "batch", "from", "plan", "switches", "predicted", "queued", "error",
         "regret (units)", "best queued", "regret", "as issued", "best as issued", "regret"],
        [[r["model"], r["batch"], r["method"].replace("_", "-"), short_mix(r.get("plan", "-")),
          r.get("switches", "-"), ms(r.get("predicted_s")), ms(r.get("queued_s")),
          pct(r.get("predicted_error")), pct(r.get("regret_units")),
          f"{ms(r['best_queued_s'])} {label(r['best_queued'])}", pct(r.get("regret_queued")),
          ms(r.get("end_to_end_s")), f"{ms(r['best_end_to_end_s'])} {label(r['best_end_to_end'])}",
          pct(r.get("regret_end_to_end"))] if not r["incomplete"] else
         [r["model"], r["batch"], r["method"].replace("_", "-"), "not measured: " + r["incomplete"],
          "-", f"best-of {ms(r['best_of_s'])}", "-", "-", "-",
          f"{ms(r['best_queued_s'])} {label(r['best_queued'])}", "-", "-",
          f"{ms(r['best_end_to_end_s'])} {label(r['best_end_to_end'])}", "-"]
         for r in s["oracle"]],
        right=[False, True, False, False] + [True] * 10))
    print()
    print("seconds to build (compile) each configuration: the whole model / its units")
    rows = []
    for (model, batch) in sorted({(r["model"], r["batch"]) for r in s["compile"]}):
        cs = {r["config"]: r for r in s["compile"] if r["model"] == model and r["batch"] == batch}
        rows.append([model, batch] + [f"{cs[c]['whole_s']:.1f} / {cs[c]['units_s']:.1f}"
                                      if c in cs else "-" for c in configs])
    print(format_table(["model", "batch"] + [SHORT[c] for c in configs], rows,
                       right=[False, True] + [True] * len(configs)))
    print()
    rows = []
    for rb in s["roofsim"]:
        fw = [r for r in s["forwards"] if r["model"] == "resnet50" and r["batch"] == rb["batch"]]
        best = min(fw, key=lambda r: r["queued_s"])
        rows.append([rb["batch"], f"{ms(best['queued_s'])} {label(best['forward'])}",
                     ms(rb.get("own_queued_s")), ms(rb["roofline_fp32_s"]),
                     ms(rb["roofline_tf32_s"])])
    print("ResNet-50: PyTorch's best forward (queued) beside roofsim's own kernels' best plan "
          "(fp32, queued) and the roofline bound")
    print(format_table(["batch", "PyTorch best", "roofsim's kernels", "roofline fp32",
                        "roofline TF32"], rows, right=[True, False, True, True, True]))


if __name__ == "__main__":
    for g in sys.argv[1:] or ["h100-sxm"]:
        report(g)

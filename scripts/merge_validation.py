"""Merge per-suite `roofsim validate --json` outputs into data/validation/:

    python3 scripts/merge_validation.py DIR grid=6e7 gemm=9e8 conv=2e8 \
        h200.grid=6e7 h200.gemm=4e8 h200.conv=6e7

DIR holds grid.json, gemm.json, conv.json (the H100) and h200_grid.json, h200_gemm.json,
h200_conv.json (the H200, predicted from the H100 calibration changed only by its
datasheet), each from `roofsim validate --suites SUITE --engine-budget BUDGET --json`.
Writes h100-sxm_scores.json and h200_scores.json (per suite: the scores, the engine
budget and the command) and h100-sxm_predictions.csv, and prints the README's table rows."""
import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "validation"
COLUMNS = ["suite", "group", "kernel", "label", "measured_s", "measured_min_s", "measured_max_s",
           "engine_s", "analytic_s", "roofline_s", "warp_instructions",
           "engine_simulated_instructions", "l2_warm"]
H100 = "roofsim validate --hw h100-sxm --measurements data/measurements/h100-sxm"
H200 = "roofsim validate --hw h200 --measurements data/measurements/h200"


def main(src, budgets):
    src = Path(src)
    scores = {"hw": "h100-sxm", "measurements": "data/measurements/h100-sxm", "suites": {}}
    commands, rows = [], []
    h100 = {k: v for k, v in budgets.items() if "." not in k}
    for suite, budget in h100.items():
        d = json.loads((src / f"{suite}.json").read_text())
        scores["suites"][suite] = {**d["suites"][suite], "engine_budget": float(budget)}
        commands.append(f"{H100} --suites {suite} --engine-budget {budget}")
        rows += d["rows"]
    scores["command"] = "; ".join(commands)
    scores = {k: scores[k] for k in ("hw", "measurements", "command", "suites")}
    (OUT / "h100-sxm_scores.json").write_text(json.dumps(scores, indent=1) + "\n")
    with open(OUT / "h100-sxm_predictions.csv", "w", newline="") as f:
        w = csv.DictWriter(f, COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    # the H200: the engine per suite where h200_SUITE.json is there, else analytic only
    h200 = {"hw": "h200", "measurements": "data/measurements/h200", "suites": {}}
    commands = []
    for key, budget in budgets.items():
        if not key.startswith("h200."):
            continue
        suite = key[5:]
        f = src / f"h200_{suite}.json"
        h200["suites"][suite] = {**json.loads(f.read_text())["suites"][suite],
                                 "engine_budget": float(budget)}
        commands.append(f"{H200} --suites {suite} --engine-budget {budget}")
    if h200["suites"]:
        h200["command"] = "; ".join(commands)
        h200 = {k: h200[k] for k in ("hw", "measurements", "command", "suites")}
        (OUT / "h200_scores.json").write_text(json.dumps(h200, indent=1) + "\n")
    print_table()


def print_table():
    """The README's validation rows, from the scores just written."""
    for device, name in (("H100", "h100-sxm"), ("H200 (predicted from the H100)", "h200")):
        f = OUT / f"{name}_scores.json"
        if not f.exists():
            continue
        for suite, s in json.loads(f.read_text())["suites"].items():
            for p in ("engine", "analytic", "roofline"):
                x = s[p]
                if x["n"]:
                    print(f"| {device} | {suite} | {p} | {x['n']}/{s['records']} | "
                          f"{x['mape']:.1%} | {x['pearson']:.3f} | {x['spearman']:.3f} | "
                          f"{x['pairs_in_order']:.1%} |")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: merge_validation.py DIR SUITE=BUDGET [SUITE=BUDGET ...]")
    main(sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:]))

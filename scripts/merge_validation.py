"""Merge per-suite `roofsim validate --json` outputs into data/validation/:

    python3 scripts/merge_validation.py DIR grid=6e7 gemm=2e9 conv=6e7

DIR holds grid.json, gemm.json, conv.json (H100, engine budgets as given) and h200.json
(analytic and roofline only). Writes h100-sxm_scores.json (per suite: the scores, the
engine budget and the command), h100-sxm_predictions.csv and h200_scores.json."""
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


def main(src, budgets):
    src = Path(src)
    scores = {"hw": "h100-sxm", "measurements": "data/measurements/h100-sxm", "suites": {}}
    commands, rows = [], []
    for suite, budget in budgets.items():
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
    h200 = src / "h200.json"
    if h200.exists():
        d = json.loads(h200.read_text())
        out = {"hw": "h200", "measurements": "data/measurements/h200",
               "command": "roofsim validate --hw h200 --measurements data/measurements/h200 "
                          "--engine-budget 0", "suites": d["suites"]}
        (OUT / "h200_scores.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: merge_validation.py DIR SUITE=BUDGET [SUITE=BUDGET ...]")
    main(sys.argv[1], dict(a.split("=", 1) for a in sys.argv[2:]))

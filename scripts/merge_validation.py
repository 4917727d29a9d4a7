"""Merge `roofsim validate --json` outputs into data/validation/:

    python3 scripts/merge_validation.py DIR

DIR holds h100-sxm.json and h200.json, each from `roofsim validate --hw HW
--measurements data/measurements/HW --json` (every suite, the engine on every record; the
H200 predicted from the H100 calibration changed only by its datasheet). Writes
h100-sxm_scores.json and h200_scores.json (per suite: the scores; the command) and
h100-sxm_predictions.csv and h200_predictions.csv, and prints the validation table's rows
(docs/validation.md; with the kernels suite's, from data/validation/HW_kernels.json where
it is there)."""
import csv
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "validation"
COLUMNS = ["suite", "group", "kernel", "label", "measured_s", "measured_min_s", "measured_max_s",
           "engine_s", "analytic_s", "roofline_s", "warp_instructions",
           "engine_simulated_instructions", "engine_wall_s", "l2_warm"]


def main(src):
    src = Path(src)
    for hw in ("h100-sxm", "h200"):
        d = json.loads((src / f"{hw}.json").read_text())
        if d.get("partial"):
            sys.exit(f"{src / hw}.json is partial (an interrupted run): not merged")
        scores = {"hw": hw, "measurements": f"data/measurements/{hw}",
                  "command": f"roofsim validate --hw {hw} --measurements data/measurements/{hw}",
                  "wall_seconds": d.get("wall_seconds"), "suites": d["suites"]}
        (OUT / f"{hw}_scores.json").write_text(json.dumps(scores, indent=1) + "\n")
        with open(OUT / f"{hw}_predictions.csv", "w", newline="") as f:
            w = csv.DictWriter(f, COLUMNS, extrasaction="ignore")
            w.writeheader()
            w.writerows(d["rows"])
    print_table()


def print_table():
    """The validation table's rows (docs/validation.md), from the scores just written."""
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
        kernels_row(device, name)


def kernels_row(device, name):
    """The kernels suite's row (``roofsim validate --suites kernels --json
    data/validation/HW_kernels.json``: users' kernels, the engine from their own SASS)."""
    import math

    from scipy.stats import pearsonr, spearmanr
    f = OUT / f"{name}_kernels.json"
    if not f.exists():
        return
    d = json.loads(f.read_text())
    rows = d["rows"]
    m = [r["measured_seconds"] for r in rows]
    e = [r["engine_seconds"] for r in rows]
    mape = sum(abs(b / a - 1) for a, b in zip(m, e)) / len(rows)
    pairs = d["scores"]["pairs_in_order"]
    print(f"| {device} | kernels | engine (own SASS) | {len(rows)}/{len(rows)} | {mape:.1%} | "
          f"{pearsonr([math.log(x) for x in m], [math.log(x) for x in e])[0]:.3f} | "
          f"{spearmanr(m, e)[0]:.3f} | {pairs['fraction']:.1%} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: merge_validation.py DIR")
    main(sys.argv[1])

"""Whole networks, measured against predicted: what ``scripts/network_report.py`` prints and
``notebooks/networks.ipynb`` draws, from committed data only.

Inputs: ``data/measurements/GPU/network_b*.json`` (``roofsim measure network``: each
plan's forward pass timed three ways), ``data/plans/GPU/predictions-bB.json`` (``roofsim
plan --oracle --json``: every layer's predicted time in each configuration and every
transform) and ``data/measurements/GPU/torchvision.json`` (``roofsim measure
torchvision``).

A plan's measured time is its forward pass queued behind a spin kernel
(``end_to_end_queued``: the GPU running the kernels back to back, what the predictors
model); its predicted time is the sum of its layers' predictions, priced from the
same table the oracle searched (``plan.plan_seconds``).
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import TYPE_CHECKING

from . import plan as pl

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable, Sequence

    from workloads.ir import Network


def load_measurements(folder: str | os.PathLike) -> dict:
    """{batch: [records]} of every ``network_b*.json`` in ``folder``."""
    out = {}
    for f in sorted(Path(folder).glob("network_b*.json")):
        for r in json.loads(f.read_text())["records"]:
            out.setdefault(r["batch"], []).append(r)
    return out


def _key(text: str) -> tuple:
    return tuple(text.split(" "))


def load_predictions(folder: str | os.PathLike, batch: int) -> dict:
    """The oracle's prediction document at ``batch``: {"tables": {predictor: {time_key:
    seconds}}, "oracle": its picks, ...}."""
    doc = json.loads((Path(folder) / f"predictions-b{batch}.json").read_text())
    tables = {}
    for p in pl.PREDICTORS:
        rows = [r for r in doc["layers"] if r.get(f"{p}_seconds") is not None]
        if len(rows) == len(doc["layers"]):
            tables[p] = {_key(r["key"]): r[f"{p}_seconds"] for r in doc["layers"]}
    return {**doc, "tables": tables}


def _configs(net, rec):
    return pl.configs_from_names(rec["configs"])


def measured_plans(records: Iterable[dict]) -> dict:
    """{plan name: record} with the plans a run did not repeat (``same_as``) resolved to
    the record measured."""
    by = {r["plan"]: r for r in records}
    return {name: (by[r["same_as"]] if "same_as" in r else r) for name, r in by.items()}


def plan_label(name: str) -> str:
    if name.endswith(".toml") or name.endswith(".json"):
        stem = Path(name).stem                  # oracle-engine-b8
        return "picked from " + stem.split("-")[1]
    if name == "oracle":
        return "picked from measurements"
    return name


def summary(gpu: str, measurements: str | os.PathLike = "data/measurements",
            plans: str | os.PathLike = "data/plans", workload: str | Network = "resnet50") -> dict:
    """Per batch, per plan: the three timing methods, the predictions and their errors;
    per batch, the regret of each picked plan and the dynamic program's predicted total
    against its measurement. Returns {"plans": rows, "regret": rows, "layers": rows}."""
    meas = load_measurements(Path(measurements) / gpu)
    if not meas:
        raise ValueError(f"{Path(measurements) / gpu}: no network_b*.json there (roofsim measure "
                         "network writes them)")
    rows, regret, layer_rows = [], [], []
    for batch in sorted(meas):
        net = pl.network(workload, batch)
        pred = load_predictions(Path(plans) / gpu, batch)
        recs = measured_plans(meas[batch])
        best_name = min((n for n in recs), key=lambda n: recs[n]["end_to_end_queued"]["median_s"])
        best = recs[best_name]["end_to_end_queued"]["median_s"]
        for name, r in recs.items():
            cfg = _configs(net, r)
            q = r["end_to_end_queued"]["median_s"]
            row = {"batch": batch, "plan": plan_label(name), "source": name,
                   "layers": r["layers_run"], "end_to_end_s": r["end_to_end"]["median_s"],
                   "queued_s": q, "per_layer_sum_s": r["per_layer_sum_s"],
                   "subtraction_sum_s": r["subtraction_sum_s"],
                   "negative_subtractions": r["negative_subtractions"],
                   "host_issue_s": r.get("host_issue", {}).get("median_s"),
                   "regret": q / best - 1}
            for p, table in pred["tables"].items():
                t = pl.plan_seconds(net, cfg, table)
                row[f"{p}_s"] = t
                row[f"{p}_error"] = None if t is None else t / q - 1
            rows.append(row)
            if name in pl.UNIFORM:
                for lp, lr in zip(pl.expand(net, cfg), r["layers"]):
                    k = pl.time_key(lp)
                    layer_rows.append({"batch": batch, "plan": name, "layer": lr["layer"],
                                       "kind": k[0], "measured_s": lr["per_layer_s"],
                                       "subtraction_s": lr["subtraction_s"],
                                       **{f"{p}_s": t.get(k) for p, t in pred["tables"].items()}})
        for name, r in recs.items():
            if not (name == "oracle" or name.endswith((".toml", ".json"))):
                continue
            by = plan_label(name).split()[-1]
            q = r["end_to_end_queued"]["median_s"]
            row = {"batch": batch, "picked_from": by, "measured_s": q, "best_plan": plan_label(best_name),
                   "best_s": best, "regret": q / best - 1}
            if by in pred.get("oracle", {}):
                dp = pred["oracle"][by]["seconds"]
                row.update(dp_predicted_s=dp, dp_error=dp / q - 1)
            elif name == "oracle":
                row.update(dp_predicted_s=r.get("predicted_by_oracle_s"),
                           dp_error=r["predicted_by_oracle_s"] / q - 1
                           if r.get("predicted_by_oracle_s") else None)
            regret.append(row)
    return {"plans": rows, "regret": regret, "layers": layer_rows}


def layer_errors(layer_rows: Sequence[dict], predictor: str = "engine") -> dict:
    """MAPE of ``predictor``'s per-layer time against the per-layer measurement, by
    layer kind (conv, batchnorm, pool2d, gemm, transform) over the uniform plans."""
    out = {}
    for kind in sorted({r["kind"] for r in layer_rows}):
        errs = [abs(r[f"{predictor}_s"] / r["measured_s"] - 1) for r in layer_rows
                if r["kind"] == kind and r.get(f"{predictor}_s") and r["measured_s"] > 0]
        if errs:
            out[kind] = {"n": len(errs), "mape": statistics.mean(errs),
                         "median": statistics.median(errs)}
    return out


def framework(gpu: str, measurements: str | os.PathLike = "data/measurements") -> list:
    """torchvision's ResNet-50 records (empty where none were taken)."""
    f = Path(measurements) / gpu / "torchvision.json"
    return json.loads(f.read_text())["records"] if f.is_file() else []

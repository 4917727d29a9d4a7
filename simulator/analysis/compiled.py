"""Eager against compiled, from committed data only: what ``scripts/compiled_report.py``
prints, the README's table and ``notebooks/networks.ipynb`` draw.

Input: ``data/measurements/GPU/compiled/*.json`` (``roofsim measure compiled``; several
runs may each hold some models and batches, each with its provenance). Per model and
batch, the forwards measured: the whole model in each configuration (``whole-C``), the
chain of units each in one configuration (``chain-C``) and the plans the per-layer
oracle picked (``dp-per_layer``, ``dp-subtraction``), each timed as the host issues it
(``end_to_end``) and queued behind a spin (``queued``: the GPU's own time).

The oracle's regret is its plan's measured time over the best forward measured at that
model and batch, less one, in each of the two senses: as issued (what a user timing
``model(x)`` sees) and queued; and, queued, over the best forward built of units (the
chains and the oracle's plans: the oracle's own search space, as the thesis measured
it), which leaves out what compiling the whole model gains across units' boundaries. The
per-layer and subtraction methods time units in a
queued forward, so the oracle they feed sees no host time: where the host bounds a
forward (eager at small batches, a chain of separately compiled units), the regret as
issued shows what that blind spot costs.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from .oracle import best_of

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable, Sequence

FORWARD_KINDS = ("whole", "chain", "dp")


def static_shapes(provenance: dict) -> bool:
    """Whether a run compiled with static shapes (``dynamic=False``, dynamo reset before
    each model and batch). The runs before it was set left dynamo's automatic dynamic
    shapes on: a block after the first of another size, and a batch after the first,
    got kernels compiled for symbolic sizes."""
    return (provenance.get("compile") or {}).get("dynamic") is False


def _rank(r):
    return (static_shapes(r["provenance"]), not r.get("incomplete"))


def _why(drop, keep):
    """What ``drop`` lacks that ``keep`` has."""
    return ", ".join(w for w, d, k in (
        ("automatic dynamic shapes", *(not static_shapes(r["provenance"]) for r in (drop, keep))),
        ("incomplete", *(bool(r.get("incomplete")) for r in (drop, keep)))) if d and not k)


def load(folder: str | os.PathLike) -> list:
    """Every record of every ``*.json`` in ``folder``, each with its file's name and
    provenance. A model and batch measured twice: a record compiled with static shapes
    stands for it over one that was not, then a complete record over an incomplete one
    (a run that reached its deadline inside it); the other is listed in its
    ``superseded`` with why. Two of the same standing are refused, naming both files."""
    folder = Path(folder)
    files = sorted(folder.glob("*.json"))
    if not files:
        raise ValueError(f"{folder}: no *.json there (roofsim measure compiled writes them)")
    by = {}
    for f in files:
        doc = json.loads(f.read_text())
        if doc.get("suite") != "compiled":
            raise ValueError(f"{f}: suite {doc.get('suite')!r}, not 'compiled'")
        for r in doc["records"]:
            key = (r["model"], r["batch"])
            new = {**r, "file": f.name, "provenance": doc["provenance"],
                   "configs": doc["configs"], "superseded": []}
            old = by.get(key)
            if old is None:
                by[key] = new
            elif _rank(old) == _rank(new):
                raise ValueError(f"{r['model']} batch {r['batch']}: measured in both "
                                 f"{old['file']} and {f.name}; keep one")
            else:
                keep, drop = (new, old) if _rank(new) > _rank(old) else (old, new)
                keep["superseded"] += [f"{drop['file']} ({_why(drop, keep)})"] + drop["superseded"]
                by[key] = keep
    return sorted(by.values(), key=lambda r: (r["model"], r["batch"]))


def _name(model: str) -> str:
    return model.rsplit(".", 1)[-1]


def forwards(rec: dict) -> dict:
    """{forward name: {"end_to_end_s", "queued_s", "rel_error", "configs"}} of every
    forward measured in ``rec`` (a plan the run did not repeat resolved to the one it
    is the same as)."""
    out = {}
    for c, w in rec["whole"].items():
        out[f"whole-{c}"] = {"end_to_end_s": w["end_to_end"]["median_s"],
                             "queued_s": w["queued"]["median_s"], "rel_error": w["rel_error"],
                             "configs": None}
    n = len(rec["units"])
    for c, w in rec["chains"].items():
        out[f"chain-{c}"] = {"end_to_end_s": w["end_to_end"]["median_s"],
                             "queued_s": w["queued"]["median_s"], "rel_error": w["rel_error"],
                             "configs": [c] * n}
    for k, p in rec["plans"].items():
        if not k.startswith("dp-"):
            continue
        src = out.get(p["same_as"]) if "same_as" in p else p
        if "same_as" in p:
            out[k] = {**src, "same_as": p["same_as"]}
        else:
            out[k] = {"end_to_end_s": p["end_to_end"]["median_s"],
                      "queued_s": p["queued"]["median_s"], "rel_error": p["rel_error"],
                      "configs": p["configs"]}
    return out


def mix(configs: Iterable[str]) -> str:
    """A plan's configurations counted: ``"inductor x17, torchscript x1"``."""
    counts = {}
    for c in configs:
        counts[c] = counts.get(c, 0) + 1
    return ", ".join(f"{c} x{k}" for c, k in sorted(counts.items(), key=lambda kv: -kv[1]))


def switches(configs: Sequence[str]) -> int:
    return sum(a != b for a, b in zip(configs, configs[1:]))


def summary(folder: str | os.PathLike) -> dict:
    """{"forwards": a row per model, batch and forward; "oracle": a row per model, batch
    and timing method the oracle read; "compile": seconds to build each configuration}."""
    rows, oracle, comp = [], [], []
    for r in load(folder):
        model, b = _name(r["model"]), r["batch"]
        fw = forwards(r)
        best_e = min(fw, key=lambda k: fw[k]["end_to_end_s"])
        best_q = min(fw, key=lambda k: fw[k]["queued_s"])
        per_unit = [k for k in fw if not k.startswith("whole-")]
        best_u = min(per_unit, key=lambda k: fw[k]["queued_s"])
        for k, f in fw.items():
            rows.append({"model": model, "batch": b, "forward": k, **f,
                         "vs_best_end_to_end": f["end_to_end_s"] / fw[best_e]["end_to_end_s"] - 1,
                         "vs_best_queued": f["queued_s"] / fw[best_q]["queued_s"] - 1})
        for c in r["configs"]:
            comp.append({"model": model, "batch": b, "config": c,
                         "whole_s": r["compile_seconds"]["whole"].get(c),
                         "units_s": r["compile_seconds"]["units"].get(c)})
        for method in ("per_layer", "subtraction"):
            row = {"model": model, "batch": b, "method": method,
                   "best_end_to_end": best_e, "best_end_to_end_s": fw[best_e]["end_to_end_s"],
                   "best_queued": best_q, "best_queued_s": fw[best_q]["queued_s"],
                   "best_units": best_u, "best_units_s": fw[best_u]["queued_s"],
                   "incomplete": "; ".join(r.get("incomplete") or []) or None}
            dp = r["plans"].get(f"dp-{method}")
            # each unit at its fastest, switches ignored: a lower bound of any plan of units
            row["best_of_s"] = best_of({c: [max(0.0, t) for t in r["chains"][c][method]]
                                        for c in r["chains"]}).seconds
            if dp:
                f = fw[f"dp-{method}"]
                row.update(plan=mix(dp["configs"]), switches=switches(dp["configs"]),
                           predicted_s=dp["predicted_s"], switch_s=dp["switch_s"],
                           end_to_end_s=f["end_to_end_s"], queued_s=f["queued_s"],
                           same_as=dp.get("same_as"),
                           predicted_error=dp["predicted_s"] / f["queued_s"] - 1,
                           regret_end_to_end=f["end_to_end_s"] / fw[best_e]["end_to_end_s"] - 1,
                           regret_queued=f["queued_s"] / fw[best_q]["queued_s"] - 1,
                           regret_units=f["queued_s"] / fw[best_u]["queued_s"] - 1)
            oracle.append(row)
    return {"forwards": rows, "oracle": oracle, "compile": comp}


def roofsim_beside(gpu: str, batches: Iterable[int], measurements: str | os.PathLike = "data/measurements",
                   plans: str | os.PathLike = "data/plans") -> list:
    """Per batch: ResNet-50's roofline bound with every convolution and the FC in fp32
    and in TF32 (cuDNN may use TF32 under PyTorch's defaults), and roofsim's own kernels'
    best measured plan (``roofsim measure network``), where measured."""
    import hwmodels
    from workloads.networks import resnet50

    from . import networks as nw
    from .roofline import bound
    hw = hwmodels.get(gpu)
    own = {}
    try:
        for p in nw.summary(gpu, measurements, plans)["plans"]:
            if p["batch"] not in own or p["queued_s"] < own[p["batch"]]["queued_s"]:
                own[p["batch"]] = p
    except (ValueError, FileNotFoundError):
        pass
    out = []
    for b in batches:
        net = resnet50(batch=b)
        row = {"batch": b, "roofline_fp32_s": bound(hw, net, "fp32").seconds,
               "roofline_tf32_s": bound(hw, net, "tf32").seconds}
        if b in own:
            row.update(own_plan=own[b]["plan"], own_queued_s=own[b]["queued_s"],
                       own_end_to_end_s=own[b]["end_to_end_s"])
        out.append(row)
    return out

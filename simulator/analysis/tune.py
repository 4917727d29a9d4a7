"""``roofsim tune``: the simulator as a cost model (AutoTVM's question with a simulator in
place of a learned model). For a GEMM or a convolution, every configuration roofsim's
kernels offer -- algorithm, layout, tile, thread mapping, block shape -- is ranked by
predicted time: the analytic model on every candidate (milliseconds each), then the
engine (sampled) on the best few, which it orders among themselves.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simulator.arguments import show

if TYPE_CHECKING:
    import os

    from hwmodels.schema import SIMTGPU
    from workloads.ir import TensorOp

GEMMS = ("gemm:256x256x256", "gemm:512x512x512", "gemm:1024x1024x1024", "gemm:2048x2048x2048",
         "gemm:1000x3000x500", "gemm:4096x256x1024", "gemm:128x8192x512", "gemm:2048x512x1024")
CONVS = ("conv1/1", "layer1.0.conv1/1", "layer1.0.conv2/1", "layer2.0.conv2/1", "layer3.0.conv2/1",
         "layer4.0.conv2/1", "layer4.2.conv1/1", "layer1.0.conv2/8", "layer2.0.conv1/8",
         "layer3.0.conv2/8", "layer3.1.conv1/8", "layer4.1.conv2/8")
PROBLEMS = GEMMS + CONVS


def op_of(problem: str) -> TensorOp:
    """The op of a tune problem: a workload spec, or a ResNet-50 layer and its batch
    (``layer3.0.conv2/8``)."""
    import workloads
    if not isinstance(problem, str):
        raise ValueError(f"a tune problem is a workload spec or NAME/BATCH, not a "
                         f"{type(problem).__name__}")
    if "/" in problem:
        name, _, batch = problem.partition("/")
        if not (batch.isascii() and batch.isdigit()) or int(batch) < 1:
            raise ValueError(f"batch {show(batch)} of layer {show(name)}: must be a positive integer")
        found = [o for o in workloads.resolve("resnet50", batch=int(batch)).ops if o.name == name]
        if not found:
            raise ValueError(f"layer {show(name)} is not a ResNet-50 layer (conv1, layer1.0.conv2, "
                             f"layer4.2.conv1, ...)")
        return found[0]
    from .counters import one_op
    return one_op(problem)


GEMM_NAIVE_BLOCKS = ((8, 8), (16, 16), (32, 8), (32, 32))
CONV_BLOCKS = (64, 128, 256, 512, 1024)
TILES = (8, 16, 32)


@dataclass(frozen=True)
class Candidate:
    kernel: str
    args: dict

    def label(self) -> str:
        parts = []
        for k, v in self.args.items():
            if k in ("m", "n", "k"):
                continue
            if k == "conv":
                parts.append(v.layout)
            elif isinstance(v, tuple):
                parts.append(f"{k} {'x'.join(map(str, v))}")
            else:
                parts.append(f"{k} {v}")
        return f"{self.kernel} " + ", ".join(parts)


def candidates(op: TensorOp) -> list[Candidate]:
    """Every configuration of roofsim's kernels that computes ``op``."""
    if op.kind == "gemm":
        kw = {"m": op.M, "n": op.N, "k": op.K}
        out = [Candidate("gemm-naive", {**kw, "thread_x": tx, "block": b})
               for tx in ("cols", "rows") for b in GEMM_NAIVE_BLOCKS]
        return out + [Candidate("gemm-tiled", {**kw, "tile": t}) for t in TILES]
    if op.kind == "conv2d":
        if op.groups != 1:
            raise ValueError(f"{op.name or 'conv'}: grouped convolutions have no kernel")
        out = []
        for lay in ("nchw", "nhwc"):
            c = dataclasses.replace(op, layout=lay)
            out += [Candidate("conv-direct", {"conv": c, "block": (b,)}) for b in CONV_BLOCKS]
            out += [Candidate("conv-im2col", {"conv": c, "tile": t}) for t in TILES]
        return out
    raise ValueError(f"tune takes a GEMM or a convolution, not a {op.kind}")


def _analytic_row(task) -> dict:
    """One candidate built and predicted by the analytic model (a map_tasks task)."""
    from simulator.simt import api
    hw, c = task
    try:
        prob = api.build(hw, c.kernel, **c.args)
    except ValueError as e:               # a launch this hardware cannot make
        return {"candidate": c, "label": c.label(), "analytic_seconds": None,
                "limiter": f"cannot launch: {str(e)[:80]}", "engine_seconds": None}
    a = api.analytic(hw, prob)
    launch = hw.kernel_launch_s * len(prob.programs)
    return {"candidate": c, "label": c.label(), "analytic_seconds": a.seconds + launch,
            "limiter": a.limiter, "engine_seconds": None, "problem": prob}


def _engine_seconds(task) -> float:
    """One candidate's engine (sampled) time, its launches' overhead included."""
    from simulator.simt import api
    hw, prob = task
    return api.simulate(hw, prob, "sampled").seconds + hw.kernel_launch_s * len(prob.programs)


@dataclass(frozen=True)
class Ranking:
    """``rows``: best first (``rank``'s); ``interrupted``: Ctrl-C stopped it, and the rows
    are the candidates that finished (those without an engine time where it stopped in
    the engine's part, ordered by the analytic model)."""

    rows: list
    interrupted: bool = False


def ranking(hw: SIMTGPU, op: TensorOp, engine_top: int = 3) -> Ranking:
    """``rank``, stoppable: Ctrl-C returns what finished (see ``Ranking``)."""
    from simulator.parallel import map_tasks
    cands = candidates(op)
    out = map_tasks(_analytic_row, [(hw, c) for c in cands], workers=1, label="tune")
    rows = out.finished
    ok = sorted((r for r in rows if r["analytic_seconds"] is not None),
                key=lambda r: r["analytic_seconds"])
    stopped = out.interrupted
    if not stopped:
        top = ok[:max(0, engine_top)]
        eng = map_tasks(_engine_seconds, [(hw, r["problem"]) for r in top], workers=1,
                        label="tune (engine)")
        for r, sec in zip(top, eng.results):
            r["engine_seconds"] = sec
        stopped = eng.interrupted
    timed = [r for r in ok[:engine_top] if r["engine_seconds"] is not None]
    top = sorted(timed, key=lambda r: r["engine_seconds"])
    ordered = top + [r for r in ok if r not in top] + [r for r in rows if r["analytic_seconds"] is None]
    for i, r in enumerate(ordered, start=1):
        r["rank"] = i
        r.pop("problem", None)
    return Ranking(ordered, stopped)


def rank(hw: SIMTGPU, op: TensorOp, engine_top: int = 3) -> list:
    """Rows, best first: candidate, analytic seconds and limiter, engine seconds (the
    ``engine_top`` best by the analytic model), and the rank key used."""
    r = ranking(hw, op, engine_top)
    if r.interrupted:
        raise KeyboardInterrupt
    return r.rows


def regret_of_random(times: list, k: int) -> float:
    """The expected regret of the best of ``k`` candidates drawn at random without
    replacement (order statistics, exact): E[min of k] / min - 1."""
    from math import comb
    t = sorted(times)
    n = len(t)
    k = min(k, n)
    # P(the i-th smallest is the best of the draw) = C(n-1-i, k-1) / C(n, k)
    exp = sum(t[i] * comb(n - 1 - i, k - 1) for i in range(n - k + 1)) / comb(n, k)
    return exp / t[0] - 1


def same_problem(problem: str) -> TensorOp:
    """What tells tune problems apart: the op, its name aside (``op_of``), so that
    spellings of one problem are one."""
    return dataclasses.replace(op_of(problem), name="")


#: a problem is scored where at least this many of its candidates were measured: a
#: ranking of one candidate has no regret to score, whatever the model predicts
MIN_CANDIDATES = 2


def load(folder: str | os.PathLike) -> dict:
    """``folder/tune.json``, every record checked (``check_record``) before any engine
    work: a ValueError names the file, the record and the field."""
    from pathlib import Path

    from .measurements import load_suite_json
    labels, seen = {}, {}

    def check(path, i, r):
        rec = check_record(path, i, r, labels)
        # the problem as its op, however spelt ("GEMM:256x256x256", "gemm:256x256x256 ")
        key = (same_problem(rec["problem"]), rec["candidate"])
        if rec["ok"]:
            if key in seen:
                j, first = seen[key]
                raise ValueError(f"{path}: record {i} ({show(rec['problem'])}, {show(rec['candidate'])}) "
                                 f"repeats record {j} ({show(first)}: the same problem"
                                 f"{'' if first == rec['problem'] else ', spelt otherwise'}): a "
                                 "candidate is measured once a problem")
            seen[key] = (i, rec["problem"])
        return rec
    doc = load_suite_json(folder, "tune", "roofsim measure tune", check)
    if not seen:
        raise ValueError(f"{Path(folder) / 'tune.json'}: no successful record "
                         f"(\"ok\": true); nothing to score")
    return doc


TIMES = ("median_s", "min_s", "max_s")
HARNESS_FIELDS = ("reps", "inner", "host_bound", "rel_error")


def check_record(path: str | os.PathLike, i: int, r: dict, labels: dict) -> dict:
    """Record ``i`` of a tune file: its problem a GEMM or convolution ``op_of`` reads, its
    candidate one of that problem's ``candidates`` (by label), ``ok`` true or false and,
    where true, its times within measurements.MIN_SECONDS..MAX_SECONDS and in order (min,
    median, max); returns it.
    ``labels`` caches each problem's candidates' labels and kernels."""
    from .measurements import KERNEL_FIELDS, MISSING, RecordError, field, seconds, short
    problem = r.get("problem")
    if not isinstance(problem, str):
        raise RecordError(path, i, None, "problem", problem if "problem" in r else MISSING,
                          "must be a workload spec (gemm:MxNxK) or a ResNet-50 layer NAME/BATCH")
    if problem not in labels:
        try:
            labels[problem] = {c.label(): c.kernel for c in candidates(op_of(problem))}
        except ValueError as e:
            raise RecordError(path, i, problem, "problem", problem, str(e)) from None
    cand = r.get("candidate", MISSING)
    if cand not in labels[problem]:
        allowed = list(labels[problem])
        raise RecordError(path, i, problem, "candidate", cand,
                          f"not a candidate of this problem; allowed: "
                          f"{', '.join(map(repr, allowed[:3]))}, ... ({len(allowed)} in all)")
    if not isinstance(r.get("ok"), bool):
        raise RecordError(path, i, problem, "ok", r.get("ok", MISSING), "must be true or false")
    if not r["ok"]:
        return r
    kernel = r.get("kernel", labels[problem][cand])
    if kernel != labels[problem][cand]:
        raise RecordError(path, i, problem, "kernel", kernel,
                          f"the candidate {short(cand, 60)} is {show(labels[problem][cand])}'s")
    for f in HARNESS_FIELDS:             # the timing harness's figures, as a kernel suite's
        field(path, i, problem, r, f, KERNEL_FIELDS[f])
    t = [seconds(path, i, problem, r, f) for f in TIMES]
    if not t[1] <= t[0] <= t[2]:
        raise ValueError(f"{path}: record {i} ({show(problem)}): fields 'min_s' = {show(t[1])}, "
                         f"'median_s' = {show(t[0])}, 'max_s' = {show(t[2])}: must be in that order")
    return r


def _score(task) -> dict:
    """One problem's regrets and rank correlation (a map_tasks task)."""
    from scipy.stats import spearmanr
    hw, problem, meas, engine_top = task
    ranked = [r for r in rank(hw, op_of(problem), engine_top) if r["label"] in meas]
    best = min(meas.values())
    first = meas[ranked[0]["label"]]
    top_k = min(meas[r["label"]] for r in ranked[:engine_top])
    pred = [r["analytic_seconds"] for r in ranked]
    rho = spearmanr(pred, [meas[r["label"]] for r in ranked]).statistic if len(ranked) > 2 else None
    return {"problem": problem, "candidates": len(meas), "best": min(meas, key=meas.get),
            "best_s": best, "predicted_best": ranked[0]["label"],
            "regret": first / best - 1, f"regret_top{engine_top}": top_k / best - 1,
            "random_1": regret_of_random(list(meas.values()), 1),
            f"random_{engine_top}": regret_of_random(list(meas.values()), engine_top),
            "spearman": rho}


def scores(hw: SIMTGPU, folder: str | os.PathLike, engine_top: int = 3, every: int = 1) -> dict:
    """Per problem: the measured best, the regret of the predicted best (no measurement),
    of the best measured among the ``engine_top`` the ranking puts first (that many
    measurements) and, for comparison, of random search with as many measurements
    (expected, exact); the Spearman rank correlation of the analytic model's times with
    the measured ones. Then medians and worsts (None where no problem has the figure).
    Ctrl-C: the problems that finished, ``interrupted`` set. A problem with fewer than
    :data:`MIN_CANDIDATES` candidates measured is left out (``left_out``: a ranking of
    one has no regret), and spellings of one problem are one; ``every``: the problems 0,
    ``every``, 2 ``every``, ... of those scored only (a sample). Measurements of another
    GPU than ``hw``'s are refused (``measurements.check_device``)."""
    import statistics

    from simulator.parallel import map_tasks

    from .measurements import check_device
    doc = load(folder)
    check_device(hw, folder, "tune.json", doc["provenance"])
    by, name = {}, {}
    for r in doc["records"]:
        if r["ok"]:                       # checked on load: a positive, finite median_s
            p = name.setdefault(same_problem(r["problem"]), r["problem"])    # its first spelling
            by.setdefault(p, {})[r["candidate"]] = r["median_s"]
    few = [p for p, meas in by.items() if len(meas) < MIN_CANDIDATES]
    by = {p: meas for p, meas in by.items() if len(meas) >= MIN_CANDIDATES}
    if not by:
        raise ValueError(f"folder={show(str(folder), 200)}: tune.json: no problem has {MIN_CANDIDATES} "
                         f"or more candidates measured (\"ok\": true); a ranking of one candidate "
                         "has no regret to score")
    by = dict(list(by.items())[::every])
    out = map_tasks(_score, [(hw, p, meas, engine_top) for p, meas in by.items()], workers=1,
                    label="tune problems")
    rows = out.finished
    summary = {}
    for key in ("regret", f"regret_top{engine_top}", "random_1", f"random_{engine_top}", "spearman"):
        vals = [r[key] for r in rows if r[key] is not None]
        summary[key] = {"median": statistics.median(vals) if vals else None,
                        "worst": (None if not vals else max(vals) if key != "spearman"
                                  else min(vals))}
    return {"problems": rows, "summary": summary, "engine_top": engine_top,
            "interrupted": out.interrupted, "problems_total": len(by),
            # left out of the scores: fewer than MIN_CANDIDATES candidates measured
            "left_out": few}

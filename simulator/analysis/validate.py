"""Pair every measured kernel launch with the engine's, the analytic model's and the
roofline's prediction, and score them per suite.

The measurements repeat a launch on the same buffers (except the gemm suite, which
rotates buffer sets spanning at least twice the L2), so predictions start with the arrays
in the L2 where they fit, and cold after a rotation.
Predictions of time include the preset's GPU-side ``kernel_launch_s`` per launch (the
measurements, launched back to back, include it); the roofline bound does not (it is a
lower bound on the kernel's own work). The engine runs in sampled mode on every record
(an ``engine_budget`` of warp instructions, if given, leaves out the records whose
sampled run would simulate more; the report says how many).

Scores per suite and predictor: MAPE (a fraction), Pearson and Spearman correlation
of predicted against measured seconds, and the share of what-if pairs -- two launches
of one problem (grid/block, kernel variant, layout) -- that the predictor ranks in the
measured order; plus ``faster_than_bound``, the measurements faster than their roofline
bound (a sign of an error somewhere).
"""
from __future__ import annotations

import dataclasses
import itertools
import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from simulator.arguments import show
from simulator.result import Measurement, Result

from .measurements import (
    KERNEL_SUITES,
    SuiteFile,
    check_device,
    check_kernel_records,
    load_suite,
    measurement,
    problem_of,
)
from .roofline import bound

if TYPE_CHECKING:
    import os
    from collections.abc import Callable, Iterable, Sequence

    from hwmodels.schema import SIMTGPU
    from simulator.parallel import Outcome

PREDICTORS = ("engine", "analytic", "roofline")
__all__ = ["KERNEL_SUITES", "PREDICTORS", "RecordTask", "ValidationRow", "load_suites",
           "predict_record",
           "predict_records", "predict_suites", "record_tasks", "score"]


@dataclass(frozen=True)
class ValidationRow:
    """One measured launch beside each predictor's Result (``engine`` None where its
    budget left it out). Predicted seconds include the GPU-side launch cost
    (``launch_overhead_s``) except the roofline bound's."""

    suite: str
    group: str                      # what-if group: launches of one problem rank within it
    kernel: str
    label: str
    measurement: Measurement
    analytic: Result
    roofline: Result
    engine: Result | None
    launch_overhead_s: float
    l2_warm: bool
    engine_simulated_instructions: float
    engine_wall_s: float | None = None

    @property
    def measured_s(self) -> float:
        return self.measurement.median_seconds

    def predicted_s(self, predictor: str) -> float | None:
        """Predicted seconds of ``predictor`` (one of PREDICTORS), None where it did not run."""
        if predictor == "roofline":
            return self.roofline.seconds
        r = self.engine if predictor == "engine" else self.analytic
        return None if r is None else r.seconds + self.launch_overhead_s

    def to_dict(self) -> dict:
        """The flat row of the predictions CSV and ``validate --json``."""
        m = self.measurement
        return {"suite": self.suite, "group": self.group, "kernel": self.kernel, "label": self.label,
                "measured_s": m.median_seconds, "measured_min_s": m.min_seconds,
                "measured_max_s": m.max_seconds, "analytic_s": self.predicted_s("analytic"),
                "roofline_s": self.predicted_s("roofline"), "engine_s": self.predicted_s("engine"),
                "engine_wall_s": self.engine_wall_s, "warp_instructions": self.analytic.instructions,
                "l2_warm": self.l2_warm, "flops": m.flops, "min_bytes": m.compulsory_bytes,
                "includes_launch_overhead": {"engine": True, "analytic": True, "roofline": False},
                "engine_simulated_instructions": self.engine_simulated_instructions}


def load_suites(hw: SIMTGPU, folder: str | os.PathLike, suites: Iterable[str]) -> list[SuiteFile]:
    """The suite files ``suites`` (names) of measurement folder ``folder``, each checked
    (``measurements.load_suite``) and measured on ``hw``'s GPU (``check_device``, a
    ValueError naming ``folder=`` otherwise): what ``validate`` (the API's and the
    command's) scores. ``predict_records`` itself predicts any file on any preset (a
    what-if: the H100's launches on the h200 preset)."""
    files = [load_suite(folder, suite) for suite in suites]
    for sf in files:
        check_device(hw, folder, sf.path.name, sf.provenance)
    return files


def predict_records(hw: SIMTGPU, sf: SuiteFile, engine_budget: float | None = None,
                    progress: Callable[[str, int, int], object] | None = None) -> list[ValidationRow]:
    """A row for every record of the suite file that passed its check, here, one after
    another (``progress(suite, i, n)`` after each). ``engine_budget`` (warp instructions
    sampled mode would simulate) leaves the engine out of records above it; None runs it
    on every record. ``predict_suites`` spreads records over processes."""
    rows = []
    tasks = record_tasks(hw, [sf], engine_budget)
    for j, t in enumerate(tasks):
        rows.append(predict_record(t))
        if progress:
            progress(sf.suite, j + 1, len(tasks))
    return rows


@dataclass(frozen=True)
class RecordTask:
    """One record to predict (what a worker process is sent): the hardware, the suite
    file's name and provenance, the record and its index, the engine budget."""

    hw: object
    suite: SuiteFile            # without its records
    index: int
    record: dict
    engine_budget: float | None


def record_tasks(hw: SIMTGPU, suite_files: Iterable[SuiteFile],
                 engine_budget: float | None = None, every: int = 1) -> list[RecordTask]:
    """A task per record (that passed its check) of each suite file, or of its records 0,
    ``every``, 2 ``every``, ... (a sample: a quick look at a suite); every record must be
    the launch it states (``measurements.check_kernel_records``), checked here before any
    work. Any preset may predict any GPU's launches (a what-if: the H100's launches on the
    h200 preset); ``load_suites`` refuses files of another GPU than ``hw`` for scoring."""
    tasks = []
    for sf in suite_files:
        check_kernel_records(hw, sf)
        head = SuiteFile(sf.path, sf.suite, sf.provenance, [])
        tasks += [RecordTask(hw, head, i, r, engine_budget) for i, r in enumerate(sf.records)
                  if r.get("ok", False) and i % every == 0]
    return tasks


def predict_suites(hw: SIMTGPU, suite_files: Iterable[SuiteFile], engine_budget: float | None = None,
                   workers: int | None = None, scheduler: str | None = None,
                   log: Callable[[str], object] | None = None, every: int = 1) -> Outcome:
    """Every record of every suite file (or every ``every``-th, ``record_tasks``), spread
    over ``workers`` local processes (default: one per core) or the Dask cluster at
    ``scheduler`` (see ``simulator.parallel``): an ``Outcome`` whose results are
    ValidationRows in the files' order (None where Ctrl-C stopped the run
    first); ``log`` is told as each suite finishes."""
    from simulator.parallel import map_tasks
    tasks = record_tasks(hw, suite_files, engine_budget, every)
    # the scores' statistics loaded before the work (a second here), not after a Ctrl-C
    # when the finished rows should be written at once
    import scipy.stats  # noqa: F401

    from simulator.simt.api import announce_compiling
    return map_tasks(predict_record, tasks, workers=workers, scheduler=scheduler,
                     label="validate", group=lambda t: t.suite.suite, log=log,
                     ready=announce_compiling)


def predict_record(task: RecordTask) -> ValidationRow:
    """One record's row: the analytic model, the roofline bound and (within the budget)
    the engine in sampled mode. The Results keep no ``detail`` (block timelines and
    traces): a row travels between processes."""
    from simulator.simt import api, engine
    from simulator.simt.kernels import REGISTRY
    hw, sf, i, r = task.hw, task.suite, task.index, task.record
    try:
        prob = problem_of(hw, r)
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{sf.path}: record {i}: {e}") from None
    spec = REGISTRY.get(prob.kernel)
    launch = hw.kernel_launch_s * len(prob.programs)
    # launches repeated on one set of buffers find them in the L2 when they fit there;
    # the gemm suite rotates buffer sets to avoid that
    warm = r.get("buffer_sets", 1) == 1
    if not warm and r.get("rotation_bytes", math.inf) < 2 * hw.l2.size_bytes:
        raise ValueError(f"record {i} of suite {show(sf.suite)}: rotation_bytes = {r['rotation_bytes']}: "
                         f"rotating buffer sets must span at least twice the L2 "
                         f"({2 * hw.l2.size_bytes} bytes) for the launch to start cold")
    l2 = "warm" if warm else "cold"
    a = api.analytic(hw, prob, l2=l2)
    e = wall = None
    if task.engine_budget is not None:
        # the budget counts what sampled mode simulates, not the whole launch
        simulated = sum(lc.instructions * engine.simulated_fraction(hw, p)
                        for lc, p in zip(a.launches, prob.programs))
    if task.engine_budget is None or simulated <= task.engine_budget:
        t0 = time.perf_counter()
        e = dataclasses.replace(api.simulate(hw, prob, "sampled", l2=l2), detail=None)
        wall = time.perf_counter() - t0
        simulated = sum(lc.instructions * lc.simulated_fraction for lc in e.launches)
    return ValidationRow(
        suite=sf.suite, group="/".join(map(str, spec.group(prob.args))), kernel=prob.kernel,
        label=prob.programs[-1].describe(), measurement=measurement(sf, i, prob, r),
        analytic=dataclasses.replace(a, detail=None), roofline=bound(hw, prob.op, "fp32", l2),
        engine=e, launch_overhead_s=launch, l2_warm=warm,
        engine_simulated_instructions=simulated, engine_wall_s=wall)


def _pearson(x, y):
    """(Pearson's, Spearman's) correlation of ``x`` and ``y``, to 12 significant digits:
    scipy's last bits differ between its releases, and a score file should not."""
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, None
    from scipy.stats import pearsonr, spearmanr
    return (float(f"{pearsonr(x, y)[0]:.12g}"), float(f"{spearmanr(x, y)[0]:.12g}"))


def score(rows: Sequence[ValidationRow]) -> dict:
    """Per predictor: n, mape, pearson, spearman, pairs_in_order; and faster_than_bound."""
    out = {"records": len(rows),
           "faster_than_bound": int(sum(r.measured_s < r.predicted_s("roofline") for r in rows))}
    for p in PREDICTORS:
        rs = [r for r in rows if r.predicted_s(p) is not None]
        m = np.array([r.measured_s for r in rs])
        q = np.array([r.predicted_s(p) for r in rs])
        res = {"n": len(rs), "mape": float(np.mean(np.abs(q - m) / m)) if rs else None,
               "pearson": None, "spearman": None, "pairs_in_order": None}
        if len(rs) >= 3:
            res["pearson"], res["spearman"] = _pearson(np.log(q), np.log(m))
        groups = {}
        for r in rs:
            groups.setdefault(r.group, []).append(r)
        right = total = 0
        for g in groups.values():
            for x, y in itertools.combinations(g, 2):
                dm = x.measured_s - y.measured_s
                if abs(dm) <= 0.02 * max(x.measured_s, y.measured_s):
                    continue          # a tie within measurement noise ranks nothing
                total += 1
                right += (x.predicted_s(p) - y.predicted_s(p)) * dm > 0
        res["pairs_in_order"] = right / total if total else None
        res["pairs"] = total
        out[p] = res
    out["pairs_in_order"] = out["engine"]["pairs_in_order"]
    return out


def report(hw: SIMTGPU, suite_files: Iterable[SuiteFile], outcome: Outcome, folder: str | os.PathLike,
           engine_budget: float | None = None) -> dict:
    """The scores of a ``predict_suites`` run, per suite (with the device each file was
    measured on): what ``roofsim validate --json`` writes besides its rows. A run Ctrl-C
    stopped says how many records it predicted."""
    rows = outcome.finished
    out = {"hw": hw.name, "measurements": str(folder), "suites": {},
           "engine_budget": engine_budget, "wall_seconds": outcome.wall_seconds}
    if outcome.interrupted:
        out.update(records_done=outcome.done, records_total=len(outcome.results))
    for sf in suite_files:
        rs = [r for r in rows if r.suite == sf.suite]
        if rs:
            out["suites"][sf.suite] = {**score(rs), "device": sf.device}
    return out

"""What-if sweeps of SIMT launches (``roofsim sweep``): many predictions of one kernel,
spread over Dask workers, as rows.

* :func:`grid_sweep`: a kernel over (grid, block) pairs -- time against grid size and
  block shape;
* :func:`layout_sweep`: every convolution of a network in NCHW and in NHWC.

Each returns ``(rows, outcome)``: a dict per finished point, and the ``map_tasks``
outcome (``interrupted`` where Ctrl-C stopped it, the rows then what finished).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from simulator.arguments import show
from simulator.parallel import map_tasks
from simulator.simt import api

from .compare import PointTask, predict_point

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from hwmodels.schema import SIMTGPU
    from simulator.parallel import Outcome
    from workloads.ir import Conv2d


def predict_points(hw: SIMTGPU, points: Iterable[tuple[str, dict]], mode: str, policy: str = "gto",
                   l2: str = "cold", workers: int | None = None, scheduler: str | None = None,
                   label: str = "sweep") -> Outcome:
    """The predictions of ``points`` ((kernel, args) pairs) over workers; each point is
    built here first, so that a bad one fails before any work."""
    tasks = []
    for kernel, kw in points:
        api.build(hw, kernel, **kw)
        tasks.append(PointTask(hw, kernel, kw, mode, policy, l2))
    from simulator.simt.api import announce_compiling, announce_compiling_analytic
    return map_tasks(predict_point, tasks, workers=workers, scheduler=scheduler, label=label,
                     ready=announce_compiling_analytic if mode == "analytic" else announce_compiling)


def _short(dims):
    return "x".join(map(str, dims[:2] if dims[1] > 1 else dims[:1]))


def grid_sweep(hw: SIMTGPU, kernel: str, args: dict, pairs: Iterable[tuple], mode: str = "sampled",
               policy: str = "gto", l2: str = "cold", workers: int | None = None,
               scheduler: str | None = None) -> tuple[list[dict], Outcome]:
    """``kernel`` with ``args`` at each (grid, block) of ``pairs`` (None: the kernel's
    own): a row per launch with its occupancy, waves and predicted seconds."""
    points = [(kernel, {**args, **({"grid": g} if g is not None else {}),
                        **({"block": b} if b is not None else {})}) for g, b in pairs]
    out = predict_points(hw, points, mode, policy, l2, workers, scheduler, "sweep")
    rows = []
    for p in out.finished:
        prob = p.problem
        lc = p.chosen.last_launch
        rows.append({"grid": _short(prob.grid), "block": _short(prob.block),
                     "blocks": prob.programs[-1].launch.blocks,
                     "engine_seconds": p.engine.seconds if p.engine else None,
                     "analytic_seconds": p.analytic.seconds,
                     "occupancy": lc.occupancy, "blocks_per_sm": lc.blocks_per_sm,
                     "waves": lc.waves, "sampled": bool(p.engine and p.engine.sampled),
                     "engine_estimated_error": p.engine.estimated_error if p.engine else None,
                     "sim_wall_seconds": p.engine.wall_seconds if p.engine else None})
    return rows, out


def layout_pairs(workload: str, batch: int | None = None) -> list[tuple[Conv2d, Conv2d]]:
    """(NCHW op, NHWC op) of every convolution of ``workload``; a grouped one (no kernel
    computes it) is refused, naming the layer."""
    import workloads
    plain = workloads.resolve(workload, batch=batch)
    if not any(op.kind == "conv2d" for op in plain.ops):
        raise ValueError(f"workload={workload[:60]!r}: no convolution to compare layouts on (a "
                         "tensor layout applies to convolutions)")
    grouped = next((op for op in plain.ops if op.kind == "conv2d" and op.groups != 1), None)
    if grouped is not None:          # (as a plan refuses it: no layer silently left out)
        raise ValueError(f"layer {show(grouped.name)}: a grouped convolution (groups "
                         f"{grouped.groups}); roofsim's convolution kernels compute groups 1")
    nets = {lay: workloads.resolve(workload, batch=batch, layout=lay) for lay in ("nchw", "nhwc")}
    pairs = [(a, b) for a, b in zip(nets["nchw"].ops, nets["nhwc"].ops) if a.kind == "conv2d"]
    if not pairs:
        raise ValueError(f"workload={show(workload)}: no convolution to compare layouts on")
    return pairs


def layout_sweep(hw: SIMTGPU, kernel: str, pairs: Sequence[tuple[Conv2d, Conv2d]],
                 block: int | tuple[int, ...] | None = None, mode: str = "analytic", policy: str = "gto",
                 l2: str = "cold", workers: int | None = None,
                 scheduler: str | None = None) -> tuple[list[dict], Outcome]:
    """Each pair of :func:`layout_pairs` by ``kernel``: a row per layer with both
    layouts' engine and analytic seconds and NHWC's speed-up (by the engine's times
    unless ``mode`` is analytic)."""
    points = [(kernel, {"conv": op, "block": block}) for a, b in pairs for op in (a, b)]
    out = predict_points(hw, points, mode, policy, l2, workers, scheduler, "layers")
    key = "engine" if mode != "analytic" else "analytic"
    rows = []
    for j, (a, _) in enumerate(pairs):
        got = out.results[2 * j:2 * j + 2]
        if None in got:
            continue
        row = {"layer": a.name, "shape": a.describe().rsplit(" ", 1)[0]}
        for lay, p in zip(("nchw", "nhwc"), got):
            row[f"{lay}_engine_seconds"] = p.engine.seconds if p.engine else None
            row[f"{lay}_analytic_seconds"] = p.analytic.seconds
        row["nhwc_speedup"] = row[f"nchw_{key}_seconds"] / row[f"nhwc_{key}_seconds"]
        rows.append(row)
    return rows, out

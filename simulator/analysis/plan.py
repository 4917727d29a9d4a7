"""A network as roofsim's kernels: a plan says, per layer, which kernel runs it and in
which layout; ``predict_plan`` predicts every layer with the engine (sampled), the
analytic model and the roofline bound, and sums them.

Uniform plans by name: ``direct-nchw``, ``direct-nhwc``, ``im2col-nchw``,
``im2col-nhwc``. A convolution runs as ``conv-direct`` or ``conv-im2col`` in the plan's
layout; the fully connected layer (a GEMM, no layout) as ``gemm-naive`` in a direct plan
(one thread per output, as the direct convolution) and ``gemm-tiled`` in an im2col plan
(the GEMM im2col lowers to). A layer is a :class:`LayerPlan`, so a plan that mixes
algorithms and layouts per layer is a list of them (layers other than convolutions and
GEMMs -- pools, adds, layout transforms -- are a later extension).
"""
from __future__ import annotations

from dataclasses import dataclass

UNIFORM = ("direct-nchw", "direct-nhwc", "im2col-nchw", "im2col-nhwc")
PREDICTORS = ("engine", "analytic", "roofline")


@dataclass(frozen=True)
class LayerPlan:
    """How one layer runs: the op (its layout already the plan's) and the kernel."""

    op: object
    kernel: str
    algorithm: str
    layout: str


def uniform(network_name: str, batch: int, name: str) -> list[LayerPlan]:
    """Every convolution and GEMM of ``network_name`` at ``batch`` under uniform plan
    ``name`` (one of UNIFORM)."""
    import workloads
    if name not in UNIFORM:
        raise ValueError(f"--plan {name!r}: allowed: {', '.join(UNIFORM)}")
    algorithm, layout = name.split("-")
    try:
        net = workloads.resolve(network_name, batch=batch, layout=layout)
    except ValueError:
        # a workload without convolutions (a GEMM) has no tensor layout to set
        net = workloads.resolve(network_name, batch=batch)
        if any(op.kind == "conv2d" for op in net.ops):
            raise
    layers = []
    for op in net.ops:
        if op.kind == "conv2d":
            if op.groups != 1:
                raise ValueError(f"layer {op.name}: grouped convolutions have no kernel")
            layers.append(LayerPlan(op, f"conv-{algorithm}", algorithm, layout))
        elif op.kind == "gemm":
            layers.append(LayerPlan(op, "gemm-naive" if algorithm == "direct" else "gemm-tiled",
                                    algorithm, "-"))
        else:
            raise ValueError(f"layer {op.name}: {op.kind} has no kernel yet")
    if not layers:
        raise ValueError(f"--workload {network_name!r}: no convolution or GEMM to plan")
    return layers


@dataclass(frozen=True)
class LayerTask:
    hw: object
    layer: LayerPlan
    mode: str
    l2_warm: bool
    problem: object = None       # the layer's kernel problem, built where the plan was checked


def build_layer(hw, lp: LayerPlan):
    """The layer's kernel problem on ``hw``; a launch the kernel cannot make (a grid past
    CUDA's limits at a large batch) is an error naming the layer."""
    from simulator.simt import api
    try:
        if lp.op.kind == "gemm":
            return api.build(hw, lp.kernel, m=lp.op.M, n=lp.op.N, k=lp.op.K)
        return api.build(hw, lp.kernel, conv=lp.op)
    except ValueError as e:
        raise ValueError(f"layer {lp.op.name} ({lp.kernel}, {lp.op.describe()}): {e}") from None


def predict_layer(task: LayerTask) -> dict:
    """One layer's row: its kernel, shape and predicted seconds per predictor."""
    from simulator.simt import api

    from .compare import predict
    hw, lp = task.hw, task.layer
    prob = task.problem if task.problem is not None else build_layer(hw, lp)
    p = predict(hw, prob, task.mode, "gto", l2_warm=task.l2_warm)
    launch = hw.kernel_launch_s * len(prob.programs)
    e = p.engine
    return {"layer": lp.op.name, "kernel": lp.kernel, "layout": lp.layout,
            "shape": lp.op.describe(), "launches": len(prob.programs),
            "engine_seconds": e.seconds + launch if e is not None else None,
            "analytic_seconds": p.analytic.seconds + launch,
            "roofline_seconds": p.roofline.seconds,
            "engine_estimated_error": e.estimated_error if e is not None else None,
            "engine_wall_seconds": e.wall_seconds if e is not None else None}


def _shape_key(lp: LayerPlan):
    """Layers of one kernel on one shape (a network repeats its blocks) predict alike."""
    import dataclasses
    return (lp.kernel, lp.layout, dataclasses.replace(lp.op, name=""))


def predict_plan(hw, layers, mode: str = "sampled", l2_warm: bool = False, workers=None,
                 scheduler=None):
    """Every layer of a plan predicted (spread over Dask workers, see
    ``simulator.parallel``): (Outcome whose results are layer rows, totals per
    predictor over the layers that finished).

    Each distinct (kernel, shape) is predicted once -- the predictors are deterministic
    -- and its row copied to the layers that repeat it, marked ``same_as`` the first
    (their ``engine_wall_seconds`` is 0: nothing ran for them)."""
    import dataclasses

    from simulator.parallel import Outcome, map_tasks
    if mode not in ("sampled", "analytic"):
        raise ValueError(f"--mode {mode!r}: allowed: sampled, analytic")
    first = {}
    for i, lp in enumerate(layers):
        first.setdefault(_shape_key(lp), i)
    unique = sorted(set(first.values()))
    # every layer's launches, checked here before any work; the engine's layers go out
    # largest first (by the warp instructions their sampled runs simulate), so that two
    # workers do not end with one of them alone on a long layer
    from simulator.simt.engine import sampled_cost
    probs = {i: build_layer(hw, layers[i]) for i in unique}
    cost = ({i: sum(sampled_cost(hw, p) for p in probs[i].programs) for i in unique}
            if mode == "sampled" else {})
    order = sorted(unique, key=lambda i: -cost.get(i, 0.0))
    out = map_tasks(predict_layer, [LayerTask(hw, layers[i], mode, l2_warm, probs[i]) for i in order],
                    workers=workers, scheduler=scheduler, label="plan")
    by_first = dict(zip(order, out.results))
    results = []
    for i, lp in enumerate(layers):
        j = first[_shape_key(lp)]
        row = by_first[j]
        if row is not None and j == i:
            row = {**row, "same_as": None}
        elif row is not None:
            row = {**row, "layer": lp.op.name, "same_as": layers[j].op.name,
                   "engine_wall_seconds": 0.0 if row["engine_wall_seconds"] is not None else None}
        results.append(row)
    out = dataclasses.replace(out, results=results,
                              done=sum(r is not None for r in results))
    rows = out.finished
    totals = {}
    for p in PREDICTORS:
        vals = [r[f"{p}_seconds"] for r in rows]
        totals[p] = sum(vals) if vals and None not in vals else None
    return out, totals

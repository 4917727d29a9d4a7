"""Predictors side by side: the engine, the analytic model and the roofline bound of one
SIMT launch (what ``roofsim simulate simt`` and ``sweep`` print), each a ``Result``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from simulator.arguments import show
from simulator.result import Result
from simulator.simt import api

from .roofline import bound

if TYPE_CHECKING:
    from hwmodels.schema import SIMTGPU

MODES = api.MODES


@dataclass(frozen=True)
class Prediction:
    """``engine`` is None in analytic mode, ``roofline`` None when not asked for."""

    problem: object
    analytic: Result
    engine: Result | None = None
    roofline: Result | None = None

    @property
    def chosen(self) -> Result:
        """The engine's Result when it ran, else the analytic model's."""
        return self.engine if self.engine is not None else self.analytic

    def to_dict(self) -> dict:
        return {"kernel": self.problem.kernel, "grid": list(self.problem.grid),
                "block": list(self.problem.block), "op": self.problem.op.to_dict(),
                **{k: (r.to_dict() if r is not None else None)
                   for k, r in (("engine", self.engine), ("analytic", self.analytic),
                                ("roofline", self.roofline))}}


def predict(hw: SIMTGPU, problem: api.Problem, mode: str = "sampled", policy: str = "gto", trace: int = 0,
            with_roofline: bool = True, l2: str = "cold") -> Prediction:
    """The engine (unless ``mode`` is analytic), the analytic model and the roofline bound
    for one ``simulator.simt.api.Problem``, the launch finding the L2 ``l2``."""
    if mode not in MODES:
        raise ValueError(f"mode = {show(mode)}: allowed: {', '.join(MODES)}")
    a = api.analytic(hw, problem, policy, l2=l2)
    e = None if mode == "analytic" else api.simulate(hw, problem, mode, policy, trace, l2)
    r = bound(hw, problem.op, "fp32", l2) if with_roofline else None
    return Prediction(problem, a, e, r)


@dataclass(frozen=True)
class PointTask:
    """One point of a sweep, as a worker process gets it: the hardware, a registered
    kernel and its arguments, how to predict."""

    hw: object
    kernel: str
    args: dict
    mode: str
    policy: str = "gto"
    l2: str = "cold"


def predict_point(task: PointTask) -> Prediction:
    """``predict`` of one sweep point, without the Results' ``detail`` (it travels
    between processes) and without the roofline."""
    import dataclasses
    prob = api.build(task.hw, task.kernel, **task.args)
    p = predict(task.hw, prob, task.mode, task.policy, with_roofline=False, l2=task.l2)
    strip = lambda r: None if r is None else dataclasses.replace(r, detail=None)  # noqa: E731
    return Prediction(prob, strip(p.analytic), strip(p.engine), None)

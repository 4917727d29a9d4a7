"""Hierarchical roofline: one ceiling per memory level and per precision.

For each op and each memory level L (DRAM, L2, L1/shared, ...) the bytes crossing L
are bounded below by ``max(compulsory bytes, pebble bound with S = the on-chip capacity
inside L)`` (see :mod:`.datamovement`). The op's lower-bound time is the largest of
``flops / peak(precision)`` and ``bytes_L / bandwidth_L`` over the levels; the largest
term names what binds. Attainable FLOP/s is ``flops / bound_seconds``, so it never
exceeds any ceiling. Launch overheads are not included: this is a bound.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simulator import arguments as arg
from simulator.arguments import show
from simulator.result import Result

from .datamovement import lower_bound_bytes

if TYPE_CHECKING:
    from hwmodels.schema import Hardware
    from workloads.ir import Network, TensorOp

#: compute precisions that map to a different storage dtype
COMPUTE_STORAGE = {"tf32": "fp32"}


@dataclass(frozen=True)
class LevelPoint:
    name: str
    bytes: int
    bandwidth_bytes_per_s: float
    intensity_flop_per_byte: float
    seconds: float


@dataclass(frozen=True)
class RooflinePoint:
    layer: str
    kind: str
    shape: str
    flops: int
    compulsory_bytes: int
    dram_bytes: int
    intensity_flop_per_byte: float
    compute_seconds: float
    bound_seconds: float
    attainable_flop_per_s: float
    bound_by: str
    levels: tuple[LevelPoint, ...]

    def row(self) -> dict:
        r = {"layer": self.layer, "kind": self.kind, "shape": self.shape, "flops": self.flops,
             "compulsory_bytes": self.compulsory_bytes, "dram_bytes": self.dram_bytes,
             "intensity_flop_per_byte": self.intensity_flop_per_byte,
             "attainable_flop_per_s": self.attainable_flop_per_s,
             "compute_seconds": self.compute_seconds, "bound_seconds": self.bound_seconds,
             "bound_by": self.bound_by}
        for lv in self.levels:
            r[f"{lv.name}_bytes"] = lv.bytes
            r[f"{lv.name}_seconds"] = lv.seconds
        return r


@dataclass(frozen=True)
class RooflineReport:
    hardware: object
    network: object
    precision: str
    peak_flop_per_s: float
    points: tuple[RooflinePoint, ...]

    @property
    def levels(self):
        return self.hardware.memory_levels()

    def ridge(self, level: str) -> float:
        for lv in self.levels:
            if lv.name == level:
                return self.peak_flop_per_s / lv.bandwidth_bytes_per_s
        raise ValueError(f"memory level {show(level)} is unknown; allowed: "
                         f"{', '.join(lv.name for lv in self.levels)}")

    def totals(self) -> dict:
        flops = sum(p.flops for p in self.points)
        t = sum(p.bound_seconds for p in self.points)
        dram = sum(p.dram_bytes for p in self.points)
        binding = {}
        for p in self.points:
            binding[p.bound_by] = binding.get(p.bound_by, 0.0) + p.bound_seconds
        return {"layers": len(self.points), "flops": flops, "dram_bytes": dram,
                "compulsory_bytes": sum(p.compulsory_bytes for p in self.points),
                "intensity_flop_per_byte": flops / dram if dram else float("inf"),
                "bound_seconds": t, "attainable_flop_per_s": flops / t if t else 0.0,
                "seconds_by_bound": binding}

    def to_dict(self) -> dict:
        from hwmodels import to_dict as hw_dict
        return {"hardware": hw_dict(self.hardware), "workload": self.network.to_dict(),
                "precision": self.precision, "peak_flop_per_s": self.peak_flop_per_s,
                "levels": [{"name": lv.name, "bandwidth_bytes_per_s": lv.bandwidth_bytes_per_s,
                            "inner_capacity_bytes": lv.inner_capacity_bytes,
                            "ridge_flop_per_byte": self.ridge(lv.name)} for lv in self.levels],
                "layers": [p.row() for p in self.points], "totals": self.totals()}


def roofline(hw: Hardware, network: Network, precision: str | None = None,
             l2: str = "cold") -> RooflineReport:
    """Roofline bound of every op of ``network`` on ``hw``.

    ``l2`` (``arguments.L2_STATES``) warm (an op repeated on the same buffers, as
    measurements repeat launches):
    its bytes already in the L2 -- all of them, up to the L2's capacity -- need not cross
    DRAM, so DRAM must move only what exceeds the L2 and the rest is priced at the L2's
    bandwidth (its own level's term); the bound stays a bound. Cold and flushed alike:
    every byte crosses DRAM.

    ``precision`` defaults to the ops' dtype; ``tf32`` computes fp32 data on TF32
    matrix units. An op whose dtype differs from the storage of ``precision`` is an
    error: convert the network with ``network.with_dtype`` first.
    """
    dtypes = {op.dtype for op in network.ops}
    if precision is None:
        if len(dtypes) != 1:
            raise ValueError(f"workload {show(network.name)} mixes dtypes {sorted(dtypes)}; "
                             "give a precision")
        precision = dtypes.pop()
    storage = COMPUTE_STORAGE.get(precision, precision)
    bad = [op.name for op in network.ops if op.dtype != storage]
    if bad:
        raise ValueError(f"precision {show(precision)} needs {storage} data but layer {show(bad[0])} is "
                         f"{network.ops[0].dtype}")
    warm = arg.l2_state(l2) == "warm"
    peak = hw.peak_flop_per_s(precision)
    levels = hw.memory_levels()
    points = []
    for op in network.ops:
        flops = op.flops()
        lps = []
        for lv in levels:
            b = lower_bound_bytes(op, lv.inner_capacity_bytes, lv.private_units) \
                if lv.inner_capacity_bytes > 0 \
                else op.min_bytes()
            if warm and lv.name == "dram" and getattr(hw, "l2", None) is not None:
                b = max(0, b - hw.l2.size_bytes)
            lps.append(LevelPoint(lv.name, b, lv.bandwidth_bytes_per_s,
                                  flops / b if b else float("inf"), b / lv.bandwidth_bytes_per_s))
        t_comp = flops / peak
        t, by = t_comp, "compute"
        for lp in lps:
            if lp.seconds > t:
                t, by = lp.seconds, lp.name
        dram = lps[0]
        points.append(RooflinePoint(
            layer=op.name, kind=op.kind, shape=op.describe(), flops=flops,
            compulsory_bytes=op.min_bytes(), dram_bytes=dram.bytes,
            intensity_flop_per_byte=dram.intensity_flop_per_byte, compute_seconds=t_comp,
            bound_seconds=t, attainable_flop_per_s=flops / t if t else 0.0, bound_by=by,
            levels=tuple(lps)))
    return RooflineReport(hw, network, precision, peak, tuple(points))


def _point_result(hw, p: RooflinePoint, op_dict, precision, wall) -> Result:
    return Result(predictor="roofline", mode="bound", hardware=hw.name, workload=p.layer or p.kind,
                  seconds=p.bound_seconds, flops=p.flops, compulsory_bytes=p.compulsory_bytes,
                  bytes_by_level={lv.name: lv.bytes for lv in p.levels},
                  limiter=p.bound_by, wall_seconds=wall, op=op_dict,
                  extra={"precision": precision, "compute_seconds": p.compute_seconds,
                         "attainable_flop_per_s": p.attainable_flop_per_s})


def bound(hw: Hardware, workload: TensorOp | Network, precision: str = "fp32",
          l2: str = "cold") -> Result:
    """The roofline lower bound as a Result: of one op (a ``workloads.ir`` TensorOp) or of
    a network (its ``layers`` one Result per op); ``limiter`` names what binds
    (``compute`` or a memory level), ``bytes_by_level`` the bytes each level must move
    (the larger of the compulsory traffic and the pebble bound inside it); ``detail``
    the :class:`RooflineReport` (ceilings, for charts). ``l2`` warm: the op's buffers
    start in the L2 (see :func:`roofline`).

    >>> import hwmodels
    >>> from workloads.ir import Gemm
    >>> r = bound(hwmodels.get("gtx480"), Gemm(name="g", M=1024, N=1024, K=1024))
    >>> r.limiter, round(r.seconds * 1e3, 3)
    ('compute', 1.597)
    """
    import time

    from workloads.networks import Network
    t0 = time.perf_counter()
    single = not isinstance(workload, Network)
    net = Network(workload.name or workload.kind, (workload,)) if single else workload
    rep = roofline(hw, net, precision, l2)
    wall = time.perf_counter() - t0
    layers = tuple(_point_result(hw, p, op.identity(), rep.precision, wall / len(net.ops))
                   for p, op in zip(rep.points, net.ops))
    if single:
        return dataclasses.replace(layers[0], detail=rep, wall_seconds=wall)
    t = rep.totals()
    levels = {lv: sum(r.bytes_by_level[lv] for r in layers) for lv in layers[0].bytes_by_level}
    dominant = max(t["seconds_by_bound"], key=t["seconds_by_bound"].get)
    return Result(predictor="roofline", mode="bound", hardware=hw.name, workload=net.name,
                  seconds=t["bound_seconds"], flops=t["flops"], compulsory_bytes=t["compulsory_bytes"],
                  bytes_by_level=levels, limiter=dominant, wall_seconds=wall, op=net.identity(),
                  layers=layers, extra={"precision": rep.precision,
                                        "seconds_by_bound": t["seconds_by_bound"]}, detail=rep)


def ceilings(hw: Hardware) -> dict:
    """The hardware's roofs: its peak FLOP/s per precision, and per memory level the
    bandwidth, the on-chip capacity inside it and the ridge point per precision (what
    ``roofsim hw show`` lists as derived)."""
    rates = hw.peak_rates()
    return {
        "peak_flop_per_s": {q: hw.peak_flop_per_s(q) for q in rates.supported()},
        "memory_levels": [{"name": lv.name, "bandwidth_bytes_per_s": lv.bandwidth_bytes_per_s,
                           "inner_capacity_bytes": lv.inner_capacity_bytes,
                           "private_units": lv.private_units,
                           "ridge_flop_per_byte": {q: hw.peak_flop_per_s(q) / lv.bandwidth_bytes_per_s
                                                   for q in rates.supported()}}
                          for lv in hw.memory_levels()],
    }

"""One result schema for every predictor, and one for every measurement.

Every predictor -- the SIMT engine (full or sampled), the analytic model, the roofline
bound and the systolic engine -- returns a :class:`Result`; every measured launch is a
:class:`Measurement`. Both name what was run (the kernel or op, its launches, the
hardware) and carry the op's FLOPs and compulsory bytes, so a prediction and a
measurement land on one roofline chart from one schema. A quantity a predictor does not
produce is ``None`` (or an empty mapping), never a missing key: consumers read
attributes.

The systolic engine's own figures are typed records on the Result (``systolic``: a
layer's :class:`SystolicFigures`, a network's :class:`SystolicTotals`), whose dict form
is the Result's ``extra``.

``to_dict()`` is the one JSON form (``simulator.table.write_json`` writes it);
``detail`` keeps the engine's own object (per-block timelines, traces, per-fold
timing) for plots and notebooks and is never serialised.

>>> r = Result(predictor="roofline", mode="bound", hardware="gtx480", workload="relu",
...            seconds=1e-5, flops=100, compulsory_bytes=800)
>>> r.achieved_flop_per_s, r.to_dict()["estimated_error"]
(10000000.0, None)
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from simulator.arguments import show

PREDICTORS = ("engine", "analytic", "roofline", "systolic")


def _frozen(d) -> dict:
    return dict(d) if d else {}


def _plain(v):
    """A JSON-ready copy of v (mappings, sequences, dataclasses with to_dict, numbers)."""
    if hasattr(v, "to_dict"):
        return v.to_dict()
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if hasattr(v, "item") and getattr(v, "shape", None) == ():      # numpy scalar
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


@dataclass(frozen=True)
class Launch:
    """One kernel launch of a SIMT prediction: its shape, resources, occupancy and what
    the predictor made of it. Systolic results have none (their layers are Results)."""

    kernel: str
    label: str
    grid: tuple
    block: tuple
    regs_per_thread: int
    smem_per_block: int
    resources_source: str
    blocks_per_sm: int
    warps_per_sm: int
    occupancy: float                 # resident warps / max warps
    limited_by: str                  # the occupancy limit
    waves: float                     # blocks / blocks resident at once
    cycles: float | None = None
    instructions: float | None = None
    bytes_by_level: Mapping[str, float] = field(default_factory=dict)
    stalls_by_cause: Mapping[str, float] = field(default_factory=dict)
    limiter: str | None = None       # analytic model: the term that sets a wave's time
    terms: Mapping[str, float] = field(default_factory=dict)   # analytic model: every term, cycles per wave
    hit_rates: Mapping[str, float | None] = field(default_factory=dict)
    simulated_fraction: float = 1.0  # engine: share of the launch's work simulated
    estimated_error: float | None = None
    sampling: Mapping[str, Any] = field(default_factory=dict)  # engine: how it sampled (blocks, trips, tau)
    simt_efficiency: float | None = None   # engine: thread instructions / (32 x warp instructions)
    bank_conflicts: float | None = None    # engine: shared-memory passes beyond one per instruction

    def __post_init__(self):
        for name in ("bytes_by_level", "stalls_by_cause", "terms", "hit_rates", "sampling"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        object.__setattr__(self, "grid", tuple(self.grid))
        object.__setattr__(self, "block", tuple(self.block))

    @property
    def sampled(self) -> bool:
        return self.simulated_fraction < 1.0

    def describe(self) -> str:
        return (f"{self.kernel} grid {self.grid} block {self.block}"
                + (f" ({self.label})" if self.label else ""))

    def to_dict(self) -> dict:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


OPERANDS = ("ifmap", "filter", "ofmap")     # a systolic layer's operands


@dataclass(frozen=True)
class OperandCounts:
    """One count per operand of a systolic layer: SRAM words or DRAM bytes, as the field
    holding it says."""

    ifmap: int
    filter: int
    ofmap: int

    @classmethod
    def of(cls, counts: Mapping[str, int]) -> OperandCounts:
        """From a mapping with the keys ``ifmap``, ``filter`` and ``ofmap``."""
        return cls(counts["ifmap"], counts["filter"], counts["ofmap"])

    @property
    def total(self) -> int:
        return self.ifmap + self.filter + self.ofmap


@dataclass(frozen=True)
class SystolicFigures:
    """One layer on a systolic array as the systolic engine reports it
    (``Result.systolic`` of each of a network run's ``layers``).

    SRAM counts are in words; DRAM counts, ``compulsory_bytes`` and ``flops`` as the
    layer's Result has them (bytes of the preset's word in the default mode, one byte a
    word in the scalesim mode). ``utilization`` is MACs / (PEs x total cycles),
    ``compute_utilization`` MACs / (PEs x compute cycles). Where a figure does not apply
    it is ``None``: ``memory_replayed`` and ``scalesim_compute_utilization`` (SCALE-Sim's
    own per-fold formula) belong to the scalesim mode; ``groups`` is 1 for an ungrouped
    layer."""

    rows: int
    cols: int
    dataflow: str
    mode: str
    macs: int
    flops: int
    compulsory_bytes: int
    folds: int
    compute_cycles: int
    stall_cycles: int
    total_cycles: int
    utilization: float
    compute_utilization: float
    mapping_efficiency: float
    sram_reads: OperandCounts        # words
    sram_writes: OperandCounts       # words
    dram_read_bytes: OperandCounts
    dram_write_bytes: OperandCounts
    seconds: float
    scalesim_compute_utilization: float | None = None
    memory_replayed: bool | None = None
    groups: int = 1

    def to_dict(self) -> dict:
        """The layer's named figures as the JSON (``Result.extra``) and CSV rows hold them:
        ``array`` is ``"ROWSxCOLS"``; the operand counts are flat keys
        (``sram_ifmap_reads``, ``dram_filter_read_bytes``, ...); the scalesim mode's
        figures and ``groups`` only where they apply."""
        d = {"dataflow": self.dataflow, "array": f"{self.rows}x{self.cols}", "mode": self.mode,
             "macs": self.macs, "flops": self.flops, "compulsory_bytes": self.compulsory_bytes,
             "folds": self.folds, "compute_cycles": self.compute_cycles,
             "stall_cycles": self.stall_cycles, "total_cycles": self.total_cycles,
             "utilization": self.utilization, "compute_utilization": self.compute_utilization,
             "mapping_efficiency": self.mapping_efficiency}
        for o in OPERANDS:
            d[f"sram_{o}_reads"] = getattr(self.sram_reads, o)
            d[f"sram_{o}_writes"] = getattr(self.sram_writes, o)
        for o in OPERANDS:
            d[f"dram_{o}_read_bytes"] = getattr(self.dram_read_bytes, o)
            d[f"dram_{o}_write_bytes"] = getattr(self.dram_write_bytes, o)
        d["seconds"] = self.seconds
        if self.scalesim_compute_utilization is not None:
            d["scalesim_compute_utilization"] = self.scalesim_compute_utilization
        if self.memory_replayed is not None:
            d["memory_replayed"] = self.memory_replayed
        if self.groups != 1:
            d["groups"] = self.groups
        return d


@dataclass(frozen=True)
class SystolicTotals:
    """A network on a systolic array as the systolic engine sums it up (``Result.systolic``
    of the network's Result): the array as run (``rows``, ``cols``, ``dataflow``, where
    its stall cycles come from -- ``stalls``: ``pipeline``, ``closed-form`` or
    ``scalesim`` -- and ``word_bytes``, the bytes of a word in its DRAM counts), the
    number of layers run on the array (``layer_count``), their sums, and the layers left
    out (``not_on_array``: batch norms, pools, biases). ``mapping_efficiency`` is the
    layers' weighted by their compute cycles; the utilisations are the sums' ratios."""

    rows: int
    cols: int
    dataflow: str
    stalls: str
    word_bytes: int
    layer_count: int
    macs: int
    compute_cycles: int
    stall_cycles: int
    total_cycles: int
    utilization: float
    compute_utilization: float
    mapping_efficiency: float
    seconds: float
    sram_reads: OperandCounts        # words
    sram_writes: OperandCounts       # words
    dram_read_bytes: OperandCounts
    dram_write_bytes: OperandCounts
    not_on_array: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "not_on_array", tuple(self.not_on_array))

    def to_dict(self) -> dict:
        """The network's named figures as the JSON holds them (``Result.extra``):
        ``layers`` is ``layer_count``; ``not_on_array`` only where some layer was left
        out."""
        d = {"layers": self.layer_count, "macs": self.macs, "compute_cycles": self.compute_cycles,
             "stall_cycles": self.stall_cycles, "total_cycles": self.total_cycles,
             "utilization": self.utilization, "compute_utilization": self.compute_utilization,
             "mapping_efficiency": self.mapping_efficiency, "seconds": self.seconds}
        for o in OPERANDS:
            d[f"sram_{o}_reads"] = getattr(self.sram_reads, o)
            d[f"sram_{o}_writes"] = getattr(self.sram_writes, o)
            d[f"dram_{o}_read_bytes"] = getattr(self.dram_read_bytes, o)
            d[f"dram_{o}_write_bytes"] = getattr(self.dram_write_bytes, o)
        d.update(dataflow=self.dataflow, stalls=self.stalls, rows=self.rows, cols=self.cols,
                 word_bytes=self.word_bytes)
        if self.not_on_array:
            d["not_on_array"] = list(self.not_on_array)
        return d


@dataclass(frozen=True)
class Result:
    """What one predictor says of one workload on one hardware.

    ``predictor`` is one of ``PREDICTORS``; ``mode`` how it ran (engine: ``full`` or
    ``sampled``; ``analytic``; roofline: ``bound``; systolic: ``default`` or
    ``scalesim``). ``simulated_fraction`` is the share of the work the predictor
    executed (1.0 in full; ``None`` where nothing is executed: analytic, roofline);
    ``estimated_error`` its own estimate of the error sampling adds, or ``None`` where
    it has none. ``instructions`` counts warp instructions (SIMT) or folds (systolic),
    as ``instruction_unit`` says. ``layers`` holds one Result per layer of a network
    run; ``launches`` one :class:`Launch` per SIMT kernel launch.

    The engine's SIMT figures, as Nsight Compute counts them: ``simt_efficiency``,
    thread instructions over 32 x warp instructions (``smsp__thread_inst_executed`` /
    ``smsp__inst_executed`` / 32: the lanes a warp's instructions kept busy; below 1
    where warps diverge or run partly empty), and ``bank_conflicts``, the shared-memory
    passes beyond one per shared-memory instruction over the launch
    (``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld`` + ``_op_st``); ``None``
    from the other predictors.

    ``systolic`` holds the systolic engine's own figures, typed: a layer's
    :class:`SystolicFigures`, a network's :class:`SystolicTotals`; ``None`` from every
    other predictor. A systolic Result's ``extra`` is that record's ``to_dict()`` (set
    from it; the JSON form keeps the figures there, ``systolic`` itself is not
    serialised), so give ``systolic`` alone."""

    predictor: str
    mode: str
    hardware: str
    workload: str                    # kernel name (SIMT) or op / network name
    seconds: float
    flops: int
    compulsory_bytes: int
    cycles: float | None = None
    bytes_by_level: Mapping[str, float] = field(default_factory=dict)
    instructions: float | None = None
    instruction_unit: str = "warp"   # "warp" (SIMT) or "fold" (systolic array)
    stalls_by_cause: Mapping[str, float] = field(default_factory=dict)
    utilization: float | None = None
    limiter: str | None = None
    simulated_fraction: float | None = None
    estimated_error: float | None = None
    simt_efficiency: float | None = None
    bank_conflicts: float | None = None
    wall_seconds: float = 0.0
    op: Mapping[str, Any] = field(default_factory=dict)   # the op's (or network's) identity()
    launches: tuple[Launch, ...] = ()
    layers: tuple[Result, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)    # predictor-specific figures (named,
                                                              # documented there)
    systolic: SystolicFigures | SystolicTotals | None = None  # the systolic engine's figures
    detail: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.predictor not in PREDICTORS:
            raise ValueError(f"Result.predictor = {show(self.predictor)}: allowed: {', '.join(PREDICTORS)}")
        for name in ("bytes_by_level", "stalls_by_cause", "op", "extra"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        object.__setattr__(self, "launches", tuple(self.launches))
        object.__setattr__(self, "layers", tuple(self.layers))
        if self.systolic is not None:
            figures = self.systolic.to_dict()
            if self.extra and self.extra != figures:
                raise ValueError("Result.extra: a systolic Result's extra is its systolic "
                                 "figures' dict form, set from them; give systolic alone")
            object.__setattr__(self, "extra", figures)

    # derived figures
    @property
    def sampled(self) -> bool:
        return self.simulated_fraction is not None and self.simulated_fraction < 1.0

    @property
    def ipc(self) -> float | None:
        """Warp instructions per cycle over the whole GPU (None for other units)."""
        if self.instructions is None or not self.cycles or self.instruction_unit != "warp":
            return None
        return self.instructions / self.cycles

    @property
    def achieved_flop_per_s(self) -> float | None:
        return self.flops / self.seconds if self.seconds else None

    @property
    def arithmetic_intensity(self) -> float | None:
        """FLOPs per compulsory byte."""
        return self.flops / self.compulsory_bytes if self.compulsory_bytes else None

    @property
    def last_launch(self) -> Launch | None:
        return self.launches[-1] if self.launches else None

    def to_dict(self) -> dict:
        # systolic is serialised as its dict form, extra
        out = {f.name: _plain(getattr(self, f.name)) for f in fields(self)
               if f.name not in ("detail", "systolic")}
        out["sampled"] = self.sampled
        out["ipc"] = self.ipc
        return out


@dataclass(frozen=True)
class Measurement:
    """One launch (or launch sequence) timed on a real GPU by ``simulator.measure``, as
    the suites record it: the same identity as a Result, median/min/max seconds per
    launch over back-to-back repeats, and the provenance of the suite file."""

    suite: str
    hardware: str                    # the device as the provenance names it
    workload: str                    # the kernel
    median_seconds: float
    min_seconds: float
    max_seconds: float
    flops: int
    compulsory_bytes: int
    op: Mapping[str, Any] = field(default_factory=dict)
    launch_shapes: tuple = ()        # ((grid, block), ...) of each launch, x fastest
    provenance: Mapping[str, Any] = field(default_factory=dict)
    record: Mapping[str, Any] = field(default_factory=dict)   # the record as the suite wrote it
    index: int = -1                  # its position in the suite file

    def __post_init__(self):
        for name in ("op", "provenance", "record"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        object.__setattr__(self, "launch_shapes", tuple(self.launch_shapes))

    @property
    def seconds(self) -> float:
        return self.median_seconds

    @property
    def achieved_flop_per_s(self) -> float | None:
        return self.flops / self.median_seconds if self.median_seconds else None

    def to_dict(self) -> dict:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

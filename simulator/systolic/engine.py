"""Whole networks on a systolic array: the entry point the CLI and notebooks use.

:func:`simulate_network` returns a :class:`simulator.result.Result` (predictor
``systolic``) with one Result per layer in ``layers``; each Result's ``systolic`` holds
its figures, typed (a layer's :class:`~simulator.result.SystolicFigures`, the network's
:class:`~simulator.result.SystolicTotals`); ``detail`` keeps the engine's own
:class:`SystolicReport` (each layer's :class:`~.closed_form.SystolicResult` with its
per-fold timing), which charts and notebooks read.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from simulator.arguments import show
from simulator.result import OperandCounts, Result, SystolicTotals
from workloads.ir import Conv2d

from .closed_form import OPERANDS, FoldTiming, SystolicResult, compulsory_words, simulate_layer
from .lowering import Lowered, check_array, check_dataflow, gemm_view
from .pipeline import PipelineResult, pipeline_layer

if TYPE_CHECKING:
    from collections.abc import Callable

    from hwmodels.schema import SystolicArray
    from workloads.ir import Network, TensorOp

MODES = ("default", "scalesim")


def split_groups(op: TensorOp) -> tuple[TensorOp, int]:
    """A grouped convolution as (one group's convolution, number of groups)."""
    if isinstance(op, Conv2d) and op.groups > 1:
        g = op.groups
        return dataclasses.replace(op, C=op.C // g, K=op.K // g, groups=1), g
    return op, 1


def _scale(r: SystolicResult, g: int, op, word_bytes: int) -> SystolicResult:
    """One group's result as the whole grouped layer ``op`` (g groups run one after
    another); the FLOPs and compulsory bytes are the whole op's."""
    if g == 1:
        return r
    mul = lambda d: {k: v * g for k, v in d.items()}  # noqa: E731
    return dataclasses.replace(r, layer=op.name, macs=r.macs * g, folds=r.folds * g,
                               compute_cycles=r.compute_cycles * g, stall_cycles=r.stall_cycles * g,
                               sram_reads=mul(r.sram_reads), sram_writes=mul(r.sram_writes),
                               dram_reads_bytes=mul(r.dram_reads_bytes),
                               dram_writes_bytes=mul(r.dram_writes_bytes),
                               flops=op.flops(), compulsory_bytes=compulsory_words(op) * word_bytes,
                               groups=g)


@dataclass(frozen=True)
class SystolicReport:
    """The engine's own record of a network run (``Result.detail``): the hardware as run
    (``rows``/``cols`` overridden), the network (the layers run on the array), one
    :class:`SystolicResult` per layer, each with its :class:`FoldTiming` (the default
    schedule's, in either mode), and the names of the layers left out.

    ``pipelines``: with ``simulate_network(..., trace=True)``, each layer's access/execute
    pipeline run as recorded (:class:`~.pipeline.PipelineResult` with its ``events``: the
    matrix unit's fold spans and the DMA transfers; one group's, for a grouped
    convolution), by layer name; empty otherwise, and where no pipeline runs (the
    scalesim mode, ``stalls='closed-form'``)."""

    hardware: object
    network: object
    dataflow: str
    mode: str
    stalls: str
    layers: tuple[SystolicResult, ...]
    not_on_array: tuple[str, ...] = ()
    pipelines: Mapping[str, PipelineResult] = field(default_factory=dict)

    def totals(self) -> SystolicTotals:
        """The network's figures (``Result.systolic`` of the network): the layers' sums."""
        L = self.layers
        cyc = sum(r.total_cycles for r in L)
        R, C = L[0].rows, L[0].cols

        def per_operand(counts):
            return OperandCounts(*(sum(counts(r)[op] for r in L) for op in OPERANDS))

        return SystolicTotals(
            rows=self.hardware.rows, cols=self.hardware.cols, dataflow=self.dataflow,
            stalls=self.stalls, word_bytes=_word_bytes(self.hardware, self.mode),
            layer_count=len(L), macs=sum(r.macs for r in L),
            compute_cycles=sum(r.compute_cycles for r in L),
            stall_cycles=sum(r.stall_cycles for r in L), total_cycles=cyc,
            utilization=sum(r.macs for r in L) / (R * C * cyc),
            compute_utilization=sum(r.macs for r in L) / (R * C * sum(r.compute_cycles for r in L)),
            mapping_efficiency=sum(r.mapping_efficiency * r.compute_cycles for r in L)
            / max(1, sum(r.compute_cycles for r in L)),
            seconds=sum(r.seconds for r in L),
            sram_reads=per_operand(lambda r: r.sram_reads),
            sram_writes=per_operand(lambda r: r.sram_writes),
            dram_read_bytes=per_operand(lambda r: r.dram_reads_bytes),
            dram_write_bytes=per_operand(lambda r: r.dram_writes_bytes),
            not_on_array=self.not_on_array)


def _word_bytes(hw, mode: str) -> int:
    """Bytes per SRAM/DRAM word: the preset's in the default mode, SCALE-Sim's 1."""
    return hw.word_bytes if mode == "default" else 1


def _layer_result(r: SystolicResult, op, hw, word_bytes: int, wall: float) -> Result:
    return Result(predictor="systolic", mode=r.mode, hardware=hw.name, workload=r.layer,
                  seconds=r.seconds, flops=r.flops, compulsory_bytes=r.compulsory_bytes,
                  cycles=r.total_cycles,
                  bytes_by_level={"sram": r.sram_words * word_bytes, "dram": r.dram_bytes},
                  instructions=r.folds, instruction_unit="fold",
                  stalls_by_cause={"dram": r.stall_cycles}, utilization=r.utilization,
                  simulated_fraction=1.0, estimated_error=None, wall_seconds=wall,
                  op=op.identity(), systolic=r.figures(), detail=r)


def _duration(seconds: float) -> str:
    if seconds < 3600:
        return f"{seconds / 60:.2g} minutes"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.2g} hours"
    return f"{seconds / 86400:.2g} days"


# The simpy stall model's limit: work of a minute or two runs (with a bar per layer on
# a terminal), longer work -- "more than minutes", as the README says -- is refused.
# Measured: resnet50 on systolic-8x8, 398,488 folds, in 12 s on one core (some 32,000
# a second; 235 MiB more memory with trace=True, about 0.6 KiB a fold); the estimate
# below is the slower, shared machine's.
PIPELINE_MAX_FOLDS = 2_000_000
PIPELINE_FOLDS_PER_S = 20_000    # folds a second through it, about, on one core


class TooManyFoldsError(ValueError):
    """:func:`simulate_network`'s refusal to run more than ``PIPELINE_MAX_FOLDS`` folds
    through the access/execute pipeline (``stalls='pipeline'``); ``stalls='closed-form'``
    runs the same network in a fraction of the time. ``folds`` is what it would have run,
    ``max_folds`` the limit."""

    def __init__(self, message: str, folds: int, max_folds: int):
        super().__init__(message)
        self.folds, self.max_folds = folds, max_folds


ARRAY_KINDS = ("conv2d", "gemm")     # what the array runs; the rest is left out (see below)


def simulate_network(hw: SystolicArray, network: Network, dataflow: str = "ws", mode: str = "default",
                     rows: int | None = None, cols: int | None = None,
                     stalls: str = "pipeline", trace: bool = False,
                     on_layer: Callable[[Result], object] | None = None) -> Result:
    """Every convolution and GEMM of ``network`` on ``hw`` (a SystolicArray), in order.

    Batch norm, ReLU, residual adds and pools are not run on the array (a TPU applies
    them in its activation and pooling units as results drain, outside this model):
    they are left out of ``layers`` and the totals and named in the network's
    ``systolic.not_on_array``.

    ``mode="default"`` is the physically faithful model (closed form; stall cycles from
    the access/execute pipeline, or from the closed form's overlap rule with
    ``stalls="closed-form"``); ``mode="scalesim"`` reproduces SCALE-Sim 3.0.0. A run
    the pipeline would take too long over is refused with :class:`TooManyFoldsError` (a
    ValueError); errors about an argument start with its name (``stalls='pipeline'
    runs ...``), naming no CLI flag.

    Returns a :class:`~simulator.result.Result` with ``predictor="systolic"``, ``mode``
    as given, ``hardware``/``workload`` the names, and, for the network and for each
    layer in ``layers`` alike:

    * ``cycles`` (compute + stall cycles) and ``seconds`` at the array's clock;
    * ``flops`` (the ops' FLOPs, 2 x MACs under the floor rule, whatever MACs the
      scalesim mode counts) and ``compulsory_bytes`` (every touched input and output
      element once, in array words: ``word_bytes`` bytes each in the default mode, one
      byte in the scalesim mode);
    * ``bytes_by_level``: ``"sram"`` -- SRAM reads plus writes, in BYTES (words x the
      word size above); ``"dram"`` -- DRAM bytes read plus written;
    * ``instructions``: folds (``instruction_unit="fold"``); ``utilization``: MACs /
      (PEs x cycles); ``stalls_by_cause``: ``{"dram": stall cycles}``;
    * ``simulated_fraction=1.0``, ``estimated_error=None``, ``wall_seconds``;
    * ``systolic``: the named figures, typed. A layer's are a
      :class:`~simulator.result.SystolicFigures`: ``rows``, ``cols``, ``dataflow``,
      ``mode``, ``macs``, ``flops``, ``compulsory_bytes``, ``folds``,
      ``compute_cycles``, ``stall_cycles``, ``total_cycles``, ``utilization``,
      ``compute_utilization`` (MACs / (PEs x compute cycles)), ``mapping_efficiency``,
      ``sram_reads`` and ``sram_writes`` (words) and ``dram_read_bytes`` and
      ``dram_write_bytes`` (each an :class:`~simulator.result.OperandCounts` of
      ``ifmap``, ``filter``, ``ofmap``), ``seconds``, ``groups``, and in the scalesim
      mode ``memory_replayed`` and ``scalesim_compute_utilization`` (``None`` in the
      default mode). The network's are a :class:`~simulator.result.SystolicTotals`
      (:meth:`SystolicReport.totals`): the layers' sums, ``layer_count``, ``rows``,
      ``cols``, ``dataflow``, ``stalls``, ``word_bytes`` and ``not_on_array``;
    * ``extra``: the same figures as the JSON holds them (``systolic.to_dict()``: a
      layer's are its CSV row less ``layer``, ``array`` as ``"ROWSxCOLS"``, the operand
      counts as flat keys ``sram_ifmap_reads``, ..., ``dram_ofmap_write_bytes``).

    ``op`` is the op's (a layer's) or the network's ``identity()``; a layer's ``detail``
    is its :class:`SystolicResult`, the network's the :class:`SystolicReport`. With
    ``trace=True`` the access/execute pipeline records its transfers and matrix-unit
    spans, kept in the report's ``pipelines`` (not serialised) for
    ``simulator.analysis.traces.systolic_trace`` to draw; the figures are the same.
    ``on_layer(result)``, where given, is called with each layer's Result as it finishes
    (a caller that may be stopped keeps what finished).
    """
    t0 = time.perf_counter()
    if getattr(hw, "family", None) != "systolic":
        raise ValueError(f"hardware {show(getattr(hw, 'name', hw))} is not a systolic array; "
                         "use a systolic preset (tpu-v1, systolic-4x4, systolic-8x8), a TOML "
                         "file of family 'systolic' or a SCALE-Sim .cfg")
    check_dataflow(dataflow)
    if mode not in MODES:
        raise ValueError(f"mode = {show(mode)}: allowed: {', '.join(MODES)}")
    if stalls not in ("pipeline", "closed-form"):
        raise ValueError(f"stalls = {show(stalls)}: allowed: pipeline, closed-form")
    rows, cols = rows or hw.rows, cols or hw.cols
    check_array(rows, cols)
    hw = dataclasses.replace(hw, rows=rows, cols=cols)
    wb = _word_bytes(hw, mode)
    out, layer_results = [], []
    skipped = [op.name for op in network.ops if op.kind not in ARRAY_KINDS]
    if len(skipped) == len(network.ops):
        raise ValueError(f"workload {show(network.name)}: no convolution or GEMM for the array")
    # the array runs each layer as its own problem (as SCALE-Sim does)
    network = type(network).independent(network.name, [op for op in network.ops
                                                        if op.kind in ARRAY_KINDS],
                                        network.description, network.params)
    if mode == "default" and stalls == "pipeline":
        folds = 0
        for op in network.ops:
            one, g = split_groups(op)
            L = Lowered(one, dataflow, rows, cols)
            folds += L.row_folds * L.col_folds * g
        if folds > PIPELINE_MAX_FOLDS:
            raise TooManyFoldsError(
                f"stalls='pipeline' runs every fold through a simpy model: {network.name} on a "
                f"{rows}x{cols} array is {folds:,} folds, some "
                f"{_duration(folds / PIPELINE_FOLDS_PER_S)}; at most {PIPELINE_MAX_FOLDS:,} -- use "
                "stalls='closed-form', or a larger array", folds, PIPELINE_MAX_FOLDS)
    if mode == "scalesim":
        from .scalesim_mode import REPLAY_LINES_PER_S, REPLAY_MAX_LINES, replay_lines
        lines = sum(replay_lines(hw, split_groups(op)[0], dataflow) * split_groups(op)[1]
                    for op in network.ops)
        if lines > REPLAY_MAX_LINES:
            raise ValueError(f"mode='scalesim' replays SCALE-Sim's buffers line by line where "
                             f"they turn over: {network.name} on a {rows}x{cols} array is "
                             f"{lines:.3g} demand lines, some {_duration(lines / REPLAY_LINES_PER_S)}; "
                             f"at most {REPLAY_MAX_LINES:.0e} -- use the default mode, a larger "
                             f"array, or larger SRAMs")
        from simulator import jit

        from . import scalesim_memory
        jit.announce("SCALE-Sim buffer replay", [scalesim_memory.replay_loop])
    from simulator.parallel import progress
    pipelines = {}
    for op in progress(network.ops, f"{network.name} on {hw.name}", "layer"):
        t1 = time.perf_counter()
        gemm_view(split_groups(op)[0])  # a clear error for ops without a lowering
        one, g = split_groups(op)
        if mode == "scalesim":
            from .scalesim_mode import simulate_layer_scalesim
            r = simulate_layer_scalesim(hw, one, dataflow)
            # the fold-by-PE heatmap draws the default schedule's folds in either mode
            r = dataclasses.replace(r, fold_timing=FoldTiming.of(Lowered(one, dataflow, rows, cols)))
        else:
            r = simulate_layer(hw, one, dataflow)
            if stalls == "pipeline":
                p = pipeline_layer(hw, one, dataflow, trace=trace)
                r = dataclasses.replace(r, stall_cycles=p.stall_cycles)
                if trace:
                    pipelines[op.name] = p
        r = _scale(r, g, op, wb)
        out.append(r)
        layer_results.append(_layer_result(r, op, hw, wb, time.perf_counter() - t1))
        if on_layer is not None:
            on_layer(layer_results[-1])
    report = SystolicReport(hw, network, dataflow, mode, stalls if mode == "default" else "scalesim",
                            tuple(out), tuple(skipped), pipelines)
    t = report.totals()
    return Result(predictor="systolic", mode=mode, hardware=hw.name, workload=network.name,
                  seconds=t.seconds, flops=sum(r.flops for r in out),
                  compulsory_bytes=sum(r.compulsory_bytes for r in out), cycles=t.total_cycles,
                  bytes_by_level={"sram": sum(lr.bytes_by_level["sram"] for lr in layer_results),
                                  "dram": sum(r.dram_bytes for r in out)},
                  instructions=sum(r.folds for r in out), instruction_unit="fold",
                  stalls_by_cause={"dram": t.stall_cycles}, utilization=t.utilization,
                  simulated_fraction=1.0, estimated_error=None,
                  wall_seconds=time.perf_counter() - t0, op=network.identity(),
                  layers=tuple(layer_results), systolic=t, detail=report)

"""TPU v1-style decoupled access/execute, simulated with simpy at tile granularity.

The TPU v1 instruction stream for a layer is Read_Host_Memory (activations into the
unified buffer), Read_Weights (weight tiles from DRAM into the weight FIFO),
MatrixMultiply (one per fold), Activate and Write_Host_Memory. Access and execute are
decoupled: the access engine runs ahead, filling the weight FIFO as long as it has a
free slot, and the matrix unit consumes tiles in order; dependency tokens (a tile is
in the FIFO / a slot is free / a column fold's outputs are final) order them.

This module simulates that flow for any dataflow, using the closed form for what
happens inside the array (each fold occupies the matrix unit for its issue spacing
``s_{f+1} - s_f``; the first fold adds its preload) and the closed form's DRAM traffic
split over the folds that need it:

* the stationary tile of fold f (``ws``: B, ``is``: A) and the left-edge operand's slice
  (``os``: also the top-edge slice) are one Read_Weights transfer that must land before
  fold f starts; at most ``weight_fifo_tiles`` of them are in flight or waiting;
* outputs (and spilled partial sums) are written after the fold that completes them
  (Activate then the write transfer);
* DRAM is one channel: a transfer holds it for ``bytes / bandwidth`` and its data
  arrives ``latency_cycles`` later; reads and writes share it in request order.

Only transfers not hidden behind compute show up as stall cycles. With infinite
bandwidth the pipeline's time equals the closed form's compute cycles exactly (tested).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import simpy

from .closed_form import dram_plan, dram_traffic, fold_timing
from .lowering import Lowered


@dataclass(frozen=True)
class PipelineResult:
    layer: str
    total_cycles: int
    compute_cycles: int
    dram_busy_cycles: float
    events: list = field(default_factory=list)   # (unit, name, fold, start, end)

    @property
    def stall_cycles(self) -> int:
        return self.total_cycles - self.compute_cycles


def per_fold_bytes(L: Lowered, hw):
    """DRAM bytes each fold must read before it starts and write after it ends; they
    add up to the closed form's :func:`dram_traffic`."""
    plan = dram_plan(L, hw)
    reads, writes = dram_traffic(L, hw, plan)
    folds = L.folds
    F = len(folds)
    Sr, Sc, _ = L.spatial
    Fr, Fc = L.row_folds, L.col_folds
    i, j, ru, cu = (folds[:, k].astype(float) for k in range(4))
    pre = np.zeros(F)
    post = np.zeros(F)
    stationary = {"os": None, "ws": "filter", "is": "ifmap"}[L.dataflow]
    left = {"os": "ifmap", "ws": "ifmap", "is": "filter"}[L.dataflow]
    if stationary:                      # tiles partition the stationary operand
        pre += reads[stationary] * (ru * cu) / (Sr * Sc)
    if reads[left]:                     # row slice i, once or once per column fold
        passes = plan[f"{left}_passes"]
        share = reads[left] / passes * ru / Sr
        pre += share if passes == Fc and Fc > 1 else np.where(j == 0, share, 0.0)
    if L.dataflow == "os" and reads["filter"]:   # column slice j, once or every fold
        if plan["filter_passes"] == 1:
            pre += np.where(i == 0, reads["filter"] * cu / Sc, 0.0)
        else:
            pre += reads["filter"] / plan["filter_passes"] * cu / Sc
    if reads["ofmap"]:                  # spilled partial sums come back before accumulating
        pre += np.where(i > 0, reads["ofmap"] / (Fr - 1) * cu / Sc, 0.0)
    if writes["ofmap"]:
        if L.dataflow == "os":
            post += writes["ofmap"] * (ru * cu) / (Sr * Sc)
        elif plan["spill"]:             # every row fold writes its partial sums
            post += writes["ofmap"] / Fr * cu / Sc
        else:                           # the last row fold writes the final outputs
            post += np.where(i == Fr - 1, writes["ofmap"] * cu / Sc, 0.0)
    return pre, post


def pipeline_layer(hw, op, dataflow: str, rows: int | None = None, cols: int | None = None,
                   trace: bool = False) -> PipelineResult:
    """Simulate one layer's access/execute flow; returns total and stall cycles."""
    L = Lowered(op, dataflow, rows or hw.rows, cols or hw.cols)
    starts, ends, compute = fold_timing(L)
    pre, post = per_fold_bytes(L, hw)
    bpc = hw.dram.bandwidth_bytes_per_s / hw.clock_hz
    lat = hw.dram.latency_cycles
    F = len(starts)
    spans = np.empty(F)
    spans[:-1] = np.diff(starts)
    spans[-1] = compute - starts[-1]
    env = simpy.Environment()
    dram = simpy.Resource(env, capacity=1)
    slots = simpy.Container(env, capacity=hw.weight_fifo_tiles, init=hw.weight_fifo_tiles)
    ready = [env.event() for _ in range(F)]
    events = []
    busy = [0.0]

    def transfer(nbytes, name, f, done=None):
        with dram.request() as req:
            yield req
            t0 = env.now
            dur = nbytes / bpc
            busy[0] += dur
            yield env.timeout(dur)
        yield env.timeout(lat)
        if trace:
            events.append(("dma", name, f, t0, env.now))
        if done is not None:
            done.succeed()

    def access():
        for f in range(F):
            yield slots.get(1)
            if pre[f] > 0:
                env.process(transfer(pre[f], "Read_Weights", f, ready[f]))
            else:
                ready[f].succeed()

    writes_done = []

    def execute():
        yield ready[0]
        yield env.timeout(starts[0])          # the first fold's preload / fill
        for f in range(F):
            if f > 0:
                yield ready[f]
            t1 = env.now
            yield env.timeout(spans[f])
            if trace:
                events.append(("mxu", "MatrixMultiply", f, t1, env.now))
            slots.put(1)
            if post[f] > 0:
                writes_done.append(env.process(transfer(post[f], "Write_Outputs", f)))

    env.process(access())
    proc = env.process(execute())
    env.run(until=proc)
    if writes_done:
        env.run(until=simpy.AllOf(env, writes_done))
    total = int(np.ceil(env.now))
    return PipelineResult(op.name, max(total, compute), compute, busy[0], events)

"""Engine Results as Chrome trace files (the Trace Event Format that chrome://tracing,
Perfetto and speedscope open): what ran where and when, for a teacher or a user to walk
through in a trace viewer. It reads Results, never simulates.

* SIMT (``simt_trace``): a process per SM; each block a complete event ("X") on the
  first of its SM's lanes free at its start (blocks resident together stack), named by
  its launch and block index; the instructions the engine kept (``trace=N``) as instant
  events on a lane per warp scheduler; per launch a span on the "launches" process with
  its instructions and scheduler stall cycles by cause, which also go to a counter. A
  sampled run shows the blocks its slice of SMs ran.
* Systolic (``systolic_trace``): one process for the array; each layer a span, its folds
  (the default schedule's starts and ends, stalls not placed among them) spans on lanes
  below it (a fold starts streaming while the one before drains), its stall cycles a
  counter; layers follow one another. A Result simulated with ``trace=True`` also
  carries the access/execute pipeline's runs: the matrix unit's fold spans (stalls
  included) and the DMA transfers, each on a process of its own.

Times are microseconds at the hardware's clock (``ts``, ``dur``).
"""
from __future__ import annotations

import numpy as np

LAUNCHES_PID = 10_000          # the process holding launch spans (after every SM's)


def _meta(pid, name, tid=None, tname=None):
    ev = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}}]
    if tid is not None:
        ev.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": tname}})
    return ev


def _lanes(starts, ends):
    """A lane per block: the first lane free at its start (interval colouring)."""
    order = np.argsort(starts, kind="stable")
    free_at, lane = [], np.zeros(len(starts), np.int64)
    for i in order:
        for k, t in enumerate(free_at):
            if t <= starts[i]:
                lane[i], free_at[k] = k, ends[i]
                break
        else:
            lane[i] = len(free_at)
            free_at.append(ends[i])
    return lane


def simt_trace(result, clock_hz: float) -> dict:
    """The engine's Result (full or sampled) as a Chrome trace (a dict to dump as JSON)."""
    from simulator.simt.isa import OP_NAMES
    if result.predictor != "engine" or result.detail is None:
        raise ValueError("a timeline needs the engine's Result (simulate simt, full or sampled)")
    us = 1e6 / clock_hz
    events = _meta(LAUNCHES_PID, "launches", 0, "launch")
    sms_named, offset = set(), 0.0
    for li, (lr, launch) in enumerate(zip(result.detail.launches, result.launches)):
        b = {k: np.asarray(v) for k, v in lr.blocks.items()}
        ran = b["sm"] >= 0
        ids, sm, start, end = b["id"][ran], b["sm"][ran], b["start"][ran], b["end"][ran]
        for s in np.unique(sm):
            on = sm == s
            lanes = _lanes(start[on], end[on])
            if int(s) not in sms_named:
                sms_named.add(int(s))
                events += _meta(int(s), f"SM {int(s)}")
            for blk, t0, t1, lane in zip(ids[on], start[on], end[on], lanes):
                events.append({"name": f"L{li} block {int(blk)}", "cat": "block", "ph": "X",
                               "ts": offset + float(t0) * us, "dur": float(t1 - t0) * us,
                               "pid": int(s), "tid": int(lane),
                               "args": {"launch": li, "block": int(blk)}})
        tr = np.asarray(lr.trace).reshape(-1, 6)
        for cyc, s, sched, blk, warp, op in tr:
            events.append({"name": OP_NAMES[int(op)], "cat": "issue", "ph": "i", "s": "t",
                           "ts": offset + float(cyc) * us, "pid": int(s), "tid": 1000 + int(sched),
                           "args": {"launch": li, "block": int(blk), "warp": int(warp)}})
        cycles = float(launch.cycles or 0.0)
        events.append({"name": f"{launch.kernel} {launch.label}".strip(), "cat": "launch", "ph": "X",
                       "ts": offset, "dur": cycles * us, "pid": LAUNCHES_PID, "tid": 0,
                       "args": {"grid": list(launch.grid), "block": list(launch.block),
                                "instructions": launch.instructions, "cycles": cycles,
                                "stall_cycles": dict(launch.stalls_by_cause)}})
        if launch.stalls_by_cause:
            events.append({"name": "stall cycles", "ph": "C", "ts": offset, "pid": LAUNCHES_PID,
                           "tid": 0, "args": {k: float(v) for k, v in launch.stalls_by_cause.items()}})
        offset += cycles * us
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"hardware": result.hardware, "workload": result.workload,
                          "mode": result.mode, "clock_hz": clock_hz,
                          "sampled": bool(getattr(result, "sampled", False))}}


def systolic_trace(result, clock_hz: float, pipelines=None) -> dict:
    """The systolic engine's Result as a Chrome trace: layers, their folds, stalls; where
    the engine kept its access/execute pipeline runs (``simulate_network(...,
    trace=True)``: ``result.detail.pipelines``), the matrix unit's fold spans as the
    pipeline ran them, stalls included, and the DMA transfers (Read_Weights,
    Write_Outputs: DRAM time plus latency) on lanes of their own. ``pipelines``
    ({layer: PipelineResult recorded with ``trace=True``}), when given, is drawn
    instead of the Result's."""
    if result.predictor != "systolic":
        raise ValueError("a systolic timeline needs the systolic engine's Result")
    if pipelines is None:
        pipelines = getattr(result.detail, "pipelines", None) or {}
    us = 1e6 / clock_hz
    events = _meta(0, f"array ({result.hardware})", 0, "layers")
    if pipelines:
        events += _meta(1, "matrix unit (access/execute pipeline)") + _meta(2, "DMA (DRAM transfers)")
    offset, named, dma_named = 0.0, 0, set()
    for lr in result.layers:
        x = lr.systolic
        events.append({"name": lr.workload, "cat": "layer", "ph": "X", "ts": offset,
                       "dur": float(lr.cycles) * us, "pid": 0, "tid": 0,
                       "args": {"folds": lr.instructions, "compute_cycles": x.compute_cycles,
                                "stall_cycles": x.stall_cycles, "utilization": lr.utilization}})
        ft = getattr(lr.detail, "fold_timing", None)
        pipe = (pipelines or {}).get(lr.workload)
        if pipe is not None and pipe.events:
            for unit, pid_lane in (("mxu", 0), ("dma", 1)):
                evs = [e for e in pipe.events if e[0] == unit]
                if not evs:
                    continue
                lanes = _lanes(np.array([e[3] for e in evs]), np.array([e[4] for e in evs]))
                for lane in range(int(lanes.max()) + 1):
                    key = (unit, lane)
                    if key not in dma_named:
                        dma_named.add(key)
                        events.append({"name": "thread_name", "ph": "M", "pid": 1 + pid_lane,
                                       "tid": lane, "args": {"name": f"{unit} {lane + 1}"}})
                for (u, name, f, t0, t1), lane in zip(evs, lanes):
                    events.append({"name": f"{name} {f}", "cat": unit, "ph": "X",
                                   "ts": offset + float(t0) * us, "dur": float(t1 - t0) * us,
                                   "pid": 1 + pid_lane, "tid": int(lane), "args": {"fold": int(f)}})
        if ft is not None:
            # a fold's operands stream in while the one before drains: overlapping folds
            # go on lanes of their own
            lanes = _lanes(np.asarray(ft.starts), np.asarray(ft.ends))
            for lane in range(int(lanes.max()) + 1 if len(lanes) else 0):
                if lane + 1 > named:
                    events.append({"name": "thread_name", "ph": "M", "pid": 0, "tid": 1 + lane,
                                   "args": {"name": f"folds ({lane + 1})"}})
                    named = lane + 1
            for k, (t0, t1) in enumerate(zip(ft.starts, ft.ends)):
                events.append({"name": f"fold {k}", "cat": "fold", "ph": "X",
                               "ts": offset + float(t0) * us, "dur": float(t1 - t0) * us,
                               "pid": 0, "tid": 1 + int(lanes[k]),
                               "args": {"row_fold": int(ft.folds[k][0]), "col_fold": int(ft.folds[k][1]),
                                        "rows_used": int(ft.folds[k][2]),
                                        "cols_used": int(ft.folds[k][3])}})
        events.append({"name": "stall cycles", "ph": "C", "ts": offset, "pid": 0, "tid": 0,
                       "args": {"dram": float(x.stall_cycles)}})
        offset += float(lr.cycles) * us
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"hardware": result.hardware, "workload": result.workload,
                          "mode": result.mode, "clock_hz": clock_hz}}

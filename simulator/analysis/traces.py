"""Engine Results as Chrome trace files (the Trace Event Format that chrome://tracing,
Perfetto and speedscope open): what ran where and when, for a teacher or a user to walk
through in a trace viewer. It reads Results, never simulates.

* SIMT (``simt_trace``): a process per SM; each block a complete event ("X") on the
  first of its SM's lanes free at its start (blocks resident together stack), named by
  its launch and block index; below them, grouped by warp scheduler, a track per warp
  (warps that follow one another in a slot share it) with the warp's states as spans
  for the instructions the engine kept (``trace=N``; ``warp_states``): "issue OP"
  (category "issue", the scheduler's issue interval), its stalls before each issue
  (category "stall": "stalled: memory", "stalled: dependency", "stalled: pipe",
  "stalled: mshr", "ready, not selected"), "barrier" (category "barrier") and, once its
  last instruction has issued, "done" until its block ends (category "done"); below
  those, a track per memory level (lanes where requests overlap) with the global
  accesses kept, from issue to data back, named by the level that served them ("L1
  hit", "L2", "DRAM"; category "memory"); per launch a span on the "launches" process
  with its instructions and scheduler stall cycles by cause, which also go to a
  counter. A sampled run shows the blocks its slice of SMs ran.
* Systolic (``systolic_trace``): one process for the array; each layer a span, its folds
  (the default schedule's starts and ends, stalls not placed among them) spans on lanes
  below it (a fold starts streaming while the one before drains), its stall cycles a
  counter; layers follow one another. A Result simulated with ``trace=True`` also
  carries the access/execute pipeline's runs: the matrix unit's fold spans (stalls
  included) and the DMA transfers, each on a process of its own.

Times are microseconds at the hardware's clock (``ts``, ``dur``); the engine's cycles
count from the first launch's start, so a launch's events sit after the one before.
"""
from __future__ import annotations

import numpy as np

LAUNCHES_PID = 10_000          # the process holding launch spans (after every SM's)
WARP_TID = 1000                # an SM's warp tracks: WARP_TID x (scheduler + 1) + lane
MEMORY_TID = 100_000           # its memory tracks: MEMORY_TID + 1000 x level + lane

# a warp's states (``warp_states``), in the order a wait's spans follow one another, and
# the Chrome trace category of each
STATES = ("barrier", "memory", "dependency", "pipe", "mshr", "not selected", "issue", "done")
STATE_CATEGORY = {"barrier": "barrier", "issue": "issue", "done": "done"}
_STALL_NAME = {"memory": "stalled: memory", "dependency": "stalled: dependency",
               "pipe": "stalled: pipe", "mshr": "stalled: mshr",
               "not selected": "ready, not selected", "barrier": "barrier", "done": "done"}


def warp_states(lr, issue_interval: float) -> dict:
    """The states of the warps of a ``LaunchResult``'s kept issues, as columns (numpy
    arrays, a row per span, by warp then time): ``warp`` (its row of ``lr.warps``),
    ``state`` (``STATES``), ``start``, ``end`` (cycles), ``op`` (the issued opcode, -1
    for a wait or done), ``pc``. A warp's spans tile its life from its start: before each
    issue what it waited on (``core.stall_split``; spans of no length left out), the issue
    (``issue_interval`` cycles), and where every issue of the warp was kept, ``done``
    from its finish to its block's end (a barrier that released it with nothing left:
    ``barrier`` until then). A warp with issues not kept stops at its last kept one's end.
    Cycles are the engine's (absolute: the first launch starts at 0)."""
    from simulator.simt.core import stall_split
    split = stall_split.py_func
    cols = {k: [] for k in ("warp", "state", "start", "end", "op", "pc")}
    waits = getattr(lr, "waits", None)
    if waits is None or not len(waits):
        return {k: np.asarray(v, np.float64 if k in ("start", "end") else
                              (object if k == "state" else np.int64)) for k, v in cols.items()}

    def add(row, state, t0, t1, op=-1, pc=-1):
        if t1 > t0:
            cols["warp"].append(row)
            cols["state"].append(state)
            cols["start"].append(t0)
            cols["end"].append(t1)
            cols["op"].append(op)
            cols["pc"].append(pc)

    tr = np.asarray(lr.trace).reshape(-1, 6)
    wt = np.asarray(lr.warps)
    block_end = np.asarray(lr.blocks["end"], np.float64)
    rows = waits[:, 7].astype(np.int64)
    order = np.argsort(rows, kind="stable")
    bounds = np.searchsorted(rows[order], np.arange(len(wt) + 1))
    for w in range(len(wt)):
        mine = order[bounds[w]:bounds[w + 1]]
        end_last = wt[w, 0]
        for i in mine:
            t = float(tr[i, 0])
            wf, br, ready, on_load, uf, mf, pc = waits[i, :7]
            bar, score, pipe, mshr, nsel = split(t, wf, br, ready, uf, mf)
            a = wf
            for state, d in (("barrier", bar), ("memory" if on_load else "dependency", score),
                             ("pipe", pipe), ("mshr", mshr), ("not selected", nsel)):
                add(w, state, a, a + d, -1, int(pc))
                a += d
            end_last = t + issue_interval
            add(w, "issue", t, end_last, int(tr[i, 5]), int(pc))
        finish = wt[w, 1]
        if len(mine) == int(wt[w, 7]) and finish >= 0:
            add(w, "barrier", end_last, finish)
            end = max(finish, end_last)
            add(w, "done", end, block_end[int(wt[w, 6])])
    return {"warp": np.asarray(cols["warp"], np.int64), "state": np.asarray(cols["state"], object),
            "start": np.asarray(cols["start"], np.float64), "end": np.asarray(cols["end"], np.float64),
            "op": np.asarray(cols["op"], np.int64), "pc": np.asarray(cols["pc"], np.int64)}


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
    issue_interval = float(result.detail.hw.sm.issue_interval_cycles)
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
            for lane in range(int(lanes.max()) + 1 if len(lanes) else 0):
                events += _thread(int(s), int(lane), f"blocks ({lane + 1})")
            for blk, t0, t1, lane in zip(ids[on], start[on], end[on], lanes):
                events.append({"name": f"L{li} block {int(blk)}", "cat": "block", "ph": "X",
                               "ts": float(t0) * us, "dur": float(t1 - t0) * us,
                               "pid": int(s), "tid": int(lane),
                               "args": {"launch": li, "block": int(blk)}})
        events += _warp_events(lr, li, us, issue_interval, OP_NAMES, sms_named)
        events += _memory_events(lr, li, us, OP_NAMES, sms_named)
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
    # metadata first (each (pid, tid) named once), then by time: viewers read it in order
    meta, seen = [], set()
    for e in events:
        if e["ph"] == "M":
            key = (e["name"], e["pid"], e["tid"])
            if key not in seen:
                seen.add(key)
                meta.append({**e, "ts": 0})
    timed = sorted((e for e in events if e["ph"] != "M"), key=lambda e: (e["ts"], e["pid"], e["tid"]))
    return {"traceEvents": meta + timed, "displayTimeUnit": "ns",
            "otherData": {"hardware": result.hardware, "workload": result.workload,
                          "mode": result.mode, "clock_hz": clock_hz,
                          "sampled": bool(getattr(result, "sampled", False))}}


def _thread(pid, tid, name):
    """A thread's name (viewers order a process's threads by tid: blocks, then each
    scheduler's warps, then the memory levels)."""
    return [{"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}]


def _sm_meta(sm, named):
    if sm in named:
        return []
    named.add(sm)
    return _meta(sm, f"SM {sm}")


def active_lanes(lr, pcs) -> np.ndarray | None:
    """The active lanes of the issues at ``pcs`` (rows of a trace program's events: a
    non-memory event's mask, a memory event's lanes with an address); None where the
    launch is not a trace program's, or ran loop cuts (whose events are other rows)."""
    prog = lr.program
    rows = getattr(prog, "rows", None)
    if getattr(prog, "addresses", None) is None or getattr(prog, "cuts", ()) or rows is None:
        return None
    pcs = np.asarray(pcs, np.int64)
    if not len(pcs) or pcs.min() < 0 or pcs.max() >= len(rows):
        return None
    lanes = rows[pcs, 5]
    out = np.zeros(len(pcs), np.int64)
    mem = lanes >= 0
    out[mem] = (prog.addresses[lanes[mem], :32] >= 0).sum(axis=1)
    masks = (~lanes[~mem]).astype(np.uint64) & np.uint64(0xFFFFFFFF)
    out[~mem] = [bin(int(m)).count("1") for m in masks]
    return out


def _warp_events(lr, li, us, issue_interval, op_names, sms_named):
    """A launch's warp tracks (``warp_states``): per SM and scheduler, a lane per warp
    slot (warps whose lives do not overlap share one). A trace program's issues carry
    their active lanes; where a warp's lanes drop from one issue to the next an instant
    marks the divergence ("diverged: 16 lanes"), where they rise again the reconvergence."""
    states = warp_states(lr, issue_interval)
    wt = np.asarray(lr.warps) if getattr(lr, "warps", None) is not None else np.zeros((0, 8))
    if not len(states["warp"]) and len(np.asarray(lr.trace)):
        return _issue_instants(lr, li, us, op_names, sms_named)
    events = []
    life_end = np.full(len(wt), -np.inf)
    np.maximum.at(life_end, states["warp"], states["end"])
    tid = np.zeros(len(wt), np.int64)
    for sm, sc in {(int(a), int(b)) for a, b in wt[:, 2:4]}:
        on = np.nonzero((wt[:, 2] == sm) & (wt[:, 3] == sc))[0]
        lanes = _lanes(wt[on, 0], np.maximum(life_end[on], wt[on, 0]))
        tid[on] = WARP_TID * (sc + 1) + lanes
        events += _sm_meta(sm, sms_named)
        for lane in range(int(lanes.max()) + 1):
            events += _thread(sm, WARP_TID * (sc + 1) + lane, f"scheduler {sc} · warps {lane + 1}")
    issues = states["state"] == "issue"
    lanes = active_lanes(lr, states["pc"][issues])
    lanes_of = dict(zip(np.flatnonzero(issues), lanes)) if lanes is not None else {}
    before = {}
    for k, (w, state, t0, t1, op, pc) in enumerate(zip(
            states["warp"], states["state"], states["start"], states["end"], states["op"],
            states["pc"])):
        # (arguments kept short: a --timeline holds some 20,000 issues and their waits)
        if state == "issue":
            name = f"issue {op_names[op]}"
            args = {"block": int(wt[w, 4]), "warp": int(wt[w, 5]), "pc": int(pc)}
            n = lanes_of.get(k)
            if n is not None:
                args["lanes"] = int(n)
                last = before.get(w)
                if last is not None and n != last:
                    events.append({"name": f"{'diverged' if n < last else 'reconverged'}: "
                                   f"{n} lanes", "cat": "divergence", "ph": "i", "s": "t",
                                   "ts": float(t0) * us, "pid": int(wt[w, 2]),
                                   "tid": int(tid[w])})
                before[w] = n
        else:
            name = _STALL_NAME[state]
            args = {"pc": int(pc)} if pc >= 0 else {}
        ev = {"name": name, "cat": STATE_CATEGORY.get(state, "stall"), "ph": "X",
              "ts": float(t0) * us, "dur": float(t1 - t0) * us, "pid": int(wt[w, 2]),
              "tid": int(tid[w])}
        if args:
            ev["args"] = args
        events.append(ev)
    return events


def _issue_instants(lr, li, us, op_names, sms_named):
    """The kept issues as instants on a lane per scheduler (a LaunchResult without the
    waits of its issues)."""
    events = []
    for cyc, s, sched, blk, warp, op in np.asarray(lr.trace).reshape(-1, 6):
        events += _sm_meta(int(s), sms_named)
        events.append({"name": op_names[int(op)], "cat": "issue", "ph": "i", "s": "t",
                       "ts": float(cyc) * us, "pid": int(s), "tid": WARP_TID * (int(sched) + 1),
                       "args": {"launch": li, "block": int(blk), "warp": int(warp)}})
    return events


def _memory_events(lr, li, us, op_names, sms_named):
    """A launch's kept global accesses, from issue to data back, on a track per SM and
    level that served them (lanes where they overlap)."""
    from simulator.simt.core import LEVELS
    mem = getattr(lr, "memory", None)
    if mem is None or not len(mem):
        return []
    events = []
    for sm in np.unique(mem[:, 3]).astype(np.int64):
        events += _sm_meta(int(sm), sms_named)
        for lv in range(len(LEVELS)):
            on = np.nonzero((mem[:, 3] == sm) & (mem[:, 2] == lv))[0]
            if not len(on):
                continue
            lanes = _lanes(mem[on, 0], np.maximum(mem[on, 1], mem[on, 0] + 1e-9))
            for lane in range(int(lanes.max()) + 1):
                events += _thread(int(sm), MEMORY_TID + 1000 * lv + lane,
                                  f"memory: {LEVELS[lv]} ({lane + 1})")
            for i, lane in zip(on, lanes):
                t0, t1, _, _, _, _, blk, warp, op, nseg, pc = mem[i]
                events.append({"name": LEVELS[lv], "cat": "memory", "ph": "X", "ts": float(t0) * us,
                               "dur": float(max(0.0, t1 - t0)) * us, "pid": int(sm),
                               "tid": MEMORY_TID + 1000 * lv + int(lane),
                               "args": {"op": op_names[int(op)], "block": int(blk),
                                        "warp": int(warp), "segments": int(nseg), "pc": int(pc)}})
    return events


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
                for (_, name, f, t0, t1), lane in zip(evs, lanes):
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

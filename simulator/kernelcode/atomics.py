"""The L2's atomic units, outside the emulator's loop: their timing from a preset
(``atomic_timing``, the ``emulator.T_*`` vector the emulator's run of blocks together
serves atomics with), the busiest line's work over a launch's traced atomics
(``atomic_unit_cycles``), and the two floors a launch's time takes from them
(``floors``). The emulator's own part -- which request a line serves when, a pass at a
time (``emulator._serve``, ``_hold``, ``_take``, ``_rearm``) -- runs inside its jitted
loop; ``emulator.first_pass_cycles`` is the one rule of a first pass's cost, read by
both. docs/simt.md, "Atomics", says what each is and where its figures come from."""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from simulator.kernelcode import emulator as em

if TYPE_CHECKING:
    from hwmodels.schema import SIMTGPU
    from simulator.kernelcode import sassmap
    from simulator.kernelcode.compiled import Compiled
    from simulator.result import Result


def atomic_timing(hw: SIMTGPU | None = None) -> np.ndarray:
    """The timing of blocks run together (``emulator.T_*``, cycles) from preset ``hw``'s L2
    (default the H100 SXM's): its atomics' round trip, a line's atomic unit on a
    request's first pass with 32 lanes and with one (and on each further pass), the
    requests it queues in order (``atomic_*`` fields: the atomics and atomic_trace
    suites' measurements), a global load's L2 latency, a shared access's latency. A
    preset without atomics figures takes the H100's in cycles, with its own L2 latency
    for the round trip's share beyond the H100's; the queue is the preset's where it
    gives one, else the H100's."""
    import hwmodels
    h100 = hwmodels.get("h100-sxm").l2
    hw = hwmodels.get("h100-sxm") if hw is None else hw
    l2 = hw.l2
    measured = l2.atomic_latency_cycles is not None
    src = l2 if measured else h100
    lat = l2.atomic_latency_cycles if measured else \
        h100.atomic_latency_cycles - h100.latency_cycles + l2.latency_cycles
    T = np.zeros(em.T_SIZE)
    T[em.T_ATOM_LAT], T[em.T_LOAD_LAT] = lat, l2.latency_cycles
    T[em.T_CAS], T[em.T_ATOM] = src.atomic_cas_cycles, src.atomic_cycles
    T[em.T_LANE] = src.atomic_lane_cycles
    T[em.T_SHARED] = hw.sm.shared_latency_cycles
    T[em.T_QUEUE] = l2.atomic_queue_requests or h100.atomic_queue_requests or 0
    return T


def _atomic_kind(ins) -> int:
    """SASS instruction ``ins``: 0, not an atomic on global memory; 1, an atomic (add,
    min, ...); 2, a CAS or an exchange (the atomics suite's two rates)."""
    if ins.op not in ("ATOMG", "REDG", "ATOM", "RED"):
        return 0
    return 2 if (".CAS" in ins.opcode or ".EXCH" in ins.opcode) else 1


def atomic_unit_cycles(c: Compiled, tr: sassmap.Traces, hw: SIMTGPU, scale: float = 1.0) -> float:
    """The cycles the busiest L2 line's atomic unit works through the traced warps'
    atomics (times ``scale``, the launch's work over the traced): each warp request to
    a line holds it a pass at a time: the first ``emulator.first_pass_cycles`` of its
    lanes on the line (``atomic_lane_cycles`` for a lone lane up to ``atomic_cycles``
    for 32, a CAS or an exchange ``atomic_cas_cycles``), ``atomic_lane_cycles`` each
    further lane on its busiest word (the preset's L2, ``atomic_timing``). One line
    serves one request at a time, so a launch whose
    warps pile atomics onto a few words takes at least this long however its SMs run."""
    kind = np.array([_atomic_kind(i) for i in c.sass.instrs] + [0], np.int64)
    k = kind[np.minimum(tr.sass_index, len(kind) - 1)]
    sel = np.flatnonzero((k > 0) & (tr.rows[:, 5] >= 0))
    if not len(sel):
        return 0.0
    T = atomic_timing(hw)
    a = tr.addresses[tr.rows[sel, 5], :32]
    r, lane = np.nonzero(a >= 0)
    if not len(r):
        return 0.0
    words, lanes = np.unique(np.stack([r, a[r, lane]]), axis=1, return_counts=True)
    req_lines, inv = np.unique(np.stack([words[0], words[1] >> 7]), axis=1, return_inverse=True)
    most = np.zeros(req_lines.shape[1], np.int64)
    np.maximum.at(most, inv.ravel(), lanes)
    total = np.bincount(inv.ravel(), weights=lanes, minlength=req_lines.shape[1])
    full = np.where(k[sel][req_lines[0]] == 2, T[em.T_CAS], T[em.T_ATOM])
    busy = em.first_pass_cycles(full, T[em.T_LANE], total) + T[em.T_LANE] * (most - 1)
    _, line_of = np.unique(req_lines[1], return_inverse=True)
    return float(np.bincount(line_of.ravel(), weights=busy).max() * scale)


def _floor(res, cycles, hw, limiter, key):
    """``res`` with each launch at least its ``cycles`` (None: no floor): a launch the
    floor exceeds takes it, limited by ``limiter``; ``extra[key]`` lists the floors."""
    launches, added = [], 0.0
    for lc, cyc in zip(res.launches, cycles):
        if cyc is not None and lc.cycles is not None and cyc > lc.cycles:
            added += (cyc - lc.cycles) / hw.clock_hz
            lc = dataclasses.replace(lc, cycles=cyc, limiter=limiter)
        launches.append(lc)
    extra = {**res.extra, key: [None if c is None else float(c) for c in cycles]}
    if not added:
        return dataclasses.replace(res, extra=extra)
    return dataclasses.replace(res, seconds=res.seconds + added, launches=launches,
                               cycles=(res.cycles or 0.0) + added * hw.clock_hz,
                               limiter=limiter, extra=extra)


def floors(res: Result, unit: list, together: list, hw: SIMTGPU) -> Result:
    """``res`` with each launch at least its busiest atomic unit's cycles (``unit``,
    ``atomic_unit_cycles``) and its contended run's (``together``), as ``_atomics_bound``
    and ``_contended_bound`` say."""
    return _contended_bound(_atomics_bound(res, unit, hw), together, hw)


def _atomics_bound(res, atomics, hw):
    """``res`` with each launch at least its busiest line's atomic-unit cycles
    (``atomic_unit_cycles``; the engine times an atomic as a load and does not queue
    them at their lines): a launch the bound exceeds takes it, limited by
    ``l2 atomics``; ``extra["atomic_unit_cycles"]`` lists each launch's bound."""
    return _floor(res, atomics, hw, "l2 atomics", "atomic_unit_cycles")


def _contended_bound(res, together, hw):
    """``res`` with each launch whose blocks the emulator ran together (``_trace``: a
    CAS or exchange kernel's, every block) at least that run's cycles: its warps' round
    trips to the L2's atomic units and their turns at them, which the engine (an atomic
    timed as a load) and the busiest unit's sum (``_atomics_bound``) both leave out. On
    the atomic_trace suite's CAS loops the run comes within 10% of the H100's time
    (``tests/test_atomics.py``). A launch it exceeds takes it, limited by ``contended
    atomics``; ``extra["contended_cycles"]`` lists each launch's run (None: not run
    together)."""
    return _floor(res, together, hw, "contended atomics", "contended_cycles")

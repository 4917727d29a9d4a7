"""One warp scheduler's warps run together on a recorded warp's instructions: the
analytic model's measure of how much its units interfere.

The analytic model prices a wave by the busiest of its units (the issue slot, each pipe,
the LD/ST unit) and its warps' latency, as if the others never stood in the way. They
do: a warp in order waits at its next instruction's pipe while another pipe idles, the
warps of a block meet at each barrier and start their next phase together, and the
loads they then issue wait together. :func:`run` plays a scheduler's ``n`` warps through
``rec`` -- the first instructions a walked warp issued (``walk.profile``'s recording,
``REC_COLUMNS``) -- with the engine's rules and none of its memory system: one issue a
cycle, GTO (the last warp first, then the oldest) or LRR; the FP32, INT32 and FP64 pipes
its own, each held for its initiation interval; the SM's SFU and LD/ST unit shared by
its schedulers alike, so each of this one's uses holds them for ``share`` times its
cycles; a destination ready after its latency (a global load's, ``lat_mem``: the average
of the L1, L2 and DRAM the model estimates); a block's warps on this scheduler
(``per_block``) waiting for each other at a barrier. The cycles it takes over the
larger of one warp's time alone and the busiest unit's ``n`` x demand is the
interference factor the model applies to its issue term (``analytic.predict_launch``).

Costs: ``n`` x the recording's rows issues, each looking at up to ``n`` warps (8 warps
of 3,200 rows: about 0.8 ms, 16 warps 2 ms; the model runs it twice for each number of
warps a wave has, on the recording and on its first half, and one warp alone twice)."""
from __future__ import annotations

import numpy as np
from numba import njit

from . import (
    _stamp,  # noqa: F401  (numba caches stamped together)
    isa,
    pipes,
)
from .hwvec import H_ISSUE, H_LDSTII

REC_ROWS = 4096      # instructions of a warp recorded for the run
# a recorded instruction (walk._step): opcode, destination and source registers (-1:
# none), its latency (a global load's: the model's average at the walk), its segments
# (global access) or bank passes (shared access), its distinct lines (global access),
# 1 where it is in the loop's body (``walk.retime``: the walk scales the body's time)
REC_COLUMNS = ("op", "dst", "r0", "r1", "r2", "latency", "units", "lines", "body")

INF = 1e300


def recording(rows: int = REC_ROWS) -> np.ndarray:
    """An empty recording of up to ``rows`` instructions (row 0 holds the count; the
    rows after it are written before they are read)."""
    rec = np.empty((rows + 1, len(REC_COLUMNS)), np.int64)
    rec[0] = 0
    return rec


@njit(cache=True, nogil=True)
def _uses(rec, k_rows, share, h, seg_over_bw, line_cycles):
    """(the unit each of the first ``k_rows`` instructions of ``rec`` holds, the cycles
    it holds it): ``pipes``' table, as the engine reads it, with the engine's access rules
    (a global access: its segments at the L1's bandwidth or its lines' tags, a shared one:
    its bank passes); the SM's units ``share`` times as long."""
    unit = np.zeros(k_rows + 1, np.int64)
    hold = np.zeros(k_rows + 1)
    for row in range(1, k_rows + 1):
        op = rec[row, 0]
        u = pipes.unit_of(op, h)
        unit[row] = u
        if op == isa.LDG or op == isa.STG or (op >= isa.ATOM and op <= isa.RED):
            hold[row] = max(h[H_LDSTII] + rec[row, 6] * seg_over_bw,
                            rec[row, 7] * line_cycles) * share
        elif op == isa.LDS or op == isa.STS:
            hold[row] = h[H_LDSTII] * rec[row, 6] * share
        elif u == pipes.SFU or u == pipes.LDST:
            hold[row] = pipes.hold(op, h) * share
        else:
            hold[row] = pipes.hold(op, h)
    return unit, hold


@njit(cache=True, inline='always')
def _sources_ready(rec, ready, g, row, k_rows, nr):
    """The cycle warp ``g``'s sources of ``row`` are ready (0 past the last row): its
    registers change only when it issues, so this holds until it does."""
    when = 0.0
    if row <= k_rows:
        for c in range(2, 5):
            r = rec[row, c]
            if r >= 0 and r < nr and ready[g, r] > when:
                when = ready[g, r]
    return when


@njit(cache=True, nogil=True)
def run(rec, n, per_block, n_regs, gto, share, h, seg_over_bw, line_cycles, lat_mem, rows):
    """Cycles ``n`` warps of one scheduler take to issue the first ``rows`` instructions
    of ``rec`` (row 0: their count; rows 1..: ``REC_COLUMNS``), each warp starting at
    cycle 0; see the
    module's docstring for the rules. ``per_block``: warps of a block on this scheduler
    (a barrier waits for them); ``share``: schedulers sharing the SM's SFU and LD/ST
    unit (their uses held that many times as long); ``h``: the hardware vector (its issue
    interval, its pipes' rates: ``pipes``); ``seg_over_bw``: cycles a global segment
    holds the LD/ST unit at the L1's bandwidth; ``line_cycles``: a line's tag lookup."""
    issue_iv = h[H_ISSUE]
    k_rows = min(rec[0, 0], rows)
    if k_rows <= 0 or n <= 0:
        return 0.0
    nr = max(n_regs, 1)
    ready = np.zeros((n, nr))
    pc = np.ones(n, np.int64)            # the next row (1-based)
    dep = np.zeros(n)                    # the cycle the next row's sources are ready
    at_bar = np.zeros(n, np.bool_)
    arrived = np.zeros(n // max(per_block, 1) + 1, np.int64)
    unit, hold = _uses(rec, k_rows, share, h, seg_over_bw, line_cycles)
    free = np.zeros(pipes.N_UNITS)       # the cycle each unit is next free (NONE: never held)
    t = 0.0
    done = 0
    end = 0.0
    last = -1
    while done < n:
        pick = -1
        soonest = INF
        for j in range(-1, n):
            if j < 0:
                if not gto or last < 0:
                    continue
                g = last
            elif gto:
                g = j
                if g == last:
                    continue
            else:
                g = (last + 1 + j) % n
            if pc[g] > k_rows or at_bar[g]:
                continue
            when = max(t, free[unit[pc[g]]], dep[g])
            if when > t:
                if when < soonest:
                    soonest = when
                continue
            pick = g
            break
        if pick < 0:
            if soonest >= INF:           # (cannot happen: a barrier's last warp issues)
                break
            t = soonest
            continue
        g = pick
        row = pc[g]
        op = rec[row, 0]
        dst = rec[row, 1]
        lat = lat_mem if op == isa.LDG else float(rec[row, 5])
        if unit[row] != pipes.NONE:
            free[unit[row]] = t + hold[row]
        if dst >= 0 and dst < nr:
            ready[g, dst] = t + lat
        last = g
        if op == isa.BAR and per_block > 1:
            blk = g // per_block
            first = blk * per_block
            size = min(per_block, n - first)
            arrived[blk] += 1
            if arrived[blk] < size:
                at_bar[g] = True
            else:
                arrived[blk] = 0
                for q in range(first, first + size):
                    at_bar[q] = False
                    if q != g:
                        pc[q] += 1
                        dep[q] = _sources_ready(rec, ready, q, pc[q], k_rows, nr)
                        if pc[q] > k_rows:
                            done += 1
                            end = max(end, t + issue_iv)
        if not at_bar[g]:
            pc[g] += 1
            dep[g] = _sources_ready(rec, ready, g, pc[g], k_rows, nr)
            if pc[g] > k_rows:
                done += 1
                end = max(end, t + issue_iv)
        t += issue_iv
    return max(end, t)


@njit(cache=True, nogil=True)
def demand(rec, share, h, seg_over_bw, line_cycles, rows):
    """The busiest unit's cycles for one warp of the first ``rows`` of ``rec`` on a
    scheduler (``run``'s rules: the SFU's and the LD/ST unit's ``share`` times theirs)."""
    k_rows = min(rec[0, 0], rows)
    unit, hold = _uses(rec, k_rows, share, h, seg_over_bw, line_cycles)
    busy = np.zeros(pipes.N_UNITS)
    for row in range(1, k_rows + 1):
        busy[unit[row]] += hold[row]
    busy[pipes.NONE] = k_rows * h[H_ISSUE]      # (the issue slot)
    return busy.max()

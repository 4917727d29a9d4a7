"""Cycle-level systolic array: operands move PE to PE every cycle, with the input skew.

This is the reference the closed form (:mod:`.closed_form`) is tested against: it
executes the schedule register by register and computes the real result. Each PE has
a left-to-right register, a top-to-bottom register and, by dataflow,

* ``os``: an accumulator and a shadow register; shadow registers of a column form the
  drain chain to the column's bottom port;
* ``ws``/``is``: two stationary buffers, filled through a per-column preload shift
  chain; which buffer a MAC uses is picked by the fold tag travelling with the operand.

The controller starts a fold's stream when the hardware allows: for ``ws``/``is`` when
the edge is free and the fold's preload has settled (a preload shift waits while any
row it would overwrite is still needed by an earlier fold); for ``os`` by the static
rule ``s_{f+1} = s_f + max(T, 2 ru_f - 1)`` whose need the array asserts (a result finding
its shadow register occupied is an error). Every MAC checks that its operands belong to
the same fold and step. Recording (for teaching) keeps per-cycle PE activity and the
register contents.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numba import njit

from simulator.nbrefs import last_use

from .closed_form import OPERANDS
from .lowering import Lowered, operand_matrices

if TYPE_CHECKING:
    from workloads.ir import Conv2d, Gemm

_NAN = np.nan


class Operands(NamedTuple):
    """What the array reads and writes: H (moving right) and its valid mask, V (moving
    down: os), S (stationary: ws/is) and its mask, the output, and the folds (``Lowered``:
    row fold, column fold, rows used, columns used)."""
    H: np.ndarray
    Hv: np.ndarray
    V: np.ndarray
    S: np.ndarray
    Sv: np.ndarray
    out: np.ndarray
    folds: np.ndarray


class Regs(NamedTuple):
    """Every PE's registers: the one moving right (``h_*``: value, fold, step) and the one
    moving down (``v_*``); os: the accumulator (value, MACs summed, fold), the shadow
    register of the drain chain (value, fold, output row) and each column's drain; ws/is:
    the two stationary buffers (value, fold, uses left, the element of S held (-1: free),
    used up this cycle)."""
    h_val: np.ndarray
    h_f: np.ndarray
    h_t: np.ndarray
    v_val: np.ndarray
    v_f: np.ndarray
    v_t: np.ndarray
    acc: np.ndarray
    cnt: np.ndarray
    acc_f: np.ndarray
    sh_val: np.ndarray
    sh_f: np.ndarray
    sh_m: np.ndarray
    drain_left: np.ndarray
    drain_len: np.ndarray
    wb_val: np.ndarray
    wb_f: np.ndarray
    wb_uses: np.ndarray
    wb_sr: np.ndarray
    wb_sc: np.ndarray
    wb_done: np.ndarray


class Trace(NamedTuple):
    """What a recording keeps per cycle (see ``_execute``)."""
    active: np.ndarray
    h: np.ndarray
    v: np.ndarray
    s: np.ndarray
    val: np.ndarray
    idx: np.ndarray
    mac: np.ndarray
    out: np.ndarray
    out_val: np.ndarray
    pl: np.ndarray
    pl_val: np.ndarray


# the controller's state: the fold whose stream started last + 1, the fold being preloaded
# and its rows preloaded, the outputs done and the cycle of the last, whether a buffer was
# used up this cycle, an invariant broken this cycle (``ERRORS``: 0 none); and what it
# counts (``C_*``)
K_STARTED, K_PL_FOLD, K_PL_ROW, K_OUTPUTS, K_LAST_EMIT, K_ANY_DONE, K_ERROR = range(7)
# (the per-PE helpers flag a broken invariant rather than raise: a raise inside them is an
# error path that keeps numba counting references to every array they touch, per PE --
# ten times the cycle loop's time)
ERRORS = ("", "operands of different folds or steps met in a PE",
          "result met an occupied shadow register", "stationary operand of the wrong fold")
C_H_READS, C_V_READS, C_S_READS, C_OUT_WRITES, C_OUT_READS, C_MACS = range(6)


@njit(cache=True, nogil=True)
def _new_regs(Ra, Ca):
    """Every PE's registers, empty (a fold of -1: no operand)."""
    pe, buf = (Ra, Ca), (2, Ra, Ca)
    return Regs(np.zeros(pe), -np.ones(pe, np.int64), np.zeros(pe, np.int64),
                np.zeros(pe), -np.ones(pe, np.int64), np.zeros(pe, np.int64),
                np.zeros(pe), np.zeros(pe, np.int64), -np.ones(pe, np.int64),
                np.zeros(pe), -np.ones(pe, np.int64), np.zeros(pe, np.int64),
                np.zeros(Ca, np.int64), np.zeros(Ca, np.int64),
                np.zeros(buf), -np.ones(buf, np.int64), np.zeros(buf, np.int64),
                -np.ones(buf, np.int64), -np.ones(buf, np.int64), np.zeros(buf, np.bool_))


@njit(cache=True, nogil=True, error_model='numpy')
def _run(os_mode, ops, R, C, T, record, trace, os_gap_override):
    """The array cycle by cycle until every output has left it: (cycles, counts
    (``C_*``), each fold's stream start). Each cycle: the buffers used up last cycle
    freed, the controller starts the next fold's stream (``_control``), the preload chain
    shifts (ws/is, ``_preload``) or the drain chains emit (os, ``_drain``), operands move
    a PE right and down and enter at the edges (``_move``), the PEs compute
    (``_compute``)."""
    folds = ops.folds
    F = folds.shape[0]
    Ra = min(R, folds[:, 2].max())
    Ca = min(C, folds[:, 3].max())
    n_rec = trace.active.shape[0] if record else 0
    g = _new_regs(Ra, Ca)
    k = np.zeros(7, np.int64)
    pl_done = -np.ones(F, np.int64)
    s = -np.ones(F, np.int64)            # each fold's stream start
    inj_r = np.zeros(Ra, np.int64)       # fold whose stream row r injects next
    inj_c = np.zeros(Ca, np.int64)
    counts = np.zeros(6, np.int64)
    outputs_expected = 0
    limit = 16
    for f in range(F):
        outputs_expected += folds[f, 2] * folds[f, 3] if os_mode else folds[f, 3] * T
        limit += T + 4 * (R + C) + 4
    t = 0
    while k[K_OUTPUTS] < outputs_expected:
        if t > limit:
            raise RuntimeError("systolic array deadlocked")
        rec = t < n_rec
        if k[K_ANY_DONE]:
            _release(g)
            k[K_ANY_DONE] = 0
        _control(t, os_mode, T, folds, s, pl_done, k, os_gap_override)
        if not os_mode and k[K_PL_FOLD] < F:
            _preload(t, rec, T, R, C, ops, g, k, pl_done, counts, trace)
        if os_mode:
            _drain(t, rec, T, C, ops, g, k, counts, trace)
        _move(t, os_mode, T, R, C, ops, g, k, s, inj_r, inj_c, counts)
        _compute(t, rec, os_mode, T, R, C, ops, g, k, counts, trace)
        if k[K_ERROR]:
            raise RuntimeError(ERRORS[k[K_ERROR]])
        t += 1
    return k[K_LAST_EMIT] + 1, counts, s


@njit(cache=True, nogil=True, inline="always")
def _release(g):
    """The stationary buffers used up last cycle shown free."""
    wb_done, wb_sr, wb_sc = g.wb_done, g.wb_sr, g.wb_sc
    for bb in range(2):
        for r in range(wb_done.shape[1]):
            for c in range(wb_done.shape[2]):
                if wb_done[bb, r, c]:
                    wb_sr[bb, r, c] = -1
                    wb_sc[bb, r, c] = -1
                    wb_done[bb, r, c] = False
    last_use((g,))


@njit(cache=True, nogil=True, inline="always")
def _control(t, os_mode, T, folds, s, pl_done, k, os_gap_override):
    """The controller: the next fold's stream starts where the one before has had its gap
    (T; os: the rule ``max(T, 2 ru - 1)``) and (ws/is) its preload has settled."""
    started = k[K_STARTED]
    if started < folds.shape[0]:
        ok = True
        if started > 0:
            prev = started - 1
            gap = T
            if os_mode:
                gap = max(T, 2 * folds[prev, 2] - 1) if os_gap_override < 0 else os_gap_override
            if t < s[prev] + gap:
                ok = False
        if not os_mode and (pl_done[started] < 0 or pl_done[started] >= t):
            ok = False
        if ok:
            s[started] = t
            k[K_STARTED] = started + 1
    last_use((folds, s, pl_done, k))


@njit(cache=True, nogil=True, inline="always")
def _preload(t, rec, T, R, C, ops, g, k, pl_done, counts, trace):
    """ws/is: the preload chain shifts a row down its buffer unless a row it writes is
    still in use; the fold's last row in, its buffer holds the fold for T uses."""
    f = k[K_PL_FOLD]
    pl_k = k[K_PL_ROW]
    folds, S = ops.folds, ops.S
    ru = folds[f, 2]
    cu = folds[f, 3]
    b = f % 2
    top = min(pl_k, ru - 1)
    wb_uses, wb_val, wb_sr, wb_sc, wb_f = g.wb_uses, g.wb_val, g.wb_sr, g.wb_sc, g.wb_f
    free = True
    for r in range(top + 1):
        for c in range(cu):
            if wb_uses[b, r, c] != 0:
                free = False
    if free:
        for r in range(top, 0, -1):
            for c in range(cu):
                wb_val[b, r, c] = wb_val[b, r - 1, c]
                wb_sr[b, r, c] = wb_sr[b, r - 1, c]
                wb_sc[b, r, c] = wb_sc[b, r - 1, c]
        rb = folds[f, 0] * R
        cb = folds[f, 1] * C
        src = rb + ru - 1 - pl_k
        for c in range(cu):
            wb_val[b, 0, c] = S[src, cb + c]
            wb_sr[b, 0, c] = src
            wb_sc[b, 0, c] = cb + c
            if ops.Sv[src, cb + c]:
                counts[C_S_READS] += 1
            if rec:
                trace.pl[t, c, 0] = src
                trace.pl[t, c, 1] = cb + c
                trace.pl[t, c, 2] = b
                trace.pl_val[t, c] = S[src, cb + c]
        pl_k += 1
        if pl_k == ru:
            for r in range(ru):
                for c in range(cu):
                    wb_f[b, r, c] = f
                    wb_uses[b, r, c] = T
            pl_done[f] = t
            k[K_PL_FOLD] = f + 1
            pl_k = 0
        k[K_PL_ROW] = pl_k
    last_use((ops, g, k, pl_done, counts, trace))


@njit(cache=True, nogil=True, inline="always")
def _drain(t, rec, T, C, ops, g, k, counts, trace):
    """os: the columns whose shadow chain is draining shift it down and emit its bottom
    result."""
    drain_left, drain_len, sh_f, sh_m, sh_val = g.drain_left, g.drain_len, g.sh_f, g.sh_m, g.sh_val
    out = ops.out
    for c in range(drain_left.shape[0]):
        if drain_left[c] > 0:
            n = drain_len[c]
            f = sh_f[n - 1, c]
            col = ops.folds[f, 1] * C + c
            out[sh_m[n - 1, c], col] = sh_val[n - 1, c]
            if rec:
                trace.out[t, n - 1, c, 0] = sh_m[n - 1, c]
                trace.out[t, n - 1, c, 1] = col
                trace.out[t, n - 1, c, 2] = 0
                trace.out[t, n - 1, c, 3] = T - 1
                trace.out_val[t, n - 1, c] = sh_val[n - 1, c]
            counts[C_OUT_WRITES] += 1
            k[K_OUTPUTS] += 1
            k[K_LAST_EMIT] = t
            for r in range(n - 1, 0, -1):
                sh_val[r, c] = sh_val[r - 1, c]
                sh_f[r, c] = sh_f[r - 1, c]
                sh_m[r, c] = sh_m[r - 1, c]
            sh_f[0, c] = -1
            drain_left[c] -= 1
    last_use((ops, g, k, counts, trace))


@njit(cache=True, nogil=True, inline="always")
def _move(t, os_mode, T, R, C, ops, g, k, s, inj_r, inj_c, counts):
    """Operands move one PE right and down; the started folds' streams enter at the left
    and top edges, skewed a cycle a row (column)."""
    folds, H, Hv, V = ops.folds, ops.H, ops.Hv, ops.V
    h_val, h_f, h_t, v_val, v_f, v_t = g.h_val, g.h_f, g.h_t, g.v_val, g.v_f, g.v_t
    started = k[K_STARTED]
    Ra, Ca = h_f.shape
    for r in range(Ra):
        for c in range(Ca - 1, 0, -1):
            f = h_f[r, c - 1]
            if f >= 0 and c < folds[f, 3]:
                h_val[r, c] = h_val[r, c - 1]
                h_f[r, c] = f
                h_t[r, c] = h_t[r, c - 1]
            else:
                h_f[r, c] = -1
        h_f[r, 0] = -1
        while inj_r[r] < started and t - r >= s[inj_r[r]] + T:
            inj_r[r] += 1
        f = inj_r[r]
        if f < started and t - r >= s[f] and r < folds[f, 2]:
            tau = t - r - s[f]
            row = folds[f, 0] * R + r
            h_val[r, 0] = H[row, tau]
            h_f[r, 0] = f
            h_t[r, 0] = tau
            if Hv[row, tau]:
                counts[C_H_READS] += 1
    for c in range(Ca):
        for r in range(Ra - 1, 0, -1):
            f = v_f[r - 1, c]
            if f >= 0 and r < folds[f, 2]:
                v_val[r, c] = v_val[r - 1, c]
                v_f[r, c] = f
                v_t[r, c] = v_t[r - 1, c]
            else:
                v_f[r, c] = -1
        v_f[0, c] = -1
        while inj_c[c] < started and t - c >= s[inj_c[c]] + T:
            inj_c[c] += 1
        f = inj_c[c]
        if f < started and t - c >= s[f] and c < folds[f, 3]:
            tau = t - c - s[f]
            if os_mode:
                v_val[0, c] = V[tau, folds[f, 1] * C + c]
                counts[C_V_READS] += 1
            else:
                v_val[0, c] = 0.0
            v_f[0, c] = f
            v_t[0, c] = tau
    last_use((ops, g, k, s, inj_r, inj_c, counts))


@njit(cache=True, nogil=True, inline="always")
def _compute(t, rec, os_mode, T, R, C, ops, g, k, counts, trace):
    """Each PE whose two moving registers hold operands of one fold and step multiplies
    them: os into its accumulator (``_accumulate``), ws/is into the partial sum moving
    down with its buffer's stationary operand (``_stream``)."""
    folds = ops.folds
    Ra, Ca = g.h_f.shape
    h_f, v_f, h_t, v_t, h_val, v_val = g.h_f, g.v_f, g.h_t, g.v_t, g.h_val, g.v_val
    acc, cnt, acc_f, sh_val, sh_f, sh_m = g.acc, g.cnt, g.acc_f, g.sh_val, g.sh_f, g.sh_m
    drain_left, drain_len = g.drain_left, g.drain_len
    wb_f, wb_uses, wb_val, wb_done = g.wb_f, g.wb_uses, g.wb_val, g.wb_done
    out, trace_out, trace_out_val = ops.out, trace.out, trace.out_val
    for r in range(Ra):
        for c in range(Ca):
            f = h_f[r, c]
            vf = v_f[r, c]
            active = False
            b = 0
            if f >= 0 and vf >= 0:
                if vf != f or v_t[r, c] != h_t[r, c]:
                    k[K_ERROR] = 1
                active = True
                counts[C_MACS] += 1
                if os_mode:
                    _accumulate(r, c, f, T, R, folds, acc, cnt, acc_f, h_val, v_val, sh_val,
                                sh_f, sh_m, drain_left, drain_len, k)
                else:
                    b = f % 2
                    _stream(t, rec, r, c, f, b, R, C, folds, out, wb_f, wb_uses, wb_val,
                            wb_done, h_val, v_val, v_t, v_f, k, counts, trace_out,
                            trace_out_val)
            if rec:
                _record_pe(t, r, c, f, vf, b, active, os_mode, T, R, C, folds, g, trace)
    last_use((ops, g, k, counts, trace))


@njit(cache=True, nogil=True)
def _accumulate(r, c, f, T, R, folds, acc, cnt, acc_f, h_val, v_val, sh_val, sh_f, sh_m,
                drain_left, drain_len, k):
    """os: a MAC into PE (r, c)'s accumulator; its T-th ends the sum: to the shadow
    register, and the fold's last row starts its column's drain. (Called, not inlined,
    and handed arrays, not ``Regs``: an inlined helper handed arrays in the loop over the
    PEs made numba count references to each of them, an atomic operation each, per PE
    and cycle -- six times the loop's time; a call borrows them. The helpers read the
    tables' arrays into locals once, before their loops, for the same reason.)"""
    acc[r, c] += h_val[r, c] * v_val[r, c]
    cnt[r, c] += 1
    acc_f[r, c] = f
    if cnt[r, c] == T:
        if sh_f[r, c] >= 0:
            k[K_ERROR] = 2
        sh_val[r, c] = acc[r, c]
        sh_f[r, c] = f
        sh_m[r, c] = folds[f, 0] * R + r
        acc[r, c] = 0.0
        cnt[r, c] = 0
        if r == folds[f, 2] - 1:
            drain_left[c] = folds[f, 2]
            drain_len[c] = folds[f, 2]
    last_use((folds, acc, cnt, acc_f, h_val, v_val, sh_val, sh_f, sh_m, drain_left, drain_len, k))


@njit(cache=True, nogil=True)
def _stream(t, rec, r, c, f, b, R, C, folds, out, wb_f, wb_uses, wb_val, wb_done, h_val, v_val,
            v_t, v_f, k, counts, trace_out, trace_out_val):
    """ws/is: a MAC into the partial sum moving down PE (r, c), with buffer ``b``'s
    stationary operand (its last use frees the buffer next cycle); the fold's last row
    adds the sum into the output. (Called, and handed arrays, as ``_accumulate``.)"""
    if wb_f[b, r, c] != f or wb_uses[b, r, c] <= 0:
        k[K_ERROR] = 3
    v_val[r, c] += h_val[r, c] * wb_val[b, r, c]
    wb_uses[b, r, c] -= 1
    if wb_uses[b, r, c] == 0:
        wb_f[b, r, c] = -1
        wb_done[b, r, c] = True
        k[K_ANY_DONE] = 1
    if r == folds[f, 2] - 1:
        col = folds[f, 1] * C + c
        if folds[f, 0] > 0:
            counts[C_OUT_READS] += 1
        out[v_t[r, c], col] += v_val[r, c]
        counts[C_OUT_WRITES] += 1
        k[K_OUTPUTS] += 1
        k[K_LAST_EMIT] = t
        v_f[r, c] = -1
        if rec:
            rb = folds[f, 0] * R
            trace_out[t, r, c, 0] = v_t[r, c]
            trace_out[t, r, c, 1] = col
            trace_out[t, r, c, 2] = rb
            trace_out[t, r, c, 3] = rb + r
            trace_out_val[t, r, c] = v_val[r, c]
    last_use((folds, out, wb_f, wb_uses, wb_val, wb_done, h_val, v_val, v_t, v_f, k, counts,
              trace_out, trace_out_val))


@njit(cache=True, nogil=True)
def _record_pe(t, r, c, f, vf, b, active, os_mode, T, R, C, folds, g, trace):
    """Recording: PE (r, c)'s activity and registers at cycle t, each register's value
    and the element it holds (row, column of H, V, S or out; for a sum, the first and
    last k it holds), and a MAC's operand registers."""
    trace.active[t, r, c] = active
    trace.h[t, r, c] = g.h_val[r, c] if g.h_f[r, c] >= 0 else _NAN
    trace.v[t, r, c] = g.v_val[r, c] if (g.v_f[r, c] >= 0 or active) else _NAN
    if os_mode:
        trace.s[t, r, c] = g.acc[r, c] if g.cnt[r, c] > 0 else _NAN
    else:
        trace.s[t, r, c] = g.wb_val[b, r, c] if active else _NAN
    if f >= 0:
        trace.val[t, r, c, 0] = g.h_val[r, c]
        trace.idx[t, r, c, 0, 0] = folds[f, 0] * R + r
        trace.idx[t, r, c, 0, 1] = g.h_t[r, c]
    if vf >= 0:
        trace.val[t, r, c, 1] = g.v_val[r, c]
        trace.idx[t, r, c, 1, 0] = g.v_t[r, c]
        trace.idx[t, r, c, 1, 1] = folds[vf, 1] * C + c
        if not os_mode:
            rb = folds[vf, 0] * R
            trace.idx[t, r, c, 1, 2] = rb
            trace.idx[t, r, c, 1, 3] = rb + r if active else rb + r - 1
    if os_mode:
        if g.cnt[r, c] > 0:
            a = g.acc_f[r, c]
            trace.val[t, r, c, 2] = g.acc[r, c]
            trace.idx[t, r, c, 2, 0] = folds[a, 0] * R + r
            trace.idx[t, r, c, 2, 1] = folds[a, 1] * C + c
            trace.idx[t, r, c, 2, 2] = 0
            trace.idx[t, r, c, 2, 3] = g.cnt[r, c] - 1
        if g.sh_f[r, c] >= 0:
            trace.val[t, r, c, 3] = g.sh_val[r, c]
            trace.idx[t, r, c, 3, 0] = g.sh_m[r, c]
            trace.idx[t, r, c, 3, 1] = folds[g.sh_f[r, c], 1] * C + c
            trace.idx[t, r, c, 3, 2] = 0
            trace.idx[t, r, c, 3, 3] = T - 1
        if active:
            trace.mac[t, r, c, 0] = 0
            trace.mac[t, r, c, 1] = 1
            trace.mac[t, r, c, 2] = 2 if g.cnt[r, c] > 0 else 3
    else:
        for bb in range(2):
            if g.wb_sr[bb, r, c] >= 0:
                trace.val[t, r, c, 2 + bb] = g.wb_val[bb, r, c]
                trace.idx[t, r, c, 2 + bb, 0] = g.wb_sr[bb, r, c]
                trace.idx[t, r, c, 2 + bb, 1] = g.wb_sc[bb, r, c]
        if active:
            trace.mac[t, r, c, 0] = 0
            trace.mac[t, r, c, 1] = 2 + b
            trace.mac[t, r, c, 2] = 1
    last_use((folds, g, trace))


# The four registers of a PE, by dataflow, and the operand (of C = A @ B) each holds: the
# register moving right, the one moving down, and two that stay (os: the accumulator and
# the shadow register of the drain chain; ws/is: the two stationary buffers).
REGISTERS = {"os": ("h", "v", "acc", "out"), "ws": ("h", "v", "w0", "w1"),
             "is": ("h", "v", "w0", "w1")}
HOLDS = {"os": "ABCC", "ws": "ACBB", "is": "BCAA"}
MAX_RECORD_CYCLES = 5000            # cycles a recording keeps
MAX_RECORD_PE_CYCLES = 1_000_000    # PEs x cycles a recording keeps (some 130 bytes each)


def _user_index(dataflow, idx, reg):
    """Index rows (..., 4) of the engine's matrices (H, V, S, out) as the user's: A[i, k],
    B[k, j], C[i, j] (with the first and last k a sum holds)."""
    swap = (dataflow == "ws" and reg == 0) or (dataflow == "is" and reg != 0)
    if swap:
        idx = idx.copy()
        idx[..., [0, 1]] = idx[..., [1, 0]]
    return idx


@dataclass(frozen=True)
class ArrayRun:
    """What the cycle-level array did: cycles, counts, the result and optional trace."""

    lowered: Lowered
    cycles: int
    macs: int
    sram_reads: dict
    sram_writes: dict
    fold_starts: np.ndarray
    output: np.ndarray          # O[M, N]
    reference: np.ndarray       # numpy / direct-convolution result
    trace: dict | None = None   # active, h, v, s: (cycles, R, C) arrays when recorded
    a: np.ndarray | None = None     # the operands run: A (M x K) and B (K x N)
    b: np.ndarray | None = None
    exact: bool = True          # integer operands: the output must equal the reference exactly

    @property
    def correct(self) -> bool:
        if self.exact:
            return bool(np.array_equal(self.output, self.reference))
        scale = float(np.abs(self.reference).max(initial=0.0))
        return bool(np.allclose(self.output, self.reference, rtol=1e-9, atol=1e-12 * max(1.0, scale)))

    @property
    def dataflow(self) -> str:
        return self.lowered.dataflow


def record_size(L: Lowered) -> tuple[int, int]:
    """(cycles, PEs x cycles) a recording of ``L`` keeps (the closed form's cycles)."""
    from .closed_form import fold_timing
    Sr, Sc, _ = L.spatial
    cycles = fold_timing(L)[2]
    return cycles, cycles * min(L.rows, Sr) * min(L.cols, Sc)


def run_array(op: Gemm | Conv2d, dataflow: str, rows: int, cols: int, seed: int = 0, record: bool = False,
              max_record_cycles: int = MAX_RECORD_CYCLES, _os_gap: int = -1) -> ArrayRun:
    """Run ``op`` on a ``rows`` x ``cols`` array cycle by cycle with random small-integer data.

    ``record=True`` keeps every PE's activity and registers per cycle (for arrays and
    layers small enough to look at: at most ``max_record_cycles`` cycles).
    """
    L = Lowered(op, dataflow, rows, cols)
    A, Av, B, ref = operand_matrices(op, seed)
    return _execute(L, A, Av, B, ref, record, max_record_cycles, _os_gap)


def run_matrices(a: np.ndarray, b: np.ndarray, dataflow: str, rows: int, cols: int,
                 record: bool = False, exact: bool = True,
                 max_record_cycles: int = MAX_RECORD_CYCLES) -> ArrayRun:
    """Run ``a @ b`` (float64 matrices, M x K and K x N) on a ``rows`` x ``cols`` array;
    ``exact``: the reference is the integers' exact product."""
    from workloads.ir import Gemm
    (M, K), N = a.shape, b.shape[1]
    L = Lowered(Gemm(M=M, N=N, K=K, name="A@B"), dataflow, rows, cols)
    if exact:
        ref = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.float64)
    else:
        ref = a @ b
    run = _execute(L, np.ascontiguousarray(a), np.ones(a.shape, dtype=bool),
                   np.ascontiguousarray(b), ref, record, max_record_cycles, -1)
    return replace(run, exact=exact)


def _execute(L: Lowered, A, Av, B, ref, record, max_record_cycles, os_gap) -> ArrayRun:
    dataflow, rows, cols = L.dataflow, L.rows, L.cols
    M, N, K = L.mnk
    folds = np.ascontiguousarray(L.folds)
    Sr, Sc, T = L.spatial
    dummy = np.zeros((1, 1))
    dummy_v = np.ones((1, 1), dtype=np.bool_)
    at, avt = np.ascontiguousarray(A.T), np.ascontiguousarray(Av.T)
    if dataflow == "os":
        H, Hv, V, S, Sv = A, Av, B, dummy, dummy_v
        out = np.zeros((M, N))
    elif dataflow == "ws":
        H, Hv, V, S, Sv = at, avt, dummy, B, np.ones_like(B, dtype=bool)
        out = np.zeros((M, N))
    else:
        H, Hv, V, S, Sv = B, np.ones_like(B, dtype=bool), dummy, at, avt
        out = np.zeros((N, M))
    ra, ca = min(rows, Sr), min(cols, Sc)
    n = min(max_record_cycles, record_size(L)[0]) if record else 1
    pe = (n, ra, ca) if record else (1, 1, 1)
    edge = (n, ca) if record else (1, 1)
    rec_active = np.zeros(pe, dtype=np.bool_)
    rec_h, rec_v, rec_s = (np.full(pe, np.nan) for _ in range(3))
    rec_val = np.full(pe + (4,), np.nan)
    rec_idx = np.full(pe + (4, 4), -1, dtype=np.int32)
    rec_mac = np.full(pe + (3,), -1, dtype=np.int8)
    rec_out = np.full(pe + (4,), -1, dtype=np.int32)
    rec_out_val = np.full(pe, np.nan)
    rec_pl = np.full(edge + (3,), -1, dtype=np.int32)
    rec_pl_val = np.full(edge, np.nan)
    cycles, counts, starts = _run(dataflow == "os", Operands(H, Hv, V, S, Sv, out, folds), rows,
                                  cols, T, record,
                                  Trace(rec_active, rec_h, rec_v, rec_s, rec_val, rec_idx,
                                        rec_mac, rec_out, rec_out_val, rec_pl, rec_pl_val), os_gap)
    if dataflow == "is":
        out = out.T
    roles = {"os": ("ifmap", "filter", None), "ws": ("ifmap", None, "filter"),
             "is": ("filter", None, "ifmap")}[dataflow]
    reads = dict.fromkeys(OPERANDS, 0)
    for name, k in zip(roles, (0, 1, 2)):
        if name:
            reads[name] += int(counts[k])
    reads["ofmap"] = int(counts[4])
    writes = {"ifmap": 0, "filter": 0, "ofmap": int(counts[3])}
    trace = None
    if record:
        k = min(cycles, n)
        idx = np.stack([_user_index(dataflow, rec_idx[:k, :, :, g], g) for g in range(4)], axis=3)
        mac = rec_mac[:k]
        if dataflow == "is":             # the left operand is B, the stationary one A
            mac = mac[..., [1, 0, 2]]
        pl = rec_pl[:k]
        if dataflow == "is":
            pl = pl[..., [1, 0, 2]]
        trace = {"active": rec_active[:k], "h": rec_h[:k], "v": rec_v[:k], "s": rec_s[:k],
                 # per register (REGISTERS[dataflow]) the value and the element held
                 "value": rec_val[:k], "index": idx,
                 # per MAC: the registers that held its A and B operands and its C sum
                 "mac": mac,
                 # per PE: the C element (a sum of k0..k1) leaving the array from it (the
                 # bottom row of the fold's tile, which uses fewer rows than the array's
                 # where the matrix ends) for the output SRAM
                 "out_index": _user_index(dataflow, rec_out[:k], 1), "out_value": rec_out_val[:k],
                 # the preload chain per column (ws/is): the element entering it, buffer
                 "preload_index": pl, "preload_value": rec_pl_val[:k]}
    return ArrayRun(L, int(cycles), int(counts[5]), reads, writes, starts, out, ref, trace,
                    a=A, b=B)

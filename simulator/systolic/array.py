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

import numpy as np
from numba import njit

from .closed_form import OPERANDS
from .lowering import Lowered, operand_matrices

_NAN = np.nan


@njit(cache=True, nogil=True)
def _run(os_mode, H, Hv, V, S, Sv, folds, R, C, T, out, record, rec_active, rec_h, rec_v, rec_s,
         rec_val, rec_idx, rec_mac, rec_out, rec_out_val, rec_pl, rec_pl_val, os_gap_override):
    F = folds.shape[0]
    Ra = min(R, folds[:, 2].max())
    Ca = min(C, folds[:, 3].max())
    n_rec = rec_active.shape[0] if record else 0
    h_val = np.zeros((Ra, Ca)); h_f = -np.ones((Ra, Ca), np.int64); h_t = np.zeros((Ra, Ca), np.int64)
    v_val = np.zeros((Ra, Ca)); v_f = -np.ones((Ra, Ca), np.int64); v_t = np.zeros((Ra, Ca), np.int64)
    # os state
    acc = np.zeros((Ra, Ca)); cnt = np.zeros((Ra, Ca), np.int64); acc_f = -np.ones((Ra, Ca), np.int64)
    sh_val = np.zeros((Ra, Ca)); sh_f = -np.ones((Ra, Ca), np.int64); sh_m = np.zeros((Ra, Ca), np.int64)
    drain_left = np.zeros(Ca, np.int64); drain_len = np.zeros(Ca, np.int64)
    # stationary state; wb_sr, wb_sc: the element of S a buffer holds (-1: free)
    wb_val = np.zeros((2, Ra, Ca)); wb_f = -np.ones((2, Ra, Ca), np.int64)
    wb_uses = np.zeros((2, Ra, Ca), np.int64)
    wb_sr = -np.ones((2, Ra, Ca), np.int64); wb_sc = -np.ones((2, Ra, Ca), np.int64)
    wb_done = np.zeros((2, Ra, Ca), np.bool_)   # used up this cycle: shown free from the next
    any_done = False
    pl_f = 0; pl_k = 0; pl_done = -np.ones(F, np.int64)
    # controller
    s = -np.ones(F, np.int64)
    started = 0
    inj_r = np.zeros(Ra, np.int64)   # fold whose stream row r injects next
    inj_c = np.zeros(Ca, np.int64)
    counts = np.zeros(6, np.int64)   # H reads, V reads, S reads, out writes, out reads, macs
    outputs_expected = 0
    for f in range(F):
        if os_mode:
            outputs_expected += folds[f, 2] * folds[f, 3]
        else:
            outputs_expected += folds[f, 3] * T
    outputs_done = 0
    last_emit = -1
    t = 0
    limit = 16
    for f in range(F):
        limit += T + 4 * (R + C) + 4
    while outputs_done < outputs_expected:
        if t > limit:
            raise RuntimeError("systolic array deadlocked")
        rec = t < n_rec
        if any_done:
            any_done = False
            for bb in range(2):
                for r in range(Ra):
                    for c in range(Ca):
                        if wb_done[bb, r, c]:
                            wb_sr[bb, r, c] = -1; wb_sc[bb, r, c] = -1
                            wb_done[bb, r, c] = False
        # 1. controller: start the next fold's stream
        if started < F:
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
                started += 1
        # 2. preload chain (ws/is): one shift per cycle unless a row it writes is busy
        if not os_mode and pl_f < F:
            g = pl_f
            ru = folds[g, 2]; cu = folds[g, 3]
            b = g % 2
            top = min(pl_k, ru - 1)
            free = True
            for r in range(top + 1):
                for c in range(cu):
                    if wb_uses[b, r, c] != 0:
                        free = False
            if free:
                for r in range(top, 0, -1):
                    for c in range(cu):
                        wb_val[b, r, c] = wb_val[b, r - 1, c]
                        wb_sr[b, r, c] = wb_sr[b, r - 1, c]; wb_sc[b, r, c] = wb_sc[b, r - 1, c]
                rb = folds[g, 0] * R; cb = folds[g, 1] * C
                src = rb + ru - 1 - pl_k
                for c in range(cu):
                    wb_val[b, 0, c] = S[src, cb + c]
                    wb_sr[b, 0, c] = src; wb_sc[b, 0, c] = cb + c
                    if Sv[src, cb + c]:
                        counts[2] += 1
                    if rec:
                        rec_pl[t, c, 0] = src; rec_pl[t, c, 1] = cb + c; rec_pl[t, c, 2] = b
                        rec_pl_val[t, c] = S[src, cb + c]
                pl_k += 1
                if pl_k == ru:
                    for r in range(ru):
                        for c in range(cu):
                            wb_f[b, r, c] = g
                            wb_uses[b, r, c] = T
                    pl_done[g] = t
                    pl_f += 1
                    pl_k = 0
        # 3. os drain: columns whose shadow chain is draining shift down and emit
        if os_mode:
            for c in range(Ca):
                if drain_left[c] > 0:
                    n = drain_len[c]
                    f = sh_f[n - 1, c]
                    col = folds[f, 1] * C + c
                    out[sh_m[n - 1, c], col] = sh_val[n - 1, c]
                    if rec:
                        rec_out[t, n - 1, c, 0] = sh_m[n - 1, c]; rec_out[t, n - 1, c, 1] = col
                        rec_out[t, n - 1, c, 2] = 0; rec_out[t, n - 1, c, 3] = T - 1
                        rec_out_val[t, n - 1, c] = sh_val[n - 1, c]
                    counts[3] += 1
                    outputs_done += 1
                    last_emit = t
                    for r in range(n - 1, 0, -1):
                        sh_val[r, c] = sh_val[r - 1, c]; sh_f[r, c] = sh_f[r - 1, c]
                        sh_m[r, c] = sh_m[r - 1, c]
                    sh_f[0, c] = -1
                    drain_left[c] -= 1
        # 4. move operands one PE right / down, inject at the edges
        for r in range(Ra):
            for c in range(Ca - 1, 0, -1):
                f = h_f[r, c - 1]
                if f >= 0 and c < folds[f, 3]:
                    h_val[r, c] = h_val[r, c - 1]; h_f[r, c] = f; h_t[r, c] = h_t[r, c - 1]
                else:
                    h_f[r, c] = -1
            h_f[r, 0] = -1
            while inj_r[r] < started and t - r >= s[inj_r[r]] + T:
                inj_r[r] += 1
            f = inj_r[r]
            if f < started and t - r >= s[f] and r < folds[f, 2]:
                tau = t - r - s[f]
                row = folds[f, 0] * R + r
                h_val[r, 0] = H[row, tau]; h_f[r, 0] = f; h_t[r, 0] = tau
                if Hv[row, tau]:
                    counts[0] += 1
        for c in range(Ca):
            for r in range(Ra - 1, 0, -1):
                f = v_f[r - 1, c]
                if f >= 0 and r < folds[f, 2]:
                    v_val[r, c] = v_val[r - 1, c]; v_f[r, c] = f; v_t[r, c] = v_t[r - 1, c]
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
                    counts[1] += 1
                else:
                    v_val[0, c] = 0.0
                v_f[0, c] = f; v_t[0, c] = tau
        # 5. compute
        for r in range(Ra):
            for c in range(Ca):
                f = h_f[r, c]
                vf = v_f[r, c]
                active = False
                b = 0
                if f >= 0 and vf >= 0:
                    if vf != f or v_t[r, c] != h_t[r, c]:
                        raise RuntimeError("operands of different folds or steps met in a PE")
                    active = True
                    counts[5] += 1
                    if os_mode:
                        acc[r, c] += h_val[r, c] * v_val[r, c]
                        cnt[r, c] += 1
                        acc_f[r, c] = f
                        if cnt[r, c] == T:
                            if sh_f[r, c] >= 0:
                                raise RuntimeError("result met an occupied shadow register")
                            sh_val[r, c] = acc[r, c]; sh_f[r, c] = f
                            sh_m[r, c] = folds[f, 0] * R + r
                            acc[r, c] = 0.0; cnt[r, c] = 0
                            if r == folds[f, 2] - 1:
                                drain_left[c] = folds[f, 2]
                                drain_len[c] = folds[f, 2]
                    else:
                        b = f % 2
                        if wb_f[b, r, c] != f or wb_uses[b, r, c] <= 0:
                            raise RuntimeError("stationary operand of the wrong fold")
                        v_val[r, c] += h_val[r, c] * wb_val[b, r, c]
                        wb_uses[b, r, c] -= 1
                        if wb_uses[b, r, c] == 0:
                            wb_f[b, r, c] = -1
                            wb_done[b, r, c] = True
                            any_done = True
                        if r == folds[f, 2] - 1:
                            col = folds[f, 1] * C + c
                            if folds[f, 0] > 0:
                                counts[4] += 1
                            out[v_t[r, c], col] += v_val[r, c]
                            counts[3] += 1
                            outputs_done += 1
                            last_emit = t
                            v_f[r, c] = -1
                            if rec:
                                rb = folds[f, 0] * R
                                rec_out[t, r, c, 0] = v_t[r, c]; rec_out[t, r, c, 1] = col
                                rec_out[t, r, c, 2] = rb; rec_out[t, r, c, 3] = rb + r
                                rec_out_val[t, r, c] = v_val[r, c]
                if rec:
                    rec_active[t, r, c] = active
                    rec_h[t, r, c] = h_val[r, c] if h_f[r, c] >= 0 else _NAN
                    rec_v[t, r, c] = v_val[r, c] if (v_f[r, c] >= 0 or active) else _NAN
                    if os_mode:
                        rec_s[t, r, c] = acc[r, c] if cnt[r, c] > 0 else _NAN
                    else:
                        rec_s[t, r, c] = wb_val[b, r, c] if active else _NAN
                    # every register: its value and the element it holds (row, column of
                    # H, V, S or out; for a sum, the first and last k it holds)
                    if f >= 0:
                        rec_val[t, r, c, 0] = h_val[r, c]
                        rec_idx[t, r, c, 0, 0] = folds[f, 0] * R + r
                        rec_idx[t, r, c, 0, 1] = h_t[r, c]
                    if vf >= 0:
                        rec_val[t, r, c, 1] = v_val[r, c]
                        rec_idx[t, r, c, 1, 0] = v_t[r, c]
                        rec_idx[t, r, c, 1, 1] = folds[vf, 1] * C + c
                        if not os_mode:
                            rb = folds[vf, 0] * R
                            rec_idx[t, r, c, 1, 2] = rb
                            rec_idx[t, r, c, 1, 3] = rb + r if active else rb + r - 1
                    if os_mode:
                        if cnt[r, c] > 0:
                            g = acc_f[r, c]
                            rec_val[t, r, c, 2] = acc[r, c]
                            rec_idx[t, r, c, 2, 0] = folds[g, 0] * R + r
                            rec_idx[t, r, c, 2, 1] = folds[g, 1] * C + c
                            rec_idx[t, r, c, 2, 2] = 0; rec_idx[t, r, c, 2, 3] = cnt[r, c] - 1
                        if sh_f[r, c] >= 0:
                            rec_val[t, r, c, 3] = sh_val[r, c]
                            rec_idx[t, r, c, 3, 0] = sh_m[r, c]
                            rec_idx[t, r, c, 3, 1] = folds[sh_f[r, c], 1] * C + c
                            rec_idx[t, r, c, 3, 2] = 0; rec_idx[t, r, c, 3, 3] = T - 1
                        if active:
                            rec_mac[t, r, c, 0] = 0; rec_mac[t, r, c, 1] = 1
                            rec_mac[t, r, c, 2] = 2 if cnt[r, c] > 0 else 3
                    else:
                        for bb in range(2):
                            if wb_sr[bb, r, c] >= 0:
                                rec_val[t, r, c, 2 + bb] = wb_val[bb, r, c]
                                rec_idx[t, r, c, 2 + bb, 0] = wb_sr[bb, r, c]
                                rec_idx[t, r, c, 2 + bb, 1] = wb_sc[bb, r, c]
                        if active:
                            rec_mac[t, r, c, 0] = 0; rec_mac[t, r, c, 1] = 2 + b
                            rec_mac[t, r, c, 2] = 1
        t += 1
    return last_emit + 1, counts, s


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


def run_array(op, dataflow: str, rows: int, cols: int, seed: int = 0, record: bool = False,
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
    dummy = np.zeros((1, 1)); dummy_v = np.ones((1, 1), dtype=np.bool_)
    if dataflow == "os":
        H, Hv, V, S, Sv = A, Av, B, dummy, dummy_v
        out = np.zeros((M, N))
    elif dataflow == "ws":
        H, Hv, V, S, Sv = np.ascontiguousarray(A.T), np.ascontiguousarray(Av.T), dummy, B, np.ones_like(B, dtype=bool)
        out = np.zeros((M, N))
    else:
        H, Hv, V, S, Sv = B, np.ones_like(B, dtype=bool), dummy, np.ascontiguousarray(A.T), np.ascontiguousarray(Av.T)
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
    cycles, counts, starts = _run(dataflow == "os", H, Hv, V, S, Sv, folds, rows, cols, T, out,
                                  record, rec_active, rec_h, rec_v, rec_s, rec_val, rec_idx,
                                  rec_mac, rec_out, rec_out_val, rec_pl, rec_pl_val, os_gap)
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

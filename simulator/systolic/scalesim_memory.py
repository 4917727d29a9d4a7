"""Replay of SCALE-Sim 3.0.0's memory model (stalls, buffer turnover, drains), for
``--mode scalesim`` where the closed forms of :mod:`.scalesim_mode` do not apply.

Written from the documented and measured behaviour (no SCALE-Sim code is used or copied).
One demand *line* is one cycle of the stall-free schedule; a layer has ``F x Lf`` lines,
folds in the order column fold outer, row fold inner. Lines are generated on the fly from
the operand geometry (no demand matrix is materialised), and serviced in order::

    stall = 0
    for every line i:
        cyc   = i + stall
        o_if  = ifmap buffer read (line, cyc)      # completion cycle; hit latency 1
        o_f   = filter buffer read (line, cyc)
        o_of  = ofmap buffer write(line, cyc)
        stall += max(o_if - cyc - 1, o_f - cyc - 1, o_of - cyc)
    drain what is left of the ofmap buffer

Read buffers (ifmap, filter):

* ``CALC`` (estimate bandwidth): never stalls. The valid addresses, in line order and
  left to right, are "new" when not seen since the start of the current epoch; an epoch
  ends after ``50 x floor(size/100)`` new addresses, and forgets everything. DRAM reads =
  number of new addresses.
* ``USER``: a double buffer over the *prefetch stream* (the operand blocks in the order
  they are fetched, duplicates and padding included), cut into fetch lines of ``bw``
  words and into sets of ``eps = ceil(size/100)`` valid entries. The active window is
  ``ceil(A/eps)`` consecutive sets (``A = ceil(size/2)``), fetched before the first line;
  a demanded address outside the window slides it (cyclically) by ``ceil(D/eps)`` sets
  (``D = size - A``), costing ``ceil(D/bw) x bw`` DRAM reads and ``ceil(D/bw) + 1`` cycles,
  timed back to back from the first fetch; a positive wait is counted twice.

OFMAP write buffer (both modes; drain bandwidth ``cols`` in CALC, the user bandwidth in
USER): each valid write takes a word; once fewer than ``A`` words are free the partial
line is committed and up to ``ceil(D/bw)`` committed lines drain, freeing their words at
once (a chunk's count only discounts the padding of its *last* line, so padding of an
earlier partial line counts as written); a write arriving while a drain is in flight with
no free word waits for the drain's end.

Batches stack images: ``P = N Eh Ew``, ifmap address ``n H W C + (y W + x) C + c``, pixel
rows ordered (n, ey, ex). Addresses are 0-based per operand (SCALE-Sim's offsets only
separate the operands, which live in separate buffers here).

Cost: one pass over the demand lines (generated on the fly, nothing per line is stored);
in USER mode one walk of each prefetch stream builds, per address, the ascending ids of
the sets holding it (CSR arrays, one int32 per distinct (address, set) pair), so a hit is
a binary search and a window slide costs O(1) -- not the words it refills. CALC keeps one
int32 epoch per operand element.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from simulator.arguments import show

from .scalesim_layer import SSLayer, spatial

# indices into the geometry vector g
_H, _W, _RF, _SF, _CH, _K, _ST, _EH, _EW, _P, _WN, _AR, _AC, _FR, _FC, _T, _LF, _DF = range(18)
_DATAFLOWS = {"os": 0, "ws": 1, "is": 2}


def _cdiv(a, b):
    return -(-a // b)


# ----------------------------------------------------------------------------- addresses
@njit(cache=True, nogil=True)
def _ifm(p, w, g):
    """Address of ifmap operand entry (pixel row p, window column w), -1 outside the input."""
    ehew = g[_EH] * g[_EW]
    n = p // ehew
    q = p - n * ehew
    ey = q // g[_EW]
    ex = q - ey * g[_EW]
    sc = g[_SF] * g[_CH]
    fy = w // sc
    rem = w - fy * sc
    fx = rem // g[_CH]
    c = rem - fx * g[_CH]
    y = ey * g[_ST] + fy
    x = ex * g[_ST] + fx
    if y < g[_H] and x < g[_W]:
        return ((n * g[_H] + y) * g[_W] + x) * g[_CH] + c
    return -1


@njit(cache=True, nogil=True)
def _demand(op, fr, fc, t, g, out):
    """Valid addresses of line t of fold (fr, fc) for op 0 (ifmap) / 1 (filter), left to
    right, into out; returns how many."""
    df, AR, AC, T = g[_DF], g[_AR], g[_AC], g[_T]
    P, K, Wn = g[_P], g[_K], g[_WN]
    n = 0
    if df == 0:                                   # os: both operands skewed, no preload
        if op == 0:
            for j in range(max(0, t - T + 1), min(AR - 1, t, P - fr * AR - 1) + 1):
                a = _ifm(fr * AR + j, t - j, g)
                if a >= 0:
                    out[n] = a
                    n += 1
        else:
            for j in range(max(0, t - T + 1), min(AC - 1, t, K - fc * AC - 1) + 1):
                out[n] = (fc * AC + j) * Wn + (t - j)
                n += 1
    elif df == 1:                                 # ws: filter block preloaded (flipped)
        if op == 0:
            for j in range(max(0, t - AR - T + 1), min(AR - 1, t - AR, Wn - fr * AR - 1) + 1):
                a = _ifm(t - j - AR, fr * AR + j, g)
                if a >= 0:
                    out[n] = a
                    n += 1
        elif t < AR:
            w = fr * AR + AR - 1 - t
            if w < Wn:
                for j in range(min(AC, K - fc * AC)):
                    out[n] = (fc * AC + j) * Wn + w
                    n += 1
    else:                                         # is: ifmap block preloaded (flipped)
        if op == 0:
            if t < AR:
                w = fr * AR + AR - 1 - t
                if w < Wn:
                    for j in range(min(AC, P - fc * AC)):
                        a = _ifm(fc * AC + j, w, g)
                        if a >= 0:
                            out[n] = a
                            n += 1
        else:
            for j in range(max(0, t - AR - T + 1), min(AR - 1, t - AR, Wn - fr * AR - 1) + 1):
                out[n] = (t - j - AR) * Wn + fr * AR + j
                n += 1
    return n


@njit(cache=True, nogil=True)
def _ofmap_count(fr, fc, t, g):
    """Number of valid ofmap writes of line t of fold (fr, fc)."""
    df, AR, AC, T = g[_DF], g[_AR], g[_AC], g[_T]
    P, K = g[_P], g[_K]
    if df == 0:
        lo = max(0, t - T - AR + 2)
        hi = min(AC - 1, t - T + 1, K - fc * AC - 1)
        n = 0
        for j in range(lo, hi + 1):               # flipped block: bottom PE row first
            if fr * AR + AR - 1 - (t - j - (T - 1)) < P:
                n += 1
        return n
    width = K - fc * AC if df == 1 else P - fc * AC
    lo = max(0, t - 2 * AR + 2 - T)
    hi = min(AC - 1, width - 1, t - 2 * AR + 1)
    return max(0, hi - lo + 1)


@njit(cache=True, nogil=True)
def _prefetch_elem(op, i, j, g):
    """Entry (i, j) of the prefetch matrix of op (-1: padding or outside the input)."""
    df, AR, AC, T = g[_DF], g[_AR], g[_AC], g[_T]
    P, K, Wn = g[_P], g[_K], g[_WN]
    if df == 0:
        blk = i // T
        ii = i - blk * T
        if op == 0:
            p = blk * AR + j
            return _ifm(p, ii, g) if p < P else -1
        k = blk * AC + j
        return k * Wn + ii if k < K else -1
    if df == 1:
        if op == 0:
            blk = i // T
            w = blk * AR + j
            return _ifm(i - blk * T, w, g) if w < Wn else -1
        blk = i // Wn
        k = blk * AC + j
        return k * Wn + (i - blk * Wn) if k < K else -1
    if op == 0:
        blk = i // Wn
        p = blk * AC + j
        return _ifm(p, i - blk * Wn, g) if p < P else -1
    blk = i // T
    w = blk * AR + j
    return (i - blk * T) * Wn + w if w < Wn else -1


@njit(cache=True, nogil=True)
def _advance(a, b, M, N, anti):
    """Next position of the prefetch walk: row-major (a=row, b=col) or anti-diagonal
    (a=diagonal, b=col ascending = row descending)."""
    if anti:
        if b < min(a, N - 1):
            return a, b + 1
        a += 1
        return a, max(0, a - M + 1)
    if b + 1 < N:
        return a, b + 1
    return a + 1, 0


@njit(cache=True, nogil=True)
def _occurrences(op, g, M, N, anti, eps, space):
    """Walk the prefetch stream of op: for every address, the ascending ids of the sets
    (of eps valid entries) holding it, as CSR (offs, occ); and the number of valid entries."""
    last = np.full(space, -1, np.int32)
    offs = np.zeros(space + 1, np.int64)
    end = M + N - 1 if anti else M
    for fill in range(2):
        if fill:
            for x in range(space):
                offs[x + 1] += offs[x]
            occ = np.empty(offs[space], np.int32)
            pos = offs[:space].copy()
            last[:] = -1
        a, b, nv = 0, 0, 0
        while a < end:
            v = _prefetch_elem(op, a - b if anti else a, b, g)
            if v >= 0:
                k = nv // eps
                if last[v] != k:
                    last[v] = k
                    if fill:
                        occ[pos[v]] = k
                        pos[v] += 1
                    else:
                        offs[v + 1] += 1
                nv += 1
            a, b = _advance(a, b, M, N, anti)
    return offs, occ, nv


@njit(cache=True, nogil=True)
def _in_window(offs, occ, a, s, nact, nl):
    """Is address a in one of the sets s, s+1, ..., s+nact-1 (mod nl)?"""
    lo, hi = offs[a], offs[a + 1]
    if lo == hi:
        raise RuntimeError("scalesim replay: address missing from its prefetch stream")
    e = s + nact
    if e > nl:                                     # the window wraps
        return occ[hi - 1] >= s or occ[lo] < e - nl
    while lo < hi:                                 # first set id >= s
        mid = (lo + hi) // 2
        if occ[mid] < s:
            lo = mid + 1
        else:
            hi = mid
    return lo < offs[a + 1] and occ[lo] < e


# ----------------------------------------------------------------------------- buffers
# USER read state: 0 window start (set id), 1 ready cycle, 2 DRAM reads, 3 eps, 4 n_sets,
#                  5 n_act, 6 n_pf, 7 bw, 8 fetch lines per refill
@njit(cache=True, nogil=True)
def _user_read(buf, n, cyc, offs, occ, st):
    """Returns the completion offset of the line (completes at cyc + offset)."""
    off = 1
    nl, nact, npf = st[4], st[5], st[6]
    for q in range(n):
        a = buf[q]
        if _in_window(offs, occ, a, st[0], nact, nl):
            continue
        ws = st[0]
        for _ in range(nl + 1):                    # slide until the address is in the window
            ws = (ws + npf) % nl
            st[2] += st[8] * st[7]
            st[1] += st[8] + 1
            pot = st[1] - (cyc + off)
            off += pot
            if pot > 0:
                off += pot                         # a positive wait counts twice (sic)
            if _in_window(offs, occ, a, ws, nact, nl):
                break
        st[0] = ws
    return off


# CALC read state: 0 epoch, 1 new addresses in the epoch, 2 epoch length (0: none), 3 DRAM reads
@njit(cache=True, nogil=True)
def _calc_read(buf, n, seen, st):
    for q in range(n):
        a = buf[q]
        if seen[a] != st[0]:
            seen[a] = st[0]
            st[3] += 1
            st[1] += 1
            if st[1] == st[2]:
                st[0] += 1
                st[1] = 0


# OFMAP write state: 0 free, 1 words in the open line, 2 committed lines, 3 first undrained
# line, 4 drain end, 5 DRAM writes, 6 A, 7 D, 8 bw, 9 fifo head, 10 fifo tail
# fifo: partial (padded) committed lines not yet drained: line index, padding
@njit(cache=True, nogil=True)
def _flush(st, fidx, fpad):
    if st[1] > 0:
        fidx[st[10]] = st[2]
        fpad[st[10]] = st[8] - st[1]
        st[10] += 1
        st[2] += 1
        st[1] = 0


@njit(cache=True, nogil=True)
def _drain(start, st, fidx, fpad):
    end = min(st[3] + (st[7] + st[8] - 1) // st[8], st[2])
    nch = end - st[3]
    pad_last = 0
    while st[9] < st[10] and fidx[st[9]] < end:
        if fidx[st[9]] == end - 1:
            pad_last = fpad[st[9]]
        st[9] += 1
    size = nch * st[8] - pad_last if nch > 0 else 0
    st[5] += size
    st[0] += size
    st[3] = end
    return start + nch - 1


@njit(cache=True, nogil=True)
def _write(n, cyc, st, fidx, fpad):
    cur = cyc
    for _ in range(n):
        st[1] += 1
        st[0] -= 1
        if st[1] == st[8]:
            st[2] += 1
            st[1] = 0
        if cur < st[4]:
            if st[0] <= 0:
                cur = st[4]
        elif st[0] < st[6]:
            _flush(st, fidx, fpad)
            st[4] = _drain(cur, st, fidx, fpad)
    return cur


# ----------------------------------------------------------------------------- service loop
@njit(cache=True, nogil=True)
def replay_loop(g, user, wst, ist, iseen, ioffs, iocc, fst, fseen, foffs, focc):
    """The service loop over all demand lines; returns the stall cycles. ist/fst are the
    read states of the mode; seen: CALC epochs per address; offs/occ: USER set ids."""
    AR, AC, Fr, Fc, Lf = g[_AR], g[_AC], g[_FR], g[_FC], g[_LF]
    wmax = max(AR, AC)
    ibuf = np.empty(wmax, np.int64)
    fbuf = np.empty(wmax, np.int64)
    cap = 1024
    fidx = np.empty(cap, np.int64)
    fpad = np.empty(cap, np.int64)
    stall = 0
    i = 0
    for fc in range(Fc):
        for fr in range(Fr):
            for t in range(Lf):
                cyc = i + stall
                ni = _demand(0, fr, fc, t, g, ibuf)
                nf = _demand(1, fr, fc, t, g, fbuf)
                if user:
                    si = _user_read(ibuf, ni, cyc, ioffs, iocc, ist) - 1
                    sf = _user_read(fbuf, nf, cyc, foffs, focc, fst) - 1
                else:
                    _calc_read(ibuf, ni, iseen, ist)
                    _calc_read(fbuf, nf, fseen, fst)
                    si = 0
                    sf = 0
                no = _ofmap_count(fr, fc, t, g)
                if wst[10] + no + 1 > cap:        # room for this line's partial lines
                    live = wst[10] - wst[9]
                    if live + no + 1 > cap // 2:
                        cap = 2 * (cap + no + 1)
                    nidx = np.empty(cap, np.int64)
                    npad = np.empty(cap, np.int64)
                    nidx[:live] = fidx[wst[9]:wst[10]]
                    npad[:live] = fpad[wst[9]:wst[10]]
                    fidx, fpad = nidx, npad
                    wst[9], wst[10] = 0, live
                so = _write(no, cyc, wst, fidx, fpad) - cyc
                stall += max(si, sf, so)
                i += 1
    # drain everything left
    if wst[10] + 1 > cap:
        nidx = np.empty(cap + 1, np.int64)
        npad = np.empty(cap + 1, np.int64)
        nidx[:cap] = fidx
        npad[:cap] = fpad
        fidx, fpad = nidx, npad
    _flush(wst, fidx, fpad)
    cycle = 0
    while wst[3] < wst[2]:
        cycle = _drain(cycle, wst, fidx, fpad) + 1
    return stall


# ----------------------------------------------------------------------------- wrapper
def _prefetch_shape(L: SSLayer, dataflow, op, rows, cols, Fr, Fc, T):
    """(M, N, anti-diagonal) of the prefetch matrix of op (0 ifmap, 1 filter)."""
    if dataflow == "os":
        return (Fr * T, rows, True) if op == 0 else (Fc * T, cols, True)
    if dataflow == "ws":
        return (Fr * T, rows, True) if op == 0 else (Fc * L.Wn, cols, False)
    return (Fc * L.Wn, cols, False) if op == 0 else (Fr * T, rows, True)


def replay(L: SSLayer, rows: int, cols: int, dataflow: str, hw) -> dict:
    """SCALE-Sim 3.0.0's stall cycles and DRAM counts (words) for layer L on a rows x cols
    array, replaying its buffers line by line."""
    if dataflow not in _DATAFLOWS:
        raise ValueError(f"dataflow {show(dataflow)}: allowed: os, ws, is")
    Sr, Sc, T = spatial(L, dataflow)
    Fr, Fc = _cdiv(Sr, rows), _cdiv(Sc, cols)
    Lf = T + rows + cols - 2 if dataflow == "os" else 2 * rows + cols + T - 2
    g = np.array([L.H, L.W, L.R, L.S, L.C, L.K, L.s, L.Eh, L.Ew, L.P, L.Wn, rows, cols,
                  Fr, Fc, T, Lf, _DATAFLOWS[dataflow]], dtype=np.int64)
    iface = hw.scalesim
    user = iface.bandwidth_mode == "USER"
    tot = {"ifmap": int(hw.ifmap_sram.size_bytes), "filter": int(hw.filter_sram.size_bytes),
           "ofmap": int(hw.ofmap_sram.size_bytes)}       # SCALE-Sim words are bytes
    space = {"ifmap": L.N * L.H * L.W * L.C, "filter": L.Wn * L.K}
    bws = {"ifmap": iface.ifmap_bandwidth_words_per_cycle,
           "filter": iface.filter_bandwidth_words_per_cycle}

    args = []
    none32, none64 = np.zeros(1, np.int32), np.zeros(1, np.int64)
    for op, name in enumerate(("ifmap", "filter")):
        size = tot[name]
        if user:
            M, N, anti = _prefetch_shape(L, dataflow, op, rows, cols, Fr, Fc, T)
            bw = int(bws[name])
            A = _cdiv(size, 2)
            D = size - A
            eps = _cdiv(size, 100)
            offs, occ, nv = _occurrences(op, g, M, N, anti, eps, space[name])
            nl = nv // eps + 1
            nact = min(_cdiv(A, eps), nl)
            npf = min(_cdiv(D, eps), nl - nact)
            if nact < nl and npf == 0:
                raise ValueError(f"{name} SRAM of {size} words has no prefetch half "
                                 "(SCALE-Sim would never finish)")
            first = min(_cdiv(A, bw), _cdiv(M * N, bw)) * bw   # active half, before line 0
            st = np.array([0, -1, first, eps, nl, nact, npf, bw, _cdiv(D, bw)], np.int64)
            args += [st, none32, offs, occ]
        else:
            st = np.array([0, 0, 50 * (size // 100), 0], np.int64)
            args += [st, np.full(space[name], -1, np.int32), none64, none32]

    of_bw = int(iface.ofmap_bandwidth_words_per_cycle) if user else cols
    A = _cdiv(tot["ofmap"], 2)
    wst = np.array([tot["ofmap"], 0, 0, 0, 0, 0, A, tot["ofmap"] - A, of_bw, 0, 0], np.int64)
    stall = replay_loop(g, user, wst, *args)
    i_reads = args[0][2] if user else args[0][3]
    f_reads = args[4][2] if user else args[4][3]
    return {"stall_cycles": int(stall),
            "dram_reads": {"ifmap": int(i_reads), "filter": int(f_reads), "ofmap": 0},
            "dram_writes": {"ifmap": 0, "filter": 0, "ofmap": int(wst[5])}}

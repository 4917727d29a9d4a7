"""The PTX interpreter: blocks in order, each block's warps round-robin between
barriers, each warp's 32 lanes in lockstep under a SIMT reconvergence stack.

``run`` (numba) executes a launch's blocks ``order[S[S_BLOCK]] .. order[block_hi - 1]``
(``order``: the linear block ids to run, in order; empty: every block, 0, 1, ...) until
they finish, an instruction budget runs out (it returns, keeping every warp's state, and the
next call resumes: the Python side checks for Ctrl-C and shows progress between calls),
the trace arrays fill up, or an error (an address outside every array, a misaligned
access, a store to read-only memory) stops it with the warp, lane and address in ``E``.
Its state is in named tables: ``Program`` (what it runs), ``Memory``, ``Warps``,
``Record`` (counts and the trace), ``Units`` (blocks together: the heap and the lines'
atomic units), and the vectors ``L`` (the launch, ``L_*``), ``S`` (the run, ``S_*``)
and ``E`` (an error, ``E_*``).

The SIMT stack is GPGPU-Sim's (Fermi's rule): each entry is (pc, reconvergence pc,
mask); a branch that splits a warp turns the top entry into the reconvergence entry
(or drops it where its reconvergence point is the same) and pushes the taken path and
then the fall-through path, which therefore runs first; an entry pops when it reaches
its reconvergence pc. Volta and later schedule threads independently (the compiler's
BSSY/BSYNC), which can interleave divergent paths differently: results differ only
for kernels whose lanes communicate without synchronising.

Memory is one byte buffer ``M``: the global window (module variables and the launch's
arrays, the valid ranges listed in ``regions``), then const, param, the running
block's shared memory and its threads' local memory. A generic address is its global
address; shared and local windows map as PTX's ``cvta`` says (isa.BASE onwards).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from simulator.kernelcode.alu import ERR_UNSUPPORTED, alu

# (constants tables imported by name, for numba: kept compact)
# isort: off
from simulator.kernelcode.isa import (
    BASE, F_A, F_B, F_C, F_D, F_D2, F_E, F_F, F_G, F_GN, F_OP, F_TY, F_X1, F_X2, F_X3, F_X4,
    OP_ACTIVEMASK, OP_ATOM, OP_BAR, OP_BRA, OP_CVTA, OP_EXIT, OP_LD, OP_NOP, OP_SHFL,
    OP_SPECIAL, OP_ST, OP_VOTE, S_CONST, S_GENERIC, S_GLOBAL, S_LOCAL, S_PARAM, S_SHARED, T_F32,
    T_F64, T_S8, T_S16, T_S32, T_S64, T_U8, T_U16, T_U32, T_U64)
# isort: on
from simulator.kernelcode.lanes import M32, MIN64, compare, ival, ult64
from simulator.simt.memory import first_pass_cycles, last_use

# launch description L
(L_GX, L_GY, L_GZ, L_BX, L_BY, L_BZ, L_NT, L_NW, L_NSLOTS, L_SH_OFF, L_SH_SIZE,
 L_LOC_OFF, L_LOC_SIZE, L_PAR_OFF, L_PAR_SIZE, L_CON_OFF, L_CON_SIZE, L_NSM, L_CARRY,
 L_RECORD, L_DYN_SMEM, L_NBLOCKS, L_DEPTH, L_SLOTS, L_SH_STRIDE) = range(25)
L_SIZE = 25
# run state S (blocks together: S_BLOCK counts the blocks finished, S_NEXT the started)
S_BLOCK, S_STARTED, S_EXEC, S_THREADS, S_EV, S_ADDR, S_NEXT, S_RESUME, S_DRAW = range(9)
S_SIZE = 9
# statuses
DONE, BUDGET, TRACE_FULL, ERROR = range(4)
# the timing T of blocks run together (cycles): an atomic's round trip, a global load's, a line's
# atomic unit on a request's first pass with 32 lanes (a CAS or exchange; other atomics) and
# with one (and on each further pass), a shared-memory access, the requests a line's unit
# queues in their order of arrival (0: all of them)
T_ATOM_LAT, T_LOAD_LAT, T_CAS, T_ATOM, T_LANE, T_SHARED, T_QUEUE = range(7)
T_SIZE = 7
HASH = 1 << 12                  # the table of lines' atomic units (blocks together)
# a fast-forwarded loop's pseudo-events in the trace (``Record.ev``'s pc column; see
# ``Loops``): MARK_PC - i, a back-edge of loop i (the next event starts a trip);
# SKIP_PC - i, loop i's next ``mask`` (the event's mask column) trips skipped here
MARK_PC = -2
SKIP_PC = -(1 << 40)
# ``Loops.cfg``: the trips a loop runs before it may be skipped, the trips left to run
# before its first lane's exit, the least trips in all a skipped loop has, the fewest
# trips worth skipping
CFG_K, CFG_MARGIN, CFG_TOTAL, CFG_SKIP = range(4)
KMAX = 1 << 40                  # trips beyond which a loop's end is not looked for
# errors E[0]
ERR_OOB, ERR_MISALIGNED, ERR_READONLY, ERR_DEPTH = 1, 2, 3, 4
E_CODE, E_PC, E_WARP, E_LANE, E_ADDR, E_BLOCK, E_SPACE = range(7)
W_RUN, W_BAR, W_DONE = range(3)


@njit(cache=True)
def _resolve(space, a, size, write, t, L, regions):
    """Buffer offset of state-space address ``a`` for thread ``t`` (warp-major over the
    resident blocks' slots: slot ``t // (32 x warps a block)``), or a negative error
    code (-ERR_*)."""
    if a % size != 0:
        return -ERR_MISALIGNED
    if space == S_GENERIC:
        off = a - BASE
        sh, shs, st = L[L_SH_OFF], L[L_SH_SIZE], L[L_SH_STRIDE]
        lo, los = L[L_LOC_OFF], L[L_LOC_SIZE]
        co, cos = L[L_CON_OFF], L[L_CON_SIZE]
        if L[L_SLOTS] == 1:        # one block at a time (no division on the hot path)
            if off >= sh and off < sh + shs:
                return off if off + size <= sh + shs else -ERR_OOB
        elif shs > 0 and off >= sh and off < sh + st * (L[L_SLOTS] - 1) + shs:
            return off if (off - sh) % st + size <= shs else -ERR_OOB
        if los > 0 and off >= lo and off < lo + los:
            return off + t * los if off + size <= lo + los else -ERR_OOB
        if cos > 0 and off >= co and off < co + cos:
            if write:
                return -ERR_READONLY
            return off if off + size <= co + cos else -ERR_OOB
        space = S_GLOBAL
    if space == S_GLOBAL:
        off = a - BASE
        for k in range(regions.shape[0]):
            if off >= regions[k, 0] and off + size <= regions[k, 1]:
                return off
        return -ERR_OOB
    if a < 0:
        return -ERR_OOB
    if space == S_SHARED:
        if a + size > L[L_SH_SIZE]:
            return -ERR_OOB
        if L[L_SLOTS] == 1:
            return L[L_SH_OFF] + a
        return L[L_SH_OFF] + t // (32 * L[L_NW]) * L[L_SH_STRIDE] + a
    if space == S_LOCAL:
        return L[L_LOC_OFF] + t * L[L_LOC_SIZE] + a if a + size <= L[L_LOC_SIZE] \
            else -ERR_OOB
    if write:
        return -ERR_READONLY
    if space == S_PARAM:
        return L[L_PAR_OFF] + a if a + size <= L[L_PAR_SIZE] else -ERR_OOB
    return L[L_CON_OFF] + a if a + size <= L[L_CON_SIZE] else -ERR_OOB


@njit(cache=True, inline="always")
def _load(M, M16, M32v, M64, off, size, ty):
    if size == 4:
        v = np.int64(M32v[off >> 2])
        return (v << 32) >> 32 if ty == T_S32 else v
    if size == 8:
        return M64[off >> 3]
    if size == 2:
        v = np.int64(M16[off >> 1])
        return (v << 48) >> 48 if ty == T_S16 else v
    v = np.int64(M[off])
    return (v << 56) >> 56 if ty == T_S8 else v


@njit(cache=True, inline="always")
def _store(M, M16, M32v, M64, off, size, v):
    if size == 4:
        M32v[off >> 2] = np.uint32(v & M32)
    elif size == 8:
        M64[off >> 3] = v
    elif size == 2:
        M16[off >> 1] = np.uint16(v & 0xFFFF)
    else:
        M[off] = np.uint8(v & 0xFF)


@njit(cache=True)
def _atomic(M, M32v, M64, MF32, MF64, off, ty, aop, v, fv, cmpv):
    """One lane's atomic read-modify-write at buffer offset ``off``; the old bits."""
    size = 8 if (ty == T_U64 or ty == T_F64 or ty == T_S64) else 4
    if size == 4:
        old = np.int64(M32v[off >> 2])
    else:
        old = M64[off >> 3]
    if ty == T_F32 or ty == T_F64:
        if ty == T_F32:
            x = np.float64(MF32[off >> 2])
        else:
            x = MF64[off >> 3]
        if aop == 0:
            if ty == T_F32:
                MF32[off >> 2] = np.float32(x + fv)
            else:
                MF64[off >> 3] = x + fv
            return old
        if aop == 3:   # exch
            new = v
        elif aop == 4:
            new = cmpv if old == (v & M32 if size == 4 else v) else old
        else:
            return -1
        if size == 4:
            M32v[off >> 2] = np.uint32(new & M32)
        else:
            M64[off >> 3] = new
        return old
    o = ival(old, ty)
    x = ival(v, ty)
    if aop == 0:
        new = o + x
    elif aop == 1 or aop == 2:
        less = ult64(x, o) if ty == T_U64 else x < o
        new = (x if less else o) if aop == 1 else (o if less else x)
    elif aop == 3:
        new = x
    elif aop == 4:
        new = ival(cmpv, ty) if o == x else o
    elif aop == 5:
        new = o & x
    elif aop == 6:
        new = o | x
    elif aop == 7:
        new = o ^ x
    elif aop == 8:
        new = 0 if (o & M32) >= (x & M32) else o + 1
    else:
        new = x if ((o & M32) == 0 or (o & M32) > (x & M32)) else o - 1
    if size == 4:
        M32v[off >> 2] = np.uint32(new & M32)
    else:
        M64[off >> 3] = new
    return old


@njit(cache=True)
def _special(which, l, w, b, L, S):
    t = w * 32 + l
    bx, by = L[L_BX], L[L_BY]
    gx, gy = L[L_GX], L[L_GY]
    if which == 0:
        return t % bx
    if which == 1:
        return (t // bx) % by
    if which == 2:
        return t // (bx * by)
    if which >= 3 and which <= 5:
        return L[L_BX + which - 3]
    if which == 6:
        return b % gx
    if which == 7:
        return (b // gx) % gy
    if which == 8:
        return b // (gx * gy)
    if which >= 9 and which <= 11:
        return L[L_GX + which - 9]
    if which == 12:
        return l
    if which == 13:
        return w
    if which == 14:
        return 64
    if which == 15:
        return b % L[L_NSM]
    if which == 16:
        return L[L_NSM]
    if which == 17:
        return 1 << l
    if which == 18:
        return (1 << l) - 1
    if which == 19:
        return (1 << (l + 1)) - 1
    if which == 20:
        return (~((1 << (l + 1)) - 1)) & M32
    if which == 21:
        return (~((1 << l) - 1)) & M32
    if which == 22 or which == 23 or which == 24:
        return S[S_EXEC]
    if which == 25:
        return L[L_DYN_SMEM]
    if which == 26:
        return L[L_SH_SIZE]
    return 32


@njit(cache=True)
def _shfl(row, R, base, mask, scratch):
    mode = row[F_X1]
    ca, cb, cc = base + 32 * row[F_A], base + 32 * row[F_B], base + 32 * row[F_C]
    cd = base + 32 * row[F_D]
    for l in range(32):
        scratch[l] = R[ca + l]
    for l in range(32):
        if not (mask >> l) & 1:
            continue
        bval = R[cb + l] & 31
        cval = R[cc + l]
        segmask = (cval >> 8) & 31
        maxlane = (l & segmask) | ((cval & 31) & ~segmask)
        minlane = l & segmask
        if mode == 0:
            j = l - bval
            ok = j >= maxlane
        elif mode == 1:
            j = l + bval
            ok = j <= maxlane
        elif mode == 2:
            j = l ^ bval
            ok = j <= maxlane
        else:
            j = minlane | (bval & ~segmask)
            ok = j <= maxlane
        if not ok:
            j = l
        R[cd + l] = scratch[j]
        if row[F_D2] >= 0:
            R[base + 32 * row[F_D2] + l] = 1 if ok else 0


@njit(cache=True)
def _vote(row, R, base, mask):
    mode, neg = row[F_X1], row[F_X2]
    ca = base + 32 * row[F_A]
    ballot = 0
    for l in range(32):
        if (mask >> l) & 1 and ((R[ca + l] != 0) != (neg != 0)):
            ballot |= 1 << l
    if mode == 0:
        r = 1 if ballot == mask else 0
    elif mode == 1:
        r = 1 if ballot != 0 else 0
    elif mode == 2:
        r = 1 if (ballot == mask or ballot == 0) else 0
    else:
        r = ballot
    cd = base + 32 * row[F_D]
    for l in range(32):
        if (mask >> l) & 1:
            R[cd + l] = r


@njit(cache=True)
def _start_block(slot, R, tmpl, M, L, stk, sp, wstat):
    """Block slot ``slot``'s warps at their first instruction, its shared memory and its
    threads' local memory zeroed."""
    nw, ns, nt = L[L_NW], L[L_NSLOTS], L[L_NT]
    span = ns * 32
    for wl in range(nw):
        w = slot * nw + wl
        R[w * span:(w + 1) * span] = tmpl
        n = min(32, nt - wl * 32)
        sp[w] = 0
        stk[w, 0, 0] = 0
        stk[w, 0, 1] = -1
        stk[w, 0, 2] = (1 << n) - 1
        wstat[w] = W_RUN
    sh = L[L_SH_OFF] + slot * L[L_SH_STRIDE]
    M[sh:sh + L[L_SH_SIZE]] = 0
    per = nw * 32 * L[L_LOC_SIZE]
    M[L[L_LOC_OFF] + slot * per:L[L_LOC_OFF] + (slot + 1) * per] = 0


@njit(cache=True)
def _home(a, w, L):
    """Generic address ``a`` of warp ``w`` as block slot 0 would see it: a slot's shared
    window moved onto slot 0's, so that a trace's shared addresses are every block's."""
    slot = w // L[L_NW]
    if slot == 0:
        return a
    lo = BASE + L[L_SH_OFF] + slot * L[L_SH_STRIDE]
    if a >= lo and a < lo + L[L_SH_SIZE]:
        return a - slot * L[L_SH_STRIDE]
    return a


@njit(cache=True, inline="always")
def _pop_converged(stk, sp, w):
    while sp[w] >= 0 and (stk[w, sp[w], 0] == stk[w, sp[w], 1] or stk[w, sp[w], 2] == 0):
        sp[w] -= 1


@njit(cache=True)
def _matrix(row, R, M, M16, M32v, M64, base, emask, w, b, L, regions, E, pc, ev_addr):
    """ldmatrix / stmatrix (.m8n8 .b16, x1/x2/x4, .trans): lanes 8m..8m+7 give matrix
    m's row addresses; lane l's register of matrix m holds row l/4, columns 2(l%4) and
    2(l%4)+1 (with .trans: column l/4 of rows 2(l%4) and 2(l%4)+1), low half first.
    The trace records each lane's row address (16 bytes a row, as LDSM / STSM read)."""
    op, space, off0, nmat, trans = row[F_OP], row[F_X1], row[F_X2], row[F_X3], row[F_X4] == 2
    ca = base + 32 * row[F_A]
    fields = (F_D, F_D2, F_C, F_E) if op == OP_LD else (F_B, F_C, F_E, F_F)
    if ev_addr.shape[0] > 0:
        for l in range(32):
            ev_addr[l] = _home(R[ca + l] + off0, w, L) if l < 8 * nmat else -1
    for m in range(nmat):
        reg = base + 32 * row[fields[m]]
        for l in range(32):
            if not (emask >> l) & 1:
                continue
            t = w * 32 + l
            if trans:
                a0 = R[ca + 8 * m + 2 * (l & 3)] + off0 + 2 * (l >> 2)
                a1 = R[ca + 8 * m + 2 * (l & 3) + 1] + off0 + 2 * (l >> 2)
                o0 = _resolve(space, a0, 2, op != OP_LD, t, L, regions)
                o1 = _resolve(space, a1, 2, op != OP_LD, t, L, regions)
                bad, addr = (o0, a0) if o0 < 0 else (o1, a1)
                if bad < 0:
                    E[E_CODE], E[E_PC], E[E_WARP], E[E_LANE] = -bad, pc, w, l
                    E[E_ADDR], E[E_BLOCK], E[E_SPACE] = addr, b, space
                    return ERROR
                if op == OP_LD:
                    R[reg + l] = (_load(M, M16, M32v, M64, o0, 2, T_U16)
                                  | (_load(M, M16, M32v, M64, o1, 2, T_U16) << 16))
                else:
                    _store(M, M16, M32v, M64, o0, 2, R[reg + l])
                    _store(M, M16, M32v, M64, o1, 2, R[reg + l] >> 16)
            else:
                a = R[ca + 8 * m + (l >> 2)] + off0 + 4 * (l & 3)
                o = _resolve(space, a, 4, op != OP_LD, t, L, regions)
                if o < 0:
                    E[E_CODE], E[E_PC], E[E_WARP], E[E_LANE] = -o, pc, w, l
                    E[E_ADDR], E[E_BLOCK], E[E_SPACE] = a, b, space
                    return ERROR
                if op == OP_LD:
                    R[reg + l] = _load(M, M16, M32v, M64, o, 4, T_U32)
                else:
                    _store(M, M16, M32v, M64, o, 4, R[reg + l])
    return 0


@njit(cache=True)
def _memory(row, R, RF32, RF64, M, M16, M32v, M64, MF32, MF64, base, emask, w, b, L,
            regions, E, pc, ev_addr):
    """ld / st / atom for the active lanes; 0 or ERROR (E filled)."""
    if row[F_X4] != 0 and row[F_OP] != OP_ATOM:
        return _matrix(row, R, M, M16, M32v, M64, base, emask, w, b, L, regions, E, pc,
                       ev_addr)
    op, ty, space, off0, vec = row[F_OP], row[F_TY], row[F_X1], row[F_X2], row[F_X3]
    size = 4
    if ty == T_U64 or ty == T_F64 or ty == T_S64:
        size = 8
    elif ty == T_U8 or ty == T_S8:
        size = 1
    elif ty == T_U16 or ty == T_S16:
        size = 2
    ca = base + 32 * row[F_A]
    fields = (F_D, F_D2, F_C, F_E) if op == OP_LD else (F_B, F_C, F_E, F_F)
    for l in range(32):
        if not (emask >> l) & 1:
            continue
        a = R[ca + l] + off0
        if ev_addr.shape[0] > 0:
            ev_addr[l] = _home(a, w, L) if space == S_GENERIC else a
        t = w * 32 + l
        for k in range(vec if op != OP_ATOM else 1):
            off = _resolve(space, a + k * size, size, op != OP_LD, t, L, regions)
            if off < 0:
                E[E_CODE], E[E_PC], E[E_WARP], E[E_LANE] = -off, pc, w, l
                E[E_ADDR], E[E_BLOCK], E[E_SPACE] = a + k * size, b, space
                return ERROR
            if op == OP_LD:
                R[base + 32 * row[fields[k]] + l] = _load(M, M16, M32v, M64, off, size, ty)
            elif op == OP_ST:
                _store(M, M16, M32v, M64, off, size, R[base + 32 * row[fields[k]] + l])
            else:
                cmpv = R[base + 32 * row[F_C] + l] if row[F_C] >= 0 else 0
                cv = base + 32 * row[F_B] + l
                fv = np.float64(RF32[2 * cv]) if ty == T_F32 else RF64[cv]
                old = _atomic(M, M32v, M64, MF32, MF64, off, ty, row[F_X3], R[cv], fv,
                              cmpv)
                if row[F_D] >= 0:
                    R[base + 32 * row[F_D] + l] = old
    return 0


@njit(cache=True)
def _before(ht, hw, i, j):
    return ht[i] < ht[j] or (ht[i] == ht[j] and hw[i] < hw[j])


@njit(cache=True)
def _push(ht, hw, hn, t, w):
    """Warp ``w`` ready at cycle ``t`` into the binary heap ``ht``/``hw`` of ``hn[0]``."""
    i = hn[0]
    hn[0] += 1
    ht[i], hw[i] = t, w
    while i > 0:
        p = (i - 1) // 2
        if not _before(ht, hw, i, p):
            break
        ht[i], ht[p] = ht[p], ht[i]
        hw[i], hw[p] = hw[p], hw[i]
        i = p


@njit(cache=True)
def _pop(ht, hw, hn):
    """(cycle, warp) of the earliest ready warp, taken off the heap."""
    t, w = ht[0], hw[0]
    hn[0] -= 1
    n = hn[0]
    ht[0], hw[0] = ht[n], hw[n]
    i = 0
    while True:
        lo, r = 2 * i + 1, 2 * i + 2
        m = i
        if lo < n and _before(ht, hw, lo, m):
            m = lo
        if r < n and _before(ht, hw, r, m):
            m = r
        if m == i:
            break
        ht[i], ht[m] = ht[m], ht[i]
        hw[i], hw[m] = hw[m], hw[i]
        i = m
    return t, w


@njit(cache=True)
def _atomic_lines(row, R, base, emask, L, lines):
    """The lines (128 bytes) a global atomic's active lanes hit, each with the most lanes
    on one of its words and its lanes: ``lines[k] = (line, most, lanes)`` for k < the
    count returned; 0 for an atomic on shared memory."""
    off0 = row[F_X2]
    ca = base + 32 * row[F_A]
    n = 0
    sh = BASE + L[L_SH_OFF]
    shend = sh + L[L_SH_STRIDE] * (L[L_SLOTS] - 1) + L[L_SH_SIZE]
    for l in range(32):
        if not (emask >> l) & 1:
            continue
        a = R[ca + l] + off0
        if row[F_X1] == S_SHARED or (row[F_X1] == S_GENERIC and a >= sh and a < shend):
            return 0
        line = a >> 7
        k = 0
        while k < n and lines[k, 0] != line:
            k += 1
        if k == n:
            lines[n, 0], lines[n, 1], lines[n, 2] = line, 0, 0
            n += 1
        same = 0                                  # lanes before l on l's word
        for j in range(l):
            if (emask >> j) & 1 and R[ca + j] + off0 == a:
                same += 1
        lines[k, 1] = max(lines[k, 1], same + 1)
        lines[k, 2] += 1
    return n


@njit(cache=True)
def _first_lanes(row, R, base, mask):
    """Of an atomic's lanes ``mask``, the first on each word: one pass at its lines."""
    ca = base + 32 * row[F_A]
    first = 0
    for l in range(32):
        if not (mask >> l) & 1:
            continue
        a = R[ca + l]
        j = 0
        while j < l and not ((first >> j) & 1 and R[ca + j] == a):
            j += 1
        if j == l:
            first |= 1 << l
    return first


@njit(cache=True)
def _trace_lanes(row, R, base, mask, w, L, rec):
    """The addresses of an atomic's lanes ``mask`` into its trace record ``rec`` (lanes
    applied later than the instruction's step)."""
    ca = base + 32 * row[F_A]
    for l in range(32):
        if (mask >> l) & 1:
            a = R[ca + l] + row[F_X2]
            rec[l] = _home(a, w, L) if row[F_X1] == S_GENERIC else a


@njit(cache=True)
def _serve(arrive, full, one, mode, nl, lines, busy_line, busy_t, qring, qhead):
    """A request's pass reaching ``nl`` lines (``lines[k] = (line, most lanes on one of
    its words, its lanes)``) at ``arrive`` waits for each line's unit, holding it
    ``first_pass_cycles`` (``mode`` 0), ``one`` (1: a further pass) or both and ``one``
    for each further lane on a word (2: the whole request at once); when the last is
    done. Each line's unit keeps the start cycles of its last requests (``qring``,
    ``qhead``) for ``_queue_full``."""
    done = arrive
    Q = qring.shape[1]
    for k in range(nl):
        h = lines[k, 0] & (HASH - 1)
        if busy_line[h] != lines[k, 0]:
            busy_line[h], busy_t[h], qhead[h] = lines[k, 0], 0.0, 0
        start = max(arrive, busy_t[h])
        if mode == 1:
            busy_t[h] = start + one
        else:
            busy_t[h] = start + first_pass_cycles(full, one, lines[k, 2]) + \
                (one * (lines[k, 1] - 1) if mode == 2 else 0.0)
        qring[h, qhead[h] % Q] = start
        qhead[h] += 1
        done = max(done, busy_t[h])
    return done


@njit(cache=True)
def _queue_full(arrive, nl, lines, busy_line, qring, qhead, Q):
    """(-1, -1) where each of the ``nl`` lines' units has fewer than ``Q`` requests
    waiting at ``arrive`` (``Q`` 0: no bound); else the cycle the fullest of them starts
    the oldest of its last ``Q`` (one more fits then) and its slot in the table."""
    slot, hs = -1.0, -1
    if Q <= 0:
        return slot, hs
    for k in range(nl):
        h = lines[k, 0] & (HASH - 1)
        if busy_line[h] != lines[k, 0] or qhead[h] < Q:
            continue
        oldest = qring[h, qhead[h] % Q]
        # (a held request's token comes back at ``slot - half`` and arrives at that plus
        # half: a rounding short of the slot itself, which must count as arrived -- or
        # it is held again at the same slot, for ever)
        if oldest > arrive + 1e-9 * max(1.0, arrive) and oldest > slot:
            slot, hs = oldest, h
    return slot, hs


@njit(cache=True)
def _hold(w, h, slot, T, pools, pnext, ht, hw, hn, nwt):
    """Warp ``w``'s request waits beyond the full queue of unit ``h`` (``pools[0, h]``
    the first of those waiting, ``pnext`` the next, ``pools[1, h]`` how many); the unit
    takes one of them at ``slot`` (its token on the heap: warp number ``nwt + h``)."""
    pnext[w] = pools[0, h]
    pools[0, h] = w
    pools[1, h] += 1
    if pools[2, h] == 0:
        pools[2, h] = 1
        _push(ht, hw, hn, slot - 0.5 * T[T_ATOM_LAT], nwt + h)


@njit(cache=True)
def _take(h, S, pools, pnext):
    """One of the requests waiting beyond unit ``h``'s queue, drawn (``_draw``), taken
    off its list."""
    k = int(_draw(S) * pools[1, h])
    prev, u = -1, pools[0, h]
    for _ in range(k):
        prev, u = u, pnext[u]
    if prev < 0:
        pools[0, h] = pnext[u]
    else:
        pnext[prev] = pnext[u]
    pools[1, h] -= 1
    return u


@njit(cache=True)
def _rearm(arrive, nl, lines, T, qring, qhead, pools, ht, hw, hn, nwt):
    """After a request got into the ``nl`` lines' queues at ``arrive``: a unit with
    requests still waiting beyond its queue and no token on the heap gets one for when
    its next place opens."""
    Q = int(T[T_QUEUE])
    for k in range(nl):
        h = lines[k, 0] & (HASH - 1)
        if pools[1, h] > 0 and pools[2, h] == 0:
            nxt = arrive
            if qhead[h] >= Q:
                nxt = max(arrive, qring[h, qhead[h] % Q])
            pools[2, h] = 1
            _push(ht, hw, hn, nxt - 0.5 * T[T_ATOM_LAT], nwt + h)


@njit(cache=True)
def _draw(S):
    """A deterministic draw in [0, 1) (splitmix64 of the run's count of draws): the order
    in which requests waiting beyond a line's queue get in."""
    x = np.uint64(S[S_DRAW]) * np.uint64(0x9E3779B97F4A7C15)
    S[S_DRAW] += 1
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    x = x ^ (x >> np.uint64(31))
    return float(x >> np.uint64(11)) / 9007199254740992.0


# ---------------------------------------------------------------------------------------
# The run's state, in named tables (numba reads a NamedTuple of arrays as one argument)

class Program(NamedTuple):
    """What a run executes: the decoded rows (``decode.Program.code``), a warp's register
    file at its start (its constant slots filled), the global windows' valid ranges, and
    the linear ids of the blocks to run (empty: every block, in order)."""
    code: np.ndarray
    tmpl: np.ndarray
    regions: np.ndarray
    order: np.ndarray


class Memory(NamedTuple):
    """The emulated memory: one byte buffer (see the module's docstring) and its views as
    16-, 32- and 64-bit words and as float32 and float64."""
    M: np.ndarray
    M16: np.ndarray
    M32v: np.ndarray
    M64: np.ndarray
    MF32: np.ndarray
    MF64: np.ndarray


def new_memory(M) -> Memory:
    """The views of byte buffer ``M`` (its size a multiple of 8)."""
    return Memory(M, M.view(np.uint16), M.view(np.uint32), M.view(np.int64),
                  M.view(np.float32), M.view(np.float64))


class Warps(NamedTuple):
    """The resident warps (``L[L_SLOTS]`` blocks' worth): registers (``nslots`` x 32
    cells a warp of 64 bits, and their views as float32 pairs and float64), SIMT stacks
    (pc, reconvergence pc, mask) and their tops, states (``W_*``), clocks (blocks
    together), and the block each slot holds."""
    R: np.ndarray
    RF32: np.ndarray
    RF64: np.ndarray
    stk: np.ndarray
    sp: np.ndarray
    wstat: np.ndarray
    clock: np.ndarray
    slot_block: np.ndarray


class Record(NamedTuple):
    """What a run counts and records: executions of each row (warps, threads); with
    ``L[L_RECORD]`` the events (block x warps + warp, pc, mask, address row) and the
    address rows (32 lane addresses)."""
    wcount: np.ndarray
    tcount: np.ndarray
    ev: np.ndarray
    ev_addr: np.ndarray


class Loops(NamedTuple):
    """Fast-forwarding (blocks one after another; ``cfg[CFG_K]`` 0 or no loop: off):
    ``loops.table``'s rows (``latch_loop``, ``setp_loop``, ``lp``), and per warp and loop
    its full back-edges in a row (``trips``; 0 once it leaves or diverges), its last
    trip's length in instructions and its instruction count at its last back-edge (a
    steady trip runs as many as the one before), whether it was skipped this time round
    (``done``); per warp its instructions (``wexec``), the loop whose trips its
    snapshots follow (``owner``, -1: none), its registers at that loop's last back-edge
    (``snapR``) and their change over the trip before (``snapD``), the controlling
    setp's two operands in its last three trips (``opv``, a ring by trip; ``opt`` the
    trip each holds); per loop with a barrier, its block's decision (``blk``: block,
    trip, trips skipped), so that the block's warps skip alike."""
    latch_loop: np.ndarray
    setp_loop: np.ndarray
    exit_loop: np.ndarray
    lp: np.ndarray
    cfg: np.ndarray
    trips: np.ndarray
    plen: np.ndarray
    at_exec: np.ndarray
    done: np.ndarray
    wexec: np.ndarray
    owner: np.ndarray
    snapR: np.ndarray
    snapD: np.ndarray
    opv: np.ndarray
    opt: np.ndarray
    blk: np.ndarray


def new_loops(table, cfg, warps: int, nslots: int) -> Loops:
    """The fast-forwarding tables for ``warps`` warps of ``nslots`` register slots
    (``table``: ``loops.table``'s; ``cfg``: ``CFG_*``, K 0 for none)."""
    nl = table.lp.shape[0] if cfg[CFG_K] > 0 else 0
    nw = warps if nl else 0
    ns = nslots * 32 if nl else 0
    blk = np.full((nl, 3), -1, np.int64)
    none = np.full(table.latch_loop.shape[0], -1, np.int64)
    return Loops(table.latch_loop if nl else none, table.setp_loop if nl else none,
                 table.exit_loop if nl else none, table.lp, np.asarray(cfg, np.int64),
                 np.zeros((nw, nl), np.int64),
                 np.zeros((nw, nl), np.int64), np.zeros((nw, nl), np.int64),
                 np.zeros((nw, nl), np.int64), np.zeros(nw, np.int64),
                 np.full(nw, -1, np.int64), np.zeros((nw, ns), np.int64),
                 np.zeros((nw, ns), np.int64), np.zeros((nw, 3, 2, 32), np.int64),
                 np.full((nw, 3), -1, np.int64), blk)


@njit(cache=True)
def _ff_operands(w, i, row, R, base, lo):
    """Warp ``w`` runs loop ``i``'s controlling setp (``row``): its two operands, each
    lane's, kept for the trip it is in."""
    c = lo.trips[w, i]
    k = c % 3
    lo.opt[w, k] = c
    ca, cb = base + 32 * row[F_A], base + 32 * row[F_B]
    for l in range(32):
        lo.opv[w, k, 0, l] = R[ca + l]
        lo.opv[w, k, 1, l] = R[cb + l]


@njit(cache=True)
def _ff_setp_alu(w, i, row, R, RF32, RF64, base, emask, carry, lo):
    """Loop ``i``'s controlling setp: its operands kept (``_ff_operands``), then run."""
    _ff_operands(w, i, row, R, base, lo)
    return alu(row, R, RF32, RF64, base, emask, carry)


@njit(cache=True)
def _pred_at(x1, ty, a, b):
    x, y = ival(a, ty), ival(b, ty)
    if ty == T_U64:
        x, y = x ^ MIN64, y ^ MIN64
    return compare(x1, x, y, False)


@njit(cache=True)
def _fits(v, ty):
    """Whether ``v`` stands in a register of type ``ty`` as itself (no wrap)."""
    if ty == T_U64:
        return v >= 0
    return ival(v, ty) == v


@njit(cache=True)
def _lane_trips_left(x1, ty, cont, a, da, b, db):
    """The first k >= 1 at which setp ``x1`` of a + k da and b + k db is not ``cont``
    (the trip that leaves the loop); -1 where it is not found (never, or past KMAX,
    or where the operands would wrap)."""
    k = -1
    if x1 == 0 or x1 == 1 or x1 == 10 or x1 == 11:       # eq, ne: one k, if any
        e = da - db
        dd = a - b
        if e != 0 and dd % e == 0 and -dd // e >= 1 and (x1 % 10 == 1) == (cont == 1):
            k = -dd // e
    elif _pred_at(x1, ty, a + da, b + db) != cont:
        k = 1
    else:
        lo, hi = 1, 2
        while hi <= KMAX and _pred_at(x1, ty, a + hi * da, b + hi * db) == cont:
            lo, hi = hi, 2 * hi
        if hi <= KMAX:
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if _pred_at(x1, ty, a + mid * da, b + mid * db) == cont:
                    lo = mid
                else:
                    hi = mid
            k = hi
    if k > 0 and not (_fits(a + k * da, ty) and _fits(b + k * db, ty) and _fits(a, ty)
                      and _fits(b, ty)):
        k = -1
    return k


@njit(cache=True)
def _trips_left(w, i, c, mask, code, lo):
    """Trips of loop ``i`` after warp ``w``'s trip ``c`` until its first lane of ``mask``
    leaves it, from its controlling setp's operands in trips c - 2 .. c (each lane's
    step alike in both trips); -1 where that does not say."""
    ring = lo.opv
    s0, s1, s2 = (c - 3) % 3, (c - 2) % 3, (c - 1) % 3
    if lo.opt[w, s0] != c - 3 or lo.opt[w, s1] != c - 2 or lo.opt[w, s2] != c - 1:
        return -1
    row = code[lo.lp[i, 2]]
    x1, ty, cont = row[F_X1], row[F_TY], lo.lp[i, 3]
    best = -1
    for l in range(32):
        if not (mask >> l) & 1:
            continue
        a0, a1, a2 = ring[w, s0, 0, l], ring[w, s1, 0, l], ring[w, s2, 0, l]
        b0, b1, b2 = ring[w, s0, 1, l], ring[w, s1, 1, l], ring[w, s2, 1, l]
        if a2 - a1 != a1 - a0 or b2 - b1 != b1 - b0:
            return -1
        k = _lane_trips_left(x1, ty, cont, a2, a2 - a1, b2, b2 - b1)
        if k < 0:
            return -1
        if best < 0 or k < best:
            best = k
    return best


@njit(cache=True)
def _ff_backedge(w, i, b, mask, base, R, code, lo, rec, S, record, block_warp):
    """Warp ``w`` (of block ``b``) takes loop ``i``'s back-edge with every lane of
    ``mask``: a trip counted; from ``CFG_K - 2`` trips its registers followed; from
    ``CFG_K`` on, where its trips run alike (as many instructions, every operand of the
    controlling setp stepping evenly) and the loop has at least ``CFG_TOTAL`` trips,
    the trips up to ``CFG_MARGIN`` before its first lane's exit are skipped: each
    register that stepped alike in the last two trips moves by its step times the trips
    skipped (``SKIP_PC`` in the trace). With a barrier in the loop, the block's first
    warp there decides for all of its warps."""
    cfg = lo.cfg
    K = cfg[CFG_K]
    lo.trips[w, i] += 1
    c = lo.trips[w, i]
    length = lo.wexec[w] - lo.at_exec[w, i]
    steady = length == lo.plen[w, i]
    lo.plen[w, i] = length
    lo.at_exec[w, i] = lo.wexec[w]
    if lo.done[w, i] == 0 and c >= K - 2 and lo.owner[w] < 0:
        lo.owner[w] = i
    if lo.done[w, i] == 0 and lo.owner[w] == i:
        if record and c >= K - 1 and S[S_EV] < rec.ev.shape[0]:
            k = S[S_EV]
            rec.ev[k, 0], rec.ev[k, 1], rec.ev[k, 2], rec.ev[k, 3] = block_warp, MARK_PC - i, 0, -1
            S[S_EV] = k + 1
        ns = lo.snapR.shape[1]
        skip = 0
        if c >= K and steady:
            left = _trips_left(w, i, c, mask, code, lo)
            if left > 0 and c + left >= cfg[CFG_TOTAL]:
                skip = left - 1 - cfg[CFG_MARGIN]
            if lo.lp[i, 5] != 0:
                if lo.blk[i, 0] == b and lo.blk[i, 1] == c:
                    skip = lo.blk[i, 2]
                elif skip >= cfg[CFG_SKIP]:
                    lo.blk[i, 0], lo.blk[i, 1], lo.blk[i, 2] = b, c, skip
        if record and S[S_EV] >= rec.ev.shape[0]:
            skip = 0                    # no room to say so in the trace: not skipped
        if skip >= cfg[CFG_SKIP]:
            for x in range(ns):
                if (mask >> (x & 31)) & 1:
                    d = R[base + x] - lo.snapR[w, x]
                    if d != 0 and d == lo.snapD[w, x]:
                        R[base + x] += skip * d
            lo.trips[w, i] += skip
            lo.done[w, i] = 1
            lo.owner[w] = -1
            if record and S[S_EV] < rec.ev.shape[0]:
                k = S[S_EV]
                rec.ev[k, 0], rec.ev[k, 1], rec.ev[k, 2], rec.ev[k, 3] = \
                    block_warp, SKIP_PC - i, skip, -1
                S[S_EV] = k + 1
        elif c >= K - 2:
            for x in range(ns):
                v = R[base + x]
                lo.snapD[w, x] = v - lo.snapR[w, x]
                lo.snapR[w, x] = v


@njit(cache=True)
def _ff_leave(w, i, b, lo):
    """Warp ``w`` (of block ``b``) leaves loop ``i`` (or diverges in it): its trips start
    again, and its block's skip, decided for this entry into the loop, is forgotten (an
    inner loop is entered again; with a barrier in it every warp of the block has taken
    the skip before any leaves)."""
    if lo.blk[i, 0] == b:
        lo.blk[i, 0] = -1
    lo.trips[w, i] = 0
    lo.done[w, i] = 0
    lo.plen[w, i] = -1
    if lo.owner[w] == i:
        lo.owner[w] = -1


class Units(NamedTuple):
    """Blocks together (``T`` not empty): the timing ``T`` (``T_*``), the heap of warps
    and units' tokens by ready cycle (``ht``, ``hw``, ``hn``), the lines' atomic units
    (hashed by line: the line, its busy-until cycle, the start cycles of its last requests
    in a ring and its head), an instruction's lines (``_atomic_lines``), each warp's
    pending atomic (lanes still to apply, pc, held), the requests held beyond each unit's
    queue (``pools``: first, count, token; ``pnext`` each warp's next)."""
    T: np.ndarray
    ht: np.ndarray
    hw: np.ndarray
    hn: np.ndarray
    busy_line: np.ndarray
    busy_t: np.ndarray
    lines: np.ndarray
    apend: np.ndarray
    qring: np.ndarray
    qhead: np.ndarray
    pools: np.ndarray
    pnext: np.ndarray


def new_units(T, warps: int, slots: int) -> Units:
    """The units' tables for ``warps`` warps in ``slots`` block slots run together with
    timing ``T``; ``T`` empty: none (blocks one after another)."""
    if T.shape[0] == 0:
        i0, f0 = np.zeros(0, np.int64), np.zeros(0)
        return Units(T, f0, i0, np.zeros(1, np.int64), i0, f0, np.zeros((0, 3), np.int64),
                     np.zeros((0, 3), np.int64), np.zeros((0, 1)), i0,
                     np.zeros((3, 0), np.int64), i0)
    pools = np.zeros((3, HASH), np.int64)
    pools[0] = -1
    return Units(T, np.zeros(warps + HASH), np.zeros(warps + HASH, np.int64),
                 np.zeros(1, np.int64), np.full(HASH, -1, np.int64), np.zeros(HASH),
                 np.zeros((32, 3), np.int64), np.zeros((warps, 3), np.int64),
                 np.zeros((HASH, max(1, int(T[T_QUEUE])))), np.zeros(HASH, np.int64), pools,
                 np.zeros(warps, np.int64))


@njit(cache=True)
def _next_block(s, t, prog, mem, L, S, warps, units, block_hi):
    """Slot ``s`` takes the next block of ``prog.order`` (-1: none left), its warps
    ready at cycle ``t``."""
    order, slot_block = prog.order, warps.slot_block
    slot_block[s] = -1
    if S[S_NEXT] < block_hi:
        slot_block[s] = order[S[S_NEXT]] if order.shape[0] > 0 else S[S_NEXT]
        S[S_NEXT] += 1
        _start_block(s, warps.R, prog.tmpl, mem.M, L, warps.stk, warps.sp, warps.wstat)
        nw = L[L_NW]
        for wl in range(nw):
            warps.clock[s * nw + wl] = t
            _push(units.ht, units.hw, units.hn, t, s * nw + wl)


# ``_run_warp``'s status besides the run's: the warp yielded, the run goes on
RUNNING = -1
# ``_next_in_order``'s warp where every block of the run has finished
ALL_DONE = -2


@njit(cache=True, error_model="numpy")
def run(prog, mem, L, S, E, warps, rec, units, scratch, budget, block_hi, lo):
    """Run the blocks of ``prog.order`` (positions ``S[S_BLOCK]`` up to ``block_hi``):
    one after another, each block's warps round-robin between barriers (``units.T``
    empty: see the module's docstring), or, with the timing ``units.T``, ``L[L_SLOTS]``
    at a time, their warps interleaved by time as the GPU runs them, so that atomics land
    in the order their warps reach the L2: a CAS loop retries as often as other warps'
    successes make it. Returns a status (``DONE``, ``BUDGET``, ``TRACE_FULL``,
    ``ERROR``).

    Blocks together: every warp has a clock (cycles): an instruction takes one; a global
    load returns after ``T[T_LOAD_LAT]``; an atomic reaches its lines' atomic units half
    its round trip ``T[T_ATOM_LAT]`` after issue, waits its turn at each and returns half
    the round trip after its service. The warp with the earliest clock runs next, until
    it has issued a global access (a heap orders them), so that atomics apply in the
    order they reach their lines. A finished block's slot takes the next block; a
    barrier releases its block's warps at the latest one's clock. A line serves a
    request's lanes on one word one pass at a time (a unit busy ``first_pass_cycles``
    the first, between ``T[T_LANE]`` for a lone lane and ``T[T_CAS]`` or ``T[T_ATOM]``
    for 32, and ``T[T_LANE]`` each further one: the atomics and atomic_trace suites'
    measurements), and a request with several lanes on a word goes back to the line's
    queue after each pass (``units.apend[w]``: the lanes still to apply and the atomic's
    pc), so that other warps' requests come between them. (A reduction, with no result
    to wait for, is served whole: ``T[T_LANE]`` a further lane.) A line's unit queues
    ``T[T_QUEUE]`` requests in their order of arrival; a request with a result that
    finds that many waiting is held back unapplied (``_hold``), and each time a place
    opens, which of those held back gets in is drawn (``_take``): the H100 serves a
    contended CAS loop so (the atomic_trace suite), its tries fewer than first come,
    first served where the queue is full. A warp that a budget or a full trace stops goes
    on first at the next call (``S[S_RESUME]``), so that where the calls fall changes
    nothing.

    The steps are helpers inlined into this loop (``_next_in_order``, ``_next_timed``,
    ``_atomic_pass``, ``_run_warp``, ``_after_warp``), each ending in ``last_use`` so
    that numba hands them its tables without counting references at every call.

    ``lo`` (``Loops``): blocks one after another, a loop whose end one integer comparison
    decides may have its middle trips skipped (``_ff_backedge``): its registers that step
    alike each trip moved on, the trips' instructions not run (nor counted); the trace
    says where (``MARK_PC``, ``SKIP_PC``)."""
    conc = units.T.shape[0] > 0
    stop = S[S_EXEC] + budget
    if conc and S[S_STARTED] == 0:
        for s in range(L[L_SLOTS]):
            _next_block(s, 0.0, prog, mem, L, S, warps, units, block_hi)
        S[S_STARTED] = 1
    while True:
        if conc:
            w, t = _next_timed(S, warps, units)
            if w < 0:
                return DONE
        else:
            w = _next_in_order(prog, mem, L, S, warps, block_hi)
            if w == ALL_DONE:
                return DONE
            if w < 0:
                continue
            t = 0.0
        if conc and units.apend[w, 0] != 0:
            if _atomic_pass(w, t, prog, mem, L, S, E, warps, units) != 0:
                return ERROR
            continue
        status, t = _run_warp(w, t, stop, prog, mem, L, S, E, warps, rec, units, scratch, lo)
        if status != RUNNING:
            return status
        if conc:
            _after_warp(w, t, prog, mem, L, S, warps, units, block_hi)


@njit(cache=True, inline="always")
def _next_timed(S, warps, units):
    """Blocks together: (the next warp to run, its clock): the warp a budget or a full
    trace stopped, else the earliest on the heap (a unit's token: a request held beyond
    its queue gets in); warp -1 where none is left."""
    clock = warps.clock
    nwt = clock.shape[0]                # warps; heap entries from nwt on are units' tokens
    w, t = -1, 0.0
    if S[S_RESUME] > 0:
        w = S[S_RESUME] - 1
        t = clock[w]
        S[S_RESUME] = 0
    elif units.hn[0] > 0:
        t, w = _pop(units.ht, units.hw, units.hn)
        if w >= nwt:
            units.pools[2, w - nwt] = 0
            w = _take(w - nwt, S, units.pools, units.pnext)
            clock[w] = t
    last_use((S, warps, units))
    return w, t


@njit(cache=True, inline="always")
def _next_in_order(prog, mem, L, S, warps, block_hi):
    """Blocks one after another: the first running warp of the block under way (its
    warps started when it starts); ``ALL_DONE`` where every block of the run has
    finished; -1 where none runs: its barrier released, or the block done."""
    if S[S_BLOCK] >= block_hi:
        return ALL_DONE
    wstat = warps.wstat
    if S[S_STARTED] == 0:
        _start_block(0, warps.R, prog.tmpl, mem.M, L, warps.stk, warps.sp, wstat)
        S[S_STARTED] = 1
    nw = L[L_NW]
    w = -1
    waiting = False
    for x in range(nw):
        if wstat[x] == W_RUN:
            w = x
            break
        if wstat[x] == W_BAR:
            waiting = True
    if w < 0:
        if waiting:                     # every warp at the barrier: release
            for x in range(nw):
                if wstat[x] == W_BAR:
                    wstat[x] = W_RUN
        else:                           # the block is done
            S[S_BLOCK] += 1
            S[S_STARTED] = 0
    last_use((prog, mem, L, S, warps))
    return w


@njit(cache=True, inline="always")
def _atomic_pass(w, t, prog, mem, L, S, E, warps, units):
    """Blocks together: the next pass of warp ``w``'s atomic reaches its lines' units (or
    comes back when one more fits in their queues); 0, or ``ERROR`` (``E`` filled)."""
    T, apend, lines = units.T, units.apend, units.lines
    R, clock = warps.R, warps.clock
    nwt = clock.shape[0]
    half = 0.5 * T[T_ATOM_LAT]
    base = w * L[L_NSLOTS] * 32
    row = prog.code[apend[w, 1]]
    pm = _first_lanes(row, R, base, apend[w, 0])
    # (a request held back: its first pass, costed by all its lanes)
    nl = _atomic_lines(row, R, base, apend[w, 0] if apend[w, 2] != 0 else pm, L, lines)
    slot, hs = -1.0, -1
    if apend[w, 2] != 0:                # held back: in now if a place is open
        slot, hs = _queue_full(t + half, nl, lines, units.busy_line, units.qring,
                               units.qhead, int(T[T_QUEUE]))
    status = 0
    if slot >= 0:
        clock[w] = t
        _hold(w, hs, slot, T, units.pools, units.pnext, units.ht, units.hw, units.hn, nwt)
        _rearm(t + half, nl, lines, T, units.qring, units.qhead, units.pools, units.ht,
               units.hw, units.hn, nwt)
    elif _memory(row, R, warps.RF32, warps.RF64, mem.M, mem.M16, mem.M32v, mem.M64,
                 mem.MF32, mem.MF64, base, pm, w, warps.slot_block[w // L[L_NW]], L,
                 prog.regions, E, apend[w, 1], lines[:0, 0]) != 0:
        status = ERROR
    else:
        apend[w, 0] &= ~pm
        full = T[T_CAS] if (row[F_X3] == 3 or row[F_X3] == 4) else T[T_ATOM]
        done = _serve(t + half, full, T[T_LANE], 1 - apend[w, 2], nl, lines,
                      units.busy_line, units.busy_t, units.qring, units.qhead)
        apend[w, 2] = 0
        _rearm(t + half, nl, lines, T, units.qring, units.qhead, units.pools, units.ht,
               units.hw, units.hn, nwt)
        t = done - half if apend[w, 0] != 0 else done + half
        clock[w] = t
        _push(units.ht, units.hw, units.hn, t, w)
    last_use((prog, mem, L, S, E, warps, units))
    return status


@njit(cache=True, inline="always")
def _guarded(row, R, base, mask):
    """The lanes of ``mask`` the instruction's guard predicate lets run."""
    g = row[F_G]
    emask = mask
    if g >= 0:
        neg = row[F_GN] != 0
        emask = 0
        cg = base + 32 * g
        for l in range(32):
            if (mask >> l) & 1 and ((R[cg + l] != 0) != neg):
                emask |= 1 << l
    last_use((row, R))
    return emask


@njit(cache=True, inline="always")
def _record_event(is_mem, pc, mask, block_warp, S, rec):
    """With the run recording: the instruction's event (block x warps + warp, pc, mask,
    its address row or -1) appended; False where the trace is full (nothing done)."""
    ev, ev_addr = rec.ev, rec.ev_addr
    full = S[S_EV] >= ev.shape[0] or (is_mem and S[S_ADDR] >= ev_addr.shape[0])
    if not full:
        k = S[S_EV]
        ev[k, 0] = block_warp
        ev[k, 1] = pc
        ev[k, 2] = mask
        ev[k, 3] = S[S_ADDR] if is_mem else -1
        S[S_EV] = k + 1
    last_use((S, rec))
    return not full


@njit(cache=True, inline="always")
def _branch(w, b, pc, row, mask, emask, stk, sp, depth, E):
    """``bra`` for warp ``w`` at stack top: taken by all, none, or split (the
    reconvergence entry, then the taken path and the fall-through pushed); 0, or
    ``ERROR`` (the stack too deep: ``E`` filled)."""
    top = sp[w]
    nxt = pc + 1
    taken = emask if row[F_G] >= 0 else mask
    target, rpc = row[F_X1], row[F_X2]
    status = 0
    if taken == mask:
        stk[w, top, 0] = target
    elif taken == 0:
        stk[w, top, 0] = nxt
    else:
        if stk[w, top, 1] == rpc:
            sp[w] -= 1
        else:
            stk[w, top, 0] = rpc
        if sp[w] + 2 >= depth:
            E[E_CODE], E[E_PC], E[E_WARP], E[E_BLOCK] = ERR_DEPTH, pc, w, b
            status = ERROR
        else:
            for entry_pc, entry_mask in ((target, taken), (nxt, mask & ~taken)):
                if entry_pc != rpc:
                    sp[w] += 1
                    stk[w, sp[w], 0] = entry_pc
                    stk[w, sp[w], 1] = rpc
                    stk[w, sp[w], 2] = entry_mask
    if status == 0:
        _pop_converged(stk, sp, w)
    last_use((stk, sp, E))
    return status


@njit(cache=True)
def _special_op(row, op, R, base, emask, mask, wl, s, b, L, S):
    """A special register read, a ``cvta`` between a window and the generic space, or
    ``activemask``, on the lanes ``emask``."""
    cd = base + 32 * row[F_D]
    if op == OP_SPECIAL:
        for l in range(32):
            if (emask >> l) & 1:
                R[cd + l] = _special(row[F_X1], l, wl, b, L, S)
    elif op == OP_CVTA:
        shift = 0
        space = row[F_X1]
        if space == S_SHARED:
            shift = BASE + L[L_SH_OFF] + s * L[L_SH_STRIDE]
        elif space == S_LOCAL:
            shift = BASE + L[L_LOC_OFF]
        elif space == S_CONST:
            shift = BASE + L[L_CON_OFF]
        elif space == S_PARAM:
            shift = BASE + L[L_PAR_OFF]
        if row[F_X2] != 0:
            shift = -shift
        ca = base + 32 * row[F_A]
        for l in range(32):
            if (emask >> l) & 1:
                R[cd + l] = R[ca + l] + shift
    else:
        for l in range(32):
            if (emask >> l) & 1:
                R[cd + l] = mask


@njit(cache=True, inline="always")
def _atomic_issued(w, ti, pc, row, emask, first, nl, held, hs, units, warps):
    """Blocks together: warp ``w``'s global atomic issued at cycle ``ti`` (its lines
    ``units.lines[:nl]``, its lanes ``first`` applied on their first pass, ``held``
    where a full queue held it back): its clock when it next runs, and whether it waits
    on the heap (False: held back, the unit's token will bring it)."""
    T, apend = units.T, units.apend
    half = 0.5 * T[T_ATOM_LAT]
    full = T[T_CAS] if (row[F_X3] == 3 or row[F_X3] == 4) else T[T_ATOM]
    t = ti + 1.0
    queued = True
    if nl == 0:                     # shared memory, or every lane guarded off
        t = ti + T[T_SHARED]
    elif held >= 0:                 # in when a place opens
        apend[w, 0], apend[w, 1], apend[w, 2] = emask, pc, 1
        warps.clock[w] = ti
        _hold(w, hs, held, T, units.pools, units.pnext, units.ht, units.hw, units.hn,
              warps.clock.shape[0])
        queued = False
    elif first != emask:
        # (``lines`` from before the first pass wrote its results: every line has a
        # first lane, and a destination may be the address)
        apend[w, 0], apend[w, 1] = emask & ~first, pc
        t = _serve(ti + half, full, T[T_LANE], 0, nl, units.lines, units.busy_line,
                   units.busy_t, units.qring, units.qhead) - half
    else:
        done = _serve(ti + half, full, T[T_LANE], 2, nl, units.lines, units.busy_line,
                      units.busy_t, units.qring, units.qhead)
        t = done + half if row[F_D] >= 0 else ti + 1.0
    last_use((units, warps))
    return t, queued


@njit(cache=True)
def _ff_branch(w, pc, row, mask, emask, b, base, R, code, lo, rec, S, record, gw):
    """A branch of warp ``w`` (block ``b``; ``gw`` its warp id in the trace), where loops
    fast-forward: a latch taken by every active lane is a back-edge (``_ff_backedge``);
    a latch not taken, or an exit taken by some lane, leaves the loop."""
    taken = emask if row[F_G] >= 0 else mask
    i = lo.latch_loop[pc]
    if i >= 0:
        if taken == mask and mask != 0:
            _ff_backedge(w, i, b, mask, base, R, code, lo, rec, S, record, gw)
        else:
            _ff_leave(w, i, b, lo)
    i = lo.exit_loop[pc]
    if i >= 0 and taken != 0:
        _ff_leave(w, i, b, lo)
    last_use((row, R, code, lo, rec, S))


@njit(cache=True, inline="always")
def _run_warp(w, t, stop, prog, mem, L, S, E, warps, rec, units, scratch, lo):
    """Warp ``w`` from cycle ``t`` (its clock, blocks together) until it yields: at a
    barrier, done, after a global access (blocks together), or where the budget, a full
    trace or an error stops the run; (``RUNNING`` or that status, its clock)."""
    # the tables' arrays as locals, once a turn: the loop hands them to jitted calls,
    # which would otherwise count a reference to each at every instruction
    code, regions, R, RF32, RF64 = prog.code, prog.regions, warps.R, warps.RF32, warps.RF64
    stk, sp, wstat = warps.stk, warps.sp, warps.wstat
    wcount, tcount = rec.wcount, rec.tcount
    T = units.T
    record = L[L_RECORD] != 0
    conc = T.shape[0] > 0
    ffon = lo.wexec.shape[0] > 0
    setp_loop = lo.setp_loop
    nw, depth = L[L_NW], L[L_DEPTH]
    s = w // nw if conc else 0
    if conc:
        b = warps.slot_block[s]
    else:
        b = prog.order[S[S_BLOCK]] if prog.order.shape[0] > 0 else S[S_BLOCK]
    wl = w - s * nw
    base = w * L[L_NSLOTS] * 32
    status = RUNNING
    while True:
        if sp[w] < 0:
            wstat[w] = W_DONE
            break
        top = sp[w]
        pc = stk[w, top, 0]
        mask = stk[w, top, 2]
        row = code[pc]
        op = row[F_OP]
        is_mem = op == OP_LD or op == OP_ST or op == OP_ATOM
        if S[S_EXEC] >= stop or (record and
                                 not _record_event(is_mem, pc, mask, b * nw + wl, S, rec)):
            if conc:                        # it goes on first next call, as if
                warps.clock[w] = t          # nothing had stopped it
                S[S_RESUME] = w + 1
            status = BUDGET if S[S_EXEC] >= stop else TRACE_FULL
            break
        emask = _guarded(row, R, base, mask)
        S[S_EXEC] += 1
        if ffon:
            lo.wexec[w] += 1
        wcount[pc] += 1
        n_act = 0
        x = mask
        while x:
            x &= x - 1
            n_act += 1
        tcount[pc] += n_act
        S[S_THREADS] += n_act
        nxt = pc + 1
        ti = t                              # the instruction's issue cycle
        t = ti + 1.0
        if op == OP_BRA:
            if _branch(w, b, pc, row, mask, emask, stk, sp, depth, E) != 0:
                status = ERROR
                break
            if ffon:
                _ff_branch(w, pc, row, mask, emask, b, base, R, code, lo, rec, S, record,
                           b * nw + wl)
            continue
        if op == OP_EXIT:
            if emask != 0:
                for k in range(sp[w] + 1):
                    stk[w, k, 2] &= ~emask
            if stk[w, top, 2] != 0:
                stk[w, top, 0] = nxt
            _pop_converged(stk, sp, w)
            continue
        if op == OP_BAR:
            stk[w, top, 0] = nxt
            _pop_converged(stk, sp, w)
            wstat[w] = W_BAR
            break
        glob = False
        nl = 0
        first = emask
        held, hs = -1.0, -1
        if conc and is_mem:
            glob = (op == OP_ATOM or row[F_X4] == 0) and \
                (row[F_X1] == S_GLOBAL or row[F_X1] == S_GENERIC)
            if op == OP_ATOM and emask != 0:
                # a global atomic's first pass now; its further passes (lanes on a
                # word already served) go back in the lines' queues
                nl = _atomic_lines(row, R, base, emask, L, units.lines)
                if nl > 0 and row[F_D] >= 0:
                    first = _first_lanes(row, R, base, emask)
                    # a full queue holds the request back, unapplied
                    held, hs = _queue_full(ti + 0.5 * T[T_ATOM_LAT], nl, units.lines,
                                           units.busy_line, units.qring, units.qhead,
                                           int(T[T_QUEUE]))
        if emask != 0:
            # the instruction's effect on its lanes (a memory access: on ``first``, its
            # address row recorded for all of them; a held atomic: recorded, not applied)
            if is_mem:
                if record:
                    a_rec = rec.ev_addr[S[S_ADDR]]
                    a_rec[:] = -1
                    S[S_ADDR] += 1
                else:
                    a_rec = rec.ev_addr[:0, 0]
                if held >= 0:
                    if record:
                        _trace_lanes(row, R, base, emask, w, L, a_rec)
                elif _memory(row, R, RF32, RF64, mem.M, mem.M16, mem.M32v, mem.M64, mem.MF32,
                             mem.MF64, base, first, w, b, L, regions, E, pc, a_rec) != 0:
                    status = ERROR
                    break
                elif first != emask and record:
                    _trace_lanes(row, R, base, emask & ~first, w, L, a_rec)
            elif op == OP_SPECIAL or op == OP_CVTA or op == OP_ACTIVEMASK:
                _special_op(row, op, R, base, emask, mask, wl, s, b, L, S)
            elif op == OP_SHFL:
                _shfl(row, R, base, emask, scratch)
            elif op == OP_VOTE:
                _vote(row, R, base, emask)
            elif op != OP_NOP and (
                    _ff_setp_alu(w, setp_loop[pc], row, R, RF32, RF64, base, emask,
                                 L[L_CARRY], lo) if ffon and setp_loop[pc] >= 0
                    else alu(row, R, RF32, RF64, base, emask, L[L_CARRY])) != 0:
                E[E_CODE], E[E_PC], E[E_WARP], E[E_BLOCK] = ERR_UNSUPPORTED, pc, w, b
                status = ERROR
                break
        stk[w, top, 0] = nxt
        _pop_converged(stk, sp, w)
        if not conc:
            continue
        if op == OP_ATOM:
            t, queued = _atomic_issued(w, ti, pc, row, emask, first, nl, held, hs, units,
                                       warps)
            if queued:
                _push(units.ht, units.hw, units.hn, t, w)
            break
        if glob:
            if op == OP_LD:
                t = ti + T[T_LOAD_LAT]
            _push(units.ht, units.hw, units.hn, t, w)
            break
    last_use((code, regions, R, RF32, RF64, stk, sp, wstat, wcount, tcount, T, prog, mem, L, S,
              E, warps, rec, units, scratch, lo, setp_loop))
    return status, t


@njit(cache=True, inline="always")
def _after_warp(w, t, prog, mem, L, S, warps, units, block_hi):
    """Blocks together, after warp ``w`` yielded at cycle ``t``: at a barrier or done,
    its block's barrier released once none of its warps runs (at the latest one's
    clock), and its slot given the next block once all are done."""
    wstat, clock = warps.wstat, warps.clock
    clock[w] = t
    nw = L[L_NW]
    s = w // nw
    if wstat[w] != W_RUN:
        running, done_all, latest = False, True, 0.0
        for x in range(nw):
            v = s * nw + x
            if wstat[v] == W_RUN:
                running = True
            if wstat[v] != W_DONE:
                done_all = False
            latest = max(latest, clock[v])
        if not running and not done_all:
            for x in range(nw):
                v = s * nw + x
                if wstat[v] == W_BAR:
                    wstat[v] = W_RUN
                    clock[v] = latest
                    _push(units.ht, units.hw, units.hn, latest, v)
        elif not running:
            S[S_BLOCK] += 1
            _next_block(s, latest, prog, mem, L, S, warps, units, block_hi)
    last_use((prog, mem, L, S, warps, units))

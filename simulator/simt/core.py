"""The cycle-approximate SIMT core: one numba loop over cycles, SMs and schedulers.

Everything here is a plain ``@njit`` function over arrays; ``engine.py`` wraps it, and
the caches, L2 banks and DRAM channels are ``memory.py``'s. The model, per SM:

* warp slots filled block by block under the occupancy limit; each SM's dispatcher
  starts at most one block every ``block_launch_cycles`` (the measured block launch
  rate), into any free slot;
* ``n_sched`` schedulers own the warps whose slot is congruent to them; each issues at
  most one instruction every ``issue_interval`` cycles, choosing GTO (keep the last
  warp while it can issue, else the oldest ready one) or LRR (the next ready warp after
  the last one issued);
* an instruction issues when its source registers (and its destination, for a pending
  load) are ready -- the scoreboard -- and its unit is free: SP per scheduler
  (initiation interval ``sp_ii``), SFU and LD/ST per SM; LD/ST is held for the
  instruction's L1 transactions (or shared-memory bank-conflict passes);
* global loads coalesce into segments (``seg_bytes``); a segment that misses the L1
  takes an MSHR (a warp waits when none is free) and visits the L2 bank that owns it
  (a queue served at the bank's bandwidth) and, on a miss, the DRAM channel (a queue
  at its share of the bandwidth) -- completion times are reserved at issue, so queueing
  delay appears as latency under load;
* stores write through (invalidating the L1 copy) into the L2, which allocates without
  fetching and writes dirty sectors back to DRAM when it evicts them (and at the end,
  counted but not timed);
* ``BAR`` holds a warp until every live warp of its block has arrived.

Cycles in which a scheduler issues nothing are charged to one cause: ``idle`` (no
warp), ``memory`` (waiting for a global load), ``dependency`` (waiting for an ALU, SFU
or shared-memory result), ``pipe`` (unit busy), ``barrier`` or ``mshr``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import dispatch, isa, memory
from .hwvec import (H_BANKB, H_BANKS, H_BPS, H_BSTART, H_FPLAT, H_GTO, H_INTII, H_ISSUE, H_L1BW,
                    H_L1LINEB, H_L1LINEC,
                    H_L1SETS, H_L1WAYS, H_L2SEC, H_LAUNCH, H_LDSTII, H_MAXW, H_MSHR, H_NSCHED,
                    H_NSM, H_SEG, H_SFUII, H_SFULAT, H_SHLAT, H_SPII, H_WPB)
from .memory import l1_fill, l1_holds, l1_read, l1_write, l2_access
from .stats import (N_STATS, S_CONFLICT, S_CYCLES_VISITED, S_DONE_BLOCKS, S_END, S_FLOPS, S_INSTR,
                    S_LDST, S_LOOKS, S_SFU, S_SHB, S_SP)

INF = 1e300
CAUSES = ("idle", "memory", "dependency", "pipe", "barrier", "mshr")
# ``hp``, the hardware vector, is read through the H_* indices of ``hwvec.HW_FIELDS``; the
# statistics vector ``st`` through the S_* indices of ``stats.LaunchStats``

_owner = memory.owner        # the L2 bank / DRAM channel hash (the measure suites' tests read it)


@njit(cache=True, inline='always')
def settle(kind, p, tmpl, pro_end, body_end, tv, g, live, pc, it, trips, ph, addr, ikeep, iper):
    """Advance a warp to its next instruction that has an active lane, from ``pc``.

    ``tv`` and ``addr`` hold every warp's thread variables and lane addresses; this is
    warp ``g``'s row. Returns (pc, it, ph, active lanes); pc == len(tmpl) means the warp
    has finished.
    ``ph`` is 0 in the prologue, 1 in the body, 2 in the epilogue. ``ikeep`` > 0: the
    loop's inner loop cut (``run``'s ``inner_per``): trip ``it`` is the nest's trip
    ``(it // ikeep) * iper + it % ikeep``."""
    n = tmpl.shape[0]
    while True:
        # the row before pc was evaluated for this same trip (it issued or was skipped just
        # now) unless pc starts the prologue, the body or the epilogue
        same = pc > 0 and pc != pro_end and pc != body_end
        if ph == 0 and pc == pro_end:
            if trips > 0 and body_end > pro_end:
                ph = 1
                it = 0
            else:
                ph = 2
                pc = body_end
        if ph == 1 and pc == body_end:
            it += 1
            if it < trips:
                pc = pro_end
            else:
                ph = 2
        if pc >= n:
            return n, it, ph, 0
        s = tmpl[pc, 5]
        if s >= 0 and same and tmpl[pc - 1, 5] == s:
            # a run of rows on one stream (a guarded group): its lanes are still in addr[g]
            act = 0
            for lane in range(32):
                if addr[g, lane] >= 0:
                    act += 1
        elif s >= 0:
            ita = it if ikeep == 0 else (it // ikeep) * iper + it % ikeep
            act = dispatch.lanes(kind, p, tv, g, ita, s, addr)
        else:
            act = live
            for lane in range(32):
                addr[g, lane] = 0 if tv[g, lane, 0] else -1
        if act > 0:
            return pc, it, ph, act
        pc += 1


@njit(cache=True, inline='always')
def _segments(addr, g, seg_bytes, out):
    """Distinct segments of warp g's active lanes' 4-byte accesses, sorted into out[g];
    returns their count."""
    m = 0
    for lane in range(32):
        a = addr[g, lane]
        if a < 0:
            continue
        s = a // seg_bytes
        j = m
        while j > 0 and out[g, j - 1] > s:
            j -= 1
        if j > 0 and out[g, j - 1] == s:
            continue
        for k in range(m, j, -1):
            out[g, k] = out[g, k - 1]
        out[g, j] = s
        m += 1
    return m


@njit(cache=True)
def _bank_passes(addr, g, banks, bank_bytes, scratch):
    """Shared-memory passes: the most distinct words any one bank must serve (lanes
    reading one word share it: a broadcast). ``scratch`` is (banks + 1, 33) of int64."""
    for b in range(banks):
        scratch[b, 0] = 0
    best = 1
    for lane in range(32):
        if addr[g, lane] < 0:
            continue
        wd = addr[g, lane] // bank_bytes
        b = wd % banks
        n = scratch[b, 0]
        dup = False
        for k in range(1, n + 1):
            if scratch[b, k] == wd:
                dup = True
                break
        if not dup:
            scratch[b, n + 1] = wd
            scratch[b, 0] = n + 1
            if n + 1 > best:
                best = n + 1
    return best


@njit(cache=True, inline='always')
def _dep_ready(g, pc, tmpl, rready, rmem):
    """(cycle the scoreboard lets warp g issue instruction pc, 1 if it waits on a load)."""
    ready = 0.0
    mem = 0
    for q in range(1, 5):
        r = tmpl[pc, q]
        if r >= 0 and rready[g, r] > ready:
            ready = rready[g, r]
            mem = 1 if rmem[g, r] else 0
    return ready, mem


@njit(cache=True, inline='always')
def _heap_push(h, r, n, v):
    """Push v on the min-heap h[r, :n]; returns the new size."""
    i = n
    h[r, i] = v
    while i > 0:
        par = (i - 1) // 2
        if h[r, par] <= h[r, i]:
            break
        h[r, par], h[r, i] = h[r, i], h[r, par]
        i = par
    return n + 1


@njit(cache=True, inline='always')
def _heap_pop(h, r, n):
    """Remove the minimum of h[r, :n]; returns the new size."""
    n -= 1
    h[r, 0] = h[r, n]
    i = 0
    while True:
        lft, m = 2 * i + 1, i
        if lft < n and h[r, lft] < h[r, m]:
            m = lft
        if lft + 1 < n and h[r, lft + 1] < h[r, m]:
            m = lft + 1
        if m == i:
            return n
        h[r, m], h[r, i] = h[r, i], h[r, m]
        i = m


@njit(cache=True, inline='always')
def _outstanding(h, r, n, t):
    """Drop the misses completed by cycle t; returns how many remain outstanding."""
    while n > 0 and h[r, 0] <= t:
        n = _heap_pop(h, r, n)
    return n


@njit(cache=True, inline='always')
def _alloc(h, r, n, nm, t, done):
    """Take an MSHR until cycle ``done`` (an uncoalesced access needing more than there
    are reuses the soonest-free one: it waits for it in the real machine too)."""
    n = _outstanding(h, r, n, t)
    if n >= nm:
        n = _heap_pop(h, r, n)
    return _heap_push(h, r, n, done)


@njit(cache=True)
def _retire(order, norder, sm, sc, slot):
    """Remove warp slot from its scheduler's age-ordered list."""
    n = norder[sm, sc]
    j = 0
    while j < n and order[sm, sc, j] != slot:
        j += 1
    for k in range(j, n - 1):
        order[sm, sc, k] = order[sm, sc, k + 1]
    norder[sm, sc] = n - 1


@njit(cache=True, inline='always')
def _prepare(g, pc, tmpl, rready, rmem, wdep, wdepm, addr, seg_bytes, wseg, wnseg):
    """Cache what the scheduler asks of warp g's next instruction."""
    if pc >= tmpl.shape[0]:
        return
    wdep[g], wdepm[g] = _dep_ready(g, pc, tmpl, rready, rmem)
    op = tmpl[pc, 0]
    if op == isa.LDG or op == isa.STG:
        wnseg[g] = _segments(addr, g, seg_bytes, wseg)


@njit(cache=True, nogil=True)
def block_trips(kind, p, n_blocks, wpb):
    """Per block: loop trips summed over its warps (the sampler's measure of block work)
    and the most trips of any one of its warps."""
    gx, gy = p[0], p[1]
    total = np.zeros(n_blocks, np.int64)
    most = np.zeros(n_blocks, np.int64)
    for bl in range(n_blocks):
        for w in range(wpb):
            t = dispatch.trips(kind, p, bl % gx, (bl // gx) % gy, bl // (gx * gy), w)
            total[bl] += t
            most[bl] = max(most[bl], t)
    return total, most


@njit(cache=True, nogil=True)
def run(kind, p, tmpl, pro_end, body_end, nregs, hp, blocks, t0,
        tags2, lru2, fill2, dirty2, bank_free, chan_free, seen, trace_cap, skips, trip_cap,
        inner_per):
    """Simulate the blocks ``blocks`` (block ids, dispatched in that order) of a launch
    starting at cycle t0 with the given (shared, carried-over) L2 and DRAM state; for
    each row (at, to) of ``skips`` (positions in ``blocks``, in order), when position
    ``at`` is next to dispatch continue with position ``to`` instead (sampled mode: the
    machine stays warm across the skipped blocks). ``trip_cap`` > 0
    cuts every warp's loop at that many trips (sampled mode's trip extrapolation); with
    ``inner_per`` > 0 it cuts instead each pass of the inner loop of that many trips to
    its first ``trip_cap`` trips (a padded NHWC convolution's channel loop, tap by tap). Returns
    (statistics vector, per-SM issue counts, block sm, start, end (-1 sm for skipped
    blocks), per-cause stall cycles, trace rows): ``engine.CoreRun`` names them."""
    n_sm, n_sched = int(hp[H_NSM]), int(hp[H_NSCHED])
    maxw, bps, wpb = int(hp[H_MAXW]), int(hp[H_BPS]), int(hp[H_WPB])
    gx, gy = p[0], p[1]
    issue_iv = hp[H_ISSUE]
    ikeep = trip_cap if inner_per > 0 else 0
    gto = hp[H_GTO] > 0
    seg_bytes = int(hp[H_SEG])
    l1s, l1w = int(hp[H_L1SETS]), int(hp[H_L1WAYS])
    nm = int(hp[H_MSHR])
    l2_per_seg = max(1, seg_bytes // int(hp[H_L2SEC]))
    nwarps = n_sm * maxw
    # warp state
    wstate = np.zeros(nwarps, np.int64)          # 0 free, 1 running, 2 at barrier
    wpc = np.zeros(nwarps, np.int64)
    wit = np.zeros(nwarps, np.int64)
    wtrips = np.zeros(nwarps, np.int64)
    wph = np.zeros(nwarps, np.int64)
    wblk = np.zeros(nwarps, np.int64)            # block slot (global index)
    wwib = np.zeros(nwarps, np.int64)
    wage = np.zeros(nwarps, np.int64)
    per_sched = (maxw + n_sched - 1) // n_sched
    order = np.zeros((n_sm, n_sched, per_sched), np.int64)   # live warps, oldest first
    norder = np.zeros((n_sm, n_sched), np.int64)
    wact = np.zeros(nwarps, np.int64)
    waddr = np.full((nwarps, 32), -1, np.int64)
    wtv = np.zeros((nwarps, 32, isa.TV), np.int64)   # thread variables (kernel's setup)
    wlive = np.zeros(nwarps, np.int64)
    banks = int(hp[H_BANKS])
    scratch = np.zeros((banks + 1, 33), np.int64)    # bank-conflict counting
    rready = np.zeros((nwarps, nregs), np.float64)
    rmem = np.zeros((nwarps, nregs), np.bool_)
    wdep = np.zeros(nwarps)                      # scoreboard-ready cycle of the next instruction
    wdepm = np.zeros(nwarps, np.int64)
    wseg = np.zeros((nwarps, 33), np.int64)      # its global segments
    wnseg = np.zeros(nwarps, np.int64)
    next_dispatch = float(t0)
    # block slots
    nb = n_sm * bps
    bid = np.full(nb, -1, np.int64)
    blive = np.zeros(nb, np.int64)
    bbar = np.zeros(nb, np.int64)
    bfree = np.full(nb, float(t0))
    back = np.zeros(nb)                           # the block's last store acknowledged
    sm_launch = np.full(n_sm, float(t0))          # an SM's dispatcher: one block per H_LAUNCH
    bxyz = np.zeros((nb, 3), np.int64)
    # schedulers and units
    sp_free = np.zeros((n_sm, n_sched))
    int_free = np.zeros((n_sm, n_sched))
    sched_free = np.zeros((n_sm, n_sched))
    last = np.full((n_sm, n_sched), -1, np.int64)
    next_check = np.full((n_sm, n_sched), float(t0))
    acct = np.full((n_sm, n_sched), float(t0))
    cause = np.zeros((n_sm, n_sched), np.int64)
    sfu_free = np.zeros(n_sm)
    ldst_free = np.zeros(n_sm)
    mshr = np.zeros((n_sm, nm))                  # min-heaps of outstanding completion cycles
    nout = np.zeros(n_sm, np.int64)
    tags1 = np.full((n_sm, l1s, l1w), -1, np.int64)
    lru1 = np.zeros((n_sm, l1s, l1w), np.int64)
    fill1 = np.zeros((n_sm, l1s, l1w))
    # results
    st = np.zeros(N_STATS)
    stalls = np.zeros(len(CAUSES))
    issued_sm = np.zeros(n_sm, np.int64)
    nblk = blocks.shape[0]
    bsm = np.full(nblk, -1, np.int64)
    bstart = np.zeros(nblk)
    bend = np.zeros(nblk)
    trace = np.zeros((max(trace_cap, 1), 6), np.int64)
    ntr = 0
    stamp = 0
    age = 0
    next_blk = 0                                  # the next position of ``blocks``
    nsk = 0
    done_blocks = 0
    t = float(t0)
    end_t = float(t0)
    while done_blocks < nblk:
        # ---- block dispatch: one block per SM per pass, SMs in order -------------
        if next_blk < nblk and next_dispatch <= t:
            progress = True
            while progress and next_blk < nblk:
                progress = False
                for sm in range(n_sm):
                    if next_blk >= nblk:
                        break
                    for k in range(bps):
                        b = sm * bps + k
                        if bid[b] < 0 and bfree[b] <= t and sm_launch[sm] <= t:
                            sm_launch[sm] = t + hp[H_LAUNCH]
                            while nsk < skips.shape[0] and next_blk == skips[nsk, 0]:
                                done_blocks += skips[nsk, 1] - skips[nsk, 0]
                                next_blk = skips[nsk, 1]
                                nsk += 1
                            pos = next_blk
                            bl = blocks[pos]
                            next_blk += 1
                            bid[b] = pos
                            bxyz[b, 0] = bl % gx
                            bxyz[b, 1] = (bl // gx) % gy
                            bxyz[b, 2] = bl // (gx * gy)
                            bsm[pos] = sm
                            bstart[pos] = t
                            back[b] = t + hp[H_BSTART]
                            live = 0
                            for w in range(wpb):
                                g = sm * maxw + k * wpb + w
                                trips = dispatch.setup(kind, p, bxyz[b, 0], bxyz[b, 1], bxyz[b, 2], w,
                                                       wtv, g)
                                if trip_cap > 0 and inner_per > 0:
                                    trips = ((trips // inner_per) * trip_cap
                                             + min(trips % inner_per, trip_cap))
                                elif trip_cap > 0 and trips > trip_cap:
                                    trips = trip_cap
                                live_ = 0
                                for lane in range(32):
                                    live_ += wtv[g, lane, 0]
                                wlive[g] = live_
                                pc, it, ph, act = settle(kind, p, tmpl, pro_end, body_end, wtv, g,
                                                         wlive[g], 0, 0, trips, 0, waddr, ikeep,
                                                         inner_per)
                                for r in range(nregs):
                                    rready[g, r] = 0.0
                                    rmem[g, r] = False
                                _prepare(g, pc, tmpl, rready, rmem, wdep, wdepm, waddr, seg_bytes,
                                         wseg, wnseg)
                                if pc >= tmpl.shape[0]:
                                    wstate[g] = 0
                                    continue
                                if wdep[g] < t + hp[H_BSTART]:
                                    wdep[g] = t + hp[H_BSTART]
                                    wdepm[g] = 0
                                wstate[g] = 1
                                wpc[g], wit[g], wph[g], wact[g] = pc, it, ph, act
                                wtrips[g] = trips
                                wblk[g] = b
                                wwib[g] = w
                                wage[g] = age
                                age += 1
                                slot = k * wpb + w
                                sc = slot % n_sched
                                order[sm, sc, norder[sm, sc]] = slot
                                norder[sm, sc] += 1
                                live += 1
                            blive[b] = live
                            bbar[b] = 0
                            for sc in range(n_sched):
                                if next_check[sm, sc] > t:
                                    next_check[sm, sc] = t
                            if live == 0:
                                bid[b] = -1
                                bfree[b] = back[b]
                                bend[pos] = back[b]
                                if back[b] > end_t:
                                    end_t = back[b]
                                done_blocks += 1
                            progress = True
                            break
            next_dispatch = INF
            for b in range(nb):
                if bid[b] < 0:
                    ready = max(bfree[b], sm_launch[b // bps])
                    if ready < next_dispatch:
                        next_dispatch = ready
        # ---- issue ------------------------------------------------------------------
        st[S_CYCLES_VISITED] += 1
        for sm in range(n_sm):
            for sc in range(n_sched):
                if next_check[sm, sc] > t:
                    continue
                if sched_free[sm, sc] > t:
                    next_check[sm, sc] = sched_free[sm, sc]
                    continue
                st[S_LOOKS] += 1
                # charge the cycles since the last look at this scheduler
                stalls[cause[sm, sc]] += t - acct[sm, sc]
                acct[sm, sc] = t
                pick = -1
                best_ready = INF
                best_cause = 0
                nslots = (maxw - sc + n_sched - 1) // n_sched
                first = 0
                lw = last[sm, sc]
                if not gto and lw >= 0:
                    first = ((lw - sc) // n_sched + 1) % nslots
                # GTO: the last warp first (greedy), then the others oldest first;
                # LRR: round robin from the warp after the last one issued. The readiness
                # test is written out here, not called: numba reference-counts every array
                # handed to a helper, and this loop is the hottest in the model.
                nw = norder[sm, sc] if gto else nslots
                for j in range(-1 if (gto and lw >= 0) else 0, nw):
                    if j < 0:
                        slot = lw
                    elif gto:
                        slot = order[sm, sc, j]
                        if slot == lw:
                            continue
                    else:
                        slot = sc + n_sched * ((first + j) % nslots)
                    g = sm * maxw + slot
                    ws = wstate[g]
                    if ws == 0:
                        continue
                    if ws == 2:
                        if best_ready == INF:
                            best_cause = 4
                        continue
                    if wdep[g] > t:
                        if wdep[g] < best_ready:
                            best_ready = wdep[g]
                            best_cause = 1 if wdepm[g] else 2
                        continue
                    op = tmpl[wpc[g], 0]
                    if op == isa.SFU:
                        unit = sfu_free[sm]
                    elif op >= isa.LDG and op <= isa.STS:
                        unit = ldst_free[sm]
                    elif op == isa.BAR or op == isa.UNI:
                        unit = t
                    elif op == isa.ALU and hp[H_INTII] > 0:
                        unit = int_free[sm, sc]
                    else:
                        unit = sp_free[sm, sc]
                    if unit > t:
                        if unit < best_ready:
                            best_ready = unit
                            best_cause = 3
                        continue
                    if op == isa.LDG or op == isa.STG:
                        # enough MSHRs for the segments that will miss (stores: all)?
                        need = wnseg[g]
                        if op == isa.LDG:
                            need = 0
                            for k in range(wnseg[g]):
                                if not l1_holds(tags1, sm, wseg[g, k], l1s, l1w):
                                    need += 1
                        if need > nm:
                            need = nm
                        if need > 0:
                            while nout[sm] > 0 and mshr[sm, 0] <= t:
                                nout[sm] = _heap_pop(mshr, sm, nout[sm])
                            if need > nm - nout[sm]:
                                if mshr[sm, 0] < best_ready:
                                    best_ready = mshr[sm, 0]
                                    best_cause = 5
                                continue
                    pick = g
                    break
                if pick < 0:
                    cause[sm, sc] = best_cause
                    next_check[sm, sc] = best_ready if best_ready > t else t + 1
                    continue
                # ---- issue warp `pick` --------------------------------------------------
                g = pick
                last[sm, sc] = g - sm * maxw
                pc = wpc[g]
                op = tmpl[pc, 0]
                dst = tmpl[pc, 1]
                act = wact[g]
                st[S_INSTR] += 1
                issued_sm[sm] += 1
                sched_free[sm, sc] = t + issue_iv
                next_check[sm, sc] = t + issue_iv
                acct[sm, sc] = t + issue_iv
                cause[sm, sc] = 3
                stamp += 1
                if ntr < trace_cap:
                    trace[ntr, 0] = int(t)
                    trace[ntr, 1] = sm
                    trace[ntr, 2] = sc
                    trace[ntr, 3] = blocks[bid[wblk[g]]]
                    trace[ntr, 4] = wwib[g]
                    trace[ntr, 5] = op
                    ntr += 1
                if op == isa.UNI:
                    if dst >= 0:
                        rready[g, dst] = t + hp[H_FPLAT]
                        rmem[g, dst] = False
                elif op == isa.FFMA or op == isa.FMNMX or op == isa.FADD or op == isa.ALU or op == isa.BRA \
                        or op == isa.IMAD or op == isa.IMADW:
                    if op == isa.ALU and hp[H_INTII] > 0:
                        int_free[sm, sc] = t + hp[H_INTII]
                    elif op == isa.IMAD and hp[H_INTII] > 0:
                        sp_free[sm, sc] = t + hp[H_INTII]
                    elif op == isa.IMADW and hp[H_INTII] > 0:   # two passes at the INT32 rate
                        sp_free[sm, sc] = t + 2 * hp[H_INTII]
                    else:
                        sp_free[sm, sc] = t + hp[H_SPII]
                    st[S_SP] += 1
                    st[S_FLOPS] += isa.flops(op, act)
                    if dst >= 0:
                        rready[g, dst] = t + hp[H_FPLAT]
                        rmem[g, dst] = False
                elif op == isa.SFU:
                    sfu_free[sm] = t + hp[H_SFUII]
                    st[S_SFU] += 1
                    if dst >= 0:
                        rready[g, dst] = t + hp[H_SFULAT]
                        rmem[g, dst] = False
                elif op == isa.LDS or op == isa.STS:
                    passes = _bank_passes(waddr, g, banks, int(hp[H_BANKB]), scratch)
                    ldst_free[sm] = t + hp[H_LDSTII] * passes
                    st[S_LDST] += 1
                    st[S_SHB] += 4 * act
                    st[S_CONFLICT] += passes - 1
                    if dst >= 0:
                        rready[g, dst] = t + hp[H_SHLAT] + hp[H_LDSTII] * (passes - 1)
                        rmem[g, dst] = False
                elif op == isa.LDG or op == isa.STG:
                    m = wnseg[g]
                    st[S_LDST] += 1
                    hold = max(hp[H_LDSTII], m * seg_bytes / hp[H_L1BW])
                    if hp[H_L1LINEC] > 0:
                        # one tag a cycle: the request's distinct lines (segments sorted)
                        per = max(1, int(hp[H_L1LINEB]) // seg_bytes)
                        lines = 0
                        for k in range(m):
                            if k == 0 or wseg[g, k] // per != wseg[g, k - 1] // per:
                                lines += 1
                        hold = max(hold, lines * hp[H_L1LINEC])
                    ldst_free[sm] = t + hold
                    done = t
                    for k in range(m):
                        s = wseg[g, k]
                        if op == isa.STG:
                            l1_write(s, hp, tags1, sm, st)
                            acc = t
                            for u in range(l2_per_seg):
                                acc = max(acc, l2_access(s * l2_per_seg + u, t, True, hp, tags2, lru2,
                                                         fill2, dirty2, bank_free, chan_free, seen,
                                                         stamp, st))
                            # the write occupies an MSHR until the L2 accepts it; the
                            # block retires no sooner (the micro suite's block_residency:
                            # a store adds some 50 cycles to a block's life, not an L2
                            # round trip)
                            nout[sm] = _alloc(mshr, sm, nout[sm], nm, t, acc)
                            if acc > back[wblk[g]]:
                                back[wblk[g]] = acc
                            if acc > end_t:
                                end_t = acc
                            continue
                        d = l1_read(s, t, hp, tags1, lru1, fill1, sm, stamp, st)
                        if d < 0:
                            # a miss: the L2 (and DRAM) fetch it, the L1 allocates, an MSHR
                            # is held until it arrives
                            d = t
                            for u in range(l2_per_seg):
                                d = max(d, l2_access(s * l2_per_seg + u, t, False, hp, tags2, lru2,
                                                     fill2, dirty2, bank_free, chan_free, seen, stamp,
                                                     st))
                            l1_fill(s, hp, tags1, lru1, fill1, sm, stamp, d)
                            nout[sm] = _alloc(mshr, sm, nout[sm], nm, t, d)
                        if d > done:
                            done = d
                    if op == isa.LDG and dst >= 0:
                        rready[g, dst] = done
                        rmem[g, dst] = True
                # ---- advance the warp ---------------------------------------------------
                b = wblk[g]
                if op == isa.BAR:
                    wstate[g] = 2
                    bbar[b] += 1
                else:
                    pc, it, ph, a2 = settle(kind, p, tmpl, pro_end, body_end, wtv, g, wlive[g],
                                            pc + 1, wit[g], wtrips[g], wph[g], waddr, ikeep,
                                            inner_per)
                    wpc[g], wit[g], wph[g], wact[g] = pc, it, ph, a2
                    _prepare(g, pc, tmpl, rready, rmem, wdep, wdepm, waddr, seg_bytes, wseg, wnseg)
                    if pc >= tmpl.shape[0]:
                        wstate[g] = 0
                        blive[b] -= 1
                        _retire(order, norder, sm, sc, g - sm * maxw)
                        if t + 1 > end_t:
                            end_t = t + 1
                        if last[sm, sc] == g - sm * maxw:
                            last[sm, sc] = -1
                if blive[b] > 0 and bbar[b] == blive[b]:
                    # everyone arrived: release the barrier
                    bbar[b] = 0
                    for w in range(wpb):
                        g2 = sm * maxw + (b - sm * bps) * wpb + w
                        if wstate[g2] == 2:
                            wstate[g2] = 1
                            pc, it, ph, a2 = settle(kind, p, tmpl, pro_end, body_end, wtv, g2,
                                                    wlive[g2], wpc[g2] + 1, wit[g2], wtrips[g2],
                                                    wph[g2], waddr, ikeep, inner_per)
                            wpc[g2], wit[g2], wph[g2], wact[g2] = pc, it, ph, a2
                            _prepare(g2, pc, tmpl, rready, rmem, wdep, wdepm, waddr, seg_bytes,
                                     wseg, wnseg)
                            if pc >= tmpl.shape[0]:
                                wstate[g2] = 0
                                blive[b] -= 1
                                s2 = (g2 - sm * maxw) % n_sched
                                _retire(order, norder, sm, s2, g2 - sm * maxw)
                    for s2 in range(n_sched):
                        if next_check[sm, s2] > t + 1:
                            next_check[sm, s2] = t + 1
                if blive[b] == 0 and bid[b] >= 0:
                    fin = max(t + 1, back[b])
                    bend[bid[b]] = fin
                    bid[b] = -1
                    bfree[b] = fin
                    if fin > end_t:
                        end_t = fin
                    ready = max(bfree[b], sm_launch[sm])
                    if ready < next_dispatch:
                        next_dispatch = ready
                    done_blocks += 1
        # ---- next cycle: skip ahead when no scheduler can issue sooner -------------
        tn = INF
        for sm in range(n_sm):
            for sc in range(n_sched):
                if next_check[sm, sc] < tn:
                    tn = next_check[sm, sc]
        if next_blk < nblk and next_dispatch < tn:
            tn = next_dispatch
        if tn <= t:
            tn = t + 1
        if tn >= INF:
            break
        t = np.ceil(tn)
    end = max(end_t, t)
    for sm in range(n_sm):
        for sc in range(n_sched):
            if end > acct[sm, sc]:
                stalls[cause[sm, sc]] += end - acct[sm, sc]
    st[S_END] = end
    st[S_DONE_BLOCKS] = done_blocks
    return st, issued_sm, bsm, bstart, bend, stalls, trace[:ntr]

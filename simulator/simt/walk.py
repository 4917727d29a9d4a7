"""Walking one warp's instruction stream without the timing model.

``warp_stream`` lists what a warp executes (for tests and teaching); ``thread_accesses``
turns a program's global loads and stores back into per-thread (op, array, index) lists,
the form of each kernel module's pure-Python reference, so the two faces can be
compared; ``profile`` (numba) counts what the analytic model needs.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import (
    _stamp,  # noqa: F401  (numba caches stamped together)
    core,
    dispatch,
    isa,
    memory,
    pipes,
    traces,
)

# (constants tables imported by name, for numba: kept compact)
# isort: off
from .hwvec import (
    H_ACASC, H_ALANEC, H_ATOMC, H_BANKB, H_BANKS, H_ISSUE, H_L1LINEB, H_L2LINE, H_L2SEC, H_SEG)
# isort: on


def _block_xyz(prog, b):
    gx, gy, _ = prog.launch.grid
    return b % gx, (b // gx) % gy, b // (gx * gy)


def warp_stream(prog, block: int, warp: int):
    """[(pc, opcode, iteration, lane addresses)] for warp ``warp`` of linear block ``block``."""
    code = core.program_arrays(prog)
    tv = np.zeros((1, 32, isa.TV), np.int64)
    addr = np.full((1, 33), -1, np.int64)   # lane addresses, then the width
    addr[0, 32] = 4
    bx, by, bz = _block_xyz(prog, block)
    trips = dispatch.setup(code.kind, code.params, bx, by, bz, warp, tv, 0)
    live = int(tv[0, :, 0].sum())
    pc, it, ph = 0, 0, 0
    out = []
    n = prog.template.shape[0]
    while True:
        pc, it, ph, act = core.settle(code, tv, 0, live, pc, it, trips, ph, addr, 0, 0)
        if pc >= n:
            return out
        out.append((pc, int(prog.template[pc, 0]), it, addr[0, :32].copy()))
        pc += 1


def thread_accesses(prog) -> dict:
    """{(blockIdx, threadIdx): [(op, array, element index), ...]} of every thread that
    touches global memory, in program order -- from the program face."""
    bx_, by_, bz_ = prog.launch.block
    wpb = -(-(bx_ * by_ * bz_) // 32)
    out = {}
    for b in range(prog.launch.blocks):
        bxyz = _block_xyz(prog, b)
        for w in range(wpb):
            for _, op, _, addr in warp_stream(prog, b, w):
                if op not in (isa.LDG, isa.STG):     # (templates have no atomics)
                    continue
                for lane in np.flatnonzero(addr >= 0):
                    lin = w * 32 + int(lane)
                    t = (lin % bx_, (lin // bx_) % by_, lin // (bx_ * by_))
                    name, idx = prog.array_of(int(addr[lane]))
                    out.setdefault((bxyz, t), []).append(("ld" if op == isa.LDG else "st", name, idx))
    return out


# what ``profile`` counts for one warp: the vector's fields, in order; the P_* indices
# (module-level ints: numba reads them as compile-time constants) come from this table
PROFILE_FIELDS = (
    "instructions",             # P_INSTR
    "fp32_cycles",              # P_FP32_CYC: cycles its instructions hold each pipe
    "sfu_cycles",               # P_SFU_CYC   (``pipes``: the engine's table)
    "global_loads",             # P_GLD
    "global_stores",            # P_GST
    "shared_accesses",          # P_SHR
    "global_load_segments",     # P_GLD_SEG
    "global_store_segments",    # P_GST_SEG
    "shared_passes",            # P_SH_PASS: bank-conflict passes, all of them
    "flops",                    # P_FLOPS
    "t1",                       # P_T1: the warp's time alone on an SM
    "body_iterations",          # P_BODY_ITERS: the warp's loop trips
    "int_cycles",               # P_INT_CYC
    "global_lines",             # P_GLINES: distinct L1 lines of each global access, summed
    "fp64_cycles",              # P_FP64_CYC
    "global_store_partial",     # P_GST_PART: lines a store writes part of a sector of
    "global_store_partial_segments",  # P_GST_PSEG: those lines' segments
    "body_scale",               # P_SCALE: the body's walked time scaled by 1 + this
    "global_atomics",           # P_ATOM: global atomics (``isa.ATOMICS``)
    "global_atomic_segments",   # P_ATOM_SEG
)
P = {name: i for i, name in enumerate(PROFILE_FIELDS)}
N_PROFILE = len(PROFILE_FIELDS)
P_INSTR = P["instructions"]
P_FP32_CYC = P["fp32_cycles"]
P_SFU_CYC = P["sfu_cycles"]
P_GLD = P["global_loads"]
P_GST = P["global_stores"]
P_SHR = P["shared_accesses"]
P_GLD_SEG = P["global_load_segments"]
P_GST_SEG = P["global_store_segments"]
P_SH_PASS = P["shared_passes"]
P_FLOPS = P["flops"]
P_T1 = P["t1"]
P_BODY_ITERS = P["body_iterations"]
P_INT_CYC = P["int_cycles"]
P_GLINES = P["global_lines"]
P_FP64_CYC = P["fp64_cycles"]
P_GST_PART = P["global_store_partial"]
P_GST_PSEG = P["global_store_partial_segments"]
P_SCALE = P["body_scale"]
P_ATOM = P["global_atomics"]
P_ATOM_SEG = P["global_atomic_segments"]


# the profile field of each pipe's cycles (``pipes``' units; -1: not a pipe)
_PIPE_FIELD = np.array([-1, P_FP32_CYC, P_INT_CYC, P_FP64_CYC, P_SFU_CYC, -1], np.int64)


@njit(cache=True, inline='always')
def _step(acc, a, op, dst, r0, r1, r2, act, t, addr, seg, scratch, segbuf, ready,
          seg_bytes, banks, bank_bytes, line_bytes, issue_iv, h, lat_mem, rec, in_body):
    """One instruction of a warp alone (``act`` lanes active, their addresses in
    ``addr[0]``): issued after the one before and its sources' results, counted into
    row ``a`` of ``acc`` (its pipe's cycles by ``pipes``' table, on hardware vector ``h``);
    its destination ready after its latency (``pipes.latency``; a global load's
    ``lat_mem``); recorded in ``rec`` while it has room (``REC_COLUMNS``; row 0 holds the
    count; ``in_body``: in the loop's body). Returns its issue cycle. ``retime`` replays
    the timing here."""
    start = t + issue_iv
    if r0 >= 0 and ready[r0] > start:
        start = ready[r0]
    if r1 >= 0 and ready[r1] > start:
        start = ready[r1]
    if r2 >= 0 and ready[r2] > start:
        start = ready[r2]
    acc[a, P_T1] += start - t
    t = start
    acc[a, P_INSTR] += 1
    units = 0         # (recorded) an access's segments or bank passes
    lines = 0         # and a global access's distinct lines
    svc = 0.0         # an atomic's service at its busiest line's unit
    if core.is_global(op):
        m = core.segments(addr, 0, seg_bytes, seg)
        per = max(1, line_bytes // seg_bytes)
        units = m
        for k in range(m):        # (segments sorted)
            if k == 0 or seg[0, k] // per != seg[0, k - 1] // per:
                lines += 1
        acc[a, P_GLINES] += lines
        if op == isa.LDG:
            acc[a, P_GLD] += 1
            acc[a, P_GLD_SEG] += m
            for k in range(m):
                if segbuf[0] + 2 < segbuf.shape[0]:
                    segbuf[segbuf[0] + 1] = seg[0, k]
                    segbuf[segbuf[0] + 2] = int(t)
                    segbuf[0] += 2
        elif op == isa.STG:
            acc[a, P_GST] += 1
            acc[a, P_GST_SEG] += m
            # its lines (the L1's, the L2's on every preset that sets partial writes'
            # cost) with a part-written segment, and their segments (``_line_write_service``)
            k = 0
            while k < m:
                j, partial = core.line_run(addr, 0, seg, k, m, seg_bytes, per)
                if partial:
                    acc[a, P_GST_PART] += 1
                    acc[a, P_GST_PSEG] += j - k
                k = j
        else:
            acc[a, P_ATOM] += 1
            acc[a, P_ATOM_SEG] += m
            svc = memory.atomic_request_service(addr, 0, seg, m, seg_bytes,
                                                int(h[H_L2LINE]) * int(h[H_L2SEC]),
                                                h[H_ACASC] if op == isa.ACAS else h[H_ATOMC],
                                                h[H_ALANEC])
    elif op == isa.LDS or op == isa.STS:
        acc[a, P_SHR] += 1
        passes = core.bank_passes(addr, 0, banks, bank_bytes, scratch)
        acc[a, P_SH_PASS] += passes
        units = passes
    else:
        f = _PIPE_FIELD[pipes.unit_of(op, h)]
        if f >= 0:
            acc[a, f] += pipes.hold(op, h)
            acc[a, P_FLOPS] += isa.flops(op, act)
    lat = pipes.latency(op, h, units, lat_mem)
    if op >= isa.ATOM and op <= isa.RED:
        # its round trip and its own turn at its lines' units, to a whole cycle (as
        # recorded: ``retime`` replays it)
        lat = float(int(pipes.latency(op, h, units, svc) + 0.5))
    if dst >= 0:
        ready[dst] = t + lat
    k = rec[0, 0]
    if k + 1 < rec.shape[0]:
        rec[k + 1, 0] = op
        rec[k + 1, 1] = dst
        rec[k + 1, 2] = r0
        rec[k + 1, 3] = r1
        rec[k + 1, 4] = r2
        rec[k + 1, 5] = int(lat + 0.5)
        rec[k + 1, 6] = units
        rec[k + 1, 7] = lines
        rec[k + 1, 8] = in_body
        rec[0, 0] = k + 1
    memory.last_use((acc, addr, seg, scratch, segbuf, ready, h, rec))
    return t


@njit(cache=True, nogil=True, error_model='numpy')
def profile(code, bx, by, bz, w, h, lat_mem, max_iters, segbuf, ikeep, iper, rec):
    """Counts for one warp of program ``code`` (a ``core.ProgramArrays``), walking at
    most ``max_iters`` body iterations and scaling the body's counts to the warp's
    trips; with ``ikeep`` > 0, it walks the first ``ikeep`` trips of each pass of an
    inner loop of ``iper`` trips (``core.settle`` maps them to the nest's) and scales
    those. ``P_T1`` is the warp's time alone on an SM (in-order issue, register
    dependencies, every load taking ``lat_mem``; ``P_SCALE`` the factor its body's part
    was scaled by, for ``retime``); ``P_GLINES`` the distinct ``line_bytes`` lines of
    each global access (the L1 looks up one tag a cycle: an access whose 32 lanes touch
    32 lines holds the LD/ST unit 32 cycles). Global load segments go into ``segbuf``,
    each with the cycle the warp asked for it (pairs; row 0 holds the number of
    entries), for reuse estimates; its instructions into ``rec`` while it has room
    (``scheduler.REC_COLUMNS``; row 0 holds their number), for ``scheduler.run`` and
    ``retime``.

    Compiled with ``error_model='numpy'`` and ``_step`` ending in ``memory.last_use``,
    as ``core.run``'s helpers: numba's reference counts of the arrays handed to
    ``_step`` at every instruction were 60% of a walk's time."""
    tmpl, body_end, nregs = code.template, code.body_end, code.n_regs
    seg_bytes, banks, bank_bytes = int(h[H_SEG]), int(h[H_BANKS]), int(h[H_BANKB])
    line_bytes, issue_iv = int(h[H_L1LINEB]), h[H_ISSUE]
    tv = np.zeros((1, 32, isa.TV), np.int64)
    addr = np.full((1, 33), -1, np.int64)
    addr[0, 32] = 4
    seg = np.zeros((1, 33), np.int64)
    scratch = np.zeros((banks + 1, 33), np.int64)
    ready = np.zeros(nregs)
    # the prologue's and epilogue's counts (row 0) and the body's (row 1): one table,
    # not two arrays taking turns, which numba counts references to at every turn
    acc = np.zeros((2, N_PROFILE))
    trips = dispatch.setup(code.kind, code.params, bx, by, bz, w, tv, 0)
    full_trips = trips
    if ikeep > 0:
        trips = (trips // iper) * ikeep + min(trips % iper, ikeep)
    live = 0
    for lane in range(32):
        live += tv[0, lane, 0]
    pc, it, ph = 0, 0, 0
    t = 0.0
    walked = 0
    n = tmpl.shape[0]
    while True:
        if ph == 1 and it >= max_iters:
            # skip the remaining iterations: jump to the epilogue
            walked = it
            it = trips
            pc = body_end
        pc, it, ph, act = core.settle(code, tv, 0, live, pc, it, trips, ph, addr, ikeep, iper)
        if pc >= n:
            break
        t = _step(acc, 1 if ph == 1 else 0, tmpl[pc, 0], tmpl[pc, 1], tmpl[pc, 2], tmpl[pc, 3],
                  tmpl[pc, 4], act, t, addr, seg, scratch, segbuf, ready, seg_bytes, banks,
                  bank_bytes, line_bytes, issue_iv, h, lat_mem, rec, ph == 1)
        pc += 1
    if walked == 0:
        walked = trips
    scale = (full_trips - walked) / walked if walked > 0 else 0.0
    tot = acc[0].copy()
    for k in range(N_PROFILE):
        tot[k] += acc[1, k] * (1.0 + scale)
    tot[P_T1] = t + acc[1, P_T1] * scale
    tot[P_BODY_ITERS] = full_trips
    tot[P_SCALE] = scale
    return tot


@njit(cache=True, nogil=True, error_model='numpy')
def profile_trace(rows, addresses, lo, hi, n_regs, h, lat_mem, segbuf, rec):
    """``profile``'s counts for one recorded warp: events ``rows[lo:hi]`` of a trace
    program (``traces.TraceProgram``; memory events' lane addresses in ``addresses``),
    every event walked (an event with no active lane skipped, as the engine skips it)."""
    seg_bytes, banks, bank_bytes = int(h[H_SEG]), int(h[H_BANKS]), int(h[H_BANKB])
    line_bytes, issue_iv = int(h[H_L1LINEB]), h[H_ISSUE]
    addr = np.full((1, 33), -1, np.int64)
    seg = np.zeros((1, 33), np.int64)
    scratch = np.zeros((banks + 1, 33), np.int64)
    ready = np.zeros(max(n_regs, 1))
    acc = np.zeros((1, N_PROFILE))
    t = 0.0
    for e in range(lo, hi):
        ln = rows[e, 5]
        act = 0
        if ln >= 0:
            for c in range(33):
                addr[0, c] = addresses[ln, c]
            for lane in range(32):
                if addr[0, lane] >= 0:
                    act += 1
        else:
            m = ~ln
            for lane in range(32):
                on = (m >> lane) & 1
                addr[0, lane] = 0 if on else -1
                act += on
            addr[0, 32] = 4
        if act == 0:
            continue
        t = _step(acc, 0, rows[e, 0], rows[e, 1], rows[e, 2], rows[e, 3], rows[e, 4], act, t,
                  addr, seg, scratch, segbuf, ready, seg_bytes, banks, bank_bytes,
                  line_bytes, issue_iv, h, lat_mem, rec, False)
    tot = acc[0].copy()
    tot[P_T1] = t
    tot[P_BODY_ITERS] = 0
    return tot


@njit(cache=True, nogil=True)
def retime(rec, n_regs, h, lat_mem, scale):
    """A walked warp's ``P_T1`` again with its global loads taking ``lat_mem``, from the
    recording of every instruction it walked (``rec``: ``profile``'s or
    ``profile_trace``'s; ``scale``: the profile's ``P_SCALE``): ``_step``'s timing
    replayed (``pipes.latency``), in its order of operations, so that at the walk's own
    latency it gives the walk's figure exactly. Counts do not depend on the latency; only
    this does."""
    issue_iv = h[H_ISSUE]
    ready = np.zeros(max(n_regs, 1))
    t = 0.0
    body = 0.0
    for k in range(1, rec[0, 0] + 1):
        op = rec[k, 0]
        start = t + issue_iv
        for c in range(2, 5):
            r = rec[k, c]
            if r >= 0 and ready[r] > start:
                start = ready[r]
        if rec[k, 8]:
            body += start - t
        t = start
        if rec[k, 1] >= 0:
            # an atomic's latency does not depend on the loads': as walked
            lat = float(rec[k, 5]) if op >= isa.ATOM and op <= isa.RED else \
                pipes.latency(op, h, rec[k, 6], lat_mem)
            ready[rec[k, 1]] = t + lat
    return t + body * scale


# ---------------------------------------------------------------- the traces' oracle

def from_template(prog, hw=None, blocks=None) -> traces.TraceProgram:
    """The trace of template program ``prog``: every warp of every block walked
    (``walk.warp_stream``), each executed instruction one event (width 4), ``block_work``
    each block's events. ``blocks``: keep only those blocks' events (every block is
    still walked for its work). ``hw``: the launch is checked against it."""
    if hw is not None:
        prog.launch.check(hw)
    B = prog.launch.blocks
    wpb = -(-prog.launch.threads_per_block // 32)
    keep = np.arange(B) if blocks is None else np.unique(np.asarray(blocks, np.int64))
    keep_set = set(keep.tolist())
    tmpl = prog.template
    rows, addrs, begin = [], [], [0]
    work = np.zeros(B)
    n_addr = 0
    for b in range(B):
        for w in range(wpb):
            ev = warp_stream(prog, b, w)
            work[b] += len(ev)
            if b not in keep_set:
                continue
            for pc, op, _, a in ev:
                if op in traces.MEMORY_OPS:
                    lanes = n_addr
                    addrs.append(np.append(a, 4))
                    n_addr += 1
                else:
                    mask = int(np.dot((a >= 0).astype(np.int64), 1 << np.arange(32, dtype=np.int64)))
                    lanes = ~mask
                rows.append((op, *tmpl[pc, 1:5], lanes))
            begin.append(len(rows))
    names = {a[0] for a in prog.arrays}

    def arrays_of(opcode):      # as the engine reads a template's (engine._arrays)
        return tuple(sorted({prog.streams[int(s)].array for s in tmpl[tmpl[:, 0] == opcode, 5]}
                            & names))
    loads, stores = arrays_of(isa.LDG), arrays_of(isa.STG)
    return traces.TraceProgram(
        name=prog.name, launch=prog.launch, params=prog.params[:6].copy(),
        param_names=isa.LAUNCH_PARAMS, rows=np.array(rows, np.int64).reshape(-1, 6),
        addresses=np.array(addrs, np.int64).reshape(-1, 33), warp_begin=np.array(begin, np.int64),
        blocks=keep, block_work=work, n_regs=int(prog.n_regs), arrays=tuple(prog.arrays),
        loads=loads, stores=stores, regs_per_thread=prog.regs_per_thread,
        smem_per_block=prog.smem_per_block, resources_source=prog.resources_source,
        flops=prog.flops, min_bytes=prog.min_bytes, label=prog.label, notes=tuple(prog.notes))

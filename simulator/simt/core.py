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

Observation only (it changes no cycle): a warp's time from its start to its issue of an
instruction, less its earlier issues, splits into what it waited on, per warp
(``WARP_CAUSES``, ``stall_split``): ``barrier`` (until its barrier released it),
``memory`` / ``dependency`` (until the scoreboard let it: a global load's result or
another's -- a block's start latency counts as dependency, as the schedulers charge it),
``pipe`` (its operands ready, until its unit's last busy period ended), ``mshr`` (until
the MSHR it was last refused freed) and ``not_selected`` (ready, its scheduler issuing
another warp). Each issue takes the scheduler's issue interval. ``run`` keeps, per
``Recording``, the first issues' waits (``WAIT_COLUMNS``), their warps' lives
(``WARP_COLUMNS``), the first global accesses (``MEMORY_COLUMNS``) and, per site of
the program (a template's row, a trace's ``sites``), every issue's counts
(``stats.SITE_COLUMNS``).

A program is a template (``isa.Program``: rows, a loop, the kernel module's address
functions) or a trace (``traces.TraceProgram``: every warp's recorded events, their lane
addresses and access widths); ``settle`` reads either, and the rest of the model is the
same for both.

``run`` reads its inputs by name: a :class:`ProgramArrays` (the program), the hardware
vector, a :class:`BlockPlan` (which blocks, from when, with which loop cuts) and the
:class:`memory.L2State` it carries on; it returns a :class:`CoreRun`'s fields. Inside,
the machine's state is four named tables allocated once a run -- :class:`Warps`,
:class:`BlockSlots`, :class:`Schedulers`, :class:`SMs` -- and each step of the cycle loop
is a helper inlined into it (``inline='always'``: no call, no allocation per cycle).
numba counts references to every array it hands a helper (an atomic increment and
decrement) unless its pruning pass proves them redundant; the helpers are shaped so that
it can (``memory.last_use``), and ``run`` is compiled with ``error_model='numpy'``, whose
divisions have no ZeroDivisionError path to keep them alive (nothing here divides by
zero). The one helper that calls other jitted code, ``settle`` (the kernel's address
functions), is called by ``run`` itself, with the few arrays it needs. numba copies a
helper's code, with every helper inlined into it, at each call, at a cost that grows
with the square of its size: ``run`` calls the helpers of an issued instruction
(``_arithmetic``, ``_shared_access``, ``_global_access``) itself, not through one more
helper that holds them (which took a first run's compilation from 60 to 90 s).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from . import (
    _stamp,  # noqa: F401  (numba caches stamped together)
    dispatch,
    isa,
    memory,
    pipes,
)

# (constants tables imported by name, for numba: kept compact)
# isort: off
from .hwvec import (
    H_ACASC, H_ALANEC, H_ATOMC, H_ATOMLAT, H_BANKB, H_BANKS, H_BPS, H_BSTART, H_GTO, H_ISSUE,
    H_L1BW, H_L1HASH, H_L1LINEB, H_L1LINEC, H_L1PLINEC, H_L1SETS, H_L1WAYS, H_L2LAT, H_L2LINE,
    H_L2PART, H_L2SEC, H_L2SVC, H_LAUNCH, H_LDSTII, H_MAXW, H_MSHR, H_NSCHED, H_NSM, H_SEG, H_WPB)
# isort: on
from .memory import (
    atomic_service,
    l1_fill,
    l1_holds,
    l1_read,
    l1_write,
    l2_access,
    l2_atomic,
    l2_dirty,
    last_use,
)

# (constants tables imported by name, for numba: kept compact)
# isort: off
from .stats import (
    C_BARRIER, C_DEPENDENCY, C_DRAMB, C_ISSUED, C_L1B, C_L2B, C_MEMORY, C_MSHR, C_NOT_SELECTED,
    C_PIPE, C_SHARED_PASSES, C_THREADS, N_SITE_COLUMNS, N_STATS, S_CONFLICT, S_CYCLES_VISITED,
    S_ATOMS, S_ATOMSVC, S_DONE_BLOCKS, S_DRB, S_DWB, S_END, S_FLOPS, S_INSTR, S_L1B, S_L1MISS,
    S_L2MISS, S_L2RB, S_L2WB, S_LDST, S_LOOKS, S_SFU, S_SHB, S_SP, S_THREADS)
# isort: on
from .traces import TRACE, settle_trace, trace_live, trace_warp

INF = 1e300
CAUSES = ("idle", "memory", "dependency", "pipe", "barrier", "mshr")
# what a warp waited on before an issue (``stall_split``; ``stats.SITE_COLUMNS`` 2 to 7)
WARP_CAUSES = ("memory", "dependency", "pipe", "mshr", "barrier", "not_selected")
# the recording's tables (float64; cycles; -1: none):
# per kept issue (``CoreRun.waits``, a row per ``CoreRun.trace`` row): the cycle its warp's
# wait for it began (its previous issue's end, or the warp's start), the cycle a barrier
# released it in that wait (-1: none), the cycle the scoreboard let it issue, 1 if that
# waited on a global load, the cycle its unit was last free before it (-1: it needs none),
# the cycle the MSHR it was last refused freed (-1: none), its pc (template or trace row),
# its warp's row of ``CoreRun.warps``, its site (-1: no per-site accounting)
WAIT_COLUMNS = ("wait_from", "barrier_release", "ready", "on_load", "unit_free", "mshr_free",
                "pc", "warp_row", "site")
# per warp with a kept issue (``CoreRun.warps``): its start, the cycle it finished (its last
# issue ended, or a barrier released it with nothing left; -1: not within the run), its SM,
# scheduler, block id, warp index, block position and the instructions it issued (kept or not)
WARP_COLUMNS = ("start", "finish", "sm", "scheduler", "block", "warp", "position", "issued")
# per kept global access (``CoreRun.memory``): its issue cycle, the cycle its last segment's
# data arrived (a store: the L2 accepted it), the level that served it (``LEVELS``: every
# segment hit the L1; some went to the L2 -- a store always; some L2 read missed to DRAM),
# SM, scheduler, warp row (-1: its warp has none), block id, warp index, opcode, segments, pc
MEMORY_COLUMNS = ("issue", "done", "level", "sm", "scheduler", "warp_row", "block", "warp",
                  "op", "segments", "pc")
LEVELS = ("L1 hit", "L2", "DRAM")
# ``hp``, the hardware vector, is read through the H_* indices of ``hwvec.HW_FIELDS``; the
# statistics vector ``st`` through the S_* indices of ``stats.LaunchStats``
# stall causes by index (``CAUSES``)
IDLE, MEMORY, DEPENDENCY, PIPE, BARRIER, MSHR = range(len(CAUSES))
# a warp slot's state (``Warps.state``)
FREE, RUNNING, AT_BARRIER = 0, 1, 2

_owner = memory.owner        # the L2 bank / DRAM channel hash (the measure suites' tests read it)


class ProgramArrays(NamedTuple):
    """A program as the numba code reads it (``program_arrays``; a trace program's,
    ``traces.program_arrays``: one type serves both)."""

    kind: int                # its face's index in ``dispatch.FACES`` (``dispatch.kind_of``);
                             # ``traces.TRACE`` (-1): a trace program
    params: np.ndarray       # int64 parameter vector (``isa``'s module doc); a trace's packs
                             # its warps' event ranges and lane addresses too (``traces``)
    template: np.ndarray     # (instructions, 6): op, dst, src0, src1, src2, stream
                             # (a trace: its events, the last column its lanes)
    pro_end: int             # the first row of the loop body
    body_end: int            # the first row of the epilogue
    n_regs: int              # template registers (the scoreboard's width)
    # (no more arrays: numba counts references to each array of this tuple wherever it is
    # handed on unpruned -- ``settle``, per instruction -- so a trace's arrays travel in
    # ``params``)


def program_arrays(prog) -> ProgramArrays:
    """The arrays of an ``isa.Program`` that ``run``, ``settle`` and ``block_trips`` read."""
    if getattr(prog, "face", None) is None:
        raise ValueError(f"{prog.name}: a trace program; this reads template programs only "
                         "(the engine builds a trace's arrays with its plan)")
    return ProgramArrays(dispatch.kind_of(prog.face), prog.params, prog.template,
                         int(prog.pro_end), int(prog.body_end), int(prog.n_regs))


class BlockPlan(NamedTuple):
    """Which blocks of a launch one ``run`` simulates, from when, and how far each warp's
    loop runs (``engine.Plan`` makes it)."""

    blocks: np.ndarray       # int64 block ids, in dispatch order ("positions")
    skips: np.ndarray        # (at, to) int64 rows: when position at is next, go on from to
    t0: float                # the cycle the run starts
    trip_cap: int            # > 0: every warp's loop cut at that many trips
    inner_per: int           # > 0: trip_cap cuts each pass of an inner loop of this many trips


class Recording(NamedTuple):
    """What ``run`` keeps besides its counts (observation only: no cycle changes)."""

    trace_cap: int           # the first issues kept (``CoreRun.trace``, ``waits``, ``warps``)
    memory_cap: int          # the first global accesses kept (``CoreRun.memory``)
    site_of: np.ndarray      # int64 per program row (template or trace event): its site
    n_sites: int             # sites (``CoreRun.sites`` rows); 0: no per-site accounting


def no_recording() -> Recording:
    return Recording(0, 0, np.zeros(0, np.int64), 0)


class CoreRun(NamedTuple):
    """What ``run`` returns (as a plain tuple of these fields; see its end)."""

    stats: np.ndarray            # the statistics vector (``stats.S_*``)
    issued_per_sm: np.ndarray    # warp instructions each SM issued
    block_sm: np.ndarray         # per position of ``BlockPlan.blocks``: its SM (-1: skipped),
    block_start: np.ndarray      # the cycle it started
    block_end: np.ndarray        # and the cycle it ended
    stalls: np.ndarray           # stall cycles per ``CAUSES``
    trace: np.ndarray            # (cycle, sm, scheduler, block, warp, opcode) of the first issues
    waits: np.ndarray            # per trace row: ``WAIT_COLUMNS``
    warps: np.ndarray            # ``WARP_COLUMNS`` of the warps of the trace's rows
    memory: np.ndarray           # ``MEMORY_COLUMNS`` of the first global accesses
    sites: np.ndarray            # (n_sites, len(stats.SITE_COLUMNS)): every issue's counts


class Warps(NamedTuple):
    """Every warp slot of the GPU, row g = sm * max_warps + slot."""

    state: np.ndarray        # FREE, RUNNING or AT_BARRIER
    pc: np.ndarray           # its next instruction (a template row)
    it: np.ndarray           # its loop trip
    trips: np.ndarray        # the trips its loop runs
    phase: np.ndarray        # 0 prologue, 1 body, 2 epilogue
    block: np.ndarray        # its block slot (``BlockSlots`` row)
    index: np.ndarray        # its warp index within the block
    age: np.ndarray          # when it started, for GTO's oldest first
    active: np.ndarray       # active lanes of its next instruction
    addr: np.ndarray         # (warps, 33) its next instruction's lane addresses (-1: inactive),
                             # then its access width in bytes (4 but a trace's wider accesses)
    tv: np.ndarray           # (warps, 32, isa.TV) its thread variables (the kernel's setup)
    live: np.ndarray         # its threads that exist
    reg_ready: np.ndarray    # (warps, registers) the cycle each register is ready
    reg_load: np.ndarray     # (warps, registers) whether a global load writes it
    dep: np.ndarray          # the cycle the scoreboard lets its next instruction issue
    dep_load: np.ndarray     # 1 if that waits on a global load
    seg: np.ndarray          # (warps, 65) its next global instruction's segments, sorted
    nseg: np.ndarray         # how many
    # observation only (``Recording``; no cycle reads them)
    born: np.ndarray         # the cycle it started
    wfrom: np.ndarray        # the cycle its wait for its next instruction began
    brel: np.ndarray         # the cycle a barrier released it in that wait (-1: none)
    mwait: np.ndarray        # the cycle the MSHR it was last refused frees (-1: none)
    row: np.ndarray          # its row of ``CoreRun.warps`` (-1: none)


class BlockSlots(NamedTuple):
    """Every resident-block slot of the GPU, row b = sm * blocks_per_sm + k."""

    position: np.ndarray     # the position (in ``BlockPlan.blocks``) of its block; -1: free
    live: np.ndarray         # its warps not finished
    at_barrier: np.ndarray   # its warps waiting at a barrier
    free: np.ndarray         # the cycle the slot frees
    acked: np.ndarray        # the cycle its last store is acknowledged (it retires no sooner)
    xyz: np.ndarray          # (slots, 3) its block's coordinates


class Schedulers(NamedTuple):
    """Every warp scheduler, indexed (sm, scheduler)."""

    order: np.ndarray        # (sm, scheduler, slots) its live warp slots, oldest first
    count: np.ndarray        # how many
    issue_free: np.ndarray   # the cycle it may issue again (issue interval)
    last: np.ndarray         # the warp slot it issued last (-1: none)
    next_check: np.ndarray   # the cycle it is next worth asking
    charged: np.ndarray      # the cycle up to which its stalls are charged
    cause: np.ndarray        # the cause its cycles since then are charged to


class SMs(NamedTuple):
    """Every SM's dispatcher, shared pipes, MSHRs and L1."""

    launch_free: np.ndarray  # the cycle its dispatcher may start a block
    # (sm, scheduler, unit): the cycle each unit (``pipes``) is free; the units the SM's
    # schedulers share (``pipes.SM_UNITS``) under scheduler 0 (``_pipe_sc``). One table:
    # a unit's field picked by a branch costs the loop a reference count per array
    pipe_free: np.ndarray
    store_free: np.ndarray   # the cycle it may send the L2 its next part-written line
    mshr: np.ndarray         # (sm, mshrs) min-heaps of outstanding completion cycles
    n_mshr: np.ndarray       # outstanding entries of each
    l1_tags: np.ndarray      # (sm, sets, ways) the L1s (``memory``'s cache arrays)
    l1_lru: np.ndarray
    l1_fill: np.ndarray


@njit(cache=True, inline='always')
def settle(code, tv, g, live, pc, it, trips, ph, addr, ikeep, iper):
    """Advance a warp of program ``code`` (a ``ProgramArrays``) to its next instruction
    that has an active lane, from ``pc``.

    ``tv`` and ``addr`` hold every warp's thread variables and lane addresses; this is
    warp ``g``'s row. Returns (pc, it, ph, active lanes); pc == len(template) means the
    warp has finished. A trace program's warp (``code.kind == traces.TRACE``) runs its
    own events up to ``trips``, the event after its last (``traces.settle_trace``);
    ``addr[g, 32]`` holds the access width in bytes (4 for a template).
    ``ph`` is 0 in the prologue, 1 in the body, 2 in the epilogue. ``ikeep`` > 0: the
    loop's inner loop cut (``BlockPlan.inner_per``): trip ``it`` is the nest's trip
    ``(it // ikeep) * iper + it % ikeep``."""
    # (one exit, no ``break``: numba then drops the reference counts of the arrays it is
    # handed, as for every helper inlined into ``run``'s loop)
    if code.kind == TRACE:
        # its own events: ``trips`` is the event after its last
        pc, act = settle_trace(code.template, code.params, g, pc, trips, addr)
    else:
        tmpl, pro_end, body_end = code.template, code.pro_end, code.body_end
        n = tmpl.shape[0]
        act = 0
        found = False
        while not found:
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
                pc, act, found = n, 0, True
            else:
                s = tmpl[pc, 5]
                if s >= 0 and same and tmpl[pc - 1, 5] == s:
                    # a run of rows on one stream (a guarded group): its lanes are still in addr[g]
                    act = 0
                    for lane in range(32):
                        if addr[g, lane] >= 0:
                            act += 1
                elif s >= 0:
                    ita = it if ikeep == 0 else (it // ikeep) * iper + it % ikeep
                    act = dispatch.lanes(code.kind, code.params, tv, g, ita, s, addr)
                else:
                    act = live
                    for lane in range(32):
                        addr[g, lane] = 0 if tv[g, lane, 0] else -1
                if act > 0:
                    found = True
                else:
                    pc += 1
    last_use((code, tv, addr))
    return pc, it, ph, act


@njit(cache=True, inline='always')
def is_global(op):
    """Whether class ``op`` goes through the L1 to the L2: a load, a store, an atomic
    (``isa.GLOBAL_OPS``)."""
    return op == isa.LDG or op == isa.STG or (op >= isa.ATOM and op <= isa.RED)


@njit(cache=True, inline='always')
def _shift(d):
    """log2 of ``d`` where it is a power of two (a division by it a shift: the
    addresses here are never negative), else -1."""
    sh = -1
    if d > 0 and (d & (d - 1)) == 0:
        sh = 0
        while (1 << sh) < d:
            sh += 1
    return sh


@njit(cache=True, inline='always')
def _fdiv(a, d, sh):
    """``a // d`` for ``a`` >= 0, a shift where ``sh = _shift(d)`` is one."""
    return a >> sh if sh >= 0 else a // d


@njit(cache=True, inline='always')
def segments(addr, g, seg_bytes, out):
    """Distinct segments of warp g's active lanes' 4-byte accesses, sorted into out[g];
    returns their count (``_access_segments`` of 4-byte accesses)."""
    return _access_segments(addr, g, seg_bytes, out, 4)


@njit(cache=True, inline='always')
def _access_segments(addr, g, seg_bytes, out, width):
    """``segments`` of accesses of ``width`` bytes: each lane covers [a, a + width) (up
    to 4 bytes, the segment of a)."""
    m = 0
    sh = _shift(seg_bytes)
    for lane in range(32):
        a = addr[g, lane]
        if a < 0:
            continue
        s = _fdiv(a, seg_bytes, sh)
        last = s if width <= 4 else _fdiv(a + width - 1, seg_bytes, sh)
        while s <= last:
            j = m
            while j > 0 and out[g, j - 1] > s:
                j -= 1
            if not (j > 0 and out[g, j - 1] == s):
                for k in range(m, j, -1):
                    out[g, k] = out[g, k - 1]
                out[g, j] = s
                m += 1
            s += 1
    last_use((addr, out))
    return m


@njit(cache=True, inline='always')
def line_run(addr, g, seg, k, m, seg_bytes, per):
    """The segments ``seg[g, k:j]`` (sorted) of one line of ``per`` segments, from k:
    (j, whether warp g's lanes write part of any of them)."""
    line = seg[g, k] // per
    j = k
    partial = False
    while j < m and seg[g, j] // per == line:
        if _segment_bytes(addr, g, seg[g, j], seg_bytes, addr[g, 32]) < seg_bytes:
            partial = True
        j += 1
    last_use((addr, seg))
    return j, partial


@njit(cache=True, inline='always')
def _line_write_service(addr, g, seg, k, m, seg_bytes, hp):
    """A store's write to one L2 line, its segments ``seg[g, k:j]`` (sorted): the cycles
    each of its sectors holds the line's slice -- a sector's service, or where the lanes
    write part of any of them, together at least ``l2.partial_write_cycles`` (a slice
    reads, merges and writes a request's part-written sectors: the lines suite's stores,
    1 to 4 sectors of a line a request). Returns (cycles a sector, j, whether part-written)."""
    per_seg = max(1, seg_bytes // int(hp[H_L2SEC]))
    j, partial = line_run(addr, g, seg, k, m, seg_bytes, max(1, int(hp[H_L2LINE]) // per_seg))
    svc = hp[H_L2SVC]
    if partial and hp[H_L2PART] > 0:
        svc = max(svc, hp[H_L2PART] / ((j - k) * per_seg))
    last_use((addr, seg, hp))
    return svc, j, partial


@njit(cache=True, inline='always')
def _segment_bytes(addr, g, s, seg_bytes, width):
    """Bytes of segment s that warp g's lanes access with ``width``-byte accesses (lanes
    on one word counted each: such a store counts as whole)."""
    lo_s = s * seg_bytes
    n = 0
    for lane in range(32):
        a = addr[g, lane]
        if a < 0:
            continue
        lo, hi = max(a, lo_s), min(a + max(width, 1), lo_s + seg_bytes)
        if hi > lo:
            n += hi - lo
    last_use((addr,))
    return n


@njit(cache=True, inline='always')
def bank_passes(addr, g, banks, bank_bytes, scratch):
    """Shared-memory passes: the most distinct words any one bank must serve (lanes
    reading one word share it: a broadcast). ``scratch`` is (banks + 1, 33) of int64."""
    return _access_passes(addr, g, banks, bank_bytes, scratch, 4)


@njit(cache=True, inline='always')
def _access_passes(addr, g, banks, bank_bytes, scratch, width):
    """``bank_passes`` of accesses of ``width`` bytes: each lane's [a, a + width) words
    (up to 4 bytes, the word of a) each count at their bank."""
    for b in range(banks):
        scratch[b, 0] = 0
    best = 1
    for lane in range(32):
        a = addr[g, lane]
        if a < 0:
            continue
        last = (a + width - 1) // bank_bytes if width > 4 else a // bank_bytes
        for wd in range(a // bank_bytes, last + 1):
            b = wd % banks
            n = scratch[b, 0]
            dup = False
            k = 1
            while k <= n and not dup:
                dup = scratch[b, k] == wd
                k += 1
            if not dup:
                scratch[b, n + 1] = wd
                scratch[b, 0] = n + 1
                if n + 1 > best:
                    best = n + 1
    last_use((addr, scratch))
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
    placed = False
    while i > 0 and not placed:
        par = (i - 1) // 2
        if h[r, par] <= h[r, i]:
            placed = True
        else:
            h[r, par], h[r, i] = h[r, i], h[r, par]
            i = par
    return n + 1


@njit(cache=True, inline='always')
def _heap_pop(h, r, n):
    """Remove the minimum of h[r, :n]; returns the new size."""
    n -= 1
    h[r, 0] = h[r, n]
    i = 0
    placed = False
    while not placed:
        lft, m = 2 * i + 1, i
        if lft < n and h[r, lft] < h[r, m]:
            m = lft
        if lft + 1 < n and h[r, lft + 1] < h[r, m]:
            m = lft + 1
        if m == i:
            placed = True
        else:
            h[r, m], h[r, i] = h[r, i], h[r, m]
            i = m
    return n


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


@njit(cache=True, inline='always')
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
def _prepare(g, pc, tmpl, w, seg_bytes):
    """Cache what the scheduler asks of warp g's next instruction (``Warps.dep``,
    ``dep_load``, and for a global access its segments)."""
    if pc < tmpl.shape[0]:
        w.dep[g], w.dep_load[g] = _dep_ready(g, pc, tmpl, w.reg_ready, w.reg_load)
        if is_global(tmpl[pc, 0]):
            w.nseg[g] = _access_segments(w.addr, g, seg_bytes, w.seg, w.addr[g, 32])
    last_use((tmpl, w))


@njit(cache=True, nogil=True)
def block_trips(code, n_blocks, wpb):
    """Per block: loop trips summed over its warps (the sampler's measure of block work)
    and the most trips of any one of its warps."""
    kind, p = code.kind, code.params
    gx, gy = p[0], p[1]
    total = np.zeros(n_blocks, np.int64)
    most = np.zeros(n_blocks, np.int64)
    for bl in range(n_blocks):
        for w in range(wpb):
            t = dispatch.trips(kind, p, bl % gx, (bl // gx) % gy, bl // (gx * gy), w)
            total[bl] += t
            most[bl] = max(most[bl], t)
    return total, most


# ---------------------------------------------------------------- the machine's tables

@njit(cache=True)
def _new_warps(nwarps, nregs):
    addr = np.full((nwarps, 33), -1, np.int64)
    addr[:, 32] = 4
    return Warps(np.zeros(nwarps, np.int64), np.zeros(nwarps, np.int64),
                 np.zeros(nwarps, np.int64), np.zeros(nwarps, np.int64),
                 np.zeros(nwarps, np.int64), np.zeros(nwarps, np.int64),
                 np.zeros(nwarps, np.int64), np.zeros(nwarps, np.int64),
                 np.zeros(nwarps, np.int64), addr,
                 np.zeros((nwarps, 32, isa.TV), np.int64), np.zeros(nwarps, np.int64),
                 np.zeros((nwarps, nregs), np.float64), np.zeros((nwarps, nregs), np.bool_),
                 np.zeros(nwarps), np.zeros(nwarps, np.int64),
                 np.zeros((nwarps, 65), np.int64), np.zeros(nwarps, np.int64),
                 np.zeros(nwarps), np.zeros(nwarps), np.full(nwarps, -1.0), np.full(nwarps, -1.0),
                 np.full(nwarps, -1, np.int64))


@njit(cache=True)
def _new_block_slots(nb, t0):
    return BlockSlots(np.full(nb, -1, np.int64), np.zeros(nb, np.int64), np.zeros(nb, np.int64),
                      np.full(nb, t0), np.zeros(nb), np.zeros((nb, 3), np.int64))


@njit(cache=True)
def _new_schedulers(n_sm, n_sched, maxw, t0):
    per_sched = (maxw + n_sched - 1) // n_sched
    return Schedulers(np.zeros((n_sm, n_sched, per_sched), np.int64),
                      np.zeros((n_sm, n_sched), np.int64),
                      np.zeros((n_sm, n_sched)), np.full((n_sm, n_sched), -1, np.int64),
                      np.full((n_sm, n_sched), t0),
                      np.full((n_sm, n_sched), t0), np.zeros((n_sm, n_sched), np.int64))


@njit(cache=True)
def _new_sms(n_sm, n_sched, nm, l1s, l1w, t0):
    return SMs(np.full(n_sm, t0), np.zeros((n_sm, n_sched, pipes.N_UNITS)), np.zeros(n_sm),
               np.zeros((n_sm, nm)),
               np.zeros(n_sm, np.int64), np.full((n_sm, l1s, l1w), -1, np.int64),
               np.zeros((n_sm, l1s, l1w), np.int64), np.zeros((n_sm, l1s, l1w)))


# ---------------------------------------------------------------- block dispatch

@njit(cache=True, inline='always')
def _start_warp(t, g, wi, b, k, sm, age, code, hp, plan, w, bs, sch):
    """Warp ``wi`` of the block in slot ``b`` (the SM's ``k``-th) into warp slot ``g``:
    its thread variables, its loop trips (cut as the plan says), its first instruction.
    Returns whether it has any to run (a warp with none stays FREE)."""
    trip_cap, inner_per = plan.trip_cap, plan.inner_per
    pc0 = 0
    if code.kind == TRACE:
        # its events, from the trace's row of its block's position (``trips``: their end)
        pc0, trips = trace_warp(code.params, bs.position[b] * int(hp[H_WPB]) + wi)
        live_ = trace_live(code.params, wi)
    else:
        trips = dispatch.setup(code.kind, code.params, bs.xyz[b, 0], bs.xyz[b, 1], bs.xyz[b, 2],
                               wi, w.tv, g)
        if trip_cap > 0 and inner_per > 0:
            trips = ((trips // inner_per) * trip_cap + min(trips % inner_per, trip_cap))
        elif trip_cap > 0 and trips > trip_cap:
            trips = trip_cap
        live_ = 0
        for lane in range(32):
            live_ += w.tv[g, lane, 0]
    w.live[g] = live_
    ikeep = trip_cap if inner_per > 0 else 0
    pc, it, ph, act = settle(code, w.tv, g, w.live[g], pc0, 0, trips, 0, w.addr, ikeep, inner_per)
    for r in range(code.n_regs):
        w.reg_ready[g, r] = 0.0
        w.reg_load[g, r] = False
    _prepare(g, pc, code.template, w, int(hp[H_SEG]))
    started = pc < code.template.shape[0]
    if not started:
        w.state[g] = FREE
    else:
        if w.dep[g] < t + hp[H_BSTART]:
            w.dep[g] = t + hp[H_BSTART]
            w.dep_load[g] = 0
        w.state[g] = RUNNING
        w.pc[g], w.it[g], w.phase[g], w.active[g] = pc, it, ph, act
        w.trips[g] = trips
        w.block[g] = b
        w.index[g] = wi
        w.age[g] = age
        w.born[g] = t
        w.wfrom[g] = t
        w.brel[g] = -1.0
        w.mwait[g] = -1.0
        w.row[g] = -1
        slot = k * int(hp[H_WPB]) + wi
        n_sched = int(hp[H_NSCHED])
        sc = slot % n_sched
        sch.order[sm, sc, sch.count[sm, sc]] = slot
        sch.count[sm, sc] += 1
    last_use((code, hp, plan, w, bs, sch))
    return started


@njit(cache=True, inline='always')
def _start_block(t, b, k, sm, pos, age, code, hp, plan, w, bs, sch, out):
    """The block at position ``pos`` of the plan into slot ``b`` of SM ``sm`` at cycle t,
    with its warps; returns (age, its live warps)."""
    maxw, wpb = int(hp[H_MAXW]), int(hp[H_WPB])
    gx, gy = code.params[0], code.params[1]
    bl = plan.blocks[pos]
    bs.position[b] = pos
    bs.xyz[b, 0] = bl % gx
    bs.xyz[b, 1] = (bl // gx) % gy
    bs.xyz[b, 2] = bl // (gx * gy)
    out.block_sm[pos] = sm
    out.block_start[pos] = t
    bs.acked[b] = t + hp[H_BSTART]
    live = 0
    for wi in range(wpb):
        if _start_warp(t, sm * maxw + k * wpb + wi, wi, b, k, sm, age, code, hp, plan, w, bs, sch):
            age += 1
            live += 1
    bs.live[b] = live
    bs.at_barrier[b] = 0
    for sc in range(int(hp[H_NSCHED])):
        if sch.next_check[sm, sc] > t:
            sch.next_check[sm, sc] = t
    last_use((code, hp, plan, w, bs, sch, out))
    return age, live


@njit(cache=True, inline='always')
def _dispatch_blocks(t, next_blk, nsk, done_blocks, age, end_t, code, hp, plan, w, bs, sch, sms,
                     out):
    """Start blocks at cycle t: one per SM per pass, SMs in order, into free slots of SMs
    whose dispatcher is free, until none starts; positions in ``plan.skips`` are jumped
    over (counted done). Returns (next_blk, nsk, done_blocks, age, end_t)."""
    n_sm, bps = int(hp[H_NSM]), int(hp[H_BPS])
    nblk = plan.blocks.shape[0]
    skips = plan.skips
    progress = True
    while progress and next_blk < nblk:
        progress = False
        sm = 0
        while sm < n_sm and next_blk < nblk:
            started = False
            k = 0
            while k < bps and not started:
                b = sm * bps + k
                if bs.position[b] < 0 and bs.free[b] <= t and sms.launch_free[sm] <= t:
                    sms.launch_free[sm] = t + hp[H_LAUNCH]
                    while nsk < skips.shape[0] and next_blk == skips[nsk, 0]:
                        done_blocks += skips[nsk, 1] - skips[nsk, 0]
                        next_blk = skips[nsk, 1]
                        nsk += 1
                    pos = next_blk
                    next_blk += 1
                    age, live = _start_block(t, b, k, sm, pos, age, code, hp, plan, w, bs, sch, out)
                    if live == 0:
                        # nothing to run: the block ends when it has started
                        bs.position[b] = -1
                        bs.free[b] = bs.acked[b]
                        out.block_end[pos] = bs.acked[b]
                        if bs.acked[b] > end_t:
                            end_t = bs.acked[b]
                        done_blocks += 1
                    progress = True
                    started = True
                k += 1
            sm += 1
    last_use((code, hp, plan, w, bs, sch, sms, out))
    return next_blk, nsk, done_blocks, age, end_t


@njit(cache=True, inline='always')
def _next_dispatch(hp, bs, sms):
    """The first cycle a free block slot could take a block (its slot and its SM's
    dispatcher free)."""
    bps = int(hp[H_BPS])
    nd = INF
    for b in range(bs.position.shape[0]):
        if bs.position[b] < 0:
            ready = max(bs.free[b], sms.launch_free[b // bps])
            if ready < nd:
                nd = ready
    last_use((hp, bs, sms))
    return nd


# ---------------------------------------------------------------- issue

@njit(cache=True, inline='always')
def _look(t, sm, sc, tmpl, hp, unit_by_op, w, sch, sms, stalls, st):
    """Scheduler (sm, sc), due at cycle t: still busy from its last issue, it is due
    again when that ends; else its cycles since the last look are charged to their
    cause, and it picks a warp (``_pick_warp``); with none ready, it is due again when
    the soonest could issue, its cycles until then charged to why. Returns the warp it
    issues, -1 for none."""
    busy = sch.issue_free[sm, sc] > t
    if busy:
        sch.next_check[sm, sc] = sch.issue_free[sm, sc]
    g = -1
    if not busy:
        st[S_LOOKS] += 1
        stalls[sch.cause[sm, sc]] += t - sch.charged[sm, sc]
        sch.charged[sm, sc] = t
        g, best_ready, best_cause = _pick_warp(t, sm, sc, tmpl, hp, unit_by_op, w, sch, sms)
        if g < 0:
            sch.cause[sm, sc] = best_cause
            sch.next_check[sm, sc] = best_ready if best_ready > t else t + 1
    last_use((tmpl, hp, unit_by_op, w, sch, sms, stalls, st))
    return g


@njit(cache=True, inline='always')
def _pick_warp(t, sm, sc, tmpl, hp, unit_by_op, w, sch, sms):
    """The warp scheduler (sm, sc) issues from at cycle t: GTO, the last warp first
    (greedy), then the others oldest first; LRR, round robin from the warp after the last
    one issued. A warp can issue when it is running, its scoreboard lets it, its pipe is
    free and (global access) the MSHRs its missing segments need are. Returns (warp, the
    soonest cycle one of them could, its stall cause); warp -1: none can."""
    n_sched, maxw, nm = int(hp[H_NSCHED]), int(hp[H_MAXW]), int(hp[H_MSHR])
    l1s, l1w = int(hp[H_L1SETS]), int(hp[H_L1WAYS])
    gto = hp[H_GTO] > 0
    best_ready = INF
    best_cause = IDLE
    nslots = (maxw - sc + n_sched - 1) // n_sched
    first = 0
    lw = sch.last[sm, sc]
    if not gto and lw >= 0:
        first = ((lw - sc) // n_sched + 1) % nslots
    nw = sch.count[sm, sc] if gto else nslots
    pick = -1
    j = -2 if (gto and lw >= 0) else -1
    while pick < 0 and j + 1 < nw:
        j += 1
        if j < 0:
            slot = lw
        elif gto:
            slot = sch.order[sm, sc, j]
            if slot == lw:
                continue
        else:
            slot = sc + n_sched * ((first + j) % nslots)
        g = sm * maxw + slot
        ws = w.state[g]
        if ws == FREE:
            continue
        if ws == AT_BARRIER:
            if best_ready == INF:
                best_cause = BARRIER
            continue
        if w.dep[g] > t:
            if w.dep[g] < best_ready:
                best_ready = w.dep[g]
                best_cause = MEMORY if w.dep_load[g] else DEPENDENCY
            continue
        op = tmpl[w.pc[g], 0]
        unit = _unit_free(unit_by_op[op], sm, sc, t, sch, sms)
        if unit > t:
            if unit < best_ready:
                best_ready = unit
                best_cause = PIPE
            continue
        if is_global(op):
            # enough MSHRs for the segments that will miss (stores and atomics: all)?
            need = w.nseg[g]
            if op == isa.LDG:
                need = 0
                for k in range(w.nseg[g]):
                    if not l1_holds(sms.l1_tags, sm, w.seg[g, k], l1s, l1w, hp[H_L1HASH] > 0):
                        need += 1
            if need > nm:
                need = nm
            if need > 0:
                while sms.n_mshr[sm] > 0 and sms.mshr[sm, 0] <= t:
                    sms.n_mshr[sm] = _heap_pop(sms.mshr, sm, sms.n_mshr[sm])
                if need > nm - sms.n_mshr[sm]:
                    w.mwait[g] = sms.mshr[sm, 0]      # (observation only)
                    if sms.mshr[sm, 0] < best_ready:
                        best_ready = sms.mshr[sm, 0]
                        best_cause = MSHR
                    continue
        pick = g
    last_use((tmpl, hp, unit_by_op, w, sch, sms))
    return pick, best_ready, best_cause


@njit(cache=True, inline='always')
def _issue(g, sm, sc, t, tmpl, hp, w, sch, out):
    """Scheduler (sm, sc) issues warp g's next instruction at cycle t: counted, and the
    scheduler busy for an issue interval (its cycles charged to ``pipe`` until then).
    Returns the instruction's (op, dst)."""
    issue_iv = hp[H_ISSUE]
    sch.last[sm, sc] = g - sm * int(hp[H_MAXW])
    out.stats[S_INSTR] += 1
    out.issued_per_sm[sm] += 1
    sch.issue_free[sm, sc] = t + issue_iv
    sch.next_check[sm, sc] = t + issue_iv
    sch.charged[sm, sc] = t + issue_iv
    sch.cause[sm, sc] = PIPE
    op, dst = tmpl[w.pc[g], 0], tmpl[w.pc[g], 1]
    last_use((tmpl, hp, w, sch, out))
    return op, dst


@njit(cache=True, inline='always')
def _trace(trace, row, t, sm, sc, block, warp, op):
    """Row ``row`` of the trace: (cycle, SM, scheduler, block id, warp, opcode)."""
    trace[row, 0] = int(t)
    trace[row, 1] = sm
    trace[row, 2] = sc
    trace[row, 3] = block
    trace[row, 4] = warp
    trace[row, 5] = op


# ---------------------------------------------------------------- observation (Recording)

@njit(cache=True, inline='always')
def stall_split(t, wait_from, barrier_release, ready, unit_free, mshr_free):
    """What a warp that issued at cycle t waited on since ``wait_from`` (``WAIT_COLUMNS``),
    as consecutive spans' lengths in cycles: (barrier: until ``barrier_release``;
    scoreboard: until ``ready`` -- memory or dependency, as the row's ``on_load`` says;
    pipe: until ``unit_free``; mshr: until ``mshr_free``; not selected: the rest, until
    t). Each starts where the one before ends; -1 (none) and times already past count
    nothing. Their sum is t - wait_from (0 where the warp issued as soon as it could)."""
    a = wait_from
    bar = 0.0
    if barrier_release > a:
        bar = min(barrier_release, t) - a
        a += bar
    r = a
    if ready > r:
        r = min(ready, t)
    p = r
    if unit_free > p:
        p = min(unit_free, t)
    m = p
    if mshr_free > m:
        m = min(mshr_free, t)
    return bar, r - a, p - r, m - p, t - m


@njit(cache=True, inline='always')
def _keep_issue(g, sm, sc, t, op, pc, site, uf, done, l1m0, l2m0, keep, ntr, nwr, nmr, blk, pos,
                mcap, w, st, waits, wtab, mem):
    """Where ``keep``: warp g's issue of row ``pc`` at cycle t as row ``ntr`` of ``waits``
    (``uf`` its unit's free cycle before it), its warp a row of ``wtab`` if it has none; a
    global access as a row of ``mem`` while fewer than ``mcap`` are kept (``done`` its
    completion, ``l1m0``, ``l2m0`` the L1 and L2 misses counted before it). Returns (warp
    rows, memory rows) kept. (Called only while something is kept: the per-issue work of
    the recording is ``run``'s own.)"""
    row = w.row[g]
    if keep:
        if row < 0 and nwr < wtab.shape[0]:
            row = nwr
            w.row[g] = row
            wtab[row, 0] = w.born[g]
            wtab[row, 1] = -1.0
            wtab[row, 2] = sm
            wtab[row, 3] = sc
            wtab[row, 4] = blk
            wtab[row, 5] = w.index[g]
            wtab[row, 6] = pos
            wtab[row, 7] = 0.0
            nwr += 1
        waits[ntr, 0] = w.wfrom[g]
        waits[ntr, 1] = w.brel[g] if w.brel[g] > w.wfrom[g] else -1.0
        waits[ntr, 2] = w.dep[g]
        waits[ntr, 3] = w.dep_load[g]
        waits[ntr, 4] = uf
        waits[ntr, 5] = w.mwait[g]
        waits[ntr, 6] = pc
        waits[ntr, 7] = row
        waits[ntr, 8] = site
    if is_global(op) and nmr < mcap:
        level = 0
        if st[S_L2MISS] > l2m0:
            level = 2
        elif st[S_L1MISS] > l1m0 or op != isa.LDG:
            level = 1
        mem[nmr, 0] = t
        mem[nmr, 1] = done
        mem[nmr, 2] = level
        mem[nmr, 3] = sm
        mem[nmr, 4] = sc
        mem[nmr, 5] = row
        mem[nmr, 6] = blk
        mem[nmr, 7] = w.index[g]
        mem[nmr, 8] = op
        mem[nmr, 9] = w.nseg[g]
        mem[nmr, 10] = pc
        nmr += 1
    last_use((w, st, waits, wtab, mem))
    return nwr, nmr


@njit(cache=True, inline='always')
def _unit_free(u, sm, sc, t, sch, sms):
    """The cycle unit ``u`` (``pipes``) of scheduler (sm, sc) is next free; ``t`` for
    none."""
    free = t
    if u != pipes.NONE:
        free = sms.pipe_free[sm, _pipe_sc(u, sc), u]
    last_use((sch, sms))
    return free


@njit(cache=True, inline='always')
def _pipe_sc(u, sc):
    """The scheduler under which ``SMs.pipe_free`` keeps unit ``u`` of scheduler ``sc``:
    0 for the units an SM's schedulers share."""
    return 0 if u == pipes.SFU or u == pipes.LDST else sc


@njit(cache=True, inline='always')
def _arithmetic(g, sm, sc, t, op, dst, act, unit_by_op, hold_by_op, lat_by_op, w, sch, sms, st):
    """An ALU, FP32, FP64, branch, uniform or SFU instruction of warp g issued at cycle
    t: its pipe held (``pipes``: the unit and for how long), its destination ready after
    its latency, its counts. (Memory instructions and barriers: nothing.)"""
    u = unit_by_op[op]
    if u == pipes.SP or u == pipes.INT or u == pipes.FP64 or u == pipes.SFU \
            or op == isa.UNI:
        until = t + hold_by_op[op]
        if u == pipes.SFU:
            st[S_SFU] += 1
        if u != pipes.NONE:
            sms.pipe_free[sm, _pipe_sc(u, sc), u] = until
        if u != pipes.SFU and u != pipes.NONE:
            st[S_SP] += 1
            st[S_FLOPS] += isa.flops(op, act)
        if dst >= 0:
            w.reg_ready[g, dst] = t + lat_by_op[op]
            w.reg_load[g, dst] = False
    last_use((unit_by_op, hold_by_op, lat_by_op, w, sch, sms, st))


@njit(cache=True, inline='always')
def _shared_access(g, sm, t, op, dst, act, hp, w, sms, st, scratch):
    """A shared-memory load or store of warp g issued at cycle t: the LD/ST unit held for
    its bank-conflict passes, a load's destination ready after the shared latency and the
    extra passes. (Other instructions: nothing.)"""
    if op == isa.LDS or op == isa.STS:
        width = w.addr[g, 32]
        passes = _access_passes(w.addr, g, int(hp[H_BANKS]), int(hp[H_BANKB]), scratch, width)
        sms.pipe_free[sm, 0, pipes.LDST] = t + hp[H_LDSTII] * passes
        st[S_LDST] += 1
        st[S_SHB] += width * act
        st[S_CONFLICT] += passes - 1
        if dst >= 0:
            w.reg_ready[g, dst] = t + pipes.latency(op, hp, passes, 0.0)
            w.reg_load[g, dst] = False
    last_use((hp, w, sms, st, scratch))


@njit(cache=True, inline='always')
def _store_segment(store, s, svc, g, sm, t, stamp, end_t, hp, w, bs, sms, l2, st):
    """Where ``store``: segment s of warp g's store at cycle t, written through the L1
    (dropping its copy) to the L2's sectors, each holding its slice ``svc`` cycles
    (``_line_write_service``); it holds an MSHR until the L2 accepts it, and its block
    retires no sooner. Returns end_t."""
    if store:
        seg_bytes = int(hp[H_SEG])
        l2_per_seg = max(1, seg_bytes // int(hp[H_L2SEC]))
        l1_write(s, hp, sms.l1_tags, sm, st, True)
        acc = t
        for u in range(l2_per_seg):
            acc = max(acc, l2_access(s * l2_per_seg + u, t, True, svc, hp, l2, stamp, st))
        # the write occupies an MSHR until the L2 accepts it; the block retires no sooner
        # (the micro suite's block_residency: a store adds some 50 cycles to a block's
        # life, not an L2 round trip)
        sms.n_mshr[sm] = _alloc(sms.mshr, sm, sms.n_mshr[sm], int(hp[H_MSHR]), t, acc)
        if acc > bs.acked[w.block[g]]:
            bs.acked[w.block[g]] = acc
        if acc > end_t:
            end_t = acc
    last_use((hp, w, bs, sms, l2, st))
    return end_t


@njit(cache=True, inline='always')
def _load_segment(load, s, sm, t, stamp, done, hp, sms, l2, st):
    """Where ``load``: segment s of a load at cycle t through SM sm's L1; a miss takes an
    MSHR until the L2 (and DRAM) bring its sectors, and the L1 allocates it. Returns the
    later of ``done`` and the cycle its data is there."""
    if load:
        d = l1_read(s, t, hp, sms.l1_tags, sms.l1_lru, sms.l1_fill, sm, stamp, st)
        if d < 0:
            # a miss: the L2 (and DRAM) fetch it, the L1 allocates, an MSHR is held until
            # it arrives
            seg_bytes = int(hp[H_SEG])
            l2_per_seg = max(1, seg_bytes // int(hp[H_L2SEC]))
            d = t
            for u in range(l2_per_seg):
                d = max(d, l2_access(s * l2_per_seg + u, t, False, hp[H_L2SVC], hp, l2, stamp,
                                     st))
            l1_fill(s, hp, sms.l1_tags, sms.l1_lru, sms.l1_fill, sm, stamp, d)
            sms.n_mshr[sm] = _alloc(sms.mshr, sm, sms.n_mshr[sm], int(hp[H_MSHR]), t, d)
        if d > done:
            done = d
    last_use((hp, sms, l2, st))
    return done


@njit(cache=True, inline='always')
def _ldst_hold(g, m, seg_bytes, hp, w):
    """The cycles a global access of warp g (its ``m`` segments sorted in ``w.seg[g]``)
    holds the SM's LD/ST unit: its segments at the L1's bandwidth, or, where the L1 looks
    up one tag a cycle, its distinct lines."""
    hold = max(hp[H_LDSTII], m * seg_bytes / hp[H_L1BW])
    if hp[H_L1LINEC] > 0:
        per = max(1, int(hp[H_L1LINEB]) // seg_bytes)
        lines = 0
        for k in range(m):
            if k == 0 or w.seg[g, k] // per != w.seg[g, k - 1] // per:
                lines += 1
        hold = max(hold, lines * hp[H_L1LINEC])
    last_use((hp, w))
    return hold


@njit(cache=True, inline='always')
def _global_access(g, sm, t, op, dst, stamp, end_t, hp, w, bs, sms, l2, st):
    """A global load or store of warp g issued at cycle t: the LD/ST unit held for its
    segments (or its lines, one tag a cycle; a store's part-written lines then leave the
    SM one each ``1 / sm.l1.partial_lines_per_cycle``), each segment stored (``_store_segment``) or
    loaded (``_load_segment``); a load's destination is ready when its last segment
    arrives. (Other instructions: nothing.) Returns (end_t -- a store's acknowledgement
    may end the run later --, the cycle its last segment's data arrived or, a store, the
    L2 accepted it; t for other instructions)."""
    done = t
    if op == isa.LDG or op == isa.STG:
        seg_bytes = int(hp[H_SEG])
        m = w.nseg[g]
        st[S_LDST] += 1
        sms.pipe_free[sm, 0, pipes.LDST] = t + _ldst_hold(g, m, seg_bytes, hp, w)
        store = op == isa.STG
        svc = hp[H_L2SVC]
        run_end = 0
        ts = t
        for k in range(m):
            if store and k >= run_end:
                svc, run_end, partial = _line_write_service(w.addr, g, w.seg, k, m, seg_bytes,
                                                            hp)
                # a part-written line leaves the SM at ``sm.l1.partial_lines_per_cycle``
                # (the lines suite's stores on a sixteenth of the SMs: about 2.1 cycles
                # a line), behind the LD/ST unit: loads go on meanwhile
                ts = t
                if partial and hp[H_L1PLINEC] > 0:
                    ts = max(t, sms.store_free[sm])
                    sms.store_free[sm] = ts + hp[H_L1PLINEC]
            # (both called, each acting on its own kind: see ``memory.last_use``; a
            # store's segments' acknowledgements gather in done, then end_t)
            done = _store_segment(store, w.seg[g, k], svc, g, sm, ts, stamp, done, hp, w, bs,
                                  sms, l2, st)
            done = _load_segment(not store, w.seg[g, k], sm, t, stamp, done, hp, sms, l2, st)
        if store and m > 0 and done > end_t:
            end_t = done
        if op == isa.LDG and dst >= 0:
            w.reg_ready[g, dst] = done
            w.reg_load[g, dst] = True
    last_use((hp, w, bs, sms, l2, st))
    return end_t, done


@njit(cache=True, inline='always')
def _atomic_access(g, sm, t, op, dst, blk, stamp, end_t, hp, w, bs, sms, l2, st):
    """A global atomic of warp g (of block id ``blk``) issued at cycle t (``isa.ATOMICS``):
    the LD/ST unit held as for a store (its segments at the L1's bandwidth, its lines one
    tag a cycle), the L1's copies of its segments dropped; half its round trip on
    (``atomic_latency``), each of its lines' sectors is read at the L2 (a miss fetches it
    from DRAM) and written, and the line's atomic unit serves it from when its data is
    there (``memory.l2_atomic``: ``memory.atomic_service`` cycles, a CAS's or an
    exchange's at the CAS rate); its result comes back half the round trip after its last
    line's service. It holds an MSHR a segment until then and its block retires no sooner.
    (Other instructions: nothing.) Returns (end_t, the cycle it completes; t for other
    instructions)."""
    done = t
    if op >= isa.ATOM and op <= isa.RED:
        seg_bytes = int(hp[H_SEG])
        m = w.nseg[g]
        lsec = int(hp[H_L2SEC])
        line_bytes = int(hp[H_L2LINE]) * lsec
        l2_per_seg = max(1, seg_bytes // lsec)
        st[S_LDST] += 1
        st[S_ATOMS] += 1
        sms.pipe_free[sm, 0, pipes.LDST] = t + _ldst_hold(g, m, seg_bytes, hp, w)
        half = 0.5 * hp[H_ATOMLAT]
        arrive = t + half
        full = hp[H_ACASC] if op == isa.ACAS else hp[H_ATOMC]
        k = 0
        while k < m:
            # the run of its segments on one L2 line (segments sorted)
            line = (w.seg[g, k] * seg_bytes) // line_bytes
            ready = arrive
            j = k
            while j < m and (w.seg[g, j] * seg_bytes) // line_bytes == line:
                s = w.seg[g, j]
                l1_write(s, hp, sms.l1_tags, sm, st, False)
                for u in range(l2_per_seg):
                    s2 = s * l2_per_seg + u
                    # the data at the slice: an L2 read's completion less its way back
                    r = l2_access(s2, arrive, False, hp[H_L2SVC], hp, l2, stamp, st) - hp[H_L2LAT]
                    l2_dirty(s2, hp, l2, st)
                    if r > ready:
                        ready = r
                j += 1
            svc = atomic_service(w.addr, g, line, line_bytes, full, hp[H_ALANEC])
            st[S_ATOMSVC] += svc
            start = l2_atomic(line, ready, svc, blk, hp, l2)
            if start + svc + half > done:
                done = start + svc + half
            k = j
        for _ in range(m):
            sms.n_mshr[sm] = _alloc(sms.mshr, sm, sms.n_mshr[sm], int(hp[H_MSHR]), t, done)
        if dst >= 0:
            w.reg_ready[g, dst] = done
            w.reg_load[g, dst] = True
        if done > bs.acked[w.block[g]]:
            bs.acked[w.block[g]] = done
        if done > end_t:
            end_t = done
    last_use((hp, w, bs, sms, l2, st))
    return end_t, done


# ---------------------------------------------------------------- after the issue

@njit(cache=True, inline='always')
def _finish_warp(g, sm, sc, t, end_t, hp, w, bs, sch):
    """Warp g of scheduler (sm, sc) ran past its template's end at cycle t: its slot and
    its scheduler's last-issued mark are freed, its block has a warp fewer. Returns
    end_t."""
    maxw = int(hp[H_MAXW])
    w.state[g] = FREE
    bs.live[w.block[g]] -= 1
    _retire(sch.order, sch.count, sm, sc, g - sm * maxw)
    if t + 1 > end_t:
        end_t = t + 1
    if sch.last[sm, sc] == g - sm * maxw:
        sch.last[sm, sc] = -1
    last_use((hp, w, bs, sch))
    return end_t


@njit(cache=True, inline='always')
def _release_barrier(t, sm, b, code, hp, plan, w, bs, sch, wtab):
    """Every live warp of the block in slot b has arrived at its barrier: each goes on
    (a warp with nothing left finishes), and the SM's schedulers look again next cycle.
    (It calls the kernel's address functions, so numba keeps the reference counts of
    what it is handed; a barrier releases once a block's warps have all arrived.)"""
    maxw, bps, wpb = int(hp[H_MAXW]), int(hp[H_BPS]), int(hp[H_WPB])
    n_sched = int(hp[H_NSCHED])
    ikeep = plan.trip_cap if plan.inner_per > 0 else 0
    n = code.template.shape[0]
    bs.at_barrier[b] = 0
    for wi in range(wpb):
        g2 = sm * maxw + (b - sm * bps) * wpb + wi
        if w.state[g2] == AT_BARRIER:
            w.state[g2] = RUNNING
            w.brel[g2] = t
            pc, it, ph, act = settle(code, w.tv, g2, w.live[g2], w.pc[g2] + 1, w.it[g2],
                                     w.trips[g2], w.phase[g2], w.addr, ikeep, plan.inner_per)
            w.pc[g2], w.it[g2], w.phase[g2], w.active[g2] = pc, it, ph, act
            _prepare(g2, pc, code.template, w, int(hp[H_SEG]))
            if pc >= n:
                w.state[g2] = FREE
                bs.live[b] -= 1
                if w.row[g2] >= 0:
                    wtab[w.row[g2], 1] = max(t, w.wfrom[g2])
                s2 = (g2 - sm * maxw) % n_sched
                _retire(sch.order, sch.count, sm, s2, g2 - sm * maxw)
    for s2 in range(n_sched):
        if sch.next_check[sm, s2] > t + 1:
            sch.next_check[sm, s2] = t + 1
    last_use((code, hp, plan, w, bs, sch, wtab))


@njit(cache=True, inline='always')
def _retire_block(t, sm, b, done_blocks, next_dispatch, end_t, sms, bs, out):
    """The block in slot b has no live warp left: it ends when its last store is
    acknowledged (at least a cycle after t), freeing its slot. Returns (done_blocks,
    next_dispatch, end_t)."""
    fin = max(t + 1, bs.acked[b])
    out.block_end[bs.position[b]] = fin
    bs.position[b] = -1
    bs.free[b] = fin
    if fin > end_t:
        end_t = fin
    ready = max(bs.free[b], sms.launch_free[sm])
    if ready < next_dispatch:
        next_dispatch = ready
    last_use((sms, bs, out))
    return done_blocks + 1, next_dispatch, end_t


@njit(cache=True, inline='always')
def _next_cycle(t, sch, dispatching, next_dispatch):
    """The next cycle worth visiting: the soonest any scheduler could issue or (while
    blocks are left to dispatch) a slot could take one; at least t + 1; INF: none."""
    tn = INF
    n_sm, n_sched = sch.next_check.shape
    for sm in range(n_sm):
        for sc in range(n_sched):
            if sch.next_check[sm, sc] < tn:
                tn = sch.next_check[sm, sc]
    if dispatching and next_dispatch < tn:
        tn = next_dispatch
    if tn <= t:
        tn = t + 1
    last_use((sch,))
    return tn


# ---------------------------------------------------------------- the cycle loop

@njit(cache=True, inline='always')
def _count_site(sites, site, op, act, on_load, bar, score, pipe, mshr, nsel, st, cf0, l1b0,
                l2b0, dr0):
    """An issue's counts into row ``site`` of ``sites``: its lanes, what it waited on
    (``stall_split``'s spans; the scoreboard's as memory where it waited on a load), and
    its shared passes or bytes per level (the run's counts less those before it)."""
    sites[site, C_ISSUED] += 1.0
    sites[site, C_THREADS] += act
    if on_load:
        sites[site, C_MEMORY] += score
    else:
        sites[site, C_DEPENDENCY] += score
    sites[site, C_PIPE] += pipe
    sites[site, C_MSHR] += mshr
    sites[site, C_BARRIER] += bar
    sites[site, C_NOT_SELECTED] += nsel
    if op == isa.LDS or op == isa.STS:
        sites[site, C_SHARED_PASSES] += 1.0 + st[S_CONFLICT] - cf0
    elif is_global(op):
        sites[site, C_L1B] += st[S_L1B] - l1b0
        sites[site, C_L2B] += st[S_L2RB] + st[S_L2WB] - l2b0
        sites[site, C_DRAMB] += st[S_DRB] + st[S_DWB] - dr0
    last_use((sites, st))


@njit(cache=True, nogil=True, error_model='numpy')
def run(code, hp, plan, l2, rec):
    """Simulate the blocks of the launch of program ``code`` (a :class:`ProgramArrays`)
    that :class:`BlockPlan` ``plan`` names (dispatched in its order, its skips jumped over
    with the machine kept warm, its loops cut as it says) on hardware vector ``hp``, from
    cycle ``plan.t0``, with the shared, carried-over L2 and DRAM state ``l2`` (a
    ``memory.L2State``, updated in place). ``rec``, a :class:`Recording`, says what to
    keep besides the counts (observation only). Returns the fields of a :class:`CoreRun`,
    in order: ``CoreRun(*run(...))`` names them."""
    n_sm, n_sched = int(hp[H_NSM]), int(hp[H_NSCHED])
    maxw, bps = int(hp[H_MAXW]), int(hp[H_BPS])
    ikeep = plan.trip_cap if plan.inner_per > 0 else 0
    t0 = float(plan.t0)
    nblk = plan.blocks.shape[0]
    tmpl = code.template
    ntmpl, seg_bytes = tmpl.shape[0], int(hp[H_SEG])
    w = _new_warps(n_sm * maxw, code.n_regs)
    bs = _new_block_slots(n_sm * bps, t0)
    sch = _new_schedulers(n_sm, n_sched, maxw, t0)
    sms = _new_sms(n_sm, n_sched, int(hp[H_MSHR]), int(hp[H_L1SETS]), int(hp[H_L1WAYS]), t0)
    scratch = np.zeros((int(hp[H_BANKS]) + 1, 33), np.int64)    # bank-conflict counting
    trace_cap = rec.trace_cap
    out = CoreRun(np.zeros(N_STATS), np.zeros(n_sm, np.int64), np.full(nblk, -1, np.int64),
                  np.zeros(nblk), np.zeros(nblk), np.zeros(len(CAUSES)),
                  np.zeros((max(trace_cap, 1), 6), np.int64),
                  np.zeros((max(trace_cap, 1), len(WAIT_COLUMNS))),
                  np.zeros((max(trace_cap, 1), len(WARP_COLUMNS))),
                  np.zeros((max(rec.memory_cap, 1), len(MEMORY_COLUMNS))),
                  np.zeros((rec.n_sites, N_SITE_COLUMNS)))
    st, stalls, trace = out.stats, out.stalls, out.trace
    waits, wtab, mem, sites = out.waits, out.warps, out.memory, out.sites
    # observation: anything to record at an issue?
    observe = trace_cap > 0 or rec.memory_cap > 0 or rec.n_sites > 0
    # what the loop reads itself, as locals (numba counts references to the arrays a
    # helper is handed; see ``memory.last_use``)
    blocks, inner_per, next_check = plan.blocks, plan.inner_per, sch.next_check
    wstate, wpc, wit, wph, wtrips, wact = w.state, w.pc, w.it, w.phase, w.trips, w.active
    wlive, wrow = w.live, w.row
    wfrom, wbrel, wmwait, wdep, wdepl = w.wfrom, w.brel, w.mwait, w.dep, w.dep_load
    issue_iv = hp[H_ISSUE]
    unit_by_op, hold_by_op, lat_by_op = pipes.resolve(hp)
    site_of, n_sites, mcap = rec.site_of, rec.n_sites, rec.memory_cap
    wtv, waddr, wblock, windex = w.tv, w.addr, w.block, w.index
    bpos, blive, bbar = bs.position, bs.live, bs.at_barrier
    ntr = 0
    nwr = 0
    nmr = 0
    stamp = 0
    age = 0
    next_blk = 0                                  # the next position of ``plan.blocks``
    nsk = 0                                       # the next row of ``plan.skips``
    done_blocks = 0
    next_dispatch = t0
    t = t0
    end_t = t0
    while done_blocks < nblk:
        if next_blk < nblk and next_dispatch <= t:
            next_blk, nsk, done_blocks, age, end_t = _dispatch_blocks(
                t, next_blk, nsk, done_blocks, age, end_t, code, hp, plan, w, bs, sch, sms, out)
            next_dispatch = _next_dispatch(hp, bs, sms)
        st[S_CYCLES_VISITED] += 1
        for sm in range(n_sm):
            for sc in range(n_sched):
                if next_check[sm, sc] > t:
                    continue
                g = _look(t, sm, sc, tmpl, hp, unit_by_op, w, sch, sms, stalls, st)
                if g >= 0:
                    op, dst = _issue(g, sm, sc, t, tmpl, hp, w, sch, out)
                    st[S_THREADS] += wact[g]
                    stamp += 1
                    b = wblock[g]
                    keep = ntr < trace_cap
                    if keep:
                        _trace(trace, ntr, t, sm, sc, blocks[bpos[b]], windex[g], op)
                    # observation: the unit's free cycle and the counts before the issue
                    uf = -1.0
                    l1b0 = l2b0 = dr0 = cf0 = l1m0 = l2m0 = 0.0
                    if observe:
                        u = unit_by_op[op]
                        uf = -1.0 if u == pipes.NONE else _unit_free(u, sm, sc, t, sch, sms)
                        l1b0, l2b0, dr0 = st[S_L1B], st[S_L2RB] + st[S_L2WB], st[S_DRB] + st[S_DWB]
                        cf0, l1m0, l2m0 = st[S_CONFLICT], st[S_L1MISS], st[S_L2MISS]
                    # its pipe held, its destination's ready cycle set, its counts: each
                    # kind's helper acts on its own kinds only (``BAR``: none of them)
                    _arithmetic(g, sm, sc, t, op, dst, wact[g], unit_by_op, hold_by_op,
                                lat_by_op, w, sch, sms, st)
                    _shared_access(g, sm, t, op, dst, wact[g], hp, w, sms, st, scratch)
                    end_t, done = _global_access(g, sm, t, op, dst, stamp, end_t, hp, w, bs, sms,
                                                 l2, st)
                    end_t, done_a = _atomic_access(g, sm, t, op, dst, blocks[bpos[b]], stamp,
                                                   end_t, hp, w, bs, sms, l2, st)
                    done = max(done, done_a)
                    if observe:
                        # what the warp waited on (``stall_split``), into its site's counts
                        bar, score, pipe, mshr, nsel = stall_split(t, wfrom[g], wbrel[g], wdep[g],
                                                                   uf, wmwait[g])
                        pcg = wpc[g]
                        site = -1
                        if n_sites > 0:
                            site = site_of[pcg]
                            _count_site(sites, site, op, wact[g], wdepl[g], bar, score, pipe,
                                        mshr, nsel, st, cf0, l1b0, l2b0, dr0)
                        if keep or (is_global(op) and nmr < mcap):
                            nwr, nmr = _keep_issue(g, sm, sc, t, op, pcg, site, uf, done, l1m0,
                                                   l2m0, keep, ntr, nwr, nmr, blocks[bpos[b]],
                                                   bpos[b], mcap, w, st, waits, wtab, mem)
                        if wrow[g] >= 0:
                            wtab[wrow[g], 7] += 1.0
                        # its next wait begins when this issue ends
                        wfrom[g] = t + issue_iv
                        wbrel[g] = -1.0
                        wmwait[g] = -1.0
                    if keep:
                        ntr += 1
                    # the warp waits at its barrier or moves on; its block goes on or ends
                    if op == isa.BAR:
                        wstate[g] = AT_BARRIER
                        bbar[b] += 1
                    else:
                        pc, it, ph, act = settle(code, wtv, g, wlive[g], wpc[g] + 1, wit[g],
                                                 wtrips[g], wph[g], waddr, ikeep, inner_per)
                        wpc[g], wit[g], wph[g], wact[g] = pc, it, ph, act
                        if pc < ntmpl:
                            _prepare(g, pc, tmpl, w, seg_bytes)
                        else:
                            end_t = _finish_warp(g, sm, sc, t, end_t, hp, w, bs, sch)
                            if wrow[g] >= 0:
                                wtab[wrow[g], 1] = w.wfrom[g]
                    if blive[b] > 0 and bbar[b] == blive[b]:
                        _release_barrier(t, sm, b, code, hp, plan, w, bs, sch, wtab)
                    if blive[b] == 0 and bpos[b] >= 0:
                        done_blocks, next_dispatch, end_t = _retire_block(
                            t, sm, b, done_blocks, next_dispatch, end_t, sms, bs, out)
        tn = _next_cycle(t, sch, next_blk < nblk, next_dispatch)
        if tn >= INF:
            break
        t = np.ceil(tn)
    end = max(end_t, t)
    for sm in range(n_sm):
        for sc in range(n_sched):
            if end > sch.charged[sm, sc]:
                stalls[sch.cause[sm, sc]] += end - sch.charged[sm, sc]
    st[S_END] = end
    st[S_DONE_BLOCKS] = done_blocks
    # a plain tuple: numba boxes a namedtuple by calling its Python class, and a Ctrl-C
    # arriving just then (its KeyboardInterrupt raised in that call) crashes the process
    return (st, out.issued_per_sm, out.block_sm, out.block_start, out.block_end, stalls,
            trace[:ntr], waits[:ntr], wtab[:nwr], mem[:nmr], sites)

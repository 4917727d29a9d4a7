"""``simulate_kernel``: time any kernel from its own SASS on a SIMT preset.

The path (docs/kernels.md; its sources: docs/sources.md, "Kernels from their code"):

1. compile: numba -> PTX for the preset's compute capability -> ptxas -> SASS, and the
   tagged build that names each SASS instruction's PTX line and the kernel's registers
   and static shared memory (``lineinfo``); the map of PTX blocks onto SASS blocks
   (``sassmap.build``);
2. probe: a few blocks spread over the grid run on the PTX emulator, recorded, and
   turned into SASS streams: their warp instructions give every block's work
   (interpolated between the probes by block id);
3. plan: the engine's sampler picks, from that work, the blocks a run simulates
   (``engine.trace_plan_blocks``; every block in full mode);
4. trace: those blocks run on the emulator, recorded, and become per-warp SASS streams
   (class, registers, active mask, 32 lane addresses and width per instruction):
   a ``simt.traces.TraceProgram``;
5. time: the SIMT engine runs the trace program (``engine.simulate``).

The kernel's arrays are read, never written: the emulated launch works on its own copy
of memory. Blocks not traced do not run at all, so a kernel whose blocks read what other
blocks wrote in the same launch (a last-block reduction, a global counter) sees
memory as the launch found it in those blocks; its control flow, when it depends on
such values, is that of the traced blocks.
"""
from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

import numpy as np

from simulator import arguments as arg
from simulator.kernelcode import compiled, sassclass, sassmap
from simulator.kernelcode.atomics import atomic_timing
from simulator.kernelcode.compiled import Compiled
from simulator.kernelcode.launch import (
    MAX_BLOCK,
    MAX_GRID,
    TraceTooLong,
    emulate_kernel,
    launch_dims,
)
from simulator.kernelcode.toolchain import cc_of, sm_arch

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence

    from hwmodels.schema import SIMTGPU
    from simulator.result import Result
    from simulator.simt.traces import TraceProgram

#: interior blocks the probe runs (spread evenly), besides one block of each edge class
PROBE_BLOCKS = 8
#: warp instructions a full-mode trace may hold (about 0.3 KB of memory each)
FULL_TRACE_MAX = 3e7
#: SASS warp instructions (uncut) a sampled run's blocks may take to emulate, about 2-4 s
EMULATE_MAX = 4e6
#: the smallest engine budget a sampled run is cut to for that
MIN_BUDGET = 2e5
#: PTX warp-instructions sampled mode's probe runs ten blocks for (traced: about 0.5-1 M
#: a second and 0.1 KB each): past it the probe runs the edge classes' blocks and the
#: middle one, or that one alone
PROBE_MAX = 3e6
#: interior blocks the probe grows to (from PROBE_BLOCKS, four times as many) where the
#: interior blocks it ran differ by more than a factor of two, staying under PROBE_MAX
PROBE_WIDE = 32
#: PTX warp-instructions the probe's blocks may run at most: a launch of a few blocks
#: each looping millions of times (in a loop the emulator cannot skip) stops there
PROBE_RECORD_MAX = 1e7
#: a sampled trace stops past twice the warp instructions planned for the blocks done so
#: far plus this many, and the blocks are planned again (``_traced``)
TRACE_SLACK = 1e6
MODES = ("full", "sampled", "analytic")
#: sampled mode's emulation skips a long loop's middle trips (``emulate_kernel``'s
#: ``skip_loops``): a loop runs its first SKIP_FIRST trips (past the engine's largest cut,
#: ``engine.TRIP_CAPS``, and the three the emulator compares), and is skipped where it has
#: SKIP_LEAST trips or more (the engine cuts a loop of more than
#: ``engine.TRIP_SAMPLE_MIN``); the loop the engine cuts sooner (``engine.trace_trip_caps``)
#: is skipped sooner in proportion (``_cut_skip``)
SKIP_FIRST = 56
SKIP_LEAST = 193

def _edge_class(grid) -> np.ndarray:
    """Per linear block id, its place on the grid's edges: 0 for an interior block, else
    a code of (first, middle or last) along each axis longer than one block -- a kernel's
    bounds checks and boundary cases make the blocks on an edge differ from the rest."""
    gx, gy, gz = grid
    ids = np.arange(gx * gy * gz, dtype=np.int64)
    code = np.zeros(len(ids), np.int64)
    edge = np.zeros(len(ids), np.bool_)
    for v, n, w in ((ids % gx, gx, 1), ((ids // gx) % gy, gy, 3), (ids // (gx * gy), gz, 9)):
        if n > 1:
            place = np.where(v == 0, 0, np.where(v == n - 1, 2, 1))
            code += place * w
            edge |= place != 1
    return np.where(edge, code + 1, 0)


def _probe_ids(grid, k: int = PROBE_BLOCKS) -> np.ndarray:
    """The blocks the probe runs: the middle block of each edge class (``_edge_class``)
    and ``k`` spread evenly over the interior."""
    cls = _edge_class(grid)
    ids = [int(np.flatnonzero(cls == c)[(cls == c).sum() // 2]) for c in np.unique(cls) if c]
    inner = np.flatnonzero(cls == 0)
    if len(inner):
        ids += list(inner[np.unique(np.linspace(0, len(inner) - 1, min(k, len(inner)))
                                    .round().astype(np.int64))])
    return np.unique(np.array(ids, np.int64))


def _interior_differ(grid, trace: dict) -> bool:
    """Whether the interior blocks an emulation recorded differ in their warp-instructions
    by more than a factor of two (the edge blocks' bounds checks apart)."""
    blocks = np.asarray(trace["blocks"], np.int64)
    inner = blocks[_edge_class(grid)[blocks] == 0]
    if len(inner) < 2:
        return False
    per = np.bincount(trace["events"][:, 0] // int(trace["warps_per_block"]))
    per = np.pad(per, (0, max(0, int(inner.max()) + 1 - len(per))))[inner]
    return bool(per.max() > 2 * per.min())


def _work(grid, ids, counts) -> np.ndarray:
    """Every block's warp instructions from those of blocks ``ids``: an edge block's its
    class's (the mean of the class's blocks among ``ids``), an interior block's
    interpolated by block id between the interior ones."""
    cls = _edge_class(grid)
    out = np.zeros(len(cls))
    ids, counts = np.asarray(ids, np.int64), np.asarray(counts, np.float64)
    for c in np.unique(cls):
        mine = cls == c
        have = cls[ids] == c
        if c == 0 or not have.any():    # interior, or a class none of ids is in
            have = have if have.any() else np.ones(len(ids), np.bool_)
            out[mine] = np.interp(np.flatnonzero(mine), ids[have], counts[have])
        else:
            out[mine] = counts[have].mean()
    return out


def _record(kernel, grid, block, args, blocks, name, shared_bytes, cc, hw, most=FULL_TRACE_MAX,
            skip=None, like=None):
    """The blocks emulated and recorded; ``like``: an emulation of some blocks of the
    launch, whose trace per block sizes this one's recording up front."""
    reserve = None
    if like is not None:
        per = len(blocks) / max(1, len(like.trace["blocks"])) * 1.05
        reserve = tuple(int(min(np.max(most), len(like.trace[k]) * per)) + 1
                        for k in ("events", "addresses"))
    return emulate_kernel(kernel, grid, block, list(args), name=name, shared_bytes=shared_bytes,
                          cc=cc, nsm=hw.sm_count, record=True, blocks=blocks, write_back=False,
                          max_record=most, atomics=atomic_timing(hw), skip_loops=skip,
                          reserve=reserve)


def _per_block(tr: sassmap.Traces) -> np.ndarray:
    """Warp instructions of each traced block, the trips the emulator skipped included."""
    starts = tr.warp_begin[::tr.warps_per_block]
    w = np.concatenate([[0.0], np.cumsum(sassmap.row_weights(tr))])
    return np.diff(w[starts])


def _skipped_heads(trace: dict) -> set:
    """The header rows of the loops whose trips the emulator skipped."""
    le = trace.get("loop_events")
    return set() if le is None else {int(x) for x in le[le[:, 3] == 1, 2]}


def _touched(tr: sassmap.Traces, arrays) -> tuple:
    """(names of the arrays the rows' loads address, of those their stores address): an
    atomic reads and writes its words."""
    from simulator.simt import isa as E
    mem = tr.rows[:, 5] >= 0
    if not mem.any():
        return (), ()
    cls, at = tr.rows[mem, 0], tr.rows[mem, 5]
    firsts = tr.addresses[at, :32].max(axis=1)
    which = np.full(len(at), -1, np.int64)
    for k, (_, base, nbytes) in enumerate(arrays):
        which[(firsts >= base) & (firsts < base + nbytes)] = k

    def names(ops):
        ks = np.unique(which[np.isin(cls, ops)])
        return tuple(sorted({arrays[k][0] for k in ks if k >= 0}))
    return names((E.LDG, *E.ATOMICS)), names((E.STG, *E.ATOMICS))


def _flops(tr: sassmap.Traces) -> float:
    """FP32 operations the traced rows execute (FFMA 2 a lane, FADD 1)."""
    from simulator.simt import isa as E
    op = tr.rows[:, 0]
    fp = np.flatnonzero((op == E.FFMA) | (op == E.FADD) | (op == E.FMNMX))
    if not len(fp):
        return 0.0
    lanes = tr.rows[fp, 5]
    active = _popcount(~lanes)
    mem = lanes >= 0
    if mem.any():
        active[mem] = (tr.addresses[lanes[mem], :32] >= 0).sum(axis=1)
    per = np.where(op[fp] == E.FFMA, 2, 1)
    return float((per * active * sassmap.row_weights(tr)[fp]).sum())


def _popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of each value's low 32 bits."""
    x = (np.asarray(x).astype(np.int64) & 0xFFFFFFFF).astype("<u4")
    if hasattr(np, "bitwise_count"):                 # numpy 2
        return np.bitwise_count(x).astype(np.int64)
    return np.unpackbits(x.view(np.uint8).reshape(-1, 4), axis=1).sum(axis=1).astype(np.int64)


def _loop_cuts(c: Compiled, trace: dict):
    """(header, in-loop blocks, trips, caps) of the kernel's dominant loop where the
    engine would cut it (``engine.trace_trip_caps``), else None."""
    from simulator.simt import engine
    loop = sassmap.dominant_loop(c.smap, c.successors, trace,
                                 cuttable=lambda t, w: engine.trace_trip_caps(t, w) is not None)
    if loop is None:
        return None
    h, inloop, trips, per_trip = loop
    caps = engine.trace_trip_caps(trips, per_trip)
    return (h, inloop, trips, caps) if caps else None


def _cut_skip(caps, heads) -> tuple:
    """``emulate_kernel``'s ``skip_loops`` for a loop cut at ``caps``: SKIP_FIRST and
    SKIP_LEAST as the engine's cuts scale them (``engine.trace_trip_caps``)."""
    from simulator.simt import engine
    hi = caps[-1]
    return (hi + SKIP_FIRST - engine.TRIP_CAPS[-1],
            (SKIP_LEAST - 1) * hi // engine.TRIP_CAPS[-1] + 1, heads)


@dataclasses.dataclass
class _Probe:
    """One launch probed (``_probe``): what planning its blocks and tracing them need."""
    c: Compiled
    kernel: object
    g: tuple
    b: tuple
    args: tuple
    name: object
    shared_bytes: int
    launch: object            # kernels.launch.Launch
    probe: np.ndarray         # the block ids probed
    em: object                # the probe's Emulation
    ptr: sassmap.Traces       # the probe's SASS traces
    work: np.ndarray          # every block's warp instructions (interpolated)
    params: np.ndarray
    names: tuple
    arrays: tuple             # (name, base, bytes) of each array argument, as the launch sees it
    loop: object              # _loop_cuts
    cut_work: dict            # cap -> work
    moves: tuple = ()         # (base, bytes, new base): arrays placed apart from the emulator's

    @property
    def emulated(self) -> np.ndarray:
        """Every block's warp instructions as its emulation runs them: where its loop is
        cut, the trips up to SKIP_FIRST (the cuts' work carried on) and what follows,
        not the trips the emulator skips."""
        if self.loop is None or len(self.cut_work) < 2:
            return self.work
        caps = sorted(self.cut_work)
        lo, hi = self.cut_work[caps[-2]], self.cut_work[caps[-1]]
        at = hi + (hi - lo) * (_cut_skip(caps, None)[0] - caps[-1]) / (caps[-1] - caps[-2])
        return np.minimum(self.work, at)


def _probe(c: Compiled, kernel, hw, grid, block, args, mode, name, shared_bytes) -> _Probe:
    """A few blocks of the launch emulated (``_probe_ids``): every block's work, and the
    dominant loop's cuts where sampled mode cuts it."""
    from simulator.simt import engine
    from simulator.simt import isa as E
    from simulator.simt.kernels.launch import Launch
    g, b = launch_dims(grid, "grid", MAX_GRID), launch_dims(block, "block", MAX_BLOCK)
    launch = Launch(g, b)
    cc = c.kptx.cc
    probe = _probe_ids(launch.grid)
    # (sampled: a long loop's middle trips skipped, from the trips the soonest cuts need
    # on, and again from SKIP_FIRST on where its cuts are later; full mode runs them all)
    skip = None if mode == "full" else _cut_skip(engine.SOONEST_CAPS, None)

    found = []                      # (an emulation, its dominant loop's cuts)

    def cuts(em):
        if not found or found[-1][0] is not em:
            found.append((em, _loop_cuts(c, em.trace)))
        return found[-1][1]

    def record(ids, like=None):
        # where its dominant loop's cuts need more trips than it ran before it skipped
        # any (a loop whose trips are long is cut sooner, and emulated that far only),
        # it runs again from SKIP_FIRST
        nonlocal skip
        em = _record(kernel, g, b, args, ids, name, shared_bytes, cc, hw, PROBE_RECORD_MAX,
                     skip, like)
        if skip is not None and skip[0] < SKIP_FIRST and cuts(em) is not None \
                and _cut_skip(cuts(em)[3], None)[0] > skip[0]:
            skip = (SKIP_FIRST, SKIP_LEAST, None)
            em = _record(kernel, g, b, args, ids, name, shared_bytes, cc, hw, PROBE_RECORD_MAX,
                         skip, like)
        return em
    em = first = None
    if mode != "full" and len(probe) > 1:
        # the middle interior block first: where blocks are too long to probe ten of (a
        # loop the emulator cannot skip, or nested ones), it alone weighs them all
        inner = np.flatnonzero(_edge_class(launch.grid) == 0)
        one = np.array([inner[len(inner) // 2] if len(inner) else launch.blocks // 2],
                       np.int64)
        first = record(one)
        each = len(first.trace["events"])
        if each * len(probe) > PROBE_MAX:
            # too long to probe ten: the edge classes and that block, else it alone
            edges = np.union1d(_probe_ids(launch.grid, 0), one)
            if each * len(edges) <= PROBE_MAX and len(edges) > 1:
                probe = edges
            else:
                probe, em = one, first
    if em is None:
        em = record(probe, like=first)
        # interior blocks whose work differs (the data decides it: an escape-time image,
        # sparse rows) are weighed from more of them, while the probe stays short
        k = PROBE_BLOCKS
        while mode != "full" and k < PROBE_WIDE and _interior_differ(launch.grid, em.trace):
            wider = _probe_ids(launch.grid, 4 * k)
            if len(em.trace["events"]) / len(probe) * len(wider) > PROBE_MAX:
                break
            k, probe = 4 * k, wider
            em = record(probe, like=em)
    loop = cuts(em) if mode != "full" else None
    # (the cut loop's trips recorded: its cuts are the trace's rows of their first trips)
    ptr = sassmap.warp_traces(c.smap, em.trace, loop=loop[:2] if loop is not None else None)
    work = _work(launch.grid, probe, _per_block(ptr))
    params, names = E.params(launch)
    arrays = tuple((c.arg_names[i], int(base), int(nbytes)) for i, base, nbytes
                   in em.trace["arrays"])
    cut_work = {}
    if loop is not None:
        for cap in loop[3]:
            cut_work[cap] = _work(launch.grid, probe, _per_block(sassmap.cut_traces(ptr, cap)))
    return _Probe(c, kernel, g, b, tuple(args), name, int(shared_bytes), launch, probe, em, ptr,
                  work, params, names, arrays, loop, cut_work)


def _moved(p: _Probe, tr: sassmap.Traces) -> sassmap.Traces:
    """``tr`` with its global addresses where ``p.moves`` places its arrays."""
    if not p.moves or not len(tr.addresses):
        return tr
    a = tr.addresses.copy()
    lanes = tr.addresses[:, :32]
    shift = np.zeros_like(lanes)
    for base, nbytes, new in p.moves:
        shift[(lanes >= base) & (lanes < base + nbytes)] = new - base
    a[:, :32] = lanes + shift
    return dataclasses.replace(tr, addresses=a)


def _place_arrays(probes) -> None:
    """One address space for several launches: an array (the same host memory and size)
    that several launches take sits at one address in all of them, as on the GPU, so
    that a launch finds in the L2 what an earlier one left there. The first launch keeps
    the emulator's layout (one launch is timed as ``simulate_kernel`` times it); an array
    new to a later launch goes above everything the launches address."""
    top = 0
    for p in probes:
        t = p.em.trace
        top = max([top] + [base + n for _, base, n in p.arrays]
                  + [t["shared"][0] + t["shared"][1], t["local"][0] + t["local"][1]])
    placed = {}
    for k, p in enumerate(probes):
        moves, arrays = [], []
        for (i, base, nbytes), (nm, _, _) in zip(p.em.trace["arrays"], p.arrays):
            key = (p.args[i].__array_interface__["data"][0], int(nbytes))
            new = placed.get(key)
            if new is None:
                if k == 0:
                    new = int(base)
                else:
                    new = (top + 4096 + 255) // 256 * 256      # a guard gap, aligned
                    top = new + int(nbytes)
                placed[key] = new
            if new != base:
                moves.append((int(base), int(nbytes), new))
            arrays.append((nm, new, int(nbytes)))
        p.moves, p.arrays = tuple(moves), tuple(arrays)


def _trace_program(p: _Probe, tr, blocks, work, cuts=(), skipped=None, touched=None):
    """The TraceProgram of ``blocks`` traced as ``tr`` (None: a stub, no rows);
    ``touched``: ``_touched`` of them where known (a cut's are its whole trace's)."""
    from simulator.simt.traces import TraceProgram
    c, launch = p.c, p.launch
    loads, stores = _touched(_moved(p, p.ptr) if tr is None else tr, p.arrays) \
        if touched is None else touched
    return TraceProgram(
        name=c.kptx.name, launch=launch, params=p.params, param_names=p.names,
        rows=tr.rows if tr is not None else np.zeros((0, 6), np.int64),
        addresses=tr.addresses if tr is not None else np.zeros((0, 33), np.int64),
        warp_begin=tr.warp_begin if tr is not None else np.zeros(
            len(blocks) * -(-launch.threads_per_block // 32) + 1, np.int64),
        blocks=blocks, block_work=work, n_regs=sassclass.N_REGS,
        arrays=tuple((n, base, -(-nbytes // 4)) for n, base, nbytes in p.arrays),
        loads=loads, stores=stores,
        regs_per_thread=max(1, c.registers),
        smem_per_block=c.shared_static + int(p.shared_bytes),
        resources_source=f"ptxas -v for {sm_arch(c.kptx.cc)}",
        flops=0, min_bytes=0, label=f"grid {p.g} block {p.b}",
        trips=p.loop[2] if cuts else 0, cuts=cuts,
        # each event's SASS instruction: the engine's per-instruction stalls and bytes
        **({"sites": tr.sass_index, "n_sites": len(c.sass.instrs)} if tr is not None else {}),
        **({"skipped_events": skipped} if skipped is not None else {}))


def _stub(p: _Probe):
    """The launch's trace program without traces: what the sampler plans from."""
    none = np.zeros(0, np.int64)
    touched = _touched(_moved(p, p.ptr), p.arrays)
    return _trace_program(p, None, none, p.work, tuple(
        (cap, _trace_program(p, None, none, w, touched=touched))
        for cap, w in p.cut_work.items()), touched=touched)


def _plan(hw, probes, mode, budget, l2):
    """(the blocks to trace of each launch, the engine budget): every block in full mode;
    in sampled mode those the engine's plan of the launches together keeps
    (``engine.trace_plan_blocks``), under a budget cut until no launch's blocks take
    more than about ``EMULATE_MAX`` warp instructions (uncut) to emulate."""
    from simulator.simt import engine
    if mode == "full":
        for p in probes:
            total = float(p.work.sum())
            if total > FULL_TRACE_MAX:
                raise ValueError(f"mode='full': kernel {p.c.kptx.name!r} would trace about "
                                 f"{total:.2g} warp instructions; at most {FULL_TRACE_MAX:.0e} "
                                 "-- mode='sampled' (the default) simulates a part of it")
        return [np.arange(p.launch.blocks, dtype=np.int64) for p in probes], budget
    stubs = [_stub(p) for p in probes]
    bud = engine.SLICE_BUDGET if budget is None else budget
    for _ in range(6):
        blocks = [engine.trace_plan_blocks(hw, s, bud, l2, launches=stubs, k=k)
                  for k, s in enumerate(stubs)]
        uncut = max(float(p.emulated[bl].sum()) for p, bl in zip(probes, blocks))
        if uncut <= EMULATE_MAX or bud <= MIN_BUDGET:
            break
        bud = max(MIN_BUDGET, bud * EMULATE_MAX / uncut)
    if uncut > FULL_TRACE_MAX:
        raise ValueError(f"kernel {probes[0].c.kptx.name!r}: the fewest blocks sampled mode "
                         f"can simulate take about {uncut:.2g} warp instructions to emulate; at most "
                         f"{FULL_TRACE_MAX:.0e} are traced -- give the launch more blocks, "
                         "each doing less")
    return blocks, bud


def _traced(hw, probes, mode, budget, l2) -> tuple:
    """(each launch's (TraceProgram, traces) of the blocks ``_plan`` picks, the engine's
    budget). Sampled mode's blocks may run longer than the probe's blocks said
    (work the data decides: an escape-time image's blocks inside the set); a trace that
    runs past twice what was expected stops, every block's work is scaled by what it
    found, and the blocks are planned again, fewer."""
    attempt = 0
    while True:
        blocks, bud = _plan(hw, probes, mode, budget, l2)
        out = []
        try:
            for p, bl in zip(probes, blocks):
                # (past twice what was expected of the blocks done so far, it stops)
                most = FULL_TRACE_MAX if mode == "full" or attempt == 3 else \
                    np.minimum(FULL_TRACE_MAX, 2 * np.cumsum(p.emulated[bl]) + TRACE_SLACK)
                out.append(_trace(p, hw, bl, mode, most))
            return out, bud
        except TraceTooLong as e:
            if np.ndim(most) == 0:
                raise
            seen = float(p.emulated[bl[:e.blocks_done + 1]].sum())
            grow = max(2.0, e.events / max(1.0, seen))
            p.work = p.work * grow
            p.cut_work = {cap: w * grow for cap, w in p.cut_work.items()}
            attempt += 1


def _trace(p: _Probe, hw, blocks, mode, most=FULL_TRACE_MAX):
    """(the launch's TraceProgram of ``blocks``, their SASS traces). Sampled mode skips
    the middle trips of the loop the engine cuts (``_loop_cuts``) and of no other: the
    engine extrapolates that loop's trips from its cuts, and would miss another's."""
    c = p.c
    cut_head = {int(c.smap.leaders[p.loop[0]])} if p.loop is not None else set()
    skipped = _skipped_heads(p.em.trace)
    reuse = np.array_equal(blocks, p.probe) and skipped <= cut_head
    skip = _cut_skip(p.loop[3], cut_head) if mode != "full" and cut_head else None
    emu = p.em if reuse else \
        _record(p.kernel, p.g, p.b, p.args, blocks, p.name, p.shared_bytes, c.kptx.cc, hw,
                most, skip=skip, like=p.em)
    rec = emu.trace
    loop = p.loop
    tr = _moved(p, p.ptr if rec is p.em.trace else sassmap.warp_traces(
        c.smap, rec, loop=loop[:2] if loop is not None else None))
    work = p.work
    if mode == "full":
        work = _per_block(tr)       # every block's own count
    # (sampled: the work the plan was made from; the engine plans again from it)
    touched = _touched(tr, p.arrays)
    cuts = tuple((cap, _trace_program(p, sassmap.cut_traces(tr, cap), blocks, w,
                                      touched=touched))
                 for cap, w in p.cut_work.items())
    prog = _trace_program(p, tr, blocks, work, cuts, skipped=_per_block(tr) - np.diff(
        tr.warp_begin[::tr.warps_per_block]), touched=touched)
    scale = float(work.sum()) / max(1.0, float(work[blocks].sum()))
    named = set(prog.loads + prog.stores)
    prog = dataclasses.replace(prog, flops=int(round(_flops(tr) * scale)),
                               min_bytes=sum(n for name_, _, n in p.arrays if name_ in named))
    return prog, tr


def trace_program(c: Compiled, kernel: object | str, hw: SIMTGPU, grid: int | Sequence[int],
                  block: int | Sequence[int], args: Sequence[object], mode: str = "sampled",
                  name: str | None = None, shared_bytes: int = 0, budget: float | None = None,
                  l2: str = "cold") -> tuple[TraceProgram, sassmap.Traces, float | None]:
    """(the ``TraceProgram`` a run of ``mode`` simulates, the traces it was built from,
    the engine budget) of one launch simulated alone.

    Sampled mode cuts the kernel's dominant loop as the engine cuts a template's
    (``engine.trip_caps``: three runs issuing each warp's first 16, 32 and 48 trips,
    extrapolated to its trips) and keeps the blocks it emulates to about
    ``EMULATE_MAX`` warp instructions (a smaller budget where the cut runs would let
    the sampler pick more)."""
    p = _probe(c, kernel, hw, grid, block, args, mode, name, shared_bytes)
    (blocks,), budget = _plan(hw, [p], mode, budget, l2)
    prog, tr = _trace(p, hw, blocks, mode)
    return prog, tr, budget


def _check_launches(launches) -> list:
    """``launches`` as a list of (kernel, grid, block, args[, name, shared_bytes]);
    ValueError naming the one that is not."""
    if not isinstance(launches, (tuple, list)) or not launches:
        raise ValueError(f"launches = {arg.show(launches)}: a non-empty list of (kernel, "
                         "grid, block, args) tuples")
    out = []
    for i, lc in enumerate(launches):
        if not isinstance(lc, (tuple, list)) or len(lc) not in (4, 6):
            raise ValueError(f"launches[{i}] = {arg.show(lc)}: must be a (kernel, grid, "
                             "block, args) or (kernel, grid, block, args, name, "
                             "shared_bytes) tuple")
        kernel, grid, block, args = lc[:4]
        name, shared = (lc[4], lc[5]) if len(lc) == 6 else (None, 0)
        if not isinstance(args, (tuple, list)):
            raise ValueError(f"launches[{i}] args = {arg.show(args)}: a tuple or list of "
                             "the kernel's arguments")
        if isinstance(kernel, str):
            if not isinstance(name, str) or not name:
                raise ValueError(f"launches[{i}] kernel = {arg.show(kernel)}: PTX text needs "
                                 f"its entry's name (name = {arg.show(name)}): give (kernel, "
                                 "grid, block, args, name, shared_bytes)")
        elif not hasattr(kernel, "py_func"):
            raise ValueError(f"launches[{i}] kernel = {arg.show(kernel)}: a numba "
                             "@cuda.jit kernel or PTX text")
        if isinstance(shared, bool) or not isinstance(shared, int) or shared < 0:
            raise ValueError(f"launches[{i}] shared_bytes = {arg.show(shared)}: an int >= 0")
        out.append((kernel, grid, block, tuple(args), name, shared))
    return out


def simulate_launches(launches: Sequence[tuple], *, hw: SIMTGPU | str | os.PathLike,
                      mode: str = "sampled", l2: str = "cold", policy: str = "gto",
                      budget: float | None = None, trace: int = 0) -> Result:
    """The SIMT engine's ``Result`` for ``launches`` run back to back on ``hw``, each
    timed from its kernel's own SASS as ``simulate_kernel`` times one: ``launches`` a
    list of (numba ``@cuda.jit`` kernel, grid, block, args) or (kernel or PTX text,
    grid, block, args, entry name, dynamic shared bytes), the args numpy arrays and
    numbers (read, not written). The launches share the L2 (one engine run): an array
    that several take is one array, and a launch finds there what an earlier one left
    (``l2`` as in ``simulate_kernel``: the state the first launch finds). Each launch is
    emulated on the arrays as given, not as the launches before it left them (values
    that steer a kernel's control flow should be there already).

    ``result.launches`` has one ``Launch`` each; ``result.extra["sass"]`` lists every
    launch's SASS instructions, each row naming its ``launch`` (its index), and
    ``extra["launches"]`` each launch's kernel, arch, traced and total blocks.
    A built-in kernel's launches for a problem: ``simulator.simt.kernels.spec.host_calls(
    spec.device(problem))``."""
    return _simulate(_check_launches(launches), hw, mode, l2, policy, budget, trace)


def _simulate(launches, hw, mode, l2, policy, budget, trace):
    from simulator import jit
    from simulator.simt import core, engine, walk
    hw = arg.hardware(hw, "simt")
    mode = arg.choice(mode, "mode", MODES)
    l2 = arg.l2_state(l2)
    policy = arg.choice(policy, "policy", engine.POLICIES)
    for lc in launches:
        if not isinstance(lc[3], (tuple, list)):
            raise TypeError(f"args={type(lc[3]).__name__}: expected a tuple or list of the "
                            "kernel's arguments")
    wall = time.perf_counter()
    cc = cc_of(hw)
    probes = [_probe(compiled.compile(kernel, args, cc, name), kernel, hw, grid, block, args, mode,
                     name, shared_bytes)
              for kernel, grid, block, args, name, shared_bytes in launches]
    if len(probes) > 1:
        _place_arrays(probes)
    # the analytic model reads the warps a sampled run would simulate
    walked = "sampled" if mode == "analytic" else mode
    traced, budget = _traced(hw, probes, walked, budget, l2)
    progs = [prog for prog, _ in traced]
    if mode == "analytic":
        from simulator.simt import analytic
        jit.announce("SIMT analytic model", [walk.profile_trace])
        res = analytic.predict(hw, progs, policy, l2=l2)
    else:
        jit.announce("SIMT engine", [core.run])
        res = engine.simulate(hw, progs, policy=policy, mode=mode, trace=trace, l2=l2,
                              budget=budget)
    rows, each = [], []
    for k, (p, (prog, tr)) in enumerate(zip(probes, traced)):
        c = p.c
        scale = float(prog.block_work.sum()) / max(1.0, float(prog.block_work[prog.blocks].sum()))
        ns = len(c.sass.instrs)
        reps = sassmap.row_weights(tr)         # the trips the emulator skipped included
        counts = np.bincount(tr.sass_index, weights=reps, minlength=ns) * scale
        threads = np.bincount(tr.sass_index, weights=_popcount(tr.masks) * reps,
                              minlength=ns) * scale
        origin = c.smap.origin
        line = [int(c.ptx_rows_lines[o]) if o >= 0 else 0 for o in origin]
        caller = _callers(c, line)
        mine = [{"pc": int(i.pc), "text": i.text, "warp_instructions": float(n),
                 "thread_instructions": float(th),
                 "simt_efficiency": float(th / (32 * n)) if n else None,
                 "ptx_line": line[j], **({"called_from_ptx_line": caller[j]} if j in caller else {})}
                for j, (i, n, th) in enumerate(zip(c.sass.instrs, counts, threads))]
        _engine_columns(mine, res.detail.launches[k], counts)
        if len(probes) > 1:
            mine = [{**r, "launch": k} for r in mine]
        rows += mine
        each.append({"workload": c.kptx.name, "arch": sm_arch(c.kptx.cc),
                     "traced_blocks": int(len(prog.blocks)),
                     "total_blocks": int(prog.launch.blocks)})
    # SIMT efficiency from the traces' warp masks (an access's lanes predicated off count,
    # as in Nsight Compute's thread instructions; the engine knows its active lanes only)
    def efficiency(rs_):
        warp = sum(r["warp_instructions"] for r in rs_)
        return sum(r["thread_instructions"] for r in rs_) / (32 * warp) if warp else None
    per = [efficiency([r for r in rows if r.get("launch", 0) == k]) for k in range(len(probes))]
    res = dataclasses.replace(res, simt_efficiency=efficiency(rows), launches=[
        dataclasses.replace(lc, simt_efficiency=e) for lc, e in zip(res.launches, per)])
    # the busiest L2 line's atomic unit's work in each launch (what the engine serves
    # there one request at a time; the analytic model's "atomics" term)
    from simulator.simt.analytic import atomic_unit_cycles
    extra = {**res.extra, "atomic_unit_cycles": [atomic_unit_cycles(hw, p) for p in progs],
             "sass": rows, "arch": each[0]["arch"],
             "traced_blocks": sum(e["traced_blocks"] for e in each),
             "total_blocks": sum(e["total_blocks"] for e in each)}
    if len(probes) > 1:
        extra["launches"] = each
    return dataclasses.replace(res, workload=" + ".join(e["workload"] for e in each),
                               wall_seconds=time.perf_counter() - wall, extra=extra)


def _engine_columns(rows, lr, counts) -> None:
    """Add to each SASS instruction's row what the engine charged it (``lr.sites``, over
    the blocks it simulated, scaled to the launch as its warp executions are): stall
    cycles by the cause its warps waited on before issuing it (``stall_<cause>``, and
    their sum ``stall_cycles``), shared-memory passes and instructions, and the bytes its
    accesses moved at the L1, the L2 and DRAM."""
    from simulator.simt.stats import SITE_COLUMNS
    sites = getattr(lr, "sites", None)
    if sites is None or len(sites) != len(rows):
        return
    col = {c: i for i, c in enumerate(SITE_COLUMNS)}
    issued = sites[:, col["issued"]]
    scale = float(np.sum(counts)) / float(issued.sum()) if issued.sum() else 0.0
    causes = SITE_COLUMNS[col["threads"] + 1:col["shared_passes"]]
    for r, site in zip(rows, sites):
        stalls = {f"stall_{c}": float(site[col[c]]) * scale for c in causes}
        r.update(stalls)
        r["stall_cycles"] = sum(stalls.values())
        passes = float(site[col["shared_passes"]]) * scale
        r["shared_passes"] = passes
        r["shared_instructions"] = float(site[col["issued"]]) * scale if passes else 0.0
        for level in ("l1", "l2", "dram"):
            r[f"{level}_bytes"] = float(site[col[f"{level}_bytes"]]) * scale


def _callers(c: Compiled, line) -> dict:
    """{SASS instruction of a subroutine ptxas called (64-bit division, fp64 reductions)
    with no PTX line of its own: the PTX line of the first ``CALL`` that issues it}."""
    by_start = {b.start: k for k, b in enumerate(c.sass.blocks)}
    out = {}
    for i, ins in enumerate(c.sass.instrs):
        if ins.op == "CALL" and line[i]:
            for j in sassmap.called(c.sass, ins, by_start):
                if not line[j]:
                    out.setdefault(j, line[i])
    return out


def simulate_kernel(kernel: object | str, grid: int | Sequence[int], block: int | Sequence[int],
                    args: Sequence[object], *, hw: SIMTGPU | str | os.PathLike,
                    mode: str = "sampled", l2: str = "cold", policy: str = "gto",
                    name: str | None = None, shared_bytes: int = 0, budget: float | None = None,
                    trace: int = 0) -> Result:
    """The SIMT engine's ``Result`` for ``kernel[grid, block](*args)`` on ``hw``, timed
    from the kernel's own SASS (see the module's docstring): ``simulate_launches`` of
    one launch. ``kernel``: a numba
    ``@cuda.jit`` kernel or PTX text (``name``: its entry); ``args`` numpy arrays and
    numbers (read, not written); ``mode`` sampled (a slice of the blocks, within about
    ``budget`` warp instructions), full (every block) or analytic (``simt.analytic``'s
    interval model over the warps a sampled run traces: no cycle simulated; ``l2``
    flushed counts as cold); ``l2`` cold (the arrays not in
    the L2, which holds earlier launches' lines, the dirty ones written back as they are
    evicted: as in an application or a benchmark rotating buffers), warm (the arrays in
    the L2 where they fit, as a launch repeated back to back) or flushed (the L2 empty, as
    Nsight Compute leaves it before a profiled launch);
    ``trace`` keeps that many issued instructions for timelines.

    ``result.instructions`` are SASS warp instructions; ``result.extra["sass"]`` lists
    each SASS instruction (pc, text, warp executions over the launch, PTX line).
    """
    return _simulate([(kernel, grid, block, args, name, shared_bytes)], hw, mode, l2,
                     policy, budget, trace)

"""``simulate(hw, programs)``: run kernel launches through the SIMT core (``core.py``).

Modes:

* ``full`` -- every block of every launch;
* ``sampled`` -- blocks are cut into waves of C (the blocks resident at once); runs of
  waves alike in work (their blocks' loop trips, see ``_plan``) that are longer than
  ``SAMPLE_MIN_WAVES`` keep their first ``HEAD_WAVES`` and last ``TAIL_WAVES`` waves and
  skip the middle, the machine kept warm (caches and queues as they are). Each skipped
  middle adds ``skipped / C x tau`` cycles, tau the steady per-wave time read off its
  own run's head (completion j against j - C, without the first ``RAMP_WAVES`` waves
  while queues fill). The result says so, and estimates its error from the spread of
  tau across the head's waves. Launches too short to sample run in full.

Launches run back to back on one L2 (conv-im2col's GEMM reads the column matrix the
im2col launch left there); the gap between them (the host's launch overhead) is not
modelled -- ``simulator/measure`` measures it. Dirty L2 sectors left at the end are
counted as DRAM writes (untimed).
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from simulator import arguments as arg
from simulator.arguments import show
from simulator.result import Launch, Result

from . import core, isa, memory, traces
from .hwvec import (  # noqa: F401
    H_ATOMSCALE,
    H_BPS,
    H_DCH,
    H_DSVC,
    H_L2BANKS,
    H_L2OWN,
    H_L2PART,
    H_L2PRIOR,
    H_L2SETS,
    H_L2SVC,
    H_NSM,
    H_WPB,
    hw_vector,
    l1_capacity,  # (l1_capacity: the engine's API)
)
from .occupancy import occupancy
from .stats import S_DRB, S_DWB, S_DWBP, S_END, S_FIRST, S_L2HIT, S_L2MISS, S_RWB, LaunchStats, hit_rates

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hwmodels.schema import SIMTGPU

    from .occupancy import Occupancy

POLICIES = ("gto", "lrr")
MODES = ("full", "sampled")
HEAD_WAVES = 4
RAMP_WAVES = 2
TAIL_WAVES = 2
SAMPLE_MIN_WAVES = 7
RUN_TOLERANCE = 0.02
TRIP_CAPS = (16, 32, 48)
TRIP_SAMPLE_MIN = 192
# a trace program's loop whose trips are long is cut sooner (``trace_trip_caps``): its
# first cut runs at least TRIP_WORK warp instructions a warp, and at least
# TRIP_CAPS_LEAST trips
TRIP_WORK = 2048
TRIP_CAPS_LEAST = 4
SOONEST_CAPS = tuple(TRIP_CAPS_LEAST * c // TRIP_CAPS[0] for c in TRIP_CAPS)
RERUN_DRAM_BUSY = 0.25   # a slice reruns owning its share of first touches past this DRAM load
SLICE_BUDGET = 1.5e6       # warp instructions a sampled launch aims to simulate
FULL_MAX = 2e10            # full mode refuses launches past this many warp instructions
FULL_RATE = 5e6            # warp instructions a second, about, on one core (bench_simt)


class LaunchRun(NamedTuple):
    """One launch as ``_launch`` ran it (sampled: counts scaled to the whole launch)."""

    cycles: float
    stats: np.ndarray
    issued_per_sm: np.ndarray
    stalls: np.ndarray
    blocks: dict                 # sm, start, end of each block
    trace: np.ndarray
    sampling: dict               # how it sampled (see ``_launch``)
    estimated_error: float | None  # the block sampler's, relative to the cycles; else None
    waits: np.ndarray            # the run's recording (``core.CoreRun``), unscaled
    warps: np.ndarray
    memory: np.ndarray
    sites: np.ndarray


@dataclass
class LaunchResult:
    """One kernel launch as the engine simulated it (``Result.detail.launches``)."""

    program: object
    cycles: float
    warp_instructions: float
    flops_executed: float
    occupancy: object
    waves: float
    stalls_by_cause: dict
    stats: LaunchStats
    bytes_by_level: dict
    blocks: dict             # sm, start, end of each simulated block (for timelines)
    issued_per_sm: np.ndarray
    trace: np.ndarray        # (cycle, sm, scheduler, block, warp, opcode) rows
    sampling: dict = field(default_factory=dict)
    simulated_fraction: float = 1.0
    estimated_error: float | None = None
    # observation (no cycle depends on it), of the blocks the engine simulated (``blocks``;
    # a sampled run's slice, skipped waves not included, its loops cut at the last cut's
    # trips -- not scaled to the launch):
    waits: np.ndarray = None     # per ``trace`` row, float64 ``core.WAIT_COLUMNS``: what its
                                 # warp waited on before it (``core.stall_split``)
    warps: np.ndarray = None     # float64 ``core.WARP_COLUMNS``: the lives of the warps of the
                                 # trace's rows (``waits[:, 7]`` indexes them)
    memory: np.ndarray = None    # float64 ``core.MEMORY_COLUMNS``: the first global accesses
                                 # (issue, data back, level served)
    sites: np.ndarray = None     # (n_sites, len(stats.SITE_COLUMNS)) float64: every issue's
                                 # counts by site -- a template's row, a trace program's
                                 # ``sites`` entry (none: 0 rows); full mode: every block's,
                                 # summing to ``stats`` (the byte columns as
                                 # ``stats.SITE_COLUMNS`` says); a sliced launch's as its
                                 # run counted them, before ``_run_slice`` moves excess
                                 # first touches from DRAM to the L2


@dataclass
class EngineRun:
    """The engine's own record of a run (``Result.detail``): per-launch timelines and
    traces, which the ``Result`` does not carry."""

    hw: object
    policy: str
    mode: str
    launches: list           # LaunchResult per program
    dram_flush_bytes: float  # dirty L2 sectors left at the end (in Result.bytes_by_level["dram"])


def new_l2(hw: SIMTGPU, programs: Sequence[isa.Program | traces.TraceProgram], mode: str) -> memory.L2State:
    """An empty L2 and idle DRAM for ``programs`` on ``hw``. Sampled mode's slices flag
    each sector of the launches' arrays they have held (``L2State.seen``)."""
    l2 = hw.l2
    sets = l2.size_bytes // (l2.sector_bytes * l2.ways)
    shape = (1, sets, l2.ways)
    sectors = 1
    if mode == "sampled":
        sectors = max(-(-(base + 4 * n) // l2.sector_bytes)
                      for p in programs for _, base, n in p.arrays) + 1
    return memory.L2State(tags=np.full(shape, -1, np.int64), lru=np.zeros(shape, np.int64),
                          fill=np.zeros(shape), dirty=np.zeros(shape, np.bool_),
                          bank_free=np.zeros(l2.banks), chan_free=np.zeros(hw.dram.channels),
                          dram_load=np.array([0.0, 0.0, 0.0, -1.0]), seen=np.zeros(sectors, np.bool_),
                          unit_line=np.full(memory.ATOMIC_UNITS, -1, np.int64),
                          unit_free=np.zeros(memory.ATOMIC_UNITS),
                          unit_block=np.full(memory.ATOMIC_UNITS, -1, np.int64))


def state_bytes(hw: SIMTGPU, programs: Sequence[isa.Program | traces.TraceProgram], mode: str) -> int:
    """About how much memory the engine's state takes for ``programs``: every SM's warp
    slots (thread variables, addresses, registers), its L1's tags, the L2's tags, a row
    per block, and in sampled mode a flag per sector of the launches' arrays."""
    l1 = hw.sm.l1
    per_slot = 32 * isa.TV * 8 + 32 * 8 + 33 * 8 + 64 * 9 + 128
    sms = hw.sm_count * (hw.sm.max_warps * per_slot + (l1.size_bytes + hw.sm.shared_bytes)
                         // max(1, l1.sector_bytes) * 25)
    l2 = hw.l2.size_bytes // max(1, hw.l2.sector_bytes) * 25
    blocks = max(p.launch.blocks for p in programs) * 96
    seen = footprint_bytes(programs) // max(1, hw.l2.sector_bytes) if mode == "sampled" else 0
    return int(sms + l2 + blocks + seen)


def check_size(hw: SIMTGPU, programs: Sequence[isa.Program | traces.TraceProgram], mode: str) -> None:
    """Refuse, up front, a simulation whose state would not fit in free memory."""
    need = state_bytes(hw, programs, mode)
    free = _free_memory()
    if free is not None and need > 0.8 * free:
        blocks = max(p.launch.blocks for p in programs)
        raise ValueError(f"simulating this needs about {need / 2**30:.3g} GiB of engine state "
                         f"({hw.sm_count} SMs, {blocks} blocks, a {hw.l2.size_bytes / 2**20:.4g} MiB "
                         f"L2); this machine has {free / 2**30:.3g} GiB free")


def _free_memory() -> int | None:
    import os
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _run(pl, t0, l2, keep, cap, inner=0) -> core.CoreRun:
    """``core.run`` of plan ``pl``'s blocks from cycle t0 on ``l2``, loops cut at ``cap``
    trips (of each inner pass of ``inner`` trips, where given; a trace program's cut is
    the trace of that cut, ``Plan.cut_codes``), keeping ``keep`` = (issues, global
    accesses) and counting by site (``Plan.site_maps``)."""
    cut = cap if cap and pl.cut_codes else 0
    code = pl.cut_codes[cap] if cut else pl.code
    site_of, n_sites = (pl.site_maps or {}).get(cut, (np.zeros(0, np.int64), 0))
    if len(keep) > 2 and not keep[2]:
        site_of, n_sites = np.zeros(0, np.int64), 0       # not asked for: none counted
    # (a writable copy: a trace program's site maps are read-only, and numba compiles
    # core.run once more, minutes, for each kind of array it meets)
    rec = core.Recording(int(keep[0]), int(keep[1]), np.array(site_of, np.int64), int(n_sites))
    return core.CoreRun(*core.run(code, pl.h, core.BlockPlan(pl.positions, pl.skips, t0, cap,
                                                              inner), l2, rec))


def _work(code, prog, h):
    """(each block's loop trips over its warps, the most trips of any warp); a trace
    program's: its ``block_work`` (events), and no loop."""
    if traces.is_trace(prog):
        return np.asarray(prog.block_work, np.float64), int(prog.trips)
    total, most = core.block_trips(code, prog.launch.blocks, int(h[H_WPB]))
    return total, int(most.max())


def _skips(work, C, head: int = HEAD_WAVES):
    """Rows of blocks sampled mode skips (none for a launch too short to sample);
    ``head``: the waves kept from the launch's start (``fill_waves``)."""
    if len(work) / C <= SAMPLE_MIN_WAVES:
        return np.zeros((0, 2), np.int64)
    return _plan(work, C, head)


def trip_caps(prog: object, trips: int, fill: int = 0) -> tuple[int, ...] | None:
    """The three loop cuts of trip extrapolation for a warp of ``trips`` trips: multiples
    of the program's trip period near TRIP_CAPS, so that each run ends where the loop
    nest's work repeats; None when the loop is too short to gain from it. ``fill``: the
    trips it takes a launch from an empty L2 to fill it (0: it never does, or starts full), past
    which the cuts move -- only then do evictions, and dirty write-backs, reach the
    steady rate the extrapolation reads."""
    per = max(1, int(prog.trip_period))
    lo = per * -(-TRIP_CAPS[0] // per)
    shift = per * -(-int(fill) // per)
    caps = tuple(lo * c // TRIP_CAPS[0] + shift for c in TRIP_CAPS)
    return caps if trips > max(TRIP_SAMPLE_MIN, 2 * caps[-1]) else None


def trace_trip_caps(trips: int, per_trip: float) -> tuple[int, ...] | None:
    """The three loop cuts of a trace program's loop of ``trips`` trips, a warp's trip
    issuing ``per_trip`` warp instructions: TRIP_CAPS, halved while the first cut still
    runs TRIP_WORK warp instructions a warp and TRIP_CAPS_LEAST trips (a register-blocked
    GEMM's K step or an all-pairs tile, a thousand instructions a trip and more, reaches
    its steady rate within a few trips: sixteen of them would time three times the work
    for nothing); None when the loop has no more than TRIP_SAMPLE_MIN trips scaled as the
    cuts (four times the last cut), too few to gain from it."""
    lo = TRIP_CAPS[0]
    while lo // 2 >= TRIP_CAPS_LEAST and lo // 2 * per_trip >= TRIP_WORK:
        lo //= 2
    caps = tuple(lo * c // TRIP_CAPS[0] for c in TRIP_CAPS)
    return caps if trips > TRIP_SAMPLE_MIN * lo // TRIP_CAPS[0] else None


INNER_CAPS = (8, 16, 24)     # trips kept of each pass of an inner loop (inner_caps)


def inner_caps(prog: isa.Program, trips: int) -> tuple[int, ...] | None:
    """Loop cuts for a nest whose work repeats only with the whole nest (a padded NHWC
    convolution: the taps in the padding differ from one (r, s) to the next) but whose
    inner loop runs ``prog.inner_period`` alike trips a pass (its channels): each pass
    cut to its first 8, 16 and 24 trips, given as the nest's trips those runs walk
    (``trips // inner_period`` passes of each), so that trip extrapolation's line runs
    out to the whole inner loop; None where the inner loop is too short to gain from it
    or does not divide the nest."""
    per = int(getattr(prog, "inner_period", 0) or 0)
    if per < 2 * INNER_CAPS[-1] or trips % per or trips < TRIP_SAMPLE_MIN:
        return None
    return tuple(trips // per * c for c in INNER_CAPS)


@dataclass
class Plan:
    """How sampled mode runs one launch (``plan``): which blocks, on how many SMs, with
    which loop cuts; ``full`` mode's plan runs every block on every SM.

    ``positions`` are the block ids the slice runs, in dispatch order; ``skips`` rows
    (at, to) of positions skipped (wave sampling); ``caps`` the loop cuts of trip
    extrapolation (or None); ``sms`` the SMs simulated and ``share`` their share of the
    launch's work, the share of the L2's and DRAM's bandwidth they get; ``h`` the
    hardware vector of that slice; ``weight`` each block's work (loop trips plus one per
    warp) and ``trips`` the most trips of any warp; ``code`` the program as the core reads
    it."""

    code: core.ProgramArrays
    positions: np.ndarray
    skips: np.ndarray
    caps: tuple | None
    sms: int
    share: float
    h: np.ndarray
    weight: np.ndarray
    trips: int
    sm_count: int
    inner: int = 0     # caps cut each pass of an inner loop of this many trips (inner_caps)
    cut_codes: dict | None = None   # a trace program's: cap -> the program of that cut
    # per program run (0: the launch's own; a trace program's cut: its cap): (the site of
    # each row, the sites) -- a template's rows are its sites (``plan``)
    site_maps: dict | None = None
    head: int = HEAD_WAVES   # waves kept from the launch's start (fill_waves)

    def kept(self) -> np.ndarray:
        """Per position: whether its block is simulated (not in a skipped run of waves)."""
        kept = np.ones(len(self.positions), np.bool_)
        for at, to in self.skips:
            kept[at:to] = False
        return kept

    @property
    def fraction(self) -> float:
        """Share of the launch's work simulated: the slice's blocks not skipped, times
        (trip extrapolation) the trips the two cut runs walk over the warps' trips."""
        kept = self.kept()
        total = float(self.weight.sum())
        f = float(self.weight[self.positions[kept]].sum()) / total if total else 1.0
        return f * (min(1.0, sum(self.caps) / self.trips) if self.caps else 1.0)


def _block_cost(prog, work, wpb, caps):
    """Warp instructions each block costs to simulate, roughly: template rows of the
    prologue and epilogue per warp plus the loop body's per (cut) trip (a trace
    program's: its work, the events)."""
    if traces.is_trace(prog):
        if caps:           # the cut runs' events (each cut's block_work)
            return sum(np.asarray(cp.block_work, np.float64) for _, cp in prog.cuts)
        return np.asarray(work, np.float64)
    n = len(prog.template)
    body = prog.body_end - prog.pro_end
    trips = np.minimum(work, wpb * sum(caps)) if caps else work
    return wpb * (n - body) * (len(caps) if caps else 1) + trips * body


def plan(hw: SIMTGPU, prog: isa.Program | traces.TraceProgram, h: np.ndarray, mode: str, budget: float = None,
         whole_l2: bool = True, cold: bool = False) -> Plan:
    """The sampling plan of one launch (see the module's docstring). Sampled mode cuts
    long loops (``trip_caps``), then simulates the most SMs (``spread`` over the GPU; at
    least one) whose blocks (those the full GPU would dispatch to them: block b goes to SM
    b mod N) cost at
    most ``budget`` warp instructions, after wave sampling of the slice's own waves.
    ``whole_l2``: the slice keeps the whole L2's capacity (see ``slice_vector``); where
    it does not, the L2 starts ``cold`` (empty: ``simulate``'s ``l2="flushed"``) and the
    launch stores more than the L2 holds, the loop cuts wait until it has streamed an
    L2's worth of its footprint.
    A trace program (``traces.TraceProgram``): its blocks' work is its ``block_work``;
    its loop cuts are those its front end traced (``cuts``: cap, trace of that cut; the
    cut runs extrapolate to its ``trips`` as a template's do); full mode needs every block
    traced, sampled mode the blocks it keeps (``trace_plan_blocks``)."""
    pl = _plan_blocks(hw, prog, h, mode, budget, whole_l2, cold)
    if traces.is_trace(prog):
        pl.code = core.ProgramArrays(*traces.program_arrays(prog, pl.positions, pl.kept()))
        pl.site_maps = {0: (prog.sites, prog.n_sites)}
        if pl.caps:
            pl.cut_codes = {c: core.ProgramArrays(*traces.program_arrays(cp, pl.positions,
                                                                         pl.kept()))
                            for c, cp in prog.cuts}
            pl.site_maps.update({c: (cp.sites, cp.n_sites) for c, cp in prog.cuts})
    else:
        n = len(prog.template)
        pl.site_maps = {0: (np.arange(n, dtype=np.int64), n)}
    return pl


def trace_plan_blocks(hw: SIMTGPU, prog: isa.Program | traces.TraceProgram, budget: float = None,
                      l2: str = "cold", launches: Sequence[isa.Program | traces.TraceProgram] | None = None,
                      k: int = 0) -> np.ndarray:
    """The block ids a sampled ``simulate`` of trace program ``prog`` simulates (its plan's
    positions not skipped), from ``prog.launch``, its resources and ``block_work`` alone
    (its rows may be empty): a front end traces just these, then simulates. Full mode
    needs every block. ``l2`` as ``simulate`` will be given it; ``launches``: the
    programs ``simulate`` will be given, ``prog`` their ``k``-th (their arrays alone are
    read: stubs do), default ``prog`` alone -- a launch's plan depends on the others
    (whether their arrays fit in the L2 together; only the first may start empty)."""
    launches = [prog] if launches is None else list(launches)
    if not 0 <= k < len(launches):
        raise ValueError(f"k = {k}: the index of prog among launches (0 to "
                         f"{len(launches) - 1})")
    occ = launch_occupancy(hw, prog)
    pl = _plan_blocks(hw, prog, hw_vector(hw, occ, "gto", prog.smem_per_block), "sampled", budget,
                      _whole_l2(hw, launches), cold=_starts_empty(l2, k))
    return pl.positions[pl.kept()]


def _starts_empty(l2: str, k: int) -> bool:
    """Whether launch ``k`` of a ``simulate`` finds the L2 empty: the first of a flushed
    start (see ``simulate``)."""
    return l2 == "flushed" and k == 0


def _plan_blocks(hw, prog, h, mode, budget, whole_l2=True, cold=False) -> Plan:
    """``plan`` without a trace program's arrays (``code`` None for one)."""
    B, N = prog.launch.blocks, int(h[H_NSM])
    wpb, bps = int(h[H_WPB]), int(h[H_BPS])
    trace = traces.is_trace(prog)
    code = None if trace else core.program_arrays(prog)
    if mode == "full":
        if trace:
            traces.check_full(prog)
        work, _ = _work(code, prog, h)
        cost = float(_block_cost(prog, work, wpb, None).sum())
        if cost > FULL_MAX:
            raise ValueError(f"mode='full': {prog.name} would simulate about {cost:.2g} warp "
                             f"instructions, some {cost / FULL_RATE / 3600:.2g} hours at "
                             f"{FULL_RATE / 1e6:.0f} M a second; at most {FULL_MAX:.0e} -- "
                             "mode='sampled' (the default) answers it in seconds")
        return Plan(code, np.arange(B, dtype=np.int64), np.zeros((0, 2), np.int64), None, N, 1.0,
                    h, np.ones(B), 0, N)
    budget = SLICE_BUDGET if budget is None else budget
    work, trips = _work(code, prog, h)
    fill = 0
    if cold and not whole_l2 and trips and \
            _stores_past_l2(hw, prog):
        # it writes more than the L2 holds: dirty lines go back to DRAM once the L2 is
        # full, after about this many trips of streaming its footprint
        fill = trips * hw.l2.size_bytes / max(1, footprint_bytes([prog]))
    caps = trip_caps(prog, trips, fill) if not trace else (
        tuple(c for c, _ in prog.cuts) or None)
    inner = 0
    if caps is None and not fill and not trace:
        caps = inner_caps(prog, trips)
        inner = int(prog.inner_period) if caps else 0
    weight = (work + wpb).astype(np.float64)
    cost = _block_cost(prog, work, wpb, caps).astype(np.float64)
    waves = B / (N * bps)
    head = fill_waves(hw, prog, waves, whole_l2, cold and caps is None)
    keep = min(1.0, (head + TAIL_WAVES) / waves) if waves > SAMPLE_MIN_WAVES else 1.0
    per_sm = np.bincount(np.arange(B) % N, cost, minlength=N)[:N] * keep
    sms = 1
    while sms * 2 <= N and per_sm[spread(sms * 2, N, B)].sum() <= budget:
        sms *= 2
    while sms < N and per_sm[spread(sms + 1, N, B)].sum() <= budget:
        sms += 1
    if sms == N:
        positions = np.arange(B, dtype=np.int64)
        share, hs = 1.0, h
    else:
        positions = np.nonzero(np.isin(np.arange(B) % N, spread(sms, N, B)))[0].astype(np.int64)
        share = float(weight[positions].sum() / weight.sum())
        hs = slice_vector(hw, h, sms, share, whole_l2)
    skips = _skips(work[positions], sms * bps, head)
    return Plan(code, positions, skips, caps, sms, share, hs, weight, trips, N, inner, head=head)


def _stores_past_l2(hw, prog) -> bool:
    """Whether ``prog`` stores to more bytes than the L2 holds."""
    return sum(4 * n for _, _, n in _stored(prog)) > hw.l2.size_bytes


def fill_waves(hw: SIMTGPU, prog: isa.Program | traces.TraceProgram, waves: float, whole_l2: bool,
               cold: bool) -> int:
    """The waves wave sampling keeps from a launch's start: ``HEAD_WAVES``, or, where a
    launch starting with the L2 empty whose arrays do not fit in it (its slice's sets cut to its share)
    stores more than the L2 holds, as many more as it takes to stream an L2's worth of its
    footprint -- only past them do evictions and dirty write-backs run at the steady rate
    the kept tail waves stand for (a loop's cuts wait for the same in ``trip_caps``)."""
    if not cold or whole_l2 or not _stores_past_l2(hw, prog):
        return HEAD_WAVES
    return HEAD_WAVES + int(np.ceil(waves * hw.l2.size_bytes / max(1, footprint_bytes([prog]))))


def spread(sms: int, n: int, blocks: int) -> np.ndarray:
    """Which ``sms`` of ``n`` SMs a slice simulates, for a launch of ``blocks`` blocks
    (block b goes to SM b mod n). The SMs fall in two groups, those with one block more
    (the first ``blocks mod n``: a tail's extra wave) and the rest; the slice takes from
    each in proportion to its size (at least one from the first), spread evenly from the
    group's start, so that its blocks come from the whole grid. A launch of at most a
    block an SM takes SMs that have one, spread from the middle out: its time is its
    slowest block's, and a padded convolution's edge blocks skip taps its middle ones
    run."""
    sms = min(sms, n, blocks)
    if blocks <= n:                      # one block an SM: the SMs that have one
        groups, ks = (np.arange(blocks),), (sms,)
    else:
        first = blocks % n
        k0 = min(first, max(1, round(sms * first / n))) if first else 0
        groups, ks = (np.arange(first), np.arange(first, n)), (k0, sms - k0)
    # a short launch's SMs from the middle out; a longer one's from each group's start
    at = 0.5 if blocks <= n else 0.0
    pick = []
    for g, k in zip(groups, ks):
        k = min(k, len(g))
        if k > 0:
            pick += list(g[((np.arange(k) + at) * len(g) / k).astype(np.int64)])
    return np.unique(np.array(pick, np.int64))


def slice_vector(hw: SIMTGPU, h: np.ndarray, sms: int, share: float, whole_l2: bool = True) -> np.ndarray:
    """The hardware vector of a slice of ``sms`` SMs doing ``share`` of the launch's
    work: the L2's banks and bandwidth and the DRAM's channels and bandwidth cut to that
    share (at least one bank and one channel). The L2's capacity stays whole where the
    launches' arrays fit in it (``whole_l2``), so that what the whole GPU brought there
    for every SM the slice finds there too; where they do not, its sets are cut to the
    share as well, so that the slice's traffic wears its L2 out -- evictions, dirty
    write-backs -- as the whole GPU's wears the whole L2. A line's atomic unit that
    several blocks reach is held 1 / share times as long a request (``memory.l2_atomic``:
    the whole GPU's other SMs reach it too)."""
    hs = h.copy()
    if not whole_l2:
        hs[H_L2SETS] = max(1, round(h[H_L2SETS] * share))
    hs[H_NSM] = sms
    banks = max(1, round(hw.l2.banks * share))
    channels = max(1, round(hw.dram.channels * share))
    hs[H_L2BANKS] = banks
    hs[H_L2SVC] = hw.l2.sector_bytes / (hw.l2.bandwidth_bytes_per_cycle * share / banks)
    hs[H_L2PART] = h[H_L2PART] * banks / (hw.l2.banks * share)   # the same cut
    hs[H_ATOMSCALE] = 1.0 / share if share > 0 else 1.0
    hs[H_DCH] = channels
    hs[H_DSVC] = hw.l2.sector_bytes / (hw.dram.bandwidth_bytes_per_s * hw.dram.sustained_fraction
                                       * share / hw.clock_hz / channels)
    return hs


def sampled_cost(hw: SIMTGPU, prog: isa.Program | traces.TraceProgram, budget: float = None) -> float:
    """About how many warp instructions sampled mode simulates for ``prog`` (its slice's
    blocks not skipped, loops at their cuts; a rerun for first-touch ownership not
    counted): what a scheduler of many launches orders them by, largest first."""
    occ = launch_occupancy(hw, prog)
    h = hw_vector(hw, occ, "gto", prog.smem_per_block)
    pl = _sampled_plan(hw, prog, occ, budget)
    kept = pl.kept()
    wpb = int(h[H_WPB])
    work = pl.weight[pl.positions[kept]] - wpb          # the plan's weights: work + wpb
    return float(_block_cost(prog, work, wpb, pl.caps).sum())


def simulated_fraction(hw: SIMTGPU, prog: isa.Program | traces.TraceProgram, budget: float = None) -> float:
    """Share of ``prog``'s work that sampled mode simulates (1.0: it runs in full)."""
    return _sampled_plan(hw, prog, launch_occupancy(hw, prog), budget).fraction


def _sampled_plan(hw, prog, occ, budget, l2: str = "cold") -> Plan:
    """The plan ``simulate`` makes for ``prog`` launched alone in sampled mode."""
    return _plans(hw, [prog], [occ], "gto", "sampled", budget, l2)[0]


def _plan(work, C, head: int = HEAD_WAVES):
    """Rows (at, to) of blocks to skip. The launch is cut into waves of C blocks; runs
    of waves whose mean work (loop trips per block) stays within ``RUN_TOLERANCE`` of
    the run's first wave are alike; a run longer than ``SAMPLE_MIN_WAVES`` waves keeps
    its first ``HEAD_WAVES`` and last ``TAIL_WAVES`` waves and skips the rest; the
    launch's first ``head`` waves are all kept (``fill_waves``)."""
    B = len(work)
    n_waves = -(-B // C)
    mean = np.array([work[i * C:(i + 1) * C].mean() for i in range(n_waves)])
    runs, a = [], 0
    for i in range(1, n_waves + 1):
        if i == n_waves or abs(mean[i] - mean[a]) > RUN_TOLERANCE * max(mean[a], 1.0):
            runs.append((a, i))
            a = i
    skips = []
    for a, b in runs:
        if b - a > SAMPLE_MIN_WAVES:
            at, to = max(a + HEAD_WAVES, head) * C, min(b * C, B) - TAIL_WAVES * C
            if b == n_waves:        # the last run's tail: the last TAIL_WAVES x C blocks
                to = B - TAIL_WAVES * C
            if to - at >= C:
                skips.append((at, to))
    return np.array(skips, np.int64).reshape(-1, 2)


def launch_occupancy(hw: SIMTGPU, prog: isa.Program | traces.TraceProgram) -> Occupancy:
    prog.launch.check(hw)
    return occupancy(hw, prog.launch.threads_per_block, prog.regs_per_thread, prog.smem_per_block)


def _check(hw, policy, mode):
    if getattr(hw, "family", None) != "simt":
        raise ValueError(f"hw={show(getattr(hw, 'name', hw))}: not a SIMT GPU")
    if policy not in POLICIES:
        raise ValueError(f"policy={show(policy)}: allowed: {', '.join(POLICIES)}")
    if mode not in MODES:
        raise ValueError(f"mode={show(mode)}: allowed: {', '.join(MODES)}")


def footprint_bytes(programs: Sequence[isa.Program | traces.TraceProgram]) -> int:
    """Bytes of the distinct global arrays the launches touch."""
    arrays = {}
    for p in programs:
        for _, base, elements in p.arrays:
            arrays[base] = 4 * elements
    return sum(arrays.values())


def _ranges(hw, arrays):
    """The arrays' L2 sectors as disjoint [lo, hi) ranges, in address order."""
    sec = hw.l2.sector_bytes
    spans = sorted((base // sec, -(-(base + 4 * n) // sec)) for _, base, n in arrays)
    merged = []
    for lo, hi in spans:
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return merged


def _sectors(hw, arrays):
    """The arrays' L2 sectors, each once, in address order."""
    return np.concatenate([np.arange(lo, hi, dtype=np.int64) for lo, hi in _ranges(hw, arrays)])


def _n_sectors(hw, arrays) -> int:
    return sum(hi - lo for lo, hi in _ranges(hw, arrays))


def _warm(hw, l2, programs):
    """Put every sector of the launches' arrays in the L2 (clean), as repeated launches on
    the same buffers leave it; only when they all fit."""
    _place(l2, _sectors(hw, [a for p in programs for a in p.arrays]), False, l2.tags.shape[1])


def _leave_written(hw, l2, prog, sets):
    """After a sliced launch, put in the L2 (dirty) the sectors of the arrays it stores
    to, as the whole GPU leaves them for the next launch (conv-im2col's GEMM reads the
    column matrix there): the slice wrote only its share. Where they do not all fit, the
    highest addresses (written last) stay."""
    arrays = _stored(prog)
    if arrays:
        _place(l2, _sectors(hw, arrays)[::-1], True, sets)


def _place(l2, sectors, dirty, sets):
    """Sectors into the ways of the L2's first ``sets`` sets (the core takes a sector's
    set modulo the sets its hardware vector gives), the first of each set's sectors first
    (up to its ways), marked present and clean or dirty."""
    memory.place(l2.tags, l2.lru, l2.fill, l2.dirty, np.ascontiguousarray(sectors, np.int64),
                 bool(dirty), int(sets))


def written_fraction(programs: Sequence[isa.Program | traces.TraceProgram]) -> float:
    """Share of the launches' footprint in the arrays they store to."""
    arrays, written = {}, set()
    for p in programs:
        for name, base, elements in p.arrays:
            arrays[(name, base)] = 4 * elements
        written |= {(name, base) for name, base, _ in _stored(p)}
    total = sum(arrays.values())
    return sum(arrays[a] for a in written) / total if total else 0.0


def prior_base(hw: SIMTGPU, programs: Sequence[isa.Program | traces.TraceProgram], sets: int = None) -> int:
    """The first L2 sector of the lines ``_fill_previous`` leaves from earlier launches:
    past every sector of the launches' arrays, at a multiple of the L2's sets (whose
    count ``sets`` defaults to the preset's). Sectors from here on are those lines'."""
    sec = hw.l2.sector_bytes
    sets = sets or hw.l2.size_bytes // (sec * hw.l2.ways)
    top = max((-(-(base + 4 * n) // sec) for p in programs for _, base, n in p.arrays), default=0)
    return (top // sets + 1) * sets


def _fill_previous(hw, l2, programs):
    """Fill the L2 as the previous launch of a footprint larger than it leaves it: every
    way holds a line of that launch (addresses apart from the arrays', which it has since
    moved past), a ``written_fraction`` of them dirty, spread evenly over the order in
    which they will be evicted. Without it the first L2-full of traffic would evict
    nothing, and a sampled launch would read its steady rate off waves that write
    nothing back."""
    tags, lru, dirty = l2.tags, l2.lru, l2.dirty
    sets, ways = tags.shape[1], tags.shape[2]
    base = prior_base(hw, programs, sets)
    i = np.arange(ways)[None, :] * sets + np.arange(sets)[:, None]      # eviction order
    tags[0] = base + i
    lru[0] = 0
    f = written_fraction(programs)
    dirty[0] = np.floor((i + 1) * f) > np.floor(i * f)


def _skipped_waves(r, skips, C, cycles, head: int = HEAD_WAVES):
    """(cycles, error cycles, tau per skipped run): ``cycles`` (the run's own) plus each
    skipped middle's ``skipped / C x tau``, tau the steady per-wave time read off its
    run's head, and the error its spread over the head's waves carries over the skip.
    A launch's first run kept ``head`` waves to fill the L2 (``fill_waves``): its tau is
    read over the HEAD_WAVES waves after the fill, every one of them (the fill was the
    ramp), an even count: waves that start together finish in bursts every other wave."""
    taus, err = [], 0.0
    for at, to in skips:
        # the run's own head (its first HEAD_WAVES waves, just before ``at``): the blocks
        # after a skip may do other work (a grid-stride loop's last blocks run a trip
        # fewer, or none) and stand for nothing skipped
        filled = head > HEAD_WAVES and at == head * C
        w = HEAD_WAVES + 1 if filled else HEAD_WAVES
        ends = np.sort(r.block_end[at - w * C:at])
        d = ends[C:] - ends[:-C]          # completion j against j - C: a wave apart
        steady = d if filled else d[RAMP_WAVES * C:]   # without the ramp (queues filling)
        tau = float(steady.mean())
        # its spread over the steady part's waves (at least two parts: halves of one wave)
        per_wave = [w.mean() for w in np.array_split(steady, max(2, len(steady) // C))]
        cycles += (to - at) / C * tau
        err += float(np.ptp(per_wave)) / 2 * (to - at) / C
        taus.append(tau)
    return cycles, err, taus


def _launch(prog, pl: Plan, t0, l2, keep, cap) -> LaunchRun:
    """One launch as plan ``pl`` says, its loop cut at ``cap`` trips (0: not cut): the
    slice's blocks, those of ``pl.skips`` skipped, and the rest standing for the whole
    launch by their work (loop trips). ``sampling`` says how: extrapolated, sms,
    sm_count, simulated_blocks, total_blocks; where blocks were skipped also head_waves,
    tail_waves, skips and tau_cycles (the steady per-wave time of each skipped run)."""
    B, h = prog.launch.blocks, pl.h
    C = int(h[H_NSM]) * int(h[H_BPS])
    skips = pl.skips
    if pl.inner and cap:
        # caps count the nest's trips; the core cuts each inner pass to its share of them
        r = _run(pl, t0, l2, keep, cap * pl.inner // pl.trips, pl.inner)
    else:
        r = _run(pl, t0, l2, keep, cap)
    blocks = {"id": pl.positions, "sm": r.block_sm, "start": r.block_start, "end": r.block_end}
    kept = pl.kept()
    sampling = {"extrapolated": len(skips) > 0 or pl.sms < pl.sm_count,
                "sms": pl.sms, "sm_count": pl.sm_count, "share": pl.share,
                "simulated_blocks": int(kept.sum()), "total_blocks": B}
    cycles, err, taus = _skipped_waves(r, skips, C, r.stats[S_END] - t0, pl.head)
    err = err / cycles if cycles else 0.0
    if len(skips):
        sampling.update({"head_waves": pl.head, "tail_waves": TAIL_WAVES,
                         "skips": skips.tolist(), "tau_cycles": taus[0] if len(taus) == 1 else taus})
    if pl.sms < pl.sm_count:
        err += _slice_error(r, pl)
    if not sampling["extrapolated"]:
        return LaunchRun(cycles, r.stats, r.issued_per_sm, r.stalls, blocks, r.trace, sampling, None,
                         r.waits, r.warps, r.memory, r.sites)
    # what was counted stands for the blocks not simulated too, in proportion to work (loop
    # trips, plus one per warp for the prologue and launch)
    scale = pl.weight.sum() / pl.weight[pl.positions[kept]].sum()
    return LaunchRun(cycles, r.stats * scale, r.issued_per_sm, r.stalls * scale, blocks,
                     r.trace, sampling, err, r.waits, r.warps, r.memory, r.sites)


def _plan_run(prog, pl: Plan, t0, l2, keep, cut_runs=None) -> LaunchRun:
    """One launch as its plan says: with loop cuts, three runs with the loop cut at
    multiples of its period and the line through the last two out to the warps' trips
    (each period past the first costs the same), the first pair's slope against theirs
    for the error; else one run. ``cut_runs``: the first two cut runs, made already (on
    copies of ``l2``)."""
    if not pl.caps:
        return _launch(prog, pl, t0, l2, keep, 0)
    lo, mid, hi = pl.caps
    first, second = cut_runs or (_launch(prog, pl, t0, l2.copy(), keep, lo),
                                 _launch(prog, pl, t0, l2.copy(), keep, mid))
    r = _launch(prog, pl, t0, l2, keep, hi)
    f = (pl.trips - mid) / (hi - mid)

    def line(a, b):
        return a + (b - a) * f
    run = r._replace(cycles=line(second.cycles, r.cycles), stats=line(second.stats, r.stats),
                     issued_per_sm=line(second.issued_per_sm, r.issued_per_sm),
                     stalls=line(second.stalls, r.stalls),
                     sampling={**r.sampling, "extrapolated": True, "trips": pl.trips,
                               "trip_caps": list(pl.caps),
                               **({"inner_period": pl.inner} if pl.inner else {})})
    return run._replace(estimated_error=_trip_error(first, second, r, pl, run.cycles))


def _owning(pl: Plan, fraction: float) -> Plan:
    """``pl`` with its slice owning ``fraction`` of the sectors it first touches."""
    hs = pl.h.copy()
    hs[H_L2OWN] = fraction
    return dataclasses.replace(pl, h=hs)


def _arrays(prog, opcode):
    """The arrays ``prog``'s instructions of ``opcode`` (LDG, STG) address (a trace
    program names them: ``loads``, ``stores``)."""
    if traces.is_trace(prog):
        return traces.array_rows(prog, prog.loads if opcode == isa.LDG else prog.stores)
    names = {prog.streams[int(s)].array for s in prog.template[prog.template[:, 0] == opcode, 5]}
    return [a for a in prog.arrays if a[0] in names]


def _loaded(prog):
    return _arrays(prog, isa.LDG)


def _stored(prog):
    return _arrays(prog, isa.STG)


def _trip_error(first, second, third, pl, cycles) -> float:
    """Trip extrapolation's error estimate, relative to the extrapolated cycles: the
    change of the per-trip slope between the first pair of cut runs and the second,
    carried over the trips extrapolated, plus the block sampler's own estimate."""
    lo, mid, hi = pl.caps
    s1 = (second.cycles - first.cycles) / (mid - lo)
    s2 = (third.cycles - second.cycles) / (hi - mid)
    own = third.estimated_error or 0.0
    return abs(s2 - s1) * (pl.trips - hi) / cycles + own if cycles else 0.0


def _slice_error(r, pl) -> float:
    """The slice's error estimate, relative to its cycles: how far apart its SMs finish
    (the launch ends with its last SM; a slice of S SMs sees the last of S, not of all N)
    as the standard error of the SMs' last block ends."""
    sm, end = r.block_sm, r.block_end
    ran = sm >= 0
    if pl.sms < 2 or not ran.any():
        return 0.0
    last = np.zeros(pl.sms)
    np.maximum.at(last, sm[ran], end[ran])
    top = last.max()
    return float(np.std(last) / np.sqrt(pl.sms) / top) if top > 0 else 0.0


def simulate(hw: SIMTGPU,
             programs: isa.Program | traces.TraceProgram | Sequence[isa.Program | traces.TraceProgram],
             policy: str = "gto", mode: str = "full", trace: int = 0, l2: str = "cold",
             budget: float = None, trace_memory: int = None, sites: bool | None = None) -> Result:
    """Run ``programs`` (one Program or a sequence run back to back) on ``hw``; a
    ``simulator.result.Result`` with predictor "engine" and mode ``mode``. A program may
    be a ``traces.TraceProgram`` (recorded warp traces): full mode needs every block
    traced, sampled mode the blocks ``trace_plan_blocks`` names.

    ``trace`` keeps the first that many issued instructions (cycle, SM, scheduler, block,
    warp, opcode) for timeline plots, with what their warps waited on before each and the
    warps' lives (``LaunchResult.waits``, ``warps``); ``trace_memory`` (default: as many)
    the first global accesses (``LaunchResult.memory``: issue, data back, the level that
    served them). ``sites`` counts each launch's issues, stalls and bytes per site of its
    program (``LaunchResult.sites``; default: where ``trace`` is on or a trace program
    names its sites -- the counting costs some 15% of a run). None of it changes a cycle.
    ``l2`` is the L2 the first launch finds (``arguments.L2_STATES``): ``cold`` as earlier
    launches left it, full of their lines (see ``_fill_previous``) -- as a launch finds it
    in an application, in a benchmark loop rotating buffer sets, or after a
    cache-clearing write: its first misses write those lines' dirty share back; ``warm``
    (a launch repeated back to back on the same buffers) with the launches' arrays in it
    where they fit, else cold; ``flushed`` empty, as Nsight Compute's cache control leaves
    it before a profiled launch. The L1s start empty. Deterministic: the same inputs give
    the same cycles.

    The Result: ``cycles`` and ``seconds`` of the launches back to back; ``instructions``
    the warp instructions issued; ``bytes_by_level`` l1 (global-load segments), shared,
    l2 (reads and writes) and dram (reads and write-backs -- of the lines earlier launches
    left dirty too -- plus, where the L2 started empty or warm, the dirty sectors left at
    the end: a start full of earlier lines pays for those of the launch before it instead);
    ``stalls_by_cause`` scheduler cycles per ``core.CAUSES``;
    ``utilization`` the share of scheduler issue slots used (warp instructions x issue
    interval over SMs x schedulers x cycles); ``simulated_fraction`` (1.0 in full) the
    share of the work simulated, over the launches weighted by warp instructions;
    ``estimated_error`` the block sampler's estimate of its error relative to the cycles
    (launches run in full count as exact), ``None`` where no launch was block-sampled or
    one was sampled by loop-trip extrapolation alone (which has no estimate);
    ``launches`` one ``Launch`` per program. ``extra``: ``flops_executed`` (the active
    lanes' FLOPs, padding included), ``dram_flush_bytes`` (the dirty sectors counted in
    dram), ``dram_prior_write_bytes`` (write-backs of lines earlier launches left dirty,
    counted in dram, at most those the launches could evict: what a launch from an empty
    L2 would not write), ``hit_rates`` ({"l1", "l2"} over all launches: global-load segments hitting the
    L1, L2 sector reads hitting; ``None`` where there were none), ``policy``. ``detail``
    is an :class:`EngineRun` (per-launch ``LaunchResult`` with block timelines, traces and
    issue counts)."""
    _check(hw, policy, mode)
    l2 = arg.l2_state(l2)
    keep = (int(trace), int(trace if trace_memory is None else trace_memory))
    if min(keep) < 0:
        raise ValueError(f"trace={trace}, trace_memory={trace_memory}: counts >= 0")
    if not isinstance(programs, (list, tuple)):
        programs = (programs,)
    if sites is None:       # per-site counts cost some 15% of a run: where they are used
        sites = trace > 0 or any(traces.is_trace(p) and p.n_sites for p in programs)
    keep = (*keep, bool(sites))
    check_size(hw, programs, mode)
    wall = time.perf_counter()
    cache = new_l2(hw, programs, mode)
    warm_start = _start_l2(hw, cache, programs, l2)
    occs = [launch_occupancy(hw, prog) for prog in programs]
    plans = _plans(hw, programs, occs, policy, mode, budget, l2)
    launches, t0 = [], 0.0
    for k, (prog, occ) in enumerate(zip(programs, occs)):
        if mode == "sampled" and plans[k].sms < plans[k].sm_count and not warm_start:
            run, plans[k] = _run_slice(hw, programs, k, plans[k], t0, cache, keep)
        else:
            run = _plan_run(prog, plans[k], t0, cache, keep)
        if mode == "sampled" and plans[k].positions.size < prog.launch.blocks \
                and k + 1 < len(programs):
            _leave_written(hw, cache, prog, int(plans[k + 1].h[H_L2SETS]))
        launches.append(_launch_result(hw, prog, occ, plans[k], run, mode))
        t0 += run.cycles
    prior = not warm_start and l2 != "flushed"
    flush = 0.0 if prior else _flush_bytes(hw, cache, programs, plans[-1], mode)
    return _result(hw, programs, policy, mode, launches, flush, wall,
                   _prior_dirty(hw, programs, launches, mode) if prior else None)


def _prior_dirty(hw, programs, launches, mode) -> float:
    """The write-backs of earlier launches' dirty lines the launches make, where the L2
    started full of them: one per line they allocate, in the share dirty, at most the
    L2's. Sampled, where the arrays fit in the L2, as many as the whole GPU allocates --
    its DRAM reads and first stores -- not the slice's count scaled: a slice's first
    touches of data every SM reads evict lines on it that the other SMs would; else
    (and in full mode) the run's own count, at most the L2's dirty lines."""
    f = written_fraction(programs)
    cap = min(hw.l2.size_bytes, footprint_bytes(programs)) * f
    if mode != "sampled" or not _whole_l2(hw, programs):
        return cap
    stored, allocated = set(), 0.0
    for prog, lr in zip(programs, launches):
        new = [a for a in _stored(prog) if (a[0], a[1]) not in stored]
        stored |= {(a[0], a[1]) for a in new}
        allocated += lr.stats.dram_read_bytes + _n_sectors(hw, new) * hw.l2.sector_bytes
    return min(cap, allocated * f)


def _start_l2(hw, cache, programs, l2: str) -> bool:
    """Fill ``cache`` as the launches find it (``l2``): warm, their arrays where they all
    fit (then True: a warm start); else, unless flushed, full as earlier launches left it
    (``_fill_previous``)."""
    warm_start = l2 == "warm" and footprint_bytes(programs) <= hw.l2.size_bytes
    if warm_start:
        _warm(hw, cache, programs)
    elif l2 != "flushed":
        _fill_previous(hw, cache, programs)
    return warm_start


def _plans(hw, programs, occs, policy, mode, budget, l2: str) -> list:
    """Each launch's ``plan``: the slice keeps the whole L2 where the launches' arrays fit
    in it; only the first launch of a flushed start starts with it empty."""
    whole = _whole_l2(hw, programs)
    prior = prior_base(hw, programs)
    out = []
    for k, (prog, occ) in enumerate(zip(programs, occs)):
        h = hw_vector(hw, occ, policy, prog.smem_per_block)
        h[H_L2PRIOR] = prior
        out.append(plan(hw, prog, h, mode, budget, whole,
                        cold=_starts_empty(l2, k)))
    return out


def _whole_l2(hw, programs) -> bool:
    """Whether a slice keeps the whole L2's capacity: the launches' arrays fit in it."""
    return footprint_bytes(programs) <= hw.l2.size_bytes


def _run_slice(hw, programs, k, pl: Plan, t0, l2, keep):
    """Launch ``k`` on its plan's slice of the SMs, owning the sectors it first touches in
    the share the whole GPU would fetch itself; returns (the run, the plan it ran).

    It runs first tracking first touches (see ``memory.l2_access``) and owning every
    sector. The whole GPU fetches each sector its launches read once, for every SM; a
    slice whose first touches (scaled to the launch) outnumber those -- blocks on other
    SMs would have brought many of them first -- runs again owning just its share of
    them where the first run's DRAM load (those first touches and the write-backs of the
    victims they evicted included) is high enough for them to have skewed it
    (``RERUN_DRAM_BUSY``); else the counts alone move from DRAM to the L2. A launch whose
    loop is cut decides from its first two cut runs, the line through them out to the
    warps' trips, before the third: where it runs again, its third is not run twice."""
    prog = programs[k]
    pl = _owning(pl, np.nextafter(1.0, 0.0))
    cold = _cold_sectors(hw, programs, k, l2)
    sec = hw.l2.sector_bytes
    dram_bpc = hw.dram.bandwidth_bytes_per_s * hw.dram.sustained_fraction / hw.clock_hz

    def skew(st, cycles):
        # its first touches, and the DRAM load the run had, excess first touches and the
        # write-backs of the victims they evicted (earlier launches' dirty lines among
        # them) included: what skews it
        return st[S_FIRST], (st[S_DRB] + st[S_DWB]) / (dram_bpc * cycles)
    if pl.caps:
        lo, mid, _ = pl.caps
        cut_runs = (_launch(prog, pl, t0, l2.copy(), keep, lo),
                    _launch(prog, pl, t0, l2.copy(), keep, mid))
        a, b = cut_runs
        f = (pl.trips - lo) / (mid - lo)
        first, busy = skew(a.stats + (b.stats - a.stats) * f,
                           a.cycles + (b.cycles - a.cycles) * f)
        rerun = first > 1.1 * cold and busy > RERUN_DRAM_BUSY
        if not rerun:
            run = _plan_run(prog, pl, t0, l2, keep, cut_runs)
    else:
        before = l2.copy()
        run = _plan_run(prog, pl, t0, l2, keep)
        first, busy = skew(run.stats, run.cycles)
        rerun = first > 1.1 * cold and busy > RERUN_DRAM_BUSY
        if rerun:
            l2.restore(before)
    if not rerun:
        first = run.stats[S_FIRST]
        if first <= 1.1 * cold:
            return run, pl
    if rerun:
        pl = _owning(pl, cold / first)
        run = _plan_run(prog, pl, t0, l2, keep)
    else:
        # DRAM is not what bounds it: the counts alone move to the L2, and the
        # write-backs of the victims the reads' allocations evicted in the same share
        # (earlier launches' lines first: the oldest)
        st = run.stats.copy()
        gone = st[S_RWB] * min(1.0, (first - cold) * sec / st[S_DRB]) if st[S_DRB] > 0 else 0.0
        st[S_DRB] -= (first - cold) * sec
        st[S_L2MISS] -= first - cold
        st[S_L2HIT] += first - cold
        st[S_DWB] -= gone
        st[S_DWBP] -= min(st[S_DWBP], gone)
        run = run._replace(stats=st)
    return run._replace(sampling={**run.sampling, "l2_owned_fraction": cold / first,
                                  "l2_owned_rerun": bool(rerun)}), pl


def _cold_sectors(hw, programs, k, l2) -> int:
    """Sectors launch ``k`` reads that the whole GPU fetches from DRAM: those of the
    arrays it loads, less what earlier launches wrote into the L2 (up to its size)."""
    held = min(sum(_n_sectors(hw, _stored(p)) for p in programs[:k]), l2.tags.size)
    loaded = _loaded(programs[k])
    return max(0, _n_sectors(hw, loaded) - held) if loaded else 0


def _launch_result(hw, prog, occ, pl: Plan, run: LaunchRun, mode: str) -> LaunchResult:
    stats = LaunchStats.from_vector(run.stats)
    return LaunchResult(
        prog, float(run.cycles), stats.warp_instructions, stats.flops, occ,
        prog.launch.blocks / (occ.blocks_per_sm * hw.sm_count),
        {c: float(v) for c, v in zip(core.CAUSES, run.stalls)}, stats, stats.bytes_by_level(),
        run.blocks, run.issued_per_sm, run.trace, run.sampling,
        pl.fraction if mode == "sampled" else 1.0, run.estimated_error, run.waits, run.warps,
        run.memory, run.sites)


def _flush_bytes(hw, l2, programs, last: Plan, mode: str) -> float:
    """Bytes of the dirty L2 sectors left at the end (DRAM writes, untimed): after a
    sliced last launch, as many as the whole GPU would leave (``_slice_flush``)."""
    flush = float(l2.dirty.sum())
    if mode == "sampled" and last.positions.size < programs[-1].launch.blocks:
        flush = _slice_flush(hw, l2, programs, last,
                             float(last.weight.sum() / last.weight[last.positions].sum()))
    return flush * hw.l2.sector_bytes


def _result(hw, programs, policy, mode, launches, flush, wall, prior_dirty=None) -> Result:
    """The launches' ``LaunchResult``s and the final flush as one ``Result`` (``wall``:
    when the simulation started, on ``time.perf_counter``). ``prior_dirty``, for a start
    full of earlier launches' lines: their write-backs (``_prior_dirty``) -- where the
    arrays fit in the L2 a sampled run's DRAM bytes take it for its own count; where they
    do not, it caps the share counted as theirs (a sampled run's first waves' write-backs
    of earlier lines stand for its own later ones: the total stands)."""
    total = {k: sum(lr.bytes_by_level[k] for lr in launches) for k in launches[0].bytes_by_level}
    total["dram"] += flush
    prior = sum(lr.stats.dram_prior_write_bytes for lr in launches)
    if prior_dirty is not None and (prior > prior_dirty or mode == "sampled"
                                    and _whole_l2(hw, programs)):
        if _whole_l2(hw, programs):
            total["dram"] += prior_dirty - prior
        prior = min(prior, prior_dirty) if not _whole_l2(hw, programs) else prior_dirty
    stalls = {c: sum(lr.stalls_by_cause[c] for lr in launches) for c in core.CAUSES}
    cycles = sum(lr.cycles for lr in launches)
    instructions = sum(lr.warp_instructions for lr in launches)
    wall = time.perf_counter() - wall
    return Result(
        predictor="engine", mode=mode, hardware=hw.name, workload=programs[0].name,
        seconds=cycles / hw.clock_hz, flops=sum(p.flops for p in programs),
        compulsory_bytes=sum(p.min_bytes for p in programs), cycles=cycles,
        bytes_by_level=total, instructions=instructions, instruction_unit="warp",
        stalls_by_cause=stalls, utilization=issue_utilization(hw, instructions, cycles),
        simulated_fraction=_weighted_fraction(launches), estimated_error=_estimated_error(launches),
        simt_efficiency=simt_efficiency(launches),
        bank_conflicts=sum(lr.stats.shared_conflict_passes for lr in launches),
        wall_seconds=wall, launches=[_record(lr) for lr in launches],
        extra={"flops_executed": sum(lr.flops_executed for lr in launches),
               "dram_flush_bytes": flush,
               "dram_prior_write_bytes": prior,
               "hit_rates": hit_rates(*(sum(getattr(lr.stats, k) for lr in launches)
                                        for k in ("l1_hits", "l1_misses", "l2_hits", "l2_misses"))),
               "policy": policy},
        detail=EngineRun(hw, policy, mode, launches, flush))


def _slice_flush(hw, l2, programs, pl: Plan, scale: float) -> float:
    """Dirty sectors the whole GPU would leave in the L2 after a sliced last launch. With
    the whole L2 (the arrays fit): the slice's dirty sectors times ``scale`` (the whole
    launch's work over the slice's), at most the sectors of the arrays the launches store
    to (blocks that share a sector each dirty it in a slice). With the L2's sets cut to
    the slice's share, the slice's sets are a scaled copy of the whole L2: their dirty
    sectors times the sets over the slice's."""
    sets = int(pl.h[H_L2SETS])
    total_sets = l2.tags.shape[1]
    if sets == total_sets:
        stored = _n_sectors(hw, [a for p in programs for a in _stored(p)])
        return min(float(l2.dirty.sum()) * scale, float(stored))
    return float(l2.dirty[0, :sets].sum()) * total_sets / sets


def issue_utilization(hw: SIMTGPU, instructions: float, cycles: float) -> float | None:
    """Share of the GPU's scheduler issue slots that issued: warp instructions x issue
    interval over (SMs x schedulers x cycles); None for no cycles."""
    if not cycles:
        return None
    sm = hw.sm
    return instructions * sm.issue_interval_cycles / (hw.sm_count * sm.warp_schedulers * cycles)


def _weighted_fraction(launches) -> float:
    """The launches' simulated fractions weighted by their warp instructions."""
    w = sum(lr.warp_instructions for lr in launches)
    if not w:
        return min(lr.simulated_fraction for lr in launches)
    return sum(lr.simulated_fraction * lr.warp_instructions for lr in launches) / w


def _estimated_error(launches) -> float | None:
    """The block sampler's relative error estimates over the launches, weighted by their
    cycles (a launch run in full adds none); None where no launch has one, or a sampled
    launch has none (loop-trip extrapolation alone)."""
    if any(lr.simulated_fraction < 1.0 and lr.estimated_error is None for lr in launches):
        return None
    if all(lr.estimated_error is None for lr in launches):
        return None
    cycles = sum(lr.cycles for lr in launches)
    err = sum(lr.estimated_error * lr.cycles for lr in launches if lr.estimated_error is not None)
    return err / cycles if cycles else 0.0


def launch_shape(prog: isa.Program | traces.TraceProgram, occ: Occupancy, waves: float) -> dict:
    """The Launch fields every SIMT predictor fills alike: the program's shape and
    resources, its occupancy and waves."""
    return dict(kernel=prog.name, label=prog.label, grid=prog.launch.grid, block=prog.launch.block,
                regs_per_thread=prog.regs_per_thread, smem_per_block=prog.smem_per_block,
                resources_source=prog.resources_source, blocks_per_sm=occ.blocks_per_sm,
                warps_per_sm=occ.warps_per_sm, occupancy=occ.occupancy,
                limited_by=occ.limited_by, waves=waves)


def simt_efficiency(launches: Sequence[LaunchResult]) -> float | None:
    """Thread instructions over 32 x warp instructions of ``launches`` (None for none
    issued)."""
    issued = sum(lr.stats.warp_instructions for lr in launches)
    return sum(lr.stats.thread_instructions for lr in launches) / (32 * issued) if issued \
        else None


def _record(lr: LaunchResult) -> Launch:
    return Launch(**launch_shape(lr.program, lr.occupancy, lr.waves), cycles=lr.cycles,
                  instructions=lr.warp_instructions, bytes_by_level=lr.bytes_by_level,
                  stalls_by_cause=lr.stalls_by_cause, hit_rates=lr.stats.hit_rates(),
                  simulated_fraction=lr.simulated_fraction, estimated_error=lr.estimated_error,
                  sampling=lr.sampling, simt_efficiency=simt_efficiency([lr]),
                  bank_conflicts=lr.stats.shared_conflict_passes)

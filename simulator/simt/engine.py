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

import time
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from simulator.result import Launch, Result

from . import core, isa
from .hwvec import H_WPB, hw_vector, l1_capacity  # noqa: F401  (l1_capacity: engine's API)
from .occupancy import occupancy
from .stats import S_END, LaunchStats, hit_rates

POLICIES = ("gto", "lrr")
MODES = ("full", "sampled")
HEAD_WAVES = 6
RAMP_WAVES = 2
TAIL_WAVES = 2
SAMPLE_MIN_WAVES = 12
RUN_TOLERANCE = 0.02
TRIP_CAPS = (32, 64)
TRIP_SAMPLE_MIN = 192


class CoreRun(NamedTuple):
    """What ``core.run`` returns, by name (``_run`` is the one place its tuple is read)."""

    stats: np.ndarray            # the statistics vector (``stats.S_*``)
    issued_per_sm: np.ndarray
    block_sm: np.ndarray         # per block of the range: its SM (-1: skipped), start, end
    block_start: np.ndarray
    block_end: np.ndarray
    stalls: np.ndarray           # stall cycles per ``core.CAUSES``
    trace: np.ndarray


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


@dataclass
class EngineRun:
    """The engine's own record of a run (``Result.detail``): per-launch timelines and
    traces, which the ``Result`` does not carry."""

    hw: object
    policy: str
    mode: str
    launches: list           # LaunchResult per program
    dram_flush_bytes: float  # dirty L2 sectors left at the end (in Result.bytes_by_level["dram"])


def _state(hw):
    l2 = hw.l2
    sets = l2.size_bytes // (l2.sector_bytes * l2.ways)
    shape = (1, sets, l2.ways)
    return (np.full(shape, -1, np.int64), np.zeros(shape, np.int64),
            np.zeros(shape), np.zeros(shape, np.bool_),
            np.zeros(l2.banks), np.zeros(hw.dram.channels))


def _run(prog, h, lo, hi, t0, state, trace, skips, cap) -> CoreRun:
    return CoreRun(*core.run(prog.kind, prog.params, prog.template, prog.pro_end, prog.body_end,
                             prog.n_regs, h, lo, hi, t0, *state, trace, skips, cap))


def _work(prog, h):
    """(each block's loop trips over its warps, the most trips of any warp)."""
    total, most = core.block_trips(prog.kind, prog.params, prog.launch.blocks, int(h[H_WPB]))
    return total, int(most.max())


def _skips(work, C):
    """Rows of blocks sampled mode skips (none for a launch too short to sample)."""
    if len(work) / C <= SAMPLE_MIN_WAVES:
        return np.zeros((0, 2), np.int64)
    return _plan(work, C)


def trip_caps(prog, trips):
    """The two loop cuts of trip extrapolation for a warp of ``trips`` trips: multiples of
    the program's trip period near TRIP_CAPS, so that each run ends where the loop nest's
    work repeats; None when the loop is too short to gain from it."""
    per = max(1, int(prog.trip_period))
    lo = per * -(-TRIP_CAPS[0] // per)
    hi = lo * TRIP_CAPS[1] // TRIP_CAPS[0]
    return (lo, hi) if trips > max(TRIP_SAMPLE_MIN, 3 * lo) else None


def simulated_fraction(hw, prog) -> float:
    """Share of ``prog``'s work that sampled mode simulates (1.0: it runs in full)."""
    occ = _launch_occupancy(hw, prog)
    h = hw_vector(hw, occ, "gto", prog.smem_per_block)
    work, trips = _work(prog, h)
    skips = _skips(work, occ.blocks_per_sm * hw.sm_count)
    return _fraction(prog.launch.blocks, skips, trip_caps(prog, trips), trips)


def _fraction(blocks, skips, caps, trips) -> float:
    """Share of a launch's work simulated: the blocks not skipped, times (trip
    extrapolation) the trips the two cut runs walk over the warps' trips."""
    kept = 1.0 - float((skips[:, 1] - skips[:, 0]).sum()) / blocks
    return kept * (min(1.0, sum(caps) / trips) if caps else 1.0)


def _plan(work, C):
    """Rows (at, to) of blocks to skip. The launch is cut into waves of C blocks; runs
    of waves whose mean work (loop trips per block) stays within ``RUN_TOLERANCE`` of
    the run's first wave are alike; a run longer than ``SAMPLE_MIN_WAVES`` waves keeps
    its first ``HEAD_WAVES`` and last ``TAIL_WAVES`` waves and skips the rest."""
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
            at, to = (a + HEAD_WAVES) * C, min(b * C, B) - TAIL_WAVES * C
            if b == n_waves:        # the last run's tail: the last TAIL_WAVES x C blocks
                to = B - TAIL_WAVES * C
            if to - at >= C:
                skips.append((at, to))
    return np.array(skips, np.int64).reshape(-1, 2)


def _launch_occupancy(hw, prog):
    prog.launch.check(hw)
    return occupancy(hw, prog.launch.threads_per_block, prog.regs_per_thread, prog.smem_per_block)


def _check(hw, policy, mode):
    if getattr(hw, "family", None) != "simt":
        raise ValueError(f"hardware {getattr(hw, 'name', hw)!r} is not a SIMT GPU")
    if policy not in POLICIES:
        raise ValueError(f"policy = {policy!r}: allowed: {', '.join(POLICIES)}")
    if mode not in MODES:
        raise ValueError(f"mode = {mode!r}: allowed: {', '.join(MODES)}")


def footprint_bytes(programs) -> int:
    """Bytes of the distinct global arrays the launches touch."""
    arrays = {}
    for p in programs:
        for name, base, elements in p.arrays:
            arrays[base] = 4 * elements
    return sum(arrays.values())


def _warm(hw, state, programs):
    """Put every sector of the launches' arrays in the L2 (clean), as repeated launches on
    the same buffers leave it; only when they all fit."""
    tags, lru = state[0], state[1]
    sec = hw.l2.sector_bytes
    sectors = np.concatenate([np.arange(base // sec, -(-(base + 4 * n) // sec), dtype=np.int64)
                              for p in programs for _, base, n in p.arrays])
    sectors = np.unique(sectors)
    sets, ways = tags.shape[1], tags.shape[2]
    st = sectors % sets
    order = np.argsort(st, kind="stable")
    st, sectors = st[order], sectors[order]
    first = np.searchsorted(st, st, side="left")
    way = np.arange(st.size) - first
    keep = way < ways
    tags[0, st[keep], way[keep]] = sectors[keep]
    lru[0, st[keep], way[keep]] = 0


def written_fraction(programs) -> float:
    """Share of the launches' footprint in the arrays they store to."""
    arrays, written = {}, set()
    for p in programs:
        for name, base, elements in p.arrays:
            arrays[(name, base)] = 4 * elements
        stores = {p.streams[int(s)].array for s in p.template[p.template[:, 0] == isa.STG, 5]}
        written |= {(name, base) for name, base, _ in p.arrays if name in stores}
    total = sum(arrays.values())
    return sum(arrays[a] for a in written) / total if total else 0.0


def _fill_previous(hw, state, programs):
    """Fill the L2 as the previous launch of a footprint larger than it leaves it: every
    way holds a line of that launch (addresses apart from the arrays', which it has since
    moved past), a ``written_fraction`` of them dirty, spread evenly over the order in
    which they will be evicted. Without it the first L2-full of traffic would evict
    nothing, and a sampled launch would read its steady rate off waves that write
    nothing back."""
    tags, lru, dirty = state[0], state[1], state[3]
    sets, ways = tags.shape[1], tags.shape[2]
    sec = hw.l2.sector_bytes
    top = max(-(-(base + 4 * n) // sec) for p in programs for _, base, n in p.arrays)
    base = (top // sets + 1) * sets
    i = np.arange(ways)[None, :] * sets + np.arange(sets)[:, None]      # eviction order
    tags[0] = base + i
    lru[0] = 0
    f = written_fraction(programs)
    dirty[0] = np.floor((i + 1) * f) > np.floor(i * f)


def _copy(state):
    return tuple(a.copy() for a in state)


def _launch(prog, h, C, t0, state, trace, work, skips, cap) -> LaunchRun:
    """One launch, its loop cut at ``cap`` trips (0: not cut), the blocks of ``skips``
    (rows (at, to), from ``_skips``) skipped and the rest standing for them by their
    ``work`` (loop trips). ``sampling`` says how: extrapolated, simulated_blocks,
    total_blocks; where blocks were skipped also head_waves, tail_waves, skips and
    tau_cycles (the steady per-wave time of each skipped run)."""
    B = prog.launch.blocks
    sampling = {"extrapolated": False, "simulated_blocks": B, "total_blocks": B}
    r = _run(prog, h, 0, B, t0, state, trace, skips, cap)
    cycles = r.stats[S_END] - t0
    blocks = {"sm": r.block_sm, "start": r.block_start, "end": r.block_end}
    if not len(skips):
        return LaunchRun(cycles, r.stats, r.issued_per_sm, r.stalls, blocks, r.trace, sampling, None)
    taus, err = [], 0.0
    for at, to in skips:
        # the run's own head (its first HEAD_WAVES waves, just before ``at``): the blocks
        # after a skip may do other work (a grid-stride loop's last blocks run a trip
        # fewer, or none) and stand for nothing skipped
        ends = np.sort(r.block_end[at - HEAD_WAVES * C:at])
        d = ends[C:] - ends[:-C]          # completion j against j - C: a wave apart
        steady = d[RAMP_WAVES * C:]       # without the ramp (queues filling)
        tau = float(steady.mean())
        per_wave = [w.mean() for w in np.array_split(steady, max(1, len(steady) // C))]
        cycles += (to - at) / C * tau
        err += float(np.ptp(per_wave)) / 2 * (to - at) / C
        taus.append(tau)
    err = err / cycles if cycles else 0.0
    # what was counted stands for the skipped blocks too, in proportion to work (loop
    # trips, plus one per warp for the prologue and launch)
    weight = work + h[H_WPB]
    kept = np.ones(B, np.bool_)
    for at, to in skips:
        kept[at:to] = False
    scale = weight.sum() / weight[kept].sum()
    sampling = {"extrapolated": True, "simulated_blocks": int(kept.sum()),
                "total_blocks": B, "head_waves": HEAD_WAVES, "tail_waves": TAIL_WAVES,
                "skips": skips.tolist(), "tau_cycles": taus[0] if len(taus) == 1 else taus}
    return LaunchRun(cycles, r.stats * scale, r.issued_per_sm * scale, r.stalls * scale, blocks,
                     r.trace, sampling, err)


def simulate(hw, programs, policy: str = "gto", mode: str = "full", trace: int = 0,
             l2_warm: bool = False) -> Result:
    """Run ``programs`` (one Program or a sequence run back to back) on ``hw``; a
    ``simulator.result.Result`` with predictor "engine" and mode ``mode``.

    ``trace`` keeps the first that many issued instructions (cycle, SM, scheduler, block,
    warp, opcode) for timeline plots. ``l2_warm`` (a launch repeated back to back on the
    same buffers) starts with the launches' arrays in the L2 when they fit, and otherwise
    with the L2 full as the previous launch left it (see ``_fill_previous``); without it
    the caches start empty. Deterministic: the same inputs give the same cycles.

    The Result: ``cycles`` and ``seconds`` of the launches back to back; ``instructions``
    the warp instructions issued; ``bytes_by_level`` l1 (global-load segments), shared,
    l2 (reads and writes) and dram (reads and write-backs, plus the dirty L2 sectors left
    at the end); ``stalls_by_cause`` scheduler cycles per ``core.CAUSES``;
    ``utilization`` the share of scheduler issue slots used (warp instructions x issue
    interval over SMs x schedulers x cycles); ``simulated_fraction`` (1.0 in full) the
    share of the work simulated, over the launches weighted by warp instructions;
    ``estimated_error`` the block sampler's estimate of its error relative to the cycles
    (launches run in full count as exact), ``None`` where no launch was block-sampled or
    one was sampled by loop-trip extrapolation alone (which has no estimate);
    ``launches`` one ``Launch`` per program. ``extra``: ``flops_executed`` (the active
    lanes' FLOPs, padding included), ``dram_flush_bytes`` (the dirty sectors counted in
    dram), ``hit_rates`` ({"l1", "l2"} over all launches: global-load segments hitting the
    L1, L2 sector reads hitting; ``None`` where there were none), ``policy``. ``detail``
    is an :class:`EngineRun` (per-launch ``LaunchResult`` with block timelines, traces and
    issue counts)."""
    _check(hw, policy, mode)
    if not isinstance(programs, (list, tuple)):
        programs = (programs,)
    wall = time.perf_counter()
    state = _state(hw)
    if l2_warm and footprint_bytes(programs) <= hw.l2.size_bytes:
        _warm(hw, state, programs)
    elif l2_warm:
        _fill_previous(hw, state, programs)
    t0 = 0.0
    launches = []
    for prog in programs:
        occ = _launch_occupancy(hw, prog)
        h = hw_vector(hw, occ, policy, prog.smem_per_block)
        B = prog.launch.blocks
        C = occ.blocks_per_sm * hw.sm_count
        work, trips = _work(prog, h) if mode == "sampled" else (None, 0)
        skips = _skips(work, C) if work is not None else np.zeros((0, 2), np.int64)
        caps = trip_caps(prog, trips) if mode == "sampled" else None
        if caps:
            # two runs with the loop cut at two multiples of its period, then the line
            # through them out to the warps' trips (each period past the first costs the same)
            lo, hi = caps
            first = _launch(prog, h, C, t0, _copy(state), trace, work, skips, lo)
            r = _launch(prog, h, C, t0, state, trace, work, skips, hi)
            f = (trips - lo) / (hi - lo)

            def line(a, b):
                return a + (b - a) * f
            run = r._replace(cycles=line(first.cycles, r.cycles), stats=line(first.stats, r.stats),
                             issued_per_sm=line(first.issued_per_sm, r.issued_per_sm),
                             stalls=line(first.stalls, r.stalls),
                             sampling={**r.sampling, "extrapolated": True, "trips": trips,
                                       "trip_caps": [lo, hi]})
        else:
            run = _launch(prog, h, C, t0, state, trace, work, skips, 0)
        stats = LaunchStats.from_vector(run.stats)
        launches.append(LaunchResult(
            prog, float(run.cycles), stats.warp_instructions, stats.flops, occ, B / C,
            {c: float(v) for c, v in zip(core.CAUSES, run.stalls)}, stats, stats.bytes_by_level(),
            run.blocks, run.issued_per_sm, run.trace, run.sampling,
            _fraction(B, skips, caps, trips) if mode == "sampled" else 1.0, run.estimated_error))
        t0 += run.cycles
    flush = float(state[3].sum() * hw.l2.sector_bytes)
    total = {k: sum(lr.bytes_by_level[k] for lr in launches) for k in launches[0].bytes_by_level}
    total["dram"] += flush
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
        wall_seconds=wall, launches=[_record(lr) for lr in launches],
        extra={"flops_executed": sum(lr.flops_executed for lr in launches),
               "dram_flush_bytes": flush,
               "hit_rates": hit_rates(*(sum(getattr(lr.stats, k) for lr in launches)
                                        for k in ("l1_hits", "l1_misses", "l2_hits", "l2_misses"))),
               "policy": policy},
        detail=EngineRun(hw, policy, mode, launches, flush))


def issue_utilization(hw, instructions, cycles) -> float | None:
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


def launch_shape(prog, occ, waves) -> dict:
    """The Launch fields every SIMT predictor fills alike: the program's shape and
    resources, its occupancy and waves."""
    return dict(kernel=prog.name, label=prog.label, grid=prog.launch.grid, block=prog.launch.block,
                regs_per_thread=prog.regs_per_thread, smem_per_block=prog.smem_per_block,
                resources_source=prog.resources_source, blocks_per_sm=occ.blocks_per_sm,
                warps_per_sm=occ.warps_per_sm, occupancy=occ.occupancy,
                limited_by=occ.limited_by, waves=waves)


def _record(lr: LaunchResult) -> Launch:
    return Launch(**launch_shape(lr.program, lr.occupancy, lr.waves), cycles=lr.cycles,
                  instructions=lr.warp_instructions, bytes_by_level=lr.bytes_by_level,
                  stalls_by_cause=lr.stalls_by_cause, hit_rates=lr.stats.hit_rates(),
                  simulated_fraction=lr.simulated_fraction, estimated_error=lr.estimated_error,
                  sampling=lr.sampling)

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

import math
import time
from dataclasses import dataclass, field

import numpy as np

from . import core, isa
from .occupancy import occupancy

POLICIES = ("gto", "lrr")
MODES = ("full", "sampled")
HEAD_WAVES = 6
RAMP_WAVES = 2
TAIL_WAVES = 2
SAMPLE_MIN_WAVES = 12
RUN_TOLERANCE = 0.02
TRIP_CAPS = (32, 64)
TRIP_SAMPLE_MIN = 192


def l1_capacity(hw, occ, smem_per_block: int = 0) -> int:
    """The L1's bytes for a launch: on a unified L1 + shared array, what the smallest
    carveout holding the resident blocks' shared memory leaves (the driver's choice when
    the kernel states no preference)."""
    sm = hw.sm
    need = occ.blocks_per_sm * occ.shared_bytes_per_block if smem_per_block else 0
    return sm.l1_bytes(need)


def hw_vector(hw, occ, policy: str, smem_per_block: int = 0) -> np.ndarray:
    """The preset and the launch's occupancy as the core's float vector."""
    sm, l1, l2, d = hw.sm, hw.sm.l1, hw.l2, hw.dram
    h = np.zeros(core.N_HW)
    h[core.H_NSM] = hw.sm_count
    h[core.H_NSCHED] = sm.warp_schedulers
    h[core.H_MAXW] = sm.max_warps
    h[core.H_BPS] = occ.blocks_per_sm
    h[core.H_WPB] = occ.warps_per_sm // occ.blocks_per_sm
    lanes_per_sched = sm.fp32_lanes / sm.warp_schedulers
    h[core.H_SPII] = max(1, math.ceil(sm.warp_size / lanes_per_sched))
    # integer lanes of their own (Volta on): a pipe of their own; else (0) the FP32 pipe's
    if sm.int32_lanes:
        h[core.H_INTII] = max(1, math.ceil(sm.warp_size / (sm.int32_lanes / sm.warp_schedulers)))
    h[core.H_SFUII] = max(1, math.ceil(sm.warp_size / sm.sfu_units))
    h[core.H_LDSTII] = max(1, math.ceil(sm.warp_size / sm.ldst_units))
    h[core.H_FPLAT] = sm.fp32_latency_cycles
    h[core.H_SFULAT] = sm.sfu_latency_cycles
    h[core.H_SHLAT] = sm.shared_latency_cycles
    h[core.H_BANKS] = sm.shared_banks
    h[core.H_BANKB] = sm.shared_bank_bytes
    h[core.H_SEG] = l1.sector_bytes
    l1_bytes = l1_capacity(hw, occ, smem_per_block)
    h[core.H_L1SETS] = l1_bytes // (l1.sector_bytes * l1.ways)
    h[core.H_L1WAYS] = l1.ways
    h[core.H_L1LAT] = l1.latency_cycles
    h[core.H_L1BW] = l1.bandwidth_bytes_per_cycle
    h[core.H_MSHR] = l1.mshrs
    if l1.sector_bytes < l2.sector_bytes:
        raise ValueError(f"{hw.name}: sm.l1.sector_bytes ({l1.sector_bytes}) below "
                         f"l2.sector_bytes ({l2.sector_bytes}) is not modelled")
    h[core.H_L2SEC] = l2.sector_bytes
    h[core.H_L2SETS] = l2.size_bytes // (l2.sector_bytes * l2.ways)
    h[core.H_L2WAYS] = l2.ways
    h[core.H_L2LINE] = l2.line_bytes // l2.sector_bytes
    h[core.H_L2LAT] = l2.latency_cycles
    h[core.H_L2BANKS] = l2.banks
    h[core.H_L2HASH] = float(l2.hashed_banks)
    h[core.H_L2SVC] = l2.sector_bytes / (l2.bandwidth_bytes_per_cycle / l2.banks)
    h[core.H_DLAT] = d.latency_cycles
    h[core.H_DCH] = d.channels
    h[core.H_DSVC] = l2.sector_bytes / (d.bandwidth_bytes_per_s * d.sustained_fraction
                                         / hw.clock_hz / d.channels)
    h[core.H_LAUNCH] = sm.block_launch_cycles
    h[core.H_BSTART] = sm.block_start_cycles
    h[core.H_GTO] = 1.0 if policy == "gto" else 0.0
    h[core.H_ISSUE] = sm.issue_interval_cycles
    return h


@dataclass
class LaunchResult:
    """One kernel launch as simulated."""

    program: object
    cycles: float
    warp_instructions: float
    flops_executed: float
    occupancy: object
    waves: float
    stalls: dict
    stats: dict
    bytes_by_level: dict
    blocks: dict             # sm, start, end of each simulated block (for timelines)
    issued_per_sm: np.ndarray
    trace: np.ndarray        # (cycle, sm, scheduler, block, warp, opcode) rows
    sampled: dict = field(default_factory=dict)


@dataclass
class SimtResult:
    hw: object
    policy: str
    mode: str
    launches: list
    cycles: float
    seconds: float
    warp_instructions: float
    sim_wall_seconds: float
    bytes_by_level: dict
    stalls_by_cause: dict
    flops_executed: float
    flops: int
    min_bytes: int
    dram_flush_bytes: float

    @property
    def ipc(self) -> float:
        return self.warp_instructions / self.cycles if self.cycles else 0.0

    @property
    def sampled(self) -> bool:
        return any(lr.sampled.get("extrapolated") for lr in self.launches)

    def hit_rates(self) -> dict:
        s = {k: sum(lr.stats[k] for lr in self.launches) for k in ("l1_hits", "l1_misses",
                                                                    "l2_hits", "l2_misses")}
        l1 = s["l1_hits"] + s["l1_misses"]
        l2 = s["l2_hits"] + s["l2_misses"]
        return {"l1": s["l1_hits"] / l1 if l1 else None, "l2": s["l2_hits"] / l2 if l2 else None}

    def to_dict(self) -> dict:
        lr0 = self.launches[-1]
        return {
            "kernel": self.launches[0].program.name,
            "launches": [{"name": lr.program.name, "label": lr.program.label,
                          "grid": list(lr.program.launch.grid), "block": list(lr.program.launch.block),
                          "cycles": lr.cycles, "warp_instructions": lr.warp_instructions,
                          "occupancy": lr.occupancy.to_dict(), "waves": lr.waves,
                          "regs_per_thread": lr.program.regs_per_thread,
                          "smem_per_block": lr.program.smem_per_block,
                          "resources_source": lr.program.resources_source,
                          "stalls_by_cause": lr.stalls, "bytes_by_level": lr.bytes_by_level,
                          "sampled": lr.sampled} for lr in self.launches],
            "hw": self.hw.name, "policy": self.policy, "mode": self.mode,
            "cycles": self.cycles, "seconds": self.seconds,
            "warp_instructions": self.warp_instructions, "ipc": self.ipc,
            "sim_wall_seconds": self.sim_wall_seconds,
            "occupancy": lr0.occupancy.occupancy, "blocks_per_sm": lr0.occupancy.blocks_per_sm,
            "limited_by": lr0.occupancy.limited_by, "waves": lr0.waves,
            "bytes_by_level": self.bytes_by_level, "stalls_by_cause": self.stalls_by_cause,
            "hit_rates": self.hit_rates(), "flops": self.flops,
            "flops_executed": self.flops_executed, "min_bytes": self.min_bytes,
            "sampled": self.sampled,
        }


def _state(hw):
    l2 = hw.l2
    sets = l2.size_bytes // (l2.sector_bytes * l2.ways)
    shape = (1, sets, l2.ways)
    return (np.full(shape, -1, np.int64), np.zeros(shape, np.int64),
            np.zeros(shape), np.zeros(shape, np.bool_),
            np.zeros(l2.banks), np.zeros(hw.dram.channels))


def _run(prog, h, lo, hi, t0, state, trace, skips, cap):
    return core.run(prog.kind, prog.params, prog.template, prog.pro_end, prog.body_end, prog.n_regs,
                    h, lo, hi, t0, *state, trace, skips, cap)


def _work(prog, h):
    """(each block's loop trips over its warps, the most trips of any warp)."""
    total, most = core.block_trips(prog.kind, prog.params, prog.launch.blocks, int(h[core.H_WPB]))
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
    blocks = 1.0 - float((skips[:, 1] - skips[:, 0]).sum()) / prog.launch.blocks
    caps = trip_caps(prog, trips)
    return blocks * (min(1.0, sum(caps) / trips) if caps else 1.0)


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


def _stats(st):
    return {"l1_hits": st[core.S_L1HIT], "l1_misses": st[core.S_L1MISS],
            "l2_hits": st[core.S_L2HIT], "l2_misses": st[core.S_L2MISS],
            "global_load_segments": st[core.S_GLD], "global_store_segments": st[core.S_GST],
            "shared_conflict_passes": st[core.S_CONFLICT], "sp_instructions": st[core.S_SP],
            "sfu_instructions": st[core.S_SFU], "ldst_instructions": st[core.S_LDST],
            "cycles_visited": st[core.S_CYCLES_VISITED], "scheduler_looks": st[core.S_LOOKS]}


def _bytes(st):
    return {"l1": st[core.S_L1B], "shared": st[core.S_SHB], "l2": st[core.S_L2RB] + st[core.S_L2WB],
            "dram": st[core.S_DRB] + st[core.S_DWB]}


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


def _launch(prog, h, C, t0, state, trace, work, cap):
    """One launch, its loop cut at ``cap`` trips (0: not cut), its blocks sampled by their
    ``work`` (None: all run): (cycles, stats, issued per SM, stalls, block sm, start, end,
    trace, sampled)."""
    B = prog.launch.blocks
    sampled = {"extrapolated": False, "simulated_blocks": B, "total_blocks": B}
    skips = _skips(work, C) if work is not None else np.zeros((0, 2), np.int64)
    st, issued, bsm, bstart, bend, stalls, tr = _run(prog, h, 0, B, t0, state, trace, skips, cap)
    cycles = st[core.S_END] - t0
    if not len(skips):
        return cycles, st, issued, stalls, bsm, bstart, bend, tr, sampled
    taus, err = [], 0.0
    for at, to in skips:
        # the run's own head (its first HEAD_WAVES waves, just before ``at``): the blocks
        # after a skip may do other work (a grid-stride loop's last blocks run a trip
        # fewer, or none) and stand for nothing skipped
        ends = np.sort(bend[at - HEAD_WAVES * C:at])
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
    weight = work + h[core.H_WPB]
    kept = np.ones(B, np.bool_)
    for at, to in skips:
        kept[at:to] = False
    scale = weight.sum() / weight[kept].sum()
    st, stalls, issued = st * scale, stalls * scale, issued * scale
    sampled = {"extrapolated": True, "simulated_blocks": int(kept.sum()),
               "total_blocks": B, "head_waves": HEAD_WAVES, "tail_waves": TAIL_WAVES,
               "skips": skips.tolist(), "tau_cycles": taus[0] if len(taus) == 1 else taus,
               "estimated_error": err}
    return cycles, st, issued, stalls, bsm, bstart, bend, tr, sampled


def simulate(hw, programs, policy: str = "gto", mode: str = "full", trace: int = 0,
             l2_warm: bool = False) -> SimtResult:
    """Run ``programs`` (one Program or a sequence run back to back) on ``hw``.

    ``trace`` keeps the first that many issued instructions (cycle, SM, scheduler, block,
    warp, opcode) for timeline plots. ``l2_warm`` (a launch repeated back to back on the
    same buffers) starts with the launches' arrays in the L2 when they fit, and otherwise
    with the L2 full as the previous launch left it (see ``_fill_previous``); without it
    the caches start empty. Deterministic: the same inputs give the same cycles."""
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
        caps = trip_caps(prog, trips) if mode == "sampled" else None
        if caps:
            # two runs with the loop cut at two multiples of its period, then the line
            # through them out to the warps' trips (each period past the first costs the same)
            lo, hi = caps
            first = _launch(prog, h, C, t0, _copy(state), trace, work, lo)
            r = _launch(prog, h, C, t0, state, trace, work, hi)
            f = (trips - lo) / (hi - lo)
            cycles = first[0] + (r[0] - first[0]) * f
            st, issued, stalls = (a + (b - a) * f for a, b in zip(first[1:4], r[1:4]))
            bsm, bstart, bend, tr, sampled = r[4:]
            sampled = {**sampled, "extrapolated": True, "trips": trips, "trip_caps": [lo, hi]}
        else:
            cycles, st, issued, stalls, bsm, bstart, bend, tr, sampled = _launch(
                prog, h, C, t0, state, trace, work, 0)
        launches.append(LaunchResult(
            prog, float(cycles), float(st[core.S_INSTR]), float(st[core.S_FLOPS]), occ, B / C,
            {c: float(v) for c, v in zip(core.CAUSES, stalls)}, _stats(st), _bytes(st),
            {"sm": bsm, "start": bstart, "end": bend}, issued, tr, sampled))
        t0 += cycles
    flush = float(state[3].sum() * hw.l2.sector_bytes)
    total = {k: sum(lr.bytes_by_level[k] for lr in launches) for k in launches[0].bytes_by_level}
    total["dram"] += flush
    stalls = {c: sum(lr.stalls[c] for lr in launches) for c in core.CAUSES}
    cycles = sum(lr.cycles for lr in launches)
    return SimtResult(
        hw, policy, mode, launches, cycles, cycles / hw.clock_hz,
        sum(lr.warp_instructions for lr in launches), time.perf_counter() - wall, total, stalls,
        sum(lr.flops_executed for lr in launches), sum(p.flops for p in programs),
        sum(p.min_bytes for p in programs),
        flush)

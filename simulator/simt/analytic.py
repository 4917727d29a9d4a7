"""The analytic fast path: occupancy x waves x per-wave time, in milliseconds.

From a few sampled warps (``walk.profile``: ``BODY_SAMPLES`` warps at a golden-ratio
sequence over the grid's warps -- every warp of a grid of at most ``WALK_ALL_WARPS`` --,
the last warp of the last block; at most ``MAX_ITERS`` loop iterations each, scaled to
the warp's trips, or whole periods of a loop nest) or, for a trace program (a
user's kernel, the any-kernel path), every recorded warp of up to
``TRACE_BODY_BLOCKS`` traced blocks (fewer where they hold more than
``TRACE_WALK_EVENTS`` events) and of the last (``walk.profile_trace``, scaled by
``block_work``), the model takes per block: instructions by unit, global-memory segments
and lines, shared-memory passes, and T1, one warp's time alone on an SM with every load
taking the average memory latency. A wave (``blocks_per_sm`` blocks on every SM) then
lasts the longest of:

* **latency**: T1 -- the warps of a wave run side by side (with barriers, plus the
  block's own issue time, which cannot hide behind its own warps' waits);
* **issue**: the busiest of the wave's units (the schedulers' issue slots; the SP, INT,
  FP64 pipes; the SFU; the LD/ST unit, where a global access holds it for its segments
  at the L1's bandwidth or its distinct lines at one tag a cycle, as the engine), or the
  latency where that is longer, times their **interference**: a scheduler's warps run
  together on the first ``scheduler.REC_ROWS`` instructions a walked warp issued
  (``scheduler.run``: the engine's issue rules without its memory system), over the
  larger of one warp's time alone and the busiest unit's; on the recording and on its
  first half, carried on linearly to the warp's length. A warp waits at a busy pipe while
  another idles, a block's warps leave each barrier together, GTO lets the oldest warps
  run ahead and the last run alone: none of it is in the busiest unit alone;
* **bandwidth**: the wave's share of DRAM and L2 bytes at peak bandwidth (a store's
  line write with a part-written sector holding its slice ``l2.partial_write_cycles``);
* **concurrency** (Little's law): the wave's missing bytes at the bandwidth that the
  outstanding requests allow, ``min(MSHRs, warps x segments in flight) x segment /
  latency``, a warp's segments in flight being its segments x the load latency over T1.

The average latency mixes L1, L2 and DRAM latency by hit rates estimated from the
samples: an L1 hit is a segment the sampled block touches again -- one still on its way
from an earlier miss when it is asked for (the walked warps' own clocks) waits out that
miss (``_pending_hits``); DRAM reads are the launch's compulsory bytes, the rest of the
L1 misses hit in L2 -- but the blocks of a wave run in step, so the SMs that share a
sector ask for it together and wait on its one DRAM read: in a launch of one wave every
L1 miss waits on DRAM where its data comes from there at all, in more a wave's share of
them. The last, partial wave
is priced the same way with its blocks. Each SM starts a block at most every
``block_launch_cycles``, which bounds a wave from below too. Every
assumption here is the engine's simplification simplified again: the engine is the
reference, and ``simulate simt`` reports both.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from simulator import arguments as arg
from simulator.result import Launch, Result

from . import isa, scheduler, traces, walk
from .core import program_arrays
from .engine import footprint_bytes, issue_utilization, launch_occupancy, launch_shape
from .hwvec import (
    H_GTO,
    H_ISSUE,
    H_L1LINEC,
    H_L1PLINEC,
    H_L2PART,
    H_L2SVC,
    H_LDSTII,
    atomic_figures,
    hw_vector,
)
from .memory import U_MAX, first_pass_cycles

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hwmodels.schema import SIMTGPU

MAX_ITERS = 32           # loops whose trips all cost alike (trip_period 1): a sample's
#                          walk (64 gave the same MAPE on every template suite, in twice the time)
TOUCHED_ITERS = 16       # ... and the reused block's warps' walk, for its hit rates
MAX_ITERS_NEST = 1 << 20  # loop nests (trip_period > 1) walk whole periods: a padded
#                           convolution's first taps are not its average
INNER_WALK = 8           # ... but a nest with an inner loop of alike trips (Program.inner_period,
#                           a padded NHWC convolution's channels) walks that many of each pass
SEGBUF = 1 << 20
BODY_SAMPLES = 4         # warps that stand for the grid's body
WEYL = (5 ** 0.5 - 1) / 2  # their positions: frac((i + 1/2) x this) of the grid's warps
WALK_ALL_WARPS = 64      # grids of at most this many warps are walked whole
TAIL_ALL_WARPS = 4       # grids of at most this many blocks sample every warp of the last
TRACE_BODY_BLOCKS = 8    # a trace's blocks whose every warp stands for its body ...
TRACE_WALK_EVENTS = 1 << 18  # ... fewer where theirs would be more events than this (a
#                          warp looping over a 4,096-long row: 50,000 events, 5 ms a walk)
RETIME_ROWS = 1 << 16    # a template sample's recording, for its time at another latency
#                          (``walk.retime``); a longer walk is walked again instead


@dataclass
class AnalyticLaunch:
    program: object
    cycles: float
    occupancy: object
    waves: float
    terms: dict            # per full wave: latency, issue, dram, l2, concurrency (cycles)
    limiter: str
    hit_rates: dict
    warp_instructions: float
    bytes_by_level: dict
    units: dict = None     # per full wave: each unit's busy cycles (issue_terms)


@dataclass
class AnalyticResult:
    """The analytic model's own record of a prediction (``Result.detail``)."""

    hw: object
    launches: list          # AnalyticLaunch per program
    cycles: float
    seconds: float
    wall_seconds: float


_NO_RECORDING = np.zeros((1, len(scheduler.REC_COLUMNS)), np.int64)


def _profile(prog, code, h, b, w, lat_mem, segbuf, rec=_NO_RECORDING, iters=None):
    bx, by, bz = b % prog.launch.grid[0], (b // prog.launch.grid[0]) % prog.launch.grid[1], \
        b // (prog.launch.grid[0] * prog.launch.grid[1])
    return walk.profile(code, bx, by, bz, w, h, float(lat_mem),
                        _walk_trips(prog, iters or MAX_ITERS), segbuf, *_inner_walk(prog), rec)


def _walk_trips(prog, iters) -> int:
    """Body iterations a warp's walk covers before scaling: MAX_ITERS, rounded up to a
    whole number of the nest's periods (a padded NCHW convolution's R S taps: each
    channel skips the same ones), at most MAX_ITERS_NEST."""
    per = max(1, int(prog.trip_period))
    return min(MAX_ITERS_NEST, per * -(-iters // per))


def _inner_walk(prog):
    """(trips kept of each inner pass, the inner loop's trips) for ``walk.profile``, or
    (0, 0): a nest whose inner loop is long enough is walked cut, tap by tap."""
    per = int(getattr(prog, "inner_period", 0) or 0)
    return (INNER_WALK, per) if prog.trip_period > 1 and per >= 2 * INNER_WALK else (0, 0)


def _reuse(touched):
    """The accesses in ``touched`` -- rows of a global load segment and the cycle its
    warp, walked alone from cycle 0, asked for it -- in order of segment, then cycle:
    (each one's cycle, whether it is its segment's first, the cycle of that first)."""
    order = np.lexsort((touched[:, 1], touched[:, 0]))
    segs, when = touched[order, 0], touched[order, 1].astype(float)
    start = np.ones(len(segs), bool)
    start[1:] = segs[1:] != segs[:-1]
    first = when[np.maximum.accumulate(np.where(start, np.arange(len(segs)), 0))]
    return when, start, first


def _pending_hits(reuse, miss: float):
    """(the share of the accesses (``_reuse``) that hit a segment an earlier access
    missed and whose data is still on its way, ``miss`` cycles after that miss; their
    average wait for it). The L1 holds such a segment's line already but not its data:
    the warps of a block asking for one line in one iteration (a GEMM's row broadcast to
    its block) all wait the first one's miss."""
    when, start, first = reuse
    if not len(when):
        return 0.0, 0.0
    left = first + miss - when
    pending = ~start & (left > 0)
    n = int(pending.sum())
    return n / len(when), float(left[pending].mean()) if n else 0.0


def _segbuf():
    """A buffer for the global load segments a walk touches (row 0 counts the rows
    written after it)."""
    segbuf = np.empty(SEGBUF, np.int64)
    segbuf[0] = 0
    return segbuf


class _Samples:
    """The sampled warps' profiles at one load latency (``samples``), and at another
    (``retimed``): their counts are the same, and their recordings give their times
    (``walk.retime``) without walking them again, but for a walk longer than its
    recording, walked again."""

    def retimed(self, lat):
        h = self.h
        out = []
        for x, rec, k in zip(self.raw, self.recs, self.keys):
            if rec[0, 0] >= rec.shape[0] - 1:          # (full: it may have been cut)
                out.append(self.walk_one(k, lat, rec[:1].copy()))
                continue
            y = x.copy()
            y[walk.P_T1] = walk.retime(rec, self.n_regs, h, float(lat), float(x[walk.P_SCALE]))
            out.append(y)
        return self.scaled(out)

    def recording(self):
        """The first ``scheduler.REC_ROWS`` instructions of the middle body sample's
        warp (``scheduler.run``'s recording)."""
        i = self.middle
        rec = self.recs[i][:scheduler.REC_ROWS + 1].copy()
        rec[0, 0] = min(rec[0, 0], scheduler.REC_ROWS)
        return rec

    def samples(self, lat):
        self.raw, self.recs = [], []
        for k in self.keys:
            rec = scheduler.recording(self.rows(k))
            self.raw.append(self.walk_one(k, lat, rec))
            self.recs.append(rec)
        return self.scaled(self.raw)


class _TemplateWalk(_Samples):
    """A template program's warps for the model: one middle block's warps for the L1's
    reuse; ``BODY_SAMPLES`` warps spread over the grid's warps (every warp of a grid of
    at most ``WALK_ALL_WARPS``) for its body; the last block's last warp -- every warp of
    it in a short grid, where a partly filled block's last warps may have nothing to do
    -- for itself."""

    def __init__(self, prog, h, wpb):
        self.prog, self.h, self.wpb = prog, h, wpb
        self.code = program_arrays(prog)
        self.n_regs = int(self.code.n_regs)
        B = prog.launch.blocks
        # warps at the points of a golden-ratio (Weyl) sequence over the grid's warps: an
        # evenly spaced pick aliases with a grid's period (a convolution's output planes:
        # every one of four evenly spaced blocks of ResNet-50's conv1 at batch 8 is a
        # plane's first, its warp 0 on the padded top rows, 45% of the taps short)
        n = B * wpb
        if n <= WALK_ALL_WARPS:          # a small grid: its every warp but the last block's
            self.body = [divmod(k, wpb) for k in range(max(B - 1, 1) * wpb)]
        else:
            self.body = sorted({divmod(int(((i + 0.5) * WEYL) % 1.0 * n), wpb)
                                for i in range(BODY_SAMPLES)})
        self.tail = [(B - 1, w) for w in range(wpb)] if B <= TAIL_ALL_WARPS else [(B - 1, wpb - 1)]
        self.keys = self.body + self.tail
        self.middle = len(self.body) // 2
        self.has_barrier = bool((prog.template[:, 0] == isa.BAR).any())

    def touched(self, lat):
        segbuf = _segbuf()
        for w in range(self.wpb):
            _profile(self.prog, self.code, self.h, self.prog.launch.blocks // 2, w, lat, segbuf,
                     _NO_RECORDING, TOUCHED_ITERS)
        return segbuf[1:segbuf[0] + 1].reshape(-1, 2)

    def rows(self, key):
        return RETIME_ROWS

    def walk_one(self, key, lat, rec):
        return _profile(self.prog, self.code, self.h, *key, lat, np.zeros(2, np.int64), rec)

    def scaled(self, prof):
        nb = len(self.body)
        return prof[:nb], prof[nb:]


class _TraceWalk(_Samples):
    """A trace program's recorded warps for the model (the any-kernel path): every warp
    of up to ``TRACE_BODY_BLOCKS`` of the blocks it traced, spread over them, a middle
    one's for the L1's reuse; their average warp scaled by the work of all blocks but the
    last over theirs (``block_work``); the last block's warps for it (the last traced
    block's, scaled, where it was not traced)."""

    def __init__(self, prog, h, wpb):
        self.prog, self.h, self.wpb = prog, h, wpb
        blocks, B = prog.blocks, prog.launch.blocks
        if not len(blocks):
            raise ValueError(f"{prog.name}: the trace holds no block; the analytic model "
                             "reads the warps it recorded")
        last = len(blocks) - 1 if blocks[-1] == B - 1 else None
        pos = [int(p) for p in range(len(blocks)) if p != last] or [len(blocks) - 1]
        # at most TRACE_BODY_BLOCKS of them, spread evenly (a sampled run traces
        # hundreds), and as many as TRACE_WALK_EVENTS events hold, one at least
        events = (prog.warp_begin[-1] - prog.warp_begin[0]) / len(blocks)
        n = max(1, min(TRACE_BODY_BLOCKS, int(TRACE_WALK_EVENTS // max(events, 1.0))))
        pick = sorted({pos[(2 * i + 1) * len(pos) // (2 * n)] for i in range(n)}) \
            if len(pos) > n else pos
        self.body = pick
        self.tail = [last if last is not None else pos[-1]]
        # the body's warps stand for blocks 0 to B - 2, the tail's for block B - 1 (each
        # scaled by the work of what it stands for over its own)
        work = prog.block_work
        traced = float(work[blocks[self.body]].mean())
        rest = float(work[:-1].mean()) if B > 1 else float(work[-1])
        self.scale = rest / traced if traced > 0 else 1.0
        own = float(work[blocks[self.tail[0]]])
        self.tail_scale = float(work[-1]) / own if own > 0 else 1.0
        if len(prog.skipped_events):
            # a loop's skipped trips are not walked: its walked events stand for them too
            ev = np.diff(prog.warp_begin[::wpb]).astype(np.float64)
            sk = prog.skipped_events

            def grown(ps):
                walked = float(ev[ps].sum())
                return (walked + float(sk[ps].sum())) / walked if walked > 0 else 1.0
            self.scale *= grown(self.body)
            self.tail_scale *= grown(self.tail)
        self.has_barrier = bool((prog.rows[:, 0] == isa.BAR).any())
        self.n_regs = int(prog.n_regs)
        self.keys = [q * wpb + w for q in self.body + self.tail for w in range(wpb)]
        self.middle = len(self.body) // 2 * wpb

    def rows(self, k):
        # every event of the warp (one recorded row each at most), and a row to spare:
        # a full recording is one that may have been cut
        return int(self.prog.warp_begin[k + 1] - self.prog.warp_begin[k]) + 1

    def walk_one(self, k, lat, rec, segbuf=None):
        h, p = self.h, self.prog
        return walk.profile_trace(
            p.rows, p.addresses, int(p.warp_begin[k]), int(p.warp_begin[k + 1]),
            int(p.n_regs), h, float(lat), np.zeros(2, np.int64) if segbuf is None else segbuf,
            rec)

    def touched(self, lat):
        segbuf = _segbuf()
        q = self.body[len(self.body) // 2]
        for w in range(self.wpb):
            self.walk_one(q * self.wpb + w, lat, _NO_RECORDING, segbuf)
        return segbuf[1:segbuf[0] + 1].reshape(-1, 2)

    def scaled(self, prof):
        nb = len(self.body) * self.wpb
        return [x * self.scale for x in prof[:nb]], [x * self.tail_scale for x in prof[nb:]]


def issue_terms(h: np.ndarray, hw: SIMTGPU, warps: float, prof_w: np.ndarray) -> dict:
    """Each unit's busy cycles for ``warps`` warps of profile ``prof_w`` on an SM: the
    issue slots, the pipes (each scheduler's own: the cycles the walk counted by
    ``pipes``' table, over the schedulers; the SFU the SM's), the SM's rate for
    part-written lines, and the LD/ST unit."""
    P = walk
    ns = hw.sm.warp_schedulers
    l1 = hw.sm.l1
    seg = l1.sector_bytes
    return {
        "slot": warps * prof_w[P.P_INSTR] * h[H_ISSUE] / ns,
        "fp64": warps * prof_w[P.P_FP64_CYC] / ns,
        "fp32": warps * prof_w[P.P_FP32_CYC] / ns,
        "int": warps * prof_w[P.P_INT_CYC] / ns,
        "sfu": warps * prof_w[P.P_SFU_CYC],
        # an SM sends the L2 a store's part-written lines at their own rate
        "partial": warps * prof_w[P.P_GST_PART] * h[H_L1PLINEC],
        "ldst": warps * (max((prof_w[P.P_GLD] + prof_w[P.P_GST] + prof_w[P.P_ATOM]) * h[H_LDSTII]
                             + (prof_w[P.P_GLD_SEG] + prof_w[P.P_GST_SEG] + prof_w[P.P_ATOM_SEG])
                             * seg
                             / l1.bandwidth_bytes_per_cycle,
                             # the L1's tags, one line a cycle (the engine's hold)
                             prof_w[P.P_GLINES] * h[H_L1LINEC])
                         + prof_w[P.P_SH_PASS] * h[H_LDSTII])}


class _Interference:
    """The interference of a scheduler's n warps on one another: ``scheduler.run`` of
    them started together on the recorded warp ``rec``, over the larger of one warp
    alone and the busiest unit's n x demand; run on the whole recording and on its first
    half, and carried on linearly to the warp's length: a fill and drain that does not
    grow with it (a short grid-stride loop's warps all waiting on their first loads) and
    one that does (GTO letting the oldest warps run ahead, the last ones alone at the
    end)."""

    def __init__(self, hw, h, rec, n_regs, per_block, lat_mix):
        self.h, self.rec, self.n_regs, self.per_block = h, rec, n_regs, per_block
        self.lat_mix = lat_mix
        self.gto = int(h[H_GTO] > 0)
        self.ns = float(hw.sm.warp_schedulers)
        l1 = hw.sm.l1
        self.access = (l1.sector_bytes / l1.bandwidth_bytes_per_cycle, float(h[H_L1LINEC]))
        self.factors, self.one_warp = {}, {}

    def warp_alone(self, rows):
        """(one warp's time alone on the SM, the busiest unit's time for one warp on a
        scheduler) over the recording's first ``rows``: the same for every n."""
        if rows not in self.one_warp:
            self.one_warp[rows] = (
                scheduler.run(self.rec, 1, 1, self.n_regs, self.gto, 1.0, self.h, *self.access,
                              self.lat_mix, rows),
                scheduler.demand(self.rec, self.ns, self.h, *self.access, rows))
        return self.one_warp[rows]

    def cost(self, n, rows):
        one, busiest = self.warp_alone(rows)
        return (scheduler.run(self.rec, n, self.per_block, self.n_regs, self.gto, self.ns,
                              self.h, *self.access, self.lat_mix, rows),
                max(one, n * busiest))

    def __call__(self, n, length):
        n = max(int(round(n)), 1)
        if n not in self.factors:
            k = int(self.rec[0, 0])
            half = max(k // 2, 1)
            (t_k, b_k), (t_h, b_h) = self.cost(n, k), self.cost(n, half)
            self.factors[n] = (k, t_k, b_k, max(t_k - t_h, 0.0) / max(k - half, 1),
                               max(b_k - b_h, 0.0) / max(k - half, 1))
        k, t_k, b_k, dt, db = self.factors[n]
        extra = max(length - k, 0.0)
        bound = b_k + db * extra
        return max((t_k + dt * extra) / bound, 1.0) if bound > 0 else 1.0


@dataclass
class _Memory:
    """What a launch's loads find (``_memory``): the L1's and L2's hit rates, the share
    of L1 misses that wait on DRAM, the loads' mixed latency, and the bytes each level
    moves."""
    h1: float
    h2: float
    from_dram: float
    lat: float
    l1_miss_bytes: float
    gld_bytes: float
    dram_total: float
    l2_total: float
    partial_t: float


def _memory(hw, h, prog, occ, walker, launch_sum, in_l2) -> _Memory:
    """Hit rates from a middle block's warps (segments reused within a block hit the L1;
    a middle block, since edge blocks of a padded convolution skip their first taps), the
    L2's from the launch's compulsory bytes, and the loads' latency: L1 hits, the L2's,
    DRAM's for the share of misses that wait on it, and a hit on a segment still on its
    way waiting out the miss."""
    P = walk
    l1, l2 = hw.sm.l1, hw.l2
    B = prog.launch.blocks
    seg = l1.sector_bytes
    touched = walker.touched(l2.latency_cycles)
    reuse = _reuse(touched)
    h1 = 1.0 - reuse[1].sum() / len(touched) if len(touched) else 0.0
    gld_seg_total = launch_sum(P.P_GLD_SEG)
    l1_miss_bytes = (1 - h1) * gld_seg_total * seg
    dram_read = 0.0 if in_l2 else min(l1_miss_bytes, float(prog.min_bytes))
    h2 = 1.0 - dram_read / l1_miss_bytes if l1_miss_bytes else 1.0
    # the share of L1 misses that wait on DRAM: the misses to DRAM, and the L2 hits on a
    # sector another SM's miss is still fetching -- the blocks of a wave run in step, so
    # the blocks that share a sector ask for it together: in a launch of one wave, every
    # L1 miss whose sector comes from DRAM at all (a wave's share of them in more)
    from_dram = 1 - h2
    if h2 < 1:
        from_dram = min(1.0, max(1 - h2, 1 / max(B / (occ.blocks_per_sm * hw.sm_count), 1.0)))
    miss = (1 - from_dram) * l2.latency_cycles + from_dram * hw.dram.latency_cycles
    # and L1 hits on a segment still on its way wait for it
    pend, wait = _pending_hits(reuse, miss)
    lat = (h1 - pend) * l1.latency_cycles + pend * max(wait, l1.latency_cycles) + (1 - h1) * miss
    store_bytes = launch_sum(P.P_GST_SEG) * seg
    dram_total = dram_read + (0.0 if in_l2 else min(store_bytes, float(prog.min_bytes)))
    # a store's write to a line with a part-written sector holds its slice at least
    # l2.partial_write_cycles, not its sectors' service (the engine's
    # ``_line_write_service``): the excess, over the slices
    partial_t = max(h[H_L2PART] * launch_sum(P.P_GST_PART)
                    - h[H_L2SVC] * launch_sum(P.P_GST_PSEG) * seg / l2.sector_bytes,
                    0.0) / l2.banks
    # an atomic reads and writes its sectors at the L2
    atomic_bytes = 2 * launch_sum(P.P_ATOM_SEG) * seg
    return _Memory(h1, h2, from_dram, lat, l1_miss_bytes, gld_seg_total * seg, dram_total,
                   l1_miss_bytes + store_bytes + atomic_bytes, partial_t)


def _wave(hw, h, mem: _Memory, interference, has_barrier, wpb, B, blocks_per_sm, prof_w,
          slope, blocks_in_wave, atomics):
    """(cycles, terms, units) of a wave of ``blocks_in_wave`` blocks, ``blocks_per_sm``
    an SM, each warp as profile ``prof_w`` (``slope``: its time's growth with the load
    latency): the longest of its latency, its issue (the busiest unit or the latency, times
    the interference of a scheduler's warps), its block launches, DRAM's and the L2's
    bytes, its share of the launch's busiest atomic unit's cycles (``atomics``:
    ``atomic_unit_cycles``) and Little's law on the misses in flight; DRAM's utilisation a
    fixed point."""
    P = walk
    sm, l1 = hw.sm, hw.sm.l1
    ns, seg = sm.warp_schedulers, l1.sector_bytes
    warps = blocks_per_sm * wpb
    frac = blocks_in_wave / B
    miss_bytes = mem.l1_miss_bytes * frac    # loads wait for their data; stores do not
    to_dram = (1 - mem.h1) * mem.from_dram   # the share of loads that wait on DRAM
    # a warp's segments in flight on average (Little's law over its time alone: each
    # for a load's latency), not per wait on a load -- a grid-stride loop waits on
    # most loads, but the walk counts every wait, short ones too
    per_warp_inflight = (prof_w[P.P_GLD_SEG] * mem.lat / prof_w[P.P_T1] if prof_w[P.P_T1] > 0
                         else prof_w[P.P_GLD_SEG])
    inflight = min(float(l1.mshrs), warps * max(per_warp_inflight, 1.0)) * hw.sm_count
    units = issue_terms(h, hw, warps, prof_w)
    dram_t = mem.dram_total * frac / (hw.dram.bandwidth_bytes_per_s
                                      * hw.dram.sustained_fraction / hw.clock_hz)
    # a block's warps wait for each other at every barrier, so its own issue time
    # adds to the warp's latency instead of hiding behind it
    own_issue = max(issue_terms(h, hw, wpb, prof_w).values()) if has_barrier else 0.0
    fixed = {"launch": float(blocks_per_sm * sm.block_launch_cycles),
             "dram": float(dram_t),
             "l2": float((mem.l2_total / hw.l2.bandwidth_bytes_per_cycle + mem.partial_t) * frac),
             "atomics": float(atomics * frac)}

    def at(u):
        # a load's latency at DRAM utilisation u (memory.dram_wait: loaded latency)
        extra = to_dram * hw.dram.queue_cycles * u / (1 - u)
        latency = prof_w[P.P_T1] + slope * extra + own_issue
        # Little's law: the misses' bytes over what the in-flight requests deliver a
        # cycle; written without dividing by the latency, which may be 0 (a preset's
        # latencies set to 0 cost nothing here, not a division by zero)
        conc = miss_bytes * (mem.lat + extra) / (inflight * seg) if miss_bytes else 0.0
        issue = interference(warps / ns, prof_w[P.P_INSTR]) * max(max(units.values()), latency)
        terms = {"latency": float(latency), "issue": float(issue), **fixed,
                 "concurrency": float(conc)}
        return max(terms.values()), terms

    t, terms = at(0.0)
    if hw.dram.queue_cycles > 0 and dram_t > 0 and to_dram > 0:
        # the utilisation the wave's own time implies, dram_t / t, is the one it ran
        # at: a fixed point, found by bisection (t grows with u)
        lo, hi = 0.0, U_MAX
        for _ in range(40):
            u = 0.5 * (lo + hi)
            t, terms = at(u)
            lo, hi = (u, hi) if dram_t / t > u else (lo, u)
        t, terms = at(lo)
    return t, terms, units


def predict_launch(hw: SIMTGPU, prog: isa.Program | traces.TraceProgram, policy: str = "gto",
                   in_l2: bool = False) -> AnalyticLaunch:
    """One launch's analytic figures; ``in_l2``: its arrays start in the L2 (no DRAM
    traffic). Its warps are walked (``walk``) at the L2's latency for their counts and
    hit rates (``_memory``), their times replayed at the mixed latency the hit rates
    give, and its full waves and the last priced (``_wave``)."""
    P = walk
    occ = launch_occupancy(hw, prog)
    h = hw_vector(hw, occ, policy, prog.smem_per_block)
    sm, l2 = hw.sm, hw.l2
    B = prog.launch.blocks
    wpb = occ.warps_per_sm // occ.blocks_per_sm
    walker = (_TraceWalk if traces.is_trace(prog) else _TemplateWalk)(prog, h, wpb)
    body0, tail0 = walker.samples(l2.latency_cycles)
    prof0 = body0 + tail0
    nb = len(body0)
    per_warp = np.mean(prof0[:nb], axis=0)
    last = np.mean(prof0[nb:], axis=0)

    def launch_sum(k):
        # a profile field over the launch: the body's warp for all blocks but the last
        # (``per_warp`` and ``last`` as they stand when it is called)
        return per_warp[k] * wpb * max(B - 1, 0) + last[k] * wpb
    mem = _memory(hw, h, prog, occ, walker, launch_sum, in_l2)
    lat = mem.lat
    # the same samples' times at the mixed latency (replayed from their recordings)
    body, tail = walker.retimed(lat)
    prof = body + tail
    per_warp = np.mean(prof[:nb], axis=0)
    last = np.mean(prof[nb:], axis=0)
    slow = int(np.argmax([x[P.P_T1] for x in prof[nb:]]))
    last[P.P_T1] = prof[nb + slow][P.P_T1]       # the block lasts as long as its slowest warp
    # T1 grows with the load latency about linearly (its chain of dependent loads): its
    # slope between the two latencies prices the DRAM's loaded latency below
    dl = lat - l2.latency_cycles
    t1_slope = (np.mean([x[P.P_T1] - x0[P.P_T1] for x, x0 in zip(prof[:nb], prof0[:nb])]) / dl,
                (prof[nb + slow][P.P_T1] - prof0[nb + slow][P.P_T1]) / dl) if dl > 1e-9 else (0.0, 0.0)
    R = occ.blocks_per_sm
    ns = sm.warp_schedulers
    per_block = max(1, round(wpb / ns)) if walker.has_barrier else 1
    interference = _Interference(hw, h, walker.recording(), int(walker.n_regs), per_block, lat)
    atomics = atomic_unit_cycles(hw, prog)

    def wave(blocks_per_sm, prof_w, slope, blocks_in_wave):
        return _wave(hw, h, mem, interference, walker.has_barrier, wpb, B, blocks_per_sm,
                     prof_w, slope, blocks_in_wave, atomics)
    C = R * hw.sm_count
    full, rest = divmod(B, C)
    t_full, terms, units = wave(R, per_warp, t1_slope[0], C) if full else (0.0, None, None)
    cycles = full * t_full
    if rest:
        alone = full == 0 and B == 1
        t_tail, tail_terms, tail_units = wave(math.ceil(rest / hw.sm_count),
                                              last if alone else (per_warp + last) / 2,
                                              t1_slope[1] if alone else sum(t1_slope) / 2, rest)
        cycles += t_tail
        terms, units = terms or tail_terms, units or tail_units
    cycles += sm.block_launch_cycles              # the first block's dispatch
    instr = launch_sum(P.P_INSTR)
    return AnalyticLaunch(prog, float(cycles), occ, B / C, terms, max(terms, key=terms.get),
                          {"l1": float(mem.h1), "l2": float(mem.h2)}, float(instr),
                          {"l1": float(mem.gld_bytes), "l2": float(mem.l2_total),
                           "dram": float(mem.dram_total)},
                          {k: float(v) for k, v in units.items()})


def atomic_unit_cycles(hw: SIMTGPU, prog: isa.Program | traces.TraceProgram) -> float:
    """The cycles the busiest L2 line's atomic unit works through the launch's global
    atomics (a template program has none: 0): each warp request holds each line it hits
    ``memory.atomic_service`` cycles (its first pass over its lanes there, a lane's time
    for each further lane on its busiest word), one request at a time. A line that
    requests from more than one traced block reach is the launch's: its sum is scaled
    from the traced blocks' work to the launch's; a line one block alone reaches is that
    block's. A launch that piles its atomics onto a few words takes at least this long
    however its SMs run (the engine serves them so: ``memory.l2_atomic``)."""
    if not traces.is_trace(prog):
        return 0.0
    rows = prog.rows
    ev = np.flatnonzero((rows[:, 0] >= isa.ATOM) & (rows[:, 0] <= isa.RED))
    if not len(ev):
        return 0.0
    l2 = hw.l2
    _, add, cas, one, _ = atomic_figures(hw)
    a = prog.addresses[rows[ev, 5], :32]
    r, lane = np.nonzero(a >= 0)
    if not len(r):
        return 0.0
    words, lanes = np.unique(np.stack([r, a[r, lane]]), axis=1, return_counts=True)
    req_lines, inv = np.unique(np.stack([words[0], words[1] // l2.line_bytes]), axis=1,
                               return_inverse=True)
    inv = inv.ravel()
    most = np.zeros(req_lines.shape[1], np.int64)
    np.maximum.at(most, inv, lanes)
    total = np.bincount(inv, weights=lanes, minlength=req_lines.shape[1])
    full = np.where(rows[ev[req_lines[0]], 0] == isa.ACAS, cas, add)
    busy = first_pass_cycles(full, one, total) + one * (most - 1)
    _, line_of = np.unique(req_lines[1], return_inverse=True)
    line_of = line_of.ravel()
    per_line = np.bincount(line_of, weights=busy)
    # the blocks that reach each line
    block = (np.searchsorted(prog.warp_begin, ev, side="right") - 1) // prog.warps_per_block
    pairs = np.unique(np.stack([line_of, block[req_lines[0]]]), axis=1)
    reached = np.bincount(pairs[0], minlength=len(per_line))
    work = prog.block_work
    traced = float(work[prog.blocks].sum())
    scale = float(work.sum()) / traced if traced > 0 else 1.0
    return float(np.where(reached > 1, per_line * scale, per_line).max())


def predict(hw: SIMTGPU,
            programs: isa.Program | traces.TraceProgram | Sequence[isa.Program | traces.TraceProgram],
            policy: str = "gto", l2: str = "cold") -> Result:
    """Analytic cycles of one launch or of launches run back to back, as a
    ``simulator.result.Result`` (predictor and mode "analytic"). ``l2``
    (``arguments.L2_STATES``): warm, the launches' arrays start in the L2 when they fit
    (no DRAM traffic), as in the engine; cold and flushed alike read them from DRAM.

    ``cycles`` and ``instructions`` (warp instructions) and ``bytes_by_level`` (l1, l2,
    dram) are summed over the launches; ``limiter`` is the last launch's limiting term;
    ``utilization`` the share of scheduler issue slots used, as the engine's; each
    ``Launch`` carries its ``limiter``, ``terms`` (cycles per full wave) and
    ``hit_rates``. Nothing is simulated: ``simulated_fraction`` and ``estimated_error``
    are None. ``extra``: ``policy``. ``detail`` is the :class:`AnalyticResult`."""
    wall = time.perf_counter()
    if not isinstance(programs, (list, tuple)):
        programs = (programs,)
    warm = arg.l2_state(l2) == "warm" and footprint_bytes(programs) <= hw.l2.size_bytes
    launches = [predict_launch(hw, p, policy, warm) for p in programs]
    cycles = sum(a.cycles for a in launches)
    detail = AnalyticResult(hw, launches, cycles, cycles / hw.clock_hz, time.perf_counter() - wall)
    instructions = sum(a.warp_instructions for a in launches)
    return Result(
        predictor="analytic", mode="analytic", hardware=hw.name, workload=programs[0].name,
        seconds=detail.seconds, flops=sum(p.flops for p in programs),
        compulsory_bytes=sum(p.min_bytes for p in programs), cycles=cycles,
        bytes_by_level={k: sum(a.bytes_by_level[k] for a in launches)
                        for k in launches[0].bytes_by_level},
        instructions=instructions, instruction_unit="warp",
        utilization=issue_utilization(hw, instructions, cycles), limiter=launches[-1].limiter,
        simulated_fraction=None, estimated_error=None, wall_seconds=detail.wall_seconds,
        launches=[_record(a) for a in launches], extra={"policy": policy}, detail=detail)


def _record(a: AnalyticLaunch) -> Launch:
    return Launch(**launch_shape(a.program, a.occupancy, a.waves), cycles=a.cycles,
                  instructions=a.warp_instructions, bytes_by_level=a.bytes_by_level,
                  limiter=a.limiter, terms=a.terms, hit_rates=a.hit_rates)

"""Trace programs: every warp brings its own recorded instruction stream.

A template program (``isa.Program``) is one instruction template whose per-warp lane
addresses a kernel module's numba functions compute; a :class:`TraceProgram` is what a
front end recorded from a compiled kernel instead: for each traced warp the events it
executed, in order. The SIMT core executes both alike (``core.settle`` reads a trace's
events in place of the template's rows; ``traces.settle_trace``), with the same timing
model, so the same instruction stream gives the same cycles whichever way it arrives.

The format:

* ``rows`` (n_events, 6) int64: opcode (``isa``'s: ALU, FFMA, ..., LDG, STG, LDS, STS,
  BAR, ..., the global atomics ATOM, ACAS, RED), dst, src0, src1, src2 (registers below
  ``n_regs``; ``isa.NO_REG`` = -1: none), lanes. ``lanes >= 0``: a memory instruction, its
  row of ``addresses``; ``lanes < 0``: a non-memory instruction, ``~lanes`` its 32-bit
  active-lane mask. An event with no active lane is skipped (branched around), as a
  template's is;
* ``addresses`` (m, 33) int64: 32 lane byte addresses (-1: lane inactive), then the
  access width in bytes (1, 2, 4, 8 or 16). A global access of width w covers each lane's
  [a, a + w) segments; a shared one each lane's w / 4 consecutive bank words (a
  conflict-free 128-bit load of 32 lanes is 4 passes);
* ``warp_begin`` (len(blocks) x warps per block + 1) int64: warp w of the block at
  position p of ``blocks`` executes ``rows[warp_begin[p * wpb + w]:warp_begin[p * wpb + w + 1]]``
  (a warp with no events never starts, as a template warp with nothing to run);
* ``blocks`` the ascending linear block ids traced; ``block_work`` every block's work
  (its warps' events; an estimate for the blocks not traced), from which the engine's
  sampler plans: ``engine.trace_plan_blocks`` names the blocks a sampled run simulates,
  for a front end to trace just those;
* ``sites`` (optional) int64 per event: the source instruction it came from (a front
  end's SASS instruction index), each below ``n_sites``: the engine accounts its issues,
  stalls and bytes per site (``engine.LaunchResult.sites``). Empty (the default, with
  ``n_sites`` 0): no per-site accounting. Slicing a trace (``keep_blocks``, a loop cut's
  trace in ``cuts``) keeps each event's site.

``walk.from_template`` expands a template program into the trace of every warp of every
block (the oracle: the two must simulate to the same cycles).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from simulator.arguments import show

from . import (
    _stamp,  # noqa: F401  (numba caches stamped together)
    isa,
)

TRACE = -1          # ``core.ProgramArrays.kind`` of a trace program
# a trace's ``core.ProgramArrays.params``: the launch's grid and block, then where its
# warps' first events, the events after their last and its lane addresses (33 a row) start
P_START, P_END, P_ADDR = 6, 7, 8
WIDTHS = (1, 2, 4, 8, 16)
MEMORY_OPS = (*isa.GLOBAL_OPS, isa.LDS, isa.STS)


@dataclass(frozen=True, eq=False, kw_only=True)
class TraceProgram(isa.NamedParams):
    """One kernel launch as recorded warp traces (see the module's docstring)."""

    name: str
    launch: object            # Launch (``kernels.launch``)
    params: np.ndarray        # int64: grid x, y, z, block x, y, z (``isa.params(launch)``)
    param_names: tuple
    rows: np.ndarray          # (n_events, 6) int64: op, dst, src0, src1, src2, lanes
    addresses: np.ndarray     # (m, 33) int64: 32 lane addresses (-1 inactive), access width
    warp_begin: np.ndarray    # (len(blocks) x warps per block + 1,) int64 event offsets
    blocks: np.ndarray        # int64 linear block ids traced, ascending
    block_work: np.ndarray    # (launch.blocks,) float: each block's events (estimates where untraced)
    n_regs: int
    arrays: tuple             # (name, base byte address, elements of 4 bytes)
    loads: tuple              # names of the arrays it loads from (global)
    stores: tuple             # names of the arrays it stores to
    regs_per_thread: int
    smem_per_block: int
    resources_source: str
    flops: int
    min_bytes: int
    label: str = ""
    notes: tuple = field(default=())
    # loop cuts (trip extrapolation, as a template's ``trip_caps``): the most trips of a
    # warp's loop, and per cut (cap, the TraceProgram of the same blocks with each warp's
    # loop issued for its first ``cap`` trips only, its block_work the cut events)
    trips: int = 0
    trip_period: int = 1
    cuts: tuple = field(default=())
    # per event: the index of the source instruction it came from (0 <= site < n_sites);
    # empty: no per-site accounting (see the module's docstring)
    sites: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    n_sites: int = 0
    # per traced block (position in ``blocks``): the events its warps did not record, the
    # middle trips of a long loop a front end skipped (its ``block_work`` counts them;
    # the engine's loop cuts stand for them); empty: none skipped
    skipped_events: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self):
        def fix(name, dtype, shape=None):
            # as a Program's template: contiguous, of its dtype, frozen (not copied)
            a = np.ascontiguousarray(getattr(self, name), dtype)
            if shape is not None and a.size == 0:
                a = a.reshape(shape)
            a.setflags(write=False)
            object.__setattr__(self, name, a)
            return a
        params = fix("params", np.int64)
        rows = fix("rows", np.int64, (0, 6))
        addresses = fix("addresses", np.int64, (0, 33))
        begin = fix("warp_begin", np.int64)
        blocks = fix("blocks", np.int64)
        work = fix("block_work", np.float64)
        sites = fix("sites", np.int64)
        skipped = fix("skipped_events", np.float64)
        if len(skipped) and (len(skipped) != len(blocks) or (skipped < 0).any()):
            raise ValueError(f"{self.name}: skipped_events must be one count >= 0 per traced "
                             f"block ({len(blocks)}); got {len(skipped)}")
        if params.ndim != 1 or rows.ndim != 2 or addresses.ndim != 2 or begin.ndim != 1 \
                or blocks.ndim != 1 or work.ndim != 1:
            raise ValueError(f"{self.name}: params, warp_begin, blocks and block_work are "
                             "vectors, rows and addresses tables")
        B, wpb = self.launch.blocks, self.warps_per_block
        if self.param_names and len(self.param_names) != len(params):
            raise ValueError(f"{self.name}: {len(self.param_names)} parameter names for "
                             f"{len(params)} parameters")
        if len(params) < 6 or tuple(params[:6]) != (*self.launch.grid, *self.launch.block):
            raise ValueError(f"{self.name}: params must start with the launch's grid and block "
                             "(isa.params(launch))")
        if rows.shape[1] != 6 or addresses.shape[1] != 33:
            raise ValueError(f"{self.name}: rows must be (n, 6) and addresses (m, 33); got "
                             f"{rows.shape} and {addresses.shape}")
        if len(work) != B:
            raise ValueError(f"{self.name}: block_work has {len(work)} entries for {B} blocks")
        if len(blocks) and (blocks.min() < 0 or blocks.max() >= B or (np.diff(blocks) <= 0).any()):
            raise ValueError(f"{self.name}: blocks must be ascending distinct block ids below {B}")
        if len(begin) != len(blocks) * wpb + 1 or begin[0] != 0 or begin[-1] != len(rows) \
                or (np.diff(begin) < 0).any():
            raise ValueError(f"{self.name}: warp_begin must be {len(blocks)} x {wpb} + 1 "
                             f"ascending offsets from 0 to {len(rows)} (the events)")
        if self.n_regs < 1:
            raise ValueError(f"{self.name}: n_regs = {self.n_regs}: at least 1")
        if len(rows):
            op, regs, lanes = rows[:, 0], rows[:, 1:5], rows[:, 5]
            if op.min() < 0 or op.max() >= len(isa.OP_NAMES):
                raise ValueError(f"{self.name}: opcodes must be isa's (0 to {len(isa.OP_NAMES) - 1})")
            if regs.min() < isa.NO_REG or regs.max() >= self.n_regs:
                raise ValueError(f"{self.name}: registers must be -1 (none) or below n_regs "
                                 f"= {self.n_regs}")
            if lanes.max() >= len(addresses) or lanes.min() < -(1 << 32):
                raise ValueError(f"{self.name}: lanes must index addresses (below "
                                 f"{len(addresses)}) or be ~mask of a 32-bit mask")
            if (np.isin(op, MEMORY_OPS) & (lanes < 0)).any():
                raise ValueError(f"{self.name}: a memory instruction's lanes must index addresses")
        if sites.ndim != 1:
            raise ValueError(f"{self.name}: sites must be a vector (one site per event)")
        if not isinstance(self.n_sites, (int, np.integer)) or isinstance(self.n_sites, bool) \
                or self.n_sites < 0:
            raise ValueError(f"{self.name}: n_sites = {self.n_sites!r}: an int >= 0")
        if len(sites) or self.n_sites:
            if len(sites) != len(rows):
                raise ValueError(f"{self.name}: sites has {len(sites)} entries for {len(rows)} "
                                 "events (one per event; or none, with n_sites 0)")
            if self.n_sites == 0:
                raise ValueError(f"{self.name}: sites given but n_sites = 0 (the number of "
                                 "source instructions they index)")
            if len(sites) and (sites.min() < 0 or sites.max() >= self.n_sites):
                raise ValueError(f"{self.name}: sites must lie in 0 to n_sites - 1 = "
                                 f"{self.n_sites - 1}; they span {sites.min()} to {sites.max()}")
        if len(addresses) and not np.isin(addresses[:, 32], WIDTHS).all():
            raise ValueError(f"{self.name}: access widths must be one of {WIDTHS} bytes")
        names = {a[0] for a in self.arrays}
        for k in ("loads", "stores"):
            missing = [n for n in getattr(self, k) if n not in names]
            if missing:
                raise ValueError(f"{self.name}: {k} names {show(missing[0])}, in no array")

    @property
    def warps_per_block(self) -> int:
        return -(-self.launch.threads_per_block // 32)

    @property
    def op_names(self) -> tuple:
        """The name of each opcode its rows number."""
        return isa.OP_NAMES


    def describe(self) -> str:
        g, b = self.launch.grid, self.launch.block
        return (f"{self.name} grid {g} block {b}, traced ({len(self.blocks)} of "
                f"{self.launch.blocks} blocks)" + (f" ({self.label})" if self.label else ""))

    def array_of(self, address: int):
        """(array name, element index) of a global byte address."""
        for name, base, elements in self.arrays:
            if base <= address < base + 4 * elements:
                return name, (address - base) // 4
        raise ValueError(f"address {address} is in no array of {self.name}")

    def covers(self, block_ids) -> np.ndarray:
        """Per block id: whether it is traced."""
        ids = np.asarray(block_ids, np.int64)
        at = np.minimum(np.searchsorted(self.blocks, ids), max(0, len(self.blocks) - 1))
        return (self.blocks[at] == ids) if len(self.blocks) else np.zeros(len(ids), np.bool_)


def is_trace(prog) -> bool:
    return isinstance(prog, TraceProgram)


def program_arrays(prog: TraceProgram, positions, kept=None):
    """The fields of the ``core.ProgramArrays`` of a trace program for a plan that runs block ids
    ``positions`` (those where ``kept`` is False are skipped and need no trace): per
    position and warp its first event and the event after its last."""
    positions = np.asarray(positions, np.int64)
    kept = np.ones(len(positions), np.bool_) if kept is None else np.asarray(kept, np.bool_)
    traced = prog.covers(positions)
    if (kept & ~traced).any():
        missing = positions[kept & ~traced]
        raise ValueError(f"{prog.name}: the plan simulates blocks its trace does not cover "
                         f"({len(missing)} of them, the first {missing[:5].tolist()}; "
                         "engine.trace_plan_blocks names those a sampled run needs)")
    wpb = prog.warps_per_block
    at = np.searchsorted(prog.blocks, positions)
    idx = (np.where(traced, at, 0)[:, None] * wpb + np.arange(wpb)[None, :]).ravel()
    start = np.where(np.repeat(traced, wpb), prog.warp_begin[idx], 0) if len(prog.blocks) \
        else np.zeros(len(idx), np.int64)
    end = np.where(np.repeat(traced, wpb), prog.warp_begin[idx + 1], 0) if len(prog.blocks) \
        else np.zeros(len(idx), np.int64)
    # one int64 vector (``P_*``): the launch's grid and block, where the rest starts, each
    # position's warps' first events, the events after their last, the lane addresses
    head = P_ADDR + 1
    n = len(idx)
    packed = np.concatenate([prog.params[:6], [head, head + n, head + 2 * n], start, end,
                             prog.addresses.ravel()]).astype(np.int64)
    packed.setflags(write=False)
    return TRACE, packed, prog.rows, 0, 0, int(prog.n_regs)


def check_full(prog: TraceProgram) -> None:
    """``mode="full"`` simulates every block: the trace must cover them all."""
    B = prog.launch.blocks
    if len(prog.blocks) != B:
        raise ValueError(f"mode='full': {prog.describe()} covers {len(prog.blocks)} of its "
                         f"{B} blocks; full mode simulates every block (trace them all, or "
                         "use mode='sampled' with the blocks engine.trace_plan_blocks names)")


def array_rows(prog: TraceProgram, names) -> list:
    """The (name, base, elements) rows of ``prog.arrays`` named in ``names``."""
    return [a for a in prog.arrays if a[0] in set(names)]


# ---------------------------------------------------------------- numba, for core

@njit(cache=True, inline='always')
def settle_trace(rows, p, g, pc, end, addr):
    """A trace warp's next event with an active lane from ``pc`` (before ``end``): its
    lanes into ``addr[g]`` (a memory event's addresses and width, from the packed
    parameters ``p``; else 0 for an active lane, -1 for an inactive one, width 4).
    Returns (pc, active lanes); pc == len(rows) when the warp has finished."""
    act = 0
    while act == 0 and pc < end:
        ln = rows[pc, 5]
        if ln >= 0:
            at = p[P_ADDR] + 33 * ln
            for c in range(33):
                addr[g, c] = p[at + c]
            for lane in range(32):
                if addr[g, lane] >= 0:
                    act += 1
        else:
            m = ~ln
            for lane in range(32):
                on = (m >> lane) & 1
                addr[g, lane] = 0 if on else -1
                act += on
            addr[g, 32] = 4
        if act == 0:
            pc += 1
    if act == 0:
        pc = rows.shape[0]
    return pc, act


@njit(cache=True, inline='always')
def trace_warp(p, q):
    """(first event, the event after its last) of warp q (position x warps per block +
    warp) in the packed parameters ``p``."""
    return p[p[P_START] + q], p[p[P_END] + q]


@njit(cache=True, inline='always')
def trace_live(p, wi):
    """Threads of warp ``wi`` of a block of p[3:6] threads."""
    return max(0, min(32, p[3] * p[4] * p[5] - 32 * wi))


# ---------------------------------------------------------------- the oracle

def keep_blocks(prog: TraceProgram, block_ids) -> TraceProgram:
    """``prog`` with the events of blocks ``block_ids`` alone (each one it traces), its
    ``block_work`` as it was: the trace a sampled run needs (``engine.trace_plan_blocks``)."""
    ids = np.unique(np.asarray(block_ids, np.int64))
    if not prog.covers(ids).all():
        raise ValueError(f"{prog.name}: blocks {ids[~prog.covers(ids)][:5].tolist()} are not traced")
    wpb = prog.warps_per_block
    q = (np.searchsorted(prog.blocks, ids)[:, None] * wpb + np.arange(wpb)[None, :]).ravel()
    lo, hi = prog.warp_begin[q], prog.warp_begin[q + 1]
    ev = np.concatenate([np.arange(a, b) for a, b in zip(lo, hi)] + [np.zeros(0, np.int64)])
    rows = prog.rows[ev].copy()
    mem = rows[:, 5] >= 0
    used = np.unique(rows[mem, 5])
    rows[mem, 5] = np.searchsorted(used, rows[mem, 5])
    begin = np.concatenate([[0], np.cumsum(hi - lo)]).astype(np.int64)
    sites = prog.sites[ev] if len(prog.sites) else prog.sites
    return dataclasses.replace(prog, rows=rows, addresses=prog.addresses[used], warp_begin=begin,
                               blocks=ids, sites=sites)

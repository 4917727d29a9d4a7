"""``simulate_kernel``: time any kernel from its own SASS on a SIMT preset.

The path (DESIGN.md, "Any kernel, one path"):

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

import numpy as np

from simulator import arguments as arg
from simulator.kernelcode import sassclass, sassmap
from simulator.kernelcode.launch import _dims, MAX_BLOCK, MAX_GRID, emulate_kernel
from simulator.kernelcode.lineinfo import ptx_lines
from simulator.kernelcode.toolchain import KernelPTX, cc_of, kernel_ptx, sass, sm_arch

#: interior blocks the probe runs (spread evenly), besides one block of each edge class
PROBE_BLOCKS = 8
#: warp instructions a full-mode trace may hold (about 0.3 KB of memory each)
FULL_TRACE_MAX = 3e7
#: SASS warp instructions (uncut) a sampled run's blocks may take to emulate, about 2-4 s
EMULATE_MAX = 4e6
#: the smallest engine budget a sampled run is cut to for that
MIN_BUDGET = 2e5
MODES = ("full", "sampled")
L2_STATES = ("cold", "warm")

_maps: dict = {}


@dataclasses.dataclass(frozen=True)
class Compiled:
    """A kernel compiled for one compute capability, with its SASS mapped."""
    kptx: KernelPTX
    sass: object
    smap: sassmap.SassMap
    registers: int
    shared_static: int
    arg_names: tuple
    ptx_rows_lines: tuple     # the PTX line of each emulator row
    successors: tuple         # the PTX blocks' successors (decode.Program.successors)


def _arg_names(kernel, n: int) -> tuple:
    fn = getattr(kernel, "py_func", None)
    code = getattr(fn, "__code__", None)
    names = code.co_varnames[:code.co_argcount] if code is not None else ()
    return tuple(names[i] if i < len(names) else f"arg{i}" for i in range(n))


def compile_kernel(kernel, args, cc, name=None) -> Compiled:
    """``kernel`` (a numba kernel, or PTX text with entry ``name``) compiled for ``cc``."""
    from simulator.kernelcode.launch import _program
    prog, kname, _ = _program(kernel, list(args), cc, name)
    if isinstance(kernel, str):
        import hashlib
        kp = KernelPTX(kname, prog.name, kernel, (), tuple(cc),
                       hashlib.sha256(kernel.encode()).hexdigest())
    else:
        kp = kernel_ptx(kernel, list(args), cc)
    key = (kp.fingerprint, kp.argtypes, kp.cc, kp.entry, hash(kp.ptx))
    hit = _maps.get(key)
    if hit is not None:
        return hit
    code = sass(kp)
    lines, regs, smem = ptx_lines(kp, code)
    out = Compiled(kp, code, sassmap.build(prog, code, lines), regs, smem,
                   _arg_names(kernel, len(args)), tuple(prog.lines), prog.successors)
    _maps[key] = out
    return out


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


def _record(kernel, grid, block, args, blocks, name, shared_bytes, cc, nsm):
    return emulate_kernel(kernel, grid, block, list(args), name=name, shared_bytes=shared_bytes,
                          cc=cc, nsm=nsm, record=True, blocks=blocks, write_back=False)


def _per_block(tr: sassmap.Traces) -> np.ndarray:
    """Warp instructions of each traced block."""
    starts = tr.warp_begin[::tr.warps_per_block]
    return np.diff(starts).astype(np.float64)


def _touched(tr: sassmap.Traces, arrays, op) -> tuple:
    """Names of the arrays the rows of class ``op`` address."""
    rows = tr.rows[(tr.rows[:, 0] == op) & (tr.rows[:, 5] >= 0)]
    if not len(rows):
        return ()
    a = tr.addresses[rows[:, 5], :32]
    firsts = a.max(axis=1)
    out = set()
    for name, base, nbytes in arrays:
        if ((firsts >= base) & (firsts < base + nbytes)).any():
            out.add(name)
    return tuple(sorted(out))


def _flops(tr: sassmap.Traces) -> float:
    """FP32 operations the traced rows execute (FFMA 2 a lane, FADD 1)."""
    from simulator.simt import isa as E
    lanes = tr.rows[:, 5]
    active = np.where(lanes < 0, _popcount(~lanes),
                      (tr.addresses[np.maximum(lanes, 0), :32] >= 0).sum(axis=1)
                      if len(tr.addresses) else 0)
    op = tr.rows[:, 0]
    per = np.where(op == E.FFMA, 2, np.where((op == E.FADD) | (op == E.FMNMX), 1, 0))
    return float((per * active).sum())


def _popcount(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.uint64) & np.uint64(0xFFFFFFFF)
    return np.array([bin(int(v)).count("1") for v in x], np.int64) if x.size < 64 else \
        np.unpackbits(x.astype("<u4").view(np.uint8).reshape(-1, 4), axis=1).sum(axis=1)


def _loop_cuts(c: Compiled, trace: dict):
    """(header, in-loop blocks, trips, caps) of the kernel's dominant loop where the
    engine would cut it (``engine.trip_caps``), else None."""
    import types

    from simulator.simt import engine
    loop = sassmap.dominant_loop(c.smap, c.successors, trace)
    if loop is None:
        return None
    h, inloop, trips = loop
    caps = engine.trip_caps(types.SimpleNamespace(trip_period=1), trips)
    return (h, inloop, trips, caps) if caps else None


def trace_program(c: Compiled, kernel, hw, grid, block, args, mode="sampled", name=None,
                  shared_bytes=0, budget=None, l2_warm=False):
    """(the ``TraceProgram`` a run of ``mode`` simulates, the traces it was built from).

    Sampled mode cuts the kernel's dominant loop as the engine cuts a template's
    (``engine.trip_caps``: three runs issuing each warp's first 16, 32 and 48 trips,
    extrapolated to its trips) and keeps the blocks it emulates to about
    ``EMULATE_MAX`` warp instructions (a smaller budget where the cut runs would let
    the sampler pick more)."""
    from simulator.simt import engine
    from simulator.simt import isa as E
    from simulator.simt.kernels.launch import Launch
    from simulator.simt.traces import TraceProgram
    g, b = _dims(grid, "grid", MAX_GRID), _dims(block, "block", MAX_BLOCK)
    launch = Launch(g, b)
    nblocks = launch.blocks
    cc, nsm = c.kptx.cc, hw.sm_count
    probe = _probe_ids(launch.grid)
    em = _record(kernel, g, b, args, probe, name, shared_bytes, cc, nsm)
    ptr = sassmap.warp_traces(c.smap, em.trace)
    work = _work(launch.grid, probe, _per_block(ptr))
    params, names = E.params(launch)
    arrays = tuple((c.arg_names[i], int(base), int(nbytes)) for i, base, nbytes
                   in em.trace["arrays"])
    loop = _loop_cuts(c, em.trace) if mode != "full" else None
    cut_work = {}
    if loop is not None:
        h, inloop, trips, caps = loop
        for cap in caps:
            cut = sassmap.warp_traces(c.smap, em.trace, cut=(h, inloop, cap))
            cut_work[cap] = _work(launch.grid, probe, _per_block(cut))

    def program(tr, blocks, work, cuts=()):
        return TraceProgram(
            name=c.kptx.name, launch=launch, params=params, param_names=names,
            rows=tr.rows if tr is not None else np.zeros((0, 6), np.int64),
            addresses=tr.addresses if tr is not None else np.zeros((0, 33), np.int64),
            warp_begin=tr.warp_begin if tr is not None else np.zeros(
                len(blocks) * -(-launch.threads_per_block // 32) + 1, np.int64),
            blocks=blocks, block_work=work, n_regs=sassclass.N_REGS,
            arrays=tuple((n, base, -(-nbytes // 4)) for n, base, nbytes in arrays),
            loads=_touched(ptr if tr is None else tr, arrays, E.LDG),
            stores=_touched(ptr if tr is None else tr, arrays, E.STG),
            regs_per_thread=max(1, c.registers),
            smem_per_block=c.shared_static + int(shared_bytes),
            resources_source=f"ptxas -v for {sm_arch(cc)}",
            flops=0, min_bytes=0, label=f"grid {g} block {b}",
            trips=loop[2] if cuts else 0, cuts=cuts)

    none = np.zeros(0, np.int64)
    if mode == "full":
        total = float(work.sum())
        if total > FULL_TRACE_MAX:
            raise ValueError(f"mode='full': kernel {c.kptx.name!r} would trace about "
                             f"{total:.2g} warp instructions; at most {FULL_TRACE_MAX:.0e} "
                             "-- mode='sampled' (the default) simulates a part of it")
        blocks = np.arange(nblocks, dtype=np.int64)
    else:
        stub = program(None, none, work, tuple((cap, program(None, none, w))
                                               for cap, w in cut_work.items()))
        bud = engine.SLICE_BUDGET if budget is None else budget
        for _ in range(6):            # the blocks to emulate, within EMULATE_MAX
            blocks = engine.trace_plan_blocks(hw, stub, bud, l2_warm)
            uncut = float(work[blocks].sum())
            if uncut <= EMULATE_MAX or bud <= MIN_BUDGET:
                break
            bud = max(MIN_BUDGET, bud * EMULATE_MAX / uncut)
        budget = bud
    if np.array_equal(blocks, probe):
        rec = em.trace
    else:
        rec = _record(kernel, g, b, args, blocks, name, shared_bytes, cc, nsm).trace
    tr = ptr if rec is em.trace else sassmap.warp_traces(c.smap, rec)
    if mode == "full":
        work = _per_block(tr)       # every block's own count
    # (sampled: the work the plan was made from; the engine plans again from it)
    cuts = tuple((cap, program(sassmap.warp_traces(c.smap, rec, cut=(loop[0], loop[1], cap)),
                               blocks, w)) for cap, w in cut_work.items())
    prog = program(tr, blocks, work, cuts)
    scale = float(work.sum()) / max(1.0, float(work[blocks].sum()))
    touched = {n for n in prog.loads + prog.stores}
    prog = dataclasses.replace(prog, flops=int(round(_flops(tr) * scale)),
                               min_bytes=sum(n for name_, _, n in arrays if name_ in touched))
    return prog, tr, budget


def simulate_kernel(kernel, grid, block, args, *, hw, mode: str = "sampled",
                    l2: str = "cold", policy: str = "gto", name: str | None = None,
                    shared_bytes: int = 0, budget: float | None = None, trace: int = 0):
    """The SIMT engine's ``Result`` for ``kernel[grid, block](*args)`` on ``hw``, timed
    from the kernel's own SASS (see the module's docstring). ``kernel``: a numba
    ``@cuda.jit`` kernel or PTX text (``name``: its entry); ``args`` numpy arrays and
    numbers (read, not written); ``mode`` sampled (a slice of the blocks, within about
    ``budget`` warp instructions) or full (every block); ``l2`` cold (caches empty) or
    warm (the arrays in the L2 where they fit, as a launch repeated back to back);
    ``trace`` keeps that many issued instructions for timelines.

    ``result.instructions`` are SASS warp instructions; ``result.extra["sass"]`` lists
    each SASS instruction (pc, text, warp executions over the launch, PTX line).
    """
    from simulator import jit
    from simulator.simt import core, engine
    hw = arg.hardware(hw, "simt")
    mode = arg.choice(mode, "mode", MODES)
    l2 = arg.choice(l2, "l2", L2_STATES)
    policy = arg.choice(policy, "policy", engine.POLICIES)
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"args={type(args).__name__}: expected a tuple or list of the "
                        "kernel's arguments")
    wall = time.perf_counter()
    c = compile_kernel(kernel, args, cc_of(hw), name)
    prog, tr, budget = trace_program(c, kernel, hw, grid, block, args, mode, name,
                                     shared_bytes, budget, l2 == "warm")
    jit.announce("SIMT engine", [core.run])
    res = engine.simulate(hw, prog, policy=policy, mode=mode, trace=trace,
                          l2_warm=(l2 == "warm"), budget=budget)
    scale = float(prog.block_work.sum()) / max(1.0, float(prog.block_work[prog.blocks].sum()))
    counts = np.bincount(tr.sass_index, minlength=len(c.sass.instrs)) * scale
    origin = c.smap.origin
    sass_rows = [{"pc": int(i.pc), "text": i.text, "warp_instructions": float(n),
                  "ptx_line": int(c.ptx_rows_lines[origin[k]]) if origin[k] >= 0 else 0}
                 for k, (i, n) in enumerate(zip(c.sass.instrs, counts))]
    extra = {**res.extra, "sass": sass_rows, "arch": sm_arch(c.kptx.cc),
             "traced_blocks": int(len(prog.blocks)), "total_blocks": int(prog.launch.blocks)}
    return dataclasses.replace(res, workload=c.kptx.name, wall_seconds=time.perf_counter() - wall,
                               extra=extra)


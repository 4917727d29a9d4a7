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

#: blocks the probe runs (spread evenly over the grid, the first and last among them)
PROBE_BLOCKS = 8
#: warp instructions a full-mode trace may hold (about 0.3 KB of memory each)
FULL_TRACE_MAX = 3e7
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
                   _arg_names(kernel, len(args)), tuple(prog.lines))
    _maps[key] = out
    return out


def _probe_ids(nblocks: int, k: int = PROBE_BLOCKS) -> np.ndarray:
    return np.unique(np.linspace(0, nblocks - 1, min(k, nblocks)).round().astype(np.int64))


def _record(kernel, grid, block, args, blocks, name, shared_bytes, cc, nsm):
    return emulate_kernel(kernel, grid, block, list(args), name=name, shared_bytes=shared_bytes,
                          cc=cc, nsm=nsm, record=True, blocks=blocks, write_back=False)


def _per_block(tr: sassmap.Traces) -> np.ndarray:
    """Warp instructions of each traced block."""
    starts = tr.warp_begin[::tr.warps_per_block]
    return np.diff(starts).astype(np.float64)


def _work(nblocks, ids, counts) -> np.ndarray:
    """Every block's warp instructions, interpolated by block id between ``ids``."""
    return np.interp(np.arange(nblocks, dtype=np.float64), ids.astype(np.float64), counts)


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
    """FP32 operations the traced rows execute (FFMA 2 a lane, FADD and FMNMX 1)."""
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


def trace_program(c: Compiled, kernel, hw, grid, block, args, mode="sampled", name=None,
                  shared_bytes=0, budget=None):
    """(the ``TraceProgram`` a run of ``mode`` simulates, the traces it was built from)."""
    from simulator.simt import engine
    from simulator.simt import isa as E
    from simulator.simt.kernels.launch import Launch
    from simulator.simt.traces import TraceProgram
    g, b = _dims(grid, "grid", MAX_GRID), _dims(block, "block", MAX_BLOCK)
    launch = Launch(g, b)
    nblocks = launch.blocks
    cc, nsm = c.kptx.cc, hw.sm_count
    probe = _probe_ids(nblocks)
    em = _record(kernel, g, b, args, probe, name, shared_bytes, cc, nsm)
    ptr = sassmap.warp_traces(c.smap, em.trace)
    ids, counts = probe, _per_block(ptr)
    work = _work(nblocks, ids, counts)
    params, names = E.params(launch)
    arrays = tuple((c.arg_names[i], int(base), int(nbytes)) for i, base, nbytes
                   in em.trace["arrays"])

    def program(tr, blocks, work):
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
            flops=0, min_bytes=0,
            label=f"grid {g} block {b}")

    if mode == "full":
        total = float(work.sum())
        if total > FULL_TRACE_MAX:
            raise ValueError(f"mode='full': kernel {c.kptx.name!r} would trace about "
                             f"{total:.2g} warp instructions; at most {FULL_TRACE_MAX:.0e} "
                             "-- mode='sampled' (the default) simulates a part of it")
        blocks = np.arange(nblocks, dtype=np.int64)
    else:
        blocks = engine.trace_plan_blocks(hw, program(None, np.zeros(0, np.int64), work),
                                          budget)
    if np.array_equal(blocks, probe):
        tr = ptr
    else:
        tr = sassmap.warp_traces(c.smap, _record(kernel, g, b, args, blocks, name,
                                                 shared_bytes, cc, nsm).trace)
    if mode == "full":
        work = _per_block(tr)       # every block's own count
    # (sampled: the work the plan was made from; the engine plans again from it)
    prog = program(tr, blocks, work)
    scale = float(work.sum()) / max(1.0, float(work[blocks].sum()))
    touched = {n for n in prog.loads + prog.stores}
    prog = dataclasses.replace(prog, flops=int(round(_flops(tr) * scale)),
                               min_bytes=sum(n for name_, _, n in arrays if name_ in touched))
    return prog, tr


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
    prog, tr = trace_program(c, kernel, hw, grid, block, args, mode, name, shared_bytes, budget)
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


"""``emulate_kernel``: run a numba.cuda kernel's launch on the CPU from its PTX.

The launch's arrays are copied into the emulator's memory (arrays that share memory,
views of one buffer, share it there too), the kernel's parameters are laid out as numba
passes them (an array is meminfo, parent, nitems, itemsize, data, shape..., strides...),
the blocks run in order (``emulator.run``, in slices of ``SLICE`` warp-instructions so
that Ctrl-C and progress are heard between them), and the memory the arrays cover is
copied back into them, as a launch followed by a copy to the host would leave them.
"""
from __future__ import annotations

import ctypes
import dataclasses
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from simulator.kernelcode import emulator as em
from simulator.kernelcode import isa, loops
from simulator.kernelcode.compiled import compile as compile_kernel

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


#: warp-instructions per call into the interpreter (about 0.1-0.5 s)
SLICE = 1 << 20
#: SIMT stack entries per warp (nested divergent branches)
DEPTH = 64
#: CUDA's launch limits (every compute capability this project targets)
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS = 1024
MAX_GRID = ((1 << 31) - 1, 65535, 65535)
#: the largest shared memory a block may use (H100: 227 KiB with opt-in)
MAX_SHARED = 227 * 1024
#: bytes left unmapped between the launch's arrays
GAP = 512

class TraceTooLong(ValueError):
    """A recording that ran past ``emulate_kernel``'s ``max_record``: ``events`` recorded
    when it stopped, ``blocks_done`` of the blocks asked for finished (in their order)."""

    def __init__(self, events: int, blocks_done: int, message: str):
        super().__init__(message)
        self.events, self.blocks_done = events, blocks_done


@dataclasses.dataclass
class Emulation:
    """What one emulated launch executed."""
    kernel: str
    grid: tuple
    block: tuple
    instructions: int          # PTX warp-instructions executed
    thread_instructions: int   # the same, counted per active thread
    wall_seconds: float
    per_instruction: list      # (PTX line, text, warp executions, thread executions)
    trace: dict | None = None  # with record=True: 'events' (warp, pc, mask, addr row)
                               # and 'addresses' (rows of 32 addresses, -1 inactive)
    cycles: float | None = None  # blocks together: the last warp's clock (an instruction
                                 # a cycle, atomics and loads as ``atomic_timing``)

    @property
    def simt_efficiency(self) -> float:
        """Active threads per warp-instruction over 32."""
        return self.thread_instructions / (32 * self.instructions) if self.instructions \
            else 1.0

    @property
    def rate(self) -> float:
        """Warp-instructions emulated per wall second."""
        return self.instructions / self.wall_seconds if self.wall_seconds > 0 else 0.0


def launch_dims(value: int | Sequence[int], name: str,
                limits: Sequence[int]) -> tuple[int, int, int]:
    """A grid or block (an int or 1-3 ints) as 3 ints, each within ``limits``; TypeError or
    ValueError naming ``name``."""
    given = value
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}={value!r}: expected an int or a tuple of 1-3 ints")
    if isinstance(value, (int, np.integer)):
        value = (int(value),)
    if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 3 or not all(
            isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
            for v in value):
        raise TypeError(f"{name}={value!r}: expected an int or a tuple of 1-3 ints")
    dims = tuple(int(v) for v in value) + (1,) * (3 - len(value))
    for v, lim, axis in zip(dims, limits, "xyz"):
        if not 1 <= v <= lim:
            raise ValueError(f"{name}={given!r}: {axis} is {v}; allowed 1..{lim}")
    return dims


def _extent(a: np.ndarray):
    """(lowest, highest + 1) byte address an array covers."""
    ptr = a.__array_interface__["data"][0]
    if a.size == 0:
        return ptr, ptr
    lo = hi = ptr
    for n, s in zip(a.shape, a.strides):
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi + a.itemsize


def _segments(arrays):
    """Groups of arrays whose memory overlaps: [(lo, hi, [indices])], in the order of
    their first argument (so that the emulator's layout, and a timing that depends on
    it, does not depend on where the host happened to allocate them)."""
    spans = sorted((*_extent(a), i) for i, a in enumerate(arrays))
    out = []
    for lo, hi, i in spans:
        if out and lo < out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
            out[-1][2].append(i)
        else:
            out.append([lo, hi, [i]])
    return sorted(out, key=lambda g: min(g[2]))


def _flatten(value, ty, array_ptr, i):
    """numba's flattened parameter values of one argument: [(python value, kind)]."""
    from numba.core import types as nt
    if isinstance(ty, nt.Array):
        return ([(0, "i"), (0, "i"), (value.size, "i"), (value.itemsize, "i"),
                 (array_ptr[id(value)], "i")] + [(n, "i") for n in value.shape]
                + [(s, "i") for s in value.strides])
    if isinstance(ty, nt.Boolean):
        return [(int(bool(value)), "i")]
    if isinstance(ty, nt.Integer):
        return [(int(value), "i")]
    if isinstance(ty, nt.Float):
        return [(float(value), "f")]
    if isinstance(ty, nt.Complex):
        return [(complex(value).real, "f"), (complex(value).imag, "f")]
    if isinstance(ty, nt.BaseTuple):
        out = []
        for v, t in zip(value, ty.types if hasattr(ty, "types") else [ty.dtype] * ty.count):
            out += _flatten(v, t, array_ptr, i)
        return out
    raise TypeError(f"args[{i}]: a {ty} argument is not supported by the emulator "
                    "(arrays, numbers, booleans and tuples of them are)")


def _param_bytes(prog, flat, kernel_name):
    buf = bytearray(max(prog.param_bytes, 8))
    if len(flat) != len(prog.params):
        raise ValueError(f"kernel {kernel_name!r}: its PTX takes {len(prog.params)} "
                         f"parameters, the arguments give {len(flat)}")
    for (value, kind), p, off in zip(flat, prog.params, prog.param_offsets):
        if kind == "f" or p.type.startswith("f"):
            fmt = "<f4" if p.nbytes == 4 else "<f8"
            raw = np.array(value, dtype=fmt).tobytes()
        else:
            raw = (int(value) % (1 << (8 * p.nbytes))).to_bytes(p.nbytes, "little")
        buf[off:off + p.nbytes] = raw
    return bytes(buf)


def emulate_kernel(kernel: object | str, grid: int | Sequence[int], block: int | Sequence[int],
                   args: Sequence[object], *, name: str | None = None, shared_bytes: int = 0,
                   cc: Sequence[int] = (9, 0), nsm: int = 132, record: bool = False,
                   progress: Callable[[int, int], object] | None = None,
                   blocks: Sequence[int] | np.ndarray | None = None, write_back: bool = True,
                   max_record: float | Sequence[float] | None = None,
                   concurrent: bool | None = None,
                   resident: int | None = None,
                   atomics: Sequence[float] | np.ndarray | None = None,
                   skip_loops: tuple | None = None,
                   reserve: Sequence[int] | None = None) -> Emulation:
    """Run ``kernel[grid, block](*args)`` on the CPU from the kernel's PTX.

    ``kernel`` is a numba ``@cuda.jit`` kernel (compiled here, no GPU needed) or PTX
    text (``name`` its entry where it has several; arrays are then passed as one
    pointer each, as CUDA C kernels take them). ``args`` are numpy arrays and numbers;
    the arrays receive what the kernel writes. ``shared_bytes`` is the dynamic shared
    memory. ``record=True`` keeps the trace of every warp-instruction (warp, PTX pc,
    the warp's active lanes -- its guard predicate not applied: a guarded instruction
    issues for them all) and the 32 addresses of each memory access (-1 for a lane
    inactive or guarded off). ``progress(done, total)``,
    if given, is called between slices with blocks finished and blocks in all.
    ``blocks``: the linear ids of the blocks to run, ascending (default: all); the
    others do not run, as if the launch had only these (what they would have written
    is not there). ``write_back=False`` leaves the arrays as they were. ``max_record``:
    with ``record``, a ``TraceTooLong`` (a ValueError) once the trace holds more
    warp-instructions than that (its memory and time grow with it), naming the blocks;
    a sequence of one count per block of ``blocks`` (ascending): once it holds more
    than the count of the block it is in, checked every ``SLICE`` warp-instructions --
    a trace that runs past what was expected of the blocks so far stops early.

    ``concurrent``: run ``resident`` blocks at a time (default: as many as ``nsm`` SMs
    hold by the thread limit), their warps interleaved by time so that atomics land in
    the order their warps reach the L2 (``emulator.run`` with a timing; ``atomics`` its
    timing, ``emulator.T_*``: default the H100's, ``atomics.atomic_timing``). Default (None):
    for a kernel with an atomic compare-and-swap or exchange, whose lock-free loops
    retry as often as other warps' successes make them; blocks one after another else.

    ``skip_loops`` = (first, least, heads): blocks one after another, an outermost loop
    whose end one integer comparison decides (``loops.table``; ``heads``: only those
    whose header is one of these PTX rows, None: any) runs its first ``first`` trips,
    and where it has ``least`` trips or more its middle trips are skipped but the last
    few (``emulator._ff_backedge``): what the trips compute is then wrong, the control
    flow and addresses after them right. The trace then marks a warp's back-edges from
    trip ``first - 1`` and where it skipped how many (``trace["loop_events"]``: rows of
    event index, warp, loop header row, kind -- 0 a back-edge, 1 a skip --, trips
    skipped); its events are the ones run. None: no trip skipped.

    ``reserve`` = (events, address rows): with ``record``, the room the trace starts
    with (it doubles where it fills; a caller that knows about how long the trace will
    be saves the copies).
    """
    gdims, bdims = _check_launch(grid, block, args, shared_bytes)
    c = compile_kernel(kernel, list(args), cc, name)
    prog, kname = c.program, c.name
    shared_total = prog.shared_static + (shared_bytes if prog.shared_extern else 0)
    if shared_total > MAX_SHARED or shared_bytes > MAX_SHARED:
        raise ValueError(f"kernel {kname!r} with shared_bytes={shared_bytes}: "
                         f"{prog.shared_static + shared_bytes} bytes of shared memory a block; "
                         f"at most {MAX_SHARED}")
    nthreads = bdims[0] * bdims[1] * bdims[2]
    nw = (nthreads + 31) // 32
    nblocks = gdims[0] * gdims[1] * gdims[2]
    order = _block_order(blocks, nblocks)
    nrun = len(order) if blocks is not None else nblocks
    if concurrent is None:      # lock-free loops retry as others' successes make them
        concurrent = bool(np.any((prog.code[:, isa.F_OP] == isa.OP_ATOM)
                                 & np.isin(prog.code[:, isa.F_X3], (isa.ATOM["cas"],
                                                                     isa.ATOM["exch"]))))
    slots = _slots(concurrent, resident, nsm, nw, nrun)
    lay = _Layout.of(prog, args, shared_total, slots, nw)
    mem = em.new_memory(lay.memory(prog, args, c.argtypes, kname))
    L = lay.launch_vector(prog, gdims, bdims, nsm, record, shared_bytes, nblocks, slots)
    T = np.zeros(0)
    if concurrent:
        from simulator.kernelcode.atomics import atomic_timing
        T = atomic_timing() if atomics is None else np.asarray(atomics, np.float64)
        if T.shape != (em.T_SIZE,) or not np.isfinite(T).all() or (T < 0).any():
            raise ValueError(f"atomics={atomics!r}: expected {em.T_SIZE} cycle counts >= 0 "
                             "(emulator.T_*)")
    table = loops.table(prog.code, None if skip_loops is None or skip_loops[2] is None
                        else set(int(h) for h in skip_loops[2]))
    cfg = np.zeros(4, np.int64)
    if skip_loops is not None and not concurrent:
        first, least = int(skip_loops[0]), int(skip_loops[1])
        if first < 4 or least < first:
            raise ValueError(f"skip_loops={skip_loops!r}: expected (first >= 4, least >= "
                             "first, heads)")
        cfg[:] = first, 2, least, 8
    lo = em.new_loops(table, cfg, slots * nw, prog.nslots)
    room = (1 << 16, 1 << 12)
    if reserve is not None:
        if not isinstance(reserve, (tuple, list)) or len(reserve) != 2 or not all(
                isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= 0
                for x in reserve):
            raise ValueError(f"reserve={reserve!r}: expected (events, address rows), two "
                             "ints >= 0")
        room = (max(room[0], int(reserve[0])), max(room[1], int(reserve[1])))
    run = _Run.start(prog, lay, mem, L, order, slots * nw, T, record, lo, room)
    wall = run.go(prog, nrun, kname, gdims, bdims, max_record, progress)
    for (lo, hi, members), o in zip(lay.segs, lay.seg_off):
        if write_back and hi > lo and all(lay.arrays[i].flags.writeable for i in members):
            ctypes.memmove(lo, mem.M[o:o + hi - lo].ctypes.data, hi - lo)
    S, rec = run.S, run.rec
    per = [(prog.lines[pc], prog.texts[pc], int(rec.wcount[pc]), int(rec.tcount[pc]))
           for pc in range(prog.code.shape[0]) if rec.wcount[pc]]
    trace = None
    if record:
        ev = rec.ev[:S[em.S_EV]]
        pseudo = ev[:, 1] < 0
        loop_events = np.zeros((0, 5), np.int64)
        if pseudo.any():
            k = np.flatnonzero(pseudo)
            skip = ev[k, 1] <= em.SKIP_PC
            idx = np.where(skip, em.SKIP_PC - ev[k, 1], em.MARK_PC - ev[k, 1])
            # each pseudo-event before the real event that follows it
            loop_events = np.stack([k - np.arange(len(k)), ev[k, 0], table.lp[idx, loops.LP_HEAD],
                                    skip.astype(np.int64), np.where(skip, ev[k, 2], 0)], axis=1)
            ev = ev[~pseudo]
        trace = {"events": _own(ev, rec.ev), "loop_events": loop_events,
                 "addresses": _own(rec.ev_addr[:S[em.S_ADDR]], rec.ev_addr),
                 "texts": list(prog.texts), "warps_per_block": nw,
                 "blocks": order.copy() if blocks is not None else np.arange(nblocks),
                 "arrays": [(i, lay.array_ptr[id(a)], a.nbytes) for i, a in enumerate(args)
                            if isinstance(a, np.ndarray)],
                 "shared": (isa.BASE + lay.sh_off, shared_total),
                 "local": (isa.BASE + lay.loc_off, prog.local_bytes),
                 "program": prog}
    cycles = float(run.warps.clock.max()) if concurrent and slots * nw else None
    return Emulation(kname, gdims, bdims, int(S[em.S_EXEC]), int(S[em.S_THREADS]), wall,
                     per, trace, cycles)


def _check_launch(grid, block, args, shared_bytes) -> tuple:
    """(grid, block) as 3 ints each, within CUDA's limits; TypeError or ValueError naming
    what is not a launch (its threads, its arguments, its dynamic shared memory)."""
    gdims = launch_dims(grid, "grid", MAX_GRID)
    bdims = launch_dims(block, "block", MAX_BLOCK)
    nthreads = bdims[0] * bdims[1] * bdims[2]
    if nthreads > MAX_THREADS:
        raise ValueError(f"block={block!r}: {nthreads} threads; allowed at most "
                         f"{MAX_THREADS}")
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"args={type(args).__name__}: expected a tuple or list of the "
                        "kernel's arguments")
    if isinstance(shared_bytes, bool) or not isinstance(shared_bytes, (int, np.integer)) \
            or shared_bytes < 0:
        raise ValueError(f"shared_bytes={shared_bytes!r}: expected an int >= 0")
    for i, a in enumerate(args):
        if not isinstance(a, (np.ndarray, int, float, complex, bool, np.generic, tuple)):
            raise TypeError(f"args[{i}]: {type(a).__name__} is not supported (numpy "
                            "arrays and numbers are)")
    return gdims, bdims


def _slots(concurrent, resident, nsm, nw, nrun) -> int:
    """The blocks resident at a time: one, or (``concurrent``) ``resident`` (default: as
    many as ``nsm`` SMs hold by the thread limit), at most the blocks run."""
    if not concurrent:
        return 1
    if resident is None:
        resident = nsm * max(1, min(32, 2048 // (32 * nw)))
    if isinstance(resident, bool) or not isinstance(resident, (int, np.integer)) \
            or resident < 1:
        raise ValueError(f"resident={resident!r}: expected an int >= 1 (blocks at a time)")
    return int(min(resident, nrun))


@dataclasses.dataclass
class _Layout:
    """Where everything lies in the emulator's memory (see ``emulator``): module
    globals, each group of the launch's arrays (``segs``) after a guard gap, const,
    param, the resident blocks' shared memory, their threads' local memory."""
    arrays: list
    segs: list              # (lo, hi, [array indices]) host spans (``_segments``)
    seg_off: list           # each span's offset in the buffer
    regions: list           # the global window's valid (start, end) ranges
    array_ptr: dict         # id(array) -> its generic address
    con_off: int
    par_off: int
    sh_off: int
    sh_stride: int
    shared_total: int
    loc_off: int
    total: int

    @classmethod
    def of(cls, prog, args, shared_total, slots, nw):
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        segs = _segments(arrays)
        regions = [(0, prog.global_bytes)] if prog.global_bytes else []
        off = prog.global_bytes
        seg_off, array_ptr = [], {}
        for lo, hi, members in segs:
            # a guard gap of GAP bytes before each array: an index just past one array is
            # outside every array (reported), never in the next
            off = (off + GAP + 255) // 256 * 256
            seg_off.append(off)
            regions.append((off, off + (hi - lo)))
            for i in members:
                array_ptr[id(arrays[i])] = isa.BASE + off + (
                    arrays[i].__array_interface__["data"][0] - lo)
            off += hi - lo
        con_off = (off + 255) // 256 * 256
        par_off = (con_off + prog.const_bytes + 255) // 256 * 256
        sh_off = (par_off + prog.param_bytes + 255) // 256 * 256
        sh_stride = (shared_total + 255) // 256 * 256
        loc_off = (sh_off + slots * sh_stride + 255) // 256 * 256
        total = (loc_off + slots * nw * 32 * prog.local_bytes + 4095) // 4096 * 4096
        return cls(arrays, segs, seg_off, regions, array_ptr, con_off, par_off, sh_off,
                   sh_stride, shared_total, loc_off, total)

    def memory(self, prog, args, argtypes, kname) -> np.ndarray:
        """The buffer as the launch finds it: the arrays' bytes, the module globals'
        initial values, const, and the kernel's parameters as numba passes them (PTX
        text, ``argtypes`` None: arrays by pointer, numbers by value)."""
        M = np.zeros(self.total, dtype=np.uint8)
        for (lo, hi, _), o in zip(self.segs, self.seg_off):
            if hi > lo:
                M[o:o + hi - lo] = np.ctypeslib.as_array((ctypes.c_uint8 * (hi - lo))
                                                         .from_address(lo))
        for goff, var in prog.module_globals:
            if var.init is not None:
                M[goff:goff + len(var.init)] = np.frombuffer(var.init, np.uint8)
        M[self.con_off:self.con_off + prog.const_bytes] = np.frombuffer(prog.const_init,
                                                                        np.uint8)
        if argtypes is None:
            flat = [((self.array_ptr[id(a)], "i") if isinstance(a, np.ndarray) else
                     ((float(a), "f") if isinstance(a, (float, np.floating)) else (int(a), "i")))
                    for a in args]
        else:
            flat = []
            for i, (a, t) in enumerate(zip(args, argtypes)):
                flat += _flatten(a, t, self.array_ptr, i)
        params = _param_bytes(prog, flat, kname)
        M[self.par_off:self.par_off + len(params)] = np.frombuffer(params, np.uint8)
        return M

    def launch_vector(self, prog, gdims, bdims, nsm, record, shared_bytes, nblocks,
                      slots) -> np.ndarray:
        """The launch description ``L`` (``emulator.L_*``)."""
        L = np.zeros(em.L_SIZE, dtype=np.int64)
        L[em.L_GX:em.L_GZ + 1] = gdims
        L[em.L_BX:em.L_BZ + 1] = bdims
        nthreads = bdims[0] * bdims[1] * bdims[2]
        L[em.L_NT], L[em.L_NW], L[em.L_NSLOTS] = nthreads, (nthreads + 31) // 32, prog.nslots
        L[em.L_SH_OFF], L[em.L_SH_SIZE] = self.sh_off, self.shared_total
        L[em.L_LOC_OFF], L[em.L_LOC_SIZE] = self.loc_off, prog.local_bytes
        L[em.L_PAR_OFF], L[em.L_PAR_SIZE] = self.par_off, prog.param_bytes
        L[em.L_CON_OFF], L[em.L_CON_SIZE] = self.con_off, prog.const_bytes
        L[em.L_NSM], L[em.L_CARRY], L[em.L_RECORD] = nsm, prog.carry_slot, int(bool(record))
        L[em.L_DYN_SMEM], L[em.L_NBLOCKS], L[em.L_DEPTH] = shared_bytes, nblocks, DEPTH
        L[em.L_SLOTS], L[em.L_SH_STRIDE] = slots, self.sh_stride
        return L


@dataclasses.dataclass
class _Run:
    """One emulated launch's tables (``emulator``'s named tables) and its calls into
    the interpreter."""
    prog: object            # emulator.Program
    mem: object             # emulator.Memory
    L: np.ndarray
    S: np.ndarray
    E: np.ndarray
    warps: object           # emulator.Warps
    rec: object             # emulator.Record
    units: object           # emulator.Units
    scratch: np.ndarray
    nw: int
    lo: object              # emulator.Loops

    @classmethod
    def start(cls, prog, lay, mem, L, order, nwt, T, record, lo, room=(1 << 16, 1 << 12)):
        tmpl = np.zeros(prog.nslots * 32, dtype=np.int64)
        for s, v in zip(prog.const_slots, prog.const_values):
            tmpl[s * 32:(s + 1) * 32] = v
        R = np.zeros(nwt * prog.nslots * 32, dtype=np.int64)
        warps = em.Warps(R, R.view(np.float32), R.view(np.float64),
                         np.zeros((nwt, DEPTH, 3), dtype=np.int64), np.zeros(nwt, np.int64),
                         np.zeros(nwt, np.int64), np.zeros(nwt if T.size else 0),
                         np.zeros(int(L[em.L_SLOTS]) if T.size else 0, np.int64))
        n = prog.code.shape[0]
        # (the recording's rows are written whole before they are read: no zeroing)
        rec = em.Record(np.zeros(n, np.int64), np.zeros(n, np.int64),
                        np.empty((room[0] if record else 0, 4), dtype=np.int64),
                        np.empty((room[1] if record else 0, 32), dtype=np.int64))
        code = em.Program(prog.code, tmpl, np.array(lay.regions, dtype=np.int64).reshape(-1, 2),
                          order)
        return cls(code, mem, L, np.zeros(em.S_SIZE, np.int64), np.zeros(8, np.int64), warps,
                   rec, em.new_units(T, nwt, int(L[em.L_SLOTS])), np.zeros(32, np.int64),
                   int(L[em.L_NW]), lo)

    def call(self, budget, nrun) -> int:
        return em.run(self.prog, self.mem, self.L, self.S, self.E, self.warps, self.rec,
                      self.units, self.scratch, budget, nrun, self.lo)

    def go(self, decoded, nrun, kname, gdims, bdims, max_record, progress) -> float:
        """Every block, in slices of ``SLICE`` warp-instructions (progress and Ctrl-C
        between them; the trace grown where it filled); the wall seconds. An error: a
        ValueError naming the kernel's PTX line (``decoded``: its ``decode.Program``)."""
        from simulator import jit
        jit.announce("PTX emulator", [em.run])
        # numba compiles the interpreter on its first call (once, cached): a call with no
        # budget compiles it and starts block 0, outside the emulation's wall time
        self.call(0, nrun)
        S, E = self.S, self.E
        limit = None if max_record is None else np.atleast_1d(np.asarray(max_record, np.float64))
        t0 = time.perf_counter()
        while True:
            status = self.call(SLICE, nrun)
            if status == em.DONE:
                break
            if status == em.ERROR:
                E[em.E_WARP] %= self.nw                 # a slot's warp: the block's own warp
                raise ValueError(_error_text(decoded, kname, E, self.L))
            most = None if limit is None else limit[min(int(S[em.S_BLOCK]), len(limit) - 1)]
            if most is not None and S[em.S_EV] > most:
                raise TraceTooLong(int(S[em.S_EV]), int(S[em.S_BLOCK]),
                    f"kernel {kname!r} on grid {gdims} block {bdims}: the {nrun} block(s) "
                    f"traced run more than {most:.0e} PTX warp-instructions (about "
                    f"{S[em.S_EV] / max(1, S[em.S_BLOCK] + 1):.2g} a block so far); "
                    "tracing that many takes minutes and gigabytes -- give the launch "
                    "more blocks, each doing less")
            if status == em.TRACE_FULL:
                ev, ev_addr = self.rec.ev, self.rec.ev_addr
                if S[em.S_EV] >= ev.shape[0]:
                    ev = _doubled(ev, int(S[em.S_EV]))
                if S[em.S_ADDR] >= ev_addr.shape[0]:
                    ev_addr = _doubled(ev_addr, int(S[em.S_ADDR]))
                self.rec = self.rec._replace(ev=ev, ev_addr=ev_addr)
            if progress is not None:
                progress(int(S[em.S_BLOCK]), nrun)
        return time.perf_counter() - t0


def _doubled(a: np.ndarray, used: int) -> np.ndarray:
    """A recording twice ``a``'s rows, its first ``used`` copied (the rest unwritten)."""
    out = np.empty((2 * a.shape[0],) + a.shape[1:], a.dtype)
    out[:used] = a[:used]
    return out


def _own(part: np.ndarray, whole: np.ndarray) -> np.ndarray:
    """``part`` of the recording ``whole`` as the trace keeps it: itself where it is
    most of it (a copy would double the memory for a moment), else a copy (the rest of
    the recording freed)."""
    return part if part.base is None or 2 * part.nbytes >= whole.nbytes else part.copy()


def _block_order(blocks, nblocks) -> np.ndarray:
    """``blocks`` as the interpreter's block order (empty: all, in order); ValueError
    where an id is outside the grid or they are not ascending and distinct."""
    if blocks is None:
        return np.zeros(0, dtype=np.int64)
    order = np.asarray(blocks)
    if order.ndim != 1 or order.size == 0 or not np.issubdtype(order.dtype, np.integer):
        raise ValueError(f"blocks={blocks!r}: expected a non-empty sequence of block ids")
    order = order.astype(np.int64)
    if order[0] < 0 or order[-1] >= nblocks or np.any(np.diff(order) <= 0):
        raise ValueError(f"blocks: ids must be ascending, distinct and in 0..{nblocks - 1}")
    return order


def _error_text(prog, kname, E, L) -> str:
    code, pc, w, lane, addr, b, space = (int(x) for x in E[:7])
    gx, gy = int(L[em.L_GX]), int(L[em.L_GY])
    bx, by = int(L[em.L_BX]), int(L[em.L_BY])
    t = w * 32 + lane
    where = (f"kernel {kname!r}, block ({b % gx}, {(b // gx) % gy}, {b // (gx * gy)}), "
             f"thread ({t % bx}, {(t // bx) % by}, {t // (bx * by)}), PTX line "
             f"{prog.lines[pc]} `{prog.texts[pc]}`")
    spaces = {isa.S_GENERIC: "generic", isa.S_GLOBAL: "global", isa.S_SHARED: "shared",
              isa.S_LOCAL: "local", isa.S_PARAM: "param", isa.S_CONST: "const"}
    if code == em.ERR_OOB:
        return (f"{where}: {spaces.get(space, '?')} address {addr:#x} is outside every "
                "array and variable of the launch (an index out of bounds?)")
    if code == em.ERR_MISALIGNED:
        return f"{where}: misaligned {spaces.get(space, '?')} address {addr:#x}"
    if code == em.ERR_READONLY:
        return f"{where}: store to read-only {spaces.get(space, '?')} memory at {addr:#x}"
    if code == em.ERR_DEPTH:
        return (f"{where}: divergent branches nested deeper than {DEPTH} "
                "(the emulator's SIMT stack)")
    return f"{where}: this instruction's type is not supported by the emulator"


class _Launch:
    """``kernel[grid, block, stream, shared_bytes]`` inside ``emulating()``."""

    def __init__(self, kernel, config, log, options):
        if not isinstance(config, tuple):
            config = (config,)
        if not 2 <= len(config) <= 4:
            raise ValueError(f"kernel[{config!r}]: a launch takes [grid, block] "
                             "(stream and shared bytes optional)")
        self.kernel, self.grid, self.block = kernel, config[0], config[1]
        self.shared = config[3] if len(config) > 3 else 0
        self.log, self.options = log, options

    def __call__(self, *args):
        self.log.append(emulate_kernel(self.kernel, self.grid, self.block, list(args),
                                       shared_bytes=self.shared, **self.options))


class emulating:
    """A context in which numba kernels launched as ``kernel[grid, block](*args)`` run
    on the emulator instead of a GPU (with numpy arrays as their arguments); the
    ``Emulation`` of each launch is appended to the context's ``launches``::

        with emulating() as em:
            my_kernel[blocks, threads](x, out)
        print(em.launches[0].instructions)
    """

    def __init__(self, **options):
        self.options = options
        self.launches: list = []
        self._saved = None

    def __enter__(self):
        log, options = self.launches, self.options

        def getitem(kernel, config):
            return _Launch(kernel, config, log, options)
        self._saved = [(cls, cls.__getitem__) for cls in _kernel_classes()]
        for cls, _ in self._saved:
            cls.__getitem__ = getitem
        return self

    def __exit__(self, *exc):
        for cls, original in self._saved:
            cls.__getitem__ = original
        return False


def _kernel_classes() -> list:
    """The classes of numba's ``@cuda.jit`` kernels: the dispatcher, and the CUDA
    simulator's kernel where the simulator is on (NUMBA_ENABLE_CUDASIM=1)."""
    from simulator.kernelcode.toolchain import simulated
    if simulated():
        from numba.cuda.simulator.kernel import FakeCUDAKernel
        return [FakeCUDAKernel]
    from numba.cuda.dispatcher import CUDADispatcher
    return [CUDADispatcher]

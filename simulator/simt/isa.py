"""The program face of a SIMT kernel: a per-warp instruction stream the engine executes.

A program is a *template* of warp instructions in three sections -- a prologue, a loop
body executed ``trips`` times, an epilogue -- plus two numba functions of the kernel
module that fill in what varies per warp without materialising tensor data:

* ``setup(p, bx, by, bz, w, tv, g)``: when warp ``w`` of block ``(bx, by, bz)`` starts,
  fill its thread-variable table ``tv[g, 32, TV]`` -- what the kernel's prologue computes into
  registers (global indices, divisions by runtime sizes); ``tv[g, lane, 0]`` is 1 for a
  thread that exists, 0 otherwise -- and return how many times the warp runs the body
  (0 skips it);
* ``lanes(p, tv, g, it, stream, out)``: for loop iteration ``it`` and address stream
  ``stream``, each lane's byte address (``-1`` for an inactive lane) written into
  ``out[g, 32]``; returns the number of active lanes.

(``g`` indexes the engine's table of warp slots: rows are passed, never sliced, since a
numba slice costs an atomic reference count.)

``p`` is the program's int64 parameter vector: ``p[0:3]`` the grid, ``p[3:6]`` the block,
then the kernel's own sizes and array base addresses; ``Program.param_names`` names each
entry (``prog.param("layout")``), built with :func:`params`. An instruction with a stream uses
that stream's addresses (memory instructions) or just its active mask (guarded
arithmetic); one whose mask is empty is branched around and never issues, which is how a
warp-uniform ``if`` behaves. An instruction without a stream runs on every thread of the
warp that exists. Branches (``BRA``) issue as instructions of their own.

Global arrays are laid out as ``cudaMalloc`` would: each at a 256-byte aligned base,
one after another from ``GLOBAL_BASE``. Shared-memory streams give byte offsets within
the block's shared memory (for bank conflicts).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from simulator.arguments import show

# opcodes
ALU, FFMA, FMNMX, SFU, BRA, LDG, STG, LDS, STS, BAR, FADD, IMAD, UNI, IMADW, DFMA = range(15)
ATOM, ACAS, RED = range(15, 18)
OP_NAMES = ("ALU", "FFMA", "FMNMX", "SFU", "BRA", "LDG", "STG", "LDS", "STS", "BAR", "FADD", "IMAD",
            "UNI", "IMADW", "DFMA", "ATOM", "ACAS", "RED")
#: the global atomics, served at the L2 by each line's atomic unit (``memory.l2_atomic``):
#: ATOM returns a value (ATOMG.ADD, .MIN, ...), ACAS a compare-and-swap's or an
#: exchange's (the unit's slower rate), RED none (REDG: the result unused)
ATOMICS = (ATOM, ACAS, RED)
#: every instruction that goes through the L1 to the L2 (loads, stores and atomics)
GLOBAL_OPS = (LDG, STG, ATOM, ACAS, RED)
# ALU: integer work on the INT32 pipe (IADD3, LOP3, SHF, ISETP, LEA, SEL, MOV...) where the
# target has one, else on the FP32 pipe; IMAD: integer multiply-adds (and the IMAD.MOV
# moves the compiler puts there) on the FP32 pipe at the INT32 rate; UNI: the uniform
# datapath (U* opcodes, one value per warp): an issue slot and no lane pipe; IMADW: a
# 64-bit IMAD.WIDE (address arithmetic), two passes of the FP32 pipe at the INT32 rate
# where the target has one (on Fermi's presets, which time these sm_90 templates without
# an INT32 rate, an IMAD's one pass at the FP32 rate, as before). Nsight Compute on
# the H100 (scripts/ncu_conv_probe.sh, docs/simt.md): the FMA-heavy pipe is busy 2.38 and
# 2.54 cycles per instruction in conv-direct's NCHW and NHWC loops, as IMAD and FFMA at 2
# and IMAD.WIDE at 4 give from their SASS (2.36, 2.50)
# DFMA: FP64 arithmetic (DFMA, DMUL, DADD, DSETP, DMNMX) on a pipe of its own, the SM's
# fp64_lanes shared by its schedulers (where a preset has none: the FP32 pipe); Nsight
# Compute on the H200 (data/diagnostics/h200/ncu_pipes.csv) counts them on pipe_fp64, busy
# 2 cycles an instruction: 16 lanes a scheduler
NO_REG = -1
TV = 8          # thread-variable columns per lane
GLOBAL_BASE = 1 << 20
ALIGN = 256


@dataclass(frozen=True)
class Stream:
    name: str
    space: str            # "global", "shared" or "mask"
    array: str = ""       # the global array it addresses


class Asm:
    """Builds a template: ``a.alu("i", "i")``, ``a.ldg("x", "s_x", "i")``, ``a.body()``..."""

    def __init__(self):
        self.rows = []
        self.regs = {}
        self.marks = {}

    def _r(self, name):
        if name is None:
            return NO_REG
        return self.regs.setdefault(name, len(self.regs))

    def _emit(self, op, dst=None, srcs=(), stream=-1):
        if len(srcs) > 3:
            raise ValueError("an instruction reads at most 3 registers")
        s = [self._r(x) for x in srcs] + [NO_REG] * (3 - len(srcs))
        self.rows.append((op, self._r(dst), *s, stream))

    def _repeat(self, op, dst, srcs, stream, n):
        for _ in range(n):
            self._emit(op, dst, srcs, stream)

    def alu(self, dst, *srcs, stream=-1, n=1):
        self._repeat(ALU, dst, srcs, stream, n)

    def imad(self, dst, *srcs, stream=-1, n=1, wide=0):
        """``n`` IMAD rows, the last ``wide`` of them IMAD.WIDE (``IMADW``)."""
        if not 0 <= wide <= n:
            raise ValueError(f"wide = {wide}: at most n = {n}")
        self._repeat(IMAD, dst, srcs, stream, n - wide)
        self._repeat(IMADW, dst, srcs, stream, wide)

    def uni(self, dst, *srcs, stream=-1, n=1):
        self._repeat(UNI, dst, srcs, stream, n)

    def block(self, dst, src, alu=0, imad=0, uni=0, bra=0, depth=6, stream=-1, wide=0):
        """Integer work that computes ``dst`` from ``src`` (addresses, bounds tests, loop
        counters) with a critical path of ``depth`` instructions, as compiled code has: the
        ALU and IMAD rows, interleaved, are spread over ``depth`` levels, each level reading
        the one before; the uniform-datapath rows read nothing (loop counters); the
        branches test ``dst`` at the end. ``wide`` of the IMAD rows, spread among them,
        are IMAD.WIDE."""
        if not 0 <= wide <= imad:
            raise ValueError(f"wide = {wide}: at most imad = {imad}")
        kinds = []
        for j in range(alu + imad):          # interleave so each level mixes the two pipes
            kinds.append(IMAD if (j + 1) * imad // (alu + imad) > j * imad // (alu + imad) else ALU)
        at = [i for i, k in enumerate(kinds) if k == IMAD]
        for q in range(wide):                # IMAD.WIDE spread evenly over the IMAD rows
            kinds[at[(2 * q + 1) * len(at) // (2 * wide)]] = IMADW
        n = len(kinds)
        depth = max(1, min(depth, n))
        prev = src
        for j, k in enumerate(kinds):
            level = j * depth // n
            out = dst if level == depth - 1 else f"{dst}~{level}"
            if j and (j - 1) * depth // n != level:
                prev = f"{dst}~{level - 1}"
            self._emit(k, out, (prev,) if prev is not None else (), stream)
        self._repeat(UNI, "u", (), stream, uni)
        self._repeat(BRA, None, (dst,) if n else (), stream, bra)

    def ffma(self, dst, *srcs, stream=-1):
        self._emit(FFMA, dst, srcs, stream)

    def fadd(self, dst, *srcs, stream=-1):
        self._emit(FADD, dst, srcs, stream)

    def fmnmx(self, dst, *srcs, stream=-1):
        self._emit(FMNMX, dst, srcs, stream)

    def sfu(self, dst, *srcs, stream=-1):
        self._emit(SFU, dst, srcs, stream)

    def bra(self, *srcs, stream=-1, n=1):
        self._repeat(BRA, None, srcs, stream, n)

    def ldg(self, dst, stream, *srcs):
        self._emit(LDG, dst, srcs, stream)

    def stg(self, stream, *srcs):
        self._emit(STG, None, srcs, stream)

    def lds(self, dst, stream, *srcs):
        self._emit(LDS, dst, srcs, stream)

    def sts(self, stream, *srcs):
        self._emit(STS, None, srcs, stream)

    def div64(self, dst, src, stream=-1):
        """A 64-bit integer ``//`` or ``%`` by a runtime value (Python's floor semantics) as
        numba-cuda compiles it for sm_90 when both operands fit 32 bits (SASS fast path, the
        mean of im2col's ten): operand tests and two branches, the unsigned 32-bit division
        (I2F, MUFU.RCP, F2I and an IMAD.HI chain with its corrections) and the floor
        correction. 44 instructions: 24 ALU, 14 IMAD, 3 SFU, 2 BRA, 1 uniform."""
        self.alu(dst, src, n=10, stream=stream)   # divisor 0, -1 and 64-bit operand tests
        self.bra(dst, stream=stream, n=2)
        self.sfu(dst, src, stream=stream)         # I2F.U32.RP
        self.alu(dst, src, stream=stream)
        self.sfu(dst, dst, stream=stream)         # MUFU.RCP
        self.alu(dst, dst, stream=stream)         # VIADD
        self.sfu(dst, dst, stream=stream)         # F2I
        self.imad(dst, dst, n=10, stream=stream)  # quotient, remainder
        self.alu(dst, dst, n=6, stream=stream)    # corrections
        self.imad(dst, dst, n=4, stream=stream)
        self.alu(dst, dst, n=6, stream=stream)    # BSYNCs and the floor correction
        self.uni(dst, stream=stream)

    def bar(self):
        self._emit(BAR)

    def body(self):
        self.marks["pro_end"] = len(self.rows)

    def epilogue(self):
        self.marks["body_end"] = len(self.rows)

    def template(self):
        pro_end = self.marks.get("pro_end", len(self.rows))
        body_end = self.marks.get("body_end", len(self.rows))
        t = np.array(self.rows, dtype=np.int64).reshape(-1, 6)
        return t, pro_end, body_end, max(1, len(self.regs))


LAUNCH_PARAMS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z")


def params(launch, **named) -> tuple:
    """(int64 parameter vector, its names): the launch's grid and block, then ``named``
    in the order given -- the one way kernel modules build ``Program.params``."""
    names = LAUNCH_PARAMS + tuple(named)
    values = [*launch.grid, *launch.block, *(int(v) for v in named.values())]
    return np.array(values, np.int64), names


def layout_arrays(sizes):
    """[(name, elements)] -> {name: base byte address}, each 256-byte aligned."""
    bases, at = {}, GLOBAL_BASE
    for name, elements in sizes:
        bases[name] = at
        at += -(-elements * 4 // ALIGN) * ALIGN
    return bases


class NamedParams:
    """A program's parameter vector read by name (``params``, ``param_names``): a template
    program's and a trace program's alike."""

    def param(self, name: str) -> int:
        """A named entry of the parameter vector."""
        try:
            return int(self.params[self.param_names.index(name)])
        except ValueError:
            raise KeyError(f"{self.name} has no parameter {show(name)} "
                           f"(it has {', '.join(self.param_names)})") from None


@dataclass(frozen=True, eq=False, kw_only=True)
class Program(NamedParams):
    """One kernel launch as the engine sees it (built by name: every field a keyword)."""

    name: str                 # kernel algorithm, e.g. "gemm-tiled"
    face: str                 # the kernel module whose numba setup/lanes run it (``dispatch.FACES``)
    launch: object            # Launch
    params: np.ndarray        # int64 parameter vector (see the module doc)
    template: np.ndarray      # (instructions, 6): op, dst, src0, src1, src2, stream
    pro_end: int
    body_end: int
    n_regs: int               # template registers (for the scoreboard)
    streams: tuple            # Stream per stream id
    arrays: tuple             # (name, base bytes, elements) of the global arrays
    regs_per_thread: int
    smem_per_block: int
    resources_source: str     # where regs_per_thread and smem_per_block came from
    flops: int                # useful FLOPs of the operation this launch computes
    min_bytes: int            # compulsory DRAM bytes of this launch
    label: str = ""           # a short description for tables
    notes: tuple = field(default=())
    trip_period: int = 1      # trips after which the body's per-trip work repeats (loop nests)
    param_names: tuple = ()   # the name of each entry of ``params``
    # a loop nest whose work repeats only with the whole nest (trip_period = its trips) but
    # whose innermost loop runs ``inner_period`` alike trips each time round: the sampler
    # may cut that inner loop instead (engine.plan); 0: no such loop
    inner_period: int = 0

    def __post_init__(self):
        self.params.setflags(write=False)
        self.template.setflags(write=False)
        if self.param_names and len(self.param_names) != len(self.params):
            raise ValueError(f"{self.name}: {len(self.param_names)} parameter names for "
                             f"{len(self.params)} parameters")


    @property
    def op_names(self) -> tuple:
        """The name of each opcode its template (and a trace of it) numbers."""
        return OP_NAMES

    def describe(self) -> str:
        g, b = self.launch.grid, self.launch.block
        return f"{self.name} grid {g} block {b}" + (f" ({self.label})" if self.label else "")

    def array_of(self, address: int):
        """(array name, element index) of a global byte address."""
        for name, base, elements in self.arrays:
            if base <= address < base + 4 * elements:
                return name, (address - base) // 4
        raise ValueError(f"address {address} is in no array of {self.name}")


# --- numba helpers shared by the kernels' address functions --------------------------

from numba import njit  # noqa: E402

from . import _stamp  # noqa: E402, F401  (numba caches stamped together)


@njit(cache=True)
def thread_of(p, w, lane):
    """(tx, ty, tz, exists) of lane ``lane`` of warp ``w`` in a block of p[3:6] threads."""
    lin = w * 32 + lane
    bx, by, bz = p[3], p[4], p[5]
    if lin >= bx * by * bz:
        return 0, 0, 0, False
    return lin % bx, (lin // bx) % by, lin // (bx * by), True


@njit(cache=True, inline='always')
def flops(op, active):
    """Useful FLOPs of one warp instruction with ``active`` lanes (FFMA 2 per lane)."""
    n = 0
    if op == FFMA:
        n = 2 * active
    elif op == FMNMX or op == FADD:
        n = active
    return n

"""Which unit each class of instruction holds, for how long, and when its result is
ready: one table, read by the engine's issue (``core``), the analytic model's warp walk
(``walk``) and its scheduler (``scheduler``), and nothing else.

The units: none (a barrier, the uniform datapath's instructions), a scheduler's FP32,
INT32 and FP64 pipes, and the SM's SFU and LD/ST unit, which its schedulers share
(``SM_UNITS``). An instruction holds its unit for a multiple of a rate of the preset
(the hardware vector's ``*_ii`` fields: a warp's cycles on the pipe); where the preset
has no such rate (0: Fermi's presets have no INT32 rate of their own), the row's second
choice holds. A memory access holds the LD/ST unit longer than its rate
by what it moves (its segments and lines, its bank passes: the engine's access rules);
its result waits on the memory system (a global load) or on the shared memory's latency
and passes.

>>> int(PIPES[isa.IMADW, C_TIMES]), HOLDS[int(PIPES[isa.IMADW, C_RATE])]
(2, 'int_ii')
"""
from __future__ import annotations

import numpy as np
from numba import njit

from . import (
    _stamp,  # noqa: F401  (numba caches stamped together)
    isa,
)
from .hwvec import H_ATOMLAT, H_FP64II, H_FPLAT, H_INTII, H_LDSTII, H_SFUII, H_SFULAT, H_SHLAT, H_SPII

#: the units an instruction holds (``NONE``: none)
NONE, SP, INT, FP64, SFU, LDST = range(6)
UNIT_NAMES = ("none", "fp32", "int", "fp64", "sfu", "ldst")
N_UNITS = len(UNIT_NAMES)
#: the units an SM's schedulers share (the others are each scheduler's own)
SM_UNITS = (SFU, LDST)

# a result's latency: none, the FP32 pipe's (every arithmetic class and the uniform
# datapath), the SFU's, shared memory's (and its passes), the memory system's (a load),
# an atomic's round trip (its service at its line's unit added)
LAT_NONE, LAT_FP, LAT_SFU, LAT_SHARED, LAT_LOAD, LAT_ATOM = range(6)

# the hardware vector's rates and latencies the table names (-1: none)
_NO = -1
HOLDS = {H_SPII: "sp_ii", H_INTII: "int_ii", H_FP64II: "fp64_ii", H_SFUII: "sfu_ii",
         H_LDSTII: "ldst_ii"}

#: per opcode (``isa``): the unit and the rate (an ``H_*`` index) times a multiple it
#: holds where the preset has that rate; the unit, rate and multiple it holds where the
#: rate is 0; its result's latency (``LAT_*``)
PIPE_COLUMNS = ("unit", "rate", "times", "else_unit", "else_rate", "else_times", "latency")
C_UNIT, C_RATE, C_TIMES, C_ELSE_UNIT, C_ELSE_RATE, C_ELSE_TIMES, C_LATENCY = range(7)
_ROWS = {
    # integer work on the INT32 pipe where there is one, else on the FP32 pipe
    isa.ALU: (INT, H_INTII, 1, SP, H_SPII, 1, LAT_FP),
    isa.FFMA: (SP, H_SPII, 1, SP, H_SPII, 1, LAT_FP),
    isa.FMNMX: (SP, H_SPII, 1, SP, H_SPII, 1, LAT_FP),
    isa.FADD: (SP, H_SPII, 1, SP, H_SPII, 1, LAT_FP),
    isa.BRA: (SP, H_SPII, 1, SP, H_SPII, 1, LAT_FP),
    isa.SFU: (SFU, H_SFUII, 1, SFU, H_SFUII, 1, LAT_SFU),
    # integer multiply-adds: the FP32 pipe at the INT32 rate; IMAD.WIDE two passes
    isa.IMAD: (SP, H_INTII, 1, SP, H_SPII, 1, LAT_FP),
    isa.IMADW: (SP, H_INTII, 2, SP, H_SPII, 1, LAT_FP),
    # FP64 on a pipe of its own where the target has one
    isa.DFMA: (FP64, H_FP64II, 1, SP, H_SPII, 1, LAT_FP),
    isa.LDG: (LDST, H_LDSTII, 1, LDST, H_LDSTII, 1, LAT_LOAD),
    isa.STG: (LDST, H_LDSTII, 1, LDST, H_LDSTII, 1, LAT_FP),
    isa.LDS: (LDST, H_LDSTII, 1, LDST, H_LDSTII, 1, LAT_SHARED),
    isa.STS: (LDST, H_LDSTII, 1, LDST, H_LDSTII, 1, LAT_SHARED),
    # the global atomics (``memory.l2_atomic``): the LD/ST unit as a global access; a
    # result (ATOM, ACAS) after the round trip to its line's unit and its turn there
    isa.ATOM: (LDST, H_LDSTII, 1, LDST, H_LDSTII, 1, LAT_ATOM),
    isa.ACAS: (LDST, H_LDSTII, 1, LDST, H_LDSTII, 1, LAT_ATOM),
    isa.RED: (LDST, H_LDSTII, 1, LDST, H_LDSTII, 1, LAT_FP),
    isa.BAR: (NONE, _NO, 0, NONE, _NO, 0, LAT_NONE),
    # the uniform datapath: an issue slot, no lane pipe
    isa.UNI: (NONE, _NO, 0, NONE, _NO, 0, LAT_FP),
}
PIPES = np.array([_ROWS[op] for op in range(len(isa.OP_NAMES))], np.int64)
if len(_ROWS) != len(isa.OP_NAMES):
    raise ImportError(f"pipes: opcodes {sorted(set(range(len(isa.OP_NAMES))) - set(_ROWS))} "
                      "have no row")


@njit(cache=True, inline='always')
def unit_of(op, h):
    """The unit an instruction of class ``op`` holds on hardware vector ``h``."""
    r = PIPES[op, C_RATE]
    if r >= 0 and h[r] > 0:
        return PIPES[op, C_UNIT]
    return PIPES[op, C_ELSE_UNIT]


@njit(cache=True, inline='always')
def hold(op, h):
    """The cycles an instruction of class ``op`` holds its unit (``unit_of``) at its
    rate; 0 where it holds none."""
    r = PIPES[op, C_RATE]
    if r >= 0 and h[r] > 0:
        return PIPES[op, C_TIMES] * h[r]
    r = PIPES[op, C_ELSE_RATE]
    return PIPES[op, C_ELSE_TIMES] * h[r] if r >= 0 else 0.0


@njit(cache=True, inline='always')
def latency(op, h, passes, lat_load):
    """The cycles until the result of an instruction of class ``op`` is ready, issued
    alone: a shared access's after its ``passes`` bank passes, a global load's
    ``lat_load`` (the memory system's), an atomic's round trip and ``lat_load`` (its
    service at its line's unit, ``memory.atomic_service``), a barrier's none."""
    k = PIPES[op, C_LATENCY]
    if k == LAT_FP:
        return h[H_FPLAT]
    if k == LAT_SFU:
        return h[H_SFULAT]
    if k == LAT_SHARED:
        return h[H_SHLAT] + h[H_LDSTII] * (passes - 1)
    if k == LAT_LOAD:
        return lat_load
    if k == LAT_ATOM:
        return h[H_ATOMLAT] + lat_load
    return 0.0


@njit(cache=True)
def resolve(h):
    """Per class (rows by ``isa`` opcode), on hardware vector ``h``: the unit it holds
    (``unit_of``), the cycles it holds it (``hold``) and its result's latency issued alone
    with one pass and no load (``latency``). Once a launch: the engine's issue reads them by
    index, where walking the table at each warp it looks at cost it two thirds of its
    time."""
    n = PIPES.shape[0]
    unit = np.empty(n, np.int64)
    held = np.empty(n)
    lat = np.empty(n)
    for op in range(n):
        unit[op] = unit_of(op, h)
        held[op] = hold(op, h)
        lat[op] = latency(op, h, 1, 0.0)
    return unit, held, lat

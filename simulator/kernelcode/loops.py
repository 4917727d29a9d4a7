"""The loops of a decoded entry the emulator may fast-forward (``table``).

A loop here is a backward branch (its latch) and the rows from its target (the header)
to it. The emulator can skip a loop's middle trips -- run the first ones, then move every
register that advances by the same step each trip (an induction variable, an address)
by that step times the trips skipped, and run the last few and what follows for real --
where one comparison decides when the loop ends: the loop has a single exit (its latch
when that is conditional, or one conditional branch out of it), guarded by a predicate
that a ``setp`` in the loop writes from two operands, with no ``and``/``or`` folded in,
on integers. Then that comparison's operands, each trip, say how many trips are left
(``emulator._trips_left``). numba's ``range`` loops are of this kind: a count down to
zero tested by ``setp.gt.s64 %p, %rd, 0`` before the latch's ``@%p bra``.

Only the outermost loops are taken (a loop inside no other): the SIMT engine cuts a
kernel's dominant loop and extrapolates its trips (``timing._loop_cuts``); a skipped
loop it does not cut would have its trips missing from what it times.
``table(code, heads)`` takes only the loops whose header is in ``heads`` where given,
nested or not (the loop the engine cuts may be an inner one: each of its entries then
runs its first trips, skips its middle ones and runs its last).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

# (constants tables imported by name: kept compact)
# isort: off
from simulator.kernelcode.isa import (
    F_D, F_D2, F_G, F_GN, F_OP, F_TY, F_X1, F_X2, OP_BAR, OP_BRA, OP_SETP, T_F16, T_F32,
    T_F64, T_PRED)
# isort: on

#: ``LoopTable.lp`` columns: header row, latch row, the controlling setp's row, the setp
#: result that means "go on" (0 or 1), the controlling branch's row, 1 where a barrier
#: is in the loop (its block's warps skip alike)
LP_HEAD, LP_LATCH, LP_SETP, LP_CONT, LP_EXIT, LP_BAR = range(6)
LP_SIZE = 6


class LoopTable(NamedTuple):
    """Per row: the loop whose latch (``latch_loop``), controlling setp (``setp_loop``)
    or exit branch other than its latch (``exit_loop``) it is (-1: none); per loop,
    ``lp`` (``LP_*``)."""
    latch_loop: np.ndarray
    setp_loop: np.ndarray
    exit_loop: np.ndarray
    lp: np.ndarray


def table(code: np.ndarray, heads=None) -> LoopTable:
    """The fast-forwardable outermost loops of decoded rows ``code`` (``decode.Program.code``);
    ``heads``: only those whose header row is in it (None: all)."""
    n = code.shape[0]
    spans = [(int(code[pc, F_X1]), pc) for pc in range(n)
             if code[pc, F_OP] == OP_BRA and code[pc, F_X1] <= pc]
    if heads is not None:
        # loops named by their headers, nested ones too (the engine cuts an inner loop
        # where the loop around it runs too few trips to cut), the outermost of them
        spans = [(h, lt) for h, lt in spans if h in heads]
    outer = [(h, lt) for h, lt in spans
             if not any(h2 <= h and lt <= lt2 and (h2, lt2) != (h, lt) for h2, lt2 in spans)]
    rows = []
    for h, lt in outer:
        lp = _controlled(code, h, lt)
        if lp is not None:
            rows.append(lp)
    latch_loop = np.full(n, -1, np.int64)
    setp_loop = np.full(n, -1, np.int64)
    exit_loop = np.full(n, -1, np.int64)
    for i, r in enumerate(rows):
        latch_loop[r[LP_LATCH]] = i
        setp_loop[r[LP_SETP]] = i
        if r[LP_EXIT] != r[LP_LATCH]:
            exit_loop[r[LP_EXIT]] = i
    lp = np.array(rows, np.int64).reshape(-1, LP_SIZE)
    return LoopTable(latch_loop, setp_loop, exit_loop, lp)


def _controlled(code, h, lt):
    """The ``LP_*`` row of the loop from header ``h`` to latch ``lt``, or None where one
    integer comparison does not decide its end."""
    inside = range(h, lt + 1)
    exits = [pc for pc in inside if code[pc, F_OP] == OP_BRA and code[pc, F_G] >= 0
             and not (h <= code[pc, F_X1] <= lt)]
    latch_guarded = code[lt, F_G] >= 0
    if latch_guarded and not exits:
        ctrl, cont_taken = lt, True           # bottom-tested: go on when the latch is taken
    elif len(exits) == 1 and not latch_guarded:
        ctrl, cont_taken = exits[0], False    # top-tested: go on when the exit is not taken
    else:
        return None
    g = int(code[ctrl, F_G])
    # the predicate is true when the branch is taken, unless the guard is negated
    cont = int(cont_taken) ^ int(code[ctrl, F_GN] != 0)
    for pc in range(ctrl - 1, h - 1, -1):
        r = code[pc]
        writes = r[F_D] == g or r[F_D2] == g
        if not writes:
            continue
        if r[F_OP] != OP_SETP or r[F_X2] != 0 or r[F_TY] in (T_F16, T_F32, T_F64, T_PRED):
            return None
        if r[F_D2] == g:                      # the complement's destination
            cont ^= 1
        has_bar = bool(np.any(code[h:lt + 1, F_OP] == OP_BAR))
        return [h, lt, pc, cont, ctrl, int(has_bar)]
    return None

"""Control flow of a decoded entry: ptxas's multiply-add contraction within a basic block,
and each block's immediate post-dominator (where a divergent branch reconverges)."""
from __future__ import annotations

# (constants tables imported by name, for numba: kept compact)
# isort: off
from simulator.kernelcode.isa import (
    F_A, F_B, F_C, F_D, F_D2, F_E, F_F, F_G, F_OP, F_TY, F_X1, F_X3, F_X4, OP_ADD, OP_FMA,
    OP_LD, OP_MUL, OP_SUB, OP_UNPACK, T_F32, T_F64)
# isort: on


def contract(rows: list, block_of) -> None:
    """ptxas's contraction: a float ``mul`` and an ``add``/``sub`` that reads it, neither
    with a rounding modifier written, become one fused multiply-add (PTX ISA: "mul/add
    sequences with no rounding modifiers may be optimized to use fused-multiply-add";
    ptxas does so by default, as the SASS's FFMA/DFMA show). Done where the product is
    defined once, read only by that add, in the same basic block, with its factors not
    redefined in between; the add's row becomes an FMA whose ``x1`` says what it
    negates (1: the addend, 2: the product)."""
    defs, uses = {}, {}
    for pc, r in enumerate(rows):
        for f in (F_D, F_D2):
            if r[f] >= 0:
                defs.setdefault(r[f], []).append(pc)
        srcs = [r[f] for f in (F_A, F_B, F_C, F_E, F_F, F_G) if r[f] >= 0]
        if r[F_OP] in (OP_LD, OP_UNPACK):        # (their C, E fields are destinations)
            srcs = [r[F_A]] + ([r[F_G]] if r[F_G] >= 0 else [])
        for x in srcs:
            uses.setdefault(x, []).append(pc)
    for pc, r in enumerate(rows):
        if r[F_OP] not in (OP_ADD, OP_SUB) or r[F_TY] not in (T_F32, T_F64) \
                or r[F_X4] or r[F_G] >= 0:
            continue
        for which, other in ((F_A, F_B), (F_B, F_A)):
            p = r[which]
            if len(defs.get(p, ())) != 1 or len(uses.get(p, ())) != 1:
                continue
            m = defs[p][0]
            mr = rows[m]
            if not (m < pc and mr[F_OP] == OP_MUL and mr[F_TY] == r[F_TY] and not mr[F_X4]
                    and mr[F_G] < 0 and block_of[m] == block_of[pc]):
                continue
            between = {d for k in range(m + 1, pc) for d in (rows[k][F_D], rows[k][F_D2])}
            if mr[F_A] in between or mr[F_B] in between or r[other] in between:
                continue
            neg = 0
            if r[F_OP] == OP_SUB:
                neg = 1 if which == F_A else 2       # p - c: -c; c - p: -p
            r[F_OP], r[F_A], r[F_B], r[F_C], r[F_X1] = OP_FMA, mr[F_A], mr[F_B], r[other], neg
            r[F_X3] = 0
            break


def post_dominators(nblocks: int, succ: list) -> list:
    """Immediate post-dominator of each block (index nblocks is the virtual exit)."""
    exit_ = nblocks
    full = (1 << (nblocks + 1)) - 1
    pdom = [full] * nblocks + [1 << exit_]
    changed = True
    while changed:
        changed = False
        for b in range(nblocks - 1, -1, -1):
            inter = full
            for s in succ[b]:
                inter &= pdom[s]
            new = inter | (1 << b)
            if new != pdom[b]:
                pdom[b], changed = new, True
    ipdom = []
    for b in range(nblocks):
        strict = pdom[b] & ~(1 << b)
        best, best_size = exit_, -1
        x = strict
        while x:
            low = x & -x
            k = low.bit_length() - 1
            x ^= low
            size = bin(pdom[k]).count("1")
            if size > best_size and pdom[k] != full:
                best, best_size = k, size
        ipdom.append(best)
    return ipdom

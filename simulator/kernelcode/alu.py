"""The emulator's register-to-register instructions, over a warp's active lanes.

``alu(row, R, RF32, RF64, base, mask, carry)`` executes one decoded row (arithmetic,
logic, comparisons, conversions, moves, the float functions) for every lane set in
``mask``; ``base`` is the warp's first register cell (slot ``s`` of lane ``l`` is cell
``base + 32 * s + l``). Returns 0, or an error code for a combination the decoder let
through but the emulator does not implement.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit

# (constants tables imported by name, for numba: kept compact)
# isort: off
from simulator.kernelcode.isa import (
    F_A, F_B, F_C, F_D, F_D2, F_E, F_OP, F_TY, F_X1, F_X2, F_X3, OP_ABS, OP_ADD, OP_ADDC,
    OP_AND, OP_BFE, OP_BFI, OP_BFIND, OP_BREV, OP_CLZ, OP_CNOT, OP_COPYSIGN, OP_COS, OP_CVT,
    OP_DIV, OP_EX2, OP_FMA, OP_LG2, OP_LOP3, OP_MAD, OP_MADC, OP_MAX, OP_MIN, OP_MOV, OP_MUL,
    OP_NEG, OP_NOT, OP_OR, OP_PACK, OP_POPC, OP_PRMT, OP_RCP, OP_REM, OP_RSQRT, OP_SELP,
    OP_SETP, OP_SHL, OP_SHR, OP_SIN, OP_SQRT, OP_SUB, OP_SUBC, OP_TANH, OP_TESTP, OP_UNPACK,
    OP_XOR, T_F32, T_F64, T_PRED, T_S64, T_U64)
# isort: on
# (constants tables imported by name, for numba: kept compact)
# isort: off
from simulator.kernelcode.lanes import (
    M32, MIN64, bfe, bfi, bfind, bits_of, brev, clz, compare, float_to_int, fma64, fmax, fmin,
    idiv, int_to_float, irem, is_signed, ival, lop3, mulhi_s64, mulhi_u64, popc, prmt,
    round_f32, saturate, shr, to_integral, ult64)
# isort: on

ERR_UNSUPPORTED = 5


@njit(cache=True, inline="always")
def fget(RF32, RF64, cell, ty):
    if ty == T_F32:
        return np.float64(RF32[2 * cell])
    return RF64[cell]


@njit(cache=True, inline="always")
def fput(R, RF32, RF64, cell, ty, x, mode):
    if ty == T_F32:
        R[cell] = 0
        RF32[2 * cell] = round_f32(x, mode) if mode >= 5 else np.float32(x)
    else:
        RF64[cell] = x


@njit(cache=True)
def _float_binary(op, x, y):
    if op == OP_ADD:
        return x + y
    if op == OP_SUB:
        return x - y
    if op == OP_MUL:
        return x * y
    if op == OP_DIV:
        return x / y
    if op == OP_MIN:
        return fmin(x, y)
    if op == OP_MAX:
        return fmax(x, y)
    return math.copysign(y, x)     # OP_COPYSIGN: |b| with the sign of a


@njit(cache=True)
def _float_unary(op, x, ty):
    if op == OP_ABS:
        return abs(x)
    if op == OP_NEG:
        return -x
    if op == OP_SQRT:
        return math.sqrt(x) if x >= 0.0 else (x if x != x else np.nan)
    if op == OP_RCP:
        return 1.0 / x
    if op == OP_RSQRT:
        return 1.0 / math.sqrt(x) if x > 0.0 else (np.inf if x == 0.0 else np.nan)
    if op == OP_EX2:
        return 2.0 ** x if x < 1100.0 else np.inf
    if op == OP_LG2:
        if x < 0.0 or x != x:
            return np.nan
        return -np.inf if x == 0.0 else math.log2(x)
    if op == OP_SIN:
        return math.sin(x) if not math.isinf(x) else np.nan
    if op == OP_COS:
        return math.cos(x) if not math.isinf(x) else np.nan
    return math.tanh(x)


@njit(cache=True)
def _int_binary(op, a, b, ty):
    if op == OP_ADD:
        return a + b
    if op == OP_SUB:
        return a - b
    if op == OP_DIV:
        return idiv(a, b, ty)
    if op == OP_REM:
        return irem(a, b, ty)
    if op == OP_AND:
        return a & b
    if op == OP_OR:
        return a | b
    if op == OP_XOR:
        return a ^ b
    if op == OP_MIN or op == OP_MAX:
        less = ult64(a, b) if ty == T_U64 else a < b
        if op == OP_MIN:
            return a if less else b
        return b if less else a
    if op == OP_SHL:
        s = b & M32
        return 0 if s >= bits_of(ty) else a << s
    if op == OP_SHR:
        return shr(a, b & M32, ty)
    return 0


@njit(cache=True)
def _carry_add(a, b, cin, ty):
    """(sum, carry out) of unsigned a + b + cin in the type's width."""
    if bits_of(ty) == 32:
        s = (a & M32) + (b & M32) + cin
        return s, (s >> 32) & 1
    s = a + b + cin
    carry = 1 if (ult64(s, a) or (cin == 1 and s == a)) else 0
    return s, carry


@njit(cache=True)
def _mul(a, b, ty, mode):
    """mul.lo / .hi / .wide of two values read as ``ty``."""
    w = bits_of(ty)
    if mode == 0:
        return a * b
    if mode == 2:
        return a * b                                   # 16x16 or 32x32: exact in int64
    if w == 64:
        return mulhi_s64(a, b) if is_signed(ty) else mulhi_u64(a, b)
    if is_signed(ty):
        return (a * b) >> w
    return np.int64(np.uint64(a) * np.uint64(b) >> np.uint64(w))


@njit(cache=True)
def alu(row, R, RF32, RF64, base, mask, carry):
    """One decoded row over the lanes of ``mask`` (see the module's docstring): a move, a
    predicate's compare or select, a conversion (``_cvt``), a float operation
    (``_float``), integer arithmetic with a carry (``_carry``) or any other integer and
    bit operation (``_int``); 0, or ``ERR_UNSUPPORTED``. (One call a family, each with
    its own loop over the lanes: the family is chosen once an instruction.)"""
    op, ty = row[F_OP], row[F_TY]
    isf = ty == T_F32 or ty == T_F64
    status = 0
    if op == OP_MOV or op == OP_SELP:
        cd, ca, cb, cc = base + 32 * row[F_D], base + 32 * row[F_A], base + 32 * row[F_B], \
            base + 32 * row[F_C]
        neg = row[F_X3] != 0
        for l in range(32):
            if (mask >> l) & 1:
                if op == OP_MOV or (R[cc + l] != 0) != neg:
                    R[cd + l] = R[ca + l]
                else:
                    R[cd + l] = R[cb + l]
    elif op == OP_SETP:
        _setp(row, R, RF32, RF64, base, mask, isf)
    elif op == OP_CVT:
        _cvt(row, R, RF32, RF64, base, mask)
    elif isf or op == OP_FMA or op == OP_TESTP:
        status = _float(row, R, RF32, RF64, base, mask, isf)
    elif op == OP_MUL or op == OP_MAD or op == OP_MADC or op == OP_ADDC or op == OP_SUBC \
            or ((op == OP_ADD or op == OP_SUB) and row[F_X2] != 0):
        _carry(row, R, base, mask, base + 32 * carry)
    else:
        _int(row, R, base, mask)
    return status


@njit(cache=True)
def _setp(row, R, RF32, RF64, base, mask, isf):
    """setp: the comparison (``x1``) of a and b, combined (``x2``: and, or, xor) with the
    predicate c (negated by ``x3``), into d and its complement into d2."""
    ty, x1, x2, x3 = row[F_TY], row[F_X1], row[F_X2], row[F_X3]
    ca, cb, cc = base + 32 * row[F_A], base + 32 * row[F_B], base + 32 * row[F_C]
    cd, d2 = base + 32 * row[F_D], row[F_D2]
    cd2 = base + 32 * d2
    for l in range(32):
        if not (mask >> l) & 1:
            continue
        if isf:
            x, y = fget(RF32, RF64, ca + l, ty), fget(RF32, RF64, cb + l, ty)
            r = compare(x1, x, y, x != x or y != y)
        else:
            x, y = ival(R[ca + l], ty), ival(R[cb + l], ty)
            if ty == T_U64:
                x, y = x ^ MIN64, y ^ MIN64
            r = compare(x1, x, y, False)
        q = not r
        if x2 != 0:
            p = (R[cc + l] != 0) != (x3 != 0)
            r = (r and p) if x2 == 1 else ((r or p) if x2 == 2 else (r != p))
            q = (q and p) if x2 == 1 else ((q or p) if x2 == 2 else (q != p))
        R[cd + l] = 1 if r else 0
        if d2 >= 0:
            R[cd2 + l] = 1 if q else 0


@njit(cache=True)
def _cvt(row, R, RF32, RF64, base, mask):
    """cvt from type ``x1`` to the row's type, rounding ``x2``, saturating where ``x3``."""
    dty, sty, mode, x3 = row[F_TY], row[F_X1], row[F_X2], row[F_X3]
    cd, ca = base + 32 * row[F_D], base + 32 * row[F_A]
    dflt = dty == T_F32 or dty == T_F64
    sflt = sty == T_F32 or sty == T_F64
    for l in range(32):
        if not (mask >> l) & 1:
            continue
        if dflt and sflt:
            x = fget(RF32, RF64, ca + l, sty)
            if mode >= 1 and mode <= 4:
                x = to_integral(x, mode)
            if x3 != 0:
                x = 0.0 if (x != x or x < 0.0) else min(x, 1.0)
            fput(R, RF32, RF64, cd + l, dty, x, mode if mode >= 5 else 0)
        elif dflt:
            fput(R, RF32, RF64, cd + l, dty, int_to_float(R[ca + l], sty), mode if mode >= 5 else 0)
        elif sflt:
            R[cd + l] = float_to_int(fget(RF32, RF64, ca + l, sty), dty, mode)
        else:
            v = ival(R[ca + l], sty)
            if sty == T_U64 and v < 0 and x3 != 0:
                v = -(MIN64 + 1)   # a huge unsigned value saturates high
            R[cd + l] = saturate(v, dty) if x3 != 0 else v


@njit(cache=True)
def _float(row, R, RF32, RF64, base, mask, isf):
    """A float binary or unary operation, fma (``x1``: negated a and c) or testp
    (``x1``: the property), rounded by ``x3``; 0, or ``ERR_UNSUPPORTED`` for another
    float op."""
    op, ty, x1, x3 = row[F_OP], row[F_TY], row[F_X1], row[F_X3]
    cd, ca = base + 32 * row[F_D], base + 32 * row[F_A]
    cb, cc = base + 32 * row[F_B], base + 32 * row[F_C]
    binary = isf and (op == OP_ADD or op == OP_SUB or op == OP_MUL or op == OP_DIV
                      or op == OP_MIN or op == OP_MAX or op == OP_COPYSIGN)
    unary = isf and (op == OP_ABS or op == OP_NEG or op == OP_SQRT or op == OP_RCP
                     or op == OP_RSQRT or op == OP_EX2 or op == OP_LG2 or op == OP_SIN
                     or op == OP_COS or op == OP_TANH)
    if not (binary or unary or op == OP_FMA or op == OP_TESTP):
        return ERR_UNSUPPORTED
    tiny = 1.1754943508222875e-38 if ty == T_F32 else 2.2250738585072014e-308
    for l in range(32):
        if not (mask >> l) & 1:
            continue
        if binary:
            r = _float_binary(op, fget(RF32, RF64, ca + l, ty), fget(RF32, RF64, cb + l, ty))
            fput(R, RF32, RF64, cd + l, ty, r, x3)
        elif op == OP_FMA:
            fa = fget(RF32, RF64, ca + l, ty)
            fc = fget(RF32, RF64, cc + l, ty)
            if x1 & 2:
                fa = -fa
            if x1 & 1:
                fc = -fc
            fput(R, RF32, RF64, cd + l, ty, fma64(fa, fget(RF32, RF64, cb + l, ty), fc), x3)
        elif unary:
            fput(R, RF32, RF64, cd + l, ty, _float_unary(op, fget(RF32, RF64, ca + l, ty), ty), x3)
        else:
            x = fget(RF32, RF64, ca + l, ty)
            finite = not (math.isinf(x) or x != x)
            if x1 == 0:
                r = finite
            elif x1 == 1:
                r = math.isinf(x)
            elif x1 == 2:
                r = x == x
            elif x1 == 3:
                r = x != x
            elif x1 == 4:
                r = finite and abs(x) >= tiny
            else:
                r = finite and x != 0.0 and abs(x) < tiny
            R[cd + l] = 1 if r else 0
    return 0


@njit(cache=True)
def _carry(row, R, base, mask, cf):
    """Integer mul, mad, madc, addc, subc, and add/sub setting the carry (``x2``): the
    carry (and borrow) in the warp's carry slot ``cf``."""
    op, ty, x1, x2 = row[F_OP], row[F_TY], row[F_X1], row[F_X2]
    cd, ca = base + 32 * row[F_D], base + 32 * row[F_A]
    cb, cc = base + 32 * row[F_B], base + 32 * row[F_C]
    cty = ty
    if x1 == 2:
        cty = T_S64 if is_signed(ty) else T_U64
    for l in range(32):
        if not (mask >> l) & 1:
            continue
        if op == OP_MUL:
            R[cd + l] = _mul(ival(R[ca + l], ty), ival(R[cb + l], ty), ty, x1)
        elif op == OP_MAD or op == OP_MADC:
            p = _mul(ival(R[ca + l], ty), ival(R[cb + l], ty), ty, x1)
            cin = R[cf + l] if op == OP_MADC else 0
            if x2 != 0 or op == OP_MADC:
                s, co = _carry_add(p, ival(R[cc + l], cty), cin, cty if x1 == 2 else ty)
                R[cd + l] = s
                if x2 != 0:
                    R[cf + l] = co
            else:
                R[cd + l] = p + ival(R[cc + l], cty)
        else:
            cin = R[cf + l] if (op == OP_ADDC or op == OP_SUBC) else 0
            av, bv = ival(R[ca + l], ty), ival(R[cb + l], ty)
            if op == OP_SUB or op == OP_SUBC:
                # a - b - borrow == a + ~b + (1 - borrow), carry == not borrow
                s, co = _carry_add(av, ~bv, 1 - cin if op == OP_SUBC else 1, ty)
                R[cd + l] = s
                if x2 != 0:
                    R[cf + l] = 1 - co
            else:
                s, co = _carry_add(av, bv, cin, ty)
                R[cd + l] = s
                if x2 != 0:
                    R[cf + l] = co


@njit(cache=True)
def _int(row, R, base, mask):
    """Predicate logic, integer unary and binary operations, bit operations, pack and
    unpack."""
    op, ty = row[F_OP], row[F_TY]
    cd, ca = base + 32 * row[F_D], base + 32 * row[F_A]
    if ty == T_PRED or op == OP_PACK or op == OP_UNPACK:
        _int_other(row, R, base, mask)
        return
    cb, cc = base + 32 * row[F_B], base + 32 * row[F_C]
    x1 = row[F_X1]
    for l in range(32):
        if not (mask >> l) & 1:
            continue
        a = R[ca + l]
        if op == OP_NOT:
            R[cd + l] = ~a
        elif op == OP_CNOT:
            R[cd + l] = 1 if ival(a, ty) == 0 else 0
        elif op == OP_ABS:
            R[cd + l] = abs(ival(a, ty))
        elif op == OP_NEG:
            R[cd + l] = -ival(a, ty)
        elif op == OP_POPC:
            R[cd + l] = popc(a, x1)
        elif op == OP_CLZ:
            R[cd + l] = clz(a, x1)
        elif op == OP_BFIND:
            R[cd + l] = bfind(a, ty, x1)
        elif op == OP_BREV:
            R[cd + l] = brev(a, bits_of(ty))
        elif op == OP_BFE:
            R[cd + l] = bfe(a, R[cb + l], R[cc + l], ty)
        elif op == OP_BFI:
            R[cd + l] = bfi(a, R[cb + l], R[cc + l], R[base + 32 * row[F_E] + l], ty)
        elif op == OP_PRMT:
            R[cd + l] = prmt(a & M32, R[cb + l] & M32, R[cc + l])
        elif op == OP_LOP3:
            R[cd + l] = lop3(a, R[cb + l], R[cc + l], x1)
        elif op == OP_SHR:
            R[cd + l] = shr(a, R[cb + l] & M32, ty)
        elif op == OP_SHL:
            R[cd + l] = _int_binary(op, ival(a, ty), R[cb + l], ty)
        else:
            R[cd + l] = _int_binary(op, ival(a, ty), ival(R[cb + l], ty), ty)


@njit(cache=True)
def _int_other(row, R, base, mask):
    """Predicate logic (not, and, or, xor), pack and unpack."""
    op, ty, x1, x2 = row[F_OP], row[F_TY], row[F_X1], row[F_X2]
    cd, ca = base + 32 * row[F_D], base + 32 * row[F_A]
    cb, cc, ce = base + 32 * row[F_B], base + 32 * row[F_C], base + 32 * row[F_E]
    cd2 = base + 32 * row[F_D2]
    w = x1
    m = 0
    if op == OP_PACK or op == OP_UNPACK:
        m = -1 if w == 64 else (1 << w) - 1
    for l in range(32):
        if not (mask >> l) & 1:
            continue
        if ty == T_PRED:
            pa = R[ca + l] != 0
            if op == OP_NOT:
                r = not pa
            else:
                pb = R[cb + l] != 0
                r = (pa and pb) if op == OP_AND else ((pa or pb) if op == OP_OR else pa != pb)
            R[cd + l] = 1 if r else 0
        elif op == OP_PACK:
            v = R[ca + l] & m
            if x2 > 1:
                v |= (R[cb + l] & m) << w
            if x2 > 2:
                v |= (R[cc + l] & m) << (2 * w)
            if x2 > 3:
                v |= (R[ce + l] & m) << (3 * w)
            R[cd + l] = v
        else:
            v = R[ca + l]
            R[cd + l] = v & m
            if x2 > 1:
                R[cd2 + l] = shr(v, w, T_U64) & m
            if x2 > 2:
                R[cc + l] = shr(v, 2 * w, T_U64) & m
            if x2 > 3:
                R[ce + l] = shr(v, 3 * w, T_U64) & m

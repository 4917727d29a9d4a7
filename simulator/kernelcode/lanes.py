"""Per-lane arithmetic of the PTX emulator: integer reads by type, unsigned 64-bit
operations on int64, 128-bit products, PTX's conversions and rounding, all compiled
by numba and called from the interpreter (``simulator.kernelcode.emulator``).

Registers hold raw bits in int64 cells: an instruction's type says how to read them
(``ival``: a 32-bit signed read sign-extends the low half, an unsigned one masks it).
fp32 operations are computed in float64 and rounded once to float32; for +, -, *, /
and sqrt this gives the correctly rounded fp32 result (a double holds more than
2p + 2 bits of a p-bit product or quotient), so those are bit-exact; ``fma`` uses
LLVM's fused multiply-add. The ``.approx`` functions (ex2, lg2, sin, cos, rsqrt, tanh)
are computed to full precision: the GPU's differ in the last bits.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from simulator.kernelcode.isa import ROUND, T_F32, T_S8, T_S16, T_S32, T_S64, T_U8, T_U16, T_U32, T_U64

MIN64 = -(1 << 63)
M32 = 0xFFFFFFFF
R_RN, R_RNI, R_RZI, R_RMI, R_RPI, R_RZ, R_RM, R_RP = (ROUND[k] for k in (
    "rn", "rni", "rzi", "rmi", "rpi", "rz", "rm", "rp"))


@intrinsic
def fma64(typingctx, a, b, c):
    """LLVM's fused multiply-add of three float64 values: one rounding."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        return builder.fma(*args)
    return sig, codegen


@njit(cache=True, inline="always")
def ival(v, ty):
    """The integer value of register bits ``v`` read as type ``ty``."""
    if ty == T_U32:
        return v & M32
    if ty == T_S32:
        return (v << 32) >> 32
    if ty == T_U16:
        return v & 0xFFFF
    if ty == T_S16:
        return (v << 48) >> 48
    if ty == T_U8:
        return v & 0xFF
    if ty == T_S8:
        return (v << 56) >> 56
    return v


@njit(cache=True, inline="always")
def bits_of(ty) -> int:
    if ty == T_U8 or ty == T_S8:
        return 8
    if ty == T_U16 or ty == T_S16:
        return 16
    if ty == T_U32 or ty == T_S32 or ty == T_F32:
        return 32
    return 64


@njit(cache=True, inline="always")
def is_signed(ty) -> bool:
    return ty == T_S8 or ty == T_S16 or ty == T_S32 or ty == T_S64


@njit(cache=True, inline="always")
def ult64(a, b) -> bool:
    """a < b as unsigned 64-bit integers."""
    return (a ^ MIN64) < (b ^ MIN64)


@njit(cache=True)
def mulhi_u64(a, b):
    """High 64 bits of the unsigned 128-bit product of two 64-bit patterns."""
    ua, ub = np.uint64(a), np.uint64(b)
    m = np.uint64(M32)
    s32 = np.uint64(32)
    a0, a1 = ua & m, ua >> s32
    b0, b1 = ub & m, ub >> s32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> s32) + (p01 & m) + (p10 & m)
    hi = p11 + (p01 >> s32) + (p10 >> s32) + (mid >> s32)
    return np.int64(hi)


@njit(cache=True)
def mulhi_s64(a, b):
    hi = mulhi_u64(a, b)
    if a < 0:
        hi -= b
    if b < 0:
        hi -= a
    return hi


@njit(cache=True)
def shr(v, s, ty):
    """PTX shr: arithmetic for signed types, logical otherwise; shifts past the width
    give the sign fill or zero."""
    w = bits_of(ty)
    x = ival(v, ty)
    if is_signed(ty):
        return x >> min(s, 63)
    if s >= w:
        return 0
    if w == 64:
        if s == 0:
            return x
        return (x >> s) & ((1 << (64 - s)) - 1)
    return x >> s


@njit(cache=True)
def idiv(a, b, ty):
    """PTX integer division (truncating; a zero divisor gives all ones)."""
    if b == 0:
        return -1
    if is_signed(ty):
        if ty == T_S64 and a == MIN64 and b == -1:
            return MIN64
        q = abs(a) // abs(b)
        return -q if (a < 0) != (b < 0) else q
    if ty == T_U64:
        return np.int64(np.uint64(a) // np.uint64(b))
    return a // b


@njit(cache=True)
def irem(a, b, ty):
    if b == 0:
        return a
    if is_signed(ty):
        if ty == T_S64 and a == MIN64 and b == -1:
            return 0
        r = abs(a) % abs(b)
        return -r if a < 0 else r
    if ty == T_U64:
        return np.int64(np.uint64(a) % np.uint64(b))
    return a % b


@njit(cache=True)
def popc(v, w):
    x = np.uint64(v)
    if w < 64:
        x &= np.uint64((1 << w) - 1)
    n = 0
    while x:
        x &= x - np.uint64(1)
        n += 1
    return n


@njit(cache=True)
def clz(v, w):
    x = np.uint64(v)
    if w < 64:
        x &= np.uint64((1 << w) - 1)
    n = w
    while x:
        x >>= np.uint64(1)
        n -= 1
    return n


@njit(cache=True)
def bfind(v, ty, shiftamt):
    """PTX bfind: the bit position of the most significant bit that differs from the
    sign (unsigned: the highest 1), all ones where there is none; with .shiftamt the
    left shift that brings it to the top."""
    w = bits_of(ty)
    x = ival(v, ty)
    if is_signed(ty) and x < 0:
        x = ~x
    if w < 64:
        x &= (1 << w) - 1
    pos = -1
    for i in range(w - 1, -1, -1):
        if (x >> i) & 1:
            pos = i
            break
    if pos < 0:
        return M32 if w == 32 else -1
    return (w - 1 - pos) if shiftamt else pos


@njit(cache=True)
def brev(v, w):
    out = 0
    for i in range(w):
        if (v >> i) & 1:
            out |= 1 << (w - 1 - i)
    return out


@njit(cache=True)
def bfe(a, pos, length, ty):
    w = bits_of(ty)
    pos &= 0xFF
    length &= 0xFF
    msb = w - 1
    if is_signed(ty):
        top = pos + length - 1
        if length == 0:
            sbit = 0
        elif top >= msb:
            sbit = (a >> msb) & 1
        else:
            sbit = (a >> top) & 1
    else:
        sbit = 0
    out = 0
    for i in range(w):
        if i < length and pos + i <= msb:
            bit = (a >> (pos + i)) & 1
        else:
            bit = sbit
        out |= bit << i
    return out


@njit(cache=True)
def bfi(f, b, pos, length, ty):
    w = bits_of(ty)
    pos &= 0xFF
    length &= 0xFF
    out = b
    for i in range(length):
        if pos + i >= w:
            break
        bit = (f >> i) & 1
        out = (out & ~(1 << (pos + i))) | (bit << (pos + i))
    return out


@njit(cache=True)
def prmt(a, b, c):
    out = 0
    for i in range(4):
        s = (c >> (4 * i)) & 0xF
        k = s & 7
        byte = ((a >> (8 * k)) & 0xFF) if k < 4 else ((b >> (8 * (k - 4))) & 0xFF)
        if s & 8:
            byte = 0xFF if byte & 0x80 else 0
        out |= byte << (8 * i)
    return out


@njit(cache=True)
def lop3(a, b, c, lut):
    out = 0
    for k in range(8):
        if (lut >> k) & 1:
            ta = a if k & 4 else ~a
            tb = b if k & 2 else ~b
            tc = c if k & 1 else ~c
            out |= ta & tb & tc
    return out & M32


@njit(cache=True)
def round_f32(x, mode):
    """float64 ``x`` rounded to float32 in PTX rounding ``mode`` (rn, rz, rm, rp)."""
    r = np.float32(x)
    if mode == R_RZ or mode == R_RZI:
        if abs(np.float64(r)) > abs(x):
            r = np.nextafter(r, np.float32(0.0))
    elif mode == R_RM or mode == R_RMI:
        if np.float64(r) > x:
            r = np.nextafter(r, np.float32(-np.inf))
    elif mode == R_RP or mode == R_RPI:
        if np.float64(r) < x:
            r = np.nextafter(r, np.float32(np.inf))
    return r


@njit(cache=True)
def rint_even(x):
    r = math.floor(x)
    d = x - r
    if d > 0.5 or (d == 0.5 and r % 2.0 != 0.0):
        r += 1.0
    return r


@njit(cache=True)
def to_integral(x, mode):
    """A float rounded to an integral value by cvt's .rni/.rzi/.rmi/.rpi."""
    if math.isnan(x) or math.isinf(x):
        return x
    if mode == R_RZI:
        return float(math.trunc(x))
    if mode == R_RMI:
        return math.floor(x)
    if mode == R_RPI:
        return math.ceil(x)
    return rint_even(x)


@njit(cache=True)
def float_to_int(x, ty, mode):
    """cvt from a float to an integer type: rounded by ``mode`` (rzi by default for
    PTX's float-to-int), saturated to the type's range, NaN to 0."""
    if math.isnan(x):
        return 0
    r = to_integral(x, mode if mode != 0 else R_RZI)
    w = bits_of(ty)
    if is_signed(ty):
        lo = -float(1 << (w - 1)) if w < 64 else -9.223372036854775808e18
        hi = float((1 << (w - 1)) - 1) if w < 64 else 9.223372036854775807e18
        if r <= lo:
            return -(1 << (w - 1)) if w < 64 else MIN64
        if r >= hi:
            return (1 << (w - 1)) - 1 if w < 64 else -(MIN64 + 1)
        return np.int64(r)
    if r <= 0.0:
        return 0
    if w == 64:
        if r >= 1.8446744073709552e19:
            return -1
        return np.int64(np.uint64(r))
    hi = float((1 << w) - 1)
    if r >= hi:
        return (1 << w) - 1
    return np.int64(r)


@njit(cache=True)
def int_to_float(v, sty):
    """An integer register read as ``sty``, as a float64 (exact below 2**53; the caller
    rounds to float32 where the target is f32)."""
    if sty == T_U64 and v < 0:
        return float(np.uint64(v))
    return float(ival(v, sty))


@njit(cache=True)
def saturate(ival_, ty):
    w = bits_of(ty)
    if is_signed(ty):
        lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    else:
        lo, hi = 0, (1 << w) - 1
    return min(max(ival_, lo), hi)


@njit(cache=True)
def fmin(a, b):
    if a != a:
        return b
    if b != b:
        return a
    if a == 0.0 and b == 0.0:
        return a if math.copysign(1.0, a) < 0 else b
    return a if a < b else b


@njit(cache=True)
def fmax(a, b):
    if a != a:
        return b
    if b != b:
        return a
    if a == 0.0 and b == 0.0:
        return b if math.copysign(1.0, a) < 0 else a
    return a if a > b else b


@njit(cache=True)
def compare(cmp, x, y, unordered_nan):
    """setp's comparison ``cmp`` (decode.CMP order) of two numbers; ``unordered_nan``
    whether either is NaN (floats)."""
    if cmp == 16:          # num
        return not unordered_nan
    if cmp == 17:          # nan
        return unordered_nan
    if cmp >= 10:          # equ .. geu: true where unordered
        if unordered_nan:
            return True
        cmp -= 10
    elif unordered_nan:
        return False
    if cmp == 0:
        return x == y
    if cmp == 1:
        return x != y
    if cmp == 2 or cmp == 6:
        return x < y
    if cmp == 3 or cmp == 7:
        return x <= y
    if cmp == 4 or cmp == 8:
        return x > y
    return x >= y


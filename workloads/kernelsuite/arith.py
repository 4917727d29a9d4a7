"""Arithmetic: float64, int64 and 32-bit integer operations, float32 math
functions, float64 libdevice calls, fastmath."""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, int32, uint32, uint64

from .base import Case, cdiv, p2, sized

# ---------------------------------------------------------------------------------------
# fp64, int64 and 32-bit integer arithmetic
# ---------------------------------------------------------------------------------------

@cuda.jit
def axpy_poly_f64(a, x, y, coeffs, p):
    """float64: y = a x + y, and p = the polynomial with coefficients ``coeffs`` (highest
    degree first) at x, by Horner's rule."""
    i = cuda.grid(1)
    if i < x.size:
        xi = x[i]
        y[i] = a * xi + y[i]
        acc = 0.0
        for k in range(coeffs.size):
            acc = acc * xi + coeffs[k]
        p[i] = acc


def _setup_axpy_poly(rng, small=False, **size):
    n, block = sized(size, small, dict(n=100, block=32), dict(n=3000, block=256))
    x = rng.uniform(-1.5, 1.5, n)
    y = rng.standard_normal(n)
    coeffs = np.array([0.5, -1.25, 2.0, 0.75, -3.0, 1.0])
    return ((cdiv(n, block),), (block,),
            (1.75, x, y, coeffs, np.zeros(n)), 0)


def _expected_axpy_poly(args):
    a, x, y, coeffs, _ = args
    return {2: a * x + y, 4: np.polyval(coeffs, x)}


SPLITMIX_GAMMA = np.uint64(0x9E3779B97F4A7C15)
SPLITMIX_M1 = np.uint64(0xBF58476D1CE4E5B9)
SPLITMIX_M2 = np.uint64(0x94D049BB133111EB)
S27, S30, S31 = np.uint64(27), np.uint64(30), np.uint64(31)
LCG_MUL = 6364136223846793005        # Knuth's MMIX LCG constants (fit in int64)
LCG_ADD = 1442695040888963407


@cuda.jit
def hash_mix_i64(keys, h, bucket, quot):
    """64-bit integer arithmetic: splitmix64 of each key (uint64 multiplies, shifts and
    xors, wrapping), and a signed int64 LCG step (wrapping) reduced with Python's floor
    ``%`` and ``//`` (which differ from C's for negative values)."""
    i = cuda.grid(1)
    if i < keys.size:
        z = uint64(keys[i]) + SPLITMIX_GAMMA
        z = (z ^ (z >> S30)) * SPLITMIX_M1
        z = (z ^ (z >> S27)) * SPLITMIX_M2
        h[i] = z ^ (z >> S31)
        s = keys[i] * LCG_MUL + LCG_ADD
        bucket[i] = s % 1000003
        quot[i] = s // 97


def _setup_hash(rng, small=False, **size):
    n, block = sized(size, small, dict(n=100, block=32), dict(n=3000, block=128))
    keys = rng.integers(-2**62, 2**62, n, dtype=np.int64)
    keys[:4] = (0, -1, 2**63 - 1, -2**63)
    return ((cdiv(n, block),), (block,),
            (keys, np.zeros(n, np.uint64), np.zeros(n, np.int64), np.zeros(n, np.int64)), 0)


def _expected_hash(args):
    keys = args[0]
    with np.errstate(over="ignore"):
        z = keys.astype(np.uint64) + SPLITMIX_GAMMA
        z = (z ^ (z >> S30)) * SPLITMIX_M1
        z = (z ^ (z >> S27)) * SPLITMIX_M2
        z = z ^ (z >> S31)
        s = keys * np.int64(LCG_MUL) + np.int64(LCG_ADD)
    return {1: z, 2: s % 1000003, 3: s // 97}


KNUTH = uint32(2654435761)


@cuda.jit
def bit_ops_i32(u, s, lo, hi, out_u, out_s):
    """32-bit integer operations. Unsigned: popc, clz, brev, ffs, shifts and xor, a
    wrapping multiply. Signed: arithmetic shift, clamp with min/max, abs, floor % and //,
    a logical shift of the bits reinterpreted as unsigned."""
    i = cuda.grid(1)
    if i < u.size:
        v = u[i]
        out_u[0, i] = cuda.popc(v)
        out_u[1, i] = cuda.clz(v)
        out_u[2, i] = cuda.brev(v)
        out_u[3, i] = cuda.ffs(v)
        out_u[4, i] = (v >> 7) ^ (v << 3)
        out_u[5, i] = v * KNUTH
        w = s[i]
        out_s[0, i] = w >> 3
        out_s[1, i] = min(max(w, lo), hi)
        out_s[2, i] = abs(w)
        out_s[3, i] = w % 7
        out_s[4, i] = w // 5
        out_s[5, i] = int32(uint32(w) >> 28)


def _setup_bits(rng, small=False, **size):
    n, block = sized(size, small, dict(n=64, block=32), dict(n=2000, block=128))
    u = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    u[:4] = (0, 1, 0x80000000, 0xFFFFFFFF)
    s = rng.integers(-2**30, 2**30, n).astype(np.int32)
    s[:3] = (0, -1, -7)
    return ((cdiv(n, block),), (block,),
            (u, s, -1000, 5000, np.zeros((6, n), np.uint32), np.zeros((6, n), np.int32)), 0)


def _expected_bits(args):
    u, s, lo, hi = args[:4]
    u64 = u.astype(np.uint64)
    # bit by bit over whole arrays (a measurement's 2^22 values: no Python loop over them)
    popc = np.zeros(u.size, np.int64)
    brev = np.zeros(u.size, np.uint64)
    top = np.full(u.size, -1, np.int64)              # the highest set bit; -1: none
    ffs = np.zeros(u.size, np.int64)                 # 1 + the lowest set bit; 0: none
    for k in range(32):
        bit = (u64 >> np.uint64(k)) & np.uint64(1)
        popc += bit.astype(np.int64)
        brev |= bit << np.uint64(31 - k)
        top = np.where(bit == 1, k, top)
        ffs = np.where((ffs == 0) & (bit == 1), k + 1, ffs)
    clz = 31 - top
    mask = np.uint64(0xFFFFFFFF)
    shx = ((u64 >> np.uint64(7)) ^ (u64 << np.uint64(3))) & mask
    mul = (u64 * np.uint64(2654435761)) & mask
    out_u = np.stack([popc, clz, brev, ffs, shx, mul]).astype(np.uint32)
    s64 = s.astype(np.int64)
    out_s = np.stack([s64 >> 3, np.clip(s64, lo, hi), np.abs(s64), s64 % 7, s64 // 5,
                      s.astype(np.uint32) >> 28]).astype(np.int32)
    return {4: out_u, 5: out_s}


# ---------------------------------------------------------------------------------------
# fp64 libdevice functions the compiler leaves as calls; contraction by ptxas; fastmath
# ---------------------------------------------------------------------------------------

@cuda.jit
def f64_calls(x, y, out):
    """pow, sin and lgamma in float64: NVVM keeps their slow paths as .func calls
    (__internal_accurate_pow, __internal_trig_reduction_slowpathd, __internal_lgamma_pos)."""
    i = cuda.grid(1)
    if i < x.size:
        out[0, i] = math.pow(x[i], y[i])
        out[1, i] = math.sin(x[i] * 1e6)
        out[2, i] = math.lgamma(x[i])


def _setup_f64_calls(rng, small=False, **size):
    n, block = sized(size, small, dict(n=64, block=32), dict(n=1000, block=128))
    x = rng.uniform(0.1, 30.0, n)
    y = rng.uniform(-3.0, 3.0, n)
    return (cdiv(n, block),), (block,), (x, y, np.zeros((3, n))), 0


def _expected_f64_calls(args):
    x, y = args[0], args[1]
    return {2: np.stack([x ** y, np.sin(x * 1e6),
                         np.array([math.lgamma(v) for v in x])])}


@cuda.jit
def float_mod_f64(x, y, out):
    """Python's float % in float64: floor(x / y) then x - y * that, where ptxas fuses
    the multiply and subtract (DFMA): the GPU's result is Python's."""
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] % y[i]


def _setup_float_mod(rng, small=False, **size):
    n, block = sized(size, small, dict(n=64, block=32), dict(n=600, block=128))
    x = rng.uniform(-20, 20, n)
    y = rng.uniform(-3, 3, n)
    y[np.abs(y) < 0.1] = 0.5
    return (cdiv(n, block),), (block,), (x, y, np.zeros(n)), 0


def _expected_float_mod(args):
    return {2: np.array([a % b for a, b in zip(args[0], args[1])])}


@cuda.jit(fastmath=True)
def fastmath_rsqrt(x, out):
    """fastmath: approximate division and square root (div.approx, sqrt.approx.ftz)."""
    i = cuda.grid(1)
    if i < x.size:
        out[i] = 1.0 / math.sqrt(x[i]) + x[i] / 3.0


def _setup_fastmath(rng, small=False, **size):
    n, block = sized(size, small, dict(n=64, block=32), dict(n=1000, block=256))
    return (cdiv(n, block),), (block,), (rng.uniform(0.01, 100, n).astype(np.float32),
                                         np.zeros(n, np.float32)), 0


def _expected_fastmath(args):
    x = args[0].astype(np.float64)
    return {1: 1 / np.sqrt(x) + x / 3}


# ---------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------

def _n(*ks, **extra):
    return tuple((f"n={p2(k)}", {"n": 1 << k, **extra}) for k in ks)


CASES = [
    Case("axpy_poly_f64", "float64 axpy and a degree-5 Horner polynomial", axpy_poly_f64,
         _setup_axpy_poly, _expected_axpy_poly, exact=False, rtol=1e-13, atol=1e-13,
         shapes=_n(22, 24, block=256)),
    Case("hash_mix_i64", "uint64 splitmix64; int64 LCG with floor % and //", hash_mix_i64,
         _setup_hash, _expected_hash, shapes=_n(22, 24, block=128)),
    Case("bit_ops_i32", "popc, clz, brev, ffs, shifts, min/max, abs, % and // on 32 bits",
         bit_ops_i32, _setup_bits, _expected_bits, shapes=_n(20, 22, block=128)),
    # float64 slow paths (Payne-Hanek reduction, lgamma) and a Python-loop reference
    Case("f64_calls", "float64 pow, sin of large arguments and lgamma: calls NVVM kept",
         f64_calls, _setup_f64_calls, _expected_f64_calls, exact=False, rtol=1e-13,
         atol=1e-13, shapes=_n(18, 20, block=128)),
    Case("float_mod_f64", "Python's float64 % (a multiply-subtract ptxas fuses)",
         float_mod_f64, _setup_float_mod, _expected_float_mod, shapes=_n(20, 22, block=128)),
    Case("fastmath_rsqrt", "fastmath=True: approximate division and square root",
         fastmath_rsqrt, _setup_fastmath, _expected_fastmath, exact=False, rtol=1e-5,
         shapes=_n(23, 25, block=256)),
]

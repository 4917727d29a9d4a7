"""Warp votes, warp shuffles and atomics."""
from __future__ import annotations

import numpy as np
from numba import cuda, int32

from .base import FULL_MASK, WARP, Case, cdiv, p2, sized

# ---------------------------------------------------------------------------------------
# Warp votes, shuffles and atomics
# ---------------------------------------------------------------------------------------

@cuda.jit
def warp_votes(x, threshold, ballots, counts, all_flags, any_flags):
    """Per warp: the ballot of (x > threshold), its popcount, and all/any of it. Lanes past
    the end of x vote False; all 32 lanes take part in every vote."""
    i = cuda.grid(1)
    warp = i // WARP
    lane = cuda.threadIdx.x % WARP
    pred = i < x.size and x[i] > threshold
    mask = cuda.ballot_sync(FULL_MASK, pred)
    everyone = cuda.all_sync(FULL_MASK, pred)
    anyone = cuda.any_sync(FULL_MASK, pred)
    if lane == 0:
        ballots[warp] = mask
        counts[warp] = cuda.popc(mask)
        all_flags[warp] = everyone
        any_flags[warp] = anyone


def _setup_votes(rng, small=False, **size):
    n, grid, block = sized(size, small, dict(n=100, grid=2, block=64),
                           dict(n=1000, grid=8, block=128))
    x = rng.standard_normal(n).astype(np.float32)
    x[0:32] = 5.0                 # warp 0: everyone votes yes
    x[32:64] = -5.0               # warp 1: no one
    x[64 + 17] = 5.0              # warp 2: at least lane 17
    warps = grid * block // WARP
    return ((grid,), (block,),
            (x, np.float32(0.5), np.zeros(warps, np.uint32), np.zeros(warps, np.int32),
             np.zeros(warps, np.int32), np.zeros(warps, np.bool_)), 0)


def _expected_votes(args):
    x, threshold, ballots = args[0], args[1], args[2]
    pred = np.zeros(ballots.size * WARP, bool)
    pred[:x.size] = x > threshold
    pred = pred.reshape(-1, WARP)
    weights = np.uint64(1) << np.arange(WARP, dtype=np.uint64)
    mask = (pred * weights).sum(axis=1).astype(np.uint32)
    return {2: mask, 3: pred.sum(axis=1), 4: pred.all(axis=1), 5: pred.any(axis=1)}


@cuda.jit
def warp_scan_shuffle(x, scan, warp_max, warp_total):
    """Per warp: an inclusive prefix sum with shfl_up (Kogge-Stone), the warp's maximum
    with a shfl_xor butterfly (every lane ends with it), and lane 31's total broadcast
    with shfl_sync. Lanes past the end of x contribute 0 (and -1 to the max)."""
    i = cuda.grid(1)
    lane = cuda.threadIdx.x % WARP
    warp = i // WARP
    v = int32(0)
    m = int32(-1)
    if i < x.size:
        v = x[i]
        m = x[i]
    d = 1
    while d < WARP:
        t = cuda.shfl_up_sync(FULL_MASK, v, d)
        if lane >= d:
            v += t
        d *= 2
    if i < x.size:
        scan[i] = v
    mask = 16
    while mask > 0:
        m = max(m, cuda.shfl_xor_sync(FULL_MASK, m, mask))
        mask //= 2
    total = cuda.shfl_sync(FULL_MASK, v, WARP - 1)
    if lane == 0:
        warp_max[warp] = m
        warp_total[warp] = total


def _setup_warp_scan(rng, small=False, **size):
    n, grid, block = sized(size, small, dict(n=90, grid=1, block=96),
                           dict(n=1000, grid=8, block=128))
    x = rng.integers(0, 1000, n).astype(np.int32)
    warps = grid * block // WARP
    return ((grid,), (block,),
            (x, np.zeros(n, np.int32), np.zeros(warps, np.int32), np.zeros(warps, np.int32)), 0)


def _expected_warp_scan(args):
    x, _, warp_max = args[0], args[1], args[2]
    v = np.zeros(warp_max.size * WARP, np.int64)
    v[:x.size] = x
    m = np.full(v.size, -1, np.int64)
    m[:x.size] = x
    v, m = v.reshape(-1, WARP), m.reshape(-1, WARP)
    scan = np.cumsum(v, axis=1)
    return {1: scan.reshape(-1)[:x.size], 2: m.max(axis=1), 3: scan[:, -1]}


NGROUPS = 16


@cuda.jit
def atomics_minmax_cas(keys, vals, fvals, gmax, gmin, fmax, seen, distinct, cas_sum):
    """Per key (group): atomic max and min of int32 values, atomic max of float32 values;
    the first thread to flip seen[key] from 0 to 1 with atomic CAS counts a distinct key;
    and an atomic add written as a CAS loop."""
    i = cuda.grid(1)
    if i < keys.size:
        k = keys[i]
        cuda.atomic.max(gmax, k, vals[i])
        cuda.atomic.min(gmin, k, vals[i])
        cuda.atomic.max(fmax, k, fvals[i])
        if cuda.atomic.cas(seen, k, 0, 1) == 0:
            cuda.atomic.add(distinct, 0, 1)
        old = cas_sum[k]
        while True:
            assumed = old
            old = cuda.atomic.cas(cas_sum, k, assumed, int32(assumed + vals[i]))
            if old == assumed:
                break


def _setup_atomics(rng, small=False, **size):
    n, block = sized(size, small, dict(n=80, block=32), dict(n=3000, block=128))
    keys = rng.integers(0, 12, n).astype(np.int32)      # 12 of the 16 groups occur
    vals = rng.integers(-5000, 5000, n).astype(np.int32)
    fvals = rng.standard_normal(n).astype(np.float32)
    i32 = np.iinfo(np.int32)
    return ((cdiv(n, block),), (block,),
            (keys, vals, fvals,
             np.full(NGROUPS, i32.min, np.int32), np.full(NGROUPS, i32.max, np.int32),
             np.full(NGROUPS, -np.inf, np.float32), np.zeros(NGROUPS, np.int32),
             np.zeros(1, np.int32), np.zeros(NGROUPS, np.int32)), 0)


def _expected_atomics(args):
    keys, vals, fvals, gmax, gmin, fmax, seen, distinct, cas_sum = (
        np.copy(a) for a in args)
    np.maximum.at(gmax, keys, vals)
    np.minimum.at(gmin, keys, vals)
    np.maximum.at(fmax, keys, fvals)
    seen[np.unique(keys)] = 1
    distinct += np.unique(keys).size
    np.add.at(cas_sum, keys, vals)
    return {3: gmax, 4: gmin, 5: fmax, 6: seen, 7: distinct, 8: cas_sum}


# ---------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------

def _warps_over(*ks, block=128):
    """Shapes over n = 2^k with one thread an element."""
    return tuple((f"n={p2(k)}", {"n": 1 << k, "grid": (1 << k) // block, "block": block})
                 for k in ks)


CASES = [
    Case("warp_votes", "ballot_sync, all_sync, any_sync per warp", warp_votes,
         _setup_votes, _expected_votes, cudasim=False, shapes=_warps_over(23, 25)),
    Case("warp_scan_shuffle", "shfl_up scan, shfl_xor max, shfl_sync broadcast",
         warp_scan_shuffle, _setup_warp_scan, _expected_warp_scan, cudasim=False,
         shapes=_warps_over(23, 25)),
    # contention by design: 12 keys, every thread CAS-looping on one of 12 neighbouring
    # words; the failed tries grow as the square of the contenders (n^2 / 288 for each
    # word, in one L2 line): 2^12 elements (~0.4 ms at a try a cycle) and 2^14 (~7 ms)
    Case("atomics_minmax_cas", "atomic max/min (int32, float32), CAS claim, CAS-loop add",
         atomics_minmax_cas, _setup_atomics, _expected_atomics,
         shapes=tuple((f"n={p2(k)}", {"n": 1 << k, "block": 128}) for k in (12, 14))),
]

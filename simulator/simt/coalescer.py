"""The coalescer: which memory transactions a warp's load or store turns into.

A warp-wide access is one address per active lane (bytes; -1 for inactive lanes). The
memory system moves whole aligned segments: 128 B lines on Fermi's L1 path, 32 B
sectors on Maxwell and later (the preset's ``sm.l1.sector_bytes``). The transactions
are the distinct segments the active lanes touch (an access straddling a segment
boundary touches both).
"""
from __future__ import annotations

import numpy as np

from simulator.arguments import show


def segments(addresses: np.ndarray, access_bytes: int, segment_bytes: int) -> list[np.ndarray]:
    """Per warp access (rows of ``addresses``): the sorted distinct segment indices."""
    a = np.atleast_2d(np.asarray(addresses, dtype=np.int64))
    if segment_bytes <= 0 or segment_bytes & (segment_bytes - 1):
        raise ValueError(f"segment_bytes = {show(segment_bytes)}: must be a power of two")
    if access_bytes <= 0:
        raise ValueError(f"access_bytes = {show(access_bytes)}: must be > 0")
    out = []
    for row in a:
        live = row[row >= 0]
        first, last = live // segment_bytes, (live + access_bytes - 1) // segment_bytes
        segs = np.unique(np.concatenate([first, last]))
        # an access longer than a segment covers the ones in between as well
        if access_bytes > segment_bytes and live.size:
            segs = np.unique(np.concatenate([np.arange(f, l + 1) for f, l in zip(first, last)]))
        out.append(segs)
    return out


def transactions(addresses: np.ndarray, access_bytes: int, segment_bytes: int) -> np.ndarray:
    """Number of segments each warp access moves."""
    return np.array([s.size for s in segments(addresses, access_bytes, segment_bytes)], dtype=np.int64)


def warp_accesses(per_thread: dict, launch, warp_size: int = 32, element_bytes: int = 4):
    """Group a kernel's per-thread accesses (``thread_accesses`` of a kernel module) into
    warp instructions: {(block, warp): [(op, array, byte addresses per lane), ...]}.

    Threads are numbered x fastest within a block and cut into warps of ``warp_size``;
    the i-th access of every lane forms the warp's i-th memory instruction (lanes with
    fewer accesses are inactive, -1), which is how straight-line and uniformly looping
    kernels execute. Lanes whose i-th accesses differ in operation or array are an error
    (that kernel diverges and needs the engine's branch model)."""
    bx, by, bz = launch.block
    out = {}
    for (b, t), acc in per_thread.items():
        linear = t[0] + bx * (t[1] + by * t[2])
        w, lane = divmod(linear, warp_size)
        out.setdefault((b, w), {})[lane] = acc
    result = {}
    for key, lanes in out.items():
        n = max(len(a) for a in lanes.values())
        instrs = []
        for i in range(n):
            addr = np.full(warp_size, -1, dtype=np.int64)
            kind = None
            for lane, acc in lanes.items():
                if i < len(acc):
                    op, arr, idx = acc[i]
                    if kind is None:
                        kind = (op, arr)
                    elif kind != (op, arr):
                        raise ValueError(f"warp {key}: lanes diverge at access {i} "
                                         f"({kind} vs {(op, arr)})")
                    addr[lane] = idx * element_bytes
            instrs.append((kind[0], kind[1], addr))
        result[key] = instrs
    return result

"""Check ``tests/user_kernels.py``'s numpy references against numba's CUDA simulator.

    python tests/check_user_kernels_cudasim.py [CASE ...] [--full]

Sets NUMBA_ENABLE_CUDASIM=1 before numba is imported, runs every case the simulator can
run (``case.cudasim``) at its small sizes (about 20 s; ``--full``: the default sizes,
about 2 min on 2 cores) and compares the outputs with ``case.expected``
(``user_kernels.compare``). The simulator
runs each thread as a Python thread, with numpy scalar arithmetic (no fma contraction),
so exact cases must match bit for bit.

It has no warp shuffles or votes, so the four cases that use them (reduce_warp_shuffle,
matvec_warp_per_row, warp_scan_shuffle, warp_votes) are checked instead against a numpy
simulation of their lanes below (``LANE_MODELS``): each mirrors its kernel statement by
statement on (warps, 32) arrays, with PTX's shfl.sync semantics (a lane whose source is
out of range keeps its own value), at both sizes.

Prints one line a case and exits 1 if any fails. Not collected by pytest (no ``test_``
prefix).
"""
import os
import sys
import time
import warnings

os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
# the simulator's numpy scalars warn where the kernels' integers wrap on purpose
warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests import user_kernels as uk  # noqa: E402

W = uk.WARP
LANE = np.arange(W)


# ---- a warp's shuffles on (warps, 32) arrays --------------------------------------------

def shfl_down(v, d):
    src = np.where(LANE + d < W, LANE + d, LANE)
    return v[:, src]


def shfl_up(v, d):
    src = np.where(LANE - d >= 0, LANE - d, LANE)
    return v[:, src]


def shfl_xor(v, m):
    return v[:, LANE ^ m]


def shfl_idx(v, src):
    return v[:, np.full(W, src)]


def _threads(grid, block):
    return int(np.prod(grid)) * int(np.prod(block))


# ---- lane models: each returns the launch's arguments after it ----------------------------

def model_reduce_warp_shuffle(grid, block, args):
    x, out = args[0], args[1].copy()
    T = _threads(grid, block)
    acc = np.zeros(T, np.float32)
    for start in range(0, x.size, T):          # the grid-stride loop, in the kernel's order
        chunk = x[start:start + T]
        acc[:chunk.size] += chunk
    acc = acc.reshape(-1, W)
    offset = W // 2
    while offset > 0:
        acc = acc + shfl_down(acc, offset)
        offset //= 2
    for warp_sum in acc[:, 0]:                 # lane 0's atomicAdd, in some order
        out[0] += warp_sum
    return [x, out]


def model_matvec_warp_per_row(grid, block, args):
    A, x, y = args[0], args[1], args[2].copy()
    rows, cols = A.shape
    warps = _threads(grid, block) // W
    acc = np.zeros((warps, W), np.float32)
    live = np.arange(warps) < rows             # warps past the last row skip everything
    for j0 in range(0, cols, W):
        j = j0 + LANE
        ok = j < cols
        for w in np.nonzero(live)[0]:
            acc[w, ok] += A[w, j[ok]] * x[j[ok]]
    for k in range(4, -1, -1):
        acc = acc + shfl_down(acc, 1 << k)
    y[:] = acc[:rows, 0]
    return [A, x, y]


def model_warp_votes(grid, block, args):
    x, threshold = args[0], args[1]
    ballots, counts, all_flags, any_flags = (a.copy() for a in args[2:])
    T = _threads(grid, block)
    pred = np.zeros(T, bool)
    pred[:x.size] = x > threshold
    pred = pred.reshape(-1, W)
    mask = np.zeros(pred.shape[0], np.uint64)
    for lane in range(W):                      # bit `lane` of the ballot is lane's vote
        mask |= pred[:, lane].astype(np.uint64) << np.uint64(lane)
    ballots[:] = mask
    counts[:] = [bin(int(m)).count("1") for m in mask]
    all_flags[:] = pred.all(axis=1)
    any_flags[:] = pred.any(axis=1)
    return [x, threshold, ballots, counts, all_flags, any_flags]


def model_warp_scan_shuffle(grid, block, args):
    x, scan, warp_max, warp_total = (a.copy() for a in args)
    T = _threads(grid, block)
    v = np.zeros(T, np.int64)
    m = np.full(T, -1, np.int64)
    v[:x.size] = x
    m[:x.size] = x
    v, m = v.reshape(-1, W), m.reshape(-1, W)
    d = 1
    while d < W:
        t = shfl_up(v, d)
        v = np.where(LANE >= d, v + t, v)
        d *= 2
    scan[:] = v.reshape(-1)[:x.size]
    mask = 16
    while mask > 0:
        m = np.maximum(m, shfl_xor(m, mask))
        mask //= 2
    total = shfl_idx(v, W - 1)
    warp_max[:] = m[:, 0]
    warp_total[:] = total[:, 0]
    return [x, scan, warp_max, warp_total]


LANE_MODELS = {
    "reduce_warp_shuffle": model_reduce_warp_shuffle,
    "matvec_warp_per_row": model_matvec_warp_per_row,
    "warp_votes": model_warp_votes,
    "warp_scan_shuffle": model_warp_scan_shuffle,
}


def check_in_simulator(case, small):
    before, after, expected = uk.launch(case, np.random.default_rng(1), small=small)
    return uk.compare(case, after, expected)


def check_lane_model(case):
    problems = []
    for small in (True, False):
        grid, block, args, shared = case.setup(np.random.default_rng(1), small=small)
        grid = grid if isinstance(grid, tuple) else (grid,)
        block = block if isinstance(block, tuple) else (block,)
        before = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
        after = LANE_MODELS[case.name](grid, block, before)
        problems += [("small: " if small else "full: ") + p
                     for p in uk.compare(case, after, case.expected(before))]
    return problems


def main(argv):
    full = "--full" in argv
    names = [a for a in argv if not a.startswith("--")]
    unknown = set(names) - {c.name for c in uk.CASES}
    if unknown:
        sys.exit(f"unknown cases: {', '.join(sorted(unknown))}")
    failed = 0
    for case in uk.CASES:
        if names and case.name not in names:
            continue
        t0 = time.perf_counter()
        try:
            if case.cudasim:
                how = "cudasim"
                problems = check_in_simulator(case, small=not full)
            elif case.name in LANE_MODELS:
                how = "lane model"
                problems = check_lane_model(case)
            else:
                how, problems = "none", ["no simulator support and no lane model"]
        except Exception as e:  # noqa: BLE001 -- report and go on to the next case
            problems = [f"{type(e).__name__}: {e}"]
        status = "FAIL" if problems else "pass"
        failed += bool(problems)
        print(f"{status}  {case.name:24s} {how:10s} {time.perf_counter() - t0:6.1f} s", flush=True)
        for p in problems:
            print(f"      {p}")
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The emulator's loop fast-forward (``emulate_kernel(skip_loops=)``, ``kernelcode.loops``)
against full emulation: a loop whose end one integer comparison decides runs its first
trips, skips its middle ones and runs its last few; the control flow, the addresses and
the instruction counts after it are the full run's. Loops whose end data decides are not
skipped. Sampled mode, which skips, stays within 3% of full mode, which does not.

The kernels compile in a child process without numba's CUDA simulator (``ptx_cache``).
"""
from __future__ import annotations

import numpy as np
import pytest

from simulator.kernelcode import loops, sassmap
from simulator.kernelcode.compiled import compile as compile_kernel
from simulator.kernelcode.launch import emulate_kernel
from simulator.kernelcode.timing import SKIP_FIRST, SKIP_LEAST, simulate_kernel
from workloads.kernelsuite import all_cases

pytestmark = pytest.mark.usefixtures("ptx_cache")

CASES = {c.name: c for c in all_cases()}
SKIP = (SKIP_FIRST, SKIP_LEAST, None)


def _gemm(k):
    """gemm_register_blocked at 64x64xk: 4 blocks of 2 warps, k/8 trips of its K loop."""
    case = CASES["gemm_register_blocked"]
    grid, block, args, _ = case.setup(np.random.default_rng(0), m=64, n=64, k=k)
    return case.kernel, grid, block, list(args)


def _both(kernel, grid, block, args):
    full = emulate_kernel(kernel, grid, block, args, record=True, write_back=False)
    skip = emulate_kernel(kernel, grid, block, args, record=True, write_back=False,
                          skip_loops=SKIP)
    return full, skip


def _tail(trace, warp, n):
    """The last ``n`` events of ``warp`` (pc, mask) and the addresses its accesses among
    them touched."""
    ev = trace["events"]
    mine = ev[ev[:, 0] == warp][-n:]
    addrs = [tuple(trace["addresses"][int(a)]) for a in mine[:, 3] if a >= 0]
    return mine[:, 1:3].tolist(), addrs


def test_the_k_loop_of_a_gemm_is_found_and_its_exit_is_its_count():
    kernel, grid, block, args = _gemm(2048)
    c = compile_kernel(kernel, args, (9, 0))
    t = loops.table(c.program.code)
    # the zeroing loops are unrolled by NVVM; the K loop is the one outermost loop left,
    # and its header is a row before its latch
    assert len(t.lp) >= 1
    assert all(r[loops.LP_HEAD] < r[loops.LP_LATCH] for r in t.lp)
    assert all(t.latch_loop[r[loops.LP_LATCH]] == i for i, r in enumerate(t.lp))


def test_a_skipped_loop_leaves_what_follows_it_as_the_full_run_has_it():
    """K = 2048: 256 trips, of which the emulator skips all but the first 56 and the
    last few; C's stores after the loop go to the same addresses in the same order, on
    the same lanes, in every warp; the skipped trips say how many they were."""
    kernel, grid, block, args = _gemm(2048)
    full, skip = _both(kernel, grid, block, args)
    le = skip.trace["loop_events"]
    skips = le[le[:, 3] == 1]
    nwarps = 4 * 2
    assert len(skips) == nwarps                 # each warp skipped once
    assert len(set(skips[:, 2])) == 1          # in one loop
    ran = len(skip.trace["events"]) / len(full.trace["events"])
    assert ran < 0.4, ran
    # every warp skipped the same trips, all but the first SKIP_FIRST and a few last ones
    trips = skips[:, 4]
    assert (trips == trips[0]).all() and 256 - SKIP_FIRST - 8 <= trips[0] < 256 - SKIP_FIRST
    for w in range(nwarps):
        # the epilogue: 16 stores of C and what leads to them
        assert _tail(skip.trace, w, 120) == _tail(full.trace, w, 120), w


def test_the_trips_skipped_count_as_the_instructions_they_would_have_run():
    """Each SASS instruction's count, the skipped trips weighted in (``row_weights``),
    equals full emulation's exactly: the skipped trips repeat the last one run."""
    kernel, grid, block, args = _gemm(2048)
    c = compile_kernel(kernel, args, (9, 0))
    full, skip = _both(kernel, grid, block, args)
    tf = sassmap.warp_traces(c.smap, full.trace)
    ts = sassmap.warp_traces(c.smap, skip.trace)
    ns = len(c.sass.instrs)
    want = np.bincount(tf.sass_index, minlength=ns)
    got = np.bincount(ts.sass_index, weights=sassmap.row_weights(ts), minlength=ns)
    assert len(ts.rows) < 0.4 * len(tf.rows)
    np.testing.assert_array_equal(got, want)


def test_a_loop_too_short_or_ended_by_data_is_run_whole():
    """Fewer than SKIP_LEAST trips (K = 1024: 128): nothing skipped. The Collatz steps'
    while loop, whose end the data decides: nothing skipped either, the trace is the
    full run's."""
    short = _both(*_gemm(1024))
    case = CASES["collatz_steps"]
    grid, block, args, _ = case.setup(np.random.default_rng(0), small=True)
    data = _both(case.kernel, grid, block, list(args))
    for full, skip in (short, data):
        assert not (skip.trace["loop_events"][:, 3] == 1).any()
        np.testing.assert_array_equal(skip.trace["events"], full.trace["events"])


def test_skip_loops_is_checked():
    kernel, grid, block, args = _gemm(64)
    with pytest.raises(ValueError, match=r"skip_loops=\(2, 193, None\): expected \(first >= 4"):
        emulate_kernel(kernel, grid, block, args, skip_loops=(2, 193, None))


@pytest.mark.parametrize("hw", ["h100-sxm", "gtx480"])
def test_sampled_mode_skipping_trips_is_within_3_percent_of_full(hw):
    """A 128x128x2048 GEMM (16 blocks, 256 trips): sampled mode emulates the K loop's
    first trips and the last, the engine cuts it and extrapolates; full mode emulates and
    times every trip. Cycles within 3%, instructions within 1%."""
    case = CASES["gemm_register_blocked"]
    grid, block, args, _ = case.setup(np.random.default_rng(0), m=128, n=128, k=2048)
    full = simulate_kernel(case.kernel, grid, block, list(args), hw=hw, mode="full")
    sampled = simulate_kernel(case.kernel, grid, block, list(args), hw=hw, mode="sampled")
    assert abs(sampled.cycles / full.cycles - 1) <= 0.03, (sampled.cycles, full.cycles)
    assert abs(sampled.instructions / full.instructions - 1) <= 0.01


@pytest.mark.parametrize("skip", [None, SKIP])
def test_a_cut_is_the_first_trips_of_the_recorded_rows(skip):
    """``cut_traces`` (the rows of a loop's first ``cap`` trips, out of one emission that
    recorded each row's trip) issues what ``warp_traces(cut=)`` emits for that cut:
    the same rows, instructions, lanes, warp ranges and addresses."""
    kernel, grid, block, args = _gemm(2048)
    c = compile_kernel(kernel, args, (9, 0))
    em = emulate_kernel(kernel, grid, block, args, record=True, write_back=False,
                        skip_loops=skip)
    h, inloop, trips = sassmap.dominant_loop(c.smap, c.successors, em.trace)
    assert trips == 256
    whole = sassmap.warp_traces(c.smap, em.trace, loop=(h, inloop))
    for cap in (16, 48):
        want = sassmap.warp_traces(c.smap, em.trace, cut=(h, inloop, cap))
        got = sassmap.cut_traces(whole, cap)
        assert len(got.rows) < len(whole.rows)
        np.testing.assert_array_equal(got.warp_begin, want.warp_begin)
        np.testing.assert_array_equal(got.sass_index, want.sass_index)
        np.testing.assert_array_equal(got.masks, want.masks)
        np.testing.assert_array_equal(got.rows[:, :5], want.rows[:, :5])
        mem = want.rows[:, 5] >= 0
        np.testing.assert_array_equal(got.rows[:, 5] >= 0, mem)
        np.testing.assert_array_equal(got.addresses[got.rows[mem, 5]],
                                      want.addresses[want.rows[mem, 5]])
        np.testing.assert_array_equal(got.rows[~mem, 5], want.rows[~mem, 5])

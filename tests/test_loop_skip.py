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
    # its K step issues about a thousand instructions a warp: cut after 4, 8 and 12 trips
    assert sampled.launches[0].sampling["trip_caps"] == [4, 8, 12]


def test_a_loop_whose_trips_are_long_is_cut_sooner():
    """``engine.trace_trip_caps``: TRIP_CAPS (16, 32, 48) halved while the first cut still
    runs TRIP_WORK warp instructions a warp and at least four trips; a loop of no more
    than four times its last cut is not cut."""
    from simulator.simt import engine
    assert engine.TRIP_CAPS == (16, 32, 48) and engine.TRIP_WORK == 2048
    assert engine.trace_trip_caps(193, 100) == (16, 32, 48)
    assert engine.trace_trip_caps(192, 100) is None
    assert engine.trace_trip_caps(97, 300) == (8, 16, 24)       # 8 x 300 >= 2048 > 4 x 300
    assert engine.trace_trip_caps(96, 300) is None
    assert engine.trace_trip_caps(49, 1000) == engine.SOONEST_CAPS == (4, 8, 12)
    assert engine.trace_trip_caps(48, 1e6) is None
    assert engine.trace_trip_caps(10**9, 256) == (8, 16, 24)    # 8 x 256 = 2048


@pytest.mark.parametrize("skip", [None, SKIP, (20, 49, None)])
def test_a_loops_instructions_a_trip_are_its_sass_rows_a_trip(skip):
    """``dominant_loop``'s SASS instructions of a warp's trip, the trips the emulator
    skipped weighed as the ones it ran, are the SASS rows a trip of the emission that
    marks each row's trip (the register-blocked GEMM's K loop: a header block its warps
    run twice a trip, which counts two visits, not two trips)."""
    kernel, grid, block, args = _gemm(2048)
    c = compile_kernel(kernel, args, (9, 0))
    em = emulate_kernel(kernel, grid, block, args, record=True, write_back=False,
                        skip_loops=skip)
    h, inloop, trips, per_trip = sassmap.dominant_loop(c.smap, c.successors, em.trace)
    tr = sassmap.warp_traces(c.smap, em.trace, loop=(h, inloop))
    warps = len(tr.warp_begin) - 1
    assert trips == 256
    assert per_trip == pytest.approx(np.sum(tr.trips == 3) / warps, rel=1e-9)
    assert 900 < per_trip < 1100


def test_a_loop_of_64_long_trips_is_cut_and_meets_full_mode():
    """A 128x128x512 GEMM: 64 trips of its K loop, too few for the first cuts (16, 32,
    48) but each about a thousand instructions a warp: the probe emulates 20 trips and
    skips the rest, the trace as many, the engine cuts after 4, 8 and 12 and extrapolates
    -- within 3% of full mode's cycles, 1% of its instructions."""
    case = CASES["gemm_register_blocked"]
    grid, block, args, _ = case.setup(np.random.default_rng(0), m=128, n=128, k=512)
    full = simulate_kernel(case.kernel, grid, block, list(args), hw="h100-sxm", mode="full")
    sampled = simulate_kernel(case.kernel, grid, block, list(args), hw="h100-sxm")
    assert sampled.launches[0].sampling["trip_caps"] == [4, 8, 12]
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
    h, inloop, trips, _ = sassmap.dominant_loop(c.smap, c.successors, em.trace)
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


def _conv_nhwc(r=3, c_in=1024):
    """The built-in NHWC direct convolution of an ``r`` x ``r`` filter (padded to keep
    the 6x6 image), 32 filters of ``c_in`` channels: each thread's filter taps run the
    channel loop, its trips alike; 3x3: the taps in the padding skipped (4, 6 or 9
    entries a warp), 1x1: one entry a warp, inside the taps' loops of one trip."""
    from simulator.simt.kernels.conv_direct import conv_nhwc
    rng = np.random.default_rng(0)
    n, h, w, k = 1, 6, 6, 32
    x = rng.standard_normal((n, h, w, c_in)).astype(np.float32)
    f = rng.standard_normal((r, r, c_in, k)).astype(np.float32)
    y = np.zeros((n, h, w, k), np.float32)
    return conv_nhwc, (n * h * w * k) // 128, 128, [x, f, y, n, c_in, h, w, k, r, r, h, w, 1,
                                                    r // 2]


def _cuttable(trips, per_trip):
    return trips > 96


def test_an_inner_loop_is_cut_where_the_loops_around_it_run_once():
    """1x1: the outermost loop (r) runs one trip, too few to cut; the channel loop inside
    it, entered once a warp, issues nearly all the work: it is the one taken (C / 4
    trips: NVVM unrolls it by 4). 3x3: the channel loop is entered once a tap; cut, its
    entries' working set would shrink with the cut: the outer loop (3 trips) stays the
    dominant one, and is not cut."""
    for r, want in ((1, 1024 // 4), (3, 3)):
        kernel, grid, block, args = _conv_nhwc(r)
        c = compile_kernel(kernel, args, (9, 0))
        em = emulate_kernel(kernel, grid, block, args, record=True, write_back=False)
        outer = sassmap.dominant_loop(c.smap, c.successors, em.trace)
        assert outer[2] == r
        h, inloop, trips, _ = sassmap.dominant_loop(c.smap, c.successors, em.trace,
                                                 cuttable=_cuttable)
        assert trips == want, r
        if r == 1:
            assert h != outer[0] and inloop.sum() < outer[1].sum()
            assert not (inloop & ~outer[1]).any()


def test_an_inner_loop_skipped_counts_as_its_full_run_and_stores_the_same():
    """The 3x3 convolution's channel loop skipped in each of its entries (its header
    named to the emulator): every SASS instruction's count equals full emulation's
    exactly, and the stores of the outputs go to the same addresses."""
    kernel, grid, block, args = _conv_nhwc(3)
    c = compile_kernel(kernel, args, (9, 0))
    full = emulate_kernel(kernel, grid, block, args, record=True, write_back=False)
    one = _conv_nhwc(1)
    c1 = compile_kernel(one[0], one[3], (9, 0))
    em1 = emulate_kernel(*one, record=True, write_back=False)
    h1, _, _, _ = sassmap.dominant_loop(c1.smap, c1.successors, em1.trace, cuttable=_cuttable)
    head = int(c1.smap.leaders[h1])          # one kernel: the same rows for any r
    skip = emulate_kernel(kernel, grid, block, args, record=True, write_back=False,
                          skip_loops=(SKIP_FIRST, SKIP_LEAST, {head}))
    le = skip.trace["loop_events"]
    assert (le[:, 3] == 1).sum() > 4 * grid      # skipped in more than one entry a warp
    tf = sassmap.warp_traces(c.smap, full.trace)
    ts = sassmap.warp_traces(c.smap, skip.trace)
    ns = len(c.sass.instrs)
    assert len(ts.rows) < 0.5 * len(tf.rows)
    np.testing.assert_array_equal(
        np.bincount(ts.sass_index, weights=sassmap.row_weights(ts), minlength=ns),
        np.bincount(tf.sass_index, minlength=ns))

    def stores(tr):
        from simulator.simt import isa as E
        rows = tr.rows[(tr.rows[:, 0] == E.STG) & (tr.rows[:, 5] >= 0)]
        return sorted(map(tuple, tr.addresses[rows[:, 5], :32].tolist()))
    assert stores(ts) == stores(tf)


def test_sampled_mode_cutting_an_inner_loop_is_within_3_percent_of_full():
    kernel, grid, block, args = _conv_nhwc(1)
    full = simulate_kernel(kernel, grid, block, args, hw="h100-sxm", mode="full")
    sampled = simulate_kernel(kernel, grid, block, args, hw="h100-sxm", mode="sampled")
    assert sampled.launches[0].sampling["trip_caps"]          # the channel loop was cut
    assert abs(sampled.cycles / full.cycles - 1) <= 0.03, (sampled.cycles, full.cycles)
    assert abs(sampled.instructions / full.instructions - 1) <= 0.01


def test_a_reserved_recording_is_the_same_trace_and_reserve_is_checked():
    """``reserve`` sizes the recording up front (the probe's trace per block sizes the
    trace's): smaller and larger than the trace, it records the same events and
    addresses as the default room, which doubles as it fills."""
    kernel, grid, block, args = _gemm(2048)
    base = emulate_kernel(kernel, grid, block, args, record=True, write_back=False)
    n_ev, n_addr = len(base.trace["events"]), len(base.trace["addresses"])
    assert n_ev > 4 << 16 and n_addr > 4 << 12          # the default room doubles
    for room in ((n_ev // 3, n_addr // 5), (2 * n_ev, 2 * n_addr)):
        got = emulate_kernel(kernel, grid, block, args, record=True, write_back=False,
                             reserve=room)
        np.testing.assert_array_equal(got.trace["events"], base.trace["events"])
        np.testing.assert_array_equal(got.trace["addresses"], base.trace["addresses"])
    for bad in ((1,), (1, -2), (1.5, 2), "big"):
        with pytest.raises(ValueError, match=r"reserve=.*expected \(events, address rows\)"):
            emulate_kernel(kernel, grid, block, args, record=True, reserve=bad)

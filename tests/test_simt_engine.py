"""The SIMT program face and engine: the program's per-thread global accesses against each
kernel's pure-Python reference; engine invariants (cycles >= the roofline bound, DRAM
bytes >= compulsory bytes, executed FLOPs equal the op's); determinism; sampled against
full runs; bank conflicts by hand; bad launches."""
import dataclasses

import numpy as np
import pytest

import hwmodels
import simulator.result as schema
from simulator.analysis.roofline import bound as roofline_bound
from simulator.simt import analytic, api, core, engine, hwvec, memory, stats, walk
from simulator.simt.kernels import conv_direct, conv_im2col, gemm_naive, gemm_tiled, matadd, relu
from simulator.simt.kernels.launch import Launch
from workloads.ir import Conv2d

FERMI = hwmodels.get("gtx480")
H100 = hwmodels.get("h100-sxm")


def _nonempty(d):
    return {k: v for k, v in d.items() if v}


# ---------------------------------------------------------------- program face == reference

@pytest.mark.parametrize("grid,block,n", [(2, 64, 300), (3, 32, 1000), (1, 96, 50), (5, 40, 7)])
def test_relu_program_accesses(grid, block, n):
    lc = relu.launch(grid, block)
    assert walk.thread_accesses(relu.program(lc, n)) == _nonempty(relu.thread_accesses(lc, n))


@pytest.mark.parametrize("M,N,block", [(32, 48, (16, 16)), (5, 7, (4, 3)), (9, 33, (32, 2))])
def test_matadd_program_accesses(M, N, block):
    lc = matadd.launch(M, N, block)
    assert walk.thread_accesses(matadd.program(lc, M, N)) == _nonempty(matadd.thread_accesses(lc, M, N))


@pytest.mark.parametrize("thread_x", ["cols", "rows"])
@pytest.mark.parametrize("M,N,K,block", [(5, 7, 3, (4, 2)), (8, 8, 9, (4, 4)), (20, 9, 6, (16, 3))])
def test_gemm_naive_program_accesses(thread_x, M, N, K, block):
    lc = gemm_naive.launch(M, N, block, thread_x)
    prog = gemm_naive.program(lc, M, N, K, thread_x)
    assert walk.thread_accesses(prog) == _nonempty(gemm_naive.thread_accesses(lc, M, N, K, thread_x))


@pytest.mark.parametrize("M,N,K,tile", [(10, 12, 9, 8), (20, 9, 3, 16), (33, 32, 40, 32)])
def test_gemm_tiled_program_accesses(M, N, K, tile):
    prog = gemm_tiled.program(M, N, K, tile)
    ref = gemm_tiled.thread_accesses(prog.launch, M, N, K, tile)
    assert walk.thread_accesses(prog) == _nonempty(ref)


CONVS = [dict(N=1, C=2, H=5, W=4, K=3, R=3, S=3, stride=1, padding=1),
         dict(N=2, C=3, H=6, W=5, K=2, R=3, S=2, stride=2, padding=1),
         dict(N=1, C=2, H=4, W=4, K=4, R=1, S=1, stride=2, padding=0)]


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("shape", CONVS)
@pytest.mark.parametrize("block", [32, 7, 100])
def test_conv_direct_program_accesses(layout, shape, block):
    op = Conv2d(layout=layout, **shape)
    prog = conv_direct.program(op, block)
    assert walk.thread_accesses(prog) == _nonempty(conv_direct.thread_accesses(prog.launch, op))


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("shape", CONVS[:2])
def test_conv_im2col_program_accesses(layout, shape):
    op = Conv2d(layout=layout, **shape)
    first, second = conv_im2col.programs(op, 64, 8)
    assert walk.thread_accesses(first) == _nonempty(conv_im2col.im2col_accesses(first.launch, op))
    M, N, K = conv_im2col.gemm_dims(op)
    ref = gemm_tiled.thread_accesses(second.launch, M, N, K, 8)
    got = walk.thread_accesses(second)
    rename = {"A": "col", "B": "wmat", "C": "y"}
    assert {k: [(o, rename[a], i) for o, a, i in v] for k, v in _nonempty(ref).items()} == \
        {k: [(o, a if a not in ("A", "B", "C") else rename[a], i) for o, a, i in v]
         for k, v in got.items()}


def test_program_has_arithmetic_barriers_and_branches():
    ops = {op for _, op, _, _ in walk.warp_stream(gemm_tiled.program(16, 16, 32, 8), 0, 0)}
    from simulator.simt import isa
    assert {isa.LDG, isa.STS, isa.BAR, isa.LDS, isa.FFMA, isa.BRA, isa.STG} <= ops
    # a warp entirely in the padding of a convolution branches around its loads
    op = Conv2d(N=1, C=1, H=4, W=4, K=1, R=3, S=3, padding=1)
    stream = walk.warp_stream(conv_direct.program(op, 32), 0, 0)
    loads = [a for _, o, _, a in stream if o == isa.LDG]
    assert len(loads) == 2 * 9 and min((a >= 0).sum() for a in loads) < 16


# ---------------------------------------------------------------- engine invariants

CASES = [("relu", dict(n=50_000, grid=30, block=128)), ("matadd", dict(m=64, n=96)),
         ("gemm-naive", dict(m=64, n=64, k=32)), ("gemm-naive", dict(m=64, n=64, k=32, thread_x="rows")),
         ("gemm-tiled", dict(m=64, n=48, k=40, tile=16)),
         ("conv-direct", dict(conv=Conv2d(N=1, C=8, H=12, W=12, K=16, R=3, S=3, padding=1))),
         ("conv-direct", dict(conv=Conv2d(N=1, C=8, H=12, W=12, K=16, R=3, S=3, padding=1, layout="nhwc"))),
         ("conv-im2col", dict(conv=Conv2d(N=1, C=8, H=12, W=12, K=16, R=3, S=3, stride=2, padding=1)))]


def _valid_taps(op):
    taps = 0
    for p in range(op.P):
        for q in range(op.Q):
            for r in range(op.R):
                for s in range(op.S):
                    h, w = p * op.stride + r - op.padding, q * op.stride + s - op.padding
                    taps += 0 <= h < op.H and 0 <= w < op.W
    return taps * op.N * op.K * op.C


@pytest.mark.parametrize("hw", [FERMI, H100], ids=["gtx480", "h100"])
@pytest.mark.parametrize("kernel,kw", CASES, ids=[f"{k}{i}" for i, (k, _) in enumerate(CASES)])
def test_engine_invariants(hw, kernel, kw):
    prob = api.build(hw, kernel, **kw)
    r = engine.simulate(hw, prob.programs, mode="full")
    bound = roofline_bound(hw, prob.op).seconds
    assert r.seconds >= bound
    assert r.bytes_by_level["dram"] >= prob.op.min_bytes()
    op = prob.op
    if kernel == "gemm-tiled":      # zero-padded tiles: every lane multiplies T per tile
        T = kw["tile"]
        expected = 2 * (-(-op.M // T) * T) * (-(-op.N // T) * T) * (-(-op.K // T) * T)
    elif kernel.startswith("conv"):
        expected = 2 * _valid_taps(op) if kernel == "conv-direct" else None
    else:
        expected = op.flops()
    if kernel == "conv-im2col":     # the GEMM multiplies padded tiles of the column matrix
        M, N, K = conv_im2col.gemm_dims(op)
        expected = 2 * (-(-M // 16) * 16) * (-(-N // 16) * 16) * (-(-K // 16) * 16)
    assert r.extra["flops_executed"] == expected
    assert r.instructions > 0 and 0 < r.ipc <= hw.sm_count * hw.sm.warp_schedulers
    stall_total = sum(r.stalls_by_cause.values())
    assert stall_total >= 0


def test_deterministic():
    prob = api.build(FERMI, "gemm-tiled", m=96, n=96, k=64, tile=16)
    a = engine.simulate(FERMI, prob.programs, trace=500)
    b = engine.simulate(FERMI, prob.programs, trace=500)
    assert a.cycles == b.cycles and a.stalls_by_cause == b.stalls_by_cause
    assert a.bytes_by_level == b.bytes_by_level
    assert np.array_equal(a.detail.launches[0].trace, b.detail.launches[0].trace)
    assert np.array_equal(a.detail.launches[0].blocks["end"], b.detail.launches[0].blocks["end"])
    assert a.to_dict() == {**b.to_dict(), "wall_seconds": a.wall_seconds}


def test_policies_and_barriers():
    prob = api.build(FERMI, "gemm-tiled", m=128, n=128, k=64, tile=16)
    g = engine.simulate(FERMI, prob.programs, policy="gto")
    lr = engine.simulate(FERMI, prob.programs, policy="lrr")
    assert g.cycles != lr.cycles
    assert g.stalls_by_cause["barrier"] > 0
    assert g.extra["flops_executed"] == lr.extra["flops_executed"]
    assert (g.extra["policy"], lr.detail.policy) == ("gto", "lrr")


def test_coalescing_moves_more_bytes():
    cols = engine.simulate(FERMI, api.build(FERMI, "gemm-naive", m=64, n=64, k=32).programs)
    rows = engine.simulate(FERMI, api.build(FERMI, "gemm-naive", m=64, n=64, k=32, thread_x="rows").programs)
    assert rows.bytes_by_level["l1"] >= 4 * cols.bytes_by_level["l1"]
    assert rows.cycles > cols.cycles


def test_more_dram_bandwidth_is_faster_for_a_streaming_kernel():
    # a Fermi that issues four warps a cycle, so that memory and not issue (relu's
    # compiled loop spends some 20 instructions per element) sets the time
    fast = hwmodels.with_overrides(FERMI, ["sm.issue_interval_cycles=1", "sm.fp32_lanes=64",
                                           "sm.warp_schedulers=4"])
    prob = api.build(fast, "relu", n=1 << 19, grid=240, block=256)
    # from an empty L2, so that the reads set the pace (cold, the L2 full of earlier
    # launches' lines, their write-backs share the channels from the first block on:
    # test_a_cold_launch_writes_back_what_earlier_launches_left_dirty)
    slow = engine.simulate(fast, prob.programs, l2="flushed")
    # DRAM-bound: within 15% of bytes / bandwidth
    t_bw = slow.bytes_by_level["dram"] / fast.dram.bandwidth_bytes_per_s
    assert t_bw <= slow.seconds <= 1.15 * t_bw
    # twice the bandwidth helps little while the MSHRs (Little's law) cap the requests in
    # flight; with twice the MSHRs too it runs much faster
    more_bw = hwmodels.with_overrides(fast, ["dram.bandwidth_bytes_per_s=354.8GB/s"])
    both = hwmodels.with_overrides(more_bw, ["sm.l1.mshrs=64"])
    r_bw = engine.simulate(more_bw, prob.programs, l2="flushed")
    r_both = engine.simulate(both, prob.programs, l2="flushed")
    assert r_both.cycles < 0.7 * slow.cycles and r_both.cycles < 0.85 * r_bw.cycles
    assert r_bw.stalls_by_cause["mshr"] > r_bw.stalls_by_cause["memory"]


@pytest.mark.parametrize("kernel,kw", [("relu", dict(n=1 << 21, grid=2048, block=256)),
                                       ("relu", dict(n=1 << 22, grid=4096, block=128)),
                                       ("conv-direct", dict(conv=Conv2d(N=1, C=8, H=56, W=56, K=64,
                                                                        R=3, S=3, padding=1)))])
def test_sampled_within_two_percent_of_full(kernel, kw):
    prob = api.build(FERMI, kernel, **kw)
    full = engine.simulate(FERMI, prob.programs, mode="full")
    samp = engine.simulate(FERMI, prob.programs, mode="sampled")
    s = samp.launches[0].sampling
    assert s["extrapolated"] and s["simulated_blocks"] < 0.6 * s["total_blocks"]
    assert abs(samp.cycles / full.cycles - 1) < 0.02
    assert not full.sampled and samp.sampled
    # block sampling estimates its error; the estimate is the launch's and the Result's
    lr = samp.launches[0]
    assert isinstance(lr.estimated_error, float) and samp.estimated_error == lr.estimated_error
    assert "estimated_error" not in lr.sampling and lr.sampling["tau_cycles"] > 0
    assert lr.simulated_fraction == pytest.approx(engine.simulated_fraction(FERMI, prob.programs[0]))
    assert full.estimated_error is None and full.launches[0].simulated_fraction == 1.0


def test_short_launches_are_not_sampled():
    prob = api.build(FERMI, "matadd", m=64, n=64)
    r = engine.simulate(FERMI, prob.programs, mode="sampled")
    assert not r.sampled and r.launches[0].sampling["simulated_blocks"] == 16
    assert r.simulated_fraction == 1.0 and r.estimated_error is None


@pytest.mark.parametrize("kernel,kw", CASES[:6])
def test_analytic_tracks_engine(kernel, kw):
    prob = api.build(FERMI, kernel, **kw)
    e = engine.simulate(FERMI, prob.programs)
    a = analytic.predict(FERMI, prob.programs)
    assert 0.5 < a.cycles / e.cycles < 2.0


# ---------------------------------------------------------------- pieces by hand

@pytest.mark.parametrize("words,passes", [([0] * 32, 1), (list(range(32)), 1),
                                          ([2 * i for i in range(32)], 2),
                                          ([32 * i for i in range(32)], 32),
                                          ([32 * (i % 4) for i in range(32)], 4),
                                          ([0, 32] + [-1] * 30, 2)])
def test_bank_passes(words, passes):
    addr = np.array([[4 * w if w >= 0 else -1 for w in words]], np.int64)
    assert core.bank_passes(addr, 0, 32, 4, np.zeros((33, 33), np.int64)) == passes


def test_segments_sorted_distinct():
    addr = np.array([[4 * i for i in range(32)]], np.int64)
    out = np.zeros((1, 33), np.int64)
    assert core.segments(addr, 0, 32, out) == 4 and list(out[0, :4]) == [0, 1, 2, 3]
    addr = np.array([[4 * 32 * i if i % 2 else -1 for i in range(32)]], np.int64)
    assert core.segments(addr, 0, 128, out) == 16


# ---------------------------------------------------------------- bad launches

def test_bad_launches():
    with pytest.raises(ValueError, match="2048 threads exceed gtx480's 1024 per block"):
        api.build(FERMI, "relu", n=100, grid=1, block=2048)
    with pytest.raises(ValueError, match="grid = 0"):
        Launch(0, 32)
    prog = api.build(FERMI, "gemm-tiled", m=32, n=32, k=32, tile=16).programs[0]
    big = dataclasses.replace(prog, smem_per_block=64 * 1024)
    with pytest.raises(ValueError, match="smem_bytes = 65536: exceeds gtx480's shared memory per block"):
        engine.simulate(FERMI, big)
    with pytest.raises(ValueError, match="gemm-naive does not take grid|--grid applies to relu"):
        api.build(FERMI, "gemm-naive", m=8, n=8, k=8, grid=4)
    with pytest.raises(ValueError, match="not a SIMT GPU"):
        engine.simulate(hwmodels.get("tpu-v1"), prog)
    with pytest.raises(ValueError, match="policy='fifo'"):
        engine.simulate(FERMI, prog, policy="fifo")


@pytest.mark.parametrize("n,grid", [(1 << 24, 8448),     # 128 MiB: past the L2; 2 trips or 1
                                    (1 << 21, 33792)])   # 16 MiB: 2,048 working blocks, the rest empty
def test_sampled_follows_uneven_work_and_a_full_l2(n, grid):
    """Sampling on the H100 where blocks differ in work (a grid-stride loop's last blocks
    run a trip fewer; blocks past n do nothing) and the L2 is full of the previous
    launch's dirty lines: the skipped middle is priced from its own run's head."""
    hw = hwmodels.get("h100-sxm")
    prob = api.build(hw, "relu", n=n, grid=grid, block=1024)
    full = engine.simulate(hw, prob.programs, mode="full", l2="warm")
    samp = engine.simulate(hw, prob.programs, mode="sampled", l2="warm")
    s = samp.launches[0].sampling
    assert s["extrapolated"] and s["simulated_blocks"] < 0.6 * s["total_blocks"]
    assert abs(samp.cycles / full.cycles - 1) < 0.03
    assert abs(samp.bytes_by_level["dram"] / full.bytes_by_level["dram"] - 1) < 0.1


def test_a_repeated_launch_past_the_l2_writes_back_from_the_start():
    """l2="warm" on a footprint larger than the L2: the L2 starts full of the previous
    launch's lines, dirty in the share the launch writes (relu: half), so the first
    blocks already pay write-backs: DRAM bytes ~ read + write, not read alone."""
    hw = hwmodels.get("h100-sxm")
    n = 1 << 24
    prob = api.build(hw, "relu", n=n, grid=264, block=1024)
    assert engine.written_fraction(prob.programs) == pytest.approx(0.5)
    empty = engine.simulate(hw, prob.programs, l2="flushed")
    warm = engine.simulate(hw, prob.programs, l2="warm")
    written_back = warm.bytes_by_level["dram"] - warm.extra["dram_flush_bytes"]
    assert written_back == pytest.approx(8 * n, rel=0.02)       # x read, y written back
    assert warm.cycles > empty.cycles


def test_a_cold_launch_writes_back_what_earlier_launches_left_dirty():
    """Cold (the default): the arrays not in the L2, which is full of earlier launches'
    lines, dirty in the share the launch writes. A relu whose 32 MiB fit in the H100's
    L2 then writes back, in steady state, about as many bytes as it stores -- the lines
    the launches before it left dirty -- and leaves no final flush (the next launch pays
    for its own), each at the DRAM's sustained bandwidth. From an empty L2
    (``l2="flushed"``, as Nsight Compute profiles) it writes back nothing during the launch
    and leaves its stores dirty."""
    hw = hwmodels.get("h100-sxm")
    n = 1 << 22
    prob = api.build(hw, "relu", n=n)
    cold = engine.simulate(hw, prob.programs)
    empty = engine.simulate(hw, prob.programs, l2="flushed")
    assert cold.extra["dram_prior_write_bytes"] == pytest.approx(4 * n, rel=0.05)
    assert cold.extra["dram_flush_bytes"] == 0
    assert cold.bytes_by_level["dram"] == pytest.approx(8 * n, rel=0.05)
    assert empty.extra["dram_prior_write_bytes"] == 0
    assert empty.extra["dram_flush_bytes"] == pytest.approx(4 * n, rel=0.01)
    # DRAM-bound: the write-backs cost their bytes at the DRAM's sustained bandwidth
    bw = hw.dram.bandwidth_bytes_per_s * hw.dram.sustained_fraction
    extra = cold.seconds - empty.seconds
    assert extra == pytest.approx(cold.extra["dram_prior_write_bytes"] / bw, rel=0.25)


def test_a_slice_leaves_the_victims_of_other_sms_first_touches_to_them():
    """A sampled slice of one SM of a cold tiled GEMM reads A and B panels that the whole
    GPU fetches once for all SMs: those first touches evict earlier launches' dirty lines
    on the SMs that fetch them, not on the slice's share of the DRAM (which made it 18%
    slow), so the time stays within 3% of the run from an empty L2; the write-backs
    counted are those of as many lines as the launch allocates (its footprint, which
    fits in the L2), in the share dirty."""
    hw = hwmodels.get("h100-sxm")
    prob = api.build(hw, "gemm-tiled", m=1000, n=3000, k=500, tile=8)
    cold = engine.simulate(hw, prob.programs, mode="sampled")
    empty = engine.simulate(hw, prob.programs, mode="sampled", l2="flushed")
    assert cold.launches[0].sampling["sms"] < hw.sm_count
    dirty = engine.footprint_bytes(prob.programs) * engine.written_fraction(prob.programs)
    assert cold.extra["dram_prior_write_bytes"] == pytest.approx(dirty, rel=0.05)
    assert abs(cold.cycles / empty.cycles - 1) < 0.03


@pytest.mark.parametrize("kernel,kw", [("gemm-tiled", dict(m=128, n=128, k=4096, tile=16)),
                                       ("conv-direct", dict(conv=Conv2d(N=1, C=64, H=14, W=14, K=64,
                                                                        R=3, S=3, padding=1)))])
def test_trip_extrapolation_within_five_percent_of_full(kernel, kw):
    """Long loops (256 and 576 trips): sampled mode runs the loop cut at three multiples of
    its period near 16, 32 and 48 trips (the conv's c loop: 9 taps, so 18, 36 and 54) and
    extends the line through the last two; the instruction count is exact."""
    prob = api.build(FERMI, kernel, **kw)
    full = engine.simulate(FERMI, prob.programs, mode="full")
    samp = engine.simulate(FERMI, prob.programs, mode="sampled")
    s = samp.launches[0].sampling
    assert s["extrapolated"] and s["trips"] > engine.TRIP_SAMPLE_MIN
    period = 9 if kernel == "conv-direct" else 1
    lo = period * -(-16 // period)
    assert s["trip_caps"] == [lo, 2 * lo, 3 * lo]
    assert abs(samp.cycles / full.cycles - 1) < 0.03
    assert samp.instructions == pytest.approx(full.instructions, rel=1e-3)
    # the slope of the first pair of cut runs against the second's is the error estimate:
    # it covers the error made
    assert samp.estimated_error is not None
    assert abs(samp.cycles / full.cycles - 1) <= samp.estimated_error + 0.01
    assert samp.simulated_fraction == pytest.approx(engine.simulated_fraction(FERMI, prob.programs[0]))
    assert samp.simulated_fraction < 0.5 and full.simulated_fraction == 1.0


def test_l1_is_what_the_shared_memory_carveout_leaves():
    """Hopper's 256 KiB L1 + shared array: a kernel without shared memory gets all of it
    as L1; a tiled GEMM's resident blocks take the smallest carveout that holds them."""
    hw = hwmodels.get("h100-sxm")
    naive = api.build(hw, "gemm-naive", m=256, n=256, k=64).programs[0]
    occ = engine.launch_occupancy(hw, naive)
    assert engine.l1_capacity(hw, occ, naive.smem_per_block) == 256 * 1024
    tiled = api.build(hw, "gemm-tiled", m=256, n=256, k=64, tile=32).programs[0]
    occ = engine.launch_occupancy(hw, tiled)
    need = occ.blocks_per_sm * occ.shared_bytes_per_block          # 2 x (8 KiB + 1 KiB)
    carve = min(c for c in (0, 8, 16, 32, 64, 100, 132, 164, 196, 228) if c * 1024 >= need)
    assert engine.l1_capacity(hw, occ, tiled.smem_per_block) == (256 - carve) * 1024
    # a fixed L1 (Fermi's) stays as the preset says
    occ = engine.launch_occupancy(FERMI, api.build(FERMI, "relu", n=4096).programs[0])
    assert engine.l1_capacity(FERMI, occ) == FERMI.sm.l1.size_bytes


def test_bad_carveouts_name_the_field():
    hw = hwmodels.get("h100-sxm")
    with pytest.raises(ValueError, match="shared_carveouts_bytes"):
        hwmodels.with_overrides(hw, ["sm.shared_carveouts_bytes=0B,8KiB,x"])
    with pytest.raises(ValueError, match="shared_carveouts_bytes"):
        hwmodels.with_overrides(hw, ["sm.shared_carveouts_bytes=0B,8KiB,16KiB"])  # below shared_bytes


def test_hashed_banks_spread_strides_and_keep_streams_balanced():
    """``memory.owner``: in turn, a walk down a 2 KiB-row matrix (16 lines apart) lands on
    5 of 80 L2 slices; hashed, on most of them. A sequential stream stays perfectly
    balanced either way (each run of 80 lines meets each slice once)."""
    n = 80
    col = [16 * r + 3 for r in range(512)]
    assert len({memory.owner(x, n, False) for x in col}) == 5
    hashed = np.bincount([memory.owner(x, n, True) for x in col], minlength=n)
    assert (hashed > 0).sum() >= 70 and hashed.max() <= 4 * len(col) / n
    for start in (0, 80 * 7, 80 * 123457):
        assert sorted(memory.owner(x, n, True) for x in range(start, start + n)) == list(range(n))
    assert memory.owner(12345, n, False) == 12345 % n


def test_hashed_banks_only_where_the_preset_says():
    assert hwmodels.get("h100-sxm").l2.hashed_banks and hwmodels.get("h200").l2.hashed_banks
    assert not hwmodels.get("gtx480").l2.hashed_banks


# ---------------------------------------------------------------- the Result and the named tables

def test_engine_result_is_the_common_schema():
    """conv-im2col: two launches on one L2. The Result's totals are its launches' (plus
    the dirty-L2 flush in dram); detail keeps the engine's per-launch timelines."""
    import json
    hw = H100
    prob = api.build(hw, "conv-im2col", conv=Conv2d(N=1, C=8, H=12, W=12, K=16, R=3, S=3, padding=1))
    r = engine.simulate(hw, prob.programs, trace=100)
    assert isinstance(r, schema.Result)
    assert (r.predictor, r.mode, r.hardware) == ("engine", "full", hw.name)
    assert r.workload == prob.programs[0].name and len(r.launches) == 2
    assert all(isinstance(x, schema.Launch) for x in r.launches)
    assert r.flops == sum(p.flops for p in prob.programs)
    assert r.compulsory_bytes == sum(p.min_bytes for p in prob.programs)
    assert r.cycles == sum(x.cycles for x in r.launches) and r.seconds == r.cycles / hw.clock_hz
    assert r.instructions == sum(x.instructions for x in r.launches)
    for k in ("l1", "shared", "l2"):
        assert r.bytes_by_level[k] == sum(x.bytes_by_level[k] for x in r.launches)
    assert r.bytes_by_level["dram"] == (sum(x.bytes_by_level["dram"] for x in r.launches)
                                        + r.extra["dram_flush_bytes"])
    assert r.stalls_by_cause == {c: sum(x.stalls_by_cause[c] for x in r.launches) for c in core.CAUSES}
    assert r.simulated_fraction == 1.0 and r.estimated_error is None and not r.sampled
    sm = hw.sm
    assert 0 < r.utilization <= 1
    assert r.utilization == pytest.approx(r.instructions * sm.issue_interval_cycles
                                          / (hw.sm_count * sm.warp_schedulers * r.cycles))
    assert set(r.extra) == {"flops_executed", "dram_flush_bytes", "dram_prior_write_bytes",
                            "hit_rates", "policy"}
    assert 0 <= r.extra["hit_rates"]["l2"] <= 1
    lr, first = r.detail.launches[1], r.launches[1]
    assert (first.kernel, first.grid, first.block) == (lr.program.name, lr.program.launch.grid,
                                                       lr.program.launch.block)
    assert first.blocks_per_sm == lr.occupancy.blocks_per_sm and first.waves == lr.waves
    assert isinstance(lr.stats, stats.LaunchStats)
    assert first.hit_rates == lr.stats.hit_rates() and first.bytes_by_level == lr.stats.bytes_by_level()
    assert lr.stats.warp_instructions == first.instructions
    assert len(r.detail.launches[0].trace) == 100
    assert len(lr.blocks["end"]) == prob.programs[1].launch.blocks
    d = json.loads(json.dumps(r.to_dict()))
    assert d["predictor"] == "engine" and d["launches"][1]["cycles"] == first.cycles
    assert "detail" not in d


def test_analytic_result_is_the_common_schema():
    op = Conv2d(N=1, C=8, H=12, W=12, K=16, R=3, S=3, padding=1)
    prob = api.build(FERMI, "conv-im2col", conv=op)
    a = analytic.predict(FERMI, prob.programs)
    assert isinstance(a, schema.Result) and (a.predictor, a.mode) == ("analytic", "analytic")
    assert a.simulated_fraction is None and a.estimated_error is None and not a.sampled
    assert a.cycles == sum(x.cycles for x in a.detail.launches) == sum(x.cycles for x in a.launches)
    assert a.limiter == a.launches[-1].limiter == a.detail.launches[-1].limiter
    assert a.launches[0].terms == a.detail.launches[0].terms
    assert a.launches[0].limiter in a.launches[0].terms
    assert a.instructions == sum(x.warp_instructions for x in a.detail.launches)
    assert a.bytes_by_level == {k: sum(x.bytes_by_level[k] for x in a.detail.launches)
                                for k in ("l1", "l2", "dram")}
    assert a.launches[1].occupancy == a.detail.launches[1].occupancy.occupancy


def test_hardware_vector_is_its_field_table():
    """One row per field: the H_* indices are the table's, the values the accessors'."""
    assert hwvec.N_HW == len(hwvec.HW_FIELDS) == len(set(hwvec.HW_NAMES))
    indices = sorted(getattr(hwvec, n) for n in dir(hwvec) if n.startswith("H_"))
    assert indices == list(range(hwvec.N_HW))
    prog = api.build(H100, "gemm-tiled", m=256, n=256, k=64, tile=32).programs[0]
    occ = engine.launch_occupancy(H100, prog)
    h = hwvec.describe(engine.hw_vector(H100, occ, "lrr", prog.smem_per_block))
    assert h["n_sm"] == H100.sm_count and h["gto"] == 0.0 and h["blocks_per_sm"] == occ.blocks_per_sm
    l1 = engine.l1_capacity(H100, occ, prog.smem_per_block)
    assert h["l1_sets"] * h["l1_ways"] * h["segment_bytes"] == l1
    assert h["int_ii"] > 0 and h["l2_hashed"] == 1.0
    fermi_occ = engine.launch_occupancy(FERMI, prog)
    assert hwvec.describe(engine.hw_vector(FERMI, fermi_occ, "gto"))["int_ii"] == 0
    bad = hwmodels.with_overrides(FERMI, ["sm.l1.sector_bytes=16B"])
    with pytest.raises(ValueError, match="below l2.sector_bytes"):
        engine.hw_vector(bad, engine.launch_occupancy(FERMI, prog), "gto")


def test_statistics_are_named():
    assert stats.N_STATS == len(stats.STAT_NAMES)
    indices = sorted(getattr(stats, n) for n in dir(stats) if n.startswith("S_"))
    assert indices == list(range(stats.N_STATS))
    v = np.arange(stats.N_STATS, dtype=float)
    s = stats.LaunchStats.from_vector(v)
    assert s.l2_hits == stats.S_L2HIT and s.scheduler_looks == stats.S_LOOKS
    assert s.bytes_by_level()["dram"] == stats.S_DRB + stats.S_DWB
    with pytest.raises(ValueError, match="statistics vector"):
        stats.LaunchStats.from_vector(v[:-1])
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.l1_hits = 0
    assert stats.hit_rates(0, 0, 3, 1) == {"l1": None, "l2": 0.75}


def test_l1_by_hand():
    """memory's L1: a load misses, is filled, then hits (at the later of the latency and
    the fill); a store counts and drops the copy; the LRU way is the victim."""
    prog = api.build(FERMI, "relu", n=4096).programs[0]
    hp = engine.hw_vector(FERMI, engine.launch_occupancy(FERMI, prog), "gto")
    sets, ways = int(hp[hwvec.H_L1SETS]), int(hp[hwvec.H_L1WAYS])
    tags = np.full((2, sets, ways), -1, np.int64)
    lru = np.zeros((2, sets, ways), np.int64)
    fill = np.zeros((2, sets, ways))
    st = np.zeros(stats.N_STATS)
    s = 5 * sets + 3
    assert memory.l1_read(s, 10.0, hp, tags, lru, fill, 1, 1, st) == -1.0
    memory.l1_fill(s, hp, tags, lru, fill, 1, 1, 500.0)
    assert memory.l1_holds(tags, 1, s, sets, ways, False) and \
        not memory.l1_holds(tags, 0, s, sets, ways, False)
    lat = hp[hwvec.H_L1LAT]
    assert memory.l1_read(s, 20.0, hp, tags, lru, fill, 1, 2, st) == 500.0        # fill in flight
    assert memory.l1_read(s, 600.0, hp, tags, lru, fill, 1, 3, st) == 600.0 + lat
    memory.l1_write(s, hp, tags, 1, st, True)
    assert not memory.l1_holds(tags, 1, s, sets, ways, False)
    c = stats.LaunchStats.from_vector(st)
    assert (c.l1_hits, c.l1_misses, c.global_load_segments, c.global_store_segments) == (2, 1, 3, 1)
    assert c.l1_bytes == 3 * hp[hwvec.H_SEG]
    for i in range(ways):                       # fill the set; the first-filled way is LRU
        memory.l1_fill(3 + i * sets, hp, tags, lru, fill, 0, 10 + i, 0.0)
    memory.l1_fill(3 + ways * sets, hp, tags, lru, fill, 0, 99, 0.0)
    assert not memory.l1_holds(tags, 0, 3, sets, ways, False) and \
        memory.l1_holds(tags, 0, 3 + sets, sets, ways, False)


def test_hashed_l1_sets_spread_power_of_two_rows():
    """A warp whose 32 threads each walk a row 16 KB apart: modulo sets put the rows in a
    few sets (they thrash), hashed sets (the Hopper presets) spread them; either way a
    segment has one set, in range."""
    sets = 2048
    rows = 512 * np.arange(32)                       # 16 KB rows: 512 segments apart
    plain = {memory.l1_set(int(s), sets, False) for s in rows}
    hashed = {memory.l1_set(int(s), sets, True) for s in rows}
    assert len(plain) == 4 and len(hashed) == 32
    assert all(0 <= memory.l1_set(s, 1248, True) < 1248 for s in range(0, 10 ** 6, 997))
    assert H100.sm.l1.hashed_sets and not FERMI.sm.l1.hashed_sets


def test_hopper_l1_serves_scattered_lines_one_a_cycle():
    """The lines suite: an H100 warp request touching 8, 16 or 32 lines takes 8.0, 16.0,
    32.1 cycles of the L1. The Hopper presets say so (``lines_per_cycle = 1``): the
    uncoalesced naive GEMM (every load of A on 16 lines) slows, the coalesced one does
    not, and a preset without it prices requests by bytes alone."""
    assert H100.sm.l1.lines_per_cycle == 1.0 and FERMI.sm.l1.lines_per_cycle is None
    by_bytes = dataclasses.replace(H100, sm=dataclasses.replace(
        H100.sm, l1=dataclasses.replace(H100.sm.l1, lines_per_cycle=None)))
    rows = api.build(H100, "gemm-naive", m=512, n=512, k=64, thread_x="rows").programs
    cols = api.build(H100, "gemm-naive", m=512, n=512, k=64).programs
    # from an empty L2: the earlier launches' write-backs of a cold start, alike in both,
    # would dilute the L1's share of the time; sampled (2 minutes in full mode), within
    # the 2% of full that test_sampled_within_two_percent_of_full holds it to
    def sim(hw, progs):
        return engine.simulate(hw, progs, l2="flushed", mode="sampled").cycles
    assert sim(H100, rows) > 1.25 * sim(by_bytes, rows)
    assert sim(H100, cols) == pytest.approx(sim(by_bytes, cols), rel=0.02)
    with pytest.raises(ValueError, match="lines_per_cycle"):
        dataclasses.replace(H100.sm.l1, lines_per_cycle=0)


def _recording(rows):
    """A ``scheduler`` recording of ``rows`` (op, dst, r0, r1, r2, latency, units, lines;
    none in a loop's body)."""
    from simulator.simt import scheduler
    rec = scheduler.recording(len(rows))
    rec[0, 0] = len(rows)
    rec[1:len(rows) + 1] = [(*r, 0) for r in rows]
    return rec


def _sched(rec, n, per_block=1, *, gto=1, share=4.0, int_ii=2.0, lat_mem=300.0, rows=1 << 30):
    from simulator.simt import scheduler
    # issue 1, SP II 1, INT II int_ii, no FP64 pipe, SFU II 2, LD/ST II 1, a segment 0.25
    # cycles at the L1's bandwidth, a line 1 cycle
    h = np.zeros(hwvec.N_HW)
    h[[hwvec.H_ISSUE, hwvec.H_SPII, hwvec.H_INTII, hwvec.H_FP64II, hwvec.H_SFUII,
       hwvec.H_LDSTII]] = (1.0, 1.0, int_ii, 0.0, 2.0, 1.0)
    return scheduler.run(rec, n, per_block, 8, gto, share, h, 0.25, 1.0, lat_mem, rows)


def test_scheduler_run_closed_forms():
    """``scheduler.run``, the analytic model's interference, against what its rules give
    by hand: independent FFMAs issue one a cycle whatever the warps (n x K); a dependent
    chain one per latency for one warp alone (K x 4) and one a cycle with enough warps
    to cover it; INT32 instructions at the pipe's interval (2n x K); shared loads on
    the SM's LD/ST unit, shared by 4 schedulers (4n x K); a global load's dependant
    waits the load latency given; and a barrier makes a block's warps wait for its
    slowest."""
    from simulator.simt import isa
    K = 64
    ffma = _recording([(isa.FFMA, 1, 2, 3, -1, 4, 0, 0)] * K)
    assert _sched(ffma, 1) == K and _sched(ffma, 8) == 8 * K
    chain = _recording([(isa.FFMA, 1, 1, 2, -1, 4, 0, 0)] * K)
    assert _sched(chain, 1) == pytest.approx(4 * (K - 1) + 1)
    assert _sched(chain, 8) == pytest.approx(8 * K, abs=8)
    alu = _recording([(isa.ALU, 1, 2, -1, -1, 4, 0, 0)] * K)
    assert _sched(alu, 3) == pytest.approx(2 * 3 * K, abs=2)
    assert _sched(alu, 3, int_ii=0.0) == 3 * K              # no INT32 pipe: on the SP's
    lds = _recording([(isa.LDS, 1, 2, -1, -1, 30, 1, 0)] * K)
    assert _sched(lds, 2) == pytest.approx(4 * 2 * K, abs=4)
    assert _sched(lds, 2, share=1.0) == 2 * K
    load_use = _recording([(isa.LDG, 1, 2, -1, -1, 0, 1, 1), (isa.FFMA, 3, 1, 1, -1, 4, 0, 0)])
    assert _sched(load_use, 1, lat_mem=500.0) == pytest.approx(501)
    assert _sched(load_use, 1, lat_mem=100.0) == pytest.approx(101)
    # two warps of a block: a 300-cycle load before the barrier holds both past it
    bar = _recording([(isa.LDG, 1, 2, -1, -1, 0, 1, 1), (isa.FFMA, 3, 1, -1, -1, 4, 0, 0),
                      (isa.BAR, -1, -1, -1, -1, 0, 0, 0)] + [(isa.FFMA, 4, 5, 6, -1, 4, 0, 0)] * K)
    assert _sched(bar, 2, per_block=2) >= 300 + 2 * K
    assert _sched(bar, 2, per_block=2) == pytest.approx(_sched(bar, 2), abs=4)
    # the rows asked for, not more
    assert _sched(ffma, 2, rows=10) == 20
    # LRR and GTO alike on independent work
    assert _sched(ffma, 4, gto=0) == 4 * K


def test_scheduler_interference_is_the_engines():
    """The interference the analytic model takes from ``scheduler.run`` brings it to the
    engine where the busiest unit alone did not: a tiled GEMM (its LD/ST unit, issue
    slots and INT32 pipe all near saturation, a barrier every tile) and a direct
    convolution (no barrier; FP32 and INT32 pipes under one issue slot), each within 15%
    of the engine in sampled mode, and above the busiest unit's time by 10% or more."""
    from simulator.simt import analytic
    from workloads.ir import Conv2d
    conv = Conv2d(name="c", N=8, C=64, H=28, W=28, K=64, R=3, S=3, padding=1)
    for kernel, args in (("gemm-tiled", dict(m=1024, n=1024, k=1024, tile=16)),
                         ("conv-direct", dict(conv=conv))):
        prob = api.build(H100, kernel, **args)
        a = analytic.predict(H100, prob.programs)
        e = engine.simulate(H100, prob.programs, mode="sampled")
        la = a.detail.launches[-1]
        assert 0.85 < a.seconds / e.seconds < 1.15, (kernel, a.seconds / e.seconds)
        assert la.terms["issue"] > 1.1 * max(la.units.values()), (kernel, la.terms, la.units)


@pytest.mark.parametrize("kernel,args", [
    ("gemm-tiled", dict(m=64, n=64, k=2048, tile=16)),        # barriers, shared memory
    ("gemm-naive", dict(m=64, n=64, k=256, block=(32, 8))),    # a load on every trip
    ("conv-direct", dict(conv=Conv2d(name="c", N=1, C=16, H=14, W=14, K=8, R=3, S=3,
                                     padding=1)))])            # a loop nest, whole periods
def test_retime_is_a_second_walk(kernel, args):
    """``walk.retime`` (the analytic model's second latency) gives, from the recording
    of a walk at one load latency, exactly the T1 a second walk at another latency
    gives, for a template's warps (their body scaled to the trips) and for a trace's
    (the same warps recorded); the counts do not depend on the latency."""
    from simulator.simt import scheduler
    from simulator.simt.hwvec import hw_vector
    prog = api.build(H100, kernel, **args).programs[-1]
    occ = engine.launch_occupancy(H100, prog)
    h = hw_vector(H100, occ, "gto", prog.smem_per_block)
    code = core.program_arrays(prog)
    trace = walk.from_template(prog, blocks=[1])
    wpb = -(-prog.launch.threads_per_block // 32)
    scaled = False
    for w in range(min(wpb, 3)):
        rec = scheduler.recording(analytic.RETIME_ROWS)
        at = analytic._profile(prog, code, h, 1, w, 260.0, np.zeros(2, np.int64), rec)
        assert 0 < rec[0, 0] < analytic.RETIME_ROWS
        scaled |= at[walk.P_SCALE] > 0
        k = w
        trec = scheduler.recording(int(trace.warp_begin[k + 1] - trace.warp_begin[k]) + 1)
        targs = (trace.rows, trace.addresses, int(trace.warp_begin[k]),
                 int(trace.warp_begin[k + 1]), int(trace.n_regs), h)
        tat = walk.profile_trace(*targs, 260.0, np.zeros(2, np.int64), trec)
        assert tat[walk.P_INSTR] == trec[0, 0] > 0       # every event it walked, recorded
        for lat in (260.0, 33.0, 611.5):
            again = analytic._profile(prog, code, h, 1, w, lat, np.zeros(2, np.int64))
            assert walk.retime(rec, int(code.n_regs), h, lat, at[walk.P_SCALE]) == again[walk.P_T1]
            keep = np.arange(walk.N_PROFILE) != walk.P_T1
            assert np.array_equal(at[keep], again[keep])
            tagain = walk.profile_trace(*targs, lat, np.zeros(2, np.int64), scheduler.recording(1))
            assert walk.retime(trec, int(trace.n_regs), h, lat, 0.0) == tagain[walk.P_T1]
    assert scaled          # each walks part of its loop and scales it


def test_analytic_one_partly_filled_block_is_not_its_empty_warps():
    """A convolution whose grid is one block, partly filled: the analytic model samples
    every warp of it (its last warps have nothing to do) and lands near full mode, where
    it once priced only the empty last warp (0.3 us against 299 us)."""
    from simulator.simt import analytic
    from workloads.ir import Conv2d
    op = Conv2d(name="c", N=1, C=64, H=8, W=8, K=4, R=3, S=3)
    prob = api.build(FERMI, "conv-direct", conv=op)
    a = analytic.predict(FERMI, prob.programs)
    full = engine.simulate(FERMI, prob.programs, mode="full")
    assert prob.programs[0].launch.blocks == 1
    assert 0.5 < a.seconds / full.seconds < 1.5
    assert 0.8 < a.instructions / full.instructions < 1.25


def test_l2_placement_matches_a_sort_by_set():
    """``memory.place`` (one pass, per-set counters) puts the same sectors in the same
    ways as sorting the sectors by set, stably, and keeping each set's first ``ways``;
    the rest of the cache untouched. Random orders, sets that overflow and sets left empty."""
    from simulator.simt import memory
    rng = np.random.default_rng(7)
    for sets, ways, n in ((16, 4, 40), (16, 4, 200), (7, 3, 1000), (64, 8, 10)):
        tags = rng.integers(-1, 50, (1, sets + 5, ways)).astype(np.int64)
        lru = rng.integers(0, 9, tags.shape).astype(np.int64)
        fill = rng.random(tags.shape)
        dirty = rng.random(tags.shape) < 0.5
        sectors = rng.permutation(10 * n)[:n].astype(np.int64)
        want = [a.copy() for a in (tags, lru, fill, dirty)]
        st = sectors % sets
        order = np.argsort(st, kind="stable")
        st_s, sec_s = st[order], sectors[order]
        way = np.arange(st_s.size) - np.searchsorted(st_s, st_s, side="left")
        k = way < ways
        want[0][0, st_s[k], way[k]] = sec_s[k]
        want[1][0, st_s[k], way[k]] = 1           # used after earlier launches' lines (0)
        want[2][0, st_s[k], way[k]] = 0.0
        want[3][0, st_s[k], way[k]] = True
        memory.place(tags, lru, fill, dirty, sectors, True, sets)
        for got, exp in zip((tags, lru, fill, dirty), want):
            assert np.array_equal(got, exp), (sets, ways, n)


def test_pipes_table_is_the_rule_the_engine_and_the_walk_read():
    """``pipes``: every opcode has a row; on a preset with INT32 and FP64 rates (the
    H100) integer work holds the INT32 pipe, IMAD the FP32 pipe at the INT32 rate and
    IMAD.WIDE twice that, FP64 its own pipe; on Fermi (no INT32 rate) the integer ones
    hold the FP32 pipe at its rate. A shared load's result waits its passes at the LD/ST rate,
    a global load's the memory's, a barrier's nothing; the engine and the walk agree on
    a warp's FP32 and INT32 cycles."""
    from simulator.simt import isa, pipes
    from simulator.simt.hwvec import hw_vector
    assert pipes.PIPES.shape == (len(isa.OP_NAMES), len(pipes.PIPE_COLUMNS))
    prog = api.build(H100, "gemm-tiled", m=256, n=256, k=256, tile=16).programs[-1]
    h = hw_vector(H100, engine.launch_occupancy(H100, prog), "gto", prog.smem_per_block)
    ii = {k: float(h[getattr(hwvec, f"H_{k}")]) for k in ("SPII", "INTII", "FP64II", "LDSTII")}
    assert ii["INTII"] > 0 and ii["FP64II"] > 0
    got = {op: (int(pipes.unit_of(op, h)), float(pipes.hold(op, h)))
           for op in (isa.ALU, isa.IMAD, isa.IMADW, isa.DFMA, isa.FFMA, isa.BAR, isa.UNI)}
    assert got == {isa.ALU: (pipes.INT, ii["INTII"]), isa.IMAD: (pipes.SP, ii["INTII"]),
                   isa.IMADW: (pipes.SP, 2 * ii["INTII"]), isa.DFMA: (pipes.FP64, ii["FP64II"]),
                   isa.FFMA: (pipes.SP, ii["SPII"]), isa.BAR: (pipes.NONE, 0.0),
                   isa.UNI: (pipes.NONE, 0.0)}
    fermi = hwmodels.get("gtx480")
    hf = hw_vector(fermi, engine.launch_occupancy(fermi, prog), "gto", prog.smem_per_block)
    assert hf[hwvec.H_INTII] == 0
    for op in (isa.ALU, isa.IMAD, isa.IMADW):
        assert (pipes.unit_of(op, hf), pipes.hold(op, hf)) == (pipes.SP, hf[hwvec.H_SPII])
    passes = 3
    assert pipes.latency(isa.LDS, hf, passes, 0.0) == \
        hf[hwvec.H_SHLAT] + hf[hwvec.H_LDSTII] * (passes - 1)
    assert pipes.latency(isa.LDG, h, 1, 777.0) == 777.0
    assert pipes.latency(isa.BAR, h, 1, 777.0) == 0.0
    # the walk counts a warp's pipe cycles by the table: the engine's FP32 issues of the
    # same warp at FP32's rate (the tiled GEMM's FFMAs) are a lower bound on them
    code = core.program_arrays(prog)
    prof = walk.profile(code, 0, 0, 0, 0, h, 300.0, 1 << 20, np.zeros(2, np.int64), 0, 0,
                        analytic._NO_RECORDING)
    assert prof[walk.P_FP32_CYC] > 0 and prof[walk.P_INT_CYC] > 0

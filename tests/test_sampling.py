"""Sampled mode against full mode, the oracle: launches of every kernel on a Fermi and a
Hopper preset -- one-wave and tail-heavy grids, many waves, long loops -- within 3% in
cycles. The budget is set low so that these small launches (full runs of seconds) are
sampled as a realistic launch is at the default budget: a slice of the SMs, waves
skipped, loops cut."""
import dataclasses

import numpy as np
import pytest

import hwmodels
from simulator.simt import api, engine, hwvec
from workloads.ir import Conv2d

FERMI = hwmodels.get("gtx480")
H100 = hwmodels.get("h100-sxm")
BUDGET = 2e5
CONV = Conv2d(N=2, C=16, H=14, W=14, K=32, R=3, S=3, padding=1)

# (hardware, kernel, arguments, l2 warm): what each case is there for in its id
CASES = {
    "fermi-relu-many-waves": (FERMI, "relu", dict(n=1 << 20, grid=960, block=256), False),
    "fermi-matadd-tail": (FERMI, "matadd", dict(m=1000, n=700), False),
    "fermi-gemm-naive": (FERMI, "gemm-naive", dict(m=256, n=192, k=64), False),
    "fermi-conv-direct": (FERMI, "conv-direct", dict(conv=CONV), False),
    "fermi-conv-im2col": (FERMI, "conv-im2col", dict(conv=CONV), False),
    "h100-relu-one-wave": (H100, "relu", dict(n=1 << 21, grid=264, block=1024), True),
    "h100-relu-tail-heavy": (H100, "relu", dict(n=1 << 21, grid=300, block=512), True),
    "h100-matadd": (H100, "matadd", dict(m=1024, n=1024), True),
    "h100-gemm-naive": (H100, "gemm-naive", dict(m=256, n=256, k=128), False),
    "h100-gemm-naive-rows": (H100, "gemm-naive", dict(m=256, n=256, k=128, thread_x="rows"), False),
    "h100-gemm-tiled": (H100, "gemm-tiled", dict(m=1024, n=768, k=128, tile=16), True),
    "fermi-gemm-tiled-long-loop": (FERMI, "gemm-tiled", dict(m=128, n=128, k=4096, tile=16), False),
    "h100-conv-im2col": (H100, "conv-im2col", dict(conv=CONV), True),
    # a cold stream that writes 2.5 L2s, at half occupancy (DRAM's loaded latency): its
    # dirty write-backs start once the L2 is full, past loop cuts at 16-48 of 248 trips
    # (sampled was 8% fast until the cuts moved past the fill)
    "h100-relu-cold-stream-past-the-l2": (H100, "relu", dict(n=1 << 25, grid=528, block=256), False),
    # a padded NHWC convolution: its work repeats only with the whole 3x3 window, so the
    # loop is cut inside each tap's channel loop (48 trips, cut at 8, 16, 24)
    "fermi-conv-direct-nhwc-channel-loop-cut": (
        FERMI, "conv-direct", dict(conv=Conv2d(N=2, C=192, H=14, W=14, K=32, R=3, S=3, padding=1,
                                               layout="nhwc")), False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_sampled_within_three_percent_of_full(case):
    hw, kernel, kw, warm = CASES[case]
    prob = api.build(hw, kernel, **kw)
    full = engine.simulate(hw, prob.programs, mode="full", l2="warm" if warm else "cold")
    samp = engine.simulate(hw, prob.programs, mode="sampled", l2="warm" if warm else "cold", budget=BUDGET)
    assert samp.sampled and samp.simulated_fraction < 0.7
    assert samp.estimated_error is not None and samp.estimated_error >= 0
    assert abs(samp.cycles / full.cycles - 1) < 0.03, (samp.cycles, full.cycles)
    # counts stand for the blocks not simulated by their loop trips: a padded
    # convolution's middle blocks run more instructions than its edges
    assert samp.instructions == pytest.approx(full.instructions, rel=0.05)
    # DRAM bytes, where the arrays fit in the L2: the slice must not count the whole GPU's
    # data movement many times over, or miss it (where they overflow it, a Fermi GEMM
    # cold: up to 4x; see docs/simt.md)
    if engine.footprint_bytes(prob.programs) <= hw.l2.size_bytes:
        assert samp.bytes_by_level["dram"] == pytest.approx(full.bytes_by_level["dram"], rel=0.15)


def test_a_slice_gets_its_share_of_the_memory_system():
    """A slice of S SMs doing a share f of the work gets f of the L2's and DRAM's
    bandwidth (at least one bank and one channel) and the whole L2 capacity."""
    prob = api.build(H100, "relu", n=1 << 22, grid=1320, block=256)
    prog = prob.programs[0]
    occ = engine.launch_occupancy(H100, prog)
    h = engine.hw_vector(H100, occ, "gto", 0)
    pl = engine.plan(H100, prog, h, "sampled", budget=1e5)
    assert 1 <= pl.sms < H100.sm_count
    # block b goes to SM b mod N: the slice runs the blocks of S SMs spread over the GPU
    sms = engine.spread(pl.sms, H100.sm_count, 1320)
    assert len(sms) == pl.sms and np.all(np.diff(sms) >= H100.sm_count // pl.sms)
    # a tail's extra blocks land on the first SMs: a slice holds them first; one SM of a
    # short launch is a middle one
    assert list(engine.spread(4, 132, 300)) == [0, 36, 68, 100]       # 1 of the 36 with 3 blocks
    assert list(engine.spread(1, 132, 98)) == [49] and list(engine.spread(3, 132, 64)) == [10, 32, 53]
    assert np.array_equal(pl.positions, np.nonzero(np.isin(np.arange(1320) % H100.sm_count, sms))[0])
    assert pl.share == pytest.approx(pl.sms / H100.sm_count, rel=0.05)
    d = engine.slice_vector(H100, h, pl.sms, pl.share)
    names = hwvec.describe(d)
    assert names["l2_banks"] == max(1, round(H100.l2.banks * pl.share))
    l2_bw = H100.l2.sector_bytes / names["l2_service_cycles"] * names["l2_banks"]
    assert l2_bw == pytest.approx(H100.l2.bandwidth_bytes_per_cycle * pl.share)
    assert names["l2_sets"] == hwvec.describe(h)["l2_sets"]       # capacity whole


def test_full_mode_ignores_the_budget():
    prob = api.build(FERMI, "gemm-naive", m=128, n=64, k=32)
    a = engine.simulate(FERMI, prob.programs, mode="full")
    b = engine.simulate(FERMI, prob.programs, mode="full", budget=1)
    assert a.cycles == b.cycles and not a.sampled and a.estimated_error is None


@pytest.mark.xfail(strict=True, reason="known gaps: a launch of about a wave whose blocks differ "
                   "in instructions lasts as long as its slowest block, which a slice of a few "
                   "SMs may not hold; tiles shared through an L2 the operands overflow")
@pytest.mark.parametrize("hw,kernel,kw,warm", [
    (H100, "conv-direct", dict(conv=dataclasses.replace(CONV, N=8)), True),
    (FERMI, "gemm-tiled", dict(m=64, n=96, k=4096, tile=8), False),
    (H100, "gemm-tiled", dict(m=128, n=128, k=4096, tile=16), False),
    (H100, "conv-direct", dict(conv=dataclasses.replace(CONV, N=8, layout="nhwc")), True),
    (FERMI, "gemm-naive", dict(m=128, n=128, k=2048), False),
    # uncoalesced (threadIdx.x on C's rows), cold, on a one-SM slice of 15: -12%
    (FERMI, "gemm-naive", dict(m=256, n=256, k=256, thread_x="rows"), False)])
def test_known_gaps(hw, kernel, kw, warm):
    """Sampled mode misses full mode by 3-16% on these (recorded, not hidden): a launch of
    about a wave whose blocks differ in instructions (a padded convolution's edge blocks)
    and GEMMs with long loops, cold, sharing their tiles through the L2."""
    prob = api.build(hw, kernel, **kw)
    full = engine.simulate(hw, prob.programs, mode="full", l2="warm" if warm else "cold")
    samp = engine.simulate(hw, prob.programs, mode="sampled", l2="warm" if warm else "cold", budget=BUDGET)
    assert abs(samp.cycles / full.cycles - 1) < 0.03


def test_a_padded_nhwc_convolution_cuts_its_channel_loop():
    """The channel loop of each tap is what sampled mode cuts in a padded NHWC convolution
    (``engine.inner_caps``): the cut runs walk 8, 16 and 24 of its 48 trips at every tap,
    and the extrapolation meets full mode (the case above) -- where cutting the whole
    nest's trips is impossible (its period is the whole nest)."""
    hw, kernel, kw, warm = CASES["fermi-conv-direct-nhwc-channel-loop-cut"]
    (prog,) = api.build(hw, kernel, **kw).programs
    trips = 9 * 48
    assert prog.trip_period == trips and prog.inner_period == 48
    assert engine.trip_caps(prog, trips) is None
    assert engine.inner_caps(prog, trips) == (9 * 8, 9 * 16, 9 * 24)
    s = engine.simulate(hw, [prog], mode="sampled", budget=BUDGET)
    assert s.launches[0].sampling["inner_period"] == 48
    # a channel loop too short to cut (C = 64: 16 trips a tap) keeps the whole nest
    small = api.build(hw, kernel, conv=dataclasses.replace(kw["conv"], C=64)).programs[0]
    assert engine.inner_caps(small, 9 * 16) is None

"""Roofline invariants and the data-movement bound against simulated executions."""
import itertools
import math
from collections import OrderedDict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hwmodels
import workloads
from simulator.analysis import data_movement, io_lower_bound_words, roofline
from simulator.analysis.datamovement import h2d_seconds, lower_bound_bytes, network_h2d_bytes
from workloads import Conv2d, Elementwise, Gemm
from workloads.networks import Network


class LRU:
    """A fully associative LRU fast memory of S words counting loads and write-backs."""

    def __init__(self, size):
        self.size, self.mem, self.io, self.started = size, OrderedDict(), 0, set()

    def touch(self, key, write=False):
        if key in self.mem:
            self.mem.move_to_end(key)
            self.mem[key] |= write
            return
        # an output's first touch needs no load (it starts at zero); later misses reload it
        if not (write and key not in self.started):
            self.io += 1
        if write:
            self.started.add(key)
        self.mem[key] = write
        if len(self.mem) > self.size:
            _, dirty = self.mem.popitem(last=False)
            self.io += dirty

    def finish(self):
        self.io += sum(self.mem.values())
        return self.io


def blocked_gemm_io(M, N, K, S, b, order):
    lru = LRU(S)
    for i0, j0 in itertools.product(range(0, M, b), range(0, N, b)):
        loops = {"i": range(i0, min(M, i0 + b)), "j": range(j0, min(N, j0 + b)), "k": range(K)}
        for idx in itertools.product(*(loops[c] for c in order)):
            v = dict(zip(order, idx))
            lru.touch(("A", v["i"], v["k"]))
            lru.touch(("B", v["k"], v["j"]))
            lru.touch(("C", v["i"], v["j"]), write=True)
    return lru.finish()


@settings(max_examples=25, deadline=None)
@given(M=st.integers(4, 20), N=st.integers(4, 20), K=st.integers(4, 20), S=st.integers(6, 64),
       b=st.integers(1, 8), order=st.sampled_from(["ijk", "kij", "ikj", "jki"]))
def test_gemm_bound_below_every_simulated_schedule(M, N, K, S, b, order):
    op = Gemm(M=M, N=N, K=K)
    io = blocked_gemm_io(M, N, K, S, b, order)
    assert io >= io_lower_bound_words(op, S)
    assert io >= op.min_bytes() // 4


def test_gemm_bound_is_not_vacuous_and_within_5x_of_a_good_schedule():
    op = Gemm(M=24, N=24, K=24)
    S = 20
    bound = io_lower_bound_words(op, S)
    assert bound > 3 * 24 * 24  # above compulsory traffic: the bound has content
    # outer-product schedule: a b x b tile of C stays, columns of A and rows of B stream
    best = min(blocked_gemm_io(24, 24, 24, S, b, "kij") for b in (2, 3))
    # asymptotically the constant is 2*sqrt(2) below such a schedule; small b costs more
    assert bound <= best <= 5.0 * bound


def direct_conv_io(c: Conv2d, S, tile, order="pqkcrs"):
    lru = LRU(S)
    for p0, q0 in itertools.product(range(0, c.P, tile), range(0, c.Q, tile)):
        ranges = {"p": range(p0, min(c.P, p0 + tile)), "q": range(q0, min(c.Q, q0 + tile)),
                  "k": range(c.K), "c": range(c.C), "r": range(c.R), "s": range(c.S)}
        for idx in itertools.product(*(ranges[x] for x in order)):
            v = dict(zip(order, idx))
            h = v["p"] * c.stride + v["r"] - c.padding
            w = v["q"] * c.stride + v["s"] - c.padding
            if 0 <= h < c.H and 0 <= w < c.W:
                lru.touch(("I", v["c"], h, w))
            lru.touch(("W", v["k"], v["c"], v["r"], v["s"]))
            lru.touch(("O", v["k"], v["p"], v["q"]), write=True)
    return lru.finish()


@settings(max_examples=15, deadline=None)
@given(h=st.integers(4, 9), C=st.integers(1, 4), K=st.integers(1, 4), R=st.sampled_from([1, 3]),
       stride=st.integers(1, 2), S=st.integers(8, 48), tile=st.integers(1, 4),
       order=st.sampled_from(["pqkcrs", "kcpqrs", "rspqkc"]))
def test_conv_bound_below_every_simulated_schedule(h, C, K, R, stride, S, tile, order):
    op = Conv2d(N=1, C=C, H=h, W=h, K=K, R=R, S=R, stride=stride, padding=R // 2)
    io = direct_conv_io(op, S, tile, order)
    assert io >= io_lower_bound_words(op, S)


def test_conv_bound_has_content_and_uses_filter_taps():
    op = Conv2d(N=1, C=8, H=8, W=8, K=8, R=3, S=3, padding=1)
    S = 16
    b = io_lower_bound_words(op, S)
    assert b > op.min_bytes() / 4  # non-vacuous here
    # T = R*S taps weaken the bound relative to a GEMM of the same MACs (more reuse)
    g = Gemm(M=64, N=8, K=72)
    assert g.macs() == op.macs() and io_lower_bound_words(g, S) > b
    assert b <= min(direct_conv_io(op, S, t) for t in (1, 2))


def test_private_units_raise_the_bound():
    op = Gemm(M=4096, N=4096, K=4096)
    one = io_lower_bound_words(op, 1 << 20, 1)
    many = io_lower_bound_words(op, 1 << 20, 64)
    assert many == pytest.approx(op.macs() / math.sqrt(2 * (1 << 20) / 64) - 2 * (1 << 20))
    assert many > one


def test_elementwise_bound_is_compulsory():
    op = Elementwise(n=1000)
    assert io_lower_bound_words(op, 10) == 0
    assert lower_bound_bytes(op, 40) == 8000


def test_h2d():
    hw = hwmodels.get("h100-sxm")
    op = Gemm(M=1024, N=1024, K=1024)
    rows = data_movement(hw, Network("g", (op,)))
    assert rows[0].h2d_bytes == 2 * 1024 * 1024 * 4  # A and B, not C
    link = hw.host_link
    assert rows[0].h2d_pinned_seconds == pytest.approx(link.latency_s + 8 * 2**20 / link.pinned_bandwidth_bytes_per_s)
    assert rows[0].h2d_pageable_seconds > rows[0].h2d_pinned_seconds
    assert h2d_seconds(100, None, True) is None  # a host CPU has no link
    net = workloads.resnet50()
    # torchvision's ResNet-50 has 25,557,032 parameters: less its batch norms' gamma and
    # beta (2 x 26,560 channels) and the FC's bias (1000), 25,502,912 weights of the
    # convolutions and the FC; folded batch norm sends a shift for each of its 49 layers
    # (26,560 channels less the 3840 of the projections', summed into their blocks') and
    # the FC's bias: 23,720
    assert network_h2d_bytes(net) == 4 * (3 * 224 * 224 + 25_557_032 - 2 * 26_560 - 1000 + 23_720)


def test_onchip_bytes_must_be_positive():
    with pytest.raises(ValueError, match="onchip_bytes"):
        data_movement(hwmodels.get("gtx480"), workloads.resnet50(), onchip_bytes=0)


OPS = st.one_of(
    st.builds(lambda m, n, k: Gemm(M=m, N=n, K=k), st.integers(1, 20000), st.integers(1, 20000),
              st.integers(1, 20000)),
    st.builds(lambda n, c, h, k, r, s: Conv2d(N=n, C=c, H=h, W=h, K=k, R=r, S=r, stride=s,
                                              padding=r // 2),
              st.integers(1, 64), st.integers(1, 1024), st.integers(7, 230), st.integers(1, 2048),
              st.sampled_from([1, 3, 5, 7]), st.integers(1, 2)),
    st.builds(lambda n: Elementwise(n=n), st.integers(1, 1 << 30)),
)


@settings(max_examples=150, deadline=None)
@given(op=OPS, hw_name=st.sampled_from(hwmodels.names()), data=st.data())
def test_roofline_invariants(op, hw_name, data):
    hw = hwmodels.get(hw_name)
    prec = data.draw(st.sampled_from([q for q in hw.peak_rates().supported() if q != "tf32"]))
    net = Network("x", (op.with_dtype(prec),))
    rep = roofline(hw, net)
    p = rep.points[0]
    peak = hw.peak_flop_per_s(prec)
    assert p.attainable_flop_per_s <= peak * (1 + 1e-12)
    for lv in p.levels:
        assert lv.bytes >= op.with_dtype(prec).min_bytes()
        assert p.attainable_flop_per_s <= lv.bandwidth_bytes_per_s * lv.intensity_flop_per_byte * (1 + 1e-12)
        assert p.bound_seconds >= lv.seconds
    assert p.bound_seconds >= p.compute_seconds
    assert p.bound_seconds == max([p.compute_seconds] + [lv.seconds for lv in p.levels])
    assert p.dram_bytes >= p.compulsory_bytes
    for lv in hw.memory_levels():
        assert rep.ridge(lv.name) == pytest.approx(peak / lv.bandwidth_bytes_per_s)


def test_roofline_totals_and_binding():
    rep = roofline(hwmodels.get("h100-sxm"), workloads.resnet50(batch=8))
    t = rep.totals()
    assert t["flops"] == workloads.resnet50(batch=8).flops()
    assert t["bound_seconds"] == pytest.approx(sum(p.bound_seconds for p in rep.points))
    # the FC at batch 8 streams 8 MB of weights for 33 MFLOP: memory-bound on any GPU
    assert rep.points[-1].bound_by == "dram"
    # a big square GEMM is compute-bound on the H100
    g = roofline(hwmodels.get("h100-sxm"), Network("g", (Gemm(M=8192, N=8192, K=8192),)))
    assert g.points[0].bound_by == "compute"


def test_roofline_precision_rules():
    hw = hwmodels.get("h100-sxm")
    net = workloads.resnet50()
    assert roofline(hw, net, "tf32").peak_flop_per_s == hw.peak_flop_per_s("tf32")
    with pytest.raises(ValueError, match="needs fp16 data"):
        roofline(hw, net, "fp16")
    with pytest.raises(ValueError, match="not supported by tpu-v1"):
        roofline(hwmodels.get("tpu-v1"), net)

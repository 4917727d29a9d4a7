"""Trace programs (simulator/simt/traces.py): the engine executes per-warp recorded
instruction streams as it executes templates. The oracle: a template program expanded
into the trace of every warp (``traces.from_template``) simulates to the same cycles,
instructions, bytes and stalls."""
from __future__ import annotations

import numpy as np
import pytest

import hwmodels
from simulator.simt import api, core, engine, isa, traces, walk
from simulator.simt.kernels.launch import Launch
from workloads.ir import Conv2d, Pool2d

FERMI = hwmodels.get("gtx480")
H100 = hwmodels.get("h100-sxm")

CASES = {
    "relu": ("relu", dict(n=20000, grid=30, block=128)),
    "gemm-tiled": ("gemm-tiled", dict(m=64, n=64, k=64, tile=16)),
    "gemm-naive": ("gemm-naive", dict(m=64, n=48, k=24)),
    "gemm-naive-rows": ("gemm-naive", dict(m=32, n=32, k=16, thread_x="rows")),
    "conv-direct": ("conv-direct", dict(conv=Conv2d(N=1, C=3, H=12, W=12, K=8, R=3, S=3,
                                                    padding=1))),
    "conv-direct-nhwc": ("conv-direct", dict(conv=Conv2d(N=1, C=4, H=10, W=10, K=8, R=3, S=3,
                                                         padding=1, layout="nhwc"))),
    "pool": ("pool2d", dict(op=Pool2d(N=2, C=16, H=16, W=16, R=3, S=3, stride=2, padding=1))),
}
FIELDS = ("cycles", "instructions", "bytes_by_level", "stalls_by_cause")


def _same(a, b):
    for f in FIELDS:
        assert getattr(a, f) == getattr(b, f), f
    sa, sb = a.detail.launches[0].stats, b.detail.launches[0].stats
    assert sa == sb


@pytest.mark.parametrize("hw", [FERMI, H100], ids=["gtx480", "h100-sxm"])
@pytest.mark.parametrize("case", list(CASES))
def test_trace_of_template_simulates_alike(hw, case):
    kernel, args = CASES[case]
    progs = api.build(hw, kernel, **args).programs
    assert sum(p.launch.blocks * -(-p.launch.threads_per_block // 32) for p in progs) < 1200
    tps = [walk.from_template(p, hw) for p in progs]
    for p, tp in zip(progs, tps):
        assert tp.rows.shape[0] == tp.block_work.sum() > 0
        assert tp.loads == tuple(sorted(a[0] for a in engine._loaded(p)))
        assert tp.stores == tuple(sorted(a[0] for a in engine._stored(p)))
    a = engine.simulate(hw, list(progs), mode="full")
    b = engine.simulate(hw, tps, mode="full")
    _same(a, b)
    assert a.extra == b.extra


@pytest.mark.parametrize("hw,kernel,args", [
    (FERMI, "relu", dict(n=1 << 16, grid=2048, block=32)),     # the arrays fit the L2
    (FERMI, "gemm-tiled", dict(m=416, n=416, k=16, tile=16)),
], ids=["relu-gtx480", "gemm-tiled-gtx480"])
def test_sampled_trace_of_the_planned_blocks(hw, kernel, args):
    (prog,) = api.build(hw, kernel, **args).programs
    occ = engine.launch_occupancy(hw, prog)
    # the plans simulate makes (a cold L2; the slice's L2 cut where the arrays do not fit)
    (pt,) = engine._plans(hw, [prog], [occ], "gto", "sampled", None, False)
    assert pt.caps is None and len(pt.skips)        # short loops, many waves: waves skipped
    whole = walk.from_template(prog)
    ids = engine.trace_plan_blocks(hw, whole)
    (pr,) = engine._plans(hw, [whole], [occ], "gto", "sampled", None, False)
    assert pr.caps is None
    np.testing.assert_array_equal(pr.positions, pt.positions)
    np.testing.assert_array_equal(pr.skips, pt.skips)
    np.testing.assert_array_equal(ids, pt.positions[pt.kept()])
    part = traces.keep_blocks(whole, ids)
    assert len(part.blocks) < prog.launch.blocks
    a = engine.simulate(hw, prog, mode="sampled")
    b = engine.simulate(hw, part, mode="sampled")
    _same(a, b)
    assert a.simulated_fraction == b.simulated_fraction
    assert a.launches[0].sampling == b.launches[0].sampling
    assert engine.simulated_fraction(hw, part) == pytest.approx(a.simulated_fraction)
    assert engine.sampled_cost(hw, part) == pytest.approx(whole.block_work[ids].sum())
    # the blocks it needs, and no more: one fewer and it says which
    with pytest.raises(ValueError, match="does not cover"):
        engine.simulate(hw, traces.keep_blocks(whole, ids[1:]), mode="sampled")


def test_full_mode_needs_every_block():
    (prog,) = api.build(FERMI, "relu", n=20000, grid=30, block=128).programs
    part = walk.from_template(prog, blocks=[0, 3, 7])
    assert list(part.blocks) == [0, 3, 7]
    with pytest.raises(ValueError, match=r"mode='full'.*relu.*covers 3 of its 30 blocks"):
        engine.simulate(FERMI, part, mode="full")


# ---------------------------------------------------------------- access widths

def _one(op, addresses, width, array=True):
    lc = Launch((1, 1, 1), (32, 1, 1))
    params, names = isa.params(lc)
    row = np.array([[op, 0 if op in (isa.LDG, isa.LDS) else -1, -1, -1, -1, 0]], np.int64)
    return traces.TraceProgram(
        name="one", launch=lc, params=params, param_names=names, rows=row,
        addresses=np.array([list(addresses) + [width]], np.int64),
        warp_begin=np.array([0, 1], np.int64), blocks=np.array([0], np.int64),
        block_work=np.ones(1), n_regs=1,
        arrays=(("x", isa.GLOBAL_BASE, 4096),) if array else (),
        loads=("x",) if op == isa.LDG else (), stores=(), regs_per_thread=16,
        smem_per_block=4096 if op in (isa.LDS, isa.STS) else 0, resources_source="test",
        flops=0, min_bytes=0)


@pytest.mark.parametrize("width,passes", [(4, 1), (8, 2), (16, 4)])
def test_shared_width_passes(width, passes):
    tp = _one(isa.LDS, [width * i for i in range(32)], width)
    st = engine.simulate(H100, tp, mode="full").detail.launches[0].stats
    assert st.shared_conflict_passes == passes - 1
    assert st.shared_bytes == 32 * width


def test_shared_width_broadcast_and_helpers():
    # every lane reading the same 16 bytes: one word per bank, a broadcast -- one pass
    st = engine.simulate(H100, _one(isa.LDS, [64] * 32, 16), mode="full").detail.launches[0].stats
    assert st.shared_conflict_passes == 0
    addr = np.array([[16 * i for i in range(32)] + [16]], np.int64)
    scratch = np.zeros((33, 33), np.int64)
    assert core._access_passes(addr, 0, 32, 4, scratch, 16) == 4
    assert core._access_passes(addr, 0, 32, 4, scratch, 4) == 4      # lanes 8 apart share a bank
    assert core.bank_passes(addr, 0, 32, 4, scratch) == 4


@pytest.mark.parametrize("hw,width,segments", [(H100, 16, 16), (H100, 4, 4), (H100, 8, 8),
                                               (FERMI, 16, 4)], ids=["h100-16", "h100-4",
                                                                     "h100-8", "gtx480-16"])
def test_global_width_segments(hw, width, segments):
    seg = hw.sm.l1.sector_bytes
    tp = _one(isa.LDG, [isa.GLOBAL_BASE + width * i for i in range(32)], width)
    r = engine.simulate(hw, tp, mode="full")
    st = r.detail.launches[0].stats
    assert st.global_load_segments == segments == 32 * width // seg
    assert r.bytes_by_level["l1"] == 32 * width
    out = np.zeros((1, 65), np.int64)
    addr = np.array([[width * i for i in range(32)] + [width]], np.int64)
    assert core._access_segments(addr, 0, seg, out, width) == segments
    assert list(out[0, :segments]) == list(range(segments))


def test_straddling_lanes_cover_both_segments():
    out = np.zeros((1, 65), np.int64)
    addr = np.array([[8 + 32 * i for i in range(32)] + [16]], np.int64)   # [8, 24) of each 32
    assert core._access_segments(addr, 0, 16, out, 16) == 64


def test_masks_and_empty_warps():
    """Non-memory events carry their active lanes; a warp with no events never starts."""
    lc = Launch((2, 1, 1), (64, 1, 1))
    params, names = isa.params(lc)
    rows = np.array([[isa.FFMA, 0, 0, -1, -1, ~0xFFFF], [isa.FFMA, 0, 0, -1, -1, ~0],
                     [isa.FFMA, 0, 0, -1, -1, ~0xFFFFFFFF]], np.int64)
    tp = traces.TraceProgram(
        name="masks", launch=lc, params=params, param_names=names, rows=rows,
        addresses=np.zeros((0, 33), np.int64), warp_begin=np.array([0, 2, 2, 3, 3]),
        blocks=np.array([0, 1]), block_work=np.array([2.0, 1.0]), n_regs=1, arrays=(),
        loads=(), stores=(), regs_per_thread=16, smem_per_block=0, resources_source="test",
        flops=0, min_bytes=0)
    r = engine.simulate(FERMI, tp, mode="full")
    assert r.instructions == 2                     # the event with no lane is skipped
    assert r.extra["flops_executed"] == 2 * 16 + 2 * 32
    assert "traced (2 of 2 blocks)" in tp.describe() and tp.param("block_x") == 64


def test_bad_traces_refused():
    (prog,) = api.build(FERMI, "relu", n=2000, grid=2, block=64).programs
    tp = walk.from_template(prog)
    import dataclasses
    with pytest.raises(ValueError, match="warp_begin"):
        dataclasses.replace(tp, warp_begin=tp.warp_begin[:-1])
    with pytest.raises(ValueError, match="registers"):
        dataclasses.replace(tp, n_regs=1)
    with pytest.raises(ValueError, match="widths"):
        dataclasses.replace(tp, addresses=np.where(np.arange(33) == 32, 12, tp.addresses))
    with pytest.raises(ValueError, match="block_work"):
        dataclasses.replace(tp, block_work=tp.block_work[:1])
    with pytest.raises(ValueError, match="template programs only"):
        core.program_arrays(tp)


# ---------------------------------------------------------------- the analytic model on traces

@pytest.mark.parametrize("hw", [FERMI, H100], ids=["gtx480", "h100-sxm"])
@pytest.mark.parametrize("case", ["relu", "gemm-tiled", "gemm-naive", "gemm-naive-rows",
                                  "conv-direct-nhwc"])
def test_analytic_model_reads_a_trace_as_its_template(hw, case):
    """The analytic model over the recorded warps of every block (the any-kernel path's
    input): its warp instructions are the trace's events and its L1 bytes the engine's
    full run's global-load segments, within 1% (every warp of up to eight blocks walked,
    scaled by every block's work); against the same
    model over the template they were expanded from, whose walk samples four blocks,
    within 20% (a padded convolution's edge blocks skip taps), cycles too."""
    from simulator.simt import analytic
    kernel, args = CASES[case]
    prog = api.build(hw, kernel, **args).programs[0]
    tp = walk.from_template(prog, hw)
    a = analytic.predict(hw, [prog])
    b = analytic.predict(hw, [tp])
    assert b.instructions == pytest.approx(len(tp.rows), rel=0.01)
    full = engine.simulate(hw, [tp], mode="full")
    assert b.bytes_by_level["l1"] == pytest.approx(full.bytes_by_level["l1"], rel=0.01)
    assert b.instructions == pytest.approx(a.instructions, rel=0.20)
    assert b.cycles == pytest.approx(a.cycles, rel=0.20)
    assert b.predictor == "analytic" and b.launches[0].limiter in b.launches[0].terms


def test_analytic_model_of_a_partial_trace_scales_its_blocks_work():
    """A trace of some blocks only: the model scales their warps' counts by every block's
    work over theirs (``block_work``), so a sample of a uniform grid predicts the whole;
    a trace of no block is refused."""
    import dataclasses

    from simulator.simt import analytic
    prog = api.build(H100, "gemm-tiled", m=128, n=128, k=64, tile=16).programs[0]
    whole = analytic.predict(H100, [walk.from_template(prog, H100)])
    part = analytic.predict(H100, [walk.from_template(prog, H100, blocks=[5, 17, 40, 63])])
    assert part.instructions == pytest.approx(whole.instructions, rel=0.02)
    assert part.cycles == pytest.approx(whole.cycles, rel=0.05)
    empty = dataclasses.replace(walk.from_template(prog, H100, blocks=[0]),
                                rows=np.zeros((0, 6), np.int64), blocks=np.zeros(0, np.int64),
                                warp_begin=np.zeros(1, np.int64),
                                addresses=np.zeros((0, 33), np.int64))
    with pytest.raises(ValueError, match="the trace holds no block"):
        analytic.predict(H100, [empty])

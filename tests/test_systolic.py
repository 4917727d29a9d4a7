"""Systolic engine: the cycle-level array against numpy, the closed form against the array."""
import dataclasses
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hwmodels
import workloads
from simulator.cli import main
from simulator.systolic import (
    FoldTiming,
    Lowered,
    fold_timing,
    pipeline_layer,
    run_array,
    simulate_layer,
    simulate_network,
    sram_counts,
)
from simulator.systolic.lowering import a_valid_block, operand_matrices
from simulator.systolic.pipeline import per_fold_bytes
from workloads import Conv2d, Gemm

DATAFLOWS = ("os", "ws", "is")

GEMMS = st.builds(lambda m, n, k: Gemm(M=m, N=n, K=k), st.integers(1, 14), st.integers(1, 14),
                  st.integers(1, 14))


@st.composite
def convs(draw):
    h = draw(st.integers(2, 7))
    r = draw(st.integers(1, 3))
    pad = draw(st.integers(0, 2))
    if r > h + 2 * pad:
        r = 1
    return Conv2d(N=draw(st.integers(1, 2)), C=draw(st.integers(1, 3)), H=h, W=draw(st.integers(r, 7)),
                  K=draw(st.integers(1, 4)), R=r, S=r, stride=draw(st.integers(1, 2)), padding=pad)


OPS = st.one_of(GEMMS, convs())
ARRAYS = st.tuples(st.integers(1, 6), st.integers(1, 6))


@settings(max_examples=120, deadline=None)
@given(op=OPS, shape=ARRAYS, df=st.sampled_from(DATAFLOWS))
def test_closed_form_equals_cycle_level_array(op, shape, df):
    rows, cols = shape
    run = run_array(op, df, rows, cols, seed=1)
    assert run.correct, "the array's result differs from numpy / the direct convolution"
    L = Lowered(op, df, rows, cols)
    starts, _, total = fold_timing(L)
    reads, writes = sram_counts(L)
    assert run.cycles == total
    assert np.array_equal(run.fold_starts, starts)
    assert run.sram_reads == reads and run.sram_writes == writes
    assert run.macs == L.macs == op.macs()


@pytest.mark.parametrize("df", DATAFLOWS)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (8, 2)])
def test_array_computes_conv_with_stride_and_padding(df, shape):
    op = Conv2d(N=2, C=3, H=9, W=7, K=5, R=3, S=3, stride=2, padding=1)
    run = run_array(op, df, *shape, seed=7)
    assert run.correct
    # the im2col lowering against a direct convolution, independently of the array
    A, _, B, ref = operand_matrices(op, seed=7)
    assert np.array_equal(A @ B, ref)


def test_os_drain_rule_is_needed():
    """One cycle less between folds than the closed form's rule makes a result find its
    shadow register still draining (when 2 ru - 1 > T)."""
    op = Gemm(M=8, N=4, K=3)   # T = 3 < 2 * 4 - 1
    assert run_array(op, "os", 4, 4, _os_gap=7).correct  # max(T, 2 ru - 1) = 7: fine
    with pytest.raises(RuntimeError, match="occupied shadow register"):
        run_array(op, "os", 4, 4, _os_gap=6)


def test_trace_shows_the_skewed_wavefront():
    op = Gemm(M=3, N=3, K=3)
    run = run_array(op, "os", 3, 3, record=True)
    act = run.trace["active"]
    for t in range(act.shape[0]):
        expected = sum(1 for r in range(3) for c in range(3) if 0 <= t - r - c < 3)
        assert act[t].sum() == expected
    assert act.sum() == 27
    # PE (1, 2) holds A[1, k] in its left register at cycle 1 + 2 + k
    A, _, B, _ = operand_matrices(op, seed=0)
    assert [run.trace["h"][1 + 2 + k, 1, 2] for k in range(3)] == list(A[1])


def test_valid_block_counts_match_im2col():
    op = Conv2d(N=2, C=3, H=6, W=5, K=4, R=3, S=2, stride=2, padding=1)
    _, Av, _, _ = operand_matrices(op)
    rng = np.random.default_rng(0)
    for _ in range(20):
        m0, m1 = sorted(rng.integers(0, Av.shape[0] + 1, 2))
        k0, k1 = sorted(rng.integers(0, Av.shape[1] + 1, 2))
        assert a_valid_block(op, m0, m1, k0, k1) == Av[m0:m1, k0:k1].sum()


@settings(max_examples=60, deadline=None)
@given(op=OPS, shape=ARRAYS, df=st.sampled_from(DATAFLOWS),
       preset=st.sampled_from(["systolic-4x4", "systolic-8x8", "tpu-v1"]))
def test_layer_invariants(op, shape, df, preset):
    hw = hwmodels.get(preset)
    r = simulate_layer(hw, op, df, *shape)
    assert 0 < r.utilization <= 1 and 0 < r.mapping_efficiency <= 1
    assert r.compute_utilization <= 1
    assert r.macs == op.macs()
    wb = hw.word_bytes
    a, b, o = op.operands()
    if not hw.activations_on_chip:
        assert r.dram_reads_bytes["ifmap"] >= a.touched * wb
        assert r.dram_writes_bytes["ofmap"] >= o.elements * wb
    assert r.dram_reads_bytes["filter"] >= b.elements * wb
    # the compute cycles can never beat the MACs spread over every PE
    assert r.compute_cycles * shape[0] * shape[1] >= r.macs


@pytest.mark.parametrize("df", DATAFLOWS)
def test_pipeline_limits(df):
    hw = hwmodels.get("systolic-8x8")
    op = next(o for o in workloads.resnet50().ops if o.name == "layer1.0.conv1")
    L = Lowered(op, df, 8, 8)
    pre, post = per_fold_bytes(L, hw)
    r = simulate_layer(hw, op, df)
    assert pre.sum() == pytest.approx(sum(r.dram_reads_bytes.values()))
    assert post.sum() == pytest.approx(sum(r.dram_writes_bytes.values()))
    inf = dataclasses.replace(hw, dram=dataclasses.replace(hw.dram, bandwidth_bytes_per_s=1e16,
                                                            latency_cycles=0))
    p_inf = pipeline_layer(inf, op, df)
    # 10 PB/s (the most a DRAM may have, hwmodels.limits) moves the last fold's bytes in
    # a fraction of a cycle, which the pipeline's end rounds up to one
    assert r.compute_cycles <= p_inf.total_cycles <= r.compute_cycles + 1
    slow = pipeline_layer(dataclasses.replace(hw, dram=dataclasses.replace(
        hw.dram, bandwidth_bytes_per_s=hw.dram.bandwidth_bytes_per_s / 4)), op, df)
    base = pipeline_layer(hw, op, df)
    assert slow.total_cycles >= base.total_cycles >= r.compute_cycles
    # no schedule finishes before its DRAM transfers could
    assert base.total_cycles >= base.dram_busy_cycles
    deep = pipeline_layer(dataclasses.replace(hw, weight_fifo_tiles=8), op, df)
    assert deep.total_cycles <= base.total_cycles


def test_tpu_layers_are_weight_bound_as_in_the_paper():
    """On TPU v1 ResNet-50 (batch 1) reads only weights from DRAM and spends most of its
    time waiting for them: weights 25.5 MB at 34 GB/s = 0.75 ms."""
    res = simulate_network(hwmodels.get("tpu-v1"), workloads.resnet50(), "ws")
    t = res.systolic
    assert t.dram_read_bytes.ifmap == 0
    assert t.dram_read_bytes.filter == sum(op.operands()[1].elements for op in workloads.resnet50().ops
                                           if op.kind in ("conv2d", "gemm"))
    assert t.seconds >= t.dram_read_bytes.filter / 34e9
    assert t.stall_cycles > t.compute_cycles


def test_array_override_and_groups():
    hw = hwmodels.get("systolic-4x4")
    net = workloads.Network("g", (Conv2d(name="dw", N=1, C=8, H=6, W=6, K=8, R=3, S=3, padding=1,
                                         groups=8),))
    res = simulate_network(hw, net, "os", rows=2, cols=3, stalls="closed-form")
    lr = res.layers[0]
    r = lr.detail
    one = simulate_layer(dataclasses.replace(hw, rows=2, cols=3),
                         Conv2d(N=1, C=1, H=6, W=6, K=1, R=3, S=3, padding=1), "os")
    assert (r.rows, r.cols) == (2, 3) == (lr.systolic.rows, lr.systolic.cols)
    assert lr.extra["array"] == "2x3"
    assert (res.systolic.rows, res.systolic.cols) == (2, 3) and res.detail.hardware.rows == 2
    assert r.compute_cycles == 8 * one.compute_cycles and r.macs == net.ops[0].macs()
    assert lr.systolic.groups == 8 == lr.extra["groups"] and lr.instructions == 8 * one.folds
    # FLOPs and compulsory bytes are the whole grouped op's (8 times one group's)
    assert lr.flops == net.ops[0].flops() == 8 * one.flops
    assert lr.compulsory_bytes == 8 * one.compulsory_bytes
    assert lr.compulsory_bytes == sum(o.touched for o in net.ops[0].operands()) * hw.word_bytes
    # the fold timing kept for the chart is one group's, as the engine ran it
    assert r.fold_timing.compute_cycles == one.compute_cycles


@pytest.mark.parametrize("argv,needle", [
    (["--array", "0x4"], "--array '0x4'"),
    (["--array", "4"], "expected ROWSxCOLS"),
    (["--dataflow", "xs"], "invalid choice"),
    (["--set", "ifmap_sram.size_bytes=0B"], "size_bytes = 0: must be > 0"),
    (["--set", "rows=0"], "rows = 0: must be > 0"),
])
def test_bad_systolic_input(argv, needle, capsys):
    code = main(["simulate", "systolic", "--hw", "systolic-4x4", "--workload", "gemm:8x8x8"] + argv)
    err = capsys.readouterr().err
    assert code == 2 and needle in err and err.count("\n") == 1


def test_systolic_needs_systolic_hardware(capsys):
    code = main(["simulate", "systolic", "--hw", "gtx480", "--workload", "gemm:8x8x8"])
    err = capsys.readouterr().err
    assert code == 2 and "not a systolic array" in err


def test_malformed_topology_row_in_cli(tmp_path, capsys):
    p = tmp_path / "t.csv"
    p.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
                 "Num Filter, Strides,\nc1, 8, 8, 3, 3, 4,\n")
    code = main(["simulate", "systolic", "--hw", "systolic-8x8", "--workload", str(p)])
    err = capsys.readouterr().err
    assert code == 2 and "line 2: expected 8 columns" in err


def test_simulate_systolic_cli_outputs(tmp_path, capsys):
    csv_path, js, png = tmp_path / "s.csv", tmp_path / "s.json", tmp_path / "s.png"
    code = main(["simulate", "systolic", "--hw", "tpu-v1", "--workload", "resnet50", "--array",
                 "128x128", "--dataflow", "os", "--csv", str(csv_path), "--json", str(js),
                 "--plot", str(png)])
    out = capsys.readouterr().out
    assert code == 0 and "128x128 array, os" in out and out.strip().splitlines()[-6].startswith("total")
    import csv
    import json
    rows = list(csv.DictReader(csv_path.open()))
    need = {"layer", "compute_cycles", "stall_cycles", "total_cycles", "utilization",
            "mapping_efficiency", "sram_ifmap_reads", "sram_filter_reads", "sram_ofmap_writes",
            "dram_ifmap_read_bytes", "dram_filter_read_bytes", "dram_ofmap_write_bytes", "seconds"}
    assert len(rows) == 54 and need <= set(rows[0])      # the 53 convolutions and the FC
    data = json.loads(js.read_text())          # Result.to_dict()
    assert data["predictor"] == "systolic" and data["hardware"] == "tpu-v1"
    assert data["extra"]["rows"] == 128 and data["extra"]["macs"] == 4089184256
    assert len(data["layers"]) == 54 and data["layers"][0]["instruction_unit"] == "fold"
    # batch norm, pools and the FC's bias are not on the array, and named so
    assert len(data["extra"]["not_on_array"]) == 106 - 54 and "maxpool" in data["extra"]["not_on_array"]
    assert data["layers"][0]["extra"]["compute_cycles"] == int(rows[0]["compute_cycles"])
    assert {"flops", "compulsory_bytes"} <= set(rows[0])
    assert png.stat().st_size > 20000


def test_sram_too_small_for_a_tile_is_an_error(capsys):
    code = main(["simulate", "systolic", "--hw", "systolic-4x4", "--workload", "gemm:64x64x64",
                 "--dataflow", "ws", "--set", "filter_sram.size_bytes=32B"])
    err = capsys.readouterr().err
    # 32 B: 4 words of 4 B per half, enough for a row of the array (so the hardware
    # loads), not for the 4x4 stationary weight tile a ws fold needs (16 words, 128 B)
    assert code == 2 and "filter_sram.size_bytes = 32: a 4x4 ws fold" in err and "at least 128 B" in err
    code = main(["simulate", "systolic", "--hw", "systolic-4x4", "--workload", "gemm:8x8x8",
                 "--mode", "scalesim", "--stalls", "pipeline"])
    assert code == 2 and "--stalls applies to --mode default only" in capsys.readouterr().err


def test_too_many_folds_for_the_pipeline_is_its_own_error():
    """The pipeline's refusal is a TooManyFoldsError (a ValueError) a caller can catch to
    fall back to the closed form's stalls; its text names arguments, not CLI flags."""
    from simulator.systolic import TooManyFoldsError
    hw = hwmodels.get("systolic-4x4")
    net = workloads.resolve("gemm:1500x1500x1500")    # ws on 1x1: 1500 x 1500 folds
    with pytest.raises(TooManyFoldsError) as e:
        simulate_network(hw, net, "ws", rows=1, cols=1)
    assert isinstance(e.value, ValueError) and (e.value.folds, e.value.max_folds) == (2_250_000, 2_000_000)
    assert str(e.value).startswith("stalls='pipeline' runs every fold through a simpy model: "
                                   "gemm:1500x1500x1500 on a 1x1 array is 2,250,000 folds, some "
                                   "1.9 minutes")      # 2,250,000 / 20,000 a second
    assert "use stalls='closed-form', or a larger array" in str(e.value)
    assert not re.search(r"--[a-z]", str(e.value))                   # no CLI flag
    assert simulate_network(hw, net, "ws", rows=1, cols=1, stalls="closed-form").instructions == 2_250_000


def test_scalesim_replay_refusal_names_the_mode_argument():
    from simulator.systolic import TooManyFoldsError
    with pytest.raises(ValueError) as e:
        simulate_network(hwmodels.get("tpu-v1"), workloads.resolve("resnet50"), "ws", "scalesim", 1, 1)
    assert not isinstance(e.value, TooManyFoldsError)
    assert str(e.value).startswith("mode='scalesim' replays SCALE-Sim's buffers line by line")


def test_scalesim_mode_utilisation_can_exceed_one_on_1x1_arrays():
    """SCALE-Sim counts F x per-fold - 1 cycles; on a 1x1 os array a fold is T cycles, so
    its utilisation is MACs / (F T - 1) > 1. The scalesim mode reproduces that; the
    default mode never exceeds 1."""
    hw = hwmodels.get("systolic-4x4")
    op = Gemm(M=5, N=7, K=9)
    ss = simulate_network(hw, workloads.Network("g", (op,)), "os", "scalesim", 1, 1).layers[0]
    assert ss.cycles == 5 * 7 * 9 - 1 and ss.utilization > 1
    d = simulate_network(hw, workloads.Network("g", (op,)), "os", "default", 1, 1,
                         stalls="closed-form").layers[0]
    assert d.utilization <= 1


@pytest.mark.parametrize("mode,df,stalls", [("default", "ws", "pipeline"),
                                            ("default", "os", "closed-form"),
                                            ("scalesim", "is", "pipeline")])
def test_network_result_fields(mode, df, stalls):
    """simulate_network returns a Result; the network's figures are its layers' sums and
    each layer's are its SystolicResult's."""
    from simulator.result import Result, SystolicFigures, SystolicTotals
    hw = hwmodels.get("systolic-8x8")
    net = workloads.Network("n", (Conv2d(name="c", N=1, C=5, H=9, W=9, K=12, R=3, S=3, padding=1),
                                  Gemm(name="fc", M=3, N=20, K=40)))
    res = simulate_network(hw, net, df, mode, stalls=stalls)
    assert isinstance(res, Result) and (res.predictor, res.mode) == ("systolic", mode)
    assert (res.hardware, res.workload, res.instruction_unit) == ("systolic-8x8", "n", "fold")
    assert res.simulated_fraction == 1.0 and res.estimated_error is None and res.wall_seconds > 0
    wb = hw.word_bytes if mode == "default" else 1
    t = res.systolic
    assert isinstance(t, SystolicTotals) and t == res.detail.totals()
    assert (t.rows, t.cols, t.dataflow, t.word_bytes, t.layer_count) == (8, 8, df, wb, 2)
    assert t.stalls == (stalls if mode == "default" else "scalesim") and t.not_on_array == ()
    assert res.extra == t.to_dict()                     # the JSON form, from the typed record
    assert res.cycles == t.total_cycles and res.seconds == t.seconds
    assert res.utilization == t.utilization and res.stalls_by_cause == {"dram": t.stall_cycles}
    assert t.macs == sum(lr.systolic.macs for lr in res.layers)
    for name in ("sram_reads", "sram_writes", "dram_read_bytes", "dram_write_bytes"):
        for o in ("ifmap", "filter", "ofmap"):
            assert getattr(getattr(t, name), o) == sum(getattr(getattr(lr.systolic, name), o)
                                                       for lr in res.layers)
    assert res.flops == net.flops() and res.op == net.identity()
    assert len(res.layers) == 2
    for lr, op in zip(res.layers, net.ops):
        r = lr.detail
        assert (lr.predictor, lr.mode, lr.hardware) == ("systolic", mode, "systolic-8x8")
        assert lr.workload == op.name
        assert lr.flops == op.flops() and lr.op == op.identity()
        assert lr.compulsory_bytes == sum(o.touched for o in op.operands()) * wb
        x = lr.systolic
        assert isinstance(x, SystolicFigures) and x == r.figures()
        assert lr.cycles == r.compute_cycles + r.stall_cycles == x.total_cycles
        assert (x.rows, x.cols, x.dataflow, x.mode, x.groups) == (8, 8, df, mode, 1)
        assert (x.memory_replayed is None) == (x.scalesim_compute_utilization is None) == (mode == "default")
        assert x.sram_reads.total + x.sram_writes.total == sum(r.sram_reads.values()) + sum(r.sram_writes.values())
        assert lr.instructions == r.folds and lr.stalls_by_cause == {"dram": r.stall_cycles}
        sram_words = sum(r.sram_reads.values()) + sum(r.sram_writes.values())
        dram_bytes = sum(r.dram_reads_bytes.values()) + sum(r.dram_writes_bytes.values())
        assert lr.bytes_by_level == {"sram": sram_words * wb, "dram": dram_bytes}
        assert {"layer": lr.workload, **lr.extra} == r.row()
        # the default schedule's fold timing, computed once by the engine, in either mode
        L = Lowered(op, df, 8, 8)
        starts, ends, total = fold_timing(L)
        ft = r.fold_timing
        assert np.array_equal(ft.starts, starts) and np.array_equal(ft.ends, ends)
        assert ft.compute_cycles == total and np.array_equal(ft.folds, L.folds)
    for key in ("cycles", "seconds", "flops", "compulsory_bytes", "instructions"):
        assert getattr(res, key) == pytest.approx(sum(getattr(lr, key) for lr in res.layers), rel=1e-12)
    for lv in ("sram", "dram"):
        assert res.bytes_by_level[lv] == sum(lr.bytes_by_level[lv] for lr in res.layers)
    d = res.to_dict()
    assert "detail" not in d and d["layers"][1]["workload"] == "fc"


def test_pe_row_activity():
    """The heatmap's figures: columns used / C x min(1, T / span) on the rows a fold uses."""
    L = Lowered(Gemm(M=5, N=7, K=6), "ws", 4, 4)        # T = 5, folds (4x4, 2x4, 4x3, 2x3)
    ft = FoldTiming.of(L)
    img = ft.pe_row_activity()
    starts, _, total = fold_timing(L)
    spans = np.diff(np.append(starts, total))
    assert img.shape == (4, 4)
    for f, (_, _, ru, cu) in enumerate(L.folds):
        assert np.allclose(img[:ru, f], cu / 4 * min(1.0, 5 / spans[f]))
        assert not img[ru:, f].any()
    assert ft.pe_row_activity(2).shape == (4, 2)
    # in bands of two rows: each band the mean of its rows (the 2-row folds fill one band)
    banded = ft.pe_row_activity(max_rows=2)
    assert banded.shape == (2, 4)
    assert np.allclose(banded, (img[0::2] + img[1::2]) / 2)


def test_a_tall_array_s_heatmap_is_banded(tmp_path):
    """An array of 2**20 rows (the limit) is drawn in 400 bands, not a million rows (its
    --plot ran out of memory)."""
    L = Lowered(Gemm(M=64, N=64, K=64), "ws", 2**20, 1)
    ft = FoldTiming.of(L)
    img = ft.pe_row_activity()
    assert img.shape == (400, len(L.folds))
    band = 2**20 / 400                  # 2,621.44 rows a band; a fold uses its first ru rows
    for f, (_, _, ru, cu) in enumerate(L.folds):
        assert img[0, f] == pytest.approx(min(ru, band) / band * cu * min(1.0, ft.steps / ft.spans[f]))
    assert not img[1:].any()


def test_engine_and_chart_layering():
    """The engine never imports the analyses; the chart draws a Result without the engine."""
    import inspect
    import pathlib
    import re

    from simulator.analysis import plots
    root = pathlib.Path(__file__).resolve().parents[1] / "simulator"
    for f in (root / "systolic").glob("*.py"):
        assert not re.search(r"^\s*(from|import)\s+\S*analysis", f.read_text(), re.MULTILINE), f
    imports = [line for line in inspect.getsource(plots.systolic_chart).splitlines() if "import" in line]
    assert not any("systolic" in line for line in imports)


def test_systolic_figures_are_typed_and_serialised_as_before():
    """A systolic Result's figures are a typed record (``systolic``); its ``extra`` and the
    JSON are that record's dict form, in the order the files have always had, and a
    missing figure is None or its neutral value, never a missing attribute."""
    import json

    from simulator.result import OperandCounts, Result
    hw = hwmodels.get("systolic-8x8")
    net = workloads.Network("g", (Conv2d(name="dw", N=1, C=4, H=6, W=6, K=4, R=3, S=3, padding=1,
                                         groups=4), Gemm(name="fc", M=3, N=5, K=7)))
    res = simulate_network(hw, net, "ws", "scalesim")
    dw, fc = res.layers
    assert list(fc.extra) == [
        "dataflow", "array", "mode", "macs", "flops", "compulsory_bytes", "folds",
        "compute_cycles", "stall_cycles", "total_cycles", "utilization", "compute_utilization",
        "mapping_efficiency", "sram_ifmap_reads", "sram_ifmap_writes", "sram_filter_reads",
        "sram_filter_writes", "sram_ofmap_reads", "sram_ofmap_writes", "dram_ifmap_read_bytes",
        "dram_ifmap_write_bytes", "dram_filter_read_bytes", "dram_filter_write_bytes",
        "dram_ofmap_read_bytes", "dram_ofmap_write_bytes", "seconds",
        "scalesim_compute_utilization", "memory_replayed"]
    assert list(dw.extra)[-3:] == ["scalesim_compute_utilization", "memory_replayed", "groups"]
    assert fc.systolic.groups == 1 and dw.systolic.groups == 4
    assert isinstance(fc.systolic.memory_replayed, bool)
    assert fc.systolic.sram_reads == OperandCounts(fc.extra["sram_ifmap_reads"],
                                                   fc.extra["sram_filter_reads"],
                                                   fc.extra["sram_ofmap_reads"])
    assert list(res.extra)[:9] == ["layers", "macs", "compute_cycles", "stall_cycles",
                                   "total_cycles", "utilization", "compute_utilization",
                                   "mapping_efficiency", "seconds"]
    assert list(res.extra)[9:13] == ["sram_ifmap_reads", "sram_ifmap_writes",
                                     "dram_ifmap_read_bytes", "dram_ifmap_write_bytes"]
    assert list(res.extra)[-5:] == ["dataflow", "stalls", "rows", "cols", "word_bytes"]
    d = res.to_dict()
    assert "systolic" not in d and "systolic" not in d["layers"][0]
    assert d["extra"] == json.loads(json.dumps(res.systolic.to_dict()))
    # a network with layers off the array names them; extra is set from the record only
    res2 = simulate_network(hw, workloads.resolve("resnet50"), "ws", stalls="closed-form")
    assert "maxpool" in res2.systolic.not_on_array and res2.extra["not_on_array"] == list(
        res2.systolic.not_on_array)
    assert dataclasses.replace(res, seconds=1.0).extra == res.extra
    with pytest.raises(ValueError, match="give systolic alone"):
        Result(**{**{f.name: getattr(fc, f.name) for f in dataclasses.fields(Result)},
                  "extra": {"macs": 1}})
    # other predictors have none
    from simulator.analysis.roofline import bound
    assert bound(hwmodels.get("gtx480"), net.ops[1]).systolic is None

"""The public API checks its arguments as the CLI does (issue 25, class 10): a wrong kind
of thing is a TypeError, a value not allowed a ValueError, each naming the argument in
keyword form; a preset's name works wherever a preset does."""
import math

import numpy as np
import pytest

import simulator as rs

H100 = rs.load_hardware("h100-sxm")
TPU = rs.load_hardware("tpu-v1")
DATA = "data/measurements/h100-sxm"

BAD = [
    # (call, exception, text the message must hold)
    (lambda: rs.roofline(H100, 42), TypeError, "workload=42"),
    (lambda: rs.roofline(None, "gemm:64x64x64"), TypeError, "hw=None"),
    (lambda: rs.roofline(3.5, "gemm:64x64x64"), TypeError, "hw=3.5"),
    (lambda: rs.data_movement(H100, ["gemm:64x64x64"]), TypeError, "workload=["),
    (lambda: rs.data_movement(H100, "gemm:64x64x64", -1), ValueError, "onchip_bytes=-1"),
    (lambda: rs.data_movement(H100, "gemm:64x64x64", math.nan), TypeError, "onchip_bytes=nan"),
    (lambda: rs.validate(H100, DATA, suites="nope"), ValueError, "suites='nope'"),
    (lambda: rs.validate(H100, DATA, suites=("gemm", "gemm")), ValueError, "given twice"),
    (lambda: rs.validate(H100, DATA, suites=5), TypeError, "suites=5"),
    (lambda: rs.validate(H100, DATA, ("gemm",), engine_budget=-1), ValueError, "engine_budget=-1"),
    (lambda: rs.validate(H100, DATA, ("gemm",), engine_budget=math.inf), ValueError,
     "engine_budget=inf"),
    (lambda: rs.validate(H100, DATA, ("gemm",), 0, workers=0), ValueError, "workers=0"),
    (lambda: rs.validate(H100, DATA, ("gemm",), 0, workers="2"), TypeError, "workers='2'"),
    (lambda: rs.validate(H100, DATA, ("gemm",), 0, workers=True), TypeError, "workers=True"),
    (lambda: rs.validate(TPU, DATA, ("gemm",)), ValueError, "not a SIMT GPU"),
    (lambda: rs.simulate_systolic(TPU, "gemm:64x64x64", array=(0, 4)), ValueError, "array[0]=0"),
    (lambda: rs.simulate_systolic(TPU, "gemm:64x64x64", array=(4, 4, 4)), ValueError, "not 3"),
    (lambda: rs.simulate_systolic(TPU, "gemm:64x64x64", array="4x"), ValueError, "array='4x'"),
    (lambda: rs.simulate_systolic(TPU, "gemm:64x64x64", array="0x4"), ValueError, "array='0x4'"),
    (lambda: rs.simulate_systolic(TPU, "gemm:64x64x64", array=4), TypeError, "array=4"),
    (lambda: rs.simulate_systolic(TPU, "gemm:64x64x64", array=(4.0, 4)), TypeError, "array[0]"),
    (lambda: rs.simulate_systolic(H100, "gemm:64x64x64"), ValueError, "not a systolic array"),
    (lambda: rs.h2d_seconds(H100, -1), ValueError, "nbytes=-1"),
    (lambda: rs.h2d_seconds(H100, math.nan), TypeError, "nbytes=nan"),
    (lambda: rs.h2d_seconds(H100, "10"), TypeError, "nbytes='10'"),
    (lambda: rs.plan_network(H100, workers=0), ValueError, "workers=0"),
    (lambda: rs.plan_network(H100, workers="2"), TypeError, "workers='2'"),
    (lambda: rs.plan_network(TPU), ValueError, "not a SIMT GPU"),
    (lambda: rs.simulate_simt(TPU, "relu", n=1024), ValueError, "not a SIMT GPU"),
    (lambda: rs.simulate_simt(H100, "relu", n=1024, trace=-1), ValueError, "trace=-1"),
    (lambda: rs.analytic(H100, 5), TypeError, "kernel=5"),
    (lambda: rs.analytic(H100, rs.build(H100, "relu", n=1024), n=5), TypeError, "takes no problem"),
    (lambda: rs.build(H100, 7), TypeError, "kernel=7"),
    (lambda: rs.coalesce("abc"), TypeError, "addresses='abc'"),
    (lambda: rs.coalesce([[0, 4], [1]]), TypeError, "addresses="),
    (lambda: rs.coalesce([[0, 4]], access_bytes=0), ValueError, "access_bytes=0"),
    (lambda: rs.warp_instructions(rs.build(H100, "matadd", m=32, n=48), block=10 ** 9),
     ValueError, "block=1000000000"),
    (lambda: rs.warp_instructions(rs.build(H100, "matadd", m=32, n=48), warp=-5), ValueError,
     "warp=-5"),
    (lambda: rs.warp_instructions(rs.build(H100, "matadd", m=32, n=48), launch=3), ValueError,
     "launch=3"),
    (lambda: rs.warp_instructions("matadd"), TypeError, "problem='matadd'"),
    (lambda: rs.timeline(5), TypeError, "result=5"),
    (lambda: rs.timeline(rs.analytic(H100, "relu", n=1024)), ValueError, "not the analytic"),
    (lambda: rs.validation_scores(5), TypeError, "rows=5"),
    (lambda: rs.load_workload(5), TypeError, "spec=5"),
    (lambda: rs.load_hardware(5), TypeError, "name_or_path=5"),
    (lambda: rs.load_hardware("h100-sxm", 5), TypeError, "overrides=5"),
    # issue 25, class 10, the second audit: every argument of every function
    (lambda: rs.choose_plan("resnet50", 1, None), TypeError, "seconds=None"),
    (lambda: rs.choose_plan("resnet50", 1, 5), TypeError, "seconds=5"),
    (lambda: rs.choose_plan("resnet50", 1, []), TypeError, "seconds=[]"),
    (lambda: rs.choose_plan("resnet50", 1, "abc"), TypeError, "seconds='abc'"),
    (lambda: rs.choose_plan("resnet50", 1, {}), ValueError, "seconds={}"),
    (lambda: rs.choose_plan("resnet50", 1, {("gemm", "fc", "direct"): "fast"}), TypeError,
     "seconds[('gemm', 'fc', 'direct')]='fast'"),
    (lambda: rs.choose_plan("resnet50", 1, {("gemm", "fc", "direct"): 1.0}), ValueError,
     "seconds: "),
    (lambda: rs.validation_rows(H100, "grid"), TypeError, "suite_file='grid'"),
    (lambda: rs.validation_rows(H100, None), TypeError, "suite_file=None"),
    (lambda: rs.systolic_array_run(None, "ws", 4, 4), TypeError, "op=None"),
    (lambda: rs.systolic_array_run(5, "ws", 4, 4), TypeError, "op=5"),
    (lambda: rs.systolic_array_run("relu:64", "ws", 4, 4), ValueError, "op='relu:64'"),
    (lambda: rs.systolic_array_run("gemm:8x8x8", "ws", 4, 4, seed=-1), ValueError, "seed=-1"),
    (lambda: rs.systolic_array_run("gemm:8x8x8", "ws", 4, 4, seed="x"), TypeError, "seed='x'"),
    (lambda: rs.systolic_array_run("gemm:8x8x8", "xs", 4, 4), ValueError, "dataflow='xs'"),
    (lambda: rs.systolic_array_run("gemm:8x8x8", "ws", 0, 4), ValueError, "rows=0"),
    (lambda: rs.systolic_array_run("gemm:8x8x8", "ws", 4, 1.5), TypeError, "cols=1.5"),
    (lambda: rs.systolic_array_run("gemm:8x8x8", "ws", 4, 4, record="yes"), TypeError,
     "record='yes'"),
    (lambda: rs.simulate_simt("gtx480", "relu", n=1024, trace=10 ** 12), ValueError,
     "trace=1000000000000: must be <= 20000"),
    (lambda: rs.simulate_simt("gtx480", "relu", n=1024, trace=True), TypeError, "trace=True"),
    (lambda: rs.simulate_simt("gtx480", "relu", n=1024, mode="analytic"), ValueError,
     "mode='analytic'"),
    (lambda: rs.analytic(H100, "relu", n=4096, grid=1.5), TypeError, "grid = 1.5"),
    (lambda: rs.analytic(H100, "relu", n=4096, block=1.5), TypeError, "block = 1.5"),
    (lambda: rs.plan_network(H100, "gemm:64x64x64", batch="abc"), TypeError, "batch='abc'"),
    (lambda: rs.plan_network(H100, "gemm:64x64x64", batch=-1), ValueError, "batch=-1"),
    (lambda: rs.plan_network(H100, "gemm:64x64x64", batch={}), TypeError, "batch={}"),
    (lambda: rs.plan_network(H100, "gemm:64x64x64", batch=0), ValueError, "batch=0"),
    (lambda: rs.plan_network(H100, "gemm:64x64x64", batch=""), TypeError, "batch=''"),
    (lambda: rs.plan_network(H100, "gemm:64x64x64", batch=True), TypeError, "batch=True"),
    (lambda: rs.plan_network(H100, rs.load_workload("gemm:64x64x64"), batch="abc"), TypeError,
     "batch='abc'"),
    (lambda: rs.choose_plan(rs.load_workload("gemm:64x64x64"), 0, {("gemm", "gemm", "direct"): 1}),
     ValueError, "batch=0"),
    (lambda: rs.plan_network(H100, "gemm:64x64x64", mode="engine"), ValueError, "mode='engine'"),
    (lambda: rs.plan_network(H100, "gemm:64x64x64", plan=5), TypeError, "plan=5"),
    (lambda: rs.plan_network(H100, "gemm:64x64x64", workers=10 ** 30), ValueError,
     "workers=1000000000000000000000000000000: must be <="),
    (lambda: rs.load_workload("resnet50", batch=10 ** 30), ValueError, "batch=1000000000000"),
    (lambda: rs.load_workload("resnet50", resolution=1.5), TypeError, "resolution=1.5"),
    (lambda: rs.load_workload("gemm:4x4x4", dtype="fp8"), ValueError, "dtype='fp8'"),
    (lambda: rs.load_workload("gemm:4x4x4", dtype=5), TypeError, "dtype=5"),
    (lambda: rs.load_workload("conv:n=1,c=3,h=8,w=8,k=4,r=3,s=3", layout=""), ValueError,
     "layout=''"),
    (lambda: rs.load_measurements(5, "grid"), TypeError, "folder=5"),
    (lambda: rs.load_measurements(DATA, 5), TypeError, "suite=5"),
    (lambda: rs.calibrate(H100, 5), TypeError, "folder=5"),
    (lambda: rs.network_summary("h100-sxm", plans=5), TypeError, "plans=5"),
    (lambda: rs.network_summary(None), TypeError, "gpu=None"),
    (lambda: rs.network_summary("h300"), ValueError, "gpu='h300'"),
    (lambda: rs.network_summary("h100-sxm", measurements=""), ValueError, "measurements=''"),
    (lambda: rs.compiled_summary(None), TypeError, "gpu=None"),
    (lambda: rs.compiled_summary("h200"), ValueError, "gpu='h200': no folder"),
    (lambda: rs.compiled_summary("h100-sxm", measurements=5), TypeError, "measurements=5"),
    (lambda: rs.validate(H100, DATA, ("gemm",), 0, progress=5), TypeError, "progress=5"),
    (lambda: rs.validate(H100, DATA, ("gemm",), 0, workers=10 ** 6), ValueError,
     "workers=1000000: must be <="),
    (lambda: rs.validate(H100, DATA, ("gemm",), 1.5), ValueError, "engine_budget=1.5"),
    (lambda: rs.validate(H100, 5, ("gemm",), 0), TypeError, "folder=5"),
    (lambda: rs.validation_rows(H100, rs.load_measurements(DATA, "gemm"), 0, progress="yes"),
     TypeError, "progress='yes'"),
    (lambda: rs.load_hardware("h100-sxm", [5]), TypeError, "overrides[0]=5"),
    (lambda: rs.load_hardware("h100-sxm", [""]), ValueError, "overrides[0]=''"),
    (lambda: rs.load_hardware("h100-sxm", ["sm_count=10", "sm_count=10"]), ValueError,
     "sm_count given 2 times"),
    (lambda: rs.load_hardware("h100-sxm", ["sm_count=abc"]), ValueError, "overrides: "),
    (lambda: rs.occupancy(H100, 256, 32, smem_bytes=-1), ValueError, "smem_bytes=-1"),
    (lambda: rs.occupancy(H100, 256, 32, smem_bytes=10 ** 6), ValueError, "smem_bytes = 1000000"),
    (lambda: rs.occupancy(H100, 1.5, 32), TypeError, "block=1.5"),
    (lambda: rs.occupancy(H100, 256, "32"), TypeError, "regs='32'"),
    (lambda: rs.occupancy(TPU, 256, 32), ValueError, "not a SIMT GPU"),
    (lambda: rs.analytic(H100, "relu", n=4096, policy="fifo"), ValueError, "policy='fifo'"),
    (lambda: rs.analytic(H100, "relu", n=4096, policy=5), TypeError, "policy=5"),
    (lambda: rs.analytic(H100, "relu", n=4096, policy=""), ValueError, "policy=''"),
    (lambda: rs.analytic(H100, "relu", n=4096, l2="yes"), ValueError, "l2='yes': allowed: cold, warm, flushed"),
    (lambda: rs.analytic(H100, "relu", n=4096, l2=1), TypeError, "l2=1"),
    (lambda: rs.simulate_simt(H100, "relu", n=4096, l2=True), TypeError, "l2=True"),
    (lambda: rs.predict(H100, "relu", n=4096, mode="fast"), ValueError, "mode='fast'"),
    (lambda: rs.simulate_systolic(TPU, "gemm:16x16x16", trace="yes"), TypeError, "trace='yes'"),
    (lambda: rs.simulate_systolic(TPU, "gemm:16x16x16", dataflow=""), ValueError, "dataflow=''"),
    (lambda: rs.simulate_systolic(TPU, "gemm:16x16x16", mode=None), TypeError, "mode=None"),
    (lambda: rs.simulate_systolic(TPU, "gemm:16x16x16", stalls=5), TypeError, "stalls=5"),
    (lambda: rs.roofline(H100, "gemm:64x64x64", precision="fp8"), ValueError, "precision='fp8'"),
    (lambda: rs.h2d_seconds(H100, 1024, pinned="yes"), TypeError, "pinned='yes'"),
    (lambda: rs.h2d_seconds(H100, 10 ** 30), ValueError, "must be <= 1000000000000000"),
    (lambda: rs.data_movement(H100, "gemm:64x64x64", 10 ** 16), ValueError, "onchip_bytes="),
    (lambda: rs.coalesce([-4, 0]), ValueError, "address -4"),
    (lambda: rs.coalesce([[1]]), ValueError, "address 1 is not a multiple of access_bytes=4"),
    (lambda: rs.coalesce([0.5]), TypeError, "addresses=[0.5]"),
    (lambda: rs.coalesce([[[0]]]), TypeError, "addresses=[[[0]]]"),
    (lambda: rs.coalesce(range(5)), TypeError, "addresses=range"),
    (lambda: rs.coalesce([0] * (rs.arguments.MAX_ADDRESSES + 1)), ValueError, "at most"),
    (lambda: rs.coalesce([0, 4], access_bytes=3), ValueError, "access_bytes=3: must be a power"),
    (lambda: rs.coalesce([0, 4], access_bytes=10 ** 9), ValueError, "access_bytes=1000000000"),
    (lambda: rs.coalesce([0, 4], segment_bytes=100), ValueError, "segment_bytes=100"),
    (lambda: rs.timeline(rs.simulate_simt("gtx480", "relu", n=1024, mode="full"), launch=-1),
     ValueError, "launch=-1"),
    (lambda: rs.timeline(rs.simulate_simt("gtx480", "relu", n=1024, mode="full"), launch="0"),
     TypeError, "launch='0'"),
    # second audit: another GPU's measurements, a uint64 address past int64, bools
    (lambda: rs.validate(rs.load_hardware("h200"), DATA, ("gemm",), 0), ValueError,
     "folder='data/measurements/h100-sxm': gemm.json was measured on 'NVIDIA H100 80GB HBM3', "
     "not a h200"),
    (lambda: rs.coalesce(np.array([[2**63]], dtype=np.uint64)), ValueError,
     "address 9223372036854775808: must be at most 9223372036854775807"),
    (lambda: rs.coalesce(np.array([[0, 2**64 - 1]], dtype=np.uint64)), ValueError,
     "address 18446744073709551615"),
    (lambda: rs.analytic("gtx480", "relu", n=True), TypeError, "relu: n = True"),
    (lambda: rs.analytic("gtx480", "relu", n=np.float64(1024)), TypeError, "relu: n = "),
    (lambda: rs.analytic("gtx480", "gemm-naive", m=64, n=64, k=64, block=(np.int64(16), 1.5)),
     ValueError, "gemm-naive: block = (16, 1.5)"),
]


@pytest.mark.parametrize("call,exc,text", BAD, ids=[b[2] for b in BAD])
def test_bad_arguments_name_the_argument(call, exc, text):
    with pytest.raises(exc) as e:
        call()
    assert text in str(e.value)


def test_a_preset_name_works_where_a_preset_does():
    """The same Result from a preset's name as from the preset it names."""
    by_name = rs.roofline("h100-sxm", "gemm:256x256x256")
    assert by_name.seconds == rs.roofline(H100, "gemm:256x256x256").seconds
    a = rs.analytic("h100-sxm", "gemm-tiled", m=256, n=256, k=256)
    assert a.seconds == rs.analytic(H100, "gemm-tiled", m=256, n=256, k=256).seconds
    s = rs.simulate_systolic("tpu-v1", "gemm:256x256x256")
    assert s.cycles == rs.simulate_systolic(TPU, "gemm:256x256x256").cycles
    assert rs.h2d_seconds("h100-sxm", 1 << 20) == rs.h2d_seconds(H100, 1 << 20)
    assert rs.occupancy("gtx480", 256, 32).blocks_per_sm == 4


def test_suites_as_one_string_are_the_cli_s_comma_list():
    one = rs.validate(H100, DATA, "gemm", engine_budget=0)
    assert list(one) == ["gemm"]
    both = rs.validate(H100, DATA, "grid,gemm", engine_budget=0)
    assert list(both) == ["grid", "gemm"]
    assert both["gemm"][1]["analytic"]["mape"] == one["gemm"][1]["analytic"]["mape"]


def test_an_array_shape_overrides_the_preset():
    r = rs.simulate_systolic(TPU, "gemm:64x64x64", array=(8, 4))
    assert r.systolic.rows == 8 and r.systolic.cols == 4


def test_the_api_caps_workers_as_the_cli_does():
    """One limit: four local processes a core, for --workers and ``workers=``."""
    import os

    from simulator.cli import options
    cores = len(os.sched_getaffinity(0))
    assert rs.arguments.max_workers() == options.max_workers() == 4 * cores
    with pytest.raises(ValueError, match=f"workers={4 * cores + 1}: must be <= {4 * cores}"):
        rs.plan_network(H100, "gemm:64x64x64", workers=4 * cores + 1)
    with pytest.raises(argparse_error()):
        options.positive_int("workers", options.max_workers())(str(4 * cores + 1))


def argparse_error():
    import argparse
    return argparse.ArgumentTypeError


def test_the_cli_keeps_as_many_timeline_instructions_as_the_api_allows():
    from simulator.cli import options
    assert options.TIMELINE_INSTRUCTIONS == rs.arguments.MAX_TRACE == 20_000


def test_limits_at_the_edge_are_accepted():
    """10^15 bytes is the README's limit: a copy of them takes 10^15 / bandwidth (+ latency)."""
    link = H100.host_link
    s = rs.h2d_seconds(H100, 10 ** 15, pinned=True)
    assert s == pytest.approx(link.latency_s + 10 ** 15 / link.pinned_bandwidth_bytes_per_s)
    # 16-byte lanes at 0, 16, 32, 48 cover bytes 0..63: one 128-byte segment, four 32-byte ones
    assert [x.tolist() for x in rs.coalesce([0, 16, 32, 48], access_bytes=16)] == [[0]]
    assert [x.tolist() for x in rs.coalesce([0, 16, 32, 48], 16, 32)] == [[0, 1]]
    assert [x.tolist() for x in rs.coalesce([-1, -1])] == [[]]
    assert rs.analytic(H100, "relu", n=4096, policy="lrr", l2="warm").seconds > 0


def test_a_seconds_table_drives_the_oracle():
    """Every layer 1 s in every configuration, every transform free: the best plan runs each
    of the network's ops once (direct-nchw needs no transform), so it takes as many
    seconds as the network has ops."""
    from simulator.analysis import plan as pl
    net = pl.network("resnet50", 1)
    table = {}
    for name in pl.UNIFORM:
        for lp in pl.expand(net, pl.configs_of(net, name)):
            table[pl.time_key(lp)] = 0.0 if lp.algorithm == "transform" else 1.0
    for lp in pl.all_transforms(net):
        table[pl.time_key(lp)] = 0.0
    choice, best = rs.choose_plan("resnet50", 1, table)
    assert choice.seconds == pytest.approx(len(net.ops))


def test_numpy_integers_are_integers_everywhere():
    """A numpy integer is taken as the int it holds (as batch, block and engine_budget
    already were): the same Result as the Python int's."""
    hw = rs.load_hardware("gtx480")
    for kernel, given, ints in (
            ("relu", {"n": np.int64(1024)}, {"n": 1024}),
            ("gemm-naive", {"m": np.int32(64), "n": np.uint16(64), "k": np.int64(64),
                            "block": (np.int64(16), np.int8(16))},
             {"m": 64, "n": 64, "k": 64, "block": (16, 16)})):
        a, b = rs.analytic(hw, kernel, **given), rs.analytic(hw, kernel, **ints)
        assert (a.seconds, a.instructions) == (b.seconds, b.instructions)
        assert rs.build(hw, kernel, **given).args == rs.build(hw, kernel, **ints).args
        assert all(type(v) in (int, tuple, str, type(None))
                   for v in rs.build(hw, kernel, **given).args.values())


def test_a_uint64_address_within_int64_is_taken():
    """The range is checked on the uint64s given: those int64 holds pass (a 128-byte
    segment is address // 128)."""
    got = rs.coalesce(np.array([[0, 128, 2**40]], dtype=np.uint64))
    assert [list(map(int, row)) for row in got] == [[0, 1, 2**33]]


def test_a_long_value_is_cut_in_the_message():
    """A million-character kernel name or choice: the message quotes its start only."""
    for call in (lambda: rs.analytic("gtx480", "relu" + "x" * 10**6, n=4),
                 lambda: rs.analytic("gtx480", "gemm-naive", m=64, n=64, k=64,
                                     thread_x="m" + "x" * 10**6)):
        with pytest.raises(ValueError) as e:
            call()
        assert "xxxxx..." in str(e.value) and len(str(e.value)) < 400, str(e.value)[:500]


def test_a_numpy_integer_choice_is_the_choice():
    """A kernel's choice argument (tile) given as a numpy integer is that choice (it
    used to reach the grid as np.int64 and be refused as a grid, or overflow as uint8);
    a value of another kind is refused naming the argument."""
    import numpy as np

    import simulator as rs
    hw = rs.load_hardware("h100-sxm")
    want = rs.analytic(hw, "gemm-tiled", m=64, n=64, k=64, tile=16).seconds
    for t in (np.int64(16), np.uint8(16), np.int32(16)):
        assert rs.analytic(hw, "gemm-tiled", m=64, n=64, k=64, tile=t).seconds == want
    for bad in (np.uint8(7), 16.0, "16", np.array([16])):
        with pytest.raises(ValueError, match=r"gemm-tiled: tile = .*: allowed: 8, 16, 32"):
            rs.analytic(hw, "gemm-tiled", m=64, n=64, k=64, tile=bad)


# ---- audit 6, section 8: one rule for the API and the CLI; TypeError / ValueError split

def test_a_path_workload_is_taken_as_its_string():
    import pathlib
    csv = "tests/bad_inputs/topology_with_notes.csv"
    by_str, by_path = rs.roofline(H100, csv), rs.roofline(H100, pathlib.Path(csv))
    assert by_path.seconds == by_str.seconds and len(by_path.layers) == len(by_str.layers)
    assert len(rs.load_workload(pathlib.Path(csv)).ops) == len(rs.load_workload(csv).ops)


def test_precision_none_is_the_ops_own_dtype_and_a_number_is_a_type_error():
    # documented: None takes the ops' dtype; an fp16 GEMM is then held to the fp16 peak
    from workloads.ir import Gemm
    g = Gemm(name="g", M=8192, N=8192, K=8192, dtype="fp16")
    flops = 2 * 8192 ** 3
    assert rs.roofline(H100, g, precision=None).seconds == pytest.approx(
        flops / H100.peak_flop_per_s("fp16"), rel=1e-6)
    with pytest.raises(TypeError, match="precision=16"):
        rs.roofline(H100, "gemm:64x64x64", precision=16)


def test_a_policy_with_the_analytic_model_is_refused_as_on_the_command_line():
    gtx = rs.load_hardware("gtx480")
    with pytest.raises(ValueError, match="policy='lrr': the analytic model has no warp scheduler"):
        rs.predict(gtx, "relu", n=4096, mode="analytic", policy="lrr")
    assert rs.predict(gtx, "relu", n=4096, mode="analytic").engine is None     # None: allowed


def test_workers_beside_a_scheduler_are_refused_at_once():
    import time
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match="workers=2 and scheduler='tcp://127.0.0.1:1'"):
        rs.validate(H100, DATA, ["gemm"], engine_budget=0, workers=2, scheduler="tcp://127.0.0.1:1")
    assert time.perf_counter() - t0 < 2          # before any connection attempt (10 s)


def test_the_array_as_the_cli_writes_it():
    a = rs.simulate_systolic(TPU, "gemm:256x256x256", array="16x16")
    b = rs.simulate_systolic(TPU, "gemm:256x256x256", array=(16, 16))
    assert (a.systolic.rows, a.systolic.cols) == (16, 16) and a.cycles == b.cycles


@pytest.mark.parametrize("n", [4096.0, True, "4096"])
def test_a_size_of_the_wrong_kind_is_a_type_error(n):
    with pytest.raises(TypeError, match=r"relu: n = .*must be a positive integer"):
        rs.predict(rs.load_hardware("gtx480"), "relu", n=n, mode="analytic")


def test_an_address_past_int64_states_the_range():
    with pytest.raises(ValueError, match=r"address 18446744073709551616: must be from -1 to "
                                         r"9223372036854775807"):
        rs.coalesce([2**64])

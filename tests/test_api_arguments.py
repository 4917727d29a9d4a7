"""The public API checks its arguments as the CLI does (issue 25, class 10): a wrong kind
of thing is a TypeError, a value not allowed a ValueError, each naming the argument in
keyword form; a preset's name works wherever a preset does."""
import math

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
    (lambda: rs.simulate_systolic(TPU, "gemm:64x64x64", array="4x4"), TypeError, "array='4x4'"),
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

"""The program templates against the SASS the H100 compiled (resources suite)."""
import json
from collections import Counter
from pathlib import Path

import pytest

from simulator.analysis import sass
from simulator.simt import isa
from simulator.simt.kernels import conv_direct, conv_im2col, gemm_naive, gemm_tiled

RESOURCES = Path(__file__).resolve().parents[1] / "data" / "measurements" / "h100-sxm" / "resources.json"

TOY = """
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   ISETP.NE.U32.AND P0, PT, R0, RZ, PT ;
        /*0020*/              @!P0 BRA `(.L_x_0) ;
        /*0030*/                   LOP3.LUT R2, R0, R1, RZ, 0xfc, !PT ;
        /*0040*/                   ISETP.NE.U32.AND P1, PT, R2, RZ, PT ;
        /*0050*/              @!P1 BRA `(.L_x_1) ;
        /*0060*/                   MOV R10, 0x90 ;
        /*0070*/                   CALL.REL.NOINC `($__internal_0_$__cuda_sm20_div_s64) ;
        /*0080*/                   BRA `(.L_x_2) ;
.L_x_1:
        /*0090*/                   I2F.U32.RP R6, R0 ;
        /*00a0*/                   MUFU.RCP R6, R6 ;
        /*00b0*/                   F2I.FTZ.U32.TRUNC.NTZ R3, R6 ;
.L_x_2:
        /*00c0*/                   IMAD R4, R3, R0, RZ ;
.L_x_0:
        /*00d0*/                   UIADD3 UR4, UR4, 0x1, URZ ;
        /*00e0*/                   LDG.E R5, desc[UR6][R4.64] ;
        /*00f0*/                   FFMA R7, R5, R5, R7 ;
        /*0100*/              @P0 BRA `(.L_x_0) ;
        /*0110*/                   STG.E desc[UR6][R4.64], R7 ;
        /*0120*/                   EXIT ;
"""


def test_fast_path_skips_the_slow_division_and_runs_loops_once():
    path = [i.split()[0] if not i.startswith("@") else i.split()[1] for _, i in sass.fast_path(TOY)]
    # the zero-divisor test falls through, the slow-path CALL is jumped over, the loop's
    # back edge falls through, the path ends at EXIT
    assert path == ["S2R", "ISETP.NE.U32.AND", "BRA", "LOP3.LUT", "ISETP.NE.U32.AND", "BRA",
                    "I2F.U32.RP", "MUFU.RCP", "F2I.FTZ.U32.TRUNC.NTZ", "IMAD", "UIADD3", "LDG.E",
                    "FFMA", "BRA", "STG.E", "EXIT"]
    assert sass.loops(TOY) == [(13, 16)]          # .L_x_0 (instruction 13) to its back edge
    c = sass.classes(i for _, i in sass.fast_path(TOY))
    assert c == Counter({"ALU": 4, "BRA": 4, "SFU": 3, "IMAD": 1, "UNI": 1, "LDG": 1, "FFMA": 1,
                         "STG": 1})


def test_bad_text_is_refused():
    with pytest.raises(ValueError, match="no SASS"):
        sass.fast_path("hello")


@pytest.fixture(scope="module")
def compiled():
    recs = json.loads(RESOURCES.read_text())["records"]
    return {r["kernel"]: r["sass"] for r in recs if r.get("sass")}


def _template_classes(rows):
    return Counter(isa.OP_NAMES[int(o)] for o in rows[:, 0])


def _close(template, compiled_counts, rel):
    for k in ("LDG", "STG", "LDS", "STS", "BAR", "FFMA", "SFU"):
        assert template.get(k, 0) == compiled_counts.get(k, 0), k
    t, c = sum(template.values()), sum(compiled_counts.values())
    assert abs(t / c - 1) <= rel, (t, c)
    for k in ("ALU", "IMAD", "IMADW", "UNI"):   # each pipe's share within 20% of the SASS's
        assert abs(template.get(k, 0) - compiled_counts.get(k, 0)) <= 0.2 * compiled_counts[k] + 2, k


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_im2col_template_is_its_sass_fast_path(compiled, layout):
    path = [i for _, i in sass.fast_path(compiled[f"im2col {layout}"])]
    _close(_template_classes(conv_im2col.TEMPLATE[0]), sass.classes(path), 0.02)


@pytest.mark.parametrize("tile", [8, 16, 32])
def test_gemm_tiled_trip_is_its_sass_loop(compiled, tile):
    text = compiled[f"gemm-tiled {tile}"]
    ins, _ = sass.parse(text)
    (a, b), = [lp for lp in sass.loops(text) if lp[1] - lp[0] > 3]
    t, pro, body, _ = gemm_tiled.TEMPLATES[tile]
    _close(_template_classes(t[pro:body]), sass.classes(ins[a:b + 1]), 0.02)
    path = [i for q, i in sass.fast_path(text) if q < a]
    assert abs(pro / len(path) - 1) <= 0.02


def test_gemm_naive_trip_is_its_unrolled_sass_loop(compiled):
    text = compiled["gemm-naive cols"]
    ins, _ = sass.parse(text)
    a, b = max(sass.loops(text), key=lambda lp: lp[1] - lp[0])
    t, pro, body, _ = gemm_naive.TEMPLATE
    _close(_template_classes(t[pro:body]), sass.classes(ins[a:b + 1]), 0.02)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_conv_direct_prologue_is_its_sass_up_to_the_loop_nest(compiled, layout):
    text = compiled[f"conv-direct {layout}"]
    first = min(a for a, _ in sass.loops(text))
    path = [i for q, i in sass.fast_path(text) if q < first]
    t, pro, body, _ = conv_direct.TEMPLATES[layout]
    _close(_template_classes(t[:pro]), sass.classes(path), 0.02)


def test_conv_direct_nchw_loop_nest_costs_its_sass(compiled):
    """One c of a 3x3 filter, all taps inside: the template's rows active on those 9 trips
    against the SASS's c loop (head, 3 x (r head, s set-up, three remainder taps, r tail),
    c tail)."""
    text = compiled["conv-direct nchw"]
    unrolled, r_loop, c_loop = sorted(sass.loops(text), key=lambda lp: lp[1] - lp[0])[-3:]
    size = lambda lp: lp[1] - lp[0] + 1  # noqa: E731
    # S = 3 never enters the unrolled part nor its set-up (the 16 instructions between the
    # s set-up's branch and the unrolled loop); the r loop runs three times
    sass_count = size(c_loop) + 2 * size(r_loop) - 3 * (size(unrolled) + 16)
    t, pro, body, _ = conv_direct.TEMPLATES["nchw"]
    rows = t[pro:body]
    per_stream = Counter(int(s) for s in rows[:, 5])
    taps = 9
    active = {5: 1, 6: 3, 7: 3, 8: 0, 9: 0, 10: 3, 11: 3, 12: 3, 0: taps, 1: taps}
    ours = sum(per_stream[s] * n for s, n in active.items())
    assert abs(ours / sass_count - 1) <= 0.05, (ours, sass_count)


NCU = Path(__file__).resolve().parents[1] / "data" / "diagnostics" / "h100-sxm" / "ncu_conv_direct.json"


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_conv_direct_fma_pipe_passes_match_the_h100_counters(layout):
    """The loop body's FP32-pipe rows (IMAD 2 cycles, IMAD.WIDE 4, FFMA 2 at the INT32
    rate) keep that pipe as busy per instruction as Nsight Compute measured on the H100
    (smsp__pipe_fmaheavy_cycles_active over smsp__inst_executed_pipe_fmaheavy) for a 3x3
    layer, within 5%."""
    rec, = [r for r in json.loads(NCU.read_text())["records"]
            if r["layout"] == layout and "r=3" in r["conv"]]
    m = rec["metrics"]
    measured = m["smsp__pipe_fmaheavy_cycles_active.sum"] / m["smsp__inst_executed_pipe_fmaheavy.sum"]
    t, pro, body, _ = conv_direct.TEMPLATES[layout]
    # rows active per c (NCHW: nine taps, three r; S = 3 runs the remainder taps) or per
    # (r, s) (NHWC: C / 4 = 64 trips of four taps; a new r every third)
    active = ({0: 9, 1: 9, 5: 1, 6: 3, 7: 3, 10: 3, 11: 3, 12: 3} if layout == "nchw" else
              {-1: 64, 0: 64, 1: 64, 3: 64, 4: 64, 13: 64, 14: 64, 15: 64, 16: 64, 5: 1 / 3, 6: 1, 7: 1})
    ops = Counter()
    for row in t[pro:body]:
        ops[isa.OP_NAMES[int(row[0])]] += active.get(int(row[5]), 0)
    ours = (2 * ops["IMAD"] + 4 * ops["IMADW"] + 2 * ops["FFMA"]) / (ops["IMAD"] + ops["IMADW"] + ops["FFMA"])
    assert ours == pytest.approx(measured, rel=0.05)
    wide_only = 2.0     # without IMAD.WIDE's second pass the template would be 2.0, off by 15-20%
    assert abs(wide_only / measured - 1) > 0.1


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
def test_batchnorm_template_is_its_sass_fast_path(compiled, layout):
    """The fast path takes NHWC's one 64-bit remainder; NCHW's (i // HW) % C is one
    division more (44 instructions, 3 of them on the SFU)."""
    from simulator.simt.kernels import batchnorm
    path = sass.classes([i for _, i in sass.fast_path(compiled["batchnorm"])])
    t = _template_classes(batchnorm.TEMPLATES[layout][0])
    if layout == "nchw":
        div = _template_classes(batchnorm.TEMPLATES["nchw"][0]) - _template_classes(
            batchnorm.TEMPLATES["nhwc"][0])
        assert sum(div.values()) == 44 and div["SFU"] == 3
        t = t - div
    assert sum(t.values()) == pytest.approx(sum(path.values()), rel=0.02)
    for k in ("LDG", "STG", "SFU"):
        assert t[k] == path[k], k


def test_pool_template_is_its_sass(compiled):
    """The prologue (before the window loop), a window position (the s loop, unrolled by
    four, over four) and the epilogue, each within 5% of the compiled code's."""
    from simulator.simt.kernels import pool
    text = compiled["pool2d"]
    ins, _ = sass.parse(text)
    loops = sass.loops(text)
    first = min(a for a, _ in loops)
    path = sass.fast_path(text)
    pre = [i for q, i in path if q < first]
    t, pro, body, _ = pool.TEMPLATE
    assert pro == pytest.approx(len(pre), rel=0.05)
    on_path = {q for q, _ in path}
    a, b = min(lp for lp in loops if lp[0] in on_path and lp[1] - lp[0] < 200)   # the inner s loop
    assert sass.classes(ins[a:b + 1])["LDG"] == 4                               # unrolled by four
    position = sum(1 for r in t[pro:body] if r[5] in (0, 1))    # stream 2 is the row's set-up
    assert position == pytest.approx((b - a + 1) / 4, rel=0.05)
    post = [i for q, i in path if q > max(hi for _, hi in loops)]
    assert len(t) - body == pytest.approx(len(post), rel=0.05)

"""SCALE-Sim memory replay (stalls, buffer turnover, ofmap drains) against SCALE-Sim 3.0.0.

The expected numbers below were produced by SCALE-Sim 3.0.0 (benchmarks/compare_scalesim.py-
style runs of scalesim==3.0.0 from PyPI: one .cfg + one-layer topology per case, the
COMPUTE_REPORT's Total Cycles / Stall Cycles and the DETAILED_ACCESS_REPORT's DRAM IFMAP
Reads, DRAM Filter Reads, DRAM OFMAP Writes). All SRAMs of a case have the same size; the
cfg offsets were 0 / 10000000 / 20000000 (they only separate the operands).
"""
import dataclasses
import math

import pytest

import hwmodels
import workloads
from simulator.systolic.scalesim_memory import replay
from simulator.systolic.scalesim_mode import (
    SSLayer,
    _memory_closed_form,
    as_scalesim_layer,
    closed_form,
    simulate_layer_scalesim,
)

# the three layers of the runs
OPS = {
    # 3x3 stride 1 conv: 16x16x8 -> 16 filters
    "c16_3x3": workloads.Conv2d(name="c16_3x3", N=1, C=8, H=16, W=16, K=16, R=3, S=3,
                                stride=1, padding=0),
    # 3x3 stride 2 on 13x12: SCALE-Sim's ceil((12-3+2)/2) = 6 output columns (floor gives 5),
    # the last window sticks out of the input
    "c12_s2": workloads.Conv2d(name="c12_s2", N=1, C=6, H=13, W=12, K=10, R=3, S=3,
                               stride=2, padding=0),
    # GEMM-format layer (M, N, K) = (40, 24, 30)
    "g40x24x30": workloads.Gemm(name="g40x24x30", M=40, N=24, K=30),
    # a mid-size conv (many sets, many window wraps): 28x28x16 -> 32 filters
    "c28": workloads.Conv2d(name="c28", N=1, C=16, H=28, W=28, K=32, R=3, S=3, stride=1, padding=0),
    # GEMMs whose ifmap has exactly / one row less than 50 sets of the 1 kB CALC buffer
    # (50 x floor(1024/100) = 500 words)
    "g20x8x25": workloads.Gemm(name="g20x8x25", M=20, N=8, K=25),
    "g20x8x24": workloads.Gemm(name="g20x8x24", M=20, N=8, K=24),
}

# (layer, array RxC, dataflow, InterfaceBandwidth, SRAM kB (each), bandwidth words/cycle
#  (ifmap, filter, ofmap), Total Cycles, Stall Cycles, DRAM ifmap reads, DRAM filter reads,
#  DRAM ofmap writes) -- SCALE-Sim 3.0.0's reports, see the module docstring.
# Configurations: 8x4 CALC 1 kB: estimate buffer turnover and mid-layer ofmap drains;
# 4x8 USER 1 kB bw 4: everything small; 8x8 USER 2 kB bw 8/2/2: slow filter and ofmap;
# 8x16 USER 64 kB ofmap bw 1: no turnover; 8x8 USER 1 kB bw 64/64/1: small ofmap SRAM
# drained at 1 word/cycle (ofmap drain stalls).
GOLDEN = [
    ("c16_3x3", "8x4", "os", "CALC", 1, (10, 10, 10), 8199, 0, 12948, 1788, 3139),
    ("c16_3x3", "4x8", "os", "USER", 1, (4, 4, 4), 27957, 19922, 56320, 111104, 3139),
    ("c16_3x3", "8x8", "os", "USER", 2, (8, 2, 2), 7301, 3002, 56320, 2048, 3137),
    ("c16_3x3", "8x16", "os", "USER", 64, (8, 8, 1), 2349, 0, 14400, 1152, 3136),
    ("c16_3x3", "8x8", "os", "USER", 1, (64, 64, 1), 4299, 0, 112128, 56320, 3136),
    ("c16_3x3", "8x4", "ws", "CALC", 1, (10, 10, 10), 7703, 0, 56448, 1152, 28227),
    ("c16_3x3", "4x8", "ws", "USER", 1, (4, 4, 4), 13825, 6266, 28160, 3584, 56451),
    ("c16_3x3", "8x8", "ws", "USER", 2, (8, 2, 2), 12996, 9073, 28672, 2048, 28225),
    ("c16_3x3", "8x16", "ws", "USER", 64, (8, 8, 1), 2033, 0, 14112, 1152, 28224),
    ("c16_3x3", "8x8", "ws", "USER", 1, (64, 64, 1), 27192, 23269, 41984, 3584, 28224),
    ("c16_3x3", "8x4", "is", "CALC", 1, (10, 10, 10), 14993, 0, 3536, 56448, 28227),
    ("c16_3x3", "4x8", "is", "USER", 1, (4, 4, 4), 60733, 47234, 238080, 34816, 56515),
    ("c16_3x3", "8x8", "is", "USER", 2, (8, 2, 2), 113635, 105086, 14336, 227328, 28225),
    ("c16_3x3", "8x16", "is", "USER", 64, (8, 8, 1), 5381, 0, 14976, 1152, 28224),
    ("c16_3x3", "8x8", "is", "USER", 1, (64, 64, 1), 28124, 19575, 238080, 45056, 28224),
    ("c12_s2", "8x4", "os", "CALC", 1, (10, 10, 10), 959, 0, 2967, 608, 360),
    ("c12_s2", "4x8", "os", "USER", 1, (4, 4, 4), 1151, 0, 4096, 1024, 360),
    ("c12_s2", "8x8", "os", "USER", 2, (8, 2, 2), 679, 0, 5120, 864, 360),
    ("c12_s2", "8x16", "os", "USER", 64, (8, 8, 1), 379, 0, 2160, 864, 360),
    ("c12_s2", "8x8", "os", "USER", 1, (64, 64, 1), 679, 0, 4096, 1024, 360),
    ("c12_s2", "8x4", "ws", "CALC", 1, (10, 10, 10), 1133, 0, 4482, 540, 2523),
    ("c12_s2", "4x8", "ws", "USER", 1, (4, 4, 4), 1510, 111, 3584, 1024, 5047),
    ("c12_s2", "8x8", "ws", "USER", 2, (8, 2, 2), 811, 0, 5120, 864, 2522),
    ("c12_s2", "8x16", "ws", "USER", 64, (8, 8, 1), 461, 0, 2016, 864, 2520),
    ("c12_s2", "8x8", "ws", "USER", 1, (64, 64, 1), 1500, 689, 3584, 1024, 2520),
    ("c12_s2", "8x4", "is", "CALC", 1, (10, 10, 10), 1763, 0, 976, 4860, 2523),
    ("c12_s2", "4x8", "is", "USER", 1, (4, 4, 4), 8789, 7110, 9216, 35328, 5043),
    ("c12_s2", "8x8", "is", "USER", 2, (8, 2, 2), 1119, 0, 2048, 560, 2521),
    ("c12_s2", "8x16", "is", "USER", 64, (8, 8, 1), 839, 0, 2592, 560, 2520),
    ("c12_s2", "8x8", "is", "USER", 1, (64, 64, 1), 1531, 412, 9216, 35328, 2520),
    ("g40x24x30", "8x4", "os", "CALC", 1, (10, 10, 10), 1199, 0, 7200, 740, 963),
    ("g40x24x30", "4x8", "os", "USER", 1, (4, 4, 4), 1199, 0, 4096, 1024, 963),
    ("g40x24x30", "8x8", "os", "USER", 2, (8, 2, 2), 1841, 1182, 15360, 720, 960),
    ("g40x24x30", "8x16", "os", "USER", 64, (8, 8, 1), 519, 0, 1200, 960, 960),
    ("g40x24x30", "8x8", "os", "USER", 1, (64, 64, 1), 659, 0, 4096, 1024, 960),
    ("g40x24x30", "8x4", "ws", "CALC", 1, (10, 10, 10), 1391, 0, 7200, 720, 3843),
    ("g40x24x30", "4x8", "ws", "USER", 1, (4, 4, 4), 1755, 460, 5120, 1024, 7687),
    ("g40x24x30", "8x8", "ws", "USER", 2, (8, 2, 2), 1863, 1120, 15360, 720, 3841),
    ("g40x24x30", "8x16", "ws", "USER", 64, (8, 8, 1), 559, 0, 1280, 960, 3840),
    ("g40x24x30", "8x8", "ws", "USER", 1, (64, 64, 1), 2710, 1967, 5120, 1024, 3840),
    ("g40x24x30", "8x4", "is", "CALC", 1, (10, 10, 10), 1679, 0, 1200, 7200, 3843),
    ("g40x24x30", "4x8", "is", "USER", 1, (4, 4, 4), 2045, 526, 5120, 8192, 7687),
    ("g40x24x30", "8x8", "is", "USER", 2, (8, 2, 2), 951, 32, 2048, 768, 3841),
    ("g40x24x30", "8x16", "is", "USER", 64, (8, 8, 1), 647, 0, 1440, 768, 3840),
    ("g40x24x30", "8x8", "is", "USER", 1, (64, 64, 1), 2770, 1851, 5120, 8192, 3840),
    # non-square 16x8 array, mid-size layer (SCALE-Sim needs minutes for each of these)
    ("c28", "16x8", "os", "USER", 2, (8, 4, 4), 1183949, 1155398, 9398272, 777216, 21635),
    ("c28", "16x8", "ws", "USER", 2, (8, 4, 4), 85465, 59762, 678912, 36864, 194699),
    ("c28", "16x8", "is", "USER", 2, (8, 4, 4), 2843865, 2790316, 22574080, 703488, 194691),
    ("c28", "16x8", "ws", "CALC", 2, (10, 10, 10), 25703, 0, 389376, 4608, 194695),
    ("g20x8x25", "8x4", "ws", "CALC", 1, (10, 10, 10), 303, 0, 1000, 200, 643),
    ("g20x8x24", "8x4", "os", "CALC", 1, (10, 10, 10), 203, 0, 480, 192, 160),
]

# The CALC estimate buffer turns over when its 50th set closes, i.e. already when the
# distinct addresses reach exactly 50 sets: ifmap words read before are read again.
BOUNDARY = ("g20x8x25", "8x4", "os", "CALC", 1, (10, 10, 10), 209, 0, 1000, 200, 160)


def _id(case):
    layer, arr, df, mode, kb, bw = case[:6]
    return f"{layer}-{arr}-{df}-{mode}-{kb}kB-bw{'/'.join(map(str, bw))}"


def make_hw(rows, cols, mode, bw, kb=None, words=None):
    """systolic-8x8 resized, with SCALE-Sim's SRAM sizes (kB of 1-byte words, or words
    per buffer) and memory interface."""
    sizes = words if words is not None else (kb * 1024,) * 3
    return dataclasses.replace(
        hwmodels.get("systolic-8x8"), rows=rows, cols=cols,
        ifmap_sram=hwmodels.Scratchpad(size_bytes=sizes[0]),
        filter_sram=hwmodels.Scratchpad(size_bytes=sizes[1]),
        ofmap_sram=hwmodels.Scratchpad(size_bytes=sizes[2]),
        scalesim=hwmodels.ScaleSimInterface(
            bandwidth_mode=mode, ifmap_bandwidth_words_per_cycle=bw[0],
            filter_bandwidth_words_per_cycle=bw[1], ofmap_bandwidth_words_per_cycle=bw[2]))


def _mem(stall, if_reads, f_reads, of_writes):
    return {"stall_cycles": stall, "dram_reads": {"ifmap": if_reads, "filter": f_reads, "ofmap": 0},
            "dram_writes": {"ifmap": 0, "filter": 0, "ofmap": of_writes}}


@pytest.mark.parametrize("case", GOLDEN + [BOUNDARY], ids=[_id(c) for c in GOLDEN + [BOUNDARY]])
def test_replay_matches_scalesim(case):
    layer, arr, df, mode, kb, bw, _total, stall, if_r, f_r, of_w = case
    rows, cols = map(int, arr.split("x"))
    hw = make_hw(rows, cols, mode, bw, kb=kb)
    L = as_scalesim_layer(OPS[layer])
    assert replay(L, rows, cols, df, hw) == _mem(stall, if_r, f_r, of_w)


@pytest.mark.parametrize("case", GOLDEN, ids=[_id(c) for c in GOLDEN])
def test_public_path_matches_scalesim(case):
    _check_public(case)


def _check_public(case):
    layer, arr, df, mode, kb, bw, total, stall, if_r, f_r, of_w = case
    rows, cols = map(int, arr.split("x"))
    r = simulate_layer_scalesim(make_hw(rows, cols, mode, bw, kb=kb), OPS[layer], df)
    assert (r.total_cycles, r.stall_cycles) == (total, stall)
    # SCALE-Sim's word is one byte: bytes = words
    assert r.dram_reads_bytes == {"ifmap": if_r, "filter": f_r, "ofmap": 0}
    assert r.dram_writes_bytes == {"ifmap": 0, "filter": 0, "ofmap": of_w}


def test_public_path_at_the_calc_turnover_boundary():
    """SCALE-Sim's CALC buffer turns over when the 50th set closes, so at exactly 50 sets
    of distinct addresses the closed form must hand over to the replay."""
    _check_public(BOUNDARY)


def _needs_replay(case):
    layer, arr, df, mode, kb, bw = case[:6]
    rows, cols = map(int, arr.split("x"))
    L = as_scalesim_layer(OPS[layer])
    hw = make_hw(rows, cols, mode, bw, kb=kb)
    return _memory_closed_form(L, closed_form(L, rows, cols, df), hw, rows, cols) is None


def test_golden_cases_cover_the_regimes():
    """The table exercises what the closed forms cannot: CALC turnover and drains, USER
    stalls in all three dataflows, ofmap drain stalls, non-square arrays, the ceil output
    rounding, a GEMM-format layer."""
    by = {(c[0], c[1], c[2], c[3], c[4], c[5]): c for c in GOLDEN}
    assert sum(map(_needs_replay, GOLDEN)) >= 35
    for df in ("os", "ws", "is"):
        calc = by[("c16_3x3", "8x4", df, "CALC", 1, (10, 10, 10))]
        assert _needs_replay(calc) and calc[7] == 0            # CALC never stalls on reads
        assert calc[10] == 3139 if df == "os" else calc[10] == 28227  # drains count padding
        assert any(c[2] == df and c[3] == "USER" and c[7] > 0 and c[1] != "8x8" for c in GOLDEN)
    # CALC turnover: more DRAM ifmap reads than the 16*16*8 distinct ifmap words
    assert by[("c16_3x3", "8x4", "os", "CALC", 1, (10, 10, 10))][8] > 16 * 16 * 8
    # ofmap drain stalls (1 kB ofmap SRAM at 1 word/cycle; ifmap/filter at 64 words/cycle)
    assert by[("c16_3x3", "8x8", "ws", "USER", 1, (64, 64, 1))][7] > 0
    c12 = as_scalesim_layer(OPS["c12_s2"])
    assert (c12.Eh, c12.Ew, OPS["c12_s2"].P, OPS["c12_s2"].Q) == (6, 6, 6, 5)


def _cfg_text(rows, cols, kb, df, mode, bw):
    return f"""[general]
run_name = mem

[architecture_presets]
ArrayHeight:    {rows}
ArrayWidth:     {cols}
IfmapSramSzkB:   {kb}
FilterSramSzkB:  {kb}
OfmapSramSzkB:   {kb}
IfmapOffset:    0
FilterOffset:   10000000
OfmapOffset:    20000000
Bandwidth : {bw[2]}
Dataflow : {df}
ReadRequestBuffer: 32
WriteRequestBuffer: 32

[layout]
IfmapCustomLayout: False
IfmapSRAMBankBandwidth: {bw[0]}
IfmapSRAMBankNum: 1
IfmapSRAMBankPort: 2
FilterCustomLayout: False
FilterSRAMBankBandwidth: {bw[1]}
FilterSRAMBankNum: 1
FilterSRAMBankPort: 2

[sparsity]
SparsitySupport : false

[run_presets]
InterfaceBandwidth: {mode}
UseRamulatorTrace: False
"""


@pytest.mark.parametrize("config", [("4x8", "USER", 1, (4, 4, 4)), ("8x8", "USER", 2, (8, 2, 2)),
                                    ("8x4", "CALC", 1, (10, 10, 10))],
                         ids=lambda c: f"{c[0]}-{c[1]}-{c[2]}kB")
@pytest.mark.parametrize("df", ["os", "ws", "is"])
def test_cfg_and_topology_files(config, df, tmp_path):
    """The same runs through SCALE-Sim's own input files: a .cfg and topology CSVs (conv and
    GEMM formats)."""
    arr, mode, kb, bw = config
    rows, cols = map(int, arr.split("x"))
    cfg = tmp_path / "run.cfg"
    cfg.write_text(_cfg_text(rows, cols, kb, df, mode, bw))
    hw = hwmodels.get(str(cfg))
    conv = tmp_path / "conv.csv"
    conv.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, "
                    "Channels, Num Filter, Strides,\nc16_3x3,16,16,3,3,8,16,1,\nc12_s2,13,12,3,3,6,10,2,\n")
    gemm = tmp_path / "gemm.csv"
    gemm.write_text("Layer, M, N, K,\ng40x24x30,40,24,30,\n")
    ops = [*workloads.load_topology(conv).ops, *workloads.load_topology(gemm).ops]
    expected = {c[0]: c for c in GOLDEN if (c[1], c[2], c[3], c[4], c[5]) == (arr, df, mode, kb, bw)
                and c[0] in ("c16_3x3", "c12_s2", "g40x24x30")}
    assert len(ops) == len(expected) == 3
    for op in ops:
        _, _, _, _, _, _, total, stall, if_r, f_r, of_w = expected[op.name]
        r = simulate_layer_scalesim(hw, op, df)
        assert (r.total_cycles, r.stall_cycles) == (total, stall), op.name
        assert (r.dram_reads_bytes["ifmap"], r.dram_reads_bytes["filter"],
                r.dram_writes_bytes["ofmap"]) == (if_r, f_r, of_w), op.name


CF_LAYERS = [
    SSLayer(H=16, W=16, R=3, S=3, C=8, K=16, s=1),
    SSLayer(H=13, W=12, R=3, S=3, C=6, K=10, s=2),              # ceil rounding
    SSLayer(H=14, W=14, R=1, S=1, C=16, K=8, s=2),              # 1x1/2: touches a quarter
    SSLayer(H=9, W=11, R=3, S=2, C=5, K=7, s=3, N=2),           # batch 2, windows stick out
    SSLayer(H=40, W=30, R=1, S=30, C=1, K=24, s=1),             # GEMM 40x24x30
]


@pytest.mark.parametrize("mode,bw", [("CALC", (10, 10, 10)), ("USER", (4, 8, 2)), ("USER", (64, 1, 16))])
@pytest.mark.parametrize("arr", [(8, 8), (4, 16), (16, 4)])
@pytest.mark.parametrize("df", ["os", "ws", "is"])
def test_replay_equals_closed_forms_where_they_apply(df, arr, mode, bw):
    """Where no buffer turns over or drains mid-layer, the replay reproduces the closed
    forms of scalesim_mode exactly -- checked from large SRAMs down to the smallest size
    (powers of two) for which the closed forms still apply."""
    rows, cols = arr
    checked = 0
    for L in CF_LAYERS:
        for log2 in range(24, 9, -1):
            hw = make_hw(rows, cols, mode, bw, words=(2 ** log2,) * 3)
            cf = _memory_closed_form(L, closed_form(L, rows, cols, df), hw, rows, cols)
            if cf is None:
                break
            assert replay(L, rows, cols, df, hw) == cf, (L, log2)
            checked += 1
    assert checked >= 2 * len(CF_LAYERS)


@pytest.mark.parametrize("df", ["os", "ws", "is"])
@pytest.mark.parametrize("mode,words,bw", [("CALC", (300, 500, 200), (10, 10, 10)),
                                           ("USER", (300, 500, 200), (3, 5, 2)),
                                           ("USER", (1000, 90, 64), (8, 1, 1))])
def test_batch_stacks_images_like_a_taller_gemm(df, mode, words, bw):
    """Batch N stacks the images' pixels (rows ordered n, ey, ex; ifmap address
    n H W C + (y W + x) C + c): a batched 1x1 convolution is the GEMM with M = N H W, in
    every regime (stalls, turnover, drains)."""
    hw = make_hw(8, 4, mode, bw, words=words)
    conv = as_scalesim_layer(workloads.Conv2d(N=3, C=6, H=5, W=4, K=7, R=1, S=1))
    gemm = as_scalesim_layer(workloads.Gemm(M=3 * 5 * 4, N=7, K=6))
    a, b = replay(conv, 8, 4, df, hw), replay(gemm, 8, 4, df, hw)
    assert a == b
    assert a["dram_writes"]["ofmap"] >= math.prod((3, 5, 4, 7))


def test_batch_changes_the_replay():
    """Two images are not one image twice: the second image's addresses are new."""
    hw = make_hw(8, 8, "USER", (4, 4, 4), kb=1)
    one = replay(SSLayer(H=16, W=16, R=3, S=3, C=8, K=16, s=1), 8, 8, "os", hw)
    two = replay(SSLayer(H=16, W=16, R=3, S=3, C=8, K=16, s=1, N=2), 8, 8, "os", hw)
    assert two["dram_reads"]["ifmap"] > one["dram_reads"]["ifmap"]
    assert two["dram_writes"]["ofmap"] >= 2 * 14 * 14 * 16


def test_user_mode_needs_a_prefetch_half():
    """An SRAM of one byte has no prefetch half (SCALE-Sim would never finish): such
    hardware is refused when it is made (a 4x4 array's ifmap SRAM needs 4 words of 4 B
    per half, 32 B), before any mode replays it."""
    with pytest.raises(ValueError, match=r"ifmap_sram.size_bytes = 1: .* at least 32 B"):
        make_hw(4, 4, "USER", (1, 1, 1), words=(1, 1024, 1024))


def test_calc_ofmap_drain_uses_the_array_width():
    """In CALC mode the ofmap drains at ArrayWidth words/cycle, whatever the cfg's
    Bandwidth said (the array may have been resized after loading)."""
    L = as_scalesim_layer(OPS["c16_3x3"])
    a = replay(L, 8, 4, "ws", make_hw(8, 4, "CALC", (10, 10, 10), kb=1))
    b = replay(L, 8, 4, "ws", make_hw(8, 4, "CALC", (10, 10, 1), kb=1))
    assert a == b == _mem(0, 56448, 1152, 28227)

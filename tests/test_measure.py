"""The measurement harness without a GPU (its kernels under numba's CUDA simulator), the
committed H100 data (complete, with provenance, every check passed), the calibration
drawn from it, and the validation bounds the predictions must keep."""
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import hwmodels
from simulator.analysis import calibrate, validate
from simulator.analysis.measurements import load_suite
from simulator.cli import main
from simulator.measure import NoGPU, harness, micro

DATA = Path(__file__).resolve().parents[1] / "data" / "measurements" / "h100-sxm"
H100 = hwmodels.get("h100-sxm")

# stated bounds (docs/validation.md): what the analytic model keeps on the committed data.
# gemm was 0.22 until the templates followed the SASS: with their true instruction mix the
# tiled GEMM's issue and LD/ST pipe both near saturation, and a bound that takes the larger
# of the two (not their interference) lands 0.6-0.85x; see docs/validation.md
ANALYTIC_MAPE_BOUND = {"grid": 0.16, "gemm": 0.31, "conv": 0.28}


def test_no_gpu_is_one_clear_line(capsys, tmp_path):
    with pytest.raises(NoGPU, match="no GPU"):
        harness.require_gpu()
    assert main(["measure", "micro", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("roofsim: error: no GPU") and err.count("\n") == 1


def test_micro_kernels_under_the_simulator():
    src = np.arange(100, dtype=np.float32)
    dst = np.zeros_like(src)
    micro.copy_kernel[2, 16](src, dst, 100)
    assert np.array_equal(dst, src)
    out = np.zeros(32, np.float32)
    micro.read_kernel[1, 32](src, out, 100, 3)
    assert out[1] == pytest.approx(3 * src[1::32].sum())
    nxt = np.array([3, 0, 0, 2], np.int32)          # 0 -> 3 -> 2 -> 0
    res = np.zeros(1, np.int32)
    micro.chase_kernel[1, 1](nxt, 0, 4, res)
    assert res[0] == 3
    out = np.zeros(32, np.float32)
    micro.fma_kernel[1, 32](out, 3)          # 8 chains starting at a0 + k, k = 0..7, barely decayed
    assert out[5] == pytest.approx(28 + 8 * 5e-7, abs=1e-3)
    out = np.zeros(64, np.float32)
    micro.shared_kernel[2, 32](out, 4)
    # lane t of each block reads words t, t+32, t+64, t+96 (value = index)
    assert out[3] == sum(3 + 32 * k for k in range(4))
    x = np.arange(16, dtype=np.float32)
    y = np.full(16, -5, np.float32)
    micro.load_store_kernel[2, 32](x, y, 15)     # 64 threads, indices masked into 16 words
    assert np.array_equal(y, x)
    flag = np.zeros(1, np.float32)
    micro.load_kernel[2, 32](x, flag, 15)        # loads only: nothing written
    assert flag[0] == 0
    micro.load_kernel[1, 32](-np.ones(16, np.float32), flag, 15)
    assert flag[0] == -1


def test_strided_read_kernel_under_the_simulator():
    """The slices suite's kernel sums, per thread, what the numpy reference says: two
    warps, 16 lines 3 lines apart, 5 passes (the shift wraps around)."""
    from simulator.measure.suites import strided_read_reference
    lines, sw, passes, shift = 16, 96, 5, 12
    src = np.random.default_rng(1).standard_normal(lines * sw).astype(np.float32)
    out = np.zeros(64, np.float32)
    micro.strided_read_kernel[2, 32](src, out, lines, sw, passes, shift)
    ref = strided_read_reference(src, lines, sw, passes, shift, 64)
    assert np.allclose(out, ref, rtol=1e-5, atol=1e-5)
    # lane 0 of warp 1 starts at line 4: the first pass reads lines 4..7
    first = sum(src[(4 + j) * sw] for j in range(4))
    assert strided_read_reference(src, lines, sw, 1, shift, 64)[32] == pytest.approx(first)


def test_lines_read_kernel_under_the_simulator():
    """The lines suite's kernel sums what the numpy reference says, for requests touching
    1, 4 and 32 lines; with 4, lane 5 reads word 1 of line base + 1."""
    from simulator.measure.suites import lines_read_reference
    nlines, passes = 64, 3
    src = np.random.default_rng(2).standard_normal(nlines * 32).astype(np.float32)
    for spread in (1, 4, 32):
        out = np.zeros(64, np.float32)
        micro.lines_read_kernel[2, 32](src, out, nlines, spread, passes)
        assert np.allclose(out, lines_read_reference(src, nlines, spread, passes, 64), rtol=1e-5, atol=1e-5)
    first = sum(src[(1 + 4 * j) * 32 + 1] for j in range(4))   # warp 0, lane 5, one pass
    assert lines_read_reference(src, nlines, 4, 1, 64)[5] == pytest.approx(first)


def test_lines_write_kernel_under_the_simulator():
    """The lines suite's store kernel leaves what the numpy reference says, for requests
    touching 1, 4 and 32 lines; with 32, the warps of a block store into the same lines,
    warp w word w of each (a naive transpose's stores), lane l into line l."""
    from simulator.measure.suites import lines_write_reference
    nlines, passes, grid, block = 32, 2, 2, 64
    for spread in (1, 4, 32):
        dst = np.zeros(grid * nlines * 32, np.int32)
        micro.lines_write_kernel[grid, block](dst, nlines, spread, passes)
        assert np.array_equal(dst, lines_write_reference(grid, block, nlines, spread, passes))
    ref = lines_write_reference(grid, block, nlines, 32, 1).reshape(grid, nlines, 32)
    # one pass of block 1: its 4 requests all land on lines 0..31 (32 lines wrap), warps
    # 0 and 1 storing words 0 and 1 of each
    idx = np.arange(grid * nlines * 32).reshape(grid, nlines, 32)
    assert np.array_equal(ref[1, :, :2], idx[1, :, :2]) and not ref[1, :, 2:].any()


# ------------------------------------------------------------------ committed data

PROV_KEYS = {"device", "compute_capability", "nvidia_smi", "cuda_runtime", "cuda_driver_api",
             "numba", "numba_cuda", "numpy", "date", "command"}


@pytest.mark.parametrize("suite", ["micro", "grid", "gemm", "conv", "h2d", "slices", "lines"])
def test_committed_suite_has_provenance_and_passed_its_checks(suite):
    data = json.loads((DATA / f"{suite}.json").read_text())
    assert data["suite"] == suite and PROV_KEYS <= set(data["provenance"])
    assert data["provenance"]["device"].startswith("NVIDIA H100")
    assert data["provenance"]["nvidia_smi"]["clock_sm_mhz"] == "1980"
    assert data["records"] and all(r["ok"] for r in data["records"])
    for r in data["records"]:
        assert r.get("median_s", 1) > 0 and r.get("min_s", 0) <= r.get("median_s", 0) <= r.get("max_s", 1e9)
        assert not r.get("host_bound", False)


def test_grid_suite_covers_the_issue():
    recs = load_suite(DATA, "grid").records
    sms = 132
    blocks = {r["block"] for r in recs}
    assert len(blocks) >= 5
    for size in ("beyond_l2", "in_l2"):
        grids = {r["grid"] for r in recs if r["size"] == size}
        assert len(grids) >= 20 and {sms, 2 * sms, sms + 1, 2 * sms + 1} <= grids
    n = {r["size"]: r["n"] for r in recs}
    assert 8 * n["beyond_l2"] > 4 * 50 * 2**20 and 8 * n["in_l2"] < 50 * 2**20


def test_gemm_and_conv_suites_cover_the_issue():
    g = load_suite(DATA, "gemm").records
    variants = {(r["kernel"], r.get("thread_x") or r.get("tile")) for r in g}
    assert variants == {("gemm-naive", "cols"), ("gemm-naive", "rows"), ("gemm-tiled", 8),
                        ("gemm-tiled", 16), ("gemm-tiled", 32)}
    assert {256, 512, 1024, 2048, 4096} <= {r["m"] for r in g if r["m"] == r["n"] == r["k"]}
    assert any(len({r["m"], r["n"], r["k"]}) > 1 for r in g)
    c = load_suite(DATA, "conv").records
    assert {r["batch"] for r in c} == {1, 8, 32}
    assert {(r["kernel"], r["layout"]) for r in c} == {(k, lay) for k in ("conv-direct", "conv-im2col")
                                                       for lay in ("nchw", "nhwc")}
    h = load_suite(DATA, "h2d").records
    assert {r["bytes"] for r in h} >= {2**20, 2**30} and {r["kind"] for r in h} == {"pinned", "pageable"}
    pinned = {r["bytes"]: r["median_s"] for r in h if r["kind"] == "pinned"}
    pageable = {r["bytes"]: r["median_s"] for r in h if r["kind"] == "pageable"}
    assert all(pinned[b] < pageable[b] for b in pinned if b >= 16 * 2**20)


@pytest.mark.parametrize("preset", ["h100-sxm", "h200"])
def test_gemm_rotation_evicts_the_l2(preset):
    """A GEMM timed on rotating buffer sets must find its own set evicted: the sets
    together span at least twice the device's L2 (the data measured before 2026-11-23
    cycled 256^3 GEMMs through 48 MiB, which a 50 MiB L2 largely kept)."""
    from simulator.measure.suites import rotation_sets
    l2 = hwmodels.get(preset).l2.size_bytes
    recs = load_suite(DATA.parent / preset, "gemm").records
    for r in recs:
        ws = 4 * (r["m"] * r["k"] + r["k"] * r["n"] + r["m"] * r["n"])
        assert r["rotation_bytes"] == r["buffer_sets"] * ws
        assert r["buffer_sets"] == 1 and ws >= 2 * l2 or r["rotation_bytes"] >= 2 * l2, r
    for ws in (1, 3 * 2**19, 2**20 + 7, l2 - 1, 2 * l2 - 1):
        assert rotation_sets(ws, l2) * ws >= 3 * l2
    assert rotation_sets(2 * l2, l2) == 1


def _suite(name, records):
    """The committed suite file with only ``records``."""
    return dataclasses.replace(load_suite(DATA, name), records=records)


def test_validation_refuses_a_rotation_the_l2_keeps():
    r = dict(load_suite(DATA, "gemm").records[0])
    r["rotation_bytes"] = H100.l2.size_bytes
    with pytest.raises(ValueError, match="rotation_bytes"):
        validate.predict_records(H100, _suite("gemm", [r]), engine_budget=0)


def test_l2_slices_are_hashed_as_the_h100_shows():
    """The slices suite: the H100 reads lines 1 to 32 lines apart at one bandwidth, so
    it does not give lines to its 80 slices in turn (a 16-line stride would then meet 5
    of them). The preset's hashed mapping spreads each stride's lines about evenly."""
    from simulator.simt import core
    recs = load_suite(DATA, "slices").records
    bw = {r["stride_lines"]: r["bandwidth_bytes_per_s"] for r in recs}
    assert {1, 16, 32} <= set(bw) and min(bw.values()) > 0.9 * bw[1]
    n = H100.l2.banks
    assert H100.l2.hashed_banks
    for stride in bw:
        lines = [stride * x for x in range(recs[0]["lines"])]
        hashed = np.bincount([core._owner(x, n, True) for x in lines], minlength=n)
        in_turn = np.bincount([core._owner(x, n, False) for x in lines], minlength=n)
        assert hashed.mean() / hashed.max() > 0.6
        if stride in (16, 32):
            assert in_turn.mean() / in_turn.max() < 0.1


def test_l1_serves_one_line_a_cycle_as_the_h100_shows():
    """The lines suite, 64 warps per SM: a request touching up to 4 lines costs the
    kernel's issue floor (about 7 cycles), one touching 16 or 32 lines 16 or 32 cycles:
    the H100's L1 serves one line a cycle to scattered requests. The engine prices a
    request at its sectors x 32 B over 128 B a cycle (16 lines: 4 cycles), the likely
    cause of the naive GEMM with threadIdx.x on rows running 0.70-0.79x (docs/validation.md)."""
    clock = H100.clock_hz
    cyc = {r["lines_per_request"]: clock / r["requests_per_sm_per_s"]
           for r in load_suite(DATA, "lines").records
           if r["name"] == "lines_read" and r["warps_per_sm"] == 64}
    assert cyc[1] < 8.5 and abs(cyc[4] / cyc[1] - 1) < 0.05
    for lines in (16, 32):
        assert cyc[lines] == pytest.approx(lines, rel=0.05)
        assert cyc[lines] > 3 * lines * H100.sm.l1.sector_bytes / H100.sm.l1.bandwidth_bytes_per_cycle


def test_preset_is_the_calibration_of_the_committed_data():
    again, changes = calibrate.calibrate(H100, DATA)
    assert again == H100, [c for c in changes if c[1] != c[2]]
    fields = {c[0] for c in changes}
    assert {"dram.sustained_fraction", "l2.latency_cycles", "dram.latency_cycles",
            "sm.l1.latency_cycles", "kernel_launch_s", "sm.block_launch_cycles"} <= fields
    assert H100.dram.latency_cycles > H100.l2.latency_cycles > H100.sm.l1.latency_cycles
    h200 = hwmodels.get("h200")
    assert h200.dram.sustained_fraction == H100.dram.sustained_fraction
    assert h200.dram.queue_cycles == H100.dram.queue_cycles > 0
    assert h200.sm == H100.sm and h200.l2.latency_cycles == H100.l2.latency_cycles


def test_loaded_latency_recovers_a_queue_it_is_given():
    """The closed form against its own forward model: copies made by Little's law through
    a single-server queue of known peak and service give that peak and service back; one
    occupancy only, or a latency that does not grow with load, gives none (calibrate then
    keeps the best copy over the peak)."""
    L0, peak, a = 360e-9, 2.9e12, 0.3

    def copy(grid, block=256):
        warps = min(grid // 132, 2048 // block) * 132 * block // 32
        # X = warps x 256 B / (L0 (1 + a u / (1 - u))), u = X / peak: solve for X
        lo, hi = 0.0, peak
        for _ in range(200):
            x = (lo + hi) / 2
            lo, hi = (x, hi) if warps * 256 / (L0 * (1 + a * (x / peak) / (1 - x / peak))) > x else (lo, x)
        return {"grid": grid, "block": block, "bandwidth_bytes_per_s": lo}
    got = calibrate.loaded_latency(H100, [copy(528), copy(1056), copy(2112)], L0)
    assert got[0] == pytest.approx(peak, rel=1e-6) and got[1] == pytest.approx(a * L0, rel=1e-6)
    assert calibrate.loaded_latency(H100, [copy(1056), copy(2112)], L0) is None
    flat = [{"grid": g, "block": 256, "bandwidth_bytes_per_s": g / 132 * 8 * 32 * 256 / L0}
            for g in (132, 264)]
    assert calibrate.loaded_latency(H100, flat, L0) is None


@pytest.mark.parametrize("name", ["h100-sxm", "h200"])
def test_engine_meets_the_measured_copies_at_every_occupancy(name):
    """The engine's DRAM with its loaded latency against the micro suite's copies (the
    grid-stride relu walks memory as the copy does: a 128-byte load and store a warp a
    trip; warm, as the repeated copies ran): the H100's two occupancies calibrated it, the
    H200's are predicted from that calibration (its preset changes only the datasheet's
    bandwidth) -- within 6%, where a DRAM of fixed latency is 20-45% fast at half
    occupancy and the H100's sustained fraction overshoots the H200 by 13%."""
    from simulator.simt import api, engine
    hw = hwmodels.get(name)
    for r in load_suite(DATA.parent / name, "micro").records:
        if r["name"] == "dram_copy":
            prob = api.build(hw, "relu", n=r["bytes"] // 8, grid=r["grid"], block=r["block"])
            t = engine.simulate(hw, prob.programs, mode="sampled", l2="warm").seconds
            assert t == pytest.approx(r["median_s"], rel=0.06), (r["grid"], t, r["median_s"])


def test_calibration_refuses_another_clock(tmp_path):
    slow = hwmodels.with_overrides(H100, ["clock_hz=1500MHz"])
    with pytest.raises(ValueError, match="measured SM clock 1980.0 MHz differs"):
        calibrate.calibrate(slow, DATA)
    with pytest.raises(ValueError, match="no micro.json"):
        calibrate.calibrate(H100, tmp_path)


# ------------------------------------------------------------------ validation

@pytest.fixture(scope="module")
def analytic_rows():
    return {s: validate.predict_records(H100, load_suite(DATA, s), engine_budget=0)
            for s in validate.KERNEL_SUITES}


@pytest.mark.parametrize("suite", ["grid", "gemm", "conv"])
def test_no_measurement_beats_its_bound_and_analytic_keeps_its_bound(suite, analytic_rows):
    sc = validate.score(analytic_rows[suite])
    assert sc["faster_than_bound"] == 0
    assert sc["analytic"]["mape"] <= ANALYTIC_MAPE_BOUND[suite]
    assert sc["analytic"]["spearman"] > 0.85


ENGINE_GOAL = {"mape": 0.08, "pairs_in_order": 0.90}     # the H100's: 8% MAPE on every record


@pytest.mark.parametrize("suite", ["grid", "gemm", "conv"])
def test_committed_engine_validation_keeps_the_goal(suite):
    """data/validation/h100-sxm_scores.json (scripts/validate_all.sh; docs/validation.md's table):
    scored on every committed record, none faster than its bound, and the engine -- on
    every record -- within 8% MAPE with 90% of what-if pairs in order (docs/validation.md's
    table is held to these scores by test_readme)."""
    root = DATA.parents[1] / "validation"
    sc = json.loads((root / "h100-sxm_scores.json").read_text())["suites"][suite]
    recs = [r for r in load_suite(DATA, suite).records if r.get("ok")]
    assert sc["records"] == len(recs)
    assert sc["faster_than_bound"] == 0
    assert sc["engine"]["n"] == len(recs) and sc["engine"]["mape"] <= ENGINE_GOAL["mape"]
    assert sc["engine"]["pairs_in_order"] >= ENGINE_GOAL["pairs_in_order"]


def test_engine_on_small_grid_records():
    """The engine (sampled) on the relu records of the committed grid suite that are
    cheap to simulate: within 25% each (the stated bound; docs/validation.md) and ranked
    like the measurements."""
    recs = [r for r in load_suite(DATA, "grid").records
            if r["size"] == "in_l2" and r["block"] == 256 and r["grid"] >= 132]
    rows = validate.predict_records(H100, _suite("grid", recs), engine_budget=2e6)
    rows = [r for r in rows if r.engine is not None]
    assert len(rows) >= 5
    err = [abs(r.predicted_s("engine") / r.measured_s - 1) for r in rows]
    assert max(err) < 0.25
    sc = validate.score(rows)
    assert sc["engine"]["pairs_in_order"] >= 0.8


@pytest.mark.parametrize("suite,kernel,match", [
    ("conv", "conv-im2col", dict(layer="layer1.0.conv1", batch=1, layout="nchw")),
    ("conv", "conv-direct", dict(layer="layer1.0.conv1", batch=1, layout="nhwc")),
    ("gemm", "gemm-tiled", dict(m=256, tile=32)),
    ("gemm", "gemm-tiled", dict(m=512, n=512, tile=8)),
    ("gemm", "gemm-naive", dict(m=256, n=256, thread_x="rows"))])
def test_engine_on_cheap_gemm_and_conv_records(suite, kernel, match):
    """The engine on cheap launches of the committed gemm and conv suites, within 15%
    (each lands within 10% today). Before: the im2col one ran 0.67x until its template
    followed the SASS; the T=8 512^3 GEMM 1.42x until the L2's slices were hashed; the
    naive 256^3 GEMM was measured partly warm and ran 1.5x."""
    recs = [r for r in load_suite(DATA, suite).records
            if r["kernel"] == kernel and all(r.get(k) == v for k, v in match.items())]
    assert recs
    rows = validate.predict_records(H100, _suite(suite, recs[:1]), engine_budget=5e7)
    assert rows[0].engine is not None
    assert abs(rows[0].predicted_s("engine") / rows[0].measured_s - 1) < 0.15


def test_compiled_register_counts_match_the_resources_suite():
    from simulator.simt.kernels import (
        conv_direct,
        conv_im2col,
        gemm_naive,
        gemm_tiled,
        layout_transform,
        matadd,
        relu,
    )
    recs = {r["kernel"]: r for r in load_suite(DATA, "resources").records}
    assert all(r["regs_per_thread"] for r in recs.values())
    cc = (9, 0)
    assert relu.REGS_COMPILED[cc] == recs["relu"]["regs_per_thread"]
    assert matadd.REGS_COMPILED[cc] == recs["matadd"]["regs_per_thread"]
    assert {gemm_naive.REGS_COMPILED[cc]} == {recs[f"gemm-naive {t}"]["regs_per_thread"] for t in ("cols", "rows")}
    for T in gemm_tiled.TILES:
        assert gemm_tiled.REGS_COMPILED[cc] == recs[f"gemm-tiled {T}"]["regs_per_thread"]
        assert recs[f"gemm-tiled {T}"]["shared_mem_per_block"] == 2 * T * T * 4
    for lay in ("nchw", "nhwc"):
        assert conv_direct.REGS_COMPILED[cc][lay] == recs[f"conv-direct {lay}"]["regs_per_thread"]
        assert conv_im2col.REGS_COMPILED[cc] == recs[f"im2col {lay}"]["regs_per_thread"]
        assert layout_transform.REGS_COMPILED[cc] == recs[f"layout-transform to {lay}"]["regs_per_thread"]
    # the naive GEMM's SASS: its k loop unrolled by 4, an FMA after each k's two loads
    sass = recs["gemm-naive cols"]["sass_opcodes"]
    assert sass["FFMA"] == 5 and sass["LDG"] == 10


@pytest.mark.parametrize("text,needle", [
    ("[]", "a suite file is a JSON object"),
    ("{}", "field 'provenance' missing"),
    ('{"provenance": {"device": "x", "date": "2026"}}', "field 'records' missing"),
    ('{"provenance": {"device": "x", "date": "d"}, "records": []}', "field 'suite' is None, expected 'gemm'"),
    ('{"suite": "gemm", "schema_version": 2, "provenance": {"device": "x", "date": "d"}, "records": []}',
     "field 'schema_version' is 2; this roofsim reads 1"),
    ('{"suite": "gemm", "schema_version": 1, "provenance": {"device": "x"}, "records": []}', "provenance field 'date'"),
    ('{"suite": "conv", "provenance": {"device": "x", "date": "d"}, "records": []}',
     "field 'suite' is 'conv', expected 'gemm'"),
    ('{"suite": "gemm", "schema_version": 1, "provenance": {"device": "x", "date": "d"}, "records": ["a"]}', "record 0 is a str"),
    ('{"suite": "gemm", "schema_version": 1, "provenance": {"device": "x", "date": "d"}, "records": [{"kernel": "gemm-naive"}]}',
     "record 0: field 'm' missing"),
    ('{"suite": "gemm", "schema_version": 1, "provenance": {"device": "x", "date": "d"}, "records": [{"kernel": "gemm-naive", "m": 8, '
     '"n": 8, "k": 8, "ok": true, "median_s": -1, "min_s": 1, "max_s": 1}]}',
     r"record 0 \('gemm-naive 8x8x8'\): field 'median_s' = -1: must be a positive number of seconds"),
    ('{"provenance": {', "not a measurement JSON"),
])
def test_measurement_files_are_checked_on_load(tmp_path, text, needle):
    """A suite file is checked against its schema; the error names the file, the record
    and the field."""
    (tmp_path / "gemm.json").write_text(text)
    with pytest.raises(ValueError, match=needle) as e:
        load_suite(tmp_path, "gemm")
    assert "gemm.json" in str(e.value)


def test_validate_cli_names_a_broken_file(tmp_path, capsys):
    (tmp_path / "grid.json").write_text("[]")
    assert main(["validate", "--hw", "h100-sxm", "--measurements", str(tmp_path), "--suites", "grid"]) == 2
    err = capsys.readouterr().err
    assert "grid.json" in err and err.count("\n") == 1


def _gemm_file(tmp_path, edit):
    """The committed H100 gemm suite with ``edit(records)`` applied, in tmp_path."""
    import json
    doc = json.loads((DATA / "gemm.json").read_text())
    edit(doc["records"])
    (tmp_path / "gemm.json").write_text(json.dumps(doc))
    return load_suite(tmp_path, "gemm")


@pytest.mark.parametrize("edit,needle", [
    (lambda rs: rs[3].update(grid=[7, 7]), r"record 3: fields 'grid' = \[7, 7\], 'block' = .*launches grid"),
    (lambda rs: rs[5].update(block=[8, 8]), r"record 5: fields 'grid'.*disagree"),
    (lambda rs: rs[2].update(flops=rs[2]["flops"] + 2), r"record 2: field 'flops' = \d+: the record's problem is"),
    (lambda rs: rs.append(dict(rs[4])), r"record 40 repeats record 4"),
    (lambda rs: rs[6].update(kernel="conv-direct"), r"record 6: field 'conv' missing: a conv-direct record"),
    (lambda rs: rs[1].update(kernel="gemm-fast"), r"record 1: kernel = 'gemm-fast': allowed: relu"),
])
def test_validation_checks_each_record_is_the_launch_it_states(tmp_path, edit, needle):
    """A record whose grid, block or FLOPs are not those its kernel makes for its problem
    (an edited file, or a kernel changed since the measurement), a repeated record, or a
    record of another kernel: refused before any work, naming file, record and field."""
    from simulator.analysis.validate import record_tasks
    with pytest.raises(ValueError, match=needle) as e:   # on load, or before the first task
        record_tasks(H100, [_gemm_file(tmp_path, edit)])
    assert "gemm.json" in str(e.value)


def test_a_record_may_hold_any_launch_its_kernel_can_make(tmp_path):
    """A gemm-naive record timed with 32x8 blocks (not the kernel's default 16x16) is the
    launch it states: it validates, and the prediction is of that launch (its problem
    built with the record's block, the grid the kernel makes with it); a grid that is not
    the one that block makes, and a block for a kernel whose block follows from its
    problem, are still refused."""
    from simulator.analysis.measurements import problem_of
    from simulator.analysis.validate import predict_record, record_tasks
    from simulator.simt import api

    def block_32x8(rs):
        rs[1].update(block=[32, 8], grid=[8, 32])          # 256^3, threadIdx.x on rows
    sf = _gemm_file(tmp_path, block_32x8)
    tasks = record_tasks(H100, [sf])
    assert len(tasks) == sum(bool(r.get("ok")) for r in sf.records)
    task = next(t for t in tasks if t.index == 1)
    prob = problem_of(H100, task.record)
    assert (prob.grid, prob.block) == ((8, 32, 1), (32, 8, 1))
    mine = api.build(H100, "gemm-naive", m=256, n=256, k=256, thread_x="rows", block=(32, 8))
    default = api.build(H100, "gemm-naive", m=256, n=256, k=256, thread_x="rows")
    row = predict_record(dataclasses.replace(task, engine_budget=0))     # no engine run
    assert row.measurement.launch_shapes == (((8, 32, 1), (32, 8, 1)),)
    assert row.analytic.seconds == pytest.approx(
        api.analytic(H100, mine, l2="cold").seconds, rel=1e-12)
    assert api.analytic(H100, default, l2="cold").seconds != api.analytic(
        H100, mine, l2="cold").seconds
    with pytest.raises(ValueError, match=r"record 1: .*gemm-naive on the record's problem with "
                                         r"that block launches grid 8x32 block 32x8; the record"):
        record_tasks(H100, [_gemm_file(tmp_path, lambda rs: rs[1].update(block=[32, 8]))])
    with pytest.raises(ValueError, match=r"record 3: .*\(gemm-tiled's grid and block follow "
                                         r"from its problem\)"):
        record_tasks(H100, [_gemm_file(tmp_path, lambda rs: rs[3].update(block=[8, 32],
                                                                         grid=[32, 8]))])


def test_the_committed_records_are_the_launches_they_state():
    """Every committed kernel record, on its own GPU's preset, passes the checks above."""
    import hwmodels
    from simulator.analysis.validate import record_tasks
    for dev in ("h100-sxm", "h200"):
        files = [load_suite(DATA.parent / dev, s) for s in ("grid", "gemm", "conv")]
        assert len(record_tasks(hwmodels.get(dev), files)) == sum(
            sum(bool(r.get("ok")) for r in sf.records) for sf in files)


def test_validate_cli_refuses_another_gpus_measurements(capsys):
    """`validate --hw h100-sxm` on H200 measurements would score the wrong GPU: refused
    (the API still predicts any GPU's launches on any preset, a what-if)."""
    assert main(["validate", "--hw", "h100-sxm", "--measurements", str(DATA.parent / "h200"),
                 "--suites", "gemm"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "measured on 'NVIDIA H200', not a h100-sxm" in err


def test_calibrate_checks_the_records_it_reads_and_the_gpu(tmp_path):
    """calibrate reads micro records by name: a missing or non-positive number is named
    (file, record, field); measurements of another GPU are refused, not applied."""
    import json
    import shutil
    doc = json.loads((DATA / "micro.json").read_text())
    i = next(j for j, r in enumerate(doc["records"]) if r.get("ok") and r["name"] == "l2_read")
    del doc["records"][i]["bandwidth_bytes_per_s"]
    (tmp_path / "micro.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=rf"micro.json: record {i}: field 'bandwidth_bytes_per_s' = None"):
        calibrate.calibrate(H100, tmp_path)
    other = tmp_path / "h200"
    other.mkdir()
    shutil.copy(DATA.parent / "h200" / "micro.json", other / "micro.json")
    with pytest.raises(ValueError, match="provenance device 'NVIDIA H200' is not a h100-sxm"):
        calibrate.calibrate(H100, other)
    assert main(["calibrate", "--hw", "h100-sxm", "--measurements", str(other)]) == 2


def test_calibrate_refuses_an_h2d_suite_of_another_gpu(tmp_path):
    import shutil
    shutil.copy(DATA / "micro.json", tmp_path / "micro.json")
    shutil.copy(DATA.parent / "h200" / "h2d.json", tmp_path / "h2d.json")
    with pytest.raises(ValueError, match="h2d.json: provenance device 'NVIDIA H200' is not a h100-sxm"):
        calibrate.calibrate(H100, tmp_path)


def test_calibrate_refuses_a_truncated_h2d_suite(tmp_path):
    import shutil
    shutil.copy(DATA / "micro.json", tmp_path / "micro.json")
    (tmp_path / "h2d.json").write_text((DATA / "h2d.json").read_text()[:500])
    with pytest.raises(ValueError, match="h2d.json: not a measurement JSON"):
        calibrate.calibrate(H100, tmp_path)


def test_gemm_suite_runs_its_registry_kernels_under_the_simulator():
    """The gemm suite (rotation, variants from the registry, checks against numpy) on a
    tiny shape under numba's CUDA simulator, with timing replaced: every variant checks
    out and records the launch the engine would predict."""
    import types

    from numba import cuda

    from simulator.measure import suites
    from simulator.simt import api

    class C:
        def __getattr__(self, name):
            return getattr(cuda, name)

        def get_current_device(self):
            return types.SimpleNamespace(L2_CACHE_SIZE=4096, MULTIPROCESSOR_COUNT=1)

        def current_context(self):
            return types.SimpleNamespace(get_memory_info=lambda: (1 << 30, 1 << 30))

    real = suites.harness.time_launch
    suites.harness.time_launch = lambda f, reps=5: (f(0), {"median_s": 1.0, "min_s": 1.0, "max_s": 1.0})[1]
    try:
        recs = suites.run_gemm(C(), sizes=[(8, 12, 5)])
    finally:
        suites.harness.time_launch = real
    assert [(r["kernel"], r.get("thread_x") or r.get("tile")) for r in recs] == [
        ("gemm-naive", "cols"), ("gemm-naive", "rows"), ("gemm-tiled", 8), ("gemm-tiled", 16),
        ("gemm-tiled", 32)]
    assert all(r["ok"] for r in recs)
    for r in recs:
        kw = {"thread_x": r["thread_x"]} if "thread_x" in r else {"tile": r["tile"]}
        prob = api.build(H100, r["kernel"], m=8, n=12, k=5, **kw)
        assert list(prob.grid[:2]) == r["grid"] and list(prob.block[:2]) == r["block"]


def test_calibrate_names_the_record_behind_a_value_out_of_range(tmp_path):
    """A measured value that calibrates to nonsense (an L2 latency under a cycle) is
    refused naming the field, the file and the record it came from."""
    import json
    doc = json.loads((DATA / "micro.json").read_text())
    i = next(j for j, r in enumerate(doc["records"]) if r.get("ok") and r["name"] == "latency_l1")
    doc["records"][i]["latency_s"] = 1e-13
    (tmp_path / "micro.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=rf"sm.l1.latency_cycles from micro.json record {i} "):
        calibrate.calibrate(H100, tmp_path)
    doc["records"][i]["latency_s"] = 1e-3                  # an L1 slower than the L2
    (tmp_path / "micro.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=rf"records {i} and \d+: latency_l1 .* is not shorter than latency_l2"):
        calibrate.calibrate(H100, tmp_path)
    j = next(j for j, r in enumerate(doc["records"]) if r.get("ok") and r["name"] == "dram_copy")
    doc["records"][i]["latency_s"] = 3e-8
    doc["records"][j]["bandwidth_bytes_per_s"] = 9e12
    doc["records"][j]["median_s"] = doc["records"][j]["bytes"] / 9e12
    # its times as one (min, max and samples agree with the median: checked on load)
    doc["records"][j].update(min_s=doc["records"][j]["median_s"],
                             max_s=doc["records"][j]["median_s"], samples_s=None)
    (tmp_path / "micro.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=rf"micro.json: record {j}: dram_copy measured 9 TB/s"):
        calibrate.calibrate(H100, tmp_path)


def test_loaded_latency_counts_the_copy_kernels_own_bytes():
    """Little's law in ``calibrate.loaded_latency`` counts COPY_BYTES_PER_WARP_TRIP bytes a
    warp moves a trip: what micro.copy_kernel does, recorded thread by thread under the
    CUDA simulator (one warp, three trips of a grid-stride loop)."""
    from simulator.simt.kernels.recorder import recording
    n = 96
    arrs, log = recording({"src": np.arange(n, dtype=np.float32), "dst": np.zeros(n, np.float32)})
    micro.copy_kernel[1, 32](arrs["src"], arrs["dst"], n)
    accesses = [a for acc in log.by_thread.values() for a in acc]
    assert len(log.by_thread) == 32
    assert len(accesses) * 4 == 3 * calibrate.COPY_BYTES_PER_WARP_TRIP
    assert sum(op == "ld" for op, _, _ in accesses) == sum(op == "st" for op, _, _ in accesses)


@pytest.mark.parametrize("prov,needle", [
    ({"device": "NVIDIA GeForce RTX 4090", "compute_capability": "8.9"}, "measured on 'NVIDIA GeForce RTX 4090'"),
    ({"device": "Some GPU", "compute_capability": "8.0"}, "measured on 'Some GPU'"),
    ({"device": " "}, "provenance field 'device' missing, empty or not a string"),
])
def test_validate_knows_another_gpu_by_its_compute_capability(tmp_path, capsys, prov, needle):
    """A device name without a model number roofsim knows is told apart by the provenance's
    compute capability; an empty device name is refused."""
    import json
    doc = json.loads((DATA / "gemm.json").read_text())
    doc["provenance"].update(prov)
    (tmp_path / "gemm.json").write_text(json.dumps(doc))
    assert main(["validate", "--hw", "h100-sxm", "--measurements", str(tmp_path),
                 "--suites", "gemm", "--engine-budget", "0", "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and needle in err, err


@pytest.mark.parametrize("edit,needle", [
    (lambda rs: [r.update(ok=False) for r in rs], "no successful record"),
    (lambda rs: rs.append(dict(next(r for r in rs if r["name"] == "latency_l1"))), r"repeats record \d+ \('latency_l1'"),
    (lambda rs: next(r for r in rs if r["name"] == "l2_read").update(bandwidth_bytes_per_s=1e20),
     "field 'bandwidth_bytes_per_s' = 1e.20, but bytes / median_s"),
])
def test_calibrate_refuses_micro_records_that_cannot_be_so(tmp_path, edit, needle):
    import json
    doc = json.loads((DATA / "micro.json").read_text())
    edit(doc["records"])
    (tmp_path / "micro.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=needle):
        calibrate.calibrate(H100, tmp_path)


def test_calibrate_refuses_an_h2d_record_of_an_unknown_kind(tmp_path):
    import json
    import shutil
    shutil.copy(DATA / "micro.json", tmp_path / "micro.json")
    doc = json.loads((DATA / "h2d.json").read_text())
    doc["records"][0]["kind"] = "foo"
    (tmp_path / "h2d.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="h2d.json: record 0: field 'kind' = 'foo': allowed: pinned, pageable"):
        calibrate.calibrate(H100, tmp_path)


def test_layout_transform_against_the_h100():
    """The layout transform's program against what the H100 did: its warp instructions
    are Nsight Compute's count (356-357 a warp, every launch probed), and the engine meets
    the probe's timings of ResNet-50's batch-1 activations within 10% each (MAPE under
    6%), both directions (data/diagnostics/h100-sxm)."""
    from simulator.simt import api
    from workloads.ir import Conv2d
    diag = DATA.parent.parent / "diagnostics" / "h100-sxm"
    for r in json.loads((diag / "ncu_layout_transform.json").read_text())["records"]:
        conv = Conv2d(name="t", layout=r["layout"], K=1, R=1, S=1, **{
            k.upper(): int(v) for k, v in (x.split("=") for x in r["conv"][5:].split(","))
            if k in "nchw"})
        prob = api.build(H100, "layout-transform", conv=conv)
        warps = prob.programs[0].launch.blocks * 8
        # 356 a warp to NHWC, 357 to NCHW: one template for both, within 0.3%
        assert warps * len(prob.programs[0].template) == pytest.approx(
            r["metrics"]["smsp__inst_executed.sum"], rel=0.003)
    probe = json.loads((diag / "layout_transform.json").read_text())
    errs = []
    for r in (r for r in probe["records"] if r["batch"] == 1 and r["ok"]):
        N, C, H, W = r["tensor"]
        conv = Conv2d(name=r["layer"], N=N, C=C, H=H, W=W, K=1, R=1, S=1, layout=r["layout"])
        e = api.simulate(H100, api.build(H100, "layout-transform", conv=conv), "sampled", l2="warm")
        errs.append((e.seconds + H100.kernel_launch_s) / r["median_s"] - 1)
    assert len(errs) == 24 and max(map(abs, errs)) < 0.10 and np.mean(np.abs(errs)) < 0.06, errs


def test_validate_takes_a_users_own_copy_of_the_preset(tmp_path, capsys):
    """A calibrated copy of the preset under the user's own name, naming no GPU model,
    scores the GPU's measurements when the compute capabilities agree (and only then)."""
    import tomllib

    import hwmodels
    text = hwmodels.dumps_toml(H100)
    doc = tomllib.loads(text)
    mine = text.replace(f'name = "{doc["name"]}"', 'name = "lab-gpu"').replace(
        f'description = "{doc["description"]}"', 'description = "our calibrated copy"')
    assert "lab-gpu" in mine and "our calibrated copy" in mine
    (tmp_path / "lab.toml").write_text(mine)
    args = ["validate", "--hw", str(tmp_path / "lab.toml"), "--measurements", str(DATA),
            "--suites", "gemm", "--engine-budget", "0", "--workers", "1"]
    assert main(args) == 0, capsys.readouterr().err
    (tmp_path / "old.toml").write_text(mine.replace('compute_capability = "9.0"',
                                                    'compute_capability = "8.0"'))
    args[2] = str(tmp_path / "old.toml")
    assert main(args) == 2 and "measured on 'NVIDIA H100" in capsys.readouterr().err


def test_partial_write_cost_is_the_fit_of_the_lines_suite():
    """hopper.py's l2.partial_write_cycles and sm.l1.partial_lines_per_cycle are
    scripts/fit_partial_writes.py's over the committed lines suite; and on every SM the
    stores the first rests on are the L2's limit, not an SM's: with a quarter of the
    SMs, 32 warps each, an SM's scattered stores run faster."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        "fitpw", Path(__file__).resolve().parents[1] / "scripts" / "fit_partial_writes.py")
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    data = json.loads((DATA / "lines.json").read_text())
    assert H100.l2.partial_write_cycles == pytest.approx(fit.fit(data, H100.l2.banks), rel=1e-3)
    assert H100.sm.l1.partial_lines_per_cycle == pytest.approx(fit.fit_sm(data), rel=1e-3)
    rate = {(r["sms_used"], r["lines_per_request"]): r["requests_per_sm_per_s"]
            for r in data["records"] if r["name"] == "lines_write" and r["block"] == 1024}
    for lines in (8, 16, 32):
        assert rate[(33, lines)] > 1.5 * rate[(132, lines)]

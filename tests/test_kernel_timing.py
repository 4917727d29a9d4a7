"""Any kernel timed from its own SASS (``simulator.kernelcode.timing``): the map of a
warp's PTX path onto the SASS against Nsight Compute's instruction counts on the H100
(data/measurements/h100-sxm/counters.json, taken by the project's harness), sampled
against full runs, the Result's fields against the traces, and the CLI.

The kernels compile in a child process without numba's CUDA simulator (``ptx_cache``).
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from simulator.kernelcode import sassmap
from simulator.kernelcode.compiled import compile as compile_kernel
from simulator.kernelcode.launch import emulate_kernel
from simulator.kernelcode.lineinfo import instruction_lines, tagged_ptx
from simulator.kernelcode.timing import simulate_kernel, simulate_launches

pytestmark = pytest.mark.usefixtures("ptx_cache")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
import examples.kernels as ek  # noqa: E402


def _launches(problem: str):
    """(kernel, grid, block, args) of each launch a counters-suite problem makes, from its
    numba face (``Device.calls``) as the harness launches it."""
    from simulator.analysis.counters import problem_of
    from simulator.simt.kernels import REGISTRY
    from simulator.simt.kernels.spec import host_calls
    name, args = problem_of(problem)
    spec = REGISTRY.get(name)
    return host_calls(spec.device(spec.problem(**args)), np.random.default_rng(0))


def _counters():
    with open(os.path.join(ROOT, "data/measurements/h100-sxm/counters.json")) as f:
        return {r["problem"]: r for r in json.load(f)["records"]}


# problems of the counters suite small enough to emulate whole in seconds
COUNTED = ["relu=relu:1048576", "gemm-tiled=gemm:256x256x256#16",
           "gemm-tiled=gemm:256x256x256#32"]


@pytest.mark.parametrize("problem", COUNTED)
def test_sass_warp_instructions_equal_nsight_computes(problem):
    """Every warp's recorded PTX path mapped onto the SASS gives the warp instructions
    Nsight Compute counted on the H100 (smsp__inst_executed.sum) within 2%."""
    rec = _counters()[problem]
    kernel, grid, block, args = _launches(problem)[rec.get("launch", 0)]
    c = compile_kernel(kernel, args, (9, 0))
    em = emulate_kernel(kernel, grid, block, list(args), record=True, write_back=False)
    tr = sassmap.warp_traces(c.smap, em.trace)
    ncu = rec["instructions"]
    assert abs(len(tr.rows) / ncu - 1) <= 0.02, (len(tr.rows), ncu)
    # the PTX alone is not the timed stream: it misses what ptxas expands
    assert em.instructions < 0.9 * ncu or problem.endswith("#32")


def test_tagged_ptx_names_every_instruction_by_its_own_line():
    k, g, b, a = ek.launch_transpose()
    c = compile_kernel(k, a, (9, 0))
    ptx = c.kptx.ptx
    tagged = tagged_ptx(ptx).split("\n")
    starts = instruction_lines(ptx)
    locs = [int(m.group(1)) for m in (re.match(r"\s*\.loc\s+1\s+(\d+)\s+0", ln) for ln in tagged)
            if m]
    assert sorted(locs) == sorted(starts)
    # each .loc sits right before the line it names, whose text is unchanged
    original = ptx.split("\n")
    for i, ln in enumerate(tagged):
        m = re.match(r"\s*\.loc\s+1\s+(\d+)\s+0", ln)
        if m:
            assert tagged[i + 1] == original[int(m.group(1)) - 1]
    # and every SASS instruction of the main code is named by a PTX instruction's line
    named = c.smap.origin >= 0
    assert named[c.smap.home >= 0].mean() > 0.95


@pytest.mark.parametrize("hw,launcher", [
    ("gtx480", "launch_block_sum"), ("gtx480", "launch_transpose"),
    ("h100-sxm", "launch_block_sum"), ("h100-sxm", "launch_transpose")])
def test_sampled_is_within_3_percent_of_full(hw, launcher):
    k, g, b, a = getattr(ek, launcher)()
    full = simulate_kernel(k, g, b, a, hw=hw, mode="full")
    sampled = simulate_kernel(k, g, b, a, hw=hw, mode="sampled")
    assert sampled.simulated_fraction < 1.0
    assert abs(sampled.cycles / full.cycles - 1) <= 0.03
    assert abs(sampled.instructions / full.instructions - 1) <= 0.03
    assert full.simulated_fraction == 1.0


def test_result_counts_follow_the_traces():
    k, g, b, a = ek.launch_softmax()
    before = [x.copy() for x in a if isinstance(x, np.ndarray)]
    r = simulate_kernel(k, g, b, a, hw="h100-sxm", mode="full")
    # the kernel's arrays are read, not written
    for x, y in zip([x for x in a if isinstance(x, np.ndarray)], before):
        assert np.array_equal(x, y)
    sass = r.extra["sass"]
    assert sum(s["warp_instructions"] for s in sass) == pytest.approx(r.instructions)
    # every lane of every row is one float read and one written: the compulsory bytes
    rows, cols = a[0].shape
    assert r.compulsory_bytes == 2 * rows * cols * 4
    assert r.bytes_by_level["dram"] >= 0.9 * r.compulsory_bytes
    assert r.last_launch.regs_per_thread > 0
    assert r.last_launch.smem_per_block > 0        # the block's shared reduction buffer


def test_cli_simulates_an_example_kernel(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-m", "simulator", "simulate", "kernel",
                          "examples/kernels.py:launch_transpose", "--hw", "h100-sxm",
                          "--csv", str(tmp_path / "s.csv"), "--json", str(tmp_path / "r.json")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "timed from its SASS" in out.stdout and "SASS warp instructions" in out.stdout
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["instructions"] > 0 and doc["seconds"] > 0
    assert (tmp_path / "s.csv").read_text().startswith("pc,")


@pytest.mark.parametrize("launcher", ["launch_block_sum", "launch_transpose", "launch_softmax"])
def test_the_analytic_model_reads_a_user_kernels_traced_warps(launcher):
    """``mode="analytic"``: the analytic model over the warps a sampled run traces, no
    cycle simulated. Its warp instructions are the full trace's (every block recorded,
    the engine's full run) within 3%; its time is the engine's within a factor of two
    (the model's goal against measurements is benchmarks/bench_analytic.py's)."""
    k, g, b, a = getattr(ek, launcher)()
    full = simulate_kernel(k, g, b, a, hw="h100-sxm", mode="full")
    ana = simulate_kernel(k, g, b, a, hw="h100-sxm", mode="analytic")
    assert ana.predictor == "analytic" and ana.simulated_fraction is None
    assert ana.instructions == pytest.approx(full.instructions, rel=0.03)
    assert 0.5 < ana.seconds / full.seconds < 2.0
    assert sum(s["warp_instructions"] for s in ana.extra["sass"]) == pytest.approx(
        ana.instructions, rel=0.03)


def test_cli_analytic_mode_prints_its_limiter_and_refuses_a_timeline(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    cmd = [sys.executable, "-m", "simulator", "simulate", "kernel",
           "examples/kernels.py:launch_transpose", "--hw", "h100-sxm", "--mode", "analytic"]
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "analytic model (limited by " in out.stdout and "engine" not in out.stdout
    bad = subprocess.run(cmd + ["--timeline", str(tmp_path / "t.json")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "--timeline needs --mode full or sampled" in bad.stderr


def test_validate_kernels_scores_times_counters_and_pairs(tmp_path):
    """The kernels suite's scoring on two records of the committed H100 file, cut to
    small shapes: a row each, the pair (unpadded, padded transpose) compared, and the
    counters read from the records."""
    import hwmodels
    from simulator.analysis import kernel_suite as ks
    with open(os.path.join(ROOT, "data/measurements/h100-sxm/kernels.json")) as f:
        doc = json.load(f)
    recs = [dict(r, size={"rows": 96, "cols": 64}, shape="96x64") for r in doc["records"]
            if r["kernel"] in ("transpose_tile16", "transpose_padded")][:2]
    assert {r["kernel"] for r in recs} == {"transpose_tile16", "transpose_padded"}
    (tmp_path / "kernels.json").write_text(json.dumps({**doc, "records": recs}))
    rows, stopped = ks.run(hwmodels.get("h100-sxm"), tmp_path)
    assert not stopped and len(rows) == 2
    sc = ks.scores(rows)
    assert sc["pairs_in_order"]["n"] == 1
    assert sc["instructions"]["n"] == 2 and sc["seconds"]["n"] == 2
    for r, rec in zip(rows, recs):
        assert r["measured_instructions"] == rec["counters"]["smsp__inst_executed.sum"]
        assert r["engine_seconds"] > 0
    # another GPU's file is refused
    with pytest.raises(ValueError, match="H100|h100"):
        ks.run(hwmodels.get("gtx480"), tmp_path)


def _matadd(a, b, c):
    from simulator.simt.kernels import REGISTRY
    from simulator.simt.kernels.spec import host_calls
    spec = REGISTRY.get("matadd")
    (k, g, blk, args), = host_calls(spec.device(spec.problem(m=a.shape[0], n=a.shape[1])))
    return k, g, blk, (a, b, c, *args[3:])


def test_launches_add_up_and_share_the_l2():
    """Two launches simulated together issue what each does alone, and the second
    finds in the L2 what the first read and wrote (an array both take is one array)."""
    rng = np.random.default_rng(0)
    A, B = (rng.standard_normal((96, 80), dtype=np.float32) for _ in "AB")
    C, D = np.zeros_like(A), np.zeros_like(A)
    first, second = _matadd(A, B, C), _matadd(C, B, D)     # D = (A + B) + B
    both = simulate_launches([first, second], hw="h100-sxm", mode="full")
    alone = [simulate_kernel(*lc, hw="h100-sxm", mode="full") for lc in (first, second)]
    assert both.instructions == sum(r.instructions for r in alone)
    assert [x.instructions for x in both.launches] == [r.instructions for r in alone]
    assert both.cycles == pytest.approx(sum(r.cycles for r in alone), rel=0.25)
    # alone, the second launch reads C and B from DRAM; after the first, from the L2
    assert alone[1].last_launch.hit_rates["l2"] < 0.5
    assert both.launches[1].hit_rates["l2"] > 0.9
    assert both.launches[0].hit_rates["l2"] == pytest.approx(alone[0].last_launch.hit_rates["l2"])
    # an array new to the second launch is not one the first took (a new address):
    # D = E + C finds C in the L2, not E
    E = rng.standard_normal(A.shape, dtype=np.float32)
    mixed = simulate_launches([first, _matadd(E, C, D)], hw="h100-sxm", mode="full")
    assert 0.3 < mixed.launches[1].hit_rates["l2"] < 0.7
    sass = both.extra["sass"]
    assert {r["launch"] for r in sass} == {0, 1}
    assert sum(r["warp_instructions"] for r in sass) == pytest.approx(both.instructions)
    assert [e["total_blocks"] for e in both.extra["launches"]] == [
        r.extra["total_blocks"] for r in alone]
    # one launch is simulate_kernel's run
    one = simulate_launches([first], hw="h100-sxm", mode="full")
    assert (one.cycles, one.instructions) == (alone[0].cycles, alone[0].instructions)
    assert "launch" not in one.extra["sass"][0] and "launches" not in one.extra


def test_conv_im2col_launches_from_its_numba_face():
    """conv-im2col's two launches (im2col, then the tiled GEMM on the column matrix),
    from ``Device.calls``, simulated together in sampled and full mode."""
    from simulator.simt.kernels import REGISTRY
    from simulator.simt.kernels.spec import host_calls
    spec = REGISTRY.get("conv-im2col")
    calls = host_calls(spec.device(spec.problem(**spec.variants[0])), np.random.default_rng(0))
    assert len(calls) == 2 and calls[0][3][1] is calls[1][3][0]     # col: written, then read
    full = simulate_launches(calls, hw="h100-sxm", mode="full")
    sampled = simulate_launches(calls, hw="h100-sxm")
    assert len(full.launches) == len(sampled.launches) == 2
    assert sampled.instructions == pytest.approx(full.instructions, rel=0.03)
    alone = simulate_kernel(*calls[1], hw="h100-sxm", mode="full")
    assert full.launches[1].instructions == alone.instructions
    assert full.launches[1].hit_rates["l2"] > alone.last_launch.hit_rates["l2"]


@pytest.mark.parametrize("launches,field", [
    ([], "launches"), ((), "launches"), (None, "launches"),
    ([("kernel", (1,), (32,))], "launches[0]"),
    (["not a tuple"], "launches[0]"),
    ([("kernel", (1,), (32,), ())], "launches[0] kernel"),
    ([(5, (1,), (32,), ())], "launches[0] kernel = 5: a numba @cuda.jit kernel or PTX text"),
    ([("ptx", (1,), (32,), (), "", 0)], "launches[0] kernel = 'ptx': PTX text needs its entry's"),
    ([("ptx", (1,), (32,), (), "k", -1)], "launches[0] shared_bytes = -1"),
    ([("ptx", (1,), (32,), (), "k")], "launches[0]"),
])
def test_simulate_launches_refuses_bad_launches(launches, field):
    with pytest.raises(ValueError, match=re.escape(field)):
        simulate_launches(launches, hw="h100-sxm")


def test_simulate_launches_refuses_args_not_a_sequence():
    k, g, b, a = _matadd(*(np.zeros((8, 8), np.float32) for _ in range(3)))
    with pytest.raises(ValueError, match=re.escape("launches[1] args")):
        simulate_launches([(k, g, b, a), (k, g, b, np.zeros(3))], hw="h100-sxm")


def test_a_block_looping_past_what_the_probe_emulates_is_predicted_not_refused(monkeypatch):
    """One block whose grid-stride loop runs 1024 trips, more warp-instructions than the
    probe emulates whole (its limits set to 2e4 here): sampled mode skips the loop's
    middle trips and predicts it, within 3% of full mode, which runs every trip; the
    probe's limit still stops a loop it cannot skip (full mode's probe)."""
    from simulator.kernelcode import timing
    from simulator.simt.kernels.relu import relu_kernel
    n = 1 << 16
    x, y = np.ones(n, np.float32), np.zeros(n, np.float32)
    full = simulate_kernel(relu_kernel, 1, 64, (x, y, n), hw="h100-sxm", mode="full")
    monkeypatch.setattr(timing, "PROBE_MAX", 2e4)
    monkeypatch.setattr(timing, "PROBE_RECORD_MAX", 2e4)
    r = simulate_kernel(relu_kernel, 1, 64, (x, y, n), hw="h100-sxm")
    assert abs(r.cycles / full.cycles - 1) <= 0.03, (r.cycles, full.cycles)
    assert r.instructions == pytest.approx(full.instructions, rel=0.01)
    with pytest.raises(ValueError, match=r"'relu_kernel' on grid \(1, 1, 1\) block \(64, 1, 1\).*"
                                         r"more than 2e\+04 PTX warp-instructions"):
        simulate_kernel(relu_kernel, 1, 64, (x, y, n), hw="h100-sxm", mode="full")


def test_stores_ptxas_moved_ahead_of_their_block_keep_their_addresses():
    """ptxas hoists math_functions' stores of sin, cos, log and exp above the slow paths
    of the functions after them, so each issues before its PTX store's block first runs:
    it takes that store's addresses (its first in the warp), and every one of the eight
    stores a thread makes reaches the L2 -- one float read and eight written per thread,
    exactly (an empty L2, so nothing is evicted)."""
    from workloads.kernelsuite import all_cases
    case = {c.name: c for c in all_cases()}["math_functions"]
    n = 4096
    grid, block, args, shared = case.setup(np.random.default_rng(0), n=n)
    r = simulate_kernel(case.kernel, grid, block, list(args), hw="h100-sxm", mode="full",
                        l2="flushed", shared_bytes=shared)
    stores = [s for s in r.extra["sass"] if s["text"].split()[0].startswith("STG")]
    assert len(stores) == 8
    assert r.bytes_by_level["l2"] == 9 * n * 4
    assert r.extra["dram_flush_bytes"] == 8 * n * 4


def _nbody(n=2048):
    """benchmarks/bench_any_size's all-pairs step: blocks alike, a 256-trip loop inside
    the tile loop (neither is skipped: the outer has n / 256 trips)."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import bench_any_size as b
    pos = np.random.default_rng(0).random((n, 4), dtype=np.float32)
    return b.nbody_step, n // b.TILE, b.TILE, [pos, np.zeros((n, 3), np.float32), n,
                                                np.float32(1e-4)]


def test_blocks_too_long_to_probe_ten_of_are_weighed_by_one(monkeypatch):
    """Where ten blocks would run past the probe's limit, the middle interior block alone
    weighs them all (here the blocks are alike): within 1% of full mode's instructions
    and 3% of its cycles."""
    from simulator.kernelcode import timing
    k, g, b, a = _nbody(1024)
    full = simulate_kernel(k, g, b, a, hw="h100-sxm", mode="full")
    ran = []
    record = timing._record
    monkeypatch.setattr(timing, "_record", lambda *x, **kw: ran.append(len(x[4])) or record(*x, **kw))
    monkeypatch.setattr(timing, "PROBE_MAX", 1.5 * full.instructions / g)
    r = simulate_kernel(k, g, b, a, hw="h100-sxm")
    ten = len(timing._probe_ids((g, 1, 1)))
    assert ten > 1 and ran[0] == 1 and ten not in ran, ran       # no ten-block probe
    assert r.instructions == pytest.approx(full.instructions, rel=0.01)
    assert abs(r.cycles / full.cycles - 1) <= 0.03, (r.cycles, full.cycles)


def test_blocks_longer_than_the_probe_said_are_planned_again(monkeypatch):
    """A probe that says the blocks do 50 times less than they do (data-dependent work
    it missed): the trace stops at twice what was expected, the blocks are planned
    again from what it found, and the prediction is the one a right estimate gives."""
    from simulator.kernelcode import timing
    k, g, b, a = _nbody(3072)          # 12 blocks: the probe runs 11
    monkeypatch.setattr(timing, "TRACE_SLACK", 0)
    right = simulate_kernel(k, g, b, a, hw="h100-sxm")
    probe = timing._probe

    def low(*x, **kw):
        p = probe(*x, **kw)
        p.work = p.work / 50
        p.cut_work = {c: w / 50 for c, w in p.cut_work.items()}
        return p
    plans = []
    plan = timing._plan
    monkeypatch.setattr(timing, "_probe", low)
    monkeypatch.setattr(timing, "_plan", lambda *x: plans.append(1) or plan(*x))
    r = simulate_kernel(k, g, b, a, hw="h100-sxm")
    assert len(plans) >= 2
    assert r.instructions == pytest.approx(right.instructions, rel=0.01)
    assert abs(r.cycles / right.cycles - 1) <= 0.03, (r.cycles, right.cycles)


def test_a_trace_past_what_its_blocks_so_far_were_expected_to_run_stops_early():
    """``max_record`` as one count per block: the emulation stops (``TraceTooLong``) at
    the first check past the count of the block it is in, long before the end; a count
    above what the blocks run lets it finish."""
    from simulator.kernelcode.launch import SLICE, TraceTooLong
    k, g, b, a = _nbody(2048)                         # 8 blocks of about 0.5 M each
    whole = emulate_kernel(k, g, b, a, record=True, write_back=False)
    assert whole.instructions > 3 * SLICE
    with pytest.raises(TraceTooLong) as e:
        emulate_kernel(k, g, b, a, record=True, write_back=False, max_record=[1e3] * g)
    assert e.value.blocks_done <= 1 and e.value.events <= 2 * SLICE
    again = emulate_kernel(k, g, b, a, record=True, write_back=False,
                           max_record=[2 * whole.instructions] * g)
    assert again.instructions == whole.instructions


def test_the_probe_weighs_interior_blocks_that_differ_from_more_of_them(monkeypatch):
    """``_interior_differ``: interior blocks a factor of two apart or more (the edge
    blocks apart, which bounds checks make differ) -- an escape-time image's probe then
    runs four times as many interior blocks, and meets full mode within 3%."""
    from simulator.kernelcode import timing
    grid = (8, 8, 1)
    inner = [9, 10, 18]                  # interior blocks of an 8 x 8 grid
    edge = 0

    def trace(counts):                   # events of one warp a block, as the emulator's
        rows = np.concatenate([np.full(n, blk) for blk, n in counts.items()])
        return {"blocks": np.array(sorted(counts)), "warps_per_block": 1,
                "events": np.stack([rows, rows, rows, rows], axis=1)}
    assert not timing._interior_differ(grid, trace({edge: 1, 9: 10, 10: 20, 18: 15}))
    assert timing._interior_differ(grid, trace({edge: 100, 9: 10, 10: 21, 18: 15}))
    assert not timing._interior_differ(grid, trace({edge: 1, inner[0]: 5}))
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    import bench_any_size as bench
    w = 256
    a = [np.zeros((w, w), np.int32), np.float32(-2.0), np.float32(-1.25), np.float32(2.5 / w),
         np.float32(2.5 / w), 64]
    g, b = (w // 16, w // 16), (16, 16)
    full = simulate_kernel(bench.mandelbrot, g, b, a, hw="h100-sxm", mode="full")
    ran = []
    record = timing._record
    monkeypatch.setattr(timing, "_record", lambda *x, **kw: ran.append(len(x[4])) or record(*x, **kw))
    r = simulate_kernel(bench.mandelbrot, g, b, a, hw="h100-sxm")
    assert len(timing._probe_ids((*g, 1), 4 * timing.PROBE_BLOCKS)) in ran, ran
    assert r.instructions == pytest.approx(full.instructions, rel=0.03)
    assert abs(r.cycles / full.cycles - 1) <= 0.03, (r.cycles, full.cycles)

"""Atomics under contention: the emulator's concurrent run (blocks resident together,
warps interleaved by time, atomics queued at their lines) against closed forms and the
one-block-at-a-time run; the SIMT engine's L2 atomic units (``simt.memory.l2_atomic``)
against closed forms and the H100's suites; the busiest unit's work against its closed
form."""
import json
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import hwmodels
import simulator as rs
from simulator.kernelcode import compiled, timing
from simulator.kernelcode import emulator as em
from simulator.kernelcode.atomics import atomic_timing
from simulator.kernelcode.launch import emulate_kernel
from simulator.measure import micro
from simulator.simt import memory
from simulator.simt.analytic import atomic_unit_cycles
from workloads.kernelsuite import all_cases, compare

ROOT = Path(__file__).resolve().parents[1]
H100 = hwmodels.get("h100-sxm")


def _cas_counter(**kw):
    """micro.cas_order_kernel (lane 0 of every warp adds 1 with a CAS loop) on 8 blocks of
    two warps: (the counter, each warp's tries, each warp's place among the successes)."""
    counter, tries, rank = np.zeros(1, np.int32), np.zeros(16, np.int32), np.zeros(16, np.int32)
    emulate_kernel(micro.cas_order_kernel, (8,), (64,), [counter, tries, rank], **kw)
    return counter, tries, rank


def test_a_cas_loop_retries_once_for_each_warp_that_got_there_first():
    """Closed form of the line's first-come order: all 16 warps (8 blocks of 2, resident
    together) read 0 and reach the line in warp order; the first succeeds, every other
    fails and reads the new value, and so on: warp k tries k + 1 times. One block after
    another, nothing contends: one try each."""
    for concurrent, want in ((True, np.arange(1, 17)), (False, np.ones(16))):
        counter, tries, rank = _cas_counter(concurrent=concurrent)
        assert counter[0] == 16 and np.array_equal(rank, np.arange(16))
        assert np.array_equal(tries, want), (concurrent, tries)


def test_the_default_runs_a_cas_kernel_concurrently_and_others_one_block_at_a_time():
    assert _cas_counter()[1].max() == 16
    # one block resident at a time: only a block's two warps contend
    assert np.array_equal(_cas_counter(resident=1)[1], np.tile([1, 2], 8))


@pytest.mark.parametrize("bad", [0, -3, 1.5, True])
def test_a_bad_resident_count_is_refused_naming_it(bad):
    with pytest.raises(ValueError, match="resident="):
        _cas_counter(concurrent=True, resident=bad)


def test_the_contended_atomics_case_gives_numpys_answer_run_concurrently():
    case = next(c for c in all_cases() if c.name == "atomics_minmax_cas")
    grid, block, args, _ = case.setup(np.random.default_rng(3), n=1 << 11, block=128)
    before = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
    emulate_kernel(case.kernel, grid, block, args, concurrent=True)
    assert compare(case, args, case.expected(before)) == []


@pytest.mark.parametrize("name,size", [("reduce_interleaved", {"n": 1 << 12}),
                                       ("transpose_tile33", {"rows": 64, "cols": 96})])
def test_a_kernel_without_atomics_traces_the_same_run_concurrently(name, size):
    """Shared memory, barriers and no races: each block's warps run the same streams
    with the same addresses whether the blocks run together (each slot with its own
    shared memory) or one after another -- the traces, once per warp, are equal."""
    kernel, grid, block, args = rs.load_launcher(f"{ROOT / 'examples' / 'teaching.py'}:"
                                                 f"launch_{name}", **size)
    outs, traces = [], []
    for concurrent in (False, True):
        a = [np.copy(x) if isinstance(x, np.ndarray) else x for x in args]
        e = emulate_kernel(kernel, grid, block, a, record=True, concurrent=concurrent,
                           resident=3)
        outs.append(a)
        traces.append(e.trace)
    for x, y in zip(*outs):
        if isinstance(x, np.ndarray):
            assert np.array_equal(x, y)
    (s0, s1) = [t["events"][np.argsort(t["events"][:, 0], kind="stable")] for t in traces]
    assert np.array_equal(s0[:, :3], s1[:, :3])
    a0 = traces[0]["addresses"][s0[s0[:, 3] >= 0, 3]]
    a1 = traces[1]["addresses"][s1[s1[:, 3] >= 0, 3]]
    assert np.array_equal(a0, a1)


@pytest.mark.parametrize("spread,cas", [(32, 0), (12, 1), (4, 0), (1, 1)])
def test_the_atomic_unit_bound_is_its_closed_form(spread, cas):
    """The atomics suite's kernel: 4 warps x 8 requests on one line, the busiest word
    with ceil(32 / spread) lanes: 32 requests, each the unit's time for the op plus a
    lane's for each further lane on that word."""
    kernel = micro.atomic_line_kernel
    args = [np.zeros(32, np.int32), np.zeros(128, np.int64), 8, spread, cas]
    c = compiled.compile(kernel, args, timing.cc_of(H100))
    prog, _, _ = timing.trace_program(c, kernel, H100, (1,), (128,), args, mode="full")
    l2 = H100.l2
    each = l2.atomic_cas_cycles if cas else l2.atomic_cycles
    want = 32 * (each + l2.atomic_lane_cycles * (-(-32 // spread) - 1))
    assert atomic_unit_cycles(H100, prog) == pytest.approx(want, rel=1e-9)
    # and the engine's units held that long in all
    r = rs.simulate_kernel(kernel, (1,), (128,), args, hw=H100, mode="full")
    stats = r.detail.launches[0].stats
    assert stats.atomic_requests == 32
    assert stats.atomic_unit_cycles == pytest.approx(want, rel=1e-9)


ADDS = """import numpy as np
from numba import cuda


@cuda.jit
def adds_on_one_word(word, out, iters):
    acc = 0
    for _ in range(iters):
        acc += cuda.atomic.add(word, 0, 1)
    out[cuda.grid(1)] = acc


def launch():
    return adds_on_one_word, (8,), (128,), [np.zeros(1, np.int32), np.zeros(1024, np.int32), 64]
"""


def _adds_kernel(tmp_path):
    """(the file, its launch: kernel, grid, block, args), loaded as the CLI loads it."""
    f = tmp_path / "adds.py"
    f.write_text(ADDS)
    return f, rs.load_launcher(f"{f}:launch")


def test_a_launch_bound_by_its_atomic_unit_takes_the_units_time(tmp_path):
    """2,048 atomic adds of 32 lanes on one word (32 warps, 64 dependent adds each): the
    line's unit serves them one at a time, 2,048 x (4.9 + 31 x 1.26) cycles, far more
    than a warp's 64 round trips; the engine's launch takes the unit's time and a
    round trip (its first request's way there, its last one's way back), within a
    block's start, in full mode and sampled alike."""
    _, (kernel, grid, block, args) = _adds_kernel(tmp_path)
    l2 = H100.l2
    want = 32 * 64 * (l2.atomic_cycles + 31 * l2.atomic_lane_cycles)
    for mode in ("full", "sampled"):
        r = rs.simulate_kernel(kernel, grid, block, args, hw=H100, mode=mode)
        assert r.extra["atomic_unit_cycles"] == [pytest.approx(want)]
        assert want + l2.atomic_latency_cycles < r.cycles \
            < want + l2.atomic_latency_cycles + 2000, (mode, r.cycles, want)


def test_the_cli_says_when_the_atomics_bound_the_launch(tmp_path):
    import subprocess
    import sys
    f, _ = _adds_kernel(tmp_path)
    out = subprocess.run([sys.executable, "-m", "simulator", "simulate", "kernel",
                          f"{f}:launch", "--hw", "h100-sxm", "--mode", "full"], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    want = 32 * 64 * (H100.l2.atomic_cycles + 31 * H100.l2.atomic_lane_cycles)
    assert f"L2 atomics: the busiest line's atomic unit works {want:,.0f} cycles, 9" \
        in out.stdout, out.stdout


def test_atomic_timing_reads_the_preset_and_a_preset_without_figures_takes_the_h100s():
    t = atomic_timing(H100)
    assert t[em.T_ATOM_LAT] == H100.l2.atomic_latency_cycles
    assert t[em.T_CAS] == H100.l2.atomic_cas_cycles
    fermi = hwmodels.get("gtx480")
    assert fermi.l2.atomic_latency_cycles is None
    tf = atomic_timing(fermi)
    assert tf[em.T_CAS] == H100.l2.atomic_cas_cycles
    assert tf[em.T_ATOM_LAT] == (H100.l2.atomic_latency_cycles - H100.l2.latency_cycles
                                 + fermi.l2.latency_cycles)
    assert t[em.T_QUEUE] == tf[em.T_QUEUE] == H100.l2.atomic_queue_requests
    # a queue set on a preset without the other figures is its own
    mine = hwmodels.with_overrides(fermi, ["l2.atomic_queue_requests=16"])
    assert atomic_timing(mine)[em.T_QUEUE] == 16


def test_the_atomics_figures_come_together():
    with pytest.raises(ValueError, match="atomic_cycles: not given"):
        hwmodels.with_overrides(hwmodels.get("gtx480"), ["l2.atomic_latency_cycles=500"])


def test_the_l1_takes_no_atomics_figures_and_hw_show_lists_only_the_l2s(tmp_path):
    four = [f"sm.l1.{n}=3" for n in ("atomic_latency_cycles", "atomic_cycles",
                                     "atomic_cas_cycles", "atomic_lane_cycles")]
    with pytest.raises(ValueError, match=r"sm\.l1\.atomic_latency_cycles = 3.*an L2 figure"):
        hwmodels.with_overrides(hwmodels.get("h100-sxm"), four)
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "simulator", "hw", "show", "h100-sxm"],
                         capture_output=True, text=True, check=True).stdout
    shown = [ln.split()[0] for ln in out.splitlines() if "atomic" in ln]
    assert shown == ["l2.atomic_latency_cycles", "l2.atomic_cycles", "l2.atomic_cas_cycles",
                     "l2.atomic_lane_cycles", "l2.atomic_queue_requests"], shown
    # the L2's cost of a part-written sector likewise
    with pytest.raises(ValueError, match=r"sm\.l1\.partial_write_cycles = 2.*an L2 figure"):
        hwmodels.with_overrides(hwmodels.get("h100-sxm"), ["sm.l1.partial_write_cycles=2"])
    assert [ln.split()[0] for ln in out.splitlines() if "partial_write" in ln] == \
        ["l2.partial_write_cycles"]
    # and the L1's rate for part-written lines is the L1's only
    with pytest.raises(ValueError, match=r"l2\.partial_lines_per_cycle = 1.*an L1 figure"):
        hwmodels.with_overrides(hwmodels.get("h100-sxm"), ["l2.partial_lines_per_cycle=1"])
    assert [ln.split()[0] for ln in out.splitlines() if "partial_lines" in ln] == \
        ["sm.l1.partial_lines_per_cycle"]


def test_the_preset_is_the_fit_of_its_measurements():
    """hopper.py's figures are scripts/fit_atomics.py's: the unit's over the committed
    atomics suite, the round trip through the engine over the atomic_trace suite (a
    fixed point: at the preset's round trip the fit gives it back, within 1%)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("fit", ROOT / "scripts" / "fit_atomics.py")
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    recs = json.loads((ROOT / "data" / "measurements" / "h100-sxm" / "atomics.json")
                      .read_text())["records"]
    got = fit.fit(recs)
    for k, v in got.items():
        assert getattr(H100.l2, k) == pytest.approx(v, rel=1e-3), k
    lat = fit.fit_latency(TRACE, H100)
    assert H100.l2.atomic_latency_cycles == pytest.approx(lat, rel=0.01)


ORDER = json.loads((ROOT / "data" / "measurements" / "h100-sxm" / "atomic_order.json")
                   .read_text())["records"]


def _measured_tries(name, **shape):
    runs = [r["total_tries"] for r in ORDER if r["name"] == name
            and all(r[k] == v for k, v in shape.items())]
    assert runs, (name, shape)
    return float(np.median(runs))


@pytest.mark.parametrize("grid", [32, 128])
def test_one_lane_a_warp_retries_about_as_the_h100s_line_serves_first_come(grid):
    """The H100's order of successes (atomic_order suite, one lane a warp on one word):
    near first come, first served -- the k-th warp to succeed tried about k times, yet
    15-27% short of the W(W+1)/2 tries. Not the blocks' starts (the atomic_trace suite
    has them all within 0.4 us): what spares those tries is not modelled."""
    counter = np.zeros(1, np.int32)
    tries, rank = np.zeros(grid * 4, np.int32), np.zeros(grid * 4, np.int32)
    emulate_kernel(micro.cas_order_kernel, (grid,), (128,), [counter, tries, rank])
    measured = _measured_tries("cas_order", grid=grid, block=128)
    assert 1.0 <= tries.sum() / measured <= 1.4, (tries.sum(), measured)


@pytest.mark.parametrize("lanes,keys", [(2, 1), (32, 12), (32, 1)])
def test_a_warps_lanes_on_one_word_retry_as_on_the_h100(lanes, keys):
    """The H100's tries (atomic_order suite) with several lanes of every warp on one word,
    128 warps: a line serving whole requests first come, first served retried 1.2-2.2x
    as often (each warp's next try a whole round after its last); served a pass at a
    time, each pass back at the end of the line's queue, within the 15% the H100 spares
    everywhere (as with one lane a warp, above)."""
    counter = np.zeros(32, np.int32)
    tries = np.zeros(32 * 128, np.int32)
    emulate_kernel(micro.cas_lanes_kernel, (32,), (128,), [counter, tries, lanes, keys])
    assert np.array_equal(counter[:keys], np.bincount(np.arange(lanes) % keys) * 128)
    measured = _measured_tries("cas_lanes", grid=32, lanes=lanes, keys=keys)
    assert 0.9 <= tries.sum() / measured <= 1.25, (tries.sum(), measured)


@pytest.mark.parametrize("lanes,keys", [(2, 1), (12, 12)])
def test_512_warps_retry_as_on_the_h100(lanes, keys):
    """512 warps on one line: first come, first served retried 1.3-1.55x as often as
    the H100. With the line's queue bounded (``l2.atomic_queue_requests``, fit to the
    atomic_trace suite, not to these), the requests beyond it get in in no order and
    the fresh ones among them sooner: within the 15% of the smaller shapes."""
    counter = np.zeros(32, np.int32)
    tries = np.zeros(128 * 128, np.int32)
    emulate_kernel(micro.cas_lanes_kernel, (128,), (128,), [counter, tries, lanes, keys])
    measured = _measured_tries("cas_lanes", grid=128, lanes=lanes, keys=keys)
    assert 0.9 <= tries.sum() / measured <= 1.25, (tries.sum(), measured)


@pytest.mark.xfail(strict=True, reason="known gap: 512 warps of 32 lanes on 12 words, three "
                   "passes a request, retry 0.87x the H100's tries in the emulator (first "
                   "come, first served gave 1.37x); how the H100 orders a held request's "
                   "further passes is not measured")
def test_512_warps_of_several_passes_retry_as_on_the_h100():
    counter = np.zeros(32, np.int32)
    tries = np.zeros(128 * 128, np.int32)
    emulate_kernel(micro.cas_lanes_kernel, (128,), (128,), [counter, tries, 32, 12])
    measured = _measured_tries("cas_lanes", grid=128, lanes=32, keys=12)
    assert 0.9 <= tries.sum() / measured <= 1.25, (tries.sum(), measured)


TRACE = json.loads((ROOT / "data" / "measurements" / "h100-sxm" / "atomic_trace.json")
                   .read_text())


def _trace_shape(grid, block, lanes):
    """The atomic_trace suite's launches of one shape: (median total tries, median cycles
    from the first try to the last success at the suite's clock)."""
    clock = TRACE["provenance"]["attributes"]["clock_rate"] * 1e3
    rs_ = [r for r in TRACE["records"] if (r["grid"], r["block"], r["lanes"]) == (grid, block, lanes)]
    assert rs_ and all(r["ok"] for r in rs_)
    return (float(np.median([r["total_tries"] for r in rs_])),
            float(np.median([max(r["success_ns"]) for r in rs_])) * 1e-9 * clock)


@pytest.mark.parametrize("grid,block,lanes", [(32, 128, 1), (128, 128, 1), (32, 128, 12),
                                              (64, 128, 12), (128, 128, 12), (32, 512, 12),
                                              (128, 32, 12)])
def test_a_contended_cas_loop_tries_and_takes_as_long_as_on_the_h100(grid, block, lanes):
    """The atomic_trace suite: 1 or 12 lanes of every warp, each on its own word of one
    line, 128 to 512 warps. The emulator's tries are 1.1-1.2x the H100's at every shape
    (the factor above, common to all: first come, first served gave 1.5x at 512 warps
    of 12 lanes), and its last warp's clock is within 10% of the H100's time from the
    first try to the last success: a lone lane's request holds the line about a fourth
    of a whole warp's (first come at 9.5 cycles a request took 4x the H100's time with
    one lane), twelve lanes' about half."""
    counter = np.zeros(32, np.int32)
    tries = np.zeros(grid * block, np.int32)
    emu = emulate_kernel(micro.cas_lanes_kernel, (grid,), (block,),
                         [counter, tries, lanes, lanes])
    assert np.array_equal(counter[:lanes], np.full(lanes, grid * block // 32))
    want_tries, want_cycles = _trace_shape(grid, block, lanes)
    assert 1.05 <= tries.sum() / want_tries <= 1.25, (tries.sum(), want_tries)
    assert emu.cycles == pytest.approx(want_cycles, rel=0.10), (emu.cycles, want_cycles)


def test_a_lone_lanes_request_holds_the_line_a_fraction_of_a_whole_warps():
    """first_pass_cycles: a lone lane the one-lane figure, all 32 the warp's, in
    proportion between; a further pass the one-lane figure (the atomics suite's
    closed form for 32 lanes is unchanged)."""
    full, one = H100.l2.atomic_cas_cycles, H100.l2.atomic_lane_cycles
    assert memory.first_pass_cycles(full, one, 1) == pytest.approx(one)
    assert memory.first_pass_cycles(full, one, 32) == pytest.approx(full)
    assert memory.first_pass_cycles(full, one, 12) == pytest.approx(one + (full - one) * 11 / 31)


@cuda.jit
def _one_add(word, old):
    if cuda.threadIdx.x % 32 == 0:
        old[cuda.grid(1) // 32] = cuda.atomic.add(word, 0, 1)


def test_requests_beyond_the_queue_get_in_in_no_order_and_those_within_in_theirs():
    """Closed form of the bounded queue: 64 warps (one lane each, 16 blocks of 4) reach
    one word at once. An unbounded queue serves them in warp order: warp w reads w.
    A queue of 4: warp 0 is served on arrival and warps 1-4 wait in order (they read
    1-4); the other 59 get in one at a time as places open, drawn: they read 5-63 in
    some order that is not theirs, the same on every run."""
    def reads(queue):
        T = atomic_timing(H100)
        T[em.T_QUEUE] = queue
        word, old = np.zeros(1, np.int32), np.zeros(64, np.int32)
        emulate_kernel(_one_add, (16,), (128,), [word, old], concurrent=True, atomics=T)
        assert word[0] == 64
        return old
    assert np.array_equal(reads(0), np.arange(64))
    held = reads(4)
    assert np.array_equal(held[:5], np.arange(5))
    assert np.array_equal(np.sort(held[5:]), np.arange(5, 64))
    assert not np.array_equal(held[5:], np.arange(5, 64))
    assert np.array_equal(reads(4), held)


def test_the_atomic_unit_bound_charges_a_lone_lanes_request_its_own_figure():
    """64 warps, one lane each, one add each on one word: 64 one-lane first passes."""
    args = [np.zeros(1, np.int32), np.zeros(64, np.int32)]
    c = compiled.compile(_one_add, args, timing.cc_of(H100))
    prog, _, _ = timing.trace_program(c, _one_add, H100, (16,), (128,), args, mode="full")
    assert atomic_unit_cycles(H100, prog) == \
        pytest.approx(64 * H100.l2.atomic_lane_cycles, rel=1e-9)


@pytest.mark.parametrize("grid,block,lanes", [(32, 128, 1), (64, 128, 12), (128, 128, 12)])
def test_the_engine_times_a_contended_cas_loop_as_the_h100(grid, block, lanes):
    """The engine replays the emulator's tries, each CAS served by its line's unit: the
    atomic_trace suite's CAS loops come within 15% of the H100's time from the first try
    to the last success (the one-lane shapes set the round trip,
    test_the_preset_is_the_fit_of_its_measurements; those of 12 lanes, 128 and 512
    warps, are its validation: 0.87-0.95 of the H100's)."""
    args = [np.zeros(32, np.int32), np.zeros(grid * block, np.int32), lanes, lanes]
    r = rs.simulate_kernel(micro.cas_lanes_kernel, (grid,), (block,), args, hw=H100,
                           mode="full")
    _, want_cycles = _trace_shape(grid, block, lanes)
    assert r.cycles == pytest.approx(want_cycles, rel=0.15), (r.cycles, want_cycles)


def test_the_preset_queue_is_the_fit_of_the_trace():
    """hopper.py's atomic_queue_requests is scripts/fit_atomic_queue.py's pick over the
    committed atomic_trace suite, among its neighbours."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("fq", ROOT / "scripts" / "fit_atomic_queue.py")
    fq = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fq)
    q = H100.l2.atomic_queue_requests
    best, table = fq.fit(TRACE["records"], candidates=(q // 2, q * 3 // 4, q, q * 3 // 2))
    assert best == q, table


@cuda.jit
def _add_old(word, old):
    old[cuda.threadIdx.x] = cuda.atomic.add(word, 0, 1)


def test_a_request_with_lanes_on_one_word_is_served_a_pass_at_a_time_between_others():
    """Closed form of the pass order: two warps (one block) each add 1 to one word from all
    32 lanes, reaching the line together. Warp 0's first pass (lane 0), then warp 1's, then
    warp 0's second pass back at the end of the queue, and so on: lane l of warp w reads
    2 l + w. Whole requests first come, first served would give warp 0 0-31 and warp 1
    32-63. The line is busy each request's first pass and a lane's time a further pass."""
    word, old = np.zeros(1, np.int32), np.zeros(64, np.int32)
    emulate_kernel(_add_old, (1,), (64,), [word, old], concurrent=True)
    assert word[0] == 64
    lane, w = np.arange(64) % 32, np.arange(64) // 32
    assert np.array_equal(old, 2 * lane + w), old


def _line_add_ptx(dst: str) -> str:
    """Every thread adds 1 to word 0 of ``pw`` with ``atom.global.add.u64``, its result in
    register ``dst`` (``%rd1``: the address register itself), and stores it to out[i]."""
    return """.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 pw, .param .u64 po)
{
.reg .b64 %rd<10>;
.reg .b32 %r<6>;
ld.param.u64 %rd1, [pw];
ld.param.u64 %rd3, [po];
mov.u32 %r1, %tid.x;
mov.u32 %r2, %ctaid.x;
mov.u32 %r3, %ntid.x;
mad.lo.s32 %r4, %r2, %r3, %r1;
mul.wide.u32 %rd4, %r4, 8;
add.s64 %rd5, %rd3, %rd4;
atom.global.add.u64 DST, [%rd1], 1;
st.global.u64 [%rd5], DST;
ret;
}
""".replace("DST", dst)


def test_an_atomic_whose_result_overwrites_its_address_queues_at_its_own_line():
    """The lines an atomic's passes hold are the lines of its addresses, read before its
    first pass writes results: naming the result register as the address register
    changes no value any thread reads (4 blocks of 3 warps, all on one word)."""
    outs = []
    for dst in ("%rd1", "%rd2"):
        word, out = np.zeros(1, np.uint64), np.zeros(384, np.uint64)
        emulate_kernel(_line_add_ptx(dst), (4,), (96,), [word, out], concurrent=True)
        assert word[0] == 384
        outs.append(out)
    assert np.array_equal(np.sort(outs[0]), np.arange(384))
    assert np.array_equal(outs[0], outs[1])


def test_a_concurrent_run_is_the_same_however_its_calls_fall(monkeypatch):
    """Where a budget or a full trace stops the emulator changes nothing: the warp it
    stopped goes on first at the next call. Every thread's tries in the contended CAS
    loop are the same run in one call, in calls of 7 warp-instructions, and recorded
    (its trace arrays filling and growing)."""
    import simulator.kernelcode.launch as launch

    def tries(**kw):
        counter, t = np.zeros(32, np.int32), np.zeros(8 * 128, np.int32)
        emulate_kernel(micro.cas_lanes_kernel, (8,), (128,), [counter, t, 32, 12],
                       concurrent=True, **kw)
        return t
    whole = tries()
    recorded = tries(record=True)
    monkeypatch.setattr(launch, "SLICE", 7)
    sliced = tries()
    assert whole.sum() > 8 * 128          # they contend
    assert np.array_equal(whole, sliced) and np.array_equal(whole, recorded)


def test_a_held_request_gets_in_at_its_slot_whatever_the_rounding():
    """A request held beyond a full queue comes back half a round trip before its slot
    and arrives half a round trip later: with a round trip whose half does not add back
    exactly (511.1 cycles: 255.55), it must still count as arrived at the slot. It once
    was held again at that slot for ever (512 warps of one lane in a CAS loop never
    finished); the run is the one a round trip a hair off gives."""
    def run(lat):
        T = atomic_timing(H100)
        T[em.T_ATOM_LAT] = lat
        counter, tries = np.zeros(32, np.int32), np.zeros(32 * 512, np.int32)
        e = emulate_kernel(micro.cas_lanes_kernel, (32,), (512,), [counter, tries, 1, 1],
                           atomics=T)
        assert counter[0] == 512
        return tries.sum(), e.cycles
    (n, c), (n2, c2) = run(511.1), run(511.1 + 1e-6)
    assert n == n2 and c == pytest.approx(c2, rel=1e-6)

"""The ``kernels`` measurement suite without a GPU: every case's measurement shapes build
valid launches of the sizes they state, the records and their counters have the
documented fields, ``ok`` comes from ``compare`` (a launch under numba's CUDA
simulator), the deadline keeps every kernel's first shape, and the suite is registered."""
import dataclasses
import math

import numpy as np
import pytest

from simulator.analysis.suite_keys import OTHER_KEYS
from simulator.cli import main
from simulator.measure import SUITES
from simulator.measure import kernels as mk
from workloads.kernelsuite import CASES, Case, compare

ALL = mk.all_cases()
#: size keywords that are an array's extent (the others: grid, block, width)
EXTENTS = {"n", "size", "rows", "cols", "ny", "nx", "h", "w", "d", "m", "k"}


def test_every_case_and_example_has_shapes():
    assert len(ALL) == len(CASES) + 3
    assert {c.name for c in ALL} >= {"examples.block_sum", "examples.transpose", "examples.softmax"}
    for c in ALL:
        labels = [label for label, _ in c.shapes]
        assert 1 <= len(labels) <= 3 and len(set(labels)) == len(labels), c.name
    # pathological for timing by design: fewer or smaller shapes, but at least one
    assert all(c.shapes for c in ALL)


@pytest.mark.parametrize("case", ALL, ids=[c.name for c in ALL])
def test_shapes_build_valid_launches_of_their_sizes(case):
    """Each shape's setup (no launch): grid and block within CUDA's limits, every extent
    it names an extent of an argument array, at most 1 GiB of arrays, and at least
    2^14 elements (a launch long enough to time)."""
    for label, size in case.shapes:
        grid, block, args, shared = mk.launch_of(case, size, seed=0)
        assert len(grid) <= 3 and grid[0] < 2**31 and all(g <= 65535 for g in grid[1:])
        assert math.prod(block) <= 1024 and block[0] <= 1024 and shared <= 48 * 1024
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        dims = {d for a in arrays for d in a.shape} | {a.size for a in arrays}
        for key, v in size.items():
            if key in EXTENTS:
                assert v in dims, f"{case.name} {label}: {key}={v} is no array's extent"
        ws = mk.working_set(args)
        assert 2**14 <= ws <= 2**30, (case.name, label, ws)
        lo, hi = case.tolerances(**size)
        assert lo >= case.rtol and hi >= case.atol


def test_case_names_are_their_kernels_names():
    """attach_counters matches ncu's kernel by the case's name (less ``examples.``)."""
    for c in ALL:
        assert c.name.rpartition(".")[2] == c.kernel.py_func.__name__


def test_a_size_a_case_does_not_take_is_named():
    with pytest.raises(ValueError, match=r"rows = 5: not a size .*allowed: n"):
        CASES[3].setup(np.random.default_rng(0), rows=5)
    with pytest.raises(ValueError, match="shape = 'huge' for case transpose_naive: allowed: 4096x4096"):
        CASES[0].shape("huge")
    with pytest.raises(ValueError, match="block = 256: a power of two up to 128"):
        next(c for c in CASES if c.name == "softmax_rows").setup(np.random.default_rng(0), block=256)


def test_tolerance_grows_with_the_terms_summed():
    mv = next(c for c in CASES if c.name == "matvec_thread_per_row")
    assert mv.tolerances() == (1e-5, 1e-5)
    assert mv.tolerances(rows=4096, cols=4096, block=128)[1] == pytest.approx(2.5e-7 * 4096)
    gemm = next(c for c in CASES if c.name == "gemm_register_blocked")
    assert gemm.tolerances(m=64, n=64, k=64) == (1e-4, 1e-4)


def test_plan_is_shape_major_and_covers_every_shape():
    p = mk.plan(ALL)
    assert len(p) == sum(len(c.shapes) for c in ALL)
    firsts = p[:len(ALL)]
    assert [c.name for c, _, _ in firsts] == [c.name for c in ALL]
    assert all(label == c.shapes[0][0] for c, label, _ in firsts)
    case, label, size = mk.find(ALL, f"jacobi_step{mk.SEP}4096x4096/32x4")
    assert case.name == "jacobi_step" and size["block"] == (32, 4)


FAKE_TIMING = {"median_s": 2e-5, "min_s": 1.9e-5, "max_s": 2.4e-5, "reps": 5, "inner": 90,
               "samples_s": [2e-5, 1.9e-5, 2.1e-5, 2.4e-5, 2e-5], "method": "queued_behind_spin",
               "host_bound": False, "host_bound_retaken": 0}


def test_record_has_the_documented_fields():
    case = CASES[0]
    label, size = case.shapes[0]
    rec = mk.kernel_record(case, label, size, (128, 128, 1), (16, 16, 1), 0, FAKE_TIMING, [],
                           (0.0, 0.0), 32 * 2**20, 5, 50 * 2**20)
    assert tuple(rec) == mk.RECORD_KEYS == OTHER_KEYS["kernels"]
    assert rec["kernel"] == "transpose_naive" and rec["shape"] == "4096x4096"
    assert rec["size"] == {"rows": 4096, "cols": 4096} and rec["grid"] == [128, 128, 1]
    assert rec["ok"] and rec["mismatches"] == [] and rec["median_s"] == 2e-5
    assert rec["rotation_bytes"] == 5 * 32 * 2**20 and rec["cold_l2"]
    assert rec["counters"] is None and rec["counters_note"] == "not profiled"
    warm = mk.kernel_record(case, label, size, (1,), (32,), 0, FAKE_TIMING, ["args[1]: differ"],
                            (0.0, 0.0), 2**20, 4, 50 * 2**20)
    assert not warm["ok"] and warm["mismatches"] == ["args[1]: differ"] and not warm["cold_l2"]


def _ncu_csv(names, units=None):
    head = ["ID", "Kernel Name"] + list(mk.METRICS)
    unit = {"gpu__time_duration.sum": "nsecond", "sm__warps_active.avg.pct_of_peak_sustained_active": "%"}
    units = units or {}
    urow = ["", ""] + [units.get(m, unit.get(m) or ("byte" if "bytes" in m else
                       "" if "conflicts" in m else "inst")) for m in mk.METRICS]
    rows = [head, urow]
    for i, n in enumerate(names):
        rows.append([str(i), n, "20,480"] + [str(1000 * (j + 1) + i) for j in range(len(mk.METRICS) - 1)])
    text = "\n".join(",".join(f'"{x}"' for x in r) for r in rows)
    return "==PROF== Connected to process 1\n" + text + "\n==PROF== Disconnected\n"


def test_counters_from_an_ncu_csv_fill_the_records():
    case = CASES[0]
    recs = [mk.kernel_record(case, label, size, (1,), (32,), 0, FAKE_TIMING, [], (0, 0), 2**20, 1,
                             2**20) for label, size in case.shapes[:2]]
    kernels = mk.read_counters_csv(_ncu_csv(["_ZN6cudapy8__main__15transpose_naiveB2v1E"] * 2))
    assert mk.attach_counters(recs, kernels) is None
    c = recs[1]["counters"]
    assert tuple(c) == mk.COUNTER_KEYS and recs[1]["counters_note"] is None
    assert c["gpu__time_duration.sum"] == pytest.approx(20480e-9)
    assert c["smsp__inst_executed.sum"] == 1001
    assert c["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] == 3001
    # a launch too many, or another kernel's name: nothing attached, a note
    fresh = [dict(r, counters=None) for r in recs]
    assert "profiled 3 launches" in mk.attach_counters(fresh, kernels + kernels[:1])
    assert "is not transpose_naive" in mk.attach_counters(
        fresh, mk.read_counters_csv(_ncu_csv(["relu_kernel"] * 2)))
    assert all(r["counters"] is None for r in fresh)
    with pytest.raises(ValueError, match="l1tex__t_bytes.sum in 'inst'"):
        mk.read_counters_csv(_ncu_csv(["k"], units={"l1tex__t_bytes.sum": "inst"}))


def test_measure_one_checks_with_compare_under_the_simulator(monkeypatch):
    """A small stencil end to end on numba's simulator (a fake timer): the launch checked
    against numpy, buffer sets rotated by each timed launch; a wrong reference fails."""
    from numba import cuda
    case = next(c for c in CASES if c.name == "stencil_1d")
    calls = []

    def timer(launch_on, reps):
        for _ in range(3):
            launch_on(0)
        calls.append(reps)
        return FAKE_TIMING
    # 8000 bytes of arrays against a 5000-byte "L2": 2 sets span three L2s
    rec = mk.measure_one(cuda, case, "tiny", {"n": 1000}, seed=1, l2_bytes=5000, timer=timer)
    assert rec["ok"] and rec["mismatches"] == [] and calls == [mk.REPS]
    assert rec["working_set_bytes"] == 8000 and rec["buffer_sets"] == 2 and rec["cold_l2"]
    assert rec["grid"] == [8] and rec["block"] == [128] and rec["size"] == {"n": 1000}
    monkeypatch.setattr(mk, "MAX_SETS", 1)            # capped: warm, and the record says so
    warm = mk.measure_one(cuda, case, "tiny", {"n": 1000}, seed=1, l2_bytes=5000, timer=timer)
    assert warm["buffer_sets"] == 1 and not warm["cold_l2"] and warm["ok"]
    wrong = dataclasses.replace(case, expected=lambda args: {1: np.zeros(args[0].size, np.float32)})
    bad = mk.measure_one(cuda, wrong, "tiny", {"n": 1000}, seed=1, l2_bytes=5000, timer=timer)
    assert not bad["ok"] and bad["mismatches"][0].startswith("args[1]:")
    # the same messages compare gives
    assert isinstance(wrong, Case) and compare is not None


class _FakeCuda:
    class _Dev:
        L2_CACHE_SIZE = 50 * 2**20

    def get_current_device(self):
        return self._Dev()


def test_run_keeps_every_kernel_when_the_deadline_cuts(monkeypatch):
    seen = []

    def fake(c, case, label, size, seed, l2):
        seen.append((case.name, label))
        return mk.kernel_record(case, label, size, (1,), (32,), 0, FAKE_TIMING, [], (0, 0), 2**20,
                                1, l2)
    monkeypatch.setattr(mk, "measure_one", fake)
    monkeypatch.setattr(mk.shutil, "which", lambda name: None)
    clock = iter(range(10**6))                          # a second passes at each reading
    monkeypatch.setattr(mk.time, "time", lambda: float(next(clock)))
    out = mk.run_kernels(_FakeCuda(), deadline_s=len(ALL))
    names = [r["kernel"] for r in out["records"]]
    assert names == [c.name for c in ALL]              # every first shape, nothing more
    assert len(out["skipped"]) == len(mk.plan(ALL)) - len(ALL)
    assert all(r["counters_note"] == "no ncu on PATH" for r in out["records"])
    assert out["metrics"] == list(mk.METRICS)


def test_registered_as_a_suite(capsys, tmp_path):
    assert "kernels" in SUITES
    assert main(["measure", "kernels", "--out", str(tmp_path), "--deadline", "30"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("roofsim: error: no GPU") and err.count("\n") == 1


FAKE_NCU = r'''#!{python}
import os
import sys
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\nVersion 2099.1.0.0 (fake)")
    sys.exit(0)
sys.path[:0] = [{tests!r}, os.path.dirname({tests!r})]
from test_measure_kernels import _ncu_csv
items = args[args.index("--child") + 2:]
if {sleep}:
    import time
    time.sleep(30)
print(_ncu_csv(["_Z6cudapy" + i.split("::")[0].rpartition(".")[2] + "B1v" for i in items]))
'''


def _fake_ncu(tmp_path, monkeypatch, sleep=False):
    import os
    import sys
    d = tmp_path / "bin"
    d.mkdir()
    ncu = d / "ncu"
    ncu.write_text(FAKE_NCU.format(python=sys.executable, tests=os.path.dirname(__file__),
                                   sleep=sleep))
    ncu.chmod(0o755)
    monkeypatch.setenv("PATH", f"{d}{os.pathsep}{os.environ['PATH']}")


def _fake_measure(c, case, label, size, seed, l2):
    return mk.kernel_record(case, label, size, (1,), (32,), 0, FAKE_TIMING, [], (0, 0), 2**20, 1, l2)


def test_run_profiles_each_record_once_under_ncu(tmp_path, monkeypatch):
    """ncu (a stand-in on PATH) over chunks of records, case by case: every record gets
    the counters of its own launch; the raw CSV of each run is kept."""
    _fake_ncu(tmp_path, monkeypatch)
    monkeypatch.setattr(mk, "measure_one", _fake_measure)
    monkeypatch.setattr(mk, "CHUNK", 5)
    cases = [c for c in ALL if c.name in ("transpose_naive", "stencil_1d", "examples.softmax")]
    out = mk.run_kernels(_FakeCuda(), cases=cases)
    recs = out["records"]
    assert len(recs) == 3 + 2 + 2 and len(out["ncu_csv"]) == 2 and "fake" in out["ncu"]
    assert all(r["counters"] and r["counters_note"] is None for r in recs)
    for r in recs:
        assert r["kernel"].rpartition(".")[2] in r["counters"]["ncu_kernel"]
    # case-major under ncu: transpose_naive's three shapes are launches 0, 1, 2 of run 1
    t = [r["counters"]["smsp__inst_executed.sum"] for r in recs if r["kernel"] == "transpose_naive"]
    assert sorted(t) == [1000, 1001, 1002]


def test_an_ncu_run_past_the_deadline_is_ended_and_noted(tmp_path, monkeypatch):
    _fake_ncu(tmp_path, monkeypatch, sleep=True)
    recs = [_fake_measure(None, ALL[0], label, size, 0, 2**20) for label, size in ALL[0].shapes]
    mk._profile(recs, 0, timeout_s=2)
    assert all(r["counters"] is None and "ran past 2 s" in r["counters_note"] for r in recs)


def test_the_child_ncu_profiles_launches_each_item_once(monkeypatch):
    """The process under ncu: each CASE::SHAPE set up as the timing was and launched
    once (here a tiny shape, on numba's simulator)."""
    case = next(c for c in CASES if c.name == "stencil_1d")
    launched = []

    class Counting:
        def __getitem__(self, conf):
            def go(*args):
                launched.append(conf)
                case.kernel[conf](*args)
            return go
    tiny = dataclasses.replace(case, kernel=Counting(), shapes=(("tiny", {"n": 300}),))
    monkeypatch.setattr(mk, "all_cases", lambda: [tiny])
    mk._child(0, [f"stencil_1d{mk.SEP}tiny"])
    assert launched == [((3,), (128,), 0, 0)]

"""The atomic_trace suite without a GPU: its traced CAS loop under numba's simulator
(stand-ins for %smid and %globaltimer), its records' closed-form checks, and the PTX
that gives the two registers to the real kernel."""
import numpy as np
from numba import cuda

from simulator.measure import micro, suites


def test_the_traced_cas_loop_counts_every_success_once():
    """2 blocks of 2 warps, 12 lanes each on its own word: every word ends at 4, and the
    last value each warp's lane 0 found is its place among the successes (0..3 once)."""
    kernel = micro.cas_trace_kernel()
    counter = np.zeros(32, np.int32)
    tries, sm = np.zeros(4, np.int32), np.zeros(4, np.uint32)
    seen = np.full((4, 12), -1, np.int32)
    t0, t1 = np.zeros(4, np.uint64), np.zeros(4, np.uint64)
    kernel[2, 64](counter, 12, tries, seen, sm, t0, t1)
    assert np.array_equal(counter, np.r_[np.full(12, 4), np.zeros(20)])
    assert (tries >= 1).all() and tries.sum() <= 4 * 5 // 2 + 4
    last = seen[np.arange(4), tries - 1]
    assert sorted(last) == [0, 1, 2, 3]
    # each try found a value no smaller than the one before
    for w in range(4):
        assert (np.diff(seen[w, :tries[w]]) >= 0).all()


def test_skips_are_the_successes_missed_between_tries():
    assert suites._skips(np.array([0, 1, 3, 3 + 40, -1]), 4) == "12z"
    assert suites._skips(np.array([5]), 1) == ""


def test_the_suite_writes_one_record_per_launch_with_its_checks():
    recs = suites.run_atomic_trace(cuda, shapes=((2, 64),))
    assert [(r["lanes"], r["launch"]) for r in recs] == [(1, 0), (1, 1), (12, 0), (12, 1)]
    for r in recs:
        assert r["ok"], r
        assert r["total_tries"] == r["lanes"] * sum(r["tries"])
        assert r["first_come_tries"] == r["lanes"] * 4 * 5 // 2
        assert ("skips" in r) == (r["launch"] == 0)
        if "skips" in r:
            assert [len(s) for s in r["skips"]] == [t - 1 for t in r["tries"]]


def test_the_ptx_reads_the_two_special_registers():
    text = micro.SM_CLOCK_PTX.read_text()
    assert "mov.u32 %r1, %smid;" in text and "mov.u64 %rd1, %globaltimer;" in text
    for name in ("roofsim_smid", "roofsim_globaltimer"):
        assert f".visible .func (.param .b{'32' if 'smid' in name else '64'} func_retval0) {name}()" in text


def test_ptxas_assembles_the_ptx(tmp_path):
    """ptxas (NVIDIA's PyPI wheel, a dependency) assembles the file for sm_90."""
    import subprocess

    from simulator.kernelcode.toolchain import tool_path
    out = subprocess.run([tool_path("ptxas"), "-arch=sm_90", "-c", str(micro.SM_CLOCK_PTX),
                          "-o", str(tmp_path / "a.o")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr

"""Teaching views on any kernel: SIMT efficiency and bank conflicts against closed forms
and Nsight Compute's counts, the source view's line attribution, the teaching suite's
scoring, and the CLI's --source and --arg."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import simulator as rs
from simulator.analysis import kernel_suite as ks
from simulator.kernelcode import compiled, timing
from simulator.kernelcode import toolchain as tc
from simulator.kernelcode.source import annotate, kernel_lines, python_lines

ROOT = Path(__file__).resolve().parents[1]
TEACHING = ROOT / "examples" / "teaching.py"
MEASURED = json.loads((ROOT / "data" / "measurements" / "h100-sxm" / "teaching.json").read_text())
H100 = rs.load_hardware("h100-sxm")


def _launch(name, **size):
    return rs.load_launcher(f"{TEACHING}:launch_{name}", **size)


def _efficiency(name, hw=H100, **size):
    """SIMT efficiency of the traced warps of a full-mode trace (no engine)."""
    kernel, grid, block, args = _launch(name, **size)
    c = compiled.compile(kernel, list(args), timing.cc_of(hw))
    _, tr, _ = timing.trace_program(c, kernel, hw, grid, block, list(args), mode="full")
    return timing._popcount(tr.masks).sum() / (32 * len(tr.masks)), tr, c


def _traced_efficiency(kernel, grid, block, args, hw=H100):
    c = compiled.compile(kernel, list(args), timing.cc_of(hw))
    _, tr, _ = timing.trace_program(c, kernel, hw, grid, block, list(args), mode="full")
    return timing._popcount(tr.masks).sum() / (32 * len(tr.masks))


def test_a_called_subroutine_runs_with_the_lanes_of_its_inlined_function():
    """f64_calls: ptxas CALLs NVVM's fp64 slow paths (pow, sin's large-argument
    reduction, lgamma) and the PTX emulator runs them inlined; their branches and loops
    issue as each warp ran them, under its own lanes, so SIMT efficiency is Nsight
    Compute's on the H100 (kernels suite, n=2^18: 0.646) -- not 1.0, which the
    subroutines' straight path under the caller's lanes gave."""
    from workloads.kernelsuite import all_cases
    case = next(c for c in all_cases() if c.name == "f64_calls")
    rec = next(r for r in json.loads((ROOT / "data" / "measurements" / "h100-sxm" /
                                      "kernels.json").read_text())["records"]
               if r["kernel"] == "f64_calls" and r["ok"])
    c = rec["counters"]
    ncu = c["smsp__thread_inst_executed.sum"] / c["smsp__inst_executed.sum"] / 32
    grid, block, args, _ = case.setup(np.random.default_rng(0), n=1 << 13, block=128)
    eff = _traced_efficiency(case.kernel, grid, block, args)
    assert abs(eff - ncu) <= ks.SIMT_GOAL, (eff, ncu)


def _ncu_efficiency(kernel):
    r = next(r for r in MEASURED["records"] if r["kernel"] == f"teaching.{kernel}")
    c = r["counters"]
    return c["smsp__thread_inst_executed.sum"] / c["smsp__inst_executed.sum"] / 32


@pytest.mark.parametrize("name,size", [
    ("reduce_interleaved", {"n": 1 << 13}), ("reduce_strided", {"n": 1 << 13}),
    ("reduce_sequential", {"n": 1 << 13}), ("reduce_first_add", {"n": 1 << 14}),
    ("reduce_warp_shuffle", {"n": 1 << 14}), ("branch_in_warp", {"n": 1 << 12}),
    ("branch_at_warp", {"n": 1 << 12}), ("transpose_tile32", {"rows": 64, "cols": 64})])
def test_simt_efficiency_is_nsight_computes_within_the_goal(name, size):
    """Every block of these kernels does the same work, so the efficiency of a small
    launch is the measured one's (2^24 elements, 4096x4096 on the H100)."""
    eff, _, _ = _efficiency(name, **size)
    assert abs(eff - _ncu_efficiency(name)) <= ks.SIMT_GOAL


def test_a_branch_inside_a_warp_runs_both_paths_at_half_width():
    """Closed form: each path's loop runs with 16 of 32 lanes in every warp; splitting at
    warp boundaries runs every instruction with all 32."""
    eff, tr, c = _efficiency("branch_in_warp", n=1 << 11)
    lanes = timing._popcount(tr.masks)
    assert set(np.unique(lanes)) <= {16, 32} and (lanes == 16).mean() > 0.5
    eff_at, tr_at, _ = _efficiency("branch_at_warp", n=1 << 11)
    assert eff_at == 1.0 and eff < 0.6
    # the same thread work: both kernels execute the same thread instructions, about
    assert abs(lanes.sum() / timing._popcount(tr_at.masks).sum() - 1) < 0.05


@pytest.mark.parametrize("name,extra", [("transpose_tile32", 31), ("transpose_tile33", 0)])
def test_bank_conflicts_of_the_transposes_are_the_closed_form(name, extra):
    """A 32x32 float tile read down a column: 32 lanes, one bank, 32 passes (31 beyond
    the first) for each of a warp's 4 column reads; 8 warps a block. The 32x33 tile and
    the row writes: none. 16 blocks of 32x32 elements in a 128x128 matrix."""
    kernel, grid, block, args = _launch(name, rows=128, cols=128)
    r = rs.simulate_kernel(kernel, grid, block, args, hw=H100, mode="full")
    assert r.bank_conflicts == 16 * 8 * 4 * extra
    passes = {s["text"].split()[0]: s["shared_passes"] / s["shared_instructions"]
              for s in r.extra["sass"] if s.get("shared_instructions")}
    assert passes == {"STS": 1.0, "LDS": 1.0 + extra}   # per execution, each of the 4 unrolled


def test_bank_conflicts_are_nsight_computes_within_the_goal_where_many():
    """The 32x32 tile's conflicts at the measured 4096x4096, against ncu's."""
    rec = next(r for r in MEASURED["records"] if r["kernel"] == "teaching.transpose_tile32"
               and r["shape"] == "4096x4096")
    c = rec["counters"]
    measured = (c["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]
                + c["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"])
    predicted = (4096 // 32) ** 2 * 8 * 4 * 31          # the closed form the engine meets above
    assert abs(predicted / measured - 1) <= ks.CONFLICTS_GOAL


def test_source_lines_name_the_kernels_own_lines_and_the_modulos_line():
    kernel, grid, block, args = _launch("reduce_interleaved", n=4096)
    cc = timing.cc_of(rs.load_hardware("gtx480"))
    ptx = tc.kernel_ptx(kernel, args, cc).ptx
    lines = python_lines(ptx, tc.kernel_ptx_lines(kernel, args, cc))
    path, first, last = kernel_lines(kernel)
    src = Path(path).read_text().splitlines()          # the kernel's own file
    assert lines and all(f == path and first <= n <= last for f, n in lines.values())
    # every remainder instruction (NVVM names it line 0: its 32- and 64-bit paths) lands
    # on the line of the modulo
    modulo = next(i for i, t in enumerate(src, 1) if "tid % (2 * s)" in t and first <= i <= last)
    rems = [ln for ln, text in enumerate(ptx.splitlines(), 1) if text.strip().startswith("rem.")]
    assert rems and all(lines[ln] == (path, modulo) for ln in rems)


def test_annotate_sums_instructions_by_line_and_calls_at_their_caller():
    rows = [{"ptx_line": 10, "warp_instructions": 4.0, "thread_instructions": 128.0},
            {"ptx_line": 11, "warp_instructions": 2.0, "thread_instructions": 16.0,
             "stall_memory": 30.0, "stall_dependency": 10.0, "stall_cycles": 40.0},
            {"ptx_line": 0, "called_from_ptx_line": 11, "warp_instructions": 6.0,
             "thread_instructions": 192.0},
            {"ptx_line": 0, "warp_instructions": 1.0, "thread_instructions": 32.0}]
    t = annotate(rows, {10: ("k.py", 3), 11: ("k.py", 4)})
    assert t[("k.py", 3)]["simt_efficiency"] == 1.0
    assert t[("k.py", 4)]["warp_instructions"] == 8.0
    assert t[("k.py", 4)]["simt_efficiency"] == (16 + 192) / (32 * 8)
    assert t[("k.py", 4)]["stall_memory"] == 30.0 and t[("k.py", 4)]["stall_cycles"] == 40.0
    assert t[(None, 0)]["warp_instructions"] == 1.0


def test_rankings_and_pairs_score_the_predicted_order():
    def row(k, measured, predicted):
        return {"kernel": f"teaching.{k}", "shape": "s", "measured_seconds": measured,
                "engine_seconds": predicted}
    rows = [row("transpose_tile32", 2.0, 3.0), row("transpose_tile33", 1.0, 1.0),
            row("branch_in_warp", 2.0, 1.0), row("branch_at_warp", 1.0, 2.0)]
    ranks = {tuple(r["measured"]): r["same"] for r in ks.rankings(rows)}
    assert ranks == {("teaching.transpose_tile32", "teaching.transpose_tile33"): True,
                     ("teaching.branch_in_warp", "teaching.branch_at_warp"): False}
    assert ks.pairs_in_order(rows) == (1, 2)


def _cli(*a):
    return subprocess.run([sys.executable, "-m", "simulator", *a], capture_output=True,
                          text=True, cwd=ROOT)


def test_cli_source_view_puts_conflicts_on_the_column_read():
    p = _cli("simulate", "kernel", "examples/teaching.py:launch_transpose_tile32", "--hw",
             "gtx480", "--arg", "rows=64", "--arg", "cols=64", "--source", "--top", "3")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "SIMT efficiency 100.0%" in out and "bank conflicts 3,968 passes" in out
    read = next(line for line in out.splitlines() if "out[y + j, x] = tile[tx, ty + j]" in line)
    write = next(line for line in out.splitlines() if "tile[ty + j, tx] = a[y + j, x]" in line)
    # line, warp inst, SIMT, ..., shared passes, conflicts: the read's conflicts are 31 per
    # pass-free access (4 reads x 8 warps x 4 blocks x 31)
    assert "3,968" in read and "3,968" not in write


@pytest.mark.parametrize("argv,message", [
    (["--arg", "nn=5"], "takes no argument 'nn' (its others: n)"),
    (["--arg", "n"], "--arg 'n': expected NAME=VALUE"),
    (["--arg", "n=1", "--arg", "n=2"], "--arg n: given twice"),
    (["--arg", "grid=4"], "the grid is its own argument")])
def test_cli_launcher_arguments_refuse_bad_ones_in_one_line(argv, message):
    p = _cli("simulate", "kernel", "examples/teaching.py:launch_reduce_sequential", "--hw",
             "gtx480", *argv)
    assert p.returncode == 2 and message in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_timeline_marks_where_a_warp_diverges_and_its_issues_carry_their_lanes():
    from simulator.analysis.traces import simt_trace
    fermi = rs.load_hardware("gtx480")
    marks = {}
    for name in ("branch_in_warp", "branch_at_warp"):
        kernel, grid, block, args = _launch(name, n=512)
        r = rs.simulate_kernel(kernel, grid, block, args, hw=fermi, mode="full", trace=20000)
        ev = simt_trace(r, fermi.clock_hz)["traceEvents"]
        lanes = {e["args"]["lanes"] for e in ev if e.get("cat") == "issue"}
        marks[name] = [e["name"] for e in ev if e.get("cat") == "divergence"]
        assert lanes == ({16, 32} if name == "branch_in_warp" else {32})
    # every warp of the divergent kernel splits in two (16 warps), the other never
    assert marks["branch_in_warp"].count("diverged: 16 lanes") == 16
    assert marks["branch_at_warp"] == []


def _ptx_conflicts(trace) -> int:
    """Bank-conflict passes of the shared-memory accesses the PTX emulator executed (the
    oracle: 32 banks of 4 bytes, a pass per distinct word in the busiest bank)."""
    base, size = trace["shared"]
    total = 0
    for ev in trace["events"]:
        if ev[3] < 0:
            continue
        a = trace["addresses"][ev[3]]
        a = a[a >= 0]
        if ".shared" not in trace["texts"][ev[1]]:      # generic: the shared window's
            a = a[(a >= base) & (a < base + size)] - base
        if a.size:
            words = np.unique(a // 4)
            total += int(np.bincount(words % 32).max()) - 1
    return total


def test_bank_conflicts_are_those_of_the_accesses_that_ran_with_edge_tiles():
    """The register-blocked GEMM zero-pads its edge tiles with a second, predicated store
    (`@!P STS [R], RZ`) that ptxas hoists beside the real one; it runs only in the trips
    whose tile crosses the edge, so it adds no passes elsewhere (a K of 12: the second of
    two 8-wide trips)."""
    from workloads.kernelsuite import all_cases
    case = {c.name: c for c in all_cases()}["gemm_register_blocked"]
    grid, block, args, shared = case.setup(np.random.default_rng(0), m=40, n=36, k=12)
    em = rs.emulate_kernel(case.kernel, grid, block, [np.copy(a) for a in args], record=True)
    r = rs.simulate_kernel(case.kernel, grid, block, list(args), hw=H100, mode="full",
                           shared_bytes=shared)
    assert r.bank_conflicts == _ptx_conflicts(em.trace) > 0

"""The ``kernels`` suite: users' numba.cuda kernels that roofsim never wrote
(``workloads.kernelsuite``: 35 cases, and ``examples/kernels.py``'s three
launchers), each at its measurement shapes, timed and profiled on the GPU -- the truth
``simulator.kernelcode.timing.simulate_kernel`` is held to.

Timing, one record per (case, shape), as the gemm suite times: the case's ``setup`` at
that shape (inputs from ``numpy.random.default_rng(seed)``, fresh for each record), the
arrays copied to the device in as many buffer sets as cycling through them takes for
each launch to find its own evicted from the L2 (``harness.rotation_sets``: one set when
the working set is twice the L2, else enough to span three L2s, at most ``MAX_SETS``;
``cold_l2`` says whether the sets reached that), one checked launch on the first set
(its outputs against the case's numpy reference with ``cases.compare`` at the shape's
tolerance: ``ok``), then ``harness.time_launch``: launches back to back queued behind a
spin kernel, each on the next buffer set, ``REPS`` samples, median, min and max.

Counters: ``ncu --clock-control none --csv --page raw --print-units base`` over a child
process (``python -m simulator.measure.kernels --child SEED CASE::SHAPE ...``) that
launches each timed (case, shape) once on the same inputs; ncu flushes the caches before
each profiled launch (its default), so each starts cold. The children take ``CHUNK``
records each, case by case (one ncu run each; a kernel compiled once), so a deadline
loses at most the chunk in flight. Each
record's ``counters`` holds ``ncu_kernel`` and the ``METRICS`` (``gpu__time_duration.sum``
in seconds, bytes in bytes, instructions in instructions), or is None with
``counters_note`` saying why (no ncu on PATH, ncu failed, the deadline). The raw CSV of
each ncu run is kept in the suite file (``ncu_csv``), so a CSV this reader refuses can
still be read later.

Deadline (``--deadline S``): records are taken shape-major (every case's first shape,
then every case's second, ...), so a cut keeps every kernel; no record starts once the
time spent plus ``NCU_S_PER_RECORD`` for each record timed (the ncu runs still to come)
passes S, no ncu chunk starts after S, and a chunk still running 60 s after S is ended
(its records noted). What finished is kept: the suite ends by about S + 60 s.
"""
from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from simulator.analysis.kernel_suite import XBAR

METRICS = ("gpu__time_duration.sum", "smsp__inst_executed.sum", "smsp__thread_inst_executed.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
           "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
           "smsp__sass_inst_executed_op_shared_ld.sum", "smsp__sass_inst_executed_op_shared_st.sum",
           "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum", "l1tex__t_bytes.sum",
           "sm__warps_active.avg.pct_of_peak_sustained_active") + XBAR
# XBAR: the L2 traffic the engine counts, what the SMs' L1s and the L2 exchanged over the
# crossbar (lts__t_bytes counts every tag lookup, the far partition's again: the counters
# suite, simulator.measure.counters)
REPS = 5                     # timing samples a record
MAX_SETS = 256               # buffer sets at most (a working set under 600 KB stays warm-ish)
CHUNK = 24                   # (case, shape)s a child process under ncu launches
NCU_S_PER_RECORD = 1.0       # seconds of ncu a record is expected to cost (the deadline's reserve;
                             # the counters suite took 0.36 s a launch on the H100, start included)
SEP = "::"                   # CASE::SHAPE on the child's command line
#: the fields every record has (``counters`` None or a dict of ``COUNTER_KEYS``)
RECORD_KEYS = ("kernel", "shape", "size", "grid", "block", "shared_bytes", "median_s", "min_s",
               "max_s", "samples_s", "reps", "inner", "method", "host_bound", "host_bound_retaken",
               "ok", "mismatches", "rtol", "atol", "working_set_bytes", "buffer_sets",
               "rotation_bytes", "cold_l2", "includes_host_launch_latency", "counters",
               "counters_note")
COUNTER_KEYS = ("ncu_kernel",) + METRICS
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_BLOCK = (1024, 1024, 64)


# ------------------------------------------------------------------ what is measured

from workloads.kernelsuite import all_cases, compare, teaching_cases  # noqa: E402


def plan(cases) -> list:
    """[(case, label, size)] shape-major: every case's first shape, then the second, ..."""
    depth = max(len(c.shapes) for c in cases)
    return [(c, *c.shapes[i]) for i in range(depth) for c in cases if i < len(c.shapes)]


def find(cases, item: str):
    """(case, label, size) of ``CASE::SHAPE``; ValueError naming what is allowed."""
    name, _, label = item.partition(SEP)
    by_name = {c.name: c for c in cases}
    if name not in by_name:
        raise ValueError(f"case = {name!r}: allowed: {', '.join(by_name)}")
    case = by_name[name]
    return case, label, case.shape(label)


def _dims(v, name, limits):
    dims = tuple(int(x) for x in (v if isinstance(v, (tuple, list)) else (v,)))
    if not 1 <= len(dims) <= 3 or any(d < 1 or d > lim for d, lim in zip(dims, limits)):
        raise ValueError(f"{name} = {v!r}: 1 to 3 dimensions, each from 1 to "
                         f"{', '.join(map(str, limits[:len(dims) or 1]))}")
    return dims


def launch_of(case, size, seed):
    """(grid, block, host args, shared bytes) of ``case`` at ``size``: its setup with
    fresh inputs from ``seed``, the launch checked against CUDA's limits."""
    grid, block, args, shared = case.setup(np.random.default_rng(seed), **size)
    grid, block = _dims(grid, "grid", MAX_GRID), _dims(block, "block", MAX_BLOCK)
    if math.prod(block) > 1024:
        raise ValueError(f"block = {block!r}: {math.prod(block)} threads; at most 1024")
    return grid, block, tuple(args), int(shared)


def working_set(args) -> int:
    """Bytes of the launch's arrays."""
    return sum(a.nbytes for a in args if isinstance(a, np.ndarray))


def _jsonable(v):
    if isinstance(v, (tuple, list)):
        return [_jsonable(x) for x in v]
    return v.item() if isinstance(v, np.generic) else v


# ------------------------------------------------------------------ records

def kernel_record(case, label, size, grid, block, shared, timing, problems, tol, ws_bytes,
                  buffer_sets, l2_bytes) -> dict:
    """One (case, shape)'s record from its launch, ``harness.time_launch``'s timing, the
    ``compare`` messages (empty: ok) and the tolerance it used (see ``RECORD_KEYS``)."""
    from simulator.measure.harness import rotation_sets
    rec = {"kernel": case.name, "shape": label, "size": {k: _jsonable(v) for k, v in size.items()},
           "grid": list(grid), "block": list(block), "shared_bytes": int(shared)}
    rec.update({k: timing.get(k) for k in ("median_s", "min_s", "max_s", "samples_s", "reps",
                                           "inner", "method")})
    rec["host_bound"] = bool(timing.get("host_bound", False))
    rec["host_bound_retaken"] = int(timing.get("host_bound_retaken", 0))
    rec.update({"ok": not problems, "mismatches": list(problems)[:3],
                "rtol": float(tol[0]), "atol": float(tol[1]), "working_set_bytes": int(ws_bytes),
                "buffer_sets": int(buffer_sets), "rotation_bytes": int(buffer_sets * ws_bytes),
                "cold_l2": buffer_sets >= rotation_sets(ws_bytes, l2_bytes),
                "includes_host_launch_latency": False, "counters": None,
                "counters_note": "not profiled"})
    return rec


def counters_of(kernel) -> dict:
    """A record's ``counters`` from one ``check.Kernel`` that ``read_ncu`` gives."""
    out = {"ncu_kernel": kernel.name[:120], "gpu__time_duration.sum": kernel.seconds}
    out.update({m: kernel.counters.get(m) for m in METRICS[1:]})
    return out


def attach_counters(recs, kernels) -> str | None:
    """Put ncu's ``kernels`` (one a record, in order) into ``recs``; a note where they
    cannot be matched (then nothing is attached)."""
    if len(kernels) != len(recs):
        return f"ncu profiled {len(kernels)} launches; the child made {len(recs)}"
    for r, k in zip(recs, kernels):
        base = r["kernel"].rpartition(".")[2]
        if base not in k.name:
            return f"ncu's kernel {k.name[:80]!r} is not {base} (record {r['kernel']} {r['shape']})"
    for r, k in zip(recs, kernels):
        r["counters"], r["counters_note"] = counters_of(k), None
    return None


def read_counters_csv(text: str):
    """The kernels of an ncu raw CSV (its quoted lines; ``check.read_ncu``)."""
    from simulator.analysis.check import read_ncu
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "ncu.csv"
        p.write_text("\n".join(line for line in text.splitlines() if line.startswith('"')))
        return read_ncu(p, metrics=METRICS)


# ------------------------------------------------------------------ the GPU

def _buffer_sets(c, args, ws, l2):
    """Copies of the launch's arguments on the device (scalars as they are): enough that
    cycling through them misses the L2 (``harness.rotation_sets``), at most ``MAX_SETS``."""
    from simulator.measure.harness import rotation_sets
    k = min(MAX_SETS, rotation_sets(max(ws, 1), l2))
    try:
        free, _ = c.current_context().get_memory_info()
    except Exception:  # noqa: BLE001 -- numba's simulator has no memory info
        free = None
    if free is not None and k * ws > free // 2:
        raise RuntimeError(f"rotating {k} buffer sets of {ws} bytes needs more than half "
                           f"of the GPU's {free} free bytes")
    return [tuple(c.to_device(a) if isinstance(a, np.ndarray) else a for a in args)
            for _ in range(k)]


def measure_one(c, case, label, size, seed=0, l2_bytes=50 * 2**20, timer=None) -> dict:
    """Check and time ``case`` at shape ``label`` (``size``) on numba.cuda ``c``; the
    record (``kernel_record``). ``timer`` stands in for ``harness.time_launch``."""
    from . import harness
    timer = timer or harness.time_launch
    grid, block, args, shared = launch_of(case, size, seed)
    ws = working_set(args)
    sets = _buffer_sets(c, args, ws, l2_bytes)
    first = sets[0]
    case.kernel[grid, block, 0, shared](*first)
    c.synchronize()
    expected = case.expected(args)                 # the host arrays: still as before
    after = list(args)
    for i in expected:
        after[i] = first[i].copy_to_host()
    tol = case.tolerances(**size)
    problems = compare(case, after, expected, rtol=tol[0], atol=tol[1])
    state = {"i": 0}

    def next_set():
        state["i"] += 1
        return sets[state["i"] % len(sets)]
    t = timer(lambda st: case.kernel[grid, block, st, shared](*next_set()), reps=REPS)
    rec = kernel_record(case, label, size, grid, block, shared, t, problems, tol, ws, len(sets),
                        l2_bytes)
    return rec


def _child(seed, items):
    """Launch each CASE::SHAPE once (the process ncu profiles)."""
    from numba import cuda
    cases = all_cases()
    if any(i.startswith("teaching.") for i in items):
        cases = cases + teaching_cases()
    for item in items:
        case, label, size = find(cases, item)
        grid, block, args, shared = launch_of(case, size, seed)
        dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in args]
        case.kernel[grid, block, 0, shared](*dev)
        cuda.synchronize()


def _profile(recs, seed, timeout_s):
    """One ncu run over a child launching ``recs``' (case, shape)s: its raw CSV, and the
    counters attached to ``recs`` (else a note on each)."""
    items = [f"{r['kernel']}{SEP}{r['shape']}" for r in recs]
    cmd = ["ncu", "--clock-control", "none", "--csv", "--page", "raw", "--print-units", "base",
           "--metrics", ",".join(METRICS), sys.executable, "-W", "ignore", "-m",
           "simulator.measure.kernels", "--child", str(seed), *items]
    # a session of its own: past the deadline, ncu and the child it profiles end together
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
        note = None
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        note = f"ncu ran past {timeout_s:.0f} s (the deadline)"
    if note is None and proc.returncode != 0:
        note = f"ncu failed ({proc.returncode}): {stderr.strip()[-300:]}"
    elif note is None:
        try:
            note = attach_counters(recs, read_counters_csv(stdout))
        except ValueError as e:
            note = f"ncu's CSV refused: {str(e)[:300]}"
    if note:
        for r in recs:
            r["counters_note"] = note
    return stdout


def run_kernels(c, seed=0, deadline_s=None, cases=None) -> dict:
    """Every (case, shape) timed, then profiled under ncu where it is on PATH; returns
    {"records", "metrics", "ncu", "ncu_csv", "cases_note", "skipped"} (``suites.run`` puts
    the records and the rest into the suite file)."""
    start = time.time()
    if cases is None:
        cases = all_cases()
    l2 = c.get_current_device().L2_CACHE_SIZE
    ncu = shutil.which("ncu")
    reserve = NCU_S_PER_RECORD if ncu else 0.0
    todo = plan(cases)
    recs, skipped = [], []
    for case, label, size in todo:
        if deadline_s and time.time() - start + reserve * len(recs) > deadline_s:
            skipped.append(f"{case.name}{SEP}{label}")
            continue
        try:
            r = measure_one(c, case, label, size, seed, l2)
        except (RuntimeError, ValueError) as e:     # too big for the GPU, a bad shape
            skipped.append(f"{case.name}{SEP}{label}: {type(e).__name__}: {str(e)[:200]}")
            continue
        recs.append(r)
        print(f"  {case.name:24s} {label:22s} {r['median_s'] * 1e6:10.1f} us  "
              f"{'ok' if r['ok'] else 'FAILED'}", file=sys.stderr, flush=True)
    # (cases_note: why cases were missing; none are since the examples moved into the suite)
    extra = {"metrics": list(METRICS), "ncu": None, "ncu_csv": [], "cases_note": None,
             "skipped": skipped, "seed": seed}
    if not ncu:
        for r in recs:
            r["counters_note"] = "no ncu on PATH"
        return {"records": recs, **extra}
    version = subprocess.run(["ncu", "--version"], capture_output=True, text=True).stdout
    extra["ncu"] = (version.strip().splitlines() or [None])[-1]
    # case-major under ncu: a child compiles each kernel once for all its shapes
    order = {c.name: i for i, c in enumerate(cases)}
    bycase = sorted(recs, key=lambda r: order[r["kernel"]])
    for i in range(0, len(bycase), CHUNK):
        chunk = bycase[i:i + CHUNK]
        left = None if not deadline_s else deadline_s - (time.time() - start)
        if left is not None and left <= 0:
            for r in chunk:
                r["counters_note"] = "not profiled: the deadline passed"
            continue
        csv = _profile(chunk, seed, timeout_s=max(60.0, left + 60) if left else None)
        if csv is not None:
            extra["ncu_csv"].append(csv)
    return {"records": recs, **extra}


if __name__ == "__main__" and len(sys.argv) > 2 and sys.argv[1] == "--child":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    _child(int(sys.argv[2]), sys.argv[3:])

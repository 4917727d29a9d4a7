"""Validation and sweeps that scale out (Dask), stop on Ctrl-C keeping what finished,
``--l2 cold|warm``, a warm launch's roofline bound, and ``roofsim plan``."""
import csv
import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

import hwmodels
from simulator.analysis.measurements import load_suite
from simulator.analysis.roofline import bound
from simulator.analysis.validate import predict_records, predict_suites
from simulator.parallel import map_tasks
from simulator.simt import api, engine
from workloads.ir import Elementwise

H100 = hwmodels.get("h100-sxm")
DATA = "data/measurements/h100-sxm"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _square(x):
    return x * x


def test_map_tasks_here_and_on_local_processes():
    """The same results in the items' order, run here or on two Dask worker processes;
    the log hears of each group as it finishes."""
    here = map_tasks(_square, range(7), workers=1)
    lines = []
    there = map_tasks(_square, range(7), workers=2, group=lambda x: x % 2, log=lines.append)
    assert here.results == there.results == [x * x for x in range(7)]
    assert not there.interrupted and there.done == 7
    assert sorted(line.split(":")[0] for line in lines) == ["0", "1"]


def test_a_long_run_off_a_terminal_says_how_far_it_got(monkeypatch, capsys):
    """Off a terminal (stderr a pipe or a log) there is no bar: a line every
    NOTE_EVERY_S seconds says how many tasks are done, none after the last; a short run
    says nothing."""
    import simulator.parallel as par
    map_tasks(_square, range(5), workers=1, label="quick")
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(par, "NOTE_EVERY_S", 0.0)
    map_tasks(_square, range(5), workers=1, label="demo")
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" done")[0].strip() for line in lines] == [f"demo: {i} of 5" for i in range(1, 5)]


def test_parallel_validation_equals_the_serial_one():
    """Two worker processes give the rows one process gives, in the file's order."""
    sf = load_suite(DATA, "gemm")
    sub = type(sf)(sf.path, sf.suite, sf.provenance, sf.records[:4])
    serial = predict_records(H100, sub, engine_budget=0)
    par = predict_suites(H100, [sub], engine_budget=0, workers=2)
    assert [r.label for r in par.results] == [r.label for r in serial]
    assert [r.predicted_s("analytic") for r in par.results] == [r.predicted_s("analytic") for r in serial]


def test_validate_every_n_scores_records_0_n_2n(tmp_path):
    """``--every 3`` predicts the records 0, 3, 6, ... of each suite, as the whole run
    predicts them, and says so; ``--every 0`` is refused."""
    args = ["validate", "--hw", "h100-sxm", "--measurements", str(DATA), "--suites", "grid,gemm",
            "--engine-budget", "0", "--workers", "1"]
    whole = _roofsim(*args, "--json", str(tmp_path / "all.json"), "--no-timing")
    part = _roofsim(*args, "--every", "3", "--json", str(tmp_path / "part.json"), "--no-timing")
    assert whole.returncode == 0 and part.returncode == 0, part.stderr
    assert "of records 0, 3, 6, ..." in part.stdout
    rows = {s: json.loads((tmp_path / f"{s}.json").read_text())["rows"] for s in ("all", "part")}
    want = []
    for suite in ("grid", "gemm"):      # the whole run's rows are its ok records, in order
        ok = [i for i, r in enumerate(load_suite(DATA, suite).records) if r.get("ok")]
        mine = [r for r in rows["all"] if r["suite"] == suite]
        assert len(mine) == len(ok)
        want += [r for i, r in zip(ok, mine) if i % 3 == 0]
    assert 0 < len(rows["part"]) == len(want) < len(rows["all"])
    assert rows["part"] == want
    assert json.loads((tmp_path / "part.json").read_text())["every"] == 3
    bad = _roofsim(*args, "--every", "0")
    assert bad.returncode == 2 and "--every" in bad.stderr and "must be >= 1" in bad.stderr


def test_warm_bound_prices_l2_bytes_at_the_l2_and_stays_a_bound():
    """A relu repeated on buffers that fit in the L2: the DRAM term vanishes, the L2's
    prices the bytes, and the engine's warm run is no faster than the bound."""
    op = Elementwise(name="relu", n=1 << 22)
    cold, warm = bound(H100, op, "fp32"), bound(H100, op, "fp32", l2="warm")
    assert warm.seconds < cold.seconds
    assert warm.seconds == pytest.approx(op.min_bytes() / H100.memory_levels()[1].bandwidth_bytes_per_s)
    prob = api.build(H100, "relu", n=1 << 22)
    e = engine.simulate(H100, prob.programs, mode="sampled", l2="warm")
    assert e.seconds >= warm.seconds
    # past the L2 only what exceeds it must cross DRAM
    big = Elementwise(name="relu", n=1 << 26)
    w = bound(H100, big, "fp32", l2="warm").detail.points[0]
    assert w.dram_bytes == big.min_bytes() - H100.l2.size_bytes


def _roofsim(*args, **kw):
    return subprocess.run([sys.executable, "-m", "simulator", *args], capture_output=True,
                          text=True, cwd=ROOT, **kw)


def test_simulate_says_which_l2():
    out = _roofsim("simulate", "simt", "--hw", "gtx480", "--kernel", "relu", "--n", "65536",
                   "--l2", "warm")
    assert out.returncode == 0, out.stderr
    assert "L2 warm" in out.stdout and "est. error" not in out.stdout.split("engine")[0]
    cold = _roofsim("simulate", "simt", "--hw", "gtx480", "--kernel", "relu", "--n", "65536")
    assert "L2 cold" in cold.stdout


def test_plan_json_has_layers_and_totals(tmp_path):
    path = tmp_path / "plan.json"
    out = _roofsim("plan", "--hw", "h100-sxm", "--workload", "resnet50", "--batch", "1",
                   "--plan", "im2col-nhwc", "--mode", "analytic", "--json", str(path))
    assert out.returncode == 0, out.stderr
    doc = json.loads(path.read_text())
    # 106 layers and the input's one transform to NHWC (the input arrives NCHW)
    assert len(doc["layers"]) == 107 and doc["layers"][0]["kernel"] == "layout-transform"
    assert doc["layers"][-2]["kernel"] == "gemm-tiled" and doc["layers"][-1]["layer"] == "fc.bias"
    convs = [r for r in doc["layers"] if r["kind"] == "conv2d"]
    assert len(convs) == 53 and all(r["kernel"] == "conv-im2col" and r["layout"] == "nhwc"
                                    for r in convs)
    assert {r["kind"] for r in doc["layers"]} == {"transform", "conv2d", "batchnorm", "pool2d", "gemm"}
    tot = doc["total_seconds"]
    assert tot["engine"] is None and tot["analytic"] == pytest.approx(
        sum(r["analytic_seconds"] for r in doc["layers"]))
    assert tot["roofline"] < tot["analytic"]
    bad = _roofsim("plan", "--hw", "tpu-v1", "--plan", "direct-nchw")
    assert bad.returncode == 2 and "not a SIMT GPU" in bad.stderr and "Traceback" not in bad.stderr


def test_ctrl_c_during_validate_keeps_the_finished_rows(tmp_path):
    """SIGINT to a running ``roofsim validate``: within a few seconds it writes the rows
    that finished, marked partial, and exits 130 with one line and no traceback."""
    from conftest import warm_engines
    warm_engines(ROOT)              # so that records finish within the sleep below
    csv_path, json_path = tmp_path / "v.csv", tmp_path / "v.json"
    p = subprocess.Popen([sys.executable, "-m", "simulator", "validate", "--hw", "h100-sxm",
                          "--measurements", DATA, "--suites", "grid", "--workers", "1",
                          "--csv", str(csv_path), "--json", str(json_path)],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(25)                       # imports, JIT cache, a few records
    t0 = time.perf_counter()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    waited = time.perf_counter() - t0
    assert p.returncode == 130, (out, err)
    assert "Traceback" not in err and err.strip().endswith("interrupted")
    assert waited < 15
    rows = list(csv.DictReader(csv_path.open()))
    doc = json.loads(json_path.read_text())
    assert doc["partial"] is True and 0 < doc["records_done"] < doc["records_total"]
    assert len(rows) == doc["records_done"] and all(r["partial"] == "True" for r in rows)


def test_ctrl_c_inside_numba_counts_as_an_interrupt():
    """SIGINT inside a numba function surfaces as a SystemError chained to the
    KeyboardInterrupt; map_tasks and the CLI treat it as Ctrl-C, and nothing else."""
    from simulator.parallel import interrupted
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as k:
            raise SystemError("CPUDispatcher(...) returned a result with an exception set") from k
    except SystemError as e:
        assert interrupted(e)
    assert not interrupted(SystemError("other")) and not interrupted(ValueError("x"))


def test_plan_of_a_gemm_takes_no_layout():
    from simulator.analysis.plan import uniform
    layers = uniform("gemm:64x64x64", 1, "im2col-nhwc")
    assert [(lp.kernel, lp.layout) for lp in layers] == [("gemm-tiled", "-")]
    with pytest.raises(ValueError, match="relu:1000'?: no convolution or GEMM to plan"):
        uniform("relu:1000", 1, "direct-nchw")


def test_plan_predicts_a_repeated_shape_once():
    """Layers of one kernel on one shape (a network's repeated blocks) are predicted once:
    the copies equal a prediction of each layer on its own and say which layer they copy."""
    import dataclasses

    from simulator.analysis.plan import LayerPlan, LayerTask, predict_layer, predict_plan
    from workloads.ir import Conv2d
    op = Conv2d(name="a", N=1, C=8, H=8, W=8, K=16, R=3, S=3, stride=1, padding=1, layout="nhwc")
    ops = [op, dataclasses.replace(op, name="b"), dataclasses.replace(op, name="c", K=32),
           dataclasses.replace(op, name="d")]
    layers = [LayerPlan(o, "conv-direct", "direct", "nhwc") for o in ops]
    out, totals = predict_plan(H100, layers, "sampled", workers=1)
    rows = out.finished
    assert [r["layer"] for r in rows] == ["a", "b", "c", "d"]
    assert [r["same_as"] for r in rows] == [None, "a", None, "a"]
    assert rows[1]["engine_wall_seconds"] == 0.0 and rows[0]["engine_wall_seconds"] > 0
    for lp, row in zip(layers, rows):
        own = predict_layer(LayerTask(H100, lp, "sampled", "cold"))
        for k in ("engine_seconds", "analytic_seconds", "roofline_seconds"):
            assert row[k] == own[k], (lp.op.name, k)
    assert totals["engine"] == pytest.approx(sum(r["engine_seconds"] for r in rows))


def test_interrupted_before_any_row_still_writes_a_partial_json(tmp_path, capsys):
    """Ctrl-C before the first row finished: the JSON is written, partial with no rows
    (a script waiting for it sees why it is empty); no CSV or chart of nothing; exit 130."""
    import argparse

    from simulator.cli.outputs import finish
    from simulator.parallel import Outcome
    args = argparse.Namespace(csv=str(tmp_path / "p.csv"), json=str(tmp_path / "p.json"),
                              plot=None)
    out = Outcome(results=[None, None], done=0, interrupted=True, wall_seconds=0.5)
    with pytest.raises(KeyboardInterrupt):
        finish(args, out, [], lambda rs: {"plan": "x", "layers": rs})
    doc = json.loads((tmp_path / "p.json").read_text())
    assert doc == {"plan": "x", "layers": [], "partial": True}
    assert not (tmp_path / "p.csv").exists()
    assert "--csv not written" in capsys.readouterr().out


@pytest.mark.parametrize("delay", [1.0, 1.5, 2.0, 2.5])
def test_ctrl_c_while_the_dask_workers_start(tmp_path, delay):
    """SIGINT while a local Dask cluster starts (issue 25, class 7: it used to be ignored
    there, the run going on to exit 0): the command stops within a second, exit 130, one
    line; no worker process is left. (The engine's plan, not the analytic model's: that
    one is over in 2.3 s, the cluster's start included.)"""
    from conftest import warm_engines
    warm_engines(ROOT)
    p = subprocess.Popen([sys.executable, "-m", "simulator", "plan", "--hw", "h100-sxm",
                          "--workload", "resnet50", "--batch", "32", "--plan", "im2col-nhwc",
                          "--mode", "sampled", "--workers", "2", "--json",
                          str(tmp_path / "p.json")],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    children = psutil.Process(p.pid).children(recursive=True)
    t0 = time.perf_counter()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    waited = time.perf_counter() - t0
    assert p.returncode == 130, (out, err)
    assert err.strip().endswith("roofsim: interrupted"), err
    assert "Traceback" not in err and "distributed" not in err
    assert waited < 1.5
    gone, alive = psutil.wait_procs(children, timeout=5)
    assert not alive, alive


def test_plan_takes_the_workload_s_batch_where_none_is_typed():
    """A default is not a value typed (issue 25, class 6): ``plan --workload conv:n=4,...``
    without --batch runs at batch 4; a typed --batch that disagrees is refused."""
    conv = "conv:n=4,c=16,h=14,w=14,k=16,r=3,s=3,stride=1,pad=1"
    out = _roofsim("plan", "--hw", "h100-sxm", "--workload", conv, "--plan", "direct-nchw",
                   "--mode", "analytic")
    assert out.returncode == 0, out.stderr
    assert f"{conv} batch 4 on h100-sxm" in out.stdout
    bad = _roofsim("plan", "--hw", "h100-sxm", "--workload", conv, "--batch", "2", "--plan",
                   "direct-nchw", "--mode", "analytic")
    assert bad.returncode == 2 and "--batch 2 and n=4" in bad.stderr
    import simulator as rs
    rows, tot = rs.plan_network("h100-sxm", conv, plan="direct-nchw")
    assert rows[0]["shape"].startswith("4x16x14x14 -> 16 3x3/1")


def _interrupt(args, delay, tmp_path, env=None, cpu=False, after=None):
    """``roofsim ARGS`` sent SIGINT after ``delay`` s: (process, stdout, stderr, seconds
    from the signal to its exit). With ``cpu`` the delay is the command's own CPU time, not
    the wall clock: on a machine busy with other tests a wall-clock delay can land in an
    earlier phase than the one it is for. With ``after`` the delay counts from the line of
    its stderr that holds that text (the phase's own announcement)."""
    import threading
    p = subprocess.Popen([sys.executable, "-m", "simulator", *args], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines, seen = [], threading.Event()

    def read():
        for line in p.stderr:
            lines.append(line)
            if after is not None and after in line:
                seen.set()
    reader = None
    if after is not None:
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        seen.wait(timeout=300)
        assert seen.is_set(), f"no {after!r} in its stderr: {''.join(lines)[-2000:]}"
    if cpu:
        me, t_end = psutil.Process(p.pid), time.monotonic() + 20 * delay
        used = me.cpu_times()
        start = used.user + used.system if after is not None else 0.0
        while p.poll() is None and time.monotonic() < t_end:
            used = me.cpu_times()
            if used.user + used.system - start >= delay:
                break
            time.sleep(0.02)
    else:
        time.sleep(delay)
    assert p.poll() is None, "finished before the signal: give it more work"
    t0 = time.perf_counter()
    p.send_signal(signal.SIGINT)
    if reader is None:
        out, err = p.communicate(timeout=60)
    else:
        out = p.stdout.read()
        p.wait(timeout=60)
        reader.join(timeout=60)
        err = "".join(lines)
    return p, out, err, time.perf_counter() - t0


# (what runs at the moment, the command, the delay in the command's CPU seconds): each
# lands in another phase of a long command -- the layer predictions, the oracle's search, the analytic ranking, the
# engine on the best candidates, a suite's problems one by one
MOMENTS = [
    ("plan: predictions", ["plan", "--hw", "h100-sxm", "--workload", "resnet50", "--batch", "8",
                           "--plan", "direct-nhwc", "--mode", "sampled", "--workers", "1"], 4.0),
    ("plan --oracle: predictions", ["plan", "--hw", "h100-sxm", "--workload", "resnet50",
                                    "--oracle", "ORACLE", "--mode", "analytic", "--workers", "1"],
     1.2),      # (of about 2.4 CPU s; the imports take 0.4)
    ("tune: the engine", ["tune", "--hw", "h100-sxm", "--workload", "gemm:2048x2048x2048"], 3.0),
    ("validate counters", ["validate", "--hw", "h100-sxm", "--measurements", DATA, "--suites",
                           "counters"], 5.0),
    ("validate tune", ["validate", "--hw", "h100-sxm", "--measurements", DATA, "--suites",
                       "tune"], 5.0),
]


@pytest.mark.parametrize("what,args,delay", MOMENTS, ids=[m[0] for m in MOMENTS])
def test_ctrl_c_at_any_moment_keeps_what_finished(tmp_path, what, args, delay):
    """Ctrl-C in each phase of plan, tune and validate (issue 25): exit 130 within about a
    second, one line, no traceback; the JSON written, marked partial, with the rows that
    finished (none promised where it stopped before the first), and the CSV with the
    same rows (plan --oracle used to leave it out), none where none finished."""
    from conftest import warm_engines
    warm_engines(ROOT)              # so that the delay lands in the phase it is for
    args = [str(tmp_path / "o.toml") if a == "ORACLE" else a for a in args]
    js, cs = tmp_path / "out.json", tmp_path / "out.csv"
    p, out, err, waited = _interrupt(args + ["--json", str(js), "--csv", str(cs)], delay, tmp_path,
                                     cpu=True)
    assert p.returncode == 130, (out, err)
    assert err.strip().endswith("roofsim: interrupted") and "Traceback" not in err, err
    assert waited < 1.5, waited
    doc = json.loads(js.read_text())
    assert doc["partial"] is True
    rows = next(doc[k] for k in ("layers", "ranking", "problems", "rows") if k in doc)
    assert all(r["partial"] is True for r in rows)
    if rows:
        table = list(csv.DictReader(cs.open()))
        assert len(table) == len(rows) and all(r["partial"] == "True" for r in table)
    else:
        assert not cs.exists() and "--csv not written" in out
    if args[0] == "tune":
        # stopped in the engine's part: every candidate has its analytic time
        assert len(rows) == 11 and all(r["analytic_seconds"] > 0 for r in rows)
    if "--oracle" in args:
        assert "no plan picked" in out and not (tmp_path / "o.toml").exists()


@pytest.mark.parametrize("delay", [0.5, 6.0])
def test_ctrl_c_while_numba_compiles_the_engine(tmp_path, delay):
    """SIGINT during numba's first compile of the engine (an empty cache) in an
    in-process run: it used to end in a segmentation fault now and then (a
    KeyboardInterrupt raised inside the compile); the compile now runs off the main
    thread, and the command stops within a second, exit 130. (The delay is the command's
    CPU time from its announcement of the compile: a fixed delay from its start, 3 s,
    landed before the compile in a fresh clone beside the other tests.)"""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    p, out, err, waited = _interrupt(
        ["validate", "--hw", "h100-sxm", "--measurements", DATA, "--suites", "gemm", "--workers",
         "1", "--json", str(tmp_path / "v.json")], delay, tmp_path, env, cpu=True,
        after="compiling the SIMT engine")
    assert p.returncode == 130, (p.returncode, out, err)
    assert "compiling the SIMT engine" in err and err.strip().endswith("roofsim: interrupted")
    assert waited < 1.5, waited
    doc = json.loads((tmp_path / "v.json").read_text())
    assert doc["partial"] is True and doc["rows"] == []


def test_a_long_plan_says_how_long_and_a_too_large_one_is_refused_up_front(monkeypatch, capsys):
    """Issue 25, class 11: a large plan announces its size before the engine runs (how
    many layers, warp instructions and about how long), and one whose engine state would
    not fit in free memory is refused before any work, naming the layer."""
    from simulator.analysis import plan as pl
    from simulator.simt import engine as eng
    hw = hwmodels.get("h100-sxm")
    net = pl.network("conv:n=2,c=16,h=14,w=14,k=16,r=3,s=3,stride=1,pad=1", None)
    layers = pl.expand(net, pl.uniform_configs(net, "direct-nchw"))
    monkeypatch.setattr(pl, "LONG_RUN_S", 0.0)
    out, tot = pl.predict_plan(hw, layers, "sampled", workers=1)
    err = capsys.readouterr().err
    assert "plan: 1 distinct layers of 1 to predict with the engine (sampled)" in err
    assert "Ctrl-C keeps the rows that finished" in err and out.done == 1
    monkeypatch.setattr(eng, "_free_memory", lambda: 2**20)
    called = []
    monkeypatch.setattr(pl, "_sampled_cost", lambda task: called.append(task) or 1.0)
    with pytest.raises(ValueError, match=r"layer conv \(.*\): simulating this needs about .* GiB "
                                         r"of engine state .* this machine has 0.000977 GiB free"):
        pl.predict_plan(hw, layers, "sampled", workers=1)
    assert not called


def test_ctrl_c_in_the_oracle_s_search_keeps_every_prediction(tmp_path, monkeypatch, capsys):
    """Ctrl-C after the layer predictions, while the dynamic program searches: no plan
    is picked or written, every prediction is in the partial JSON, exit 130."""
    from simulator.analysis import plan as pl
    from simulator.cli import main

    def stopped(net, seconds):
        raise KeyboardInterrupt
    monkeypatch.setattr(pl, "choose", stopped)
    js, oracle, cs = tmp_path / "o.json", tmp_path / "o.toml", tmp_path / "o.csv"
    code = main(["plan", "--hw", "h100-sxm", "--workload", "conv-ablation", "--oracle", str(oracle),
                 "--mode", "analytic", "--workers", "1", "--json", str(js), "--csv", str(cs)])
    out = capsys.readouterr().out
    assert code == 130 and not oracle.exists()
    assert "stopped while searching for the plan (all 108 layer predictions done)" in out
    doc = json.loads(js.read_text())
    assert doc["partial"] is True and len(doc["layers"]) == 108
    # the CSV too (it used to be left out): the same rows, each with its time key
    table = list(csv.DictReader(cs.open()))
    assert len(table) == 108 and all(r["partial"] == "True" and r["key"] for r in table)
    assert [r["layer"] for r in table] == [r["layer"] for r in doc["layers"]]


def test_an_analytic_run_announces_only_what_it_compiles(tmp_path):
    """An analytic run with numba's cache empty compiles the analytic model's warp walk
    alone (about 15 s), and says so; it used to announce the whole engine (80 s) on every
    analytic run until some engine run had filled the cache."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    args = [sys.executable, "-m", "simulator", "simulate", "simt", "--hw", "gtx480", "--kernel",
            "relu", "--n", "4096", "--mode", "analytic"]
    first = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "compiling the SIMT analytic model" in first.stderr
    assert "SIMT engine" not in first.stderr
    again = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "compiling" not in again.stderr


def test_ctrl_c_in_a_systolic_run_keeps_the_finished_layers(tmp_path):
    """``simulate systolic`` runs on a thread of its own; Ctrl-C mid-way used to write
    nothing. Now the layers that finished are in the CSV and the JSON, marked partial, of
    the 54 that ResNet-50 puts on the array (53 convolutions and the FC); exit 130."""
    cs, js = tmp_path / "s.csv", tmp_path / "s.json"
    p, out, err, waited = _interrupt(
        ["simulate", "systolic", "--hw", "systolic-8x8", "--array", "12x12", "--workload",
         "resnet50", "--csv", str(cs), "--json", str(js), "--plot", str(tmp_path / "s.png")],
        2.5, tmp_path, cpu=True)    # (of about 5 CPU s on this project's 2-core machine,
    #                                  2026-12-02, since the array's speed fix: a
    #                                  wall-clock delay on an idle machine could land after
    #                                  the last layer)
    assert p.returncode == 130, (out, err)
    assert err.strip().endswith("roofsim: interrupted") and "Traceback" not in err
    assert waited < 1.5, waited
    doc = json.loads(js.read_text())
    table = list(csv.DictReader(cs.open()))
    assert doc["partial"] is True and doc["layers_total"] == 54
    assert 0 < doc["layers_done"] == len(doc["layers"]) == len(table) < 54
    assert table[0]["layer"] == "conv1" and all(r["partial"] == "True" for r in table)
    assert all(r["partial"] is True for r in doc["layers"])
    assert "--plot not written" in out and not (tmp_path / "s.png").exists()


def test_ctrl_c_in_a_simt_run_still_writes_its_json(tmp_path):
    """``simulate simt --json``: Ctrl-C before the answer writes the JSON, partial, with
    the hardware and kernel asked for (the README's promise); no timeline."""
    js = tmp_path / "s.json"
    p, out, err, waited = _interrupt(
        ["simulate", "simt", "--hw", "h100-sxm", "--kernel", "gemm-naive", "--m", "1024",
         "--n", "1024", "--k", "1024", "--mode", "full", "--json", str(js), "--timeline",
         str(tmp_path / "t.json")], 3.0, tmp_path)
    assert p.returncode == 130, (out, err)
    assert err.strip().endswith("roofsim: interrupted") and waited < 1.5
    doc = json.loads(js.read_text())
    assert doc["partial"] is True and doc["kernel"] == "gemm-naive" and doc["mode"] == "full"
    assert doc["hardware"]["name"] == "h100-sxm" and not (tmp_path / "t.json").exists()

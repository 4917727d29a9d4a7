"""Eager against compiled (``roofsim measure compiled``, ``simulator.analysis.compiled``):
the committed H100 runs read back, the oracle's picks re-derived and held to brute force,
the regret recomputed from the raw files, the suite refused without PyTorch."""
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.analysis import compiled as cp
from simulator.analysis.oracle import dynamic_program
from simulator.cli import main

ROOT = Path(__file__).resolve().parents[1]
FOLDER = ROOT / "data" / "measurements" / "h100-sxm" / "compiled"


def _raw():
    """The records of the committed files that stand (compiled with static shapes, and
    complete), read here without the module under test: one per model and batch."""
    out = []
    for f in sorted(FOLDER.glob("*.json")):
        doc = json.loads(f.read_text())
        if doc["provenance"].get("compile", {}).get("dynamic") is False:
            out += [r for r in doc["records"] if not r["incomplete"]]
    assert len({(r["model"], r["batch"]) for r in out}) == len(out)
    return out


def test_the_committed_runs_cover_both_models_at_three_batches_and_check_their_logits():
    recs = cp.load(FOLDER)
    assert {(r["model"].rsplit(".", 1)[-1], r["batch"]) for r in recs} == {
        (m, b) for m in ("resnet50", "mobilenet_v2") for b in (1, 8, 32)}
    for r in recs:
        assert r["provenance"]["device"].startswith("NVIDIA H100")
        # the earlier runs, left to automatic dynamic shapes, are superseded
        assert cp.static_shapes(r["provenance"]) and not r["incomplete"]
        assert r["chain_vs_model_rel_error"] < 1e-5          # the units chain is the model
        for c, w in list(r["whole"].items()) + list(r["chains"].items()):
            assert w["ok"] and w["rel_error"] < 5e-2, (r["model"], r["batch"], c)
        for ch in r["chains"].values():
            # subtraction telescopes to the last prefix; per-layer events add up to about
            # the queued forward (events between units cost a little)
            assert sum(ch["subtraction"]) == pytest.approx(ch["prefix_s"][-1], rel=1e-9)
            assert sum(ch["per_layer"]) == pytest.approx(ch["queued"]["median_s"], rel=0.05)


def _switch(rec):
    n = len(rec["units"])
    return {k: [None] + [v[i] - rec["isolated"][k.split(">")[0]][i - 1]
                         - rec["isolated"][k.split(">")[1]][i] for i in range(1, n)]
            for k, v in rec["pairs"].items()}


@pytest.mark.parametrize("method", ["per_layer", "subtraction"])
def test_the_oracles_recorded_pick_is_the_dynamic_program_over_the_recorded_times(method):
    done = [r for r in _raw() if f"dp-{method}" in r["plans"]]
    assert len(done) == 6
    for r in done:
        sw = _switch(r)
        assert r["switch_s"] == sw
        times = {c: [max(0.0, t) for t in ch[method]] for c, ch in r["chains"].items()}
        ch = dynamic_program(times, lambda a, b, i: max(0.0, sw[f"{a}>{b}"][i]))
        assert list(ch.configs) == r["plans"][f"dp-{method}"]["configs"]
        assert ch.seconds == pytest.approx(r["plans"][f"dp-{method}"]["predicted_s"], rel=1e-12)


def test_the_dynamic_program_is_brute_force_on_a_measured_prefix():
    """On the first six units of MobileNetV2 at batch 8 (4^6 plans), every plan priced in
    full: the recursion's pick costs what the cheapest does."""
    r = next(r for r in _raw() if r["model"].endswith("mobilenet_v2") and r["batch"] == 8)
    sw = _switch(r)
    k = 6
    times = {c: [max(0.0, t) for t in ch["per_layer"][:k]] for c, ch in r["chains"].items()}

    def cost(plan):
        return sum(times[c][i] for i, c in enumerate(plan)) + sum(
            max(0.0, sw[f"{a}>{b}"][i]) for i, (a, b) in enumerate(zip(plan, plan[1:]), 1)
            if a != b)
    brute = min(itertools.product(list(times), repeat=k), key=cost)
    dp = dynamic_program(times, lambda a, b, i: max(0.0, sw[f"{a}>{b}"][i]))
    assert dp.seconds == pytest.approx(cost(brute), rel=1e-12)
    assert cost(dp.configs) == pytest.approx(cost(brute), rel=1e-12)


def test_regret_is_the_picks_measured_time_over_the_best_forward_measured():
    raw = {(r["model"].rsplit(".", 1)[-1], r["batch"]): r for r in _raw()}
    s = cp.summary(FOLDER)
    rows = [o for o in s["oracle"] if not o["incomplete"]]
    assert len(rows) == 12 == len(s["oracle"])
    for o in rows:
        r = raw[(o["model"], o["batch"])]
        q = {f"whole-{c}": w["queued"]["median_s"] for c, w in r["whole"].items()}
        units = {f"chain-{c}": w["queued"]["median_s"] for c, w in r["chains"].items()}
        e = {f"whole-{c}": w["end_to_end"]["median_s"] for c, w in r["whole"].items()}
        e.update({f"chain-{c}": w["end_to_end"]["median_s"] for c, w in r["chains"].items()})
        plan = r["plans"][f"dp-{o['method']}"]
        mine = r["plans"][f"dp-{o['method']}"]
        if "same_as" in plan:
            mine_q = units[plan["same_as"]]
            mine_e = e[plan["same_as"]]
        else:
            mine_q, mine_e = mine["queued"]["median_s"], mine["end_to_end"]["median_s"]
        for p in r["plans"].values():
            if "queued" in p:
                units[f"p{id(p)}"] = p["queued"]["median_s"]
                e[f"p{id(p)}"] = p["end_to_end"]["median_s"]
        best_q = min(min(q.values()), min(units.values()))
        assert o["regret_queued"] == pytest.approx(mine_q / best_q - 1, rel=1e-9)
        assert o["regret_units"] == pytest.approx(mine_q / min(units.values()) - 1, rel=1e-9)
        assert o["regret_end_to_end"] == pytest.approx(mine_e / min(e.values()) - 1, rel=1e-9)
        assert o["regret_units"] >= 0 and o["regret_queued"] >= o["regret_units"] - 1e-12
        # the oracle prices its pick from the same per-layer times it measures: its total
        # is within a few percent of the pick's queued forward
        assert abs(o["predicted_error"]) < 0.05
        assert o["best_of_s"] <= o["predicted_s"] + 1e-15


def test_a_model_measured_twice_is_refused_naming_both_files(tmp_path):
    f = sorted(FOLDER.glob("*.json"))[0]
    (tmp_path / "a.json").write_text(f.read_text())
    (tmp_path / "b.json").write_text(f.read_text())
    with pytest.raises(ValueError, match=r"measured in both a\.json and b\.json"):
        cp.load(tmp_path)
    # a complete record stands over an incomplete one of the same model and batch
    doc = json.loads(f.read_text())
    cut = json.loads(f.read_text())
    for r in cut["records"]:
        r["incomplete"] = ["switch costs and the oracle's plans: past the deadline"]
    (tmp_path / "b.json").write_text(json.dumps(cut))
    got = cp.load(tmp_path)
    assert len(got) == len(doc["records"])
    assert all(r["file"] == "a.json" and r["superseded"] == ["b.json (incomplete)"] for r in got)
    # a record compiled with static shapes stands over one left to automatic dynamic
    # shapes, even incomplete; the one it stands over names why, and what that one stood over
    static = json.loads(json.dumps(cut))
    static["provenance"]["compile"] = {"dynamic": False}
    (tmp_path / "c.json").write_text(json.dumps(static))
    got = cp.load(tmp_path)
    assert all(r["file"] == "c.json" and r["superseded"] ==
               ["a.json (automatic dynamic shapes)", "b.json (incomplete)"] for r in got)
    (tmp_path / "b.json").unlink()
    (tmp_path / "b.json").write_text(json.dumps({"suite": "micro", "records": []}))
    with pytest.raises(ValueError, match=r"b\.json: suite 'micro', not 'compiled'"):
        cp.load(tmp_path)


def test_the_report_prints_every_model_and_batch():
    out = subprocess.run([sys.executable, "scripts/compiled_report.py"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for m in ("resnet50", "mobilenet_v2"):
        for b in (1, 8, 32):
            assert any(line.split()[:2] == [m, str(b)] for line in out.stdout.splitlines())
    # every model and batch has its switch costs and the oracle's plans measured
    assert "not measured" not in out.stdout


def test_measure_compiled_without_pytorch_exits_2_and_writes_nothing(tmp_path, capsys, no_torch):
    code = main(["measure", "compiled", "--out", str(tmp_path)])
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "compiled: PyTorch is not importable" in err[0], cap
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, message", [
    (["--workload", "vgg16"], "--workload 'vgg16': the compiled suite runs resnet50, mobilenet_v2"),
    (["--plan", "oracle"], "--plan applies to the network suite"),
    (["--batch", "0"], "--batch"),
])
def test_measure_compiled_bad_options_exit_2(tmp_path, capsys, no_torch, argv, message):
    code = main(["measure", "compiled", "--out", str(tmp_path)] + argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0], err

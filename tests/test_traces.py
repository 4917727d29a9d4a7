"""Timelines out: engine Results as Chrome trace files (the Trace Event Format), held to
the format's schema and to the Results they come from."""
import json

import pytest

import simulator as rs
from simulator.analysis.traces import simt_trace, systolic_trace
from simulator.cli import main

PHASES = {"X", "i", "C", "M"}


def _schema(doc):
    """What chrome://tracing and Perfetto need of each event."""
    json.dumps(doc)                                   # plain JSON
    assert isinstance(doc["traceEvents"], list) and doc["displayTimeUnit"] in ("ms", "ns")
    for e in doc["traceEvents"]:
        assert e["ph"] in PHASES and isinstance(e["name"], str) and e["name"]
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name") and e["args"]["name"]
            continue
        assert isinstance(e["ts"], float) and e["ts"] >= 0
        if e["ph"] == "X":
            assert e["dur"] >= 0
        if e["ph"] == "i":
            assert e["s"] in ("g", "p", "t")
        if e["ph"] == "C":
            assert all(isinstance(v, float) for v in e["args"].values())


def _no_overlap(events):
    lanes = {}
    for e in events:
        lanes.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in lanes.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:]))


def test_simt_timeline_is_the_engine_run():
    """Every block once, on the SM the engine ran it, for its cycles; blocks of one SM
    stacked on lanes that never overlap; every issued instruction once (below the cap)."""
    hw = rs.load_hardware("gtx480")
    r = rs.simulate_simt(hw, "matadd", m=64, n=96, mode="full", trace=20_000)
    doc = simt_trace(r, hw.clock_hz)
    _schema(doc)
    t = rs.timeline(r)
    blocks = [e for e in doc["traceEvents"] if e.get("cat") == "block"]
    assert len(blocks) == len(t.blocks["sm"]) == r.launches[0].grid[0] * r.launches[0].grid[1]
    by_id = {e["args"]["block"]: e for e in blocks}
    us = 1e6 / hw.clock_hz
    for b, sm, s, end in zip(t.blocks["id"], t.blocks["sm"], t.blocks["start"], t.blocks["end"]):
        e = by_id[int(b)]
        assert e["pid"] == sm and e["ts"] == pytest.approx(s * us) and e["dur"] == pytest.approx((end - s) * us)
    _no_overlap(blocks)
    issues = [e for e in doc["traceEvents"] if e.get("cat") == "issue"]
    assert len(issues) == r.instructions < 20_000
    launch = next(e for e in doc["traceEvents"] if e.get("cat") == "launch")
    assert launch["dur"] == pytest.approx(r.cycles * us)


def test_systolic_timeline_is_the_folds():
    hw = rs.load_hardware("systolic-8x8")
    res = rs.simulate_systolic(hw, "gemm:64x24x40")
    doc = systolic_trace(res, hw.clock_hz)
    _schema(doc)
    folds = [e for e in doc["traceEvents"] if e.get("cat") == "fold"]
    layer = next(e for e in doc["traceEvents"] if e.get("cat") == "layer")
    # weight stationary: the weights (K = 40 by N = 24) tile the 8x8 array in 5 x 3 folds
    assert len(folds) == res.layers[0].instructions == 5 * 3
    assert all(layer["ts"] <= f["ts"] and f["ts"] + f["dur"] <= layer["ts"] + layer["dur"] + 1e-9
               for f in folds)
    _no_overlap(folds)


def _cli_pipelines(hw, net, res, dataflow):
    """The pipelines as `simulate systolic --timeline` re-ran them before the engine kept
    its own (engine internals, one group's pipeline per layer)."""
    import dataclasses

    from simulator.systolic.engine import ARRAY_KINDS, split_groups
    from simulator.systolic.pipeline import pipeline_layer
    t = res.systolic
    hw_arr = dataclasses.replace(hw, rows=t.rows, cols=t.cols)
    return {op.name: pipeline_layer(hw_arr, split_groups(op)[0], dataflow, trace=True)
            for op in net.ops if op.kind in ARRAY_KINDS}


def _no_wall(o):
    if isinstance(o, dict):
        return {k: _no_wall(v) for k, v in o.items() if k != "wall_seconds"}
    if isinstance(o, list):
        return [_no_wall(v) for v in o]
    return o


def _grouped():
    from workloads import Conv2d, Gemm, Network
    return Network("g", (Conv2d(name="dw", N=1, C=8, H=10, W=10, K=8, R=3, S=3, padding=1, groups=8),
                         Gemm(name="fc", M=4, N=24, K=40)))


@pytest.mark.parametrize("hw_name,net,array,df", [
    ("systolic-8x8", "gemm:64x48x40", None, "ws"),
    ("systolic-4x4", "conv:n=1,c=3,h=8,w=8,k=4,r=3,s=3,stride=1,pad=1", None, "ws"),
    ("systolic-4x4", "mini", (3, 2), "os"),            # layers off the array; a reshaped array
    ("systolic-8x8", "grouped", None, "is"),           # one group's pipeline, as the CLI drew it
])
def test_systolic_timeline_from_the_engine_is_the_rerun_pipeline(hw_name, net, array, df):
    """simulate_systolic(trace=True) keeps the access/execute pipeline's runs in the
    Result, and the timeline drawn from them is the one the CLI drew by running the
    pipeline again; the figures do not change."""
    from mini_net import mini
    hw = rs.load_hardware(hw_name)
    net = {"mini": mini, "grouped": _grouped}.get(net, lambda: rs.load_workload(net))()
    traced = rs.simulate_systolic(hw, net, df, array=array, trace=True)
    plain = rs.simulate_systolic(hw, net, df, array=array)
    assert _no_wall(traced.to_dict()) == _no_wall(plain.to_dict())
    assert set(traced.detail.pipelines) == {lr.workload for lr in traced.layers}
    assert plain.detail.pipelines == {}
    doc = systolic_trace(traced, hw.clock_hz)
    assert doc == systolic_trace(plain, hw.clock_hz, _cli_pipelines(hw, net, plain, df))
    assert any(e.get("cat") == "mxu" for e in doc["traceEvents"])
    assert not any(e.get("cat") in ("mxu", "dma") for e in systolic_trace(plain, hw.clock_hz)["traceEvents"])


@pytest.mark.parametrize("golden,name,hw_name,spec", [
    ("025", "st.json", "systolic-8x8", "gemm:64x48x40"),
    ("026", "st4.json", "systolic-4x4", "conv:n=1,c=3,h=8,w=8,k=4,r=3,s=3,stride=1,pad=1"),
])
def test_systolic_timeline_digest_is_the_golden_one(golden, name, hw_name, spec):
    """tests/golden/cli/025.txt and 026.txt hold the digests of `simulate systolic
    --timeline` files: the engine's own pipelines give them."""
    import hashlib
    import re
    from pathlib import Path
    hw = rs.load_hardware(hw_name)
    ev = systolic_trace(rs.simulate_systolic(hw, spec, trace=True), hw.clock_hz)["traceEvents"]
    digest = hashlib.sha256(json.dumps(ev, sort_keys=True).encode()).hexdigest()[:16]
    text = (Path(__file__).parent / "golden" / "cli" / f"{golden}.txt").read_text()
    want = re.search(rf"== {re.escape(name)}: (\d+) events, sha256 (\w+)", text).groups()
    assert want == (str(len(ev)), digest)


def test_no_pipeline_no_pipeline_lanes():
    hw = rs.load_hardware("systolic-8x8")
    for kw in (dict(stalls="closed-form"), dict(mode="scalesim")):
        res = rs.simulate_systolic(hw, "gemm:64x24x40", trace=True, **kw)
        assert res.detail.pipelines == {}
        assert not any(e.get("cat") in ("mxu", "dma") for e in systolic_trace(res, hw.clock_hz)["traceEvents"])


def test_timeline_options(tmp_path, capsys):
    t = tmp_path / "t.json"
    assert main(["simulate", "simt", "--hw", "gtx480", "--kernel", "matadd", "--m", "32", "--n", "48",
                 "--mode", "full", "--timeline", str(t)]) == 0
    _schema(json.loads(t.read_text()))
    s = tmp_path / "s.json"
    assert main(["simulate", "systolic", "--hw", "tpu-v1", "--workload", "resnet50",
                 "--timeline", str(s)]) == 0
    doc = json.loads(s.read_text())
    _schema(doc)
    ev = doc["traceEvents"]
    layers = [e for e in ev if e.get("cat") == "layer"]
    assert len(layers) == 54
    # the access/execute pipeline's spans: each layer's matrix-unit work ends when the
    # layer does (its stalls included), and every fold has its weights' DMA before it
    clock = 700e6
    for lay in layers[:5]:
        mxu = [e for e in ev if e.get("cat") == "mxu" and lay["ts"] <= e["ts"] < lay["ts"] + lay["dur"]]
        dma = [e for e in ev if e.get("cat") == "dma" and e["name"].startswith("Read_Weights")
               and lay["ts"] <= e["ts"] < lay["ts"] + lay["dur"]]
        assert len(mxu) == lay["args"]["folds"]
        assert max(e["ts"] + e["dur"] for e in mxu) == pytest.approx(lay["ts"] + lay["dur"], abs=1.5e6 / clock)
        first = {e["args"]["fold"]: e["ts"] + e["dur"] for e in dma}
        assert all(first[m["args"]["fold"]] <= m["ts"] + 1e-9 for m in mxu if m["args"]["fold"] in first)
    assert main(["simulate", "simt", "--hw", "gtx480", "--kernel", "relu", "--n", "64",
                 "--mode", "analytic", "--timeline", str(t)]) == 2
    assert "--timeline needs the engine" in capsys.readouterr().err

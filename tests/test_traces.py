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

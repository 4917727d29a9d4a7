"""roofsim check: traces recorded with other people's tools (data/traces/, as the tools
wrote them) mapped to ops and held to their roofline bounds."""
import csv
import json
from pathlib import Path

import pytest

import hwmodels
from simulator.analysis.check import check, read
from simulator.cli import main

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces" / "h100-sxm"
H100 = hwmodels.get("h100-sxm")


def test_resnet50_trace_is_mapped_and_plausible():
    """torchvision's ResNet-50 at batch 8: every kernel joined to its operator, the
    shapes read from the operator's inputs (the stem: 8x3x224x224, 7x7/2, padding 3),
    none faster than its bound."""
    ks = read(TRACES / "torch_resnet50_b8.json")
    doc = check(H100, ks)
    assert len(ks) == 174 and doc["mapped_fraction"] >= 0.9
    assert doc["faster_than_bound"] == 0
    kinds = {k: v["kernels"] for k, v in doc["by_kind"].items()}
    assert kinds["convolution"] == 53 and kinds["pooling"] == 2 and kinds["gemm"] == 1
    stem = next(k.op for k in ks if k.kind == "convolution")
    assert (stem.N, stem.C, stem.H, stem.K, stem.R, stem.stride, stem.padding) == (8, 3, 224, 64, 7, 2, 3)
    assert stem.macs() == 8 * 118_013_952                  # ResNet-50's conv1, 8 images
    fc = next(k.op for k in ks if k.kind == "gemm")
    assert (fc.M, fc.N, fc.K) == (8, 1000, 2048)
    assert doc["total_seconds"] == pytest.approx(sum(k.seconds for k in ks))


def test_gemm_loop_flags_what_its_shapes_overstate():
    """The six torch.mm of the loop map to their GEMMs; `c + c` reads one tensor twice,
    so its shapes overstate its bytes and two of those adds come out faster than the
    bound their shapes give -- the check says so rather than hiding it."""
    ks = read(TRACES / "torch_gemm_loop.json")
    gemms = sorted({(k.op.M, k.op.N, k.op.K) for k in ks if k.kind == "gemm"})
    assert gemms == sorted([(1024, 1024, 1024), (4096, 4096, 4096), (2048, 512, 1024),
                            (8192, 256, 256), (128, 8192, 512), (1000, 3000, 500)])
    doc = check(H100, ks)
    bad = [r for r in doc["kernels"] if r["faster_than_bound"]]
    assert bad and all(r["op"] == "elementwise" and r["shape"].startswith("add") for r in bad)


def test_ncu_csv_times_and_dram_bytes():
    rows = [r for r in csv.reader((TRACES / "ncu_roofsim.csv").read_text().splitlines())]
    head, units = rows[0], rows[1]
    assert units[head.index("gpu__time_duration.sum")] == "ns"
    ks = read(TRACES / "ncu_roofsim.csv")
    assert [k.seconds for k in ks] == pytest.approx(
        [float(r[head.index("gpu__time_duration.sum")].replace(",", "")) * 1e-9 for r in rows[2:]])  # ncu writes 54,848
    doc = check(H100, ks)
    assert doc["mapped_fraction"] == 0 and doc["faster_than_bound"] == 0
    relu = doc["kernels"][0]
    assert relu["name"].startswith("relu") and 0.3 < relu["fraction_of_roof"] < 1


def test_plain_csv(tmp_path):
    """A person's own timings: the op from its spec; a time below the bound flagged."""
    f = tmp_path / "t.csv"
    f.write_text("name,op,seconds\nmine,gemm:4096x4096x4096,0.01\ntoo fast,gemm:4096x4096x4096,1e-4\n")
    doc = check(H100, read(f))
    fast = {r["name"]: r["faster_than_bound"] for r in doc["kernels"]}
    assert fast == {"mine": False, "too fast": True}
    # 2 * 4096^3 FLOP at 66.9 TFLOP/s (fp32) is the bound
    assert doc["kernels"][0]["bound_seconds"] == pytest.approx(2 * 4096**3 / H100.peak_flop_per_s("fp32"), rel=0.01)
    for text, needle in (("name,seconds\na,1\n", "header name,op,seconds"),
                         ("name,op,seconds\na,gemm:4x4x4,fast\n", "line 2: seconds = 'fast'"),
                         ("name,op,seconds\na,gemm:4x4x4,-1\n", "must be a positive"),
                         ("name,op,seconds\na,resnet50,1\n", "is a network"),
                         ("name,op,seconds\na,gemm:4x4,1\n", "line 2: op:")):
        f.write_text(text)
        with pytest.raises(ValueError, match=needle):
            read(f)


def test_check_cli(tmp_path, capsys):
    js, png = tmp_path / "c.json", tmp_path / "c.png"
    code = main(["check", "--hw", "h100-sxm", "--trace", str(TRACES / "torch_resnet50_b8.json"),
                 "--json", str(js), "--plot", str(png)])
    assert code == 0 and png.stat().st_size > 0
    doc = json.loads(js.read_text())
    assert {"kernels", "mapped_fraction", "faster_than_bound"} <= set(doc)
    assert {"name", "seconds", "op", "bound_seconds", "fraction_of_roof",
            "faster_than_bound"} <= set(doc["kernels"][0])
    assert "100.0% of it mapped to ops" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text("[" * 5000 + "]" * 5000)
    assert main(["check", "--hw", "h100-sxm", "--trace", str(bad)]) == 2
    assert main(["check", "--hw", "tpu-v1", "--trace", str(TRACES / "torch_gemm_loop.json")]) == 2
    assert main(["check", "--hw", "h100-sxm", "--trace", str(tmp_path / "none.json")]) == 2


def test_each_shape_is_bounded_once(monkeypatch):
    """A trace repeats its shapes (every step of a loop, every block of a network): check
    computes each shape's bound once (issue 25, class 11)."""
    import importlib
    roofline = importlib.import_module("simulator.analysis.roofline")
    hw = hwmodels.get("h100-sxm")
    kernels = read(TRACES / "torch_resnet50_b8.json")
    calls = []
    real = roofline.bound
    monkeypatch.setattr(roofline, "bound", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    check(hw, kernels)
    shapes = {(k.op.describe(), k.op.dtype) for k in kernels if k.op is not None}
    groups = {k.group for k in kernels if k.op is not None}
    # (the rows themselves are pinned by the check goldens, tests/golden/cli)
    assert len(calls) == len(shapes) < len(groups)

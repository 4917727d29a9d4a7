"""``simulate simt``, ``sweep grid`` and ``sweep layout`` as a user runs them."""
import csv
import json

import pytest

from simulator.cli import main

JSON_KEYS = {"hardware", "kernel", "grid", "block", "op", "engine", "analytic", "roofline"}
RESULT_KEYS = {"predictor", "mode", "cycles", "seconds", "instructions", "wall_seconds", "launches",
               "bytes_by_level", "stalls_by_cause", "flops", "compulsory_bytes",
               "simulated_fraction", "estimated_error"}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_simulate_simt_json(tmp_path, capsys):
    j = tmp_path / "r.json"
    code, out, err = run(capsys, "simulate", "simt", "--hw", "gtx480", "--kernel", "gemm-naive",
                         "--m", "64", "--n", "64", "--k", "32", "--thread-x", "rows", "--json", str(j))
    assert code == 0, err
    d = json.loads(j.read_text())
    assert JSON_KEYS <= set(d)
    e = d["engine"]
    assert RESULT_KEYS <= set(e) and RESULT_KEYS <= set(d["analytic"])
    assert e["cycles"] > 0 and e["seconds"] >= d["roofline"]["seconds"] > 0
    assert e["bytes_by_level"]["dram"] >= d["op"]["min_bytes"] == e["compulsory_bytes"]
    assert e["launches"][0]["occupancy"] > 0 and e["launches"][0]["waves"] > 0
    assert d["grid"] == [4, 4, 1] and "gemm-naive" in out and "analytic model" in out


@pytest.mark.parametrize("argv", [
    ["--kernel", "relu", "--n", "100000"],
    ["--kernel", "matadd", "--m", "32", "--n", "48", "--mode", "full"],
    ["--kernel", "gemm-tiled", "--m", "40", "--n", "40", "--k", "40", "--tile", "8", "--policy", "lrr"],
    ["--kernel", "conv-direct", "--shape", "n=1,c=4,h=8,w=8,k=8,r=3,s=3,stride=1,pad=1",
     "--layout", "nhwc", "--block", "64"],
    ["--kernel", "conv-im2col", "--layer", "layer1.0.conv1", "--mode", "analytic"],
])
def test_simulate_simt_kernels(argv, capsys, tmp_path):
    j = tmp_path / "r.json"
    code, out, err = run(capsys, "simulate", "simt", "--hw", "gtx480", *argv, "--json", str(j))
    assert code == 0, err
    d = json.loads(j.read_text())
    assert JSON_KEYS <= set(d) and RESULT_KEYS <= set(d["analytic"])
    assert (d["engine"] is None) == ("analytic" in argv)


def test_sweep_grid_csv_and_plot(tmp_path, capsys):
    c, p = tmp_path / "s.csv", tmp_path / "s.png"
    code, out, err = run(capsys, "sweep", "grid", "--hw", "gtx480", "--kernel", "relu", "--n", "65536",
                         "--grids", "1-4,15,30", "--blocks", "128,256", "--mode", "full",
                         "--csv", str(c), "--plot", str(p))
    assert code == 0, err
    rows = list(csv.DictReader(c.open()))
    assert len(rows) == 12
    assert {"grid", "block", "engine_seconds", "analytic_seconds", "occupancy", "waves"} <= set(rows[0])
    by = {(r["grid"], r["block"]): float(r["engine_seconds"]) for r in rows}
    assert by[("2", "256")] < by[("1", "256")]          # more blocks, more SMs working
    assert p.read_bytes()[:4] == b"\x89PNG"


def test_sweep_grid_blocks_only(capsys, tmp_path):
    c = tmp_path / "s.csv"
    code, out, err = run(capsys, "sweep", "grid", "--hw", "gtx480", "--kernel", "gemm-naive",
                         "--m", "64", "--n", "64", "--k", "16", "--blocks", "8x8,16x16,32x4",
                         "--csv", str(c))
    assert code == 0, err
    assert [r["block"] for r in csv.DictReader(c.open())] == ["8x8", "16x16", "32x4"]


def test_sweep_layout_resnet50(capsys, tmp_path):
    c = tmp_path / "l.csv"
    code, out, err = run(capsys, "sweep", "layout", "--hw", "gtx480", "--csv", str(c))
    assert code == 0, err
    rows = list(csv.DictReader(c.open()))
    assert len(rows) == 53 and rows[0]["layer"] == "conv1"
    assert all(float(r["nchw_analytic_seconds"]) > 0 and float(r["nhwc_analytic_seconds"]) > 0
               for r in rows)
    assert "total" in out


BAD = [
    (["simulate", "simt", "--hw", "gtx480", "--kernel", "relu", "--n", "100", "--block", "2048"],
     "2048 threads exceed gtx480's 1024 per block"),
    (["simulate", "simt", "--hw", "gtx480", "--kernel", "relu", "--n", "100", "--grid", "0"],
     "--grid '0'"),
    (["simulate", "simt", "--hw", "gtx480", "--kernel", "relu"], "relu needs --n"),
    (["simulate", "simt", "--hw", "gtx480", "--kernel", "gemm-naive", "--m", "8", "--n", "8"],
     "gemm-naive needs --k"),
    (["simulate", "simt", "--hw", "gtx480", "--kernel", "gemm-tiled", "--m", "8", "--n", "8",
      "--k", "8", "--tile", "12"], "--tile: invalid choice: 12 (choose from 8, 16, 32)"),
    (["simulate", "simt", "--hw", "gtx480", "--kernel", "gemm-tiled", "--m", "8", "--n", "8",
      "--k", "8", "--tile", "0"], "--tile: invalid choice: 0"),
    (["simulate", "simt", "--hw", "gtx480", "--kernel", "gemm-naive", "--m", "8", "--n", "8",
      "--k", "8", "--grid", "4"], "--grid applies to relu"),
    (["simulate", "simt", "--hw", "tpu-v1", "--kernel", "relu", "--n", "8"], "not a SIMT GPU"),
    (["simulate", "simt", "--hw", "gtx480", "--kernel", "conv-direct"], "conv-direct needs --shape or --layer"),
    (["simulate", "simt", "--hw", "gtx480", "--kernel", "conv-direct", "--layer", "conv9"],
     "--layer 'conv9' is not a ResNet-50 convolution"),
    (["simulate", "simt", "--hw", "gtx480", "--kernel", "relu", "--n", "8", "--tile", "8"],
     "--tile applies to gemm-tiled"),
    (["simulate", "simt", "--hw", "gtx480", "--kernel", "relu", "--n", "8", "--layout", "nhwc"],
     "--layout applies to conv-direct"),
    (["simulate", "simt", "--hw", "gtx480", "--kernel", "relu", "--n", "8", "--mode", "fast"],
     "invalid choice: 'fast'"),
    (["simulate", "simt", "--hw", "gtx480", "--kernel", "matadd", "--m", "8", "--n", "8",
      "--block", "64x32"], "2048 threads exceed"),
    (["sweep", "grid", "--hw", "gtx480", "--kernel", "gemm-naive", "--m", "8", "--n", "8", "--k", "8",
      "--grids", "1-4", "--blocks", "16x16"], "--grids applies to relu"),
    (["sweep", "grid", "--hw", "gtx480", "--kernel", "relu", "--n", "8", "--grids", "4-1",
      "--blocks", "64"], "--grids '4-1'"),
    (["sweep", "grid", "--hw", "gtx480", "--kernel", "relu", "--n", "8", "--blocks", "64"],
     "relu needs --grids"),
]


@pytest.mark.parametrize("argv,needle", BAD, ids=[" ".join(a)[:70] for a, _ in BAD])
def test_bad_input_one_line_exit_2(argv, needle, capsys):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert needle in err, err
    assert err.count("\n") == 1 and "Traceback" not in err

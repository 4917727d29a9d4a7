"""The command line as a user runs it: outputs, files, and one-line errors with exit 2."""
import csv
import json
import subprocess
import sys

import pytest

from simulator.cli import main

REQUIRED_ROOFLINE_COLUMNS = {"layer", "kind", "flops", "dram_bytes", "intensity_flop_per_byte",
                             "attainable_flop_per_s", "bound_seconds", "bound_by"}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_done_when_command(tmp_path, capsys):
    csv_path, png_path = tmp_path / "out.csv", tmp_path / "out.png"
    code, out, err = run(capsys, "roofline", "--hw", "h100-sxm", "--workload", "resnet50",
                         "--batch", "8", "--csv", str(csv_path), "--plot", str(png_path))
    assert code == 0, err
    assert "layer4.2.conv3" in out and out.count("\n") > 106
    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == 106 and REQUIRED_ROOFLINE_COLUMNS <= set(rows[0])
    assert rows[0]["layer"] == "conv1" and rows[-2]["kind"] == "gemm" and rows[-1]["layer"] == "fc.bias"
    assert all(float(r["attainable_flop_per_s"]) <= 66.91e12 * 1.000001 for r in rows)
    assert png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png_path.stat().st_size > 20000


def test_roofline_json_embeds_hardware_and_workload(tmp_path, capsys):
    j = tmp_path / "r.json"
    code, _, err = run(capsys, "roofline", "--hw", "gtx480", "--workload", "gemm:512x512x512",
                       "--set", "l2.size_bytes=1536KiB", "--json", str(j))
    assert code == 0, err
    data = json.loads(j.read_text())
    assert data["hardware"]["l2"]["size_bytes"] == 1536 * 1024
    assert data["workload"]["layers"][0]["M"] == 512
    assert data["totals"]["flops"] == 2 * 512**3


def test_hw_list_and_show(tmp_path, capsys):
    code, out, _ = run(capsys, "hw", "list")
    assert code == 0 and "tpu-v1" in out and "haswell-e5-2699v3" in out
    toml_path, json_path = tmp_path / "mine.toml", tmp_path / "h.json"
    code, out, _ = run(capsys, "hw", "show", "gtx480", "--set", "sm_count=16", "--toml",
                       str(toml_path), "--json", str(json_path))
    assert code == 0 and "sm.l1.ways" in out and "1.435 TFLOP/s" in out
    assert json.loads(json_path.read_text())["hardware"]["sm_count"] == 16
    code, out, _ = run(capsys, "roofline", "--hw", str(toml_path), "--workload", "relu:1000000")
    assert code == 0 and "gtx480" in out


def test_workload_show(tmp_path, capsys):
    j = tmp_path / "w.json"
    code, out, _ = run(capsys, "workload", "show", "resnet50", "--batch", "2", "--json", str(j))
    assert code == 0 and "layer3.5.conv3" in out
    assert json.loads(j.read_text())["totals"]["macs"] == 2 * 4089184256
    code, out, _ = run(capsys, "workload", "list")
    assert code == 0 and "conv-ablation" in out


def test_datamove(tmp_path, capsys):
    c = tmp_path / "d.csv"
    code, out, err = run(capsys, "datamove", "--hw", "gtx480", "--workload", "resnet50",
                         "--batch", "32", "--onchip-bytes", "4KiB", "--csv", str(c))
    assert code == 0, err
    rows = list(csv.DictReader(c.open()))
    assert len(rows) == 106 and all(int(r["onchip_bytes"]) == 4096 for r in rows)
    assert any(int(r["pebble_bytes"]) > int(r["compulsory_bytes"]) for r in rows)
    assert all(int(r["lower_bound_bytes"]) >= int(r["compulsory_bytes"]) for r in rows)
    assert "network" in out


def test_roofline_compare(tmp_path, capsys):
    p = tmp_path / "tpu.svg"
    code, out, _ = run(capsys, "roofline-compare", "--plot", str(p))
    assert code == 0 and "1349" in out and p.read_text().startswith("<?xml")


BAD = [
    (["roofline", "--hw", "gtx999", "--workload", "resnet50"], "hardware 'gtx999' is unknown"),
    (["roofline", "--hw", "gtx480", "--workload", "alexnet"], "workload 'alexnet' is unknown"),
    (["roofline", "--hw", "gtx480", "--workload", "resnet50", "--set", "l2.sise_bytes=8MiB"],
     "l2.sise_bytes: unknown field"),
    (["roofline", "--hw", "gtx480", "--workload", "resnet50", "--set", "l2.size_bytes=8"],
     "has no unit"),
    (["roofline", "--hw", "gtx480", "--workload", "resnet50", "--set", "sm_count=0"],
     "sm_count = 0: must be > 0"),
    (["roofline", "--hw", "gtx480", "--workload", "resnet50", "--set", "l2.size_bytes=-8MiB"],
     "'-8MiB' is negative"),
    (["roofline", "--hw", "gtx480", "--workload", "conv:n=1,c=3,h=4,w=4,k=8,r=7,s=7"],
     "filter is larger than the padded input"),
    (["roofline", "--hw", "gtx480", "--workload", "conv:n=1,c=3,h=8,w=8,k=8,r=3,s=3,stride=0"],
     "Conv2d.stride = 0"),
    (["roofline", "--hw", "gtx480", "--workload", "gemm:0x4x4"], "Gemm.M = 0"),
    (["roofline", "--hw", "gtx480", "--workload", "resnet50", "--batch", "0"], "batch"),
    (["roofline", "--hw", "gtx480", "--workload", "resnet50", "--dtype", "fp16"],
     "not supported by gtx480"),
    (["roofline", "--hw", "gtx480", "--workload", "resnet50", "--dtype", "fp7"], "invalid choice"),
    (["roofline", "--hw", "gtx480", "--workload", "resnet50", "--plot", "x.bmp"], ".png, .svg or .pdf"),
    (["datamove", "--hw", "gtx480", "--workload", "resnet50", "--onchip-bytes", "65536"],
     "has no unit"),
    (["hw", "show", "nosuch.toml"], "does not exist"),
    (["roofline", "--workload", "resnet50"], "the following arguments are required: --hw"),
    (["frobnicate"], "invalid choice"),
]


@pytest.mark.parametrize("argv,needle", BAD, ids=[" ".join(a)[:60] for a, _ in BAD])
def test_bad_input_one_line_exit_2(argv, needle, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert needle in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_bad_files_one_line_exit_2(tmp_path, capsys):
    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text("schema_version = 1\nfamily = \"simt\"\n[sm\n")
    code, _, err = run(capsys, "hw", "show", str(bad_toml))
    assert code == 2 and "malformed TOML" in err and err.count("\n") == 1
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("Layer, M, N, K,\nfc, 12, x, 3,\n")
    code, _, err = run(capsys, "roofline", "--hw", "gtx480", "--workload", str(bad_csv))
    assert code == 2 and "line 2: N = 'x' is not a positive integer" in err
    assert err.count("\n") == 1


def test_console_script_and_module_entry_points(tmp_path):
    """The installed `roofsim` script and `python -m simulator` behave the same."""
    for cmd in (["roofsim"], [sys.executable, "-m", "simulator"]):
        ok = subprocess.run(cmd + ["hw", "list"], capture_output=True, text=True)
        assert ok.returncode == 0 and "gtx480" in ok.stdout
        bad = subprocess.run(cmd + ["roofline", "--hw", "nope", "--workload", "resnet50"],
                             capture_output=True, text=True)
        assert bad.returncode == 2 and bad.stderr.count("\n") == 1
        assert "Traceback" not in bad.stderr


def test_review_fixes(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # the hardware's native precision when it has no fp32
    code = main(["roofline", "--hw", "tpu-v1", "--workload", "resnet50"])
    assert code == 0 and "tpu-v1, int8" in capsys.readouterr().out
    # a bad plot name is refused before anything is written
    code = main(["roofline", "--hw", "gtx480", "--workload", "gemm:8x8x8", "--csv", "z.csv",
                 "--plot", "z.bmp"])
    assert code == 2 and not (tmp_path / "z.csv").exists()
    capsys.readouterr()
    # outputs never create folders
    code = main(["roofline", "--hw", "gtx480", "--workload", "gemm:8x8x8", "--csv", "no/such/x.csv"])
    assert code == 2 and "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()
    # a key given twice, a file that is not text
    code = main(["roofline", "--hw", "gtx480", "--workload", "conv:n=1,c=3,h=8,w=8,k=4,r=3,s=3,n=2"])
    assert code == 2 and "n is given twice" in capsys.readouterr().err
    (tmp_path / "b.csv").write_bytes(b"\xff\xfe\x00garbage")
    code = main(["roofline", "--hw", "gtx480", "--workload", "b.csv"])
    err = capsys.readouterr().err
    assert code == 2 and "not a text (UTF-8) topology file" in err and err.count("\n") == 1

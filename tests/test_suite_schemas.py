"""The counters and tune suite files (``validate --suites counters|tune``) are checked
record by record on load, before any engine work (issue 25, class 8): each test copies
the committed H100 file into a folder of its own, spoils one field, and expects a
ValueError naming the file, the record and the field -- where the old code raised a
KeyError, StopIteration, IndexError or TypeError, or scored the bad value."""
import json
from pathlib import Path

import pytest

from simulator.analysis import counters as cn
from simulator.analysis import tune
from simulator.cli import main

REAL = Path(__file__).resolve().parents[1] / "data" / "measurements" / "h100-sxm"


def _copy(tmp_path, suite, spoil=None, text=None):
    """tmp_path/<suite>.json: the committed file, ``spoil(records)`` applied, or ``text``
    (the committed file's text through it)."""
    src = (REAL / f"{suite}.json").read_text()
    if text is not None:
        (tmp_path / f"{suite}.json").write_text(text(src))
    else:
        doc = json.loads(src)
        spoil(doc["records"])
        (tmp_path / f"{suite}.json").write_text(json.dumps(doc))
    return tmp_path


def _refused(tmp_path, suite, spoil=None, text=None, *want):
    load = cn.load if suite == "counters" else tune.load
    folder = _copy(tmp_path, suite, spoil, text)
    with pytest.raises(ValueError) as e:
        load(folder)
    msg = str(e.value)
    assert f"{suite}.json" in msg, msg
    for w in want:
        assert w in msg, msg
    return msg


# ---- counters.json

def test_counters_committed_file_loads_unchanged():
    doc = cn.load(REAL)
    raw = json.loads((REAL / "counters.json").read_text())
    assert len(doc["records"]) == 39 and doc["records"] == raw["records"]
    assert doc["records"][0]["problem"] == "gemm-naive=gemm:256x256x256#cols"
    assert doc["records"][0]["instructions"] == 18163712.0


def test_counters_record_without_problem(tmp_path):
    def spoil(rs):
        del rs[3]["problem"]
    _refused(tmp_path, "counters", spoil, None, "record 3", "field 'problem' missing")


def test_counters_unknown_layer(tmp_path):
    def spoil(rs):
        rs[5]["problem"] = "conv-direct=layer9.0.conv2/1@nchw"
    _refused(tmp_path, "counters", spoil, None, "record 5", "'problem'", "layer9.0.conv2",
             "not a ResNet-50 layer")


@pytest.mark.parametrize("problem,want", [
    ("gemm-naive gemm:256x256x256", "KERNEL=WORKLOAD"),
    ("gemm-fast=gemm:256x256x256", "allowed:"),
    ("gemm-tiled=gemm:256x256x256#big", "tile is an integer"),
    ("relu=relu:1024#rows", "variant"),
    ("conv-direct=layer1.0.conv2/x@nchw", "batch 'x'"),
    ("conv-direct=layer1.0.conv2/1@nwhc", "layout 'nwhc'"),
    ("gemm-naive=relu:1024", "computes a GEMM"),
])
def test_counters_unreadable_problem(tmp_path, problem, want):
    def spoil(rs):
        rs[0]["problem"] = problem
    _refused(tmp_path, "counters", spoil, None, "record 0", "'problem'", want)


def test_problem_of_names_an_unknown_layer():
    with pytest.raises(ValueError, match="layer9.0.conv2"):
        cn.problem_of("conv-direct=layer9.0.conv2/1@nchw")


def test_counters_launch_out_of_range(tmp_path):
    def spoil(rs):
        rs[0]["launch"] = 7
    _refused(tmp_path, "counters", spoil, None, "record 0 ('gemm-naive=gemm:256x256x256#cols')",
             "field 'launch' = 7", "from 0 to 0")


@pytest.mark.parametrize("field,value,want", [
    ("instructions", "lots", "field 'instructions' = 'lots'"),
    ("seconds", -1e-5, "field 'seconds' = -1e-05"),
    ("dram_bytes", float("nan"), "field 'dram_bytes' = nan"),
    ("l2_bytes", -1, "field 'l2_bytes' = -1"),
    ("instructions", 0, "field 'instructions' = 0"),
    ("ok", "yes", "field 'ok' = 'yes'"),
])
def test_counters_bad_count(tmp_path, field, value, want):
    def spoil(rs):
        rs[2][field] = value
    _refused(tmp_path, "counters", spoil, None, "record 2", want)


def test_counters_long_value_cut_short(tmp_path):
    def spoil(rs):
        rs[2]["instructions"] = "x" * 500
    msg = _refused(tmp_path, "counters", spoil, None, "record 2", "...")
    assert len(msg) < 400


def test_counters_repeated_key(tmp_path):
    def text(src):
        return src.replace('"launch": 0', '"launch": 0, "launch": 1', 1)
    _refused(tmp_path, "counters", None, text, "key 'launch' repeated")


def test_counters_repeated_launch(tmp_path):
    def spoil(rs):
        rs.append(dict(rs[0]))
    _refused(tmp_path, "counters", spoil, None, "record 39", "repeats record 0")


# ---- tune.json

def test_tune_committed_file_loads_unchanged():
    doc = tune.load(REAL)
    raw = json.loads((REAL / "tune.json").read_text())
    assert len(doc["records"]) == 280 and doc["records"] == raw["records"]
    assert len({r["problem"] for r in doc["records"]}) == 20


@pytest.mark.parametrize("value,want", [
    ("fast", "field 'median_s' = 'fast'"),
    (-1e-5, "field 'median_s' = -1e-05"),
    (float("nan"), "field 'median_s' = nan"),
    (float("inf"), "field 'median_s' = inf"),
])
def test_tune_bad_median(tmp_path, value, want):
    def spoil(rs):
        rs[4]["median_s"] = value
    _refused(tmp_path, "tune", spoil, None, "record 4 ('gemm:256x256x256')", want,
             "number of seconds")


def test_tune_times_out_of_order(tmp_path):
    def spoil(rs):
        rs[4]["min_s"] = rs[4]["max_s"] * 2
    _refused(tmp_path, "tune", spoil, None, "record 4", "must be in that order")


def test_tune_record_without_problem(tmp_path):
    def spoil(rs):
        del rs[1]["problem"]
    _refused(tmp_path, "tune", spoil, None, "record 1", "field 'problem' missing")


def test_tune_unknown_layer(tmp_path):
    def spoil(rs):
        for r in rs:
            if r["problem"] == "conv1/1":
                r["problem"] = "conv9/1"
    _refused(tmp_path, "tune", spoil, None, "('conv9/1')", "not a ResNet-50 layer")


def test_op_of_names_an_unknown_layer():
    with pytest.raises(ValueError, match="conv9"):
        tune.op_of("conv9/1")


def test_tune_unknown_candidate(tmp_path):
    def spoil(rs):
        rs[0]["candidate"] = "gemm-naive thread_x diagonal"
    _refused(tmp_path, "tune", spoil, None, "record 0", "field 'candidate'",
             "not a candidate of this problem")


def test_tune_repeated_candidate(tmp_path):
    def spoil(rs):
        rs.append(dict(rs[0], median_s=1.0, max_s=1.0))
    _refused(tmp_path, "tune", spoil, None, "record 280", "repeats record 0")


def test_tune_repeated_key(tmp_path):
    def text(src):
        return src.replace('"median_s": ', '"median_s": 1.0, "median_s": ', 1)
    _refused(tmp_path, "tune", None, text, "key 'median_s' repeated")


@pytest.mark.parametrize("suite", ["counters", "tune"])
def test_cli_one_line_exit_2(tmp_path, capsys, suite):
    """Refused before any engine work: exit 2, one line naming the record and the field."""
    def spoil(rs):
        rs[0]["median_s" if suite == "tune" else "instructions"] = "lots"
    folder = _copy(tmp_path, suite, spoil)
    code = main(["validate", "--hw", "h100-sxm", "--measurements", str(folder), "--suites", suite])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "record 0" in err[0] and "'lots'" in err[0], err


# ---- the committed files score exactly as before the checks

# `python -m simulator validate --hw h100-sxm --measurements data/measurements/h100-sxm
# --suites counters --json A` on the code before this file's checks (commit c71eda1): its
# "scores" and "scores_one_launch" (h200 has no counters.json or tune.json)
COUNTERS_SCORES = {
    "instructions": {
        "n": 39,
        "mape": 0.007748101732829129,
        "median_error": 0.0,
        "within_goal": True,
        "goal": 0.02
    },
    "dram": {
        "n": 39,
        "mape": 0.2859525274544457,
        "median_error": -0.01301204819277113,
        "within_goal": False,
        "goal": 0.1
    },
    "l2": {
        "n": 39,
        "mape": 0.429807897160467,
        "median_error": 0.07346094816614301,
        "within_goal": False,
        "goal": 0.15
    },
    "time": {
        "n": 39,
        "mape": 0.0939573701424598,
        "median_error": -0.039416968059951984,
        "within_goal": None
    }
}
COUNTERS_SCORES_ONE_LAUNCH = {
    "instructions": {
        "n": 27,
        "mape": 0.009388727887271091,
        "median_error": 0.0,
        "within_goal": True,
        "goal": 0.02
    },
    "dram": {
        "n": 27,
        "mape": 0.042005347254266044,
        "median_error": -0.009671179883945835,
        "within_goal": True,
        "goal": 0.1
    },
    "l2": {
        "n": 27,
        "mape": 0.48567915817724966,
        "median_error": 0.19663011689929322,
        "within_goal": False,
        "goal": 0.15
    },
    "time": {
        "n": 27,
        "mape": 0.10995098918175829,
        "median_error": -0.017754546540597937,
        "within_goal": None
    }
}


def test_counters_committed_file_scores_as_before():
    import hwmodels
    rows = cn.rows(hwmodels.get("h100-sxm"), REAL)
    one = [r for r in rows if sum(x["problem"] == r["problem"] for x in rows) == 1]
    assert len(rows) == 39 and len(one) == 27
    assert cn.scores(rows) == COUNTERS_SCORES
    assert cn.scores(one) == COUNTERS_SCORES_ONE_LAUNCH


def test_time_suite_key_given_twice(tmp_path):
    """A time suite (grid, gemm, conv) with a key given twice in one record is refused (json
    would keep the last value silently), as the counters and tune suites are."""
    from simulator.analysis.measurements import load_suite
    src = Path(__file__).resolve().parents[1] / "data" / "measurements" / "h100-sxm" / "gemm.json"
    text = src.read_text()
    i = text.index('"median_s"')
    (tmp_path / "gemm.json").write_text(text[:i] + '"median_s": -1.0, ' + text[i:])
    with pytest.raises(ValueError, match="median_s' repeated"):
        load_suite(tmp_path, "gemm")
    assert len(load_suite(src.parent, "gemm").records) == 40

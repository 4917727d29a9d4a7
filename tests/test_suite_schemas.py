"""The counters and tune suite files (``validate --suites counters|tune``) are checked
record by record on load, before any engine work (issue 25, class 8): each test copies
the committed H100 file into a folder of its own, spoils one field, and expects a
ValueError naming the file, the record and the field -- where the old code raised a
KeyError, StopIteration, IndexError or TypeError, or scored the bad value."""
import json
import re
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


# ---- the committed counters file's scores: tests/test_counters.py holds them to the goals


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


# ---- kernel suites (grid, gemm, conv): every field of a successful record on load

def _kernel_refused(tmp_path, suite, spoil, *want):
    """The committed ``suite`` file spoiled: load_suite refuses it naming file and ``want``."""
    from simulator.analysis.measurements import load_suite
    folder = _copy(tmp_path, suite, spoil)
    with pytest.raises(ValueError) as e:
        load_suite(folder, suite)
    msg = str(e.value)
    assert f"{suite}.json" in msg, msg
    for w in want:
        assert w in msg, msg
    return msg


def _set(i, **kw):
    return lambda rs: rs[i].update(kw)


@pytest.mark.parametrize("suite,i,field,value,want", [
    # grid and block: an integer, or a list of 1 to 3 of them; never a float or a string
    ("grid", 0, "grid", 64.0, "'relu n=67108864'"),
    ("grid", 0, "block", 64.0, "at most 1024 threads"),
    ("grid", 0, "block", "64", "at most 1024 threads"),
    # (a list of several launches' blocks: the first has 1056 threads, the second 4 dims)
    ("grid", 0, "block", [[32, 33], 64], "at most 1024 threads"),
    ("grid", 0, "block", [[1, 1, 1, 1], 64], "list of 1 to 3"),
    ("grid", 0, "grid", [], "list of 1 to 3"),
    ("grid", 0, "grid", 2**31, "up to 2147483647"),
    ("grid", 0, "grid", True, "a positive integer"),
    ("grid", 0, "n", 67108864.0, "must be a positive integer"),
    ("grid", 0, "size", 5, "must be a string"),
    ("gemm", 0, "grid", [16.0, 16], "'gemm-naive 256x256x256'"),
    # the rotation of buffer sets: integer counts and bytes (were TypeErrors in a score)
    ("gemm", 0, "rotation_bytes", "lots", "a positive integer number of bytes"),
    ("gemm", 0, "rotation_bytes", None, "a positive integer number of bytes"),
    ("gemm", 0, "rotation_bytes", [1], "a positive integer number of bytes"),
    ("gemm", 0, "rotation_bytes", 10**18, "at most 1e+17"),
    ("gemm", 0, "buffer_sets", [1], "must be a positive integer"),
    ("gemm", 0, "buffer_sets", 1.0, "must be a positive integer"),
    ("gemm", 0, "buffer_sets", 0, "must be a positive integer"),
    ("gemm", 0, "thread_x", None, "must be a string"),
    ("gemm", 0, "reps", "five", "must be a positive integer"),
    ("gemm", 0, "host_bound", "no", "true or false"),
    ("gemm", 0, "rel_error", -1.0, "a finite number >= 0"),
    ("conv", 0, "layer", 5, "must be a string"),
    ("conv", 0, "grid", [7203, [4.0, 784]], "one per launch"),
])
def test_kernel_record_field_refused(tmp_path, suite, i, field, value, want):
    _kernel_refused(tmp_path, suite, _set(i, **{field: value}), f"record {i} (", f"field {field!r}",
                    want)


def test_kernel_record_conv_fields_are_integers(tmp_path):
    def spoil(rs):
        rs[0]["conv"]["stride"] = 2.0
    _kernel_refused(tmp_path, "conv", spoil, "record 0 ('conv-direct conv1/1 nchw')",
                    "field 'conv.stride' = 2.0", "must be a positive integer")


def test_kernel_record_rotation_needs_its_bytes(tmp_path):
    """A record rotating buffer sets (buffer_sets > 1) says over how many bytes: whether
    its launches start cold depends on it."""
    def spoil(rs):
        del rs[3]["rotation_bytes"]
    _kernel_refused(tmp_path, "gemm", spoil, "record 3", "field 'rotation_bytes' missing")


def test_kernel_rotation_shorter_than_twice_the_l2_refused_before_work(tmp_path):
    import hwmodels
    from simulator.analysis.measurements import check_kernel_records, load_suite
    hw = hwmodels.get("h100-sxm")
    short_rot = 2 * 50 * 2**20 - 1               # the H100's L2 is 50 MiB
    assert hw.l2.size_bytes == 50 * 2**20
    folder = _copy(tmp_path, "gemm", _set(2, rotation_bytes=short_rot))
    with pytest.raises(ValueError, match=rf"gemm.json: record 2 \(.*field 'rotation_bytes' = "
                                         rf"{short_rot}: .*twice the L2"):
        check_kernel_records(hw, load_suite(folder, "gemm"))


@pytest.mark.parametrize("value,ok", [
    (1e-9, True), (3600.0, True),                      # the bounds themselves: measured times
    (0.99e-9, False), (5e-324, False), (3601.0, False), (1e300, False)])
def test_kernel_time_bounds(tmp_path, value, ok):
    """median, min and max of a record within MIN_SECONDS (1 ns) .. MAX_SECONDS (an hour)."""
    from simulator.analysis import measurements as ms

    def spoil(rs):
        rs[0].update(median_s=value, min_s=value, max_s=value)
        del rs[0]["samples_s"], rs[0]["reps"]
    assert (ms.MIN_SECONDS, ms.MAX_SECONDS) == (1e-9, 3600.0)
    if ok:
        folder = _copy(tmp_path, "grid", spoil)
        assert ms.load_suite(folder, "grid").records[0]["median_s"] == value
    else:
        _kernel_refused(tmp_path, "grid", spoil, "record 0 ('relu n=67108864')",
                        "field 'median_s'", ">= 1e-09 and <= 3600")


def test_kernel_sample_beyond_the_bounds(tmp_path):
    def spoil(rs):
        rs[0]["samples_s"][0] = 1e300
    _kernel_refused(tmp_path, "grid", spoil, "record 0", "field 'samples_s'", "from 1e-09 to 3600")


def test_kernel_record_not_ok_is_left_out_unread(tmp_path):
    """A record with "ok": false is not scored; its fields are not read (a failed launch
    may have none): 39 of the 40 GEMM records become tasks."""
    import hwmodels
    from simulator.analysis.measurements import load_suite
    from simulator.analysis.validate import record_tasks
    folder = _copy(tmp_path, "gemm", _set(0, ok=False, rotation_bytes=[1], median_s=None))
    tasks = record_tasks(hwmodels.get("h100-sxm"), [load_suite(folder, "gemm")])
    assert len(tasks) == 39 and 0 not in {t.index for t in tasks}


def test_kernel_float_grid_cli_one_line(tmp_path, capsys):
    """Was "internal error: TypeError: 'float' object is not iterable"."""
    folder = _copy(tmp_path, "grid", _set(0, grid=64.0))
    code = main(["validate", "--hw", "h100-sxm", "--measurements", str(folder), "--suites", "grid",
                 "--engine-budget", "0", "--workers", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "field 'grid' = 64.0" in err[0], err


# ---- counters.json: ok false left out, whole counts, time and byte bounds, file checks

def test_counters_all_not_ok_refused(tmp_path):
    def spoil(rs):
        for r in rs:
            r["ok"] = False
    _refused(tmp_path, "counters", spoil, None, "no successful record", "of 39")


def _relu_counters(tmp_path, oks):
    """A counters file of the committed relu launches (1 Mi and 16 Mi elements), their ok
    flags set to ``oks``."""
    raw = json.loads((REAL / "counters.json").read_text())
    recs = [r for r in raw["records"] if r["problem"].startswith("relu=")]
    assert [r["problem"] for r in recs] == ["relu=relu:16777216", "relu=relu:1048576"]
    for r, ok in zip(recs, oks):
        r["ok"] = ok
    raw["records"] = recs
    (tmp_path / "counters.json").write_text(json.dumps(raw))
    return tmp_path


def test_counters_not_ok_left_out_of_the_scores(tmp_path, capsys):
    import hwmodels
    folder = _relu_counters(tmp_path, [False, True])
    doc = cn.load(folder)
    assert cn.left_out(doc) == 1
    rows = cn.rows(hwmodels.get("h100-sxm"), folder)
    assert [r["problem"] for r in rows] == ["relu=relu:1048576"]
    assert cn.scores(rows)["time"]["n"] == 1
    assert main(["validate", "--hw", "h100-sxm", "--measurements", str(folder), "--suites",
                 "counters"]) == 0
    out = capsys.readouterr().out
    assert '1 launches (1 of one-launch problems)' in out and '1 records with "ok": false left out' in out


@pytest.mark.parametrize("field,value,want", [
    ("instructions", 1.5, "a whole number of warp instructions"),
    ("seconds", 1e300, ">= 1e-09 and <= 3600"),
    ("seconds", 5e-324, ">= 1e-09 and <= 3600"),
    ("dram_bytes", 1e18, "<= 1e+17"),
    ("achieved_occupancy", 1.5, "a fraction of the SM's warps"),
])
def test_counters_counts_and_bounds(tmp_path, field, value, want):
    _refused(tmp_path, "counters", _set(2, **{field: value}), None, "record 2",
             f"field {field!r}", want)


def test_counters_whole_instructions_as_float_accepted(tmp_path):
    """ncu writes its counts as floats: 18163712.0 is a whole count."""
    folder = _copy(tmp_path, "counters", _set(2, instructions=1e6))
    assert cn.load(folder)["records"][2]["instructions"] == 1e6


@pytest.mark.parametrize("edit,want", [
    (lambda d: d.update(provenance={}), "provenance field 'device' missing"),
    (lambda d: d.update(schema_version=2), "field 'schema_version' is 2"),
    (lambda d: d.update(schema_version="1"), "field 'schema_version' is '1'"),
    (lambda d: d.pop("schema_version"), "field 'schema_version' is None"),
    (lambda d: d.update(suite="tune"), "field 'suite' is 'tune', expected 'counters'"),
])
def test_counters_file_checks_as_the_kernel_suites(tmp_path, edit, want):
    raw = json.loads((REAL / "counters.json").read_text())
    edit(raw)
    (tmp_path / "counters.json").write_text(json.dumps(raw))
    with pytest.raises(ValueError, match=want):
        cn.load(tmp_path)


@pytest.mark.parametrize("problem,want", [
    ("conv-direct=resnet50", "is 106 ops (a network)"),     # was its first layer, silently
    ("conv-direct=layer1.0.conv2/\u0663", "batch '\u0663'"),  # an Arabic-Indic 3
])
def test_counters_problem_is_one_op(tmp_path, problem, want):
    _refused(tmp_path, "counters", _set(0, problem=problem), None, "record 0", "'problem'", want)


def test_tune_problem_is_one_op(tmp_path):
    _refused(tmp_path, "tune", _set(0, problem="resnet50"), None, "record 0",
             "is 106 ops (a network)")


# ---- tune.json: the global time bounds

@pytest.mark.parametrize("value", [1e308, 5e-324, 3601.0, 0.5e-9])
def test_tune_times_out_of_bounds(tmp_path, value):
    """Were scored: all 1e308 gave "random 3 +inf%" and "Spearman nan"."""
    def spoil(rs):
        for r in rs:
            r.update(median_s=value, min_s=value, max_s=value)
    _refused(tmp_path, "tune", spoil, None, "record 0", "field 'median_s'",
             ">= 1e-09 and <= 3600")


@pytest.mark.parametrize("field,value", [("reps", "three"), ("inner", -1), ("host_bound", "no"),
                                         ("rel_error", "tiny")])
def test_tune_harness_fields(tmp_path, field, value):
    _refused(tmp_path, "tune", _set(0, **{field: value}), None, "record 0", f"field {field!r}")


# ---- calibrate: the micro suite's blocks

@pytest.mark.parametrize("name,field,value", [
    ("block_residency", "block", 10**9), ("block_residency", "block", 1025),
    ("block_residency", "block", 1024.0), ("block_residency", "blocks_per_sm_resident", 1.5),
    ("dram_copy", "block", 2048), ("dram_copy", "grid", 0)])
def test_calibrate_micro_blocks(tmp_path, name, field, value):
    """Was accepted, and block_residency's block changed sm.block_start_cycles."""
    import hwmodels
    from simulator.analysis import calibrate
    raw = json.loads((REAL / "micro.json").read_text())
    i = max(j for j, r in enumerate(raw["records"]) if r["name"] == name)
    raw["records"][i][field] = value
    (tmp_path / "micro.json").write_text(json.dumps(raw))
    with pytest.raises(ValueError, match=rf"micro.json: record {i} \('{name}'\): field '{field}'"):
        calibrate.calibrate(hwmodels.get("h100-sxm"), tmp_path)


# ---- measure torchvision without PyTorch: refused as the suites without a GPU

def test_measure_torchvision_without_pytorch_exit_2(tmp_path, capsys, no_torch):
    code = main(["measure", "torchvision", "--out", str(tmp_path)])
    cap = capsys.readouterr()
    err = cap.err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "PyTorch is not importable" in err[0], cap
    assert list(tmp_path.iterdir()) == []


# ---- the micro suite's times: the kernel suites' checks (second audit, item 2)

def _micro(tmp_path, i, edit):
    """tmp_path/micro.json: the committed H100 file with ``edit(record)`` applied to
    record ``i``."""
    raw = json.loads((REAL / "micro.json").read_text())
    edit(raw["records"][i])
    (tmp_path / "micro.json").write_text(json.dumps(raw))
    return tmp_path


def _update(**kw):
    return lambda r: r.update(kw)


# record 0 is a dram_copy of 7 samples, record 4 a latency_l1 timed without samples
@pytest.mark.parametrize("i,edit,field", [
    (0, _update(samples_s="hello"), "samples_s"),
    (0, lambda r: r["samples_s"].__setitem__(0, float("nan")), "samples_s"),
    (0, _update(samples_s=[1e300, -5]), "samples_s"),
    (0, _update(samples_s=[]), "samples_s"),
    (0, _update(samples_s=[True] * 7), "samples_s"),
    (0, _update(reps=99), "reps"),
    (0, _update(reps="seven"), "reps"),
    (0, _update(median_s=0.0), "median_s"),
    (0, _update(max_s=7200.0), "max_s"),
    (4, _update(median_s=float("nan")), "median_s"),
    (4, _update(min_s=None), "min_s"),
    (4, _update(reps=0), "reps"),
    (12, _update(reps=True), "reps"),
])
def test_micro_times_are_checked_as_the_kernel_suites(tmp_path, i, edit, field):
    """Was accepted by calibrate (samples and reps never read); now a ValueError naming
    the file, the record, its name and the field."""
    from simulator.analysis.measurements import load_suite
    raw = json.loads((REAL / "micro.json").read_text())
    name = raw["records"][i]["name"]
    with pytest.raises(ValueError, match=rf"micro.json: record {i} \('{name}'\): field "
                                         rf"'{field}'"):
        load_suite(_micro(tmp_path, i, edit), "micro")


@pytest.mark.parametrize("edit,want", [
    # samples whose median is not median_s (the committed median is the 4th of 7)
    (lambda r: r.update(samples_s=sorted(r["samples_s"])[:6] + [r["max_s"] * 2]),
     "disagrees with median_s"),
    (lambda r: r.update(min_s=r["max_s"] * 2), "must be in that order"),
])
def test_micro_samples_agree_with_their_summary(tmp_path, edit, want):
    from simulator.analysis.measurements import load_suite
    with pytest.raises(ValueError, match=want):
        load_suite(_micro(tmp_path, 0, edit), "micro")


def test_micro_samples_in_any_order_and_committed_files_load(tmp_path):
    """The checks hold the committed files (both GPUs') and samples in any order: the
    median of 7 samples is the 4th smallest, min and max the ends."""
    from simulator.analysis.measurements import load_suite
    for dev in ("h100-sxm", "h200"):
        sf = load_suite(REAL.parent / dev, "micro")
        assert all(len(r["samples_s"]) == r["reps"] for r in sf.records if "samples_s" in r)
    s = [5e-6, 1e-6, 7e-6, 3e-6, 2e-6, 6e-6, 4e-6]
    # record 11: launch_back_to_back (no bandwidth computed from its median)
    sf = load_suite(_micro(tmp_path, 11, _update(samples_s=s, median_s=4e-6, min_s=1e-6,
                                              max_s=7e-6, reps=7)), "micro")
    assert sf.records[11]["name"] == "launch_back_to_back"


# ---- another GPU's measurements: refused by the library (second audit, item 1)

def test_scoring_another_gpus_folder_is_refused_below_the_cli():
    """The h200 preset scored against the H100's counters, tune or kernel suites: a
    ValueError naming the argument (folder=), the file and the device, before any work."""
    import hwmodels
    from simulator.analysis.validate import load_suites
    h200 = hwmodels.get("h200")
    want = "was measured on 'NVIDIA H100 80GB HBM3', not a h200"
    for call, name in ((lambda: cn.run(h200, REAL), "counters.json"),
                       (lambda: tune.scores(h200, REAL), "tune.json"),
                       (lambda: load_suites(h200, REAL, ("grid", "gemm")), "grid.json")):
        with pytest.raises(ValueError) as e:
            call()
        assert str(e.value).startswith(f"folder={str(REAL)!r}: {name} {want}"), str(e.value)
    assert [sf.suite for sf in load_suites(hwmodels.get("h100-sxm"), REAL, ("gemm",))] == ["gemm"]


def test_cli_names_the_option_for_another_gpus_folder(capsys):
    assert main(["validate", "--hw", "h200", "--measurements", str(REAL), "--suites",
                 "tune"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"roofsim: error: --measurements '{REAL}': tune.json was measured "
                          "on 'NVIDIA H100 80GB HBM3', not a h200"), err


# ---- a long value is echoed cut short (second audit, item 5)

def test_a_long_kernel_name_in_a_record_is_cut_in_the_error(tmp_path):
    """A grid record naming a kernel of a million characters: the error (once a 1 MB
    line) quotes its start, and stays short."""
    import hwmodels
    from simulator.analysis.measurements import load_suite
    from simulator.analysis.validate import record_tasks
    raw = json.loads((REAL / "grid.json").read_text())
    i = next(j for j, r in enumerate(raw["records"]) if r.get("ok"))
    raw["records"][i]["kernel"] = "relu" + "x" * 10**6
    (tmp_path / "grid.json").write_text(json.dumps(raw))
    with pytest.raises(ValueError) as e:
        record_tasks(hwmodels.get("h100-sxm"), [load_suite(tmp_path, "grid")])
    msg = str(e.value)
    assert f"record {i}" in msg and "'reluxxx" in msg and len(msg) < len(str(tmp_path)) + 400, msg


@pytest.mark.parametrize("edit,field", [
    (_update(min_s=float("nan")), "min_s"), (_update(max_s=1e9), "max_s"), (_update(reps=-1), "reps"),
    (_update(samples_s=[1.0]), "samples_s")])
def test_h2d_times_are_checked_too(tmp_path, edit, field):
    """The h2d suite's records time copies as micro's time launches: the same checks."""
    from simulator.analysis.measurements import load_suite
    raw = json.loads((REAL / "h2d.json").read_text())
    edit(raw["records"][0])
    (tmp_path / "h2d.json").write_text(json.dumps(raw))
    kind = raw["records"][0]["kind"]
    with pytest.raises(ValueError, match=rf"h2d.json: record 0 \('{kind}'\): field '{field}'"):
        load_suite(tmp_path, "h2d")
    assert load_suite(REAL.parent / "h200", "h2d").records


# ---- sixth audit: record keys, counters' metrics, the folder given, a BOM (item 6)

@pytest.mark.parametrize("dev", ["h100-sxm", "h200"])
def test_every_committed_suite_file_loads(dev):
    """The keys allowed are the ones the suites write: every committed file loads."""
    from simulator.analysis.measurements import load_suite
    folder = REAL.parent / dev
    for s in ("grid", "gemm", "conv", "micro", "h2d"):
        assert load_suite(folder, s).records
    if dev == "h100-sxm":
        assert cn.load(folder)["records"] and tune.load(folder)["records"]


def _gemm_record(rs, kernel):
    return next(r for r in rs if r["kernel"] == kernel and r["ok"])


@pytest.mark.parametrize("key,kernel", [("comment", "gemm-tiled"), ("m\u00e9dian_s", "gemm-tiled"),
                                        ("tile", "gemm-naive"), ("thread_x", "gemm-tiled")])
def test_an_unknown_record_key_is_refused(tmp_path, key, kernel):
    """A key no suite writes (a comment, a typo, another kernel's argument) is refused,
    naming the key and the keys allowed, as plan files refuse theirs."""
    from simulator.analysis.measurements import load_suite
    raw = json.loads((REAL / "gemm.json").read_text())
    r = _gemm_record(raw["records"], kernel)
    i = raw["records"].index(r)
    r[key] = 16
    (tmp_path / "gemm.json").write_text(json.dumps(raw))
    with pytest.raises(ValueError) as e:
        load_suite(tmp_path, "gemm")
    msg = str(e.value)
    assert f"gemm.json: record {i}: field {key!r} is not one a {kernel} record has" in msg, msg
    allowed = msg.split("allowed: ")[1].split(", ")
    assert "median_s" in allowed and key not in allowed
    assert ("tile" in allowed) == (kernel == "gemm-tiled")


@pytest.mark.parametrize("suite,key", [("counters", "note"), ("tune", "comment")])
def test_an_unknown_key_in_counters_and_tune_is_refused(tmp_path, suite, key):
    def spoil(rs):
        rs[2][key] = "x"
    _refused(tmp_path, suite, spoil, None, "record 2", f"field {key!r} is not one a {suite} record has")


@pytest.mark.parametrize("metrics,needle", [
    (None, "field 'metrics' = missing"), ("x", "field 'metrics' = 'x'"), ([], "field 'metrics' = []"),
    (["gpu__time_duration.sum"] * 2, "a list of distinct metric names"),
    (["gpu__time_duration.sum", "smsp__inst_executed.sum"], "lacks dram__bytes_read.sum"),
])
def test_counters_metrics_are_checked(tmp_path, metrics, needle):
    doc = json.loads((REAL / "counters.json").read_text())
    if metrics is None:
        del doc["metrics"]
    else:
        doc["metrics"] = metrics
    (tmp_path / "counters.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=re.escape(needle)):
        cn.load(tmp_path)


def test_counters_ncu_kernel_must_name_the_kernel(tmp_path):
    def spoil(rs):
        rs[1]["ncu_kernel"] = ""
    _refused(tmp_path, "counters", spoil, None, "record 1", "field 'ncu_kernel'")


def test_measurements_must_be_a_folder_holding_a_regular_file(tmp_path, capsys):
    """gemm.json itself given, gemm.json a folder or a FIFO: each says what it is, not
    'no gemm.json there'."""
    import os

    def err(folder):
        assert main(["validate", "--hw", "h100-sxm", "--measurements", str(folder), "--suites", "gemm",
                     "--engine-budget", "0", "--workers", "1"]) == 2
        e = capsys.readouterr().err
        assert e.count("\n") == 1, e
        return e
    e = err(REAL / "gemm.json")
    assert f"is a file, not a folder; give the folder that holds gemm.json ('{REAL}')" in e
    (tmp_path / "d" / "gemm.json").mkdir(parents=True)
    assert "gemm.json there is a folder, not a regular file" in err(tmp_path / "d")
    (tmp_path / "f").mkdir()
    os.mkfifo(tmp_path / "f" / "gemm.json")
    assert "gemm.json there is a FIFO, not a regular file" in err(tmp_path / "f")
    assert "no such folder" in err(tmp_path / "none")
    assert "no gemm.json there" in err(tmp_path / "d" / "gemm.json")


def test_a_byte_order_mark_is_ignored_as_in_traces_and_plans(tmp_path):
    from simulator.analysis.measurements import load_suite
    (tmp_path / "gemm.json").write_bytes(b"\xef\xbb\xbf" + (REAL / "gemm.json").read_bytes())
    assert load_suite(tmp_path, "gemm").records == load_suite(REAL, "gemm").records
    _copy(tmp_path, "tune", text=lambda t: "\ufeff" + t)
    assert tune.load(tmp_path)["records"] == tune.load(REAL)["records"]


def test_a_huge_integer_is_named_without_pythons_hint(tmp_path):
    from simulator.analysis.measurements import load_suite
    text = (REAL / "gemm.json").read_text().replace('"m": 256', '"m": ' + "9" * 5000, 1)
    (tmp_path / "gemm.json").write_text(text)
    with pytest.raises(ValueError, match="an integer of more than 4,300 digits") as e:
        load_suite(tmp_path, "gemm")
    assert "set_int_max_str_digits" not in str(e.value)


# ---- sixth audit: held to its own GPU (item 3)

@pytest.mark.parametrize("prov,why", [
    ({"device": "NVIDIA GeForce RTX 4090"}, "it matches no preset's GPU"),
    ({"device": "NVIDIA H100 PCIe", "compute_capability": "9.0"}, "another board of h100-sxm's model"),
    ({"device": "NVIDIA H200", "compute_capability": "9.0"}, "that is preset h200's GPU"),
])
def test_a_folder_of_another_gpu_is_refused_saying_why(prov, why):
    import hwmodels
    from simulator.analysis.measurements import check_device
    with pytest.raises(ValueError, match=f"measured on '{prov['device']}', not a h100-sxm.*: {why}"):
        check_device(hwmodels.get("h100-sxm"), REAL, "gemm.json", prov)


@pytest.mark.parametrize("cc", [9.0, "nine", "9", ""])
def test_a_provenance_compute_capability_is_checked(tmp_path, cc):
    from simulator.analysis.measurements import load_suite
    raw = json.loads((REAL / "gemm.json").read_text())
    raw["provenance"]["compute_capability"] = cc
    (tmp_path / "gemm.json").write_text(json.dumps(raw))
    with pytest.raises(ValueError, match="provenance field 'compute_capability' = .*: a compute capability"):
        load_suite(tmp_path, "gemm")


# ---- sixth audit: the tune suite's problems (item 4)

def _tune_doc():
    return json.loads((REAL / "tune.json").read_text())


@pytest.mark.parametrize("spelling", ["GEMM:256x256x256", "gemm:256x256x256 ", "gemm: 256x256x256"])
def test_a_tune_problem_spelt_otherwise_is_the_same_problem(tmp_path, spelling):
    doc = _tune_doc()
    first = next(i for i, r in enumerate(doc["records"]) if r["ok"])
    again = dict(doc["records"][first], problem=spelling)
    doc["records"].append(again)
    (tmp_path / "tune.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=rf"record {len(doc['records']) - 1} .*repeats record {first} "
                                         r"\('gemm:256x256x256': the same problem, spelt otherwise\)"):
        tune.load(tmp_path)


def test_a_tune_problem_of_one_candidate_is_left_out_of_the_scores(tmp_path):
    """A ranking of one candidate has no regret (it was 0%, counted toward the goals):
    such a problem is left out and named; a file of only such problems is refused."""
    import hwmodels
    h100 = hwmodels.get("h100-sxm")
    doc = _tune_doc()
    ok = [r for r in doc["records"] if r["ok"]]
    a = [r for r in ok if r["problem"] == "gemm:256x256x256"][:2]
    b = [r for r in ok if r["problem"] == "gemm:512x512x512"][:1]
    doc["records"] = a + b
    (tmp_path / "tune.json").write_text(json.dumps(doc))
    s = tune.scores(h100, tmp_path, engine_top=1)
    assert [r["problem"] for r in s["problems"]] == ["gemm:256x256x256"]
    assert s["left_out"] == ["gemm:512x512x512"] and s["problems_total"] == 1
    assert s["problems"][0]["candidates"] == 2
    doc["records"] = b
    (tmp_path / "tune.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="no problem has 2 or more candidates measured"):
        tune.scores(h100, tmp_path, engine_top=1)

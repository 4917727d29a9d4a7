"""What the CLI guards before any work (issue 25's second audit): an output never
overwrites an input, an option typed twice is refused, plan files of any layer names
read back, a byte-order mark or a pipe is told apart, and nothing printed carries a
control character to the terminal."""
import json
import os
import shutil
from pathlib import Path

import pytest

from simulator.analysis import plan as pl
from simulator.cli import main
from simulator.table import format_table
from workloads.ir import Conv2d, Network

ROOT = Path(__file__).resolve().parents[1]
PLAN = ROOT / "data" / "plans" / "h100-sxm" / "oracle-analytic-b1.toml"


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_output_may_not_overwrite_an_input(tmp_path, capsys):
    plan = tmp_path / "p.toml"
    shutil.copy(PLAN, plan)
    before = plan.read_bytes()
    for opt in ("--json", "--csv"):
        code, _, err = _run(capsys, "plan", "--hw", "h100-sxm", "--mode", "analytic", "--workers",
                            "1", "--plan", str(plan), opt, str(plan))
        assert code == 2 and "the file --plan reads; writing it would destroy the input" in err
    assert plan.read_bytes() == before
    # the same file by another name (a symbolic link) is the same file
    link = tmp_path / "link.json"
    link.symlink_to(plan)
    code, _, err = _run(capsys, "plan", "--hw", "h100-sxm", "--mode", "analytic", "--workers", "1",
                        "--plan", str(plan), "--json", str(link))
    assert code == 2 and "--plan reads" in err and plan.read_bytes() == before
    # a file in a folder the command reads
    meas = tmp_path / "m"
    meas.mkdir()
    src = ROOT / "data" / "measurements" / "h100-sxm" / "grid.json"
    shutil.copy(src, meas / "grid.json")
    code, _, err = _run(capsys, "validate", "--hw", "h100-sxm", "--measurements", str(meas),
                        "--suites", "grid", "--engine-budget", "0", "--workers", "1", "--json",
                        str(meas / "grid.json"))
    assert code == 2 and "a file in --measurements" in err
    assert (meas / "grid.json").read_bytes() == src.read_bytes()


def test_an_output_ending_in_a_slash_is_refused(tmp_path, capsys):
    code, _, err = _run(capsys, "roofline", "--hw", "h100-sxm", "--workload", "gemm:64x64x64",
                        "--json", f"{tmp_path}/x.json/")
    assert code == 2 and "ends in '/'" in err
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("argv,flag", [
    (["plan", "--hw", "h100-sxm", "--vs", "tpu-v1", "--vs", "systolic-8x8"], "--vs"),
    (["roofline", "--hw", "h100-sxm", "--hw=gtx480", "--workload", "gemm:8x8x8"], "--hw"),
    (["check", "--hw", "h100-sxm", "--trace", "a.json", "--trace", "b.json"], "--trace"),
    (["roofline", "--hw", "h100-sxm", "--workload", "gemm:8x8x8", "--workl", "relu:8"], "--workload"),
])
def test_an_option_typed_twice_is_refused(capsys, argv, flag):
    code, out, err = _run(capsys, *argv)
    assert code == 2 and err.strip() == f"roofsim: {flag} is given twice; give it once"
    assert out == ""


def test_options_that_add_up_may_repeat(capsys):
    code, out, _ = _run(capsys, "hw", "show", "gtx480", "--set", "sm_count=10", "--set",
                        "l2.size_bytes=1MiB")
    assert code == 0 and "sm_count" in out


@pytest.mark.parametrize("name", ['a"b', "back\\slash", "del\x7fx", "tab\tx", "ünï", "esc\x1b[1m"])
def test_a_plan_file_of_any_layer_name_reads_back(tmp_path, name):
    net = Network.independent("odd", (Conv2d(name=name, N=1, C=4, H=8, W=8, K=4, R=3, S=3),
                                      Conv2d(name="plain", N=1, C=4, H=8, W=8, K=4, R=1, S=1)))
    configs = {name: ("im2col", "nhwc"), "plain": ("direct", "nchw")}
    for suffix, text in ((".toml", pl.plan_text(net, configs, f"hw x\x7fy\nsecond {name}")),
                         (".json", pl.plan_json(net, configs, "c"))):
        p = tmp_path / f"plan{suffix}"
        p.write_text(text, encoding="utf-8")
        assert pl.load_plan_file(p, net) == configs


def test_a_plan_file_with_a_byte_order_mark_is_read(tmp_path):
    net = pl.network("resnet50", 1)
    for suffix, body in ((".toml", 'default = "direct-nhwc"\n'),
                         (".json", json.dumps({"default": "direct-nhwc"}))):
        p = tmp_path / f"bom{suffix}"
        p.write_bytes(b"\xef\xbb\xbf" + body.encode())
        got = pl.load_plan_file(p, net)
        assert set(got.values()) == {("direct", "nhwc"), "direct"}
    bad = tmp_path / "latin1.toml"
    bad.write_bytes(b'default = "direct-nhwc"\n# caf\xe9\n')
    with pytest.raises(ValueError, match=r"not UTF-8 text \(byte 29\)"):
        pl.load_plan_file(bad, net)


def test_a_pipe_is_not_a_plan_or_a_topology(tmp_path, capsys):
    fifo = tmp_path / "p.toml"
    os.mkfifo(fifo)
    code, _, err = _run(capsys, "plan", "--hw", "h100-sxm", "--mode", "analytic", "--plan", str(fifo))
    assert code == 2 and "a FIFO, not a regular file" in err
    topo = tmp_path / "t.csv"
    os.mkfifo(topo)
    code, _, err = _run(capsys, "plan", "--hw", "h100-sxm", "--mode", "analytic", "--workload", str(topo),
                        "--plan", "direct-nchw")
    assert code == 2 and "is not a regular file (a pipe or a device)" in err


def test_tables_show_control_characters_as_escapes():
    text = format_table(["name", "us"], [["k\x1b[31mred\nnext\x07", 1.5], ["\ud800", 2.0]])
    assert "\x1b" not in text and "\x07" not in text and text.count("\n") == 3
    assert "k\\x1b[31mred\\x0anext\\x07" in text and "\\ud800" in text
    text.encode("utf-8")                 # no lone surrogate left to fail on a terminal


def test_an_output_through_a_loop_of_links_is_refused(tmp_path, capsys):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    code, _, err = _run(capsys, "roofline", "--hw", "h100-sxm", "--workload", "gemm:64x64x64",
                        "--json", str(tmp_path / "a"))
    assert code == 2 and "a loop of symbolic links" in err and len(err.splitlines()) == 1


def test_an_output_that_cannot_be_made_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    """Tried as the writer will write it (a temporary file in its folder), not only by
    the folder's permission bits (which root passes)."""
    import tempfile

    def refused(*a, **k):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(tempfile, "mkstemp", refused)
    code, out, err = _run(capsys, "plan", "--hw", "h100-sxm", "--plan", "direct-nchw", "--mode",
                          "analytic", "--workers", "1", "--json", str(tmp_path / "p.json"))
    assert code == 2 and out == "" and "cannot write in folder" in err and "Permission denied" in err


def test_a_huge_value_is_cut_in_the_error_line(capsys):
    code, _, err = _run(capsys, "roofline", "--hw", "x" * 100_000, "--workload", "gemm:8x8x8")
    assert code == 2 and len(err) < 1_000 and "xxxxxxxx..." in err and "no preset and no file" in err


@pytest.mark.parametrize("argv,words", [
    (["roofline", "--hw", "h100-sxm", "--workload", "relu:1024", "--layout", "nhwc"],
     "relu:N is a flat tensor"),
    (["roofline", "--hw", "h100-sxm", "--workload", "gemm:64x64x64", "--no-timing"],
     "--no-timing leaves the run's wall times out of --csv and --json"),
    (["occupancy", "--hw", "h100-sxm", "--block", "256", "--regs", "32", "--no-timing"],
     "--no-timing leaves"),
])
def test_an_option_that_would_do_nothing_is_refused(capsys, argv, words):
    code, out, err = _run(capsys, *argv)
    assert code == 2 and words in err and out == ""


def test_a_plan_file_s_comment_is_text(tmp_path):
    net = pl.network("resnet50", 1)
    p = tmp_path / "p.toml"
    p.write_text('comment = 5\ndefault = "direct-nchw"\n')
    with pytest.raises(ValueError, match="comment = 5: must be text"):
        pl.load_plan_file(p, net)
    q = tmp_path / "p.json"
    q.write_text('{"default": "direct-nchw", "source": NaN}')
    with pytest.raises(ValueError, match="source = nan: must be text"):
        pl.load_plan_file(q, net)


def test_a_layer_named_as_a_transform_is_refused():
    net = Network.independent("clash", (Conv2d(name="c2.input.to_nhwc", N=1, C=4, H=8, W=8, K=4,
                                               R=3, S=3),
                                        Conv2d(name="c2", N=1, C=4, H=8, W=8, K=4, R=1, S=1)))
    with pytest.raises(ValueError, match=r"layer 'c2.input.to_nhwc': the name of the transform a "
                                         r"plan inserts for 'c2.input' into nhwc"):
        pl.expand(net, pl.uniform_configs(net, "direct-nhwc"))


@pytest.mark.parametrize("argv,words", [
    (["simulate", "simt", "--hw", "gtx480", "--kernel", "relu", "--n", "4096", "--timeline",
      "OUT/t.png"], "--timeline 'OUT/t.png': writes .json (a Chrome trace); a .png name"),
    (["roofline", "--hw", "h100-sxm", "--workload", "gemm:8x8x8", "--json", "OUT/r.csv"],
     "--json 'OUT/r.csv': writes .json"),
    (["workload", "show", "resnet50", "--dtype", "fp16", "--scalesim-csv", "OUT/r.csv"],
     "--dtype applies to the table and --csv/--json, not to --scalesim-csv"),
    (["roofline-compare", "--hw", "gtx480,OUT/g.toml"], "'gtx480' is named twice"),
])
def test_outputs_and_lists_that_would_mislead_are_refused(tmp_path, capsys, argv, words):
    import hwmodels
    from hwmodels import registry
    registry.save_toml(hwmodels.get("gtx480"), tmp_path / "g.toml")
    argv = [a.replace("OUT", str(tmp_path)) for a in argv]
    code, out, err = _run(capsys, *argv)
    assert code == 2 and words.replace("OUT", str(tmp_path)) in err, err
    assert not any(p.suffix in (".png", ".csv") for p in tmp_path.iterdir())


def test_check_names_the_trace_of_a_kernel_it_refuses(tmp_path, capsys):
    src = ROOT / "tests" / "bad_inputs" / "trace_bf16_named.txt"
    code, _, err = _run(capsys, "check", "--hw", "gtx480", "--trace", str(src))
    assert code == 2 and err.startswith(f"roofsim: error: {src}: kernel ")


@pytest.mark.parametrize("hw,trace", [("gtx480", "torch_resnet50_b8.json"), ("h200", "ncu_roofsim.csv"),
                                      ("v100-sxm2", "torch_gemm_loop.json")])
def test_a_trace_is_held_to_its_own_gpu(capsys, hw, trace):
    """A trace recorded on an H100 (its deviceProperties, its ncu device column) is not
    scored against another GPU's roofs (fifth audit: 174 kernels 'faster than their
    bound' on a gtx480); on its own GPU's preset it is."""
    path = str(ROOT / "data" / "traces" / "h100-sxm" / trace)
    code, _, err = _run(capsys, "check", "--hw", hw, "--trace", path)
    assert code == 2 and "recorded on 'NVIDIA H100 80GB HBM3', not a " + hw in err
    code, out, _ = _run(capsys, "check", "--hw", "h100-sxm", "--trace", path)
    assert code == 0 and f"{path} on h100-sxm" in out


def test_plan_s_header_says_the_batch_given(capsys):
    code, out, _ = _run(capsys, "plan", "--hw", "h100-sxm", "--workload", "gemm:64x64x64", "--batch",
                        "4", "--plan", "direct-nchw", "--mode", "analytic", "--workers", "1")
    assert code == 0 and out.startswith("gemm:64x64x64 batch 4 on h100-sxm") and "256x64x64" in out


def test_occupancy_s_unlimited_resources_are_null(tmp_path, capsys):
    js = tmp_path / "o.json"
    code, out, _ = _run(capsys, "occupancy", "--hw", "gtx480", "--block", "256", "--regs", "0",
                        "--json", str(js))
    doc = json.loads(js.read_text())
    assert code == 0 and doc["limits"] == {"warps": 6, "registers": None, "shared_memory": None,
                                           "blocks": 8}
    assert "registers -, shared_memory -" in out


def test_a_layout_sweep_refuses_a_grouped_convolution(tmp_path, capsys):
    topo = tmp_path / "dw.csv"
    topo.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
                    "Num Filter, Strides,\nConv1, 18, 18, 3, 3, 16, 16, 1,\n"
                    "Conv2_DP, 16, 16, 3, 3, 16, 1, 1,\nConv3, 14, 14, 1, 1, 16, 32, 1,\n")
    code, _, err = _run(capsys, "sweep", "layout", "--hw", "h100-sxm", "--workload", str(topo),
                        "--mode", "analytic", "--workers", "1")
    assert code == 2 and "layer 'Conv2_DP': a grouped convolution (groups 16)" in err


def test_roofline_names_dtype_for_a_precision_the_hardware_lacks(capsys):
    code, _, err = _run(capsys, "roofline", "--hw", "gtx480", "--dtype", "int8", "--workload",
                        "gemm:64x64x64")
    assert code == 2 and err.strip() == ("roofsim: error: --dtype 'int8': not supported by gtx480; "
                                         "it supports: fp64, fp32")


def test_charts_check_what_they_draw(tmp_path):
    import simulator as rs
    b = rs.roofline(rs.load_hardware("h100-sxm"), "gemm:64x64x64")
    rs.plots.roofline_chart(b, tmp_path / "a.png")            # the Result, as the README draws
    assert (tmp_path / "a.png").stat().st_size > 0
    for call, words in ((lambda: rs.plots.roofline_chart(None, "x.png"), "report=None"),
                        (lambda: rs.plots.systolic_chart(b, "x.png"), "result=Result: the Result of "
                                                                       "simulate_systolic"),
                        (lambda: rs.plots.simt_timeline_chart(b, "x.png"), "an engine Result"),
                        (lambda: rs.plots.roofline_chart(b, 5), "path=5")):
        with pytest.raises(TypeError, match=words):
            call()


# ---- audit 6, sections 7 and 9: one normaliser, one integer parser, no -0, no empties

def test_a_uniform_plan_name_is_read_by_one_rule_everywhere():
    # the CLI, the API and a plan file's values: spaces and letter case aside
    for text in ("im2col-nhwc", "IM2COL-NHWC", " im2col-nhwc ", "Im2Col-NhWc"):
        assert pl.uniform_name(text) == "im2col-nhwc"
        assert pl.parse_config(text) == ("im2col", "nhwc")
    assert pl.uniform_name("im2col_nhwc") is None and pl.uniform_name(3) is None
    net = pl.network("resnet50", 1)
    assert pl.configs_of(net, " IM2COL-NHWC") == pl.configs_of(net, "im2col-nhwc")


def test_plan_on_the_command_line_takes_any_case(capsys):
    code, out, err = _run(capsys, "plan", "--hw", "h100-sxm", "--mode", "analytic", "--workers",
                          "1", "--workload", "conv:n=1,c=8,h=8,w=8,k=8,r=3,s=3,pad=1",
                          "--plan", " IM2COL-NHWC")
    assert code == 0, err
    assert "plan im2col-nhwc:" in out


@pytest.mark.parametrize("value", ["1_000", "1 000", "١٠٠٠", "inf", "nan"])
def test_engine_budget_takes_plain_digits_only(capsys, value):
    code, _, err = _run(capsys, "validate", "--hw", "h100-sxm", "--measurements",
                        "data/measurements/h100-sxm", "--suites", "gemm", "--engine-budget", value)
    assert code == 2 and "--engine-budget" in err


def test_negative_zero_reads_and_prints_as_zero():
    from hwmodels.units import format_bytes, format_seconds, format_si
    from simulator.cli.options import ascii_number, budget
    assert format_seconds(-0.0) == "0 ns" and format_si(-0.0, "B/s") == "0 B/s"
    assert format_bytes(-0.0) == "0 B"
    v = budget("-0")
    assert v == 0 and str(v) == "0.0" and f"{v:.3g}" == "0"
    assert str(ascii_number("-0.0")) == "0.0"


@pytest.mark.parametrize("field", ["dram.kind", "description", "host_link.kind", "name"])
def test_an_empty_hardware_value_is_refused_naming_the_field(capsys, field):
    code, _, err = _run(capsys, "hw", "show", "h100-sxm", "--set", f"{field}=")
    assert code == 2 and err.startswith(f"roofsim: error: --set {field}") and "empty" in err


def test_an_empty_kind_in_a_toml_file_is_refused():
    import hwmodels
    with pytest.raises(ValueError, match=r"DRAM.kind = '': must not be empty"):
        hwmodels.get(str(ROOT / "tests" / "bad_inputs" / "fixC_empty_dram_kind.toml"))
    # a preset without a description still writes and reads back (the field left out)
    import dataclasses
    hw = dataclasses.replace(hwmodels.get("gtx480"), description="")
    assert "description" not in hwmodels.dumps_toml(hw)
    assert hwmodels.with_overrides(hw, ["sm_count=14"]).description == ""


@pytest.mark.parametrize("spec", ["conv:n=1,c=3,h=4,w=4,k=8,r=1,s=1,",
                                  "conv:n=1,,c=3,h=4,w=4,k=8,r=1,s=1"])
def test_a_conv_shape_with_an_empty_item_is_refused(capsys, spec):
    code, _, err = _run(capsys, "workload", "show", spec)
    assert code == 2 and "has an empty item" in err


def test_zero_registers_is_cudas_no_register_limit(capsys):
    # cuda_occupancy.h: regsAllocatedPerWarp == 0 -> the register limit is INT_MAX; a 128-
    # thread block (4 warps) on an H100 SM (64 warps, 32 blocks) is then warp-limited: 16
    code, out, _ = _run(capsys, "occupancy", "--hw", "h100-sxm", "--block", "128", "--regs", "0")
    assert code == 0 and "16 blocks/SM, 64 warps/SM" in out and "registers -" in out


def test_zero_dram_latency_prints_no_warning(capsys):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out, err = _run(capsys, "simulate", "simt", "--hw", "gtx480", "--kernel", "relu",
                              "--n", "4096", "--set", "dram.latency_cycles=0", "--mode", "analytic")
    assert code == 0 and err == "" and "analytic model" in out


def test_a_batch_too_large_names_batch_the_layer_and_the_largest(capsys):
    # conv1's output is 64 x 112 x 112 = 802,816 elements a sample: 2**48 // 802,816
    largest = 2**48 // (64 * 112 * 112)
    code, _, err = _run(capsys, "roofline", "--hw", "h100-sxm", "--workload", "resnet50",
                        "--batch", "2147483647")
    assert code == 2 and err.startswith("roofsim: error: --batch 2147483647: layer conv1's")
    assert f"batch at most {largest:,}" in err
    import workloads
    assert len(workloads.resolve("resnet50", batch=largest).ops) == 106
    with pytest.raises(ValueError, match=f"batch={largest + 1}: "):
        workloads.resolve("resnet50", batch=largest + 1)


def test_measure_out_names_a_file_as_a_file(capsys, tmp_path):
    f = tmp_path / "g.toml"
    f.write_text("x")
    code, _, err = _run(capsys, "measure", "micro", "--out", str(f))
    assert code == 2 and "a file, not a folder" in err


def test_a_pipeline_run_of_seconds_is_not_refused():
    # resnet50 on 8x8: 398,488 folds (some 12 s), well under the limit of minutes
    import hwmodels
    import workloads
    from simulator.systolic.engine import PIPELINE_FOLDS_PER_S, PIPELINE_MAX_FOLDS, split_groups
    from simulator.systolic.lowering import Lowered
    net = workloads.resolve("resnet50")
    folds = 0
    for op in net.ops:
        if op.kind in ("conv2d", "gemm"):
            one, g = split_groups(op)
            L = Lowered(one, "ws", 8, 8)
            folds += L.row_folds * L.col_folds * g
    assert folds == 398_488 < PIPELINE_MAX_FOLDS
    assert 60 <= PIPELINE_MAX_FOLDS / PIPELINE_FOLDS_PER_S <= 5 * 60       # "minutes"
    assert hwmodels.get("systolic-8x8").rows == 8

def _roofsim(*argv, **kw):
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "simulator", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, **kw)


def test_an_output_onto_a_pipe_is_written_through_it():
    """/dev/stdout, /proc/self/fd/N onto an anonymous pipe (`| cat`): its link names
    `pipe:[N]`, no file in a folder; the output is written into the pipe, after what the
    command printed. gemm 64x64x64 is 2 * 64**3 = 524,288 FLOP."""
    import csv
    import subprocess
    import sys
    r = _roofsim("roofline", "--hw", "gtx480", "--workload", "gemm:64x64x64", "--csv",
                 "/dev/stdout", env={**os.environ, "PYTHONUNBUFFERED": ""})
    assert r.returncode == 0, r.stderr
    head, _, tail = r.stdout.partition("layer,kind,shape,")
    assert "lower-bound time" in head                  # the table first, then the CSV
    row = next(csv.DictReader(("layer,kind,shape," + tail).splitlines()))
    assert row["layer"] == "gemm" and int(row["flops"]) == 2 * 64 ** 3
    # a pipe of its own, as a descriptor: the JSON read back whole from it
    rd, wr = os.pipe()
    p = subprocess.Popen([sys.executable, "-m", "simulator", "roofline", "--hw", "gtx480",
                          "--workload", "gemm:64x64x64", "--json", f"/proc/self/fd/{wr}",
                          "--csv", "/dev/null"], cwd=ROOT, pass_fds=(wr,),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.close(wr)
    with os.fdopen(rd) as fh:
        doc = json.load(fh)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    assert doc["totals"]["flops"] == 2 * 64 ** 3 and doc["workload"]["layers"][0]["M"] == 64


def test_an_output_through_a_link_into_no_folder_makes_none(tmp_path, capsys):
    link = tmp_path / "l.csv"
    link.symlink_to(tmp_path / "none" / "deeper" / "x.csv")
    code, _, err = _run(capsys, "roofline", "--hw", "gtx480", "--workload", "gemm:64x64x64",
                        "--csv", str(link))
    assert code == 2 and "(where its link leads) does not exist" in err
    assert not (tmp_path / "none").exists() and link.is_symlink()


def test_partial_outputs_or_whole_ones_never_both(tmp_path):
    """Ctrl-C on a command on its own thread: the partial writer runs, unless the whole
    outputs are being written (then it waits for them and writes nothing)."""
    import threading
    import time

    from simulator.cli.outputs import Partial
    wrote = []
    part = Partial()
    part.keep(lambda: wrote.append("partial"))
    part.stop()
    assert wrote == ["partial"]
    part.stop()                                     # once only
    assert wrote == ["partial"]
    part = Partial()
    part.keep(lambda: wrote.append("partial again"))

    def whole():
        with part.final():
            time.sleep(0.3)
            wrote.append("whole")
    t = threading.Thread(target=whole)
    t.start()
    time.sleep(0.05)
    part.stop()
    t.join()
    assert wrote == ["partial", "whole"]


def test_a_late_ctrl_c_is_exit_130_not_death_by_signal():
    """SIGINT after the command's work, as the process exits (here: in an exit
    function): one line, exit 130 (it used to die by the signal, status -2, or print a
    traceback)."""
    import subprocess
    import sys
    code = ("import atexit, os, signal, sys, time; sys.argv[0] = 'roofsim'\n"
            "atexit.register(lambda: (os.kill(os.getpid(), signal.SIGINT), time.sleep(5)))\n"
            "from simulator.cli import main\n"
            "sys.exit(main(['hw', 'list']))\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 130, (r.returncode, r.stderr)
    assert r.stderr.strip().endswith("roofsim: interrupted") and "Traceback" not in r.stderr

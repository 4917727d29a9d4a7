"""``roofsim check``'s trace readers check each input kind against its schema on load
(issue 25): the committed traces in data/traces/h100-sxm/, copied to a temporary folder
and changed one field at a time, are refused with a message naming the file, the record
and the field -- or, where the trace is one a profiler writes, read as it means."""
import copy
import hashlib
import json
import os
from pathlib import Path

import pytest

import hwmodels
from simulator.analysis.check import check, read, read_ncu, read_plain, read_torch
from simulator.cli import main

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces" / "h100-sxm"
H100 = hwmodels.get("h100-sxm")
RESNET = json.loads((TRACES / "torch_resnet50_b8.json").read_text())
EVENTS = RESNET["traceEvents"]
CONV_K = next(i for i, e in enumerate(EVENTS) if e.get("cat") == "kernel")      # implicit_convolve_sgemm
_EXT = {}
for _i, _e in enumerate(EVENTS):
    if _e.get("cat") == "cpu_op":
        _EXT.setdefault(_e["args"]["External id"], []).append(_i)
ADD_K = next(i for i, e in enumerate(EVENTS) if e.get("cat") == "kernel"
             and any(EVENTS[j]["name"] == "aten::add_" for j in _EXT.get(e["args"]["External id"], [])))
CONV_OP = _EXT[EVENTS[CONV_K]["args"]["External id"]][0]      # aten::cudnn_convolution
ADD_OP = _EXT[EVENTS[ADD_K]["args"]["External id"]][0]        # aten::add_
NCU = (TRACES / "ncu_roofsim.csv").read_text()


def _torch(tmp_path, change, name="t.json"):
    """The ResNet-50 trace with ``change(events)`` applied, written to tmp_path."""
    doc = copy.deepcopy(RESNET)
    change(doc["traceEvents"])
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def _set(i, path, value):
    def change(ev):
        o = ev[i]
        for k in path[:-1]:
            o = o[k]
        o[path[-1]] = value
    return change


def _mapping(ks):
    rows = [[k.name, repr(k.seconds), k.kind, k.op.describe() if k.op else None, k.source,
             repr(k.group), sorted(k.counters.items())] for k in ks]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


# Figures of the original readers (main at 2148c1e, before the schemas), printed by
# running this file's _mapping over read(TRACES / name) there: kernel count, kernels per
# kind, and a digest of every kernel's name, seconds, kind, op, operator, group and counters.
REAL = {"torch_resnet50_b8.json": (174, {"convolution": 53, "normalization": 53, "elementwise": 65,
                                         "pooling": 2, "gemm": 1}, "dda07e97c1d78549"),
        "torch_gemm_loop.json": (19, {"gemm": 7, "elementwise": 12}, "645b0e498c9d6352"),
        "ncu_roofsim.csv": (10, {"other": 10}, "0ed660f1916b6818")}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_traces_read_as_before(name):
    ks = read(TRACES / name)
    n, kinds, digest = REAL[name]
    got = {}
    for k in ks:
        got[k.kind] = got.get(k.kind, 0) + 1
    assert (len(ks), got, _mapping(ks)) == (n, kinds, digest)
    assert all(k.op is None or k.op.dtype == "fp32" for k in ks) and not any(k.note for k in ks)


# --- 1. field types and row lengths --------------------------------------------------------

@pytest.mark.parametrize("change,needle", [
    (_set(CONV_K, ["args", "External id"], [1, 2]), rf"event {CONV_K}, kernel 'void implicit_convolve_sgemm.*args.External id = \[1, 2\]: an integer"),
    (_set(CONV_K, ["args"], [1, 2]), rf"event {CONV_K}, kernel .*: args = \[1, 2\]: an object"),
    (_set(CONV_K, ["name"], 42), rf"event {CONV_K} \(a kernel\): name = 42: a string"),
    (_set(CONV_OP, ["args", "Input Dims"], [[[[8]]], [64]]), r"operator 'aten::cudnn_convolution': args.Input Dims\[0\]\[0\]\[0\] = \[8\]: a size is an integer >= 0"),
    (_set(CONV_OP, ["args", "Input Dims"], 5), r"args.Input Dims = 5: a list"),
    (_set(CONV_OP, ["ts"], [1]), rf"event {CONV_OP}, operator 'aten::cudnn_convolution': ts = \[1\]: a finite number"),
    (_set(CONV_OP, ["name"], 42), rf"event {CONV_OP} \(an operator\): name = 42: a string"),
    (_set(CONV_OP, ["args", "Concrete Inputs"], 5), r"args.Concrete Inputs = 5: a list of strings"),
    (_set(CONV_OP, ["args", "Input type"], [1, 2]), r"args.Input type = \[1, 2\]: a list of strings"),
    (_set(CONV_OP, ["args", "Concrete Inputs", 3], "[2.5, 2]"), r"args.Concrete Inputs\[3\] = '\[2.5, 2\]': integers"),
    (lambda ev: ev.__setitem__(5, [1]), r"event 5 = \[1\]: an object"),
])
def test_torch_field_types(tmp_path, change, needle):
    p = _torch(tmp_path, change)
    with pytest.raises(ValueError, match=needle) as e:
        read(p)
    assert str(p) in str(e.value)


def test_zero_duration_kernel_is_kept_and_divides_nothing(tmp_path, capsys):
    """A kernel of 0 us (a profiler may round a short one down) is kept: no achieved rates,
    and flagged faster than its bound, since its op needs time."""
    p = _torch(tmp_path, _set(ADD_K, ["dur"], 0))
    ks = read(p)
    assert len(ks) == 174 and ks[[k.name for k in ks].index(EVENTS[ADD_K]["name"])].seconds == 0
    doc = check(H100, ks)
    row = next(r for r in doc["kernels"] if r["seconds"] == 0)
    assert row["faster_than_bound"] and row["achieved_flop_per_s"] is None
    assert main(["check", "--hw", "h100-sxm", "--trace", str(p)]) == 0
    capsys.readouterr()
    # an ncu row of 0 ns is no kernel (ncu times in nanoseconds; a kernel takes at least
    # one): refused, as every reader refuses a time under the suites' MIN_SECONDS
    lines = NCU.splitlines()
    head = next(__import__("csv").reader([lines[0]]))
    t = head.index("gpu__time_duration.sum")
    row = next(__import__("csv").reader([lines[2]]))
    row[t] = "0"
    lines[2] = ",".join(f'"{x}"' for x in row)
    (tmp_path / "n.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"n.csv line 3, kernel 'relu.*gpu__time_duration.sum = '0': a "
                                         r"duration in ns: a finite number >= 1 \(a nanosecond\)"):
        read(tmp_path / "n.csv")


def _ncu(tmp_path, line, col, value, name="n.csv"):
    """The ncu CSV with field ``col`` of line ``line`` (0-based) set to ``value``; col None
    cuts the line to its first three fields."""
    import csv
    import io
    rows = list(csv.reader(io.StringIO(NCU)))
    rows[line] = rows[line][:3] if col is None else \
        [value if h == col else x for h, x in zip(rows[0], rows[line])]
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    p = tmp_path / name
    p.write_text(out.getvalue())
    return p


@pytest.mark.parametrize("line,col,value,needle", [
    (1, None, None, "line 2: the units row has 3 fields; the header has 289"),
    (3, None, None, "line 4: 3 fields; the header has 289"),
    (2, "gpu__time_duration.sum", "nan", r"line 3, kernel 'relu.*gpu__time_duration.sum = 'nan': a duration in ns"),
    (2, "gpu__time_duration.sum", "-5,000", r"gpu__time_duration.sum = '-5,000': a duration in ns: a finite number >= 1 \(a nanosecond\)"),
    (2, "gpu__time_duration.sum", "fast", r"gpu__time_duration.sum = 'fast'"),
    (2, "gpu__time_duration.sum", "1e308", r"at most an hour"),
    (2, "dram__bytes_read.sum", "-67,120,128", r"line 3, kernel 'relu.*dram__bytes_read.sum = '-67,120,128': a count in byte: a finite number >= 0"),
    (2, "dram__bytes_write.sum", "inf", r"dram__bytes_write.sum = 'inf'"),
    (1, "gpu__time_duration.sum", "fortnight", r"line 2: gpu__time_duration.sum in 'fortnight'; allowed: nsecond"),
    (1, "dram__bytes_read.sum", "Pbyte", r"line 2: dram__bytes_read.sum in 'Pbyte'; allowed"),
])
def test_ncu_rows(tmp_path, line, col, value, needle):
    p = _ncu(tmp_path, line, col, value)
    with pytest.raises(ValueError, match=needle):
        read(p)
    with pytest.raises(ValueError, match=needle):
        read_ncu(p)


# --- 2. impossible numbers -------------------------------------------------------------------

@pytest.mark.parametrize("text,needle", [
    ("NaN", "dur = NaN"), ("Infinity", "dur = Infinity"), ("-200", "dur = -200"),
    ("true", "dur = true"), ("1e308", "dur = 1e\\+308"), ("1" + "0" * 400, "dur = 1000"),
    ('"12.5"', "dur = '12.5'"), ("-0.0", "dur = -0.0"),
])
def test_impossible_durations(tmp_path, text, needle):
    p = _torch(tmp_path, _set(CONV_K, ["dur"], "@DUR@"))
    p.write_text(p.read_text().replace('"@DUR@"', text))
    with pytest.raises(ValueError, match=rf"event {CONV_K}, kernel 'void implicit.*: {needle}.*"
                                         r"a duration is a finite number of microseconds, >= 0"):
        read(p)


def test_a_key_given_twice_is_refused(tmp_path):
    """JSON keeps the last of two equal keys; a trace's event with two durations is refused."""
    p = _torch(tmp_path, _set(CONV_K, ["dur"], "@DUR@"))
    p.write_text(p.read_text().replace('"dur": "@DUR@"', '"dur": 36.2, "dur": -200'))
    with pytest.raises(ValueError, match=rf"event {CONV_K}, kernel 'void implicit.*: dur is given twice "
                                         r"\(36.2, then -200\)"):
        read(p)
    p.write_text('{"traceEvents": [], "traceEvents": []}')
    with pytest.raises(ValueError, match="traceEvents is given twice"):
        read(p)
    p = _torch(tmp_path, _set(CONV_OP, ["args", "Input Dims"], "@D@"))
    p.write_text(p.read_text().replace('"Input Dims": "@D@"', '"Input Dims": [], "Input Dims": [[1]]'))
    with pytest.raises(ValueError, match=r"operator 'aten::cudnn_convolution': args.Input Dims is given twice"):
        read(p)


def test_a_fractional_size_is_refused(tmp_path):
    p = _torch(tmp_path, _set(CONV_OP, ["args", "Input Dims", 0, 2], 224.9))
    with pytest.raises(ValueError, match=r"args.Input Dims\[0\]\[2\] = 224.9: a size is an integer >= 0"):
        read(p)


def test_shapes_no_op_can_have_are_refused(tmp_path):
    """A 300-row window over a 224-row image (padding 3) is no convolution: named, not an internal error."""
    p = _torch(tmp_path, _set(CONV_OP, ["args", "Input Dims", 1], [64, 3, 300, 7]))
    with pytest.raises(ValueError, match=r"operator 'aten::cudnn_convolution': its inputs make no "
                                         r"convolution op"):
        read(p)


def test_tensor_lists_and_empty_tensors_are_read(tmp_path):
    """A TensorList's dims (a list of shapes, as PyTorch records aten::cat's) and an empty
    tensor are what real traces hold: read, the latter mapped to no op with a note."""
    p = _torch(tmp_path, _set(ADD_OP, ["args", "Input Dims", 0], [[8, 2], [8, 3]]))
    k = next(k for k in read(p) if k.name == EVENTS[ADD_K]["name"] and k.source == "aten::add_")
    assert k.op is None
    p = _torch(tmp_path, _set(ADD_OP, ["args", "Input Dims"], [[8, 0, 56, 56], [8, 0, 56, 56], []]))
    k = next(k for k in read(p) if k.source == "aten::add_" and k.op is None)
    assert "empty tensor" in k.note


@pytest.mark.parametrize("text,needle", [
    ("name,op,seconds\na,gemm:4x4x4,nan\n", "line 2: seconds = 'nan': must be a positive"),
    ("name,op,seconds\na,gemm:4x4x4,0\n", "line 2: seconds = '0': must be a positive"),
    ("name,op,seconds\na,gemm:4x4x4,1e308\n", "at most an hour"),
    ("name,op,seconds\na,gemm:4x4x4\n", "line 2: 2 fields; the header name,op,seconds has 3"),
    ("name,op,seconds\na,gemm:4x4x4,1,extra\n", "line 2: 4 fields"),
    ("name,op,seconds\n", "no rows under the header"),
])
def test_plain_rows(tmp_path, text, needle):
    p = tmp_path / "p.csv"
    p.write_text(text)
    with pytest.raises(ValueError, match=needle):
        read_plain(p)


# --- 3. dtypes and operator flags ----------------------------------------------------------

@pytest.mark.parametrize("ptype,dtype", [("c10::BFloat16", "bf16"), ("c10::Half", "fp16"),
                                         ("double", "fp64"), ("float", "fp32")])
def test_dtypes_are_read(tmp_path, ptype, dtype):
    p = _torch(tmp_path, _set(ADD_OP, ["args", "Input type"], [ptype, ptype, "Scalar"]))
    ks = read(p)
    k = next(k for k in ks if k.source == "aten::add_" and k.group == EVENTS[ADD_K]["args"]["External id"])
    assert k.op.dtype == dtype and k.op.dtype_bytes * k.op.n * 3 == k.op.min_bytes()
    doc = check(H100, ks)
    row = next(r for r in doc["kernels"] if r["source"] == "aten::add_" and r["dtype"] == dtype)
    assert row["limiter"] and row["bound_seconds"] > 0
    assert check(H100, ks, "tf32")["kernels"]        # tf32 is the fp32 ops' arithmetic; others keep theirs


@pytest.mark.parametrize("ptype", ["c10::Float8_e4m3fn", "c10::complex<float>", "long int"])
def test_dtypes_roofsim_lacks_are_kept_unmapped_with_a_note(tmp_path, ptype):
    p = _torch(tmp_path, _set(ADD_OP, ["args", "Input type"], [ptype, ptype, "Scalar"]))
    k = next(k for k in read(p) if k.source == "aten::add_" and k.group == EVENTS[ADD_K]["args"]["External id"])
    assert k.op is None and k.kind == "elementwise" and k.note.startswith(f"{ptype} data (workloads.ir's dtypes")
    row = next(r for r in check(H100, [k])["kernels"])
    assert row["op"] == "other" and row["note"] == k.note and row["bound_seconds"] is None


def test_precision_is_the_fp32_ops_arithmetic(tmp_path, capsys):
    p = _torch(tmp_path, _set(ADD_OP, ["args", "Input type"], ["c10::BFloat16"] * 2 + ["Scalar"]))
    with pytest.raises(ValueError, match=r"precision='bf16': the arithmetic of the trace's fp32 ops"):
        check(H100, read(p), "bf16")
    with pytest.raises(ValueError, match=r"kernel 'void at::native::vectorized.*\(aten::add_\) is bf16 "
                                         r"data, and hw 'gtx480' has no bf16 peak"):
        check(hwmodels.get("gtx480"), read(p))
    assert main(["check", "--hw", "h100-sxm", "--trace", str(p)]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("change", [
    _set(CONV_OP, ["name"], "aten::cudnn_convolution_transpose"),
    _set(CONV_OP, ["name"], "aten::conv_transpose2d"),
    lambda ev: (_set(CONV_OP, ["name"], "aten::_convolution")(ev),
                _set(CONV_OP, ["args", "Concrete Inputs"], ["", "", "", "[2, 2]", "[3, 3]", "[1, 1]",
                                                            "True", "[0, 0]", "1"])(ev)),
])
def test_transposed_convolutions_are_not_bounded_as_forward_ones(tmp_path, change, capsys):
    p = _torch(tmp_path, change)
    k = next(k for k in read(p) if k.group == EVENTS[CONV_K]["args"]["External id"])
    assert k.kind == "convolution" and k.op is None and "transposed convolution" in k.note
    assert main(["check", "--hw", "h100-sxm", "--trace", str(p)]) == 0
    assert "1 of them: a transposed convolution" in capsys.readouterr().out


def test_forward_convolution_flag_is_read(tmp_path):
    ch = _set(CONV_OP, ["args", "Concrete Inputs"], ["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "False",
                                                     "[0, 0]", "1"])
    p = _torch(tmp_path, lambda ev: (_set(CONV_OP, ["name"], "aten::_convolution")(ev), ch(ev)))
    k = next(k for k in read(p) if k.group == EVENTS[CONV_K]["args"]["External id"])
    assert (k.op.H, k.op.R, k.op.stride, k.op.padding, k.op.P) == (224, 7, 2, 3, 112)
    p = _torch(tmp_path, lambda ev: (_set(CONV_OP, ["name"], "aten::_convolution")(ev),
                                     _set(CONV_OP, ["args", "Concrete Inputs", 6], "maybe")(ev)))
    with pytest.raises(ValueError, match=r"args.Concrete Inputs\[6\] = 'maybe': True or False"):
        read(p)


# --- 4. the input's kind from its content ----------------------------------------------------

def test_what_a_path_is(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "blank.csv").write_text(" \n\n")
    (tmp_path / "other.csv").write_text("a,b,c\n1,2,3\n")
    (tmp_path / "bad.txt").write_bytes(b"name,op,seconds\n\xff,gemm:4x4x4,1\n")
    for path, needle in ((tmp_path, "is a folder, not a regular file"), (fifo, "is a FIFO, not a regular file"),
                         ("/dev/null", "is a character device, not a regular file"),
                         (tmp_path / "empty.json", "is empty"), (tmp_path / "blank.csv", "holds only white space"),
                         (tmp_path / "none.json", "does not exist"),
                         (tmp_path / "other.csv", "neither a PyTorch profiler trace .* its first line: 'a,b,c'"),
                         (tmp_path / "bad.txt", "not UTF-8 text")):
        with pytest.raises(ValueError, match=f"path={str(path)!r}: {needle}".replace("(", r"\(").replace(")", r"\)")
                           .replace("[", r"\[").replace(".*", ".*")):
            read(path)


def test_kind_from_content_and_byte_order_mark(tmp_path):
    t = tmp_path / "trace.txt"
    t.write_text((TRACES / "torch_gemm_loop.json").read_text())
    assert _mapping(read(t)) == REAL["torch_gemm_loop.json"][2]
    b = tmp_path / "bom.json"
    b.write_bytes(b"\xef\xbb\xbf" + (TRACES / "torch_gemm_loop.json").read_bytes())
    assert _mapping(read(b)) == _mapping(read_torch(b)) == REAL["torch_gemm_loop.json"][2]
    n = tmp_path / "ncu.json"
    n.write_bytes(b"\xef\xbb\xbf==PROF== Connected to process 1\n" + NCU.encode())
    assert _mapping(read(n)) == REAL["ncu_roofsim.csv"][2]
    c = tmp_path / "mine.json"
    c.write_text("\ufeffname,op,seconds\nmine,gemm:64x64x64,1e-3\n")
    assert [k.op.M for k in read(c)] == [64]
    g = tmp_path / "t.json.gz"
    import gzip
    g.write_bytes(gzip.compress(b"{}"))
    with pytest.raises(ValueError, match="gzip-compressed"):
        read(g)


def test_cli_one_line(tmp_path, capsys):
    p = _torch(tmp_path, _set(CONV_K, ["dur"], -200))
    assert main(["check", "--hw", "h100-sxm", "--trace", str(p)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"event {CONV_K}, kernel 'void implicit_convolve" in err
    assert main(["check", "--hw", "h100-sxm", "--trace", str(tmp_path)]) == 2
    assert "--trace" in capsys.readouterr().err


# --- 5. every argument that changes an op's shape, read and checked (audit 1) -------------

def _one_op(tmp_path, name, dims, concrete, types=None):
    """A trace of one kernel launched by one operator call."""
    doc = {"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": name, "ts": 0, "dur": 10,
         "args": {"External id": 1, "Input Dims": dims, "Concrete Inputs": concrete,
                  "Input type": types or ["float"] * len(dims)}},
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 5, "args": {"External id": 1}}]}
    p = tmp_path / "one.json"
    p.write_text(json.dumps(doc))
    return p


_CONV_ARGS = ["", "", "", "[1, 1]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"]


def _conv_args(**at):
    c = list(_CONV_ARGS)
    for j, v in at.items():
        c[int(j[1:])] = v
    return c


@pytest.mark.parametrize("name,dims,concrete,needle", [
    ("aten::mm", [[128, 64], [32, 256]], ["", ""], r"inner dimensions disagree: Input Dims\[0\]\[1\] = 64, Input Dims\[1\]\[0\] = 32"),
    ("aten::addmm", [[256], [128, 64], [32, 256], [], []], ["", "", "", "1", "1"],
     r"inner dimensions disagree: Input Dims\[1\]\[1\] = 64, Input Dims\[2\]\[0\] = 32"),
    ("aten::addmm", [[7], [128, 64], [64, 256], [], []], ["", "", "", "1", "1"], r"the bias .* does not broadcast to the product's 128x256"),
    ("aten::linear", [[128, 64], [256, 32], [256]], ["", "", ""], r"input's last dimension 64 .* not the weight's 32"),
    ("aten::mm", [[2, 128, 64], [64, 256]], ["", ""], r"aten::mm multiplies two matrices"),
    ("aten::convolution", [[8, 64, 56, 56], [64, 7, 3, 3], [64]], _CONV_ARGS, r"input's 64 channels .* not the weight's 7 .* times groups \(1\)"),
    ("aten::convolution", [[8, 64, 56, 56], [64, 32, 3, 3], [64]], _conv_args(c8="3"), r"input's 64 channels .* weight's 32 .* groups \(3\)"),
    ("aten::convolution", [[8, 64, 56, 56], [63, 32, 3, 3], [64]], _conv_args(c8="2"), r"weight's 63 filters .* not a multiple of groups \(2\)"),
    ("aten::convolution", [[8, 64, 56, 56], [64, 64, 3, 3], [64]], _conv_args(c8="0"), r"Concrete Inputs\[8\] = '0': the groups, one integer from 1"),
    ("aten::convolution", [[8, 64, 56, 56], [64, 64, 3, 3], [64]], _conv_args(c8="-2"), r"Concrete Inputs\[8\] = '-2': the groups"),
    ("aten::convolution", [[8, 64, 56, 56], [64, 64, 3, 3], [64]], _conv_args(c5="[0, 0]"), r"Concrete Inputs\[5\] = '\[0, 0\]': the dilation"),
    ("aten::convolution", [[8, 64, 56, 56], [64, 64, 3, 3], [64]], _conv_args(c3="[1, 1, 1]"), r"Concrete Inputs\[3\] = '\[1, 1, 1\]': the stride, one or two"),
    ("aten::convolution", [[8, 64, 56, 56], [64, 64, 3, 3], [64]], _conv_args(c3="[--1, 1]"), r"Concrete Inputs\[3\] = .*: integers"),
    ("aten::convolution", [[8, 64, 56, 56], [64, 64, 3, 3], [64]], _conv_args(c3="[1_0, 1]"), r"Concrete Inputs\[3\] = .*: integers"),
    ("aten::max_pool2d_with_indices", [[8, 64, 112, 112], [], [], [], [], []], ["", "[3, 3]", "[2, 2]", "[1, 1]", "[0, 0]", "False"],
     r"Concrete Inputs\[4\] = '\[0, 0\]': the dilation"),
    ("aten::mean", [[8, 2048, 7, 7], [], [], []], ["", "[5]", "False", ""], r"Concrete Inputs\[1\] = '\[5\]': dims of a 4-D tensor"),
])
def test_shapes_that_disagree_are_refused(tmp_path, name, dims, concrete, needle):
    """A call no PyTorch run can record is refused, naming the operator and the fields."""
    p = _one_op(tmp_path, name, dims, concrete)
    with pytest.raises(ValueError, match=f"event 0, operator '{name}': .*" + needle):
        read(p)


_POOL = "aten::max_pool2d_with_indices"


@pytest.mark.parametrize("name,dims,concrete,note", [
    ("aten::convolution", [[8, 64, 56, 56], [64, 64, 3, 3], [64]], _conv_args(c3="[1, 2]"), "an asymmetric stride [1, 2]"),
    ("aten::convolution", [[8, 64, 56, 56], [64, 64, 3, 3], [64]], _conv_args(c4="[1, 0]"), "an asymmetric padding [1, 0]"),
    ("aten::cudnn_convolution", [[8, 64, 56, 56], [64, 64, 3, 3]], ["", "", "[1, 1]", "[2, 1]", "[1, 1]", "1"], "an asymmetric stride [2, 1]"),
    ("aten::convolution", [[8, 64, 56, 56], [64, 64, 3, 3], [64]], ["", ""], "its stride, padding and dilation are not in the trace"),
    ("aten::convolution", [[8, 64, 56], [64, 64, 3, 3], [64]], _CONV_ARGS, "a convolution of a 3-D input by a 4-D weight"),
    (_POOL, [[8, 64, 112, 112], [], [], [], [], []], ["", "[3, 3]", "[2, 2]", "[1, 1]", "[2, 2]", "False"], "a dilated pool (dilation [2, 2]"),
    # 112 + 2 - 3 = 111 rows past the first window, odd: ceil gives 57 windows, floor 56
    (_POOL, [[8, 64, 112, 112], [], [], [], [], []], ["", "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", "True"], "ceil_mode=True"),
    (_POOL, [[8, 64, 112, 112], [], [], [], [], []], ["", "[3, 3]", "[2, 1]", "[1, 1]", "[1, 1]", "False"], "an asymmetric stride [2, 1]"),
    (_POOL, [[8, 64, 112, 112], [], [], [], [], []], ["", "[3, 3]", "[2, 2]", "[1, 0]", "[1, 1]", "False"], "an asymmetric padding [1, 0]"),
    ("aten::adaptive_avg_pool2d", [[8, 2048, 7, 7], []], ["", "[2, 2]"], "an adaptive pool to [2, 2]"),
    ("aten::mean", [[8, 2048, 7, 7], [], [], []], ["", "[1]", "False", ""], "a mean over dims [1]"),
    ("aten::mean", [[8, 2048, 7, 7], [], [], []], ["", "[1, 2, 3]", "False", ""], "a mean over dims [1, 2, 3]"),
    ("aten::matmul", [[64], [64]], ["", ""], "a matmul of a 1-D by a 1-D tensor"),
])
def test_calls_the_ir_cannot_hold_are_unmapped_with_a_note(tmp_path, name, dims, concrete, note, capsys):
    p = _one_op(tmp_path, name, dims, concrete)
    (k,) = read(p)
    assert k.op is None and k.kind in ("convolution", "pooling", "gemm") and k.note.startswith(note)
    assert main(["check", "--hw", "h100-sxm", "--trace", str(p)]) == 0
    assert f"1 of them: {note}" in capsys.readouterr().out


@pytest.mark.parametrize("name,dims,concrete,want", [
    # shapes from first principles: (56 + 2*1 - 3) // 1 + 1 = 56 rows out
    ("aten::convolution", [[8, 64, 56, 56], [64, 32, 3, 3], [64]], _conv_args(c8="2"), ("C", 64, "groups", 2, "P", 56)),
    ("aten::convolution", [[8, 64, 56, 56], [64, 1, 3, 3], [64]], _conv_args(c8="64"), ("C", 64, "groups", 64, "P", 56)),
    ("aten::convolution", [[8, 64, 56, 56], [64, 64, 3, 3], [64]], _conv_args(c3="[2]", c4="1"), ("stride", 2, "padding", 1, "P", 28)),
    # ceil_mode where it changes nothing: (113 + 2 - 3) / 2 = 56 exactly, 57 windows either way
    (_POOL, [[8, 64, 113, 113], [], [], [], [], []], ["", "[3, 3]", "[2, 2]", "[1, 1]", "[1, 1]", "True"], ("stride", 2, "padding", 1, "P", 57)),
    (_POOL, [[8, 64, 112, 112], [], [], [], [], []], ["", "[3, 3]", "[]", "[0, 0]", "[1, 1]", "False"], ("stride", 3, "padding", 0, "P", 37)),
    ("aten::mean", [[8, 2048, 7, 7], [], [], []], ["", "[3, 2]", "True", ""], ("R", 7, "S", 7, "P", 1)),
    ("aten::adaptive_avg_pool2d", [[8, 2048, 7, 7], []], ["", "[1, 1]"], ("R", 7, "S", 7, "P", 1)),
    ("aten::linear", [[4, 128, 64], [256, 64], [256]], ["", "", ""], ("M", 512, "N", 256, "K", 64)),
    ("aten::linear", [[64], [256, 64], [256]], ["", "", ""], ("M", 1, "N", 256, "K", 64)),
    ("aten::addmm", [[256], [128, 64], [64, 256], [], []], ["", "", "", "1", "1"], ("M", 128, "N", 256, "K", 64)),
])
def test_consistent_calls_map_to_their_own_shape(tmp_path, name, dims, concrete, want):
    (k,) = read(_one_op(tmp_path, name, dims, concrete))
    assert not k.note
    for f, v in zip(want[::2], want[1::2]):
        assert getattr(k.op, f) == v, f


# --- 6. numbers and bounds of every reader (audit 2) ----------------------------------------

@pytest.mark.parametrize("col,value,needle", [
    ("dram__bytes_read.sum", "1e300", r"dram__bytes_read.sum = '1e300': a count in byte: .*at most 1.845e\+19 \(2\*\*64"),
    ("dram__bytes_read.sum", "18,500,000,000,000,000,000", "at most 1.845e"),
    ("gpu__time_duration.sum", "\u0665\u0665", r"'\u0665\u0665': a duration in ns: .*ASCII decimal"),
    ("gpu__time_duration.sum", "5_000", r"'5_000': a duration in ns"),
    ("gpu__time_duration.sum", "\uff15", "a duration in ns"),            # a fullwidth 5
    ("gpu__time_duration.sum", "0x10", "a duration in ns"),
    ("gpu__time_duration.sum", "1,5", "a duration in ns"),              # a decimal comma
    ("gpu__time_duration.sum", "infinity", "a duration in ns"),
])
def test_ncu_numbers_are_ascii_decimal_and_bounded(tmp_path, col, value, needle):
    import csv
    import io
    lines = NCU.splitlines(True)
    head, row = next(csv.reader([lines[0]])), next(csv.reader([lines[2]]))
    row[head.index(col)] = value
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(row)
    p = tmp_path / "n.csv"
    p.write_text(lines[0] + lines[1] + out.getvalue())
    with pytest.raises(ValueError, match=r"line 3, kernel .*" + needle):
        read(p)


def test_ascii_numbers_still_read(tmp_path):
    from simulator.analysis.trace_fields import decimal
    assert [decimal(t) for t in ("54,848", " 5.4848e4 ", "1,678,003.20", ".5", "-0", "5.")] == \
        [54848.0, 54848.0, 1678003.2, 0.5, 0.0, 5.0]
    assert [decimal(t) for t in ("5_000", "\u0665", "nan", "1e", "12,34", ",", "", "\u20035")] == [None] * 8
    assert decimal("-12", integer=True) == -12 and decimal("1.0", integer=True) is None
    p = tmp_path / "p.csv"
    p.write_text("name,op,seconds\na,gemm:4x4x4,\u0661\n")
    with pytest.raises(ValueError, match=r"line 2: seconds = '\u0661'.*ASCII decimal"):
        read_plain(p)


def test_ncu_header_names_with_spaces_around_them(tmp_path):
    p = tmp_path / "s.csv"
    p.write_text(" ID , Kernel Name , gpu__time_duration.sum \n,, ns \n0,k,5\n")
    (k,) = read(p)
    assert (k.name, k.seconds) == ("k", 5e-9)


# --- 7. names made printable on load (audit 3) -------------------------------------------------

def test_names_are_made_printable_on_load(tmp_path, capsys):
    doc = {"traceEvents": [{"cat": "kernel", "name": "a\x1b[2J\nb\x07\ud800c\u202e", "dur": 1},
                           {"cat": "kernel", "name": "plain <4> \\x", "dur": 1}]}
    p = tmp_path / "n.json"
    p.write_text(json.dumps(doc))
    want = "a\\x1b[2J\\x0ab\\x07\\ud800c\\u202e"
    assert [k.name for k in read(p)] == [want, "plain <4> \\x"]
    out_json, out_csv = tmp_path / "o.json", tmp_path / "o.csv"
    assert main(["check", "--hw", "h100-sxm", "--trace", str(p), "--json", str(out_json), "--csv", str(out_csv)]) == 0
    printed = capsys.readouterr().out
    assert want in printed and "\x1b" not in printed and "\x07" not in printed
    assert json.loads(out_json.read_text())["kernels"][0]["name"] == want
    assert want in out_csv.read_text()
    c = tmp_path / "n.csv"
    c.write_text("ID,Kernel Name,gpu__time_duration.sum\n,,ns\n0,\"x\x1by\r\nz\",5\n")
    assert [k.name for k in read(c)] == ["x\\x1by\\x0d\\x0az"]
    c.write_text("name,op,seconds\n\"q\x07\",gemm:4x4x4,1\n")
    assert [k.name for k in read(c)] == ["q\\x07"]


# --- 8. second audit: counted bytes, units, casts, time range, duplicate columns ---------------

_BW = {lv.name: lv.bandwidth_bytes_per_s for lv in H100.memory_levels()}


def _ncu_text(metrics, units, values):
    """A minimal ncu raw CSV: one kernel k of 1 us with ``metrics`` in ``units``."""
    head = ["ID", "Kernel Name", "gpu__time_duration.sum", *metrics]
    rows = [head, ["", "", "usecond", *units], ["0", "k", "1", *values]]
    return "\n".join(",".join(f'"{x}"' for x in r) for r in rows) + "\n"


@pytest.mark.parametrize("metrics,units,values,moved,level", [
    # write-only DRAM: 50 GB in 1 us is 50e9 / 3.35e12 s = 14.9 ms at the least
    (["dram__bytes_write.sum"], ["Gbyte"], ["50"], 50e9, "dram"),
    (["dram__bytes_read.sum"], ["Mbyte"], ["3"], 3e6, "dram"),
    # reads and writes summed
    (["dram__bytes_read.sum", "dram__bytes_write.sum"], ["Gbyte", "Gbyte"], ["1", "2"], 3e9, "dram"),
    # an L2 count alone bounds too, at the L2's bandwidth
    (["lts__t_bytes.sum"], ["Gbyte"], ["10"], 10e9, "l2"),
])
def test_any_byte_counter_bounds_an_ncu_kernel(tmp_path, metrics, units, values, moved, level):
    p = tmp_path / "n.csv"
    p.write_text(_ncu_text(metrics, units, values))
    (row,) = check(H100, read(p))["kernels"]
    assert row["bound_seconds"] == pytest.approx(moved / _BW[level], rel=1e-12)
    assert row["limiter"] == f"{level} (counted bytes)"
    assert row["fraction_of_roof"] == pytest.approx(moved / _BW[level] / 1e-6, rel=1e-12)
    assert row["faster_than_bound"] is (moved / _BW[level] > 1e-6)


def test_the_slower_level_binds_a_kernel_with_dram_and_l2_counts(tmp_path):
    """DRAM 1 GB (0.30 ms at 3.35 TB/s) and L2 4 GB (0.69 ms at 5.82 TB/s): the L2 binds."""
    p = tmp_path / "n.csv"
    p.write_text(_ncu_text(["dram__bytes_read.sum", "lts__t_bytes.sum"], ["Gbyte", "Gbyte"], ["1", "4"]))
    (row,) = check(H100, read(p))["kernels"]
    assert row["bound_seconds"] == pytest.approx(4e9 / _BW["l2"]) and row["limiter"] == "l2 (counted bytes)"
    assert row["achieved_bytes_per_s"] == pytest.approx(1e9 / 1e-6)      # the DRAM's


@pytest.mark.parametrize("metric,unit", [
    ("dram__bytes_read.sum", "%"), ("dram__bytes_write.sum", "inst"), ("lts__t_bytes.sum", "ns"),
    ("dram__bytes_read.sum", ""), ("smsp__inst_executed.sum", "byte"), ("smsp__inst_executed.sum", "%"),
    ("gpu__time_duration.sum", "byte"), ("gpu__time_duration.sum", "%"),
])
def test_a_metric_in_a_unit_not_its_own_is_refused(tmp_path, metric, unit):
    p = tmp_path / "n.csv"
    if metric == "gpu__time_duration.sum":
        p.write_text(_ncu_text([], [], []).replace('"usecond"', f'"{unit}"'))
    else:
        p.write_text(_ncu_text([metric], [unit], ["50"]))
    with pytest.raises(ValueError, match=rf"n.csv line 2: {metric} in '{unit}'; allowed: "):
        read(p)


def test_metrics_in_their_own_units_are_scaled(tmp_path):
    p = tmp_path / "n.csv"
    p.write_text(_ncu_text(["dram__bytes_read.sum", "lts__t_bytes.sum", "smsp__inst_executed.sum"],
                           ["Kbyte", "byte", "Minst"], ["2", "5", "3"]).replace('"usecond"', '"msecond"'))
    (k,) = read(p)
    assert k.seconds == pytest.approx(1e-3)
    assert k.counters == {"dram__bytes_read.sum": 2e3, "lts__t_bytes.sum": 5.0, "smsp__inst_executed.sum": 3e6}


def _copy_bytes(tmp_path, name, dims, concrete, types):
    p = _one_op(tmp_path, name, dims, concrete, types)
    (row,) = check(H100, read(p))["kernels"]
    return row


_N = 8 * 64 * 56 * 56


@pytest.mark.parametrize("name,dims,concrete,types,read_b,write_b", [
    # an autocast cast, float to Half: fp32 read, fp16 written
    ("aten::_to_copy", [[8, 64, 56, 56], [], [], [], [], [], []], ["", "5", "", "", "", "False", ""],
     ["float", "Scalar", "", "", "", "Scalar", ""], 4, 2),
    # Half to float
    ("aten::_to_copy", [[8, 64, 56, 56], [], [], [], [], [], []], ["", "6", "", "", "", "False", ""],
     ["c10::Half", "Scalar", "", "", "", "Scalar", ""], 2, 4),
    # no dtype asked: a plain copy
    ("aten::_to_copy", [[8, 64, 56, 56], [], [], [], [], [], []], ["", "", "", "", "", "False", ""],
     ["float", "", "", "", "", "Scalar", ""], 4, 4),
    # copy_(self, src): reads src's dtype, writes self's
    ("aten::copy_", [[8, 64, 56, 56], [8, 64, 56, 56], []], ["", "", "False"], ["c10::Half", "float", "Scalar"], 4, 2),
    ("aten::copy_", [[8, 64, 56, 56], [8, 64, 56, 56], []], ["", "", "False"], ["float", "c10::BFloat16", "Scalar"], 2, 4),
    # to(dtype, non_blocking, copy, memory_format); to(device, dtype, ...); to(other, ...)
    ("aten::to", [[8, 64, 56, 56], [], [], [], []], ["", "15", "False", "False", ""], ["float", "Scalar", "Scalar", "Scalar", ""], 4, 2),
    ("aten::to", [[8, 64, 56, 56], [], [], [], [], []], ["", "", "7", "False", "False", ""], ["float", "Device", "Scalar", "Scalar", "Scalar", ""], 4, 8),
    ("aten::to", [[8, 64, 56, 56], [1], [], [], []], ["", "", "False", "False", ""], ["float", "c10::Half", "Scalar", "Scalar", ""], 4, 2),
    # type_as(self, other): other's dtype written
    ("aten::type_as", [[8, 64, 56, 56], [4]], ["", ""], ["c10::Half", "float"], 2, 4),
    ("aten::clone", [[8, 64, 56, 56], []], ["", ""], ["c10::Half", ""], 2, 2),
])
def test_a_copy_reads_one_dtype_and_writes_another(tmp_path, name, dims, concrete, types, read_b, write_b):
    row = _copy_bytes(tmp_path, name, dims, concrete, types)
    assert row["op"] == "copy" and row["compulsory_bytes"] == _N * (read_b + write_b)
    assert row["flops"] == 0
    # 5 us against the bytes at the L2's bandwidth (they fit in its 50 MB): the copy's bound
    assert row["bound_seconds"] == pytest.approx(_N * (read_b + write_b) / _BW["l2"], rel=1e-9)


def test_the_audits_autocast_cast_is_not_faster_than_its_bound(tmp_path):
    """1.80 us for 1,605,632 floats read (6.4 MB) and halves written (3.2 MB): 9.63 MB at
    the L2's 5.82 TB/s is 1.655 us, so 1.80 us is no faster than the bound."""
    p = _one_op(tmp_path, "aten::_to_copy", [[8, 64, 56, 56], [], [], [], [], [], []],
                ["", "5", "", "", "", "False", ""], ["float", "Scalar", "", "", "", "Scalar", ""])
    doc = json.loads(p.read_text())
    doc["traceEvents"][1]["dur"] = 1.8
    p.write_text(json.dumps(doc))
    (row,) = check(H100, read(p))["kernels"]
    assert row["bound_seconds"] == pytest.approx(_N * 6 / 5.820087e12, rel=1e-6)
    assert not row["faster_than_bound"] and "fp32->fp16" in row["shape"]


@pytest.mark.parametrize("name,dims,concrete,types,note", [
    ("aten::_to_copy", [[8, 64], [], [], [], [], [], []], ["", "4", "", "", "", "False", ""],
     ["float", "Scalar", "", "", "", "Scalar", ""], "a cast to ScalarType 4"),
    ("aten::_to_copy", [[8, 64], [], [], [], [], [], []], ["", "", "", "", "", "False", ""],
     ["float", "Scalar", "", "", "", "Scalar", ""], "its dtype is not in the trace"),
    ("aten::copy_", [[8, 64], [8, 64], []], ["", "", "False"], ["long int", "float", "Scalar"], "a cast to long int data"),
    ("aten::copy_", [[8, 64], [64], []], ["", "", "False"], ["float", "float", "Scalar"], "a broadcasting copy"),
    ("aten::type_as", [[8, 64], [4]], ["", ""], ["float", "bool"], "a cast to bool data"),
    ("aten::to", [[8, 64], [], []], ["", "", ""], ["float", "Scalar", ""], "an aten::to of 3 inputs"),
])
def test_a_copy_no_op_holds_is_unmapped_with_a_note(tmp_path, name, dims, concrete, types, note):
    row = _copy_bytes(tmp_path, name, dims, concrete, types)
    assert row["op"] == "other" and row["bound_seconds"] is None and note in row["note"]


def test_a_dtype_argument_that_is_no_scalar_type_is_refused(tmp_path):
    p = _one_op(tmp_path, "aten::_to_copy", [[8, 64], [], [], [], [], [], []], ["", "-1", "", "", "", "False", ""],
                ["float", "Scalar", "", "", "", "Scalar", ""])
    with pytest.raises(ValueError, match=r"event 0, operator 'aten::_to_copy'.*Concrete Inputs\[1\] = '-1': the dtype"):
        read(p)


@pytest.mark.parametrize("text,needle", [
    ("name,op,seconds\nk1,gemm:1x1x1,1e-300\n", r"line 2: seconds = '1e-300': .*at least 1e-09"),
    ("name,op,seconds\nk1,gemm:1x1x1,9.99e-10\n", r"line 2: seconds = '9.99e-10'"),
    ("name,op,seconds\nk1,gemm:1x1x1,3601\n", r"line 2: seconds = '3601'.*at most an hour"),
    ('"ID","Kernel Name","gpu__time_duration.sum"\n"","","nsecond"\n"0","k","0.5"\n',
     r"line 3, kernel 'k': gpu__time_duration.sum = '0.5': a duration in nsecond: a finite number >= 1"),
    ('"ID","Kernel Name","gpu__time_duration.sum"\n"","","usecond"\n"0","k","1e-300"\n',
     r"gpu__time_duration.sum = '1e-300': a duration in usecond: a finite number >= 0.001"),
])
def test_csv_times_are_in_the_suites_range(tmp_path, text, needle):
    p = tmp_path / "t.csv"
    p.write_text(text)
    with pytest.raises(ValueError, match=needle):
        read(p)


def test_csv_times_at_the_range_ends_are_read(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("name,op,seconds\na,gemm:8x8x8,1e-9\nb,gemm:8x8x8,3600\n")
    assert [k.seconds for k in read(p)] == [1e-9, 3600.0]


@pytest.mark.parametrize("dur,ok", [(0, True), (0.001, True), (0.0009, False), (1e-300, False), (5e-324, False)])
def test_torch_durations_are_0_or_at_least_a_nanosecond(tmp_path, dur, ok):
    p = _torch(tmp_path, _set(CONV_K, ["dur"], dur))
    if ok:
        assert read(p)[0].seconds == dur * 1e-6
    else:
        with pytest.raises(ValueError, match=rf"event {CONV_K}, kernel .*dur = .*: 0 \(what the profiler writes"):
            read(p)


def test_check_plot_of_extreme_accepted_times_warns_nothing(tmp_path, capsys):
    """The largest and smallest achieved rates an accepted input can give (a big GEMM in a
    nanosecond, a one-element op in an hour, counted bytes at both ends) plot with no
    warning from numpy or matplotlib."""
    import warnings
    plain = tmp_path / "p.csv"
    plain.write_text("name,op,seconds\nbig,gemm:16777216x16777216x16777216,1e-9\ntiny,relu:1,3600\n"
                     "one,gemm:1x1x1,3600\n")
    ncu = tmp_path / "n.csv"
    ncu.write_text('"ID","Kernel Name","gpu__time_duration.sum","dram__bytes_read.sum","lts__t_bytes.sum"\n'
                   '"","","ns","Tbyte","byte"\n"0","a","1","18000000","0"\n"1","b","3600000000000","0","1"\n')
    for p in (plain, ncu):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert main(["check", "--hw", "h100-sxm", "--trace", str(p), "--plot", str(tmp_path / "c.svg")]) == 0
        assert [str(x.message) for x in w] == [] and capsys.readouterr().err == ""


@pytest.mark.parametrize("text,needle", [
    ("name,op,seconds,name\nk1,relu:1024,1e-6,k2\n", r"line 1: column 'name' appears 2 times \(fields 1 and 4\)"),
    ("name,op,seconds,seconds\nk1,relu:1024,1e-6,1\n", r"line 1: column 'seconds' appears 2 times"),
    ("name,op,seconds,note, note\nk1,relu:1024,1e-6,a,b\n", r"line 1: column 'note' appears 2 times"),
    ('"ID","Kernel Name","gpu__time_duration.sum","ID"\n"","","ns",""\n"0","k","5","1"\n',
     r"line 1: column 'ID' appears 2 times \(fields 1 and 4\)"),
])
def test_every_csv_reader_refuses_a_column_twice(tmp_path, text, needle):
    p = tmp_path / "t.csv"
    p.write_text(text)
    with pytest.raises(ValueError, match=needle):
        read(p)


# --- held to its own GPU: a trace's device list checked, every device matched (sixth audit, 3)

def _doc_trace(tmp_path, change):
    """The ResNet-50 trace with ``change(document)`` applied, written to tmp_path."""
    doc = copy.deepcopy(RESNET)
    change(doc)
    p = tmp_path / "dev.json"
    p.write_text(json.dumps(doc))
    return p


def _props(**kw):
    def change(doc):
        for k, v in kw.items():
            if v is None:
                doc["deviceProperties"][0].pop(k)
            else:
                doc["deviceProperties"][0][k] = v
    return change


@pytest.mark.parametrize("change,needle", [
    (lambda d: d.update(deviceProperties=d["deviceProperties"][0]), r"deviceProperties = \{'id'.*: a list of objects"),
    (lambda d: d.update(deviceProperties=["NVIDIA H100 80GB HBM3"]), r"deviceProperties\[0\] = 'NVIDIA.*: an object"),
    (_props(name=7), r"deviceProperties\[0\].name = 7: the GPU's name"),
    (_props(name=" "), r"deviceProperties\[0\].name = ' ': the GPU's name"),
    (_props(name="NVIDIA GeForce RTX 4090", computeMajor="8", computeMinor="9"),
     r"deviceProperties\[0\].computeMajor = '8': an integer"),
    (_props(name="NVIDIA GeForce RTX 4090", computeMajor=None, computeMinor=None),
     r"deviceProperties\[0\].computeMajor = missing: an integer"),
    (_props(computeMinor=True), r"deviceProperties\[0\].computeMinor = True: an integer"),
])
def test_a_malformed_device_list_is_refused_not_skipped(tmp_path, change, needle):
    """A deviceProperties of the wrong shape once skipped the device check (an H100's
    trace accepted on a gtx480): refused, naming the field."""
    from simulator.analysis.check import check_device
    p = _doc_trace(tmp_path, change)
    for hw in ("gtx480", "h100-sxm"):
        with pytest.raises(ValueError, match=needle):
            check_device(hwmodels.get(hw), p)


@pytest.mark.parametrize("hw,name,cc,why", [
    ("h100-sxm", "NVIDIA GeForce RTX 4090", None, "it matches no preset's GPU"),
    ("h100-sxm", "NVIDIA GeForce GTX 480", None, "that is preset gtx480's GPU"),
    ("h100-sxm", "GTX480", "9.0", "that is preset gtx480's GPU"),
    ("h100-sxm", "NVIDIA H100 PCIe", "9.0", "another board of h100-sxm's model (H100)"),
    ("h100-sxm", "NVIDIA H100 NVL", "9.0", "another board of h100-sxm's model (H100)"),
    ("h100-sxm", "NVIDIA H200", "9.0", "that is preset h200's GPU"),
    ("h200", "NVIDIA H100 80GB HBM3", "9.0", "that is preset h100-sxm's GPU"),
    ("h100-sxm", "NVIDIA H100 80GB HBM3", "8.0", "its compute capability is 8.0, h100-sxm's 9.0"),
    ("gtx480", "NVIDIA A100-SXM4-40GB", None, "it matches no preset's GPU"),
    ("h100-sxm", "NVIDIA H100 80GB HBM3", "9.0", None),
    ("h100-sxm", "nvidia h100 80gb hbm3", None, None),
    ("h200", "NVIDIA H200", "9.0", None),
    ("gtx480", "GeForce GTX 480", "2.0", None),
    ("gtx480", "NVIDIA GeForce GTX 480", None, None),
    ("v100-sxm2", "Tesla V100-SXM2-16GB", "7.0", None),
    ("k80", "Tesla K80", "3.7", None),
])
def test_a_gpu_is_known_by_its_name_among_the_presets(hw, name, cc, why):
    """Device names are matched, normalised, against each preset's GPU's names as CUDA
    reports them: a GeForce name (no model number the old pattern saw), a sibling board
    (H100 PCIe: 114 SMs, 2 TB/s) or another preset's GPU is not the preset's."""
    from simulator.analysis.gpus import mismatch
    got = mismatch(hwmodels.get(hw), name, cc)
    assert (got is None) if why is None else (why in (got or "")), got


def test_every_row_of_an_ncu_csv_is_held_to_the_gpu(tmp_path):
    """One H100 row no longer vouches for the others: a CSV with one GTX 480 row among
    H100 rows is refused, naming that device; an empty device or a CC not MAJOR.MINOR is
    refused naming the line and the column."""
    from simulator.analysis.check import check_device
    h100 = hwmodels.get("h100-sxm")
    check_device(h100, _ncu(tmp_path, 2, "CC", "9.0"))
    p = _ncu(tmp_path, 3, "device__attribute_display_name", "NVIDIA GeForce GTX 480")
    with pytest.raises(ValueError, match=r"recorded on 'NVIDIA GeForce GTX 480', not a h100-sxm.*"
                                         r"that is preset gtx480's GPU"):
        check_device(h100, p)
    with pytest.raises(ValueError, match=r"line 4: device__attribute_display_name is empty"):
        check_device(h100, _ncu(tmp_path, 3, "device__attribute_display_name", " "))
    with pytest.raises(ValueError, match=r"line 3: CC = 'nine': a compute capability"):
        check_device(h100, _ncu(tmp_path, 2, "CC", "nine"))


# --- kernels left unmapped say why (sixth audit, 5)

def _note(tmp_path, change):
    ks = read(_torch(tmp_path, change))
    return next(k for k in ks if k.name == EVENTS[CONV_K]["name"]).note, ks


def test_a_kernel_joined_to_no_operator_says_why(tmp_path):
    note, ks = _note(tmp_path, _set(CONV_K, ["args", "External id"], 10**12))
    assert note == "its External id matches no operator call (cpu_op event) of the trace"

    def drop(ev):
        del ev[CONV_K]["args"]["External id"]
    note, _ = _note(tmp_path, drop)
    assert note == "no External id: nothing joins it to the operator that launched it"

    def orphan_all(ev):
        for e in ev:
            if e.get("cat") == "kernel":
                e["args"]["External id"] = 10**12
    ks = read(_torch(tmp_path, orphan_all))
    assert len(ks) == 174 and all(k.op is None and "matches no operator" in k.note for k in ks)


def test_an_operator_without_the_shapes_it_needs_says_so(tmp_path):
    """A convolution with one input's shape, or without Input Dims (record_shapes off),
    is kept unmapped with a note, and check's summary counts it."""
    one = EVENTS[CONV_OP]["args"]["Input Dims"][:1]
    note, _ = _note(tmp_path, _set(CONV_OP, ["args", "Input Dims"], one))
    assert note.startswith(f"Input Dims = {one}; a convolution op needs the input's and the weight's")

    def drop(ev):
        del ev[CONV_OP]["args"]["Input Dims"]
    note, ks = _note(tmp_path, drop)
    assert note.startswith("no Input Dims (profile with record_shapes=True)")
    doc = check(hwmodels.get("h100-sxm"), ks)
    assert sum(r["note"] == note for r in doc["kernels"]) >= 1

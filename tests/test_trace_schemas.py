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
    # and an ncu row of 0 ns with DRAM bytes
    lines = NCU.splitlines()
    head = next(__import__("csv").reader([lines[0]]))
    t = head.index("gpu__time_duration.sum")
    row = next(__import__("csv").reader([lines[2]]))
    row[t] = "0"
    lines[2] = ",".join(f'"{x}"' for x in row)
    (tmp_path / "n.csv").write_text("\n".join(lines) + "\n")
    doc = check(H100, read(tmp_path / "n.csv"))
    assert doc["kernels"][0]["faster_than_bound"] and doc["kernels"][0]["fraction_of_roof"] is None


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
    (2, "gpu__time_duration.sum", "-5,000", r"gpu__time_duration.sum = '-5,000': a duration in ns: a finite number >= 0"),
    (2, "gpu__time_duration.sum", "fast", r"gpu__time_duration.sum = 'fast'"),
    (2, "gpu__time_duration.sum", "1e308", r"at most a day"),
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
    ('"12.5"', "dur = '12.5'"),
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
    ("name,op,seconds\na,gemm:4x4x4,1e308\n", "at most a day"),
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
    for path, needle in ((tmp_path, "is a directory"), (fifo, "is a FIFO, not a regular file"),
                         ("/dev/null", "is a character device, not a regular file"),
                         (tmp_path / "empty.json", "is empty"), (tmp_path / "blank.csv", "holds only white space"),
                         (tmp_path / "none.json", "no such file"),
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

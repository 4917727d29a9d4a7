"""The systolic array for teaching: your matrices, every register labelled with the element
of C = A @ B it holds, the text view, the animation and ``roofsim simulate array``.

Oracles: numpy's A @ B; the labels against the values (every register holds the value of
the element its label names, every MAC multiplies the A[i,k] and B[k,j] its labels name
into C[i,j], and the MACs are all M*N*K triples once each); the closed form's cycles."""
import re
import shlex

import numpy as np
import pytest

import simulator as rs
from simulator.cli import main
from simulator.cli.commands.array import EXAMPLES
from simulator.systolic import Lowered, fold_timing, run_array
from simulator.systolic.array import HOLDS
from workloads.ir import Conv2d, Gemm

DATAFLOWS = ("os", "ws", "is")
# (M, K, N, rows, cols): non-square, one fold; several row and column folds; tiny
CASES = [(3, 5, 2, 4, 4), (6, 7, 5, 2, 3), (4, 4, 4, 4, 4), (1, 1, 1, 1, 1), (5, 2, 9, 3, 2)]


def operands(M, K, N, seed=0, floats=False):
    rng = np.random.default_rng(seed)
    if floats:
        return rng.normal(size=(M, K)), rng.normal(size=(K, N))
    return rng.integers(-4, 5, size=(M, K)), rng.integers(-4, 5, size=(K, N))


def element(kind, idx, A, B):
    """The value of the element a label names: A[i,k], B[k,j], or C[i,j] summed over k0..k1."""
    p, q, k0, k1 = (int(x) for x in idx)
    if kind == "A":
        return A[p, q]
    if kind == "B":
        return B[p, q]
    return float(A[p, k0:k1 + 1] @ B[k0:k1 + 1, q]) if k1 >= k0 else 0.0


def check_labels(run, A, B):
    """The labels-vs-values oracle; returns the (i, j, k) of every MAC, in order."""
    A, B = np.asarray(A, float), np.asarray(B, float)
    tr, holds = run.trace, HOLDS[run.lowered.dataflow]
    idx, val = tr["index"], tr["value"]
    # a register is labelled exactly when it holds a value, and holds the labelled element's
    for g in range(4):
        assert np.array_equal(idx[..., g, 0] >= 0, ~np.isnan(val[..., g])), g
        for t, r, c in zip(*np.nonzero(idx[..., g, 0] >= 0)):
            assert val[t, r, c, g] == pytest.approx(element(holds[g], idx[t, r, c, g], A, B)), \
                (t, r, c, g, idx[t, r, c, g])
    macs = []
    for t, r, c in zip(*np.nonzero(tr["active"])):
        ga, gb, gc = tr["mac"][t, r, c]
        assert (holds[ga], holds[gb], holds[gc]) == ("A", "B", "C")
        i, k, _, _ = idx[t, r, c, ga]
        k2, j, _, _ = idx[t, r, c, gb]
        i2, j2, k0, k1 = idx[t, r, c, gc]
        # the MAC multiplies A[i,k] by B[k,j] and its sum C[i,j] now ends with term k
        assert (k, i, j) == (k2, i2, j2) and k1 == k, (t, r, c, idx[t, r, c])
        assert val[t, r, c, ga] == A[i, k] and val[t, r, c, gb] == B[k, j]
        macs.append((int(i), int(j), int(k)))
    assert (~tr["active"]).all() or (tr["mac"][~tr["active"]] == -1).all()
    return macs


# ---------------------------------------------------------------- your matrices

@pytest.mark.parametrize("df", DATAFLOWS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "{}x{}@{}x{}_on_{}x{}".format(c[0], c[1], c[1], c[2], *c[3:]))
def test_your_matrices_give_numpy_and_labels_name_every_mac(df, case):
    M, K, N, R, C = case
    A, B = operands(M, K, N, seed=M + 10 * K + 100 * N)
    run = rs.systolic_array_run(a=A, b=B, dataflow=df, rows=R, cols=C, record=True)
    assert run.exact and run.correct
    assert np.array_equal(run.output, A @ B)
    macs = check_labels(run, A, B)
    assert len(macs) == run.macs == M * N * K
    assert set(macs) == {(i, j, k) for i in range(M) for j in range(N) for k in range(K)}
    # the same cycles as the closed form and the op form on the same shapes
    L = Lowered(Gemm(M=M, N=N, K=K), df, R, C)
    assert run.cycles == fold_timing(L)[2] == run_array(Gemm(M=M, N=N, K=K), df, R, C).cycles
    assert np.array_equal(run.fold_starts, fold_timing(L)[0])


@pytest.mark.parametrize("df", DATAFLOWS)
def test_every_result_leaves_the_bottom_with_all_its_terms(df):
    M, K, N = 6, 7, 5
    A, B = operands(M, K, N, seed=3)
    run = rs.systolic_array_run(a=A, b=B, dataflow=df, rows=2, cols=3, record=True)
    out, val = run.trace["out_index"], run.trace["out_value"]
    got = {}
    for t, r, c in zip(*np.nonzero(out[..., 0] >= 0)):
        i, j, k0, k1 = out[t, r, c]
        assert val[t, r, c] == A[i, k0:k1 + 1] @ B[k0:k1 + 1, j]
        got.setdefault((i, j), []).extend(range(k0, k1 + 1))
    # each C[i,j] leaves with every k once (ws/is: one partial sum per row fold)
    assert {ij: sorted(ks) for ij, ks in got.items()} == \
        {(i, j): list(range(K)) for i in range(M) for j in range(N)}


@pytest.mark.parametrize("df", DATAFLOWS)
def test_float_matrices_and_nested_lists(df):
    A, B = operands(3, 5, 2, floats=True)
    run = rs.systolic_array_run(a=A, b=B, dataflow=df, rows=4, cols=4, record=True)
    assert not run.exact and run.correct
    np.testing.assert_allclose(run.output, A @ B, rtol=1e-12)
    assert run.macs == 30 and len(check_labels(run, A, B)) == 30
    r = rs.systolic_array_run(a=[[1, 2.5]], b=[[2], [4]], dataflow=df, rows=2, cols=2)
    assert r.output.tolist() == [[12.0]] and r.correct and not r.exact


@pytest.mark.parametrize("df", DATAFLOWS)
def test_labels_of_the_op_form_too(df):
    """A convolution's GEMM view (im2col A, padding zeros included) labels the same way."""
    op = Conv2d(N=1, C=2, H=4, W=4, K=3, R=3, S=3, stride=1, padding=1)
    run = rs.systolic_array_run(op, df, 4, 4, record=True, seed=2)
    assert run.correct
    M, N, K = run.lowered.mnk
    macs = check_labels(run, run.a, run.b)
    assert len(set(macs)) == len(macs) == M * N * K


def test_the_oracle_catches_a_wrong_label():
    A, B = operands(3, 5, 2)
    run = rs.systolic_array_run(a=A, b=B, dataflow="ws", rows=4, cols=4, record=True)
    t, r, c = (int(x[0]) for x in np.nonzero(run.trace["active"]))
    run.trace["index"][t, r, c, 0, 1] += 1          # name the wrong k for one A register
    with pytest.raises(AssertionError):
        check_labels(run, A, B)


def test_ws_preload_shifts_each_weight_down_its_column():
    """4x4 ws: in cycles 0-3 the chain takes B[3-t, j] at the top of column j into buffer
    w0, and what it took earlier moves one row down each cycle; the stream starts at 4."""
    A, B = operands(4, 4, 4)
    run = rs.systolic_array_run(a=A, b=B, dataflow="ws", rows=4, cols=4, record=True)
    tr = run.trace
    for t in range(4):
        for j in range(4):
            assert tuple(tr["preload_index"][t, j]) == (3 - t, j, 0)
            assert tr["preload_value"][t, j] == B[3 - t, j]
            for r in range(4):
                want = (3 - t + r, j) if r <= t else (-1, -1)
                assert tuple(tr["index"][t, r, j, 2, :2]) == want
        assert not tr["active"][t].any()
    assert (tr["preload_index"][4:, :, 0] == -1).all() and run.fold_starts[0] == 4
    text = rs.systolic_text(run, cycles=range(0, 2))
    assert "B[3,0]>w0" in text and "B[2,3]>w0" in text


def test_ws_second_fold_preloads_into_the_other_buffer():
    A, B = operands(6, 7, 5)
    run = rs.systolic_array_run(a=A, b=B, dataflow="ws", rows=2, cols=3, record=True)
    pl = run.trace["preload_index"]
    shifts = pl[..., 0] >= 0
    buffers = pl[..., 2][shifts]
    assert set(buffers.tolist()) == {0, 1}
    # every element of B goes through the chain exactly once
    got = sorted(map(tuple, pl[shifts][:, :2].tolist()))
    assert got == sorted((k, j) for k in range(7) for j in range(5))


# ---------------------------------------------------------------- bad input

BAD = [
    (dict(a=[[1, 2]], b=[[1, 2]]), ValueError, "do not chain"),
    (dict(a=[[1, 2], [3]], b=[[1], [2]]), ValueError, "a=[[1, 2], [3]]: rows of different"),
    (dict(a=[["x"]], b=[[1]]), ValueError, "a=[['x']]: holds"),
    (dict(a=np.zeros((0, 3)), b=np.zeros((3, 2))), ValueError, "empty"),
    (dict(a=[1, 2], b=[[1], [2]]), ValueError, "a=[1, 2]: a 1-D array"),
    (dict(a=[[1.0]], b=[[float("nan")]]), ValueError, "b=[[nan]]: holds NaN"),
    (dict(a=[[True]], b=[[1]]), ValueError, "holds bool"),
    (dict(a="1 2; 3 4", b=[[1]]), TypeError, "a='1 2; 3 4'"),
    (dict(a=[[1]]), TypeError, "b=None"),
    (dict(a=[[2**40]], b=[[2**40]]), ValueError, "2**53"),
    (dict(a=np.ones((200, 200)), b=np.ones((200, 200)), record=True), ValueError,
     "record=True: "),
]


@pytest.mark.parametrize("kw,error,text", BAD, ids=[b[2] for b in BAD])
def test_bad_matrices_are_named(kw, error, text):
    kw = {"dataflow": "ws", "rows": 4, "cols": 4, **kw}
    with pytest.raises(error) as e:
        rs.systolic_array_run(**kw)
    assert text in str(e.value)


def test_op_and_matrices_are_exclusive():
    with pytest.raises(ValueError, match="not both"):
        rs.systolic_array_run("gemm:2x2x2", "ws", 4, 4, a=[[1]], b=[[1]])
    with pytest.raises(TypeError, match="op=None"):
        rs.systolic_array_run(dataflow="ws", rows=4, cols=4)
    with pytest.raises(TypeError, match="dataflow=None"):
        rs.systolic_array_run(a=[[1]], b=[[1]], rows=4, cols=4)


def test_views_need_a_recording():
    run = rs.systolic_array_run(a=[[1]], b=[[1]], dataflow="os", rows=2, cols=2)
    with pytest.raises(ValueError, match="record=True"):
        rs.systolic_text(run)
    with pytest.raises(TypeError, match="run=5"):
        rs.systolic_text(5)
    rec = rs.systolic_array_run(a=[[1]], b=[[1]], dataflow="os", rows=2, cols=2, record=True)
    with pytest.raises(ValueError, match="cycles=9"):
        rs.systolic_text(rec, cycles=9)
    with pytest.raises(ValueError, match="path='x.png'"):
        rs.systolic_animation(rec, "x.png")


# ---------------------------------------------------------------- text and animation

def test_text_view_shows_the_labels_cycle_by_cycle():
    A = [[1, 2], [3, 4]]
    run = rs.systolic_array_run(a=A, b=[[5, 6], [7, 8]], dataflow="os", rows=2, cols=2,
                                record=True)
    text = rs.systolic_text(run)
    assert len(re.findall(r"^cycle \d+/5", text, re.M)) == run.cycles == 6
    one = rs.systolic_text(run, cycles=1, values=True)
    assert "cycle 1/5: 3 MACs" in one and "cycle 0/" not in one
    assert "*acc C[0,1] 1/2=6" in one and "*out C[0,0] 2/2=19" in one
    assert "A[0,1]=2 >" in one                                    # the left edge's input
    # the drain chain: C[1,0] leaves column 0 at cycle 3, C[0,0] under it at cycle 4
    assert re.search(r"bottom out: +C\[1,0\] 2/2 +\.", rs.systolic_text(run, cycles=3))
    assert re.search(r"bottom out: +C\[0,0\] 2/2 +C\[1,1\] 2/2", rs.systolic_text(run, cycles=4))


@pytest.mark.parametrize("ext", ["gif", "html"])
def test_animation_has_one_frame_per_cycle(tmp_path, ext):
    A, B = operands(4, 4, 4)
    run = rs.systolic_array_run(a=A, b=B, dataflow="ws", rows=4, cols=4, record=True)
    path = tmp_path / f"ws.{ext}"
    assert rs.systolic_animation(run, path) == run.cycles == 14
    assert path.stat().st_size > 1000
    if ext == "gif":
        from PIL import Image, ImageSequence
        with Image.open(path) as im:
            assert sum(1 for _ in ImageSequence.Iterator(im)) == run.cycles
    else:
        html = path.read_text()
        assert len(set(re.findall(r"frames\[(\d+)\] = \"data:image", html))) == run.cycles
    assert [p.name for p in tmp_path.iterdir()] == [path.name]       # no temporary left


# ---------------------------------------------------------------- the command

def _examples():
    return [shlex.split(line.strip())[1:] for line in EXAMPLES.splitlines()
            if line.strip().startswith("roofsim ")]


@pytest.mark.parametrize("argv", _examples(), ids=lambda a: " ".join(a))
def test_help_examples_run(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "equals numpy's A @ B exactly" in out
    m = re.search(r"cycles: (\d+) \(closed form: (\d+)\)", out)
    assert m and m.group(1) == m.group(2)
    if "--animate" in argv:
        assert (tmp_path / argv[argv.index("--animate") + 1]).stat().st_size > 0


def test_cli_files_and_literals(capsys, tmp_path):
    A, B = operands(3, 5, 2)
    np.save(tmp_path / "a.npy", A)
    np.savetxt(tmp_path / "b.csv", B, delimiter=",", fmt="%d")
    np.savetxt(tmp_path / "b.txt", B, fmt="%d")
    for b in ("b.csv", "b.txt"):
        assert main(["simulate", "array", "--dataflow", "is", "--a", str(tmp_path / "a.npy"),
                     "--b", str(tmp_path / b), "--cycles", "2"]) == 0
        out = capsys.readouterr().out
        assert "cycle 2/" in out and "cycle 3/" not in out and "MACs: 30" in out
        assert "equals numpy's A @ B exactly" in out
    assert main(["simulate", "array", "--a", "-1 2.5; 3 4", "--b", "1, 0; 0, 1",
                 "--cycles", "none"]) == 0
    out = capsys.readouterr().out
    assert "cycle 0/" not in out and "to 1e-9" in out and "2.5" in out


BAD_CLI = [
    (["--a", "1 2; 3", "--b", "1"], "--a '1 2; 3': row 2 has 1 number"),
    (["--a", "1 2", "--b", "1 2"], "--a (1x2) and --b (1x2): do not chain"),
    (["--a", "1 x", "--b", "1"], "'x' is not a number"),
    (["--a", "1"], "--b is missing"),
    (["--b", "1"], "--a is missing"),
    ([], "give --a and --b"),
    (["--a", "1", "--b", "1", "--workload", "gemm:2x2x2"], "not both"),
    (["--a", "nofile.npy", "--b", "1"], "--a 'nofile.npy': no such file"),
    (["--workload", "gemm:4x4x4", "--cycles", "20-30"], "the run has cycles 0 to 13"),
    (["--workload", "gemm:4x4x4", "--cycles", "5-2"], "--cycles '5-2'"),
    (["--workload", "gemm:300x300x300"], "--cycles none"),
    (["--workload", "relu:64"], "--workload 'relu:64'"),
    (["--workload", "gemm:4x4x4", "--array", "4"], "--array '4'"),
    (["--workload", "gemm:4x4x4", "--animate", "x.png"], "--animate 'x.png'"),
    (["--workload", "gemm:4x4x4", "--animate", "nofolder/x.gif"], "does not exist"),
    (["--workload", "gemm:40x40x40", "--array", "20x20", "--cycles", "0"], "at most 16"),
    (["--dataflow", "xs", "--workload", "gemm:4x4x4"], "invalid choice"),
]


@pytest.mark.parametrize("argv,text", BAD_CLI, ids=[b[1] for b in BAD_CLI])
def test_cli_bad_input_is_one_line_exit_2(argv, text, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", "array", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert text in err
    assert list(tmp_path.iterdir()) == []

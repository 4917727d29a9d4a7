"""FLOPs and bytes of every op kind against hand-computed values and brute force."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workloads
from workloads import Conv2d, Elementwise, Gemm
from workloads.networks import resolve


def test_gemm_by_hand():
    g = Gemm(M=2, N=3, K=4)
    assert g.macs() == 24 and g.flops() == 48
    assert g.min_bytes() == (2 * 4 + 4 * 3 + 2 * 3) * 4
    assert Gemm(M=2, N=3, K=4, dtype="fp16").min_bytes() == (8 + 12 + 6) * 2


def test_conv_by_hand():
    # 1x2x5x5 input, 3 filters 3x3, stride 2, pad 1: P = Q = (5 + 2 - 3)//2 + 1 = 3
    c = Conv2d(N=1, C=2, H=5, W=5, K=3, R=3, S=3, stride=2, padding=1)
    assert (c.P, c.Q) == (3, 3)
    assert c.macs() == 3 * 3 * 3 * 2 * 9
    assert c.flops() == 2 * 486
    assert c.min_bytes() == (2 * 25 + 3 * 2 * 9 + 3 * 9) * 4


def test_strided_1x1_conv_reads_a_quarter_of_its_input():
    c = Conv2d(N=1, C=4, H=8, W=8, K=4, R=1, S=1, stride=2)
    assert (c.P, c.Q) == (4, 4)
    inp = c.operands()[0]
    assert inp.elements == 4 * 64 and inp.touched == 4 * 16
    assert c.min_bytes() == (4 * 16 + 16 + 4 * 16) * 4


def test_elementwise_by_hand():
    r = Elementwise(n=10)
    assert r.flops() == 10 and r.min_bytes() == 80
    assert Elementwise(n=10, op="add", dtype="fp16").min_bytes() == 60


def test_nhwc_weights_are_rsck():
    c = Conv2d(N=1, C=2, H=5, W=5, K=3, R=3, S=1, layout="nhwc")
    assert c.operands()[0].shape == (1, 5, 5, 2)
    assert c.operands()[1].shape == (3, 1, 2, 3)
    assert c.min_bytes() == Conv2d(N=1, C=2, H=5, W=5, K=3, R=3, S=1).min_bytes()


def _brute_conv(c: Conv2d):
    """MAC count and touched input positions by walking the loop nest."""
    macs, touched = 0, set()
    for p, q in itertools.product(range(c.P), range(c.Q)):
        for r, s in itertools.product(range(c.R), range(c.S)):
            h, w = p * c.stride + r - c.padding, q * c.stride + s - c.padding
            if 0 <= h < c.H and 0 <= w < c.W:
                touched.add((h, w))
            macs += 1  # zero padding still costs a MAC in the dense formulation
    return macs * c.N * c.K * (c.C // c.groups), len(touched) * c.N * c.C


@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 9), w=st.integers(1, 9), r=st.integers(1, 5), s=st.integers(1, 5),
       stride=st.integers(1, 4), pad=st.integers(0, 3), c=st.integers(1, 3), k=st.integers(1, 3))
def test_conv_counts_match_loop_nest(h, w, r, s, stride, pad, c, k):
    if r > h + 2 * pad or s > w + 2 * pad:
        with pytest.raises(ValueError, match="larger than the padded input"):
            Conv2d(N=1, C=c, H=h, W=w, K=k, R=r, S=s, stride=stride, padding=pad)
        return
    op = Conv2d(N=2, C=c, H=h, W=w, K=k, R=r, S=s, stride=stride, padding=pad)
    macs, touched = _brute_conv(op)
    assert op.macs() == macs
    assert op.operands()[0].touched == touched


def test_conv_output_matches_numpy_direct_convolution_shape():
    # the output size formula against an actual convolution computed with numpy
    rng = np.random.default_rng(0)
    c = Conv2d(N=1, C=2, H=7, W=6, K=3, R=3, S=2, stride=2, padding=1)
    x = np.pad(rng.standard_normal((c.C, c.H, c.W)), ((0, 0), (1, 1), (1, 1)))
    wts = rng.standard_normal((c.K, c.C, c.R, c.S))
    win = np.lib.stride_tricks.sliding_window_view(x, (c.R, c.S), axis=(1, 2))[:, ::2, ::2]
    y = np.einsum("chwrs,kcrs->khw", win, wts)
    assert y.shape == (c.K, c.P, c.Q)


def _resnet50_macs_by_table(res=224, stride_on_3x3=True):
    """He et al. 2015 Table 1 written out independently of workloads.networks."""
    def out(h, k, s, p):
        return (h + 2 * p - k) // s + 1
    h = out(res, 7, 2, 3)
    total = h * h * 64 * 3 * 49
    h = out(h, 3, 2, 1)  # max pool
    cin = 64
    for blocks, width, stride in ((3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)):
        for b in range(blocks):
            s = stride if b == 0 else 1
            ha = out(h, 1, 1 if stride_on_3x3 else s, 0)
            total += ha * ha * cin * width
            hb = out(ha, 3, s if stride_on_3x3 else 1, 1)
            total += hb * hb * width * width * 9
            total += hb * hb * width * 4 * width
            if b == 0:
                hd = out(h, 1, s, 0)
                total += hd * hd * cin * 4 * width
            h, cin = hb, 4 * width
    return total + 2048 * 1000


@pytest.mark.parametrize("variant,on3x3", [("v1.5", True), ("v1", False)])
@pytest.mark.parametrize("res", [224, 160, 299])
def test_resnet50_macs_against_table(variant, on3x3, res):
    net = workloads.resnet50(resolution=res, variant=variant)
    assert net.macs() == _resnet50_macs_by_table(res, on3x3)


def test_resnet50_published_total():
    net = workloads.resnet50()
    # published: about 4.1 GMACs (torchvision v1.5: 4.09 G); the original v1: ~3.9 G
    assert net.macs() == pytest.approx(4.09e9, rel=0.005)
    assert workloads.resnet50(variant="v1").macs() == pytest.approx(3.86e9, rel=0.005)
    # every layer: 53 convolutions, a batch norm after each (the 4 projection shortcuts'
    # folded into their block's last), the two pools, the FC and its bias
    assert len(net.ops) == 106
    kinds = [op.kind for op in net.ops]
    assert kinds.count("conv2d") == 53 and kinds.count("batchnorm") == 53 - 4 + 1
    assert kinds.count("pool2d") == 2 and kinds.count("gemm") == 1
    fc = next(op for op in net.ops if op.kind == "gemm")
    assert (fc.N, fc.K) == (1000, 2048)


def test_pool_and_batchnorm_by_hand():
    from workloads import BatchNorm, Pool2d
    # ResNet's stem pool: 1x64x112x112, 3x3/2 pad 1 -> 56x56, every input read
    p = Pool2d(N=1, C=64, H=112, W=112, R=3, S=3, stride=2, padding=1)
    assert (p.P, p.Q) == (56, 56)
    assert p.flops() == 64 * 56 * 56 * 9
    assert p.min_bytes() == (64 * 112 * 112 + 64 * 56 * 56) * 4
    g = Pool2d(N=2, C=8, H=7, W=7, R=7, S=7, mode="avg")        # global average pool
    assert (g.P, g.Q) == (1, 1) and g.flops() == 2 * 8 * (49 + 1)
    b = BatchNorm(N=2, C=3, H=4, W=5, relu=True, residual=True)
    assert b.flops() == 120 * 3
    assert b.min_bytes() == (120 + 3 + 120 + 120) * 4             # x, shift, residual, y
    assert BatchNorm(N=2, C=3, H=4, W=5).min_bytes() == (120 + 3 + 120) * 4
    with pytest.raises(ValueError, match="padding = 2: at most half the window"):
        Pool2d(N=1, C=1, H=8, W=8, R=3, S=3, padding=2)
    with pytest.raises(ValueError, match="BatchNorm.relu = 1: must be true or false"):
        BatchNorm(N=1, C=1, H=1, W=1, relu=1)


@pytest.mark.parametrize("variant", ["v1.5", "v1"])
def test_resnet50_graph_shapes_agree(variant):
    """Every layer reads tensors of the shape it expects: a convolution's or pool's
    input is its producer's output, a batch norm's input and residual its own shape --
    the edges hold the network together (a wrong shortcut would not)."""
    net = workloads.resnet50(batch=2, variant=variant)
    out = {"input": (2, 3, 224, 224)}
    for op in net.ops:
        ins = [out[t] for t in net.inputs_of(op.name)]
        if op.kind in ("conv2d", "pool2d"):
            assert ins == [(op.N, op.C, op.H, op.W)], op.name
            out[op.name] = (op.N, op.K if op.kind == "conv2d" else op.C, op.P, op.Q)
        elif op.kind == "batchnorm":
            assert ins == [(op.N, op.C, op.H, op.W)] * (2 if op.residual else 1), op.name
            out[op.name] = ins[0]
        else:
            assert ins == [(op.M, op.K, 1, 1)], op.name
            out[op.name] = (op.M, op.N, 1, 1)
    # 16 residual adds, the 4 first blocks' from a projection, 12 from the block's input
    res = [op for op in net.ops if op.kind == "batchnorm" and op.residual]
    assert len(res) == 16
    assert sum(net.inputs_of(op.name)[1].endswith("downsample.0") for op in res) == 4
    assert out["fc.bias"] == (2, 1000, 1, 1)


def test_resnet50_batch_scales_linearly():
    assert workloads.resnet50(batch=8).macs() == 8 * workloads.resnet50().macs()


def test_conv_ablation_grid():
    net = workloads.conv_ablation()
    combos = {(op.R, op.stride, op.padding) for op in net.ops}
    assert combos == set(itertools.product((1, 3, 5), (1, 2), (1, 2, 3)))


@pytest.mark.parametrize("kw,needle", [
    (dict(N=1, C=3, H=4, W=4, K=8, R=7, S=7), "Conv2d.R = 7: filter is larger than the padded input"),
    (dict(N=1, C=3, H=4, W=4, K=8, R=3, S=3, stride=0), "Conv2d.stride = 0"),
    (dict(N=0, C=3, H=4, W=4, K=8, R=3, S=3), "Conv2d.N = 0"),
    (dict(N=1, C=-3, H=4, W=4, K=8, R=3, S=3), "Conv2d.C = -3"),
    (dict(N=1, C=3, H=4, W=4, K=8, R=3, S=3, padding=-1), "Conv2d.padding = -1"),
    (dict(N=1, C=3, H=4, W=4, K=8, R=3, S=3, layout="nwhc"), "Conv2d.layout = 'nwhc'"),
    (dict(N=1, C=3, H=4, W=4, K=8, R=3, S=3, dtype="fp8"), "Conv2d.dtype = 'fp8'"),
    (dict(N=1, C=3, H=4, W=4, K=8, R=3, S=3, groups=2), "divisible by groups"),
])
def test_conv_bad_input(kw, needle):
    with pytest.raises(ValueError, match=needle):
        Conv2d(**kw)


@pytest.mark.parametrize("kw,needle", [
    (dict(M=0, N=1, K=1), "Gemm.M = 0"), (dict(M=1, N=1, K=-2), "Gemm.K = -2"),
    (dict(M=1, N=1, K=1, layout="diag"), "Gemm.layout"),
])
def test_gemm_bad_input(kw, needle):
    with pytest.raises(ValueError, match=needle):
        Gemm(**kw)


def test_resolve_forms():
    assert resolve("gemm:64x32x16").ops[0].macs() == 64 * 32 * 16
    assert resolve("relu:1000", dtype="fp16").ops[0].min_bytes() == 4000
    c = resolve("conv:n=2,c=3,h=8,w=8,k=4,r=3,s=3,stride=1,pad=1").ops[0]
    assert (c.N, c.P, c.padding) == (2, 8, 1)
    with pytest.raises(ValueError, match="workload 'alexnet' is unknown"):
        resolve("alexnet")
    with pytest.raises(ValueError, match="gemm:MxNxK"):
        resolve("gemm:64x32")
    with pytest.raises(ValueError, match="missing"):
        resolve("conv:n=1,c=3")
    with pytest.raises(ValueError, match="batch=0: must be from 1"):
        resolve("resnet50", batch=0)


@pytest.mark.parametrize("kw,start", [
    (dict(spec="gemm:4x4x4", layout="nhwc"), "layout='nhwc': a tensor layout applies to convolutions"),
    (dict(spec="gemm:4x4x4", resolution=64), "resolution applies to networks, not to 'gemm:4x4x4'"),
    (dict(spec="conv:n=4,c=3,h=8,w=8,k=4,r=3,s=3", batch=2),
     "batch=2 and n=4 in workload 'conv:n=4,c=3,h=8,w=8,k=4,r=3,s=3' disagree"),
])
def test_resolve_errors_start_with_the_argument(kw, start):
    """A library error about an argument starts with the argument's Python name (and its
    value in keyword form); the CLI maps that to its flag."""
    with pytest.raises(ValueError) as e:
        resolve(**kw)
    assert str(e.value).startswith(start)


def test_topology_csv_takes_no_resolution(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text(GEMM_CSV)
    with pytest.raises(ValueError, match=r"^resolution does not apply to a topology CSV"):
        resolve(str(p), resolution=64)


# ------------------------------------------------------------- SCALE-Sim topology CSVs

CONV_CSV = """Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,
Conv1, 230, 230, 7, 7, 3, 64, 2,
Conv2_1a, 56, 56, 1, 1, 64, 64, 1,
Conv2_1b, 58, 58, 3, 3, 64, 64, 1
DP_conv, 16, 16, 3, 3, 8, 1, 1,
"""

GEMM_CSV = """Layer, M, N, K,
fc1, 128, 1000, 2048,
attn, 512, 64, 512, 1:1,
"""


def test_scalesim_conv_csv(tmp_path):
    p = tmp_path / "net.csv"
    p.write_text(CONV_CSV)
    net = workloads.load_topology(p, batch=2)
    assert [op.name for op in net.ops] == ["Conv1", "Conv2_1a", "Conv2_1b", "DP_conv"]
    c1 = net.ops[0]
    # SCALE-Sim sizes include the padding: 230 - 7 // 2 + 1 = 112
    assert (c1.N, c1.C, c1.H, c1.K, c1.R, c1.stride, c1.padding, c1.P) == (2, 3, 230, 64, 7, 2, 0, 112)
    dp = net.ops[3]
    assert dp.groups == 8 and dp.K == 8 and dp.macs() == 2 * 8 * 14 * 14 * 9


def test_scalesim_gemm_csv(tmp_path):
    p = tmp_path / "g.csv"
    p.write_text(GEMM_CSV)
    net = workloads.load_topology(p)
    assert [(o.M, o.N, o.K) for o in net.ops] == [(128, 1000, 2048), (512, 64, 512)]
    assert resolve(str(p), batch=4).ops[0].M == 512


@pytest.mark.parametrize("text,needle", [
    ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
     "c1, 56, abc, 3, 3, 64, 64, 1,\n", "line 2: IFMAP Width = 'abc' is not a positive integer"),
    ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
     "c1, 56, 56, 3, 3, 64,\n", "line 2: expected 8 columns"),
    ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
     "c1, 5, 5, 7, 7, 64, 64, 1,\n", "line 2: .*larger than the padded input"),
    ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
     "c1, 5, 5, 3, 3, 4, 4, 0,\n", "line 2: Strides = 0"),
    ("Layer, M, N, K,\nfc, 1, 2, 3, 2:4,\n", "sparsity '2:4' is not supported"),
    ("name, a, b\nx, 1, 2\n", "neither SCALE-Sim's conv format"),
    ("", "empty topology file"),
])
def test_scalesim_csv_errors(tmp_path, text, needle):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(ValueError, match=needle) as e:
        workloads.load_topology(p)
    assert str(p) in str(e.value)


def test_scalesim_export_round_trip(tmp_path):
    from workloads.scalesim import to_topology_csv
    net = workloads.resnet50()
    p = tmp_path / "r50.csv"
    p.write_text(to_topology_csv(net))
    back = workloads.load_topology(p)
    array = [op for op in net.ops if op.kind in ("conv2d", "gemm")]   # batch norms, pools left out
    assert len(array) == 54
    assert [op.name for op in back.ops] == [op.name for op in array]
    assert [op.macs() for op in back.ops] == [op.macs() for op in array]
    with pytest.raises(ValueError, match="no batch"):
        to_topology_csv(workloads.resnet50(batch=2))
    # a name SCALE-Sim would split (it reads rows by commas) is refused, not written raw
    odd = tmp_path / "odd.csv"
    odd.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
                   'Num Filter, Strides,\n"a,b", 8, 8, 3, 3, 4, 8, 1,\n')
    with pytest.raises(ValueError, match="layer 'a,b': a name with a comma"):
        to_topology_csv(workloads.load_topology(odd))


def test_touched_rows_closed_form_matches_the_windows():
    """The input positions a strided convolution reads, in closed form, against walking
    every window (stride larger than the filter: windows disjoint, some in the padding);
    a height of 10^9 answers at once."""
    import itertools

    from workloads.ir import _touched_1d
    for size, k, s, p in itertools.product(range(1, 23), range(1, 5), range(1, 8), range(0, 7)):
        if size + 2 * p < k:
            continue
        out = (size + 2 * p - k) // s + 1
        walked = {o * s + r - p for o in range(out) for r in range(k)} & set(range(size))
        assert _touched_1d(size, out, k, s, p) == len(walked), (size, k, s, p)
    assert _touched_1d(10 ** 9, (10 ** 9 - 1) // 2 + 1, 1, 2, 0) == 5 * 10 ** 8

"""Networks that are not chains (issue 25, class 5): what each layer reads is stated or
checked, never assumed; a plan transforms only tensors a layer reads, in the shape it
reads them."""
import itertools

import pytest
from mini_net import mini

import workloads
from simulator.analysis import plan as pl
from workloads.ir import BatchNorm, Conv2d, Gemm, Network, Pool2d


def _topology(tmp_path):
    p = tmp_path / "two.csv"
    # c1's output is 16 x 16 x 16 (18 - 3 + 1); c2 reads its own 16 x 15 x 15 input
    p.write_text("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
                 "Num Filter, Strides,\nc1, 18, 18, 3, 3, 16, 16, 1,\nc2, 15, 15, 2, 2, 16, 16, 1,\n")
    return workloads.load_topology(p)


def _built_ins(tmp_path):
    return [workloads.resolve("resnet50"), workloads.resolve("resnet50", batch=3, resolution=96),
            workloads.resolve("conv-ablation", batch=2), mini(), _topology(tmp_path)]


def _readers(net):
    """tensor -> the shapes (N, C, H, W) its readers take."""
    out = {}
    for op in net.ops:
        for t in net.inputs_of(op.name):
            out.setdefault(t, []).append(op.in_shape())
    return out


def test_every_built_in_network_connects(tmp_path):
    for net in _built_ins(tmp_path):
        assert net.connection_error() is None, net.name
        net.check_connected()


@pytest.mark.parametrize("plan", pl.UNIFORM)
def test_a_plan_transforms_only_tensors_a_later_layer_reads(tmp_path, plan):
    for net in _built_ins(tmp_path):
        layers = pl.expand(net, pl.uniform_configs(net, plan))
        for i, lp in enumerate(layers):
            if lp.algorithm != "transform":
                continue
            # the transform's output is read by a later layer, and its shape is the
            # shape the tensor it transforms has for its readers
            assert any(lp.op.name in later.inputs for later in layers[i + 1:]), (net.name, lp.op.name)
            src = lp.inputs[0]
            o = lp.op
            assert (o.N, o.C, o.H, o.W) in _readers(net)[src] or src in [op.name for op in net.ops]


def test_conv_ablation_is_eighteen_separate_problems():
    net = workloads.resolve("conv-ablation")
    # im2col-nchw reads NCHW and each layer reads its own NCHW input: nothing to transform
    assert [lp.algorithm for lp in pl.expand(net, pl.uniform_configs(net, "im2col-nchw"))] \
        == ["im2col"] * 18
    nhwc = pl.expand(net, pl.uniform_configs(net, "direct-nhwc"))
    tr = [lp for lp in nhwc if lp.algorithm == "transform"]
    assert len(tr) == 18 and {lp.inputs[0] for lp in tr} == {f"{op.name}.input" for op in net.ops}
    assert all((lp.op.N, lp.op.C, lp.op.H, lp.op.W) == (1, 64, 56, 56) for lp in tr)
    assert [len(ops) for _, ops in pl.segments(net)] == [1] * 18


def test_a_topology_layer_reads_its_own_input_not_the_row_before(tmp_path):
    net = _topology(tmp_path)
    layers = pl.expand(net, pl.uniform_configs(net, "direct-nhwc"))
    c2_input = next(lp for lp in layers if lp.algorithm == "transform" and lp.inputs == ("c2.input",))
    assert (c2_input.op.C, c2_input.op.H, c2_input.op.W) == (16, 15, 15)
    assert not any("c1" in lp.inputs for lp in layers)


def test_dp_on_separate_problems_equals_each_layer_at_its_best():
    """An oracle: with nothing flowing between layers, the best plan is each layer's best
    configuration, its own input's transform charged to it (brute force per layer)."""
    net = workloads.conv_ablation(resolution=8, channels=4, filters=4)
    table = {}
    for i, lp in enumerate(pl.oracle_layers(net)):
        table[pl.time_key(lp)] = 1e-6 * (1 + (i * 7919) % 13)       # arbitrary, distinct-ish
    choice, _ = pl.choose(net, table)
    want = 0.0
    for op in net.ops:
        costs = []
        for cfg in pl.CONFIGS:
            layers = pl.expand(net, {op.name: cfg}, ops=[op])
            costs.append(sum(table[pl.time_key(lp)] for lp in layers))
        want += min(costs)
    assert choice.seconds == pytest.approx(want, rel=1e-12)
    assert pl.plan_seconds(net, choice.configs, table) == pytest.approx(choice.seconds, rel=1e-12)


def test_a_list_of_layers_that_do_not_connect_is_refused_by_a_plan():
    a = Conv2d(name="a", N=1, C=16, H=18, W=18, K=16, R=3, S=3)          # -> 16 x 16 x 16
    b = Conv2d(name="b", N=1, C=16, H=15, W=15, K=16, R=2, S=2)
    net = Network("loose", (a, b))                  # fine for the systolic array
    with pytest.raises(ValueError, match=r"layer 'b' would read.*'a' \(output 1x16x16x16.*takes "
                                         r"1x16x15x15.*Network.independent"):
        pl.expand(net, pl.uniform_configs(net, "direct-nchw"))
    with pytest.raises(ValueError, match="layer 'b' would read"):
        pl.network(net, None)
    # the same layers as separate problems plan fine
    ok = Network.independent("loose", (a, b))
    assert len(pl.expand(ok, pl.uniform_configs(ok, "direct-nchw"))) == 2


def test_declared_edges_must_fit_what_each_layer_reads():
    a = Conv2d(name="a", N=1, C=4, H=8, W=8, K=8, R=1, S=1)
    b = Conv2d(name="b", N=1, C=4, H=8, W=8, K=8, R=1, S=1)
    with pytest.raises(ValueError, match=r"layer 'b' reads 'a' \(output 1x8x8x8.*takes 1x4x8x8"):
        Network("bad", (a, b), edges=(("b", ("a",)),))
    add = BatchNorm(name="add", N=1, C=8, H=8, W=8, residual=True)
    with pytest.raises(ValueError, match=r"layer 'add' \(batchnorm\) reads 1 tensor \(a\); it takes 2"):
        Network("bad", (a, add), edges=(("add", ("a",)),))
    # a chain may not hold a residual add: it reads one tensor where it takes two
    net = Network("chain", (a, add))
    with pytest.raises(ValueError, match="would read, as the next layer of a chain, 1 tensor"):
        net.check_connected()
    with pytest.raises(ValueError, match="'x' names both an input and a layer"):
        Network("bad", (Conv2d(name="x", N=1, C=4, H=8, W=8, K=8, R=1, S=1),), inputs=("x",))
    with pytest.raises(ValueError, match="reads 'zz', which is not an input or a layer before it"):
        Network("bad", (a,), edges=(("a", ("zz",)),))
    with pytest.raises(ValueError, match="inputs = 'input': must be a non-empty tuple"):
        Network("bad", (a,), inputs="input")


def test_a_gemm_reads_a_flattened_tensor_and_inputs_agree():
    pool = Pool2d(name="p", N=2, C=8, H=4, W=4, R=2, S=2, stride=2, mode="avg")      # 2x8x2x2
    fc = Gemm(name="fc", M=2, N=10, K=32)
    assert Network("ok", (pool, fc)).connection_error() is None
    wrong = Gemm(name="fc", M=2, N=10, K=31)
    assert "takes 2x31x1x1" in Network("no", (pool, wrong)).connection_error()
    # two layers reading the one input must agree on its shape
    c1 = Conv2d(name="c1", N=1, C=4, H=8, W=8, K=4, R=1, S=1)
    c2 = Conv2d(name="c2", N=1, C=4, H=9, W=9, K=4, R=1, S=1)
    with pytest.raises(ValueError, match=r"layer 'c2' reads 'input' \(input 1x4x8x8"):
        Network("two", (c1, c2), edges=(("c2", ("input",)),))


def test_measuring_needs_one_input():
    from simulator.measure.network import check_plans
    with pytest.raises(ValueError, match="18 inputs .*one input 'input' is what runs end to end"):
        check_plans("conv-ablation", [1], ["direct-nchw"])


def test_the_systolic_engine_runs_a_loose_list_of_layers():
    import hwmodels
    from simulator.systolic.engine import simulate_network
    a = Conv2d(name="a", N=1, C=16, H=18, W=18, K=16, R=3, S=3)
    b = Conv2d(name="b", N=1, C=16, H=15, W=15, K=16, R=2, S=2)
    res = simulate_network(hwmodels.get("systolic-8x8"), Network("loose", (a, b)), "os")
    assert [lr.workload for lr in res.layers] == ["a", "b"]


def test_a_network_is_given_at_its_own_batch():
    net = mini(2)
    assert pl.network(net, None) is net and pl.network(net, 2) is net
    with pytest.raises(ValueError, match="batch=3: workload 'mini' is built at batch 2"):
        pl.network(net, 3)


def test_segments_cover_every_layer_once(tmp_path):
    for net in _built_ins(tmp_path):
        segs = pl.segments(net)
        names = [op.name for _, ops in segs for op in ops]
        assert names == [op.name for op in net.ops]
        assert segs[0][0] == "input"
        # a cut never leaves two layer outputs live
        done = set()
        for (_, ops), nxt in itertools.zip_longest(segs, segs[1:]):
            done |= {op.name for op in ops}
            if nxt is None:
                continue
            later = {t for _, o in segs[segs.index(nxt):] for op in o for t in net.inputs_of(op.name)}
            assert len(done & later) <= 1

"""A whole network as roofsim's kernels: the forward pass under every plan (numba's CUDA
simulator) against numpy's unfolded float64 forward; the plan's layout transforms;
plan files; the measurement flow end to end (timings meaningless under the simulator,
their bookkeeping checked)."""
import json

import numpy as np
import pytest
from mini_net import mini

from simulator.analysis import plan as pl
from simulator.measure import network as nw


def _forward(net, configs, seed=0):
    from numba import cuda
    w = nw.random_weights(net, seed)
    x = np.random.default_rng(seed + 1).standard_normal((2, 3, 8, 8)).astype(np.float32)
    f = nw.Forward(cuda, net, pl.expand(net, configs), nw.folded(net, w))
    f.tensors["input"].copy_to_device(x.ravel())
    f.run()
    return f.logits(), nw.reference_forward(net, w, x)


@pytest.mark.parametrize("plan", pl.UNIFORM + ("mixed",))
def test_forward_matches_numpy(plan):
    """The kernels' forward (batch norm folded: scale into the weights, shift with the
    ReLU and the residual add) computes numpy's unfolded network, transforms and all."""
    net = mini()
    if plan == "mixed":      # every configuration somewhere, layouts switching mid-block
        names = pl.configurable(net)
        configs = {n: (pl.CONFIGS[i % 4] if n != "fc" else "direct") for i, n in enumerate(names)}
    else:
        configs = pl.uniform_configs(net, plan)
    got, ref = _forward(net, configs)
    assert got.shape == ref.shape == (2, 5)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


def test_a_wrong_fold_is_caught():
    """The check can fail: the shift left out of one batch norm moves the logits."""
    from numba import cuda
    net = mini()
    w = nw.random_weights(net, 0)
    p = nw.folded(net, w)
    p["a.bn1"] = np.zeros_like(p["a.bn1"])
    x = np.random.default_rng(1).standard_normal((2, 3, 8, 8)).astype(np.float32)
    f = nw.Forward(cuda, net, pl.expand(net, pl.uniform_configs(net, "direct-nchw")), p)
    f.tensors["input"].copy_to_device(x.ravel())
    f.run()
    assert np.abs(f.logits() - nw.reference_forward(net, w, x)).max() > 1e-3


def test_transforms_follow_the_layouts():
    """The input arrives NCHW; im2col writes NHWC whatever it read; a tensor read in the
    other layout is transformed once, however many layers read it."""
    net = mini()
    nhwc = pl.expand(net, pl.uniform_configs(net, "direct-nhwc"))
    assert [lp.op.name for lp in nhwc if lp.algorithm == "transform"] == ["input.to_nhwc"]
    assert pl.expand(net, pl.uniform_configs(net, "direct-nchw"))[0].op.name == "conv1"
    # im2col from NCHW: each convolution's NHWC output read by an NCHW convolution is
    # transformed back; the projection block's input (read by two convolutions) once
    i2c = pl.expand(net, pl.uniform_configs(net, "im2col-nchw"))
    tr = [lp.op.name for lp in i2c if lp.algorithm == "transform"]
    assert tr == ["maxpool.to_nchw", "a.bn1.to_nchw", "a.bn2.to_nchw"]
    reads = {lp.op.name: lp.inputs for lp in i2c}
    assert reads["a.conv1"] == reads["a.down"] == ("maxpool.to_nchw",)
    # a residual add in another layout than its shortcut transforms the shortcut
    cfg = {**pl.uniform_configs(net, "direct-nchw"), "b.conv1": ("direct", "nhwc")}
    mixed = pl.expand(net, cfg)
    assert reads_of(mixed, "b.bn1") == ("b.conv1", "a.bn2.to_nhwc")


def reads_of(layers, name):
    return next(lp.inputs for lp in layers if lp.op.name == name)


def test_plan_files(tmp_path):
    """A person's plan file: a default and exceptions; TOML and JSON alike; errors name
    the key and what is allowed."""
    import workloads
    net = workloads.resnet50()
    f = tmp_path / "p.toml"
    f.write_text('default = "direct-nhwc"\n[layers]\n"layer4.0.conv2" = "im2col-nchw"\nfc = "im2col"\n')
    cfg = pl.load_plan_file(f, net)
    assert cfg["conv1"] == ("direct", "nhwc") and cfg["layer4.0.conv2"] == ("im2col", "nchw")
    assert cfg["fc"] == "im2col" and len(cfg) == 54
    j = tmp_path / "p.json"
    j.write_text(json.dumps({"default": "direct-nhwc", "layers": {"layer4.0.conv2": "im2col-nchw",
                                                                  "fc": "im2col"}}))
    assert pl.load_plan_file(j, net) == cfg
    # what plan --oracle writes reads back to the same plan
    back = tmp_path / "back.toml"
    back.write_text(pl.plan_text(net, cfg, "a comment"))
    assert pl.load_plan_file(back, net) == cfg
    for text, needle in (('default = "direct-nhwq"\n', "default = 'direct-nhwq': allowed: direct-nchw"),
                         ('default = "direct-nhwc"\n[layers]\nbn1 = "direct-nchw"\n',
                          "layer 'bn1' is a batchnorm; it runs in the layout of what it reads"),
                         ('default = "direct-nhwc"\n[layers]\n"layer9.conv1" = "direct-nchw"\n',
                          "layer 'layer9.conv1' is not in resnet50"),
                         ('[layers]\nconv1 = "direct-nchw"\n', "no default and no configuration for "
                                                               "layer 'layer1.0.conv1'"),
                         ('default = "direct-nhwc"\n[layers]\nfc = "im2col-nhwcc"\n',
                          "fc = 'im2col-nhwcc': allowed: direct, im2col"),
                         ('default = "direct-nhwc"\ncolour = 1\n', "unknown key 'colour'"),
                         ('default = \n', "not valid TOML"),
                         ("x = " + "[" * 3000 + "]" * 3000 + "\n", "nested too deep"),
                         ('default = "' + "x" * 100000 + '"\n', r"\.\.\. \(100002 characters\)")):
        f.write_text(text)
        with pytest.raises(ValueError, match=needle if "\\" in needle else
                           needle.replace("(", r"\(").replace(")", r"\)")):
            pl.load_plan_file(f, net)
    j.write_text('{"default": "direct-nhwc", "default": "im2col-nhwc"}')
    with pytest.raises(ValueError, match="key 'default' is given twice"):
        pl.load_plan_file(j, net)
    j.write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(ValueError, match="nested too deep"):
        pl.load_plan_file(j, net)


def test_measurement_flow_end_to_end(monkeypatch):
    """run_network on the small network: every plan checked against numpy on the CUDA
    simulator, the oracle's plan picked from the measured table and measured too. The
    simulator has no clock, so the queued timings are stubbed with known per-layer times
    (layer i of a plan: (i + 1) us): the three methods' bookkeeping must give them back."""
    from numba import cuda

    from simulator.measure import harness, micro
    monkeypatch.setattr(cuda, "event_elapsed_time", lambda a, b: 1.0, raising=False)

    @cuda.jit
    def nop(us):          # the simulator has no nanosleep
        pass
    monkeypatch.setattr(micro, "spin_kernel", nop)
    monkeypatch.setattr(harness, "require_gpu", lambda: cuda)
    monkeypatch.setattr(harness, "provenance", lambda command=None: {"command": command})

    def queued(c, fwd, upto, host, per_layer=False):
        per = [(i + 1) * 1e-6 for i in range(upto)]
        return sum(per), (per if per_layer else None), False
    monkeypatch.setattr(nw, "_queued", queued)
    data = nw.run_network(lambda b: mini(b), batches=(2,), plans=pl.UNIFORM + ("oracle",),
                          reps=2, log=lambda *a: None)
    recs = {r["plan"]: r for r in data["records"]}
    assert set(recs) == set(pl.UNIFORM) | {"oracle"}
    assert all(r["ok"] and r["rel_error"] < 1e-5 for r in recs.values())
    r = recs["im2col-nchw"]
    assert r["layers_run"] == len(r["layers"]) == 13 + 3          # three transforms
    want = [(i + 1) * 1e-6 for i in range(16)]
    assert [row["subtraction_s"] for row in r["layers"]] == pytest.approx(want)
    assert [row["per_layer_s"] for row in r["layers"]] == pytest.approx(want)
    assert r["per_layer_sum_s"] == pytest.approx(sum(want)) == r["subtraction_sum_s"]
    assert r["end_to_end_queued"]["median_s"] == pytest.approx(sum(want))
    assert r["end_to_end"]["median_s"] == pytest.approx(1e-3)     # events read 1 ms
    o = recs["oracle"]
    assert o["transforms"] and {t["layout"] for t in o["transforms"]} == {"nchw", "nhwc"}
    assert set(o["configs"]) == set(pl.configurable(mini()))
    # the oracle priced its plan with the table: later layers cost more, so it keeps
    # transforms out (direct-nchw runs none) and its total is the stubbed plan's
    assert o["predicted_by_oracle_s"] == pytest.approx(sum((i + 1) * 1e-6 for i in range(13)))


def test_oracle_leaves_out_what_cannot_launch():
    """From batch 84 the tiled GEMM of ResNet-50's first convolution by im2col has more
    than CUDA's 65,535 rows of tiles: the oracle searches without it (and says so), and
    the uniform im2col plans have no total."""
    import hwmodels
    hw = hwmodels.get("h100-sxm")
    net = pl.network("resnet50", 84)
    layers, refused = pl.launchable(hw, pl.oracle_layers(net))
    assert {(lp.op.name, lp.kernel) for lp, _ in refused} == {("conv1", "conv-im2col")}
    assert all("65535" in why for _, why in refused)
    # a table with every launchable layer at 1 us: the dynamic program avoids conv1 by
    # im2col, and a plan that needs it has no total
    table = {pl.time_key(lp): 1e-6 for lp in layers}
    choice, _ = pl.choose(net, table)
    assert choice.configs["conv1"][0] == "direct"
    assert pl.plan_seconds(net, pl.uniform_configs(net, "im2col-nhwc"), table) is None
    assert pl.plan_seconds(net, choice.configs, table) == pytest.approx(choice.seconds)

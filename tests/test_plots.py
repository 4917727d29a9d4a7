"""Every chart draws every item of the data it is given (or its title says what it
leaves out and why), its legend names what colour and marker encode, and no label
overlaps a legend or another label.

Each chart's builder (``plots._NAME_figure``) returns the matplotlib Figure; these
tests build real inputs through the library, count what the figure draws -- a
scatter's offsets, a marked line's points, a bar container's bars, each inside the
axes' view -- and compare the count with the data, then draw the figure and compare
the bounding boxes of its texts and legends (``get_window_extent``)."""
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.container import BarContainer

import hwmodels
import workloads
from simulator.analysis import plots
from workloads.ir import Conv2d, Elementwise, Gemm

ROOT = Path(__file__).resolve().parents[1]
MEASURED = ROOT / "data" / "measurements" / "h100-sxm"
TRACES = ROOT / "data" / "traces" / "h100-sxm"
H100 = hwmodels.get("h100-sxm")
TPU = hwmodels.get("tpu-v1")
GTX480 = hwmodels.get("gtx480")


# --- what a figure draws --------------------------------------------------------------------

def _in_view(ax, x, y):
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    return np.isfinite(x) & np.isfinite(y) & (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)


def points(ax) -> int:
    """Markers the axes draw inside its view: scatter offsets and the points of lines
    that carry a marker (a line without one is a reference: a roof, y = x). Overlays
    that circle items drawn elsewhere (gid ``plots._MARK``) are not items."""
    n = 0
    for c in ax.collections:
        if isinstance(c, PathCollection) and c.get_gid() != plots._MARK:
            off = c.get_offsets()
            n += int(_in_view(ax, off[:, 0], off[:, 1]).sum()) if len(off) else 0
    for line in ax.lines:
        if line.get_marker() not in (None, "", " ", "None", "none") and line.get_gid() != plots._MARK:
            n += int(_in_view(ax, line.get_xdata(), line.get_ydata()).sum())
    return n


def bars(ax) -> int:
    """Bars the axes draw with a part inside its view."""
    n = 0
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    for cont in ax.containers:
        if isinstance(cont, BarContainer):
            for p in cont.patches:
                bx0, by0 = p.get_x(), p.get_y()
                bx1, by1 = bx0 + p.get_width(), by0 + p.get_height()
                n += bool(min(bx0, bx1) <= x1 and max(bx0, bx1) >= x0
                          and min(by0, by1) <= y1 and max(by0, by1) >= y0)
    return n


def _labels(axis):
    lo, hi = sorted(axis.get_view_interval())
    eps = (hi - lo) * 1e-9
    out = []
    for locs, labs in ((axis.get_majorticklocs(), axis.get_majorticklabels()),
                       (axis.get_minorticklocs(), axis.get_minorticklabels())):
        out += [t for loc, t in zip(locs, labs)
                if lo - eps <= loc <= hi + eps and t.get_visible() and t.get_text().strip()]
    return out


def texts(fig):
    """(what, bounding box) of every visible label, title and legend of the figure, as
    drawn."""
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    out = []
    for i, ax in enumerate(fig.axes):
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            out += [(f"axes {i} {name} tick {t.get_text()!r}", t.get_window_extent(r)) for t in _labels(axis)]
            if axis.label.get_visible() and axis.label.get_text():
                out.append((f"axes {i} {name} label", axis.label.get_window_extent(r)))
        for title in (ax.title, ax._left_title, ax._right_title):
            if title.get_visible() and title.get_text():
                out.append((f"axes {i} title", title.get_window_extent(r)))
        out += [(f"axes {i} text {t.get_text()!r}", t.get_window_extent(r))
                for t in ax.texts if t.get_visible() and t.get_text()]
        if ax.get_legend() is not None:
            out.append((f"axes {i} legend", ax.get_legend().get_window_extent(r)))
    out += [("figure legend", leg.get_window_extent(r)) for leg in fig.legends]
    if fig._suptitle is not None and fig._suptitle.get_text():
        out.append(("suptitle", fig._suptitle.get_window_extent(r)))
    return out


def collisions(fig):
    """Pairs of labels, titles and legends whose boxes overlap (by more than half a pixel)."""
    boxes = texts(fig)
    bad = []
    for i, (a, ba) in enumerate(boxes):
        for b, bb in boxes[i + 1:]:
            if ba.padded(-0.5).overlaps(bb.padded(-0.5)):
                bad.append((a, b))
    return bad


def title(fig) -> str:
    return " ".join(t for t in [fig._suptitle.get_text() if fig._suptitle else ""]
                    + [ax.get_title() for ax in fig.axes] if t)


def legend_text(ax) -> list:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _check(fig):
    """What every chart keeps to besides its counts: no overlapping labels, and it saves."""
    assert collisions(fig) == []


# --- the roofline ---------------------------------------------------------------------------------

def test_roofline_draws_every_op_of_resnet50_coloured_by_kind():
    """The new user's chart: 106 ops, of which 54 were drawn (batch norms and pools left
    out by a filter on kind), coloured by layer index with a colour bar that meant
    nothing. Now every op, colour and marker by kind, a legend of kinds with counts."""
    from simulator.analysis.roofline import roofline
    rep = roofline(H100, workloads.resolve("resnet50", batch=8))
    fig = plots._roofline_figure(rep)
    ax = fig.axes[0]
    assert points(ax) == len(rep.points) == 106
    assert len(fig.axes) == 1                                 # no colour bar
    legend = legend_text(ax)
    for kind in ("conv2d", "batchnorm", "pool2d", "gemm"):
        n = sum(p.kind == kind for p in rep.points)
        assert any(t.startswith(f"{kind} ({n}") for t in legend), (kind, legend)
    assert "106 ops" in title(fig)
    colours = {tuple(np.round(c.get_facecolor()[0], 3)) for c in ax.collections}
    assert len(colours) == 4                                  # one per kind
    _check(fig)


def _odd_network():
    """A copy (no FLOPs), small ops an L2-warm bound moves no DRAM bytes for, a GEMM
    and a convolution: what a log axis cannot hold, beside what it can."""
    from workloads.networks import Network
    ops = (Elementwise(name="copy", n=1 << 12, op="copy"), Elementwise(name="relu", n=1 << 12),
           Gemm(name="fc", M=4096, N=4096, K=4096),
           Conv2d(name="conv", N=8, C=256, H=56, W=56, K=256, R=3, S=3, stride=1, padding=1))
    return Network("odd", ops)


def test_roofline_draws_ops_a_log_axis_cannot_hold_in_marked_bands():
    from simulator.analysis.roofline import roofline
    rep = roofline(H100, _odd_network(), l2="warm")
    no_flops = sum(p.flops == 0 for p in rep.points)
    no_bytes = sum(p.flops > 0 and not np.isfinite(p.intensity_flop_per_byte) for p in rep.points)
    assert no_flops == 1 and no_bytes >= 1
    fig = plots._roofline_figure(rep)
    ax = fig.axes[0]
    assert points(ax) == len(rep.points) == 4
    t = title(fig)
    assert "1 op with no FLOPs drawn hollow in the floor band" in t
    assert f"{no_bytes} op{'s' if no_bytes > 1 else ''} moving no DRAM bytes" in t
    # few ops: each is named, and no name overlaps another
    assert {x.get_text() for x in ax.texts if x.get_visible()} <= {"copy", "relu", "fc", "conv", "copy, relu"}
    _check(fig)


def test_roofline_chart_writes_its_file(tmp_path):
    from simulator.analysis.roofline import roofline
    p = tmp_path / "r.svg"
    plots.roofline_chart(roofline(H100, workloads.resolve("resnet50")), p)
    assert p.read_bytes().lstrip().startswith(b"<?xml")


# --- the TPU paper's rooflines ----------------------------------------------------------------------

def test_tpu_paper_chart_draws_every_preset_it_is_given():
    """Colours ran out after five presets and the sixth was not drawn; the view ended at
    1e4 op/B whatever the ridges."""
    names = ("tpu-v1", "k80", "haswell-e5-2699v3", "h100-sxm", "gtx480", "v100-sxm2", "a100-sxm4")
    hws = [hwmodels.get(n) for n in names if n in hwmodels.names()]
    assert len(hws) >= 6
    fig = plots._tpu_paper_figure(hws)
    (ax,) = fig.axes
    assert points(ax) == len(hws)                             # a dot at each ridge
    assert len(legend_text(ax)) == len(hws)
    _check(fig)


# --- the systolic array -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def resnet_on_tpu():
    from simulator.systolic.engine import simulate_network
    return simulate_network(TPU, workloads.resolve("resnet50"))


def test_systolic_chart_draws_every_layer_and_says_what_is_off_the_array(resnet_on_tpu):
    res = resnet_on_tpu
    fig = plots._systolic_figure(res)
    ax = fig.axes[0]
    n = len(res.layers)
    assert bars(ax) == n and points(ax) == n                  # utilisation, mapping efficiency
    skipped = len(res.extra["not_on_array"])
    assert f"{n} layers on the array; {skipped} left out" in ax.get_title()
    assert {t.get_text() for t in fig.legends[0].get_texts()} == {"utilisation (stalls included)",
                                                                  "mapping efficiency"}


def test_systolic_legend_and_layer_names_do_not_overlap(resnet_on_tpu):
    """The rotated layer names ran into the legend under the axes."""
    fig = plots._systolic_figure(resnet_on_tpu)
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = fig.legends[0].get_window_extent()
    names = [t.get_window_extent() for t in _labels(ax.xaxis)]
    assert len(names) == len(resnet_on_tpu.layers)            # 54 names fit: all shown
    assert not [b for b in names if b.overlaps(legend)]
    assert all(a.x1 <= b.x0 for a, b in zip(names, names[1:]))
    _check(fig)


def test_systolic_chart_thins_the_names_of_many_layers():
    """150 layers: every k-th named, none overlapping, every layer still drawn."""
    from simulator.systolic.engine import simulate_network
    from workloads.networks import Network
    ops = tuple(Gemm(name=f"block{i:03d}.projection", M=64, N=64 + i, K=64) for i in range(150))
    res = simulate_network(TPU, Network("deep", ops))
    fig = plots._systolic_figure(res)
    ax = fig.axes[0]
    assert bars(ax) == points(ax) == 150
    assert "named)" in ax.get_xlabel()
    assert 1 < len(_labels(ax.xaxis)) < 150
    _check(fig)


def test_systolic_chart_writes_its_file(resnet_on_tpu, tmp_path):
    p = tmp_path / "s.png"
    plots.systolic_chart(resnet_on_tpu, p)
    assert p.read_bytes()[:4] == b"\x89PNG"


# --- the SIMT engine's sweeps and timelines -------------------------------------------------------------

def _sweep_rows(kernel, pairs, mode, **args):
    """``sweep grid`` rows (the fields the chart reads) from the library's sweep points."""
    from simulator.analysis.compare import PointTask, predict_point
    rows = []
    for g, b in pairs:
        kw = dict(args, block=b, **({} if g is None else {"grid": g}))
        p = predict_point(PointTask(GTX480, kernel, kw, mode))
        rows.append({"grid": str(g), "block": str(b), "blocks": p.problem.programs[-1].launch.blocks,
                     "engine_seconds": p.engine.seconds if p.engine else None,
                     "analytic_seconds": p.analytic.seconds})
    return rows


@pytest.mark.parametrize("mode", ["full", "analytic"])
def test_grid_sweep_draws_every_point_of_each_predictor(mode):
    rows = _sweep_rows("relu", [(g, b) for b in (128, 256) for g in (1, 2, 4, 15, 30)], mode, n=65536)
    fig = plots._grid_sweep_figure(rows, "relu on gtx480")
    (ax,) = fig.axes
    engine = sum(r["engine_seconds"] is not None for r in rows)
    assert points(ax) == len(rows) + engine
    assert (engine == 0) == ("analytic model only (engine not run)" in ax.get_title())
    _check(fig)


def test_block_sweep_draws_every_block():
    rows = _sweep_rows("gemm-naive", [(None, b) for b in (8, 16, 32, 64, 128, 256)], "analytic",
                       m=64, n=64, k=16)
    fig = plots._grid_sweep_figure(rows)
    (ax,) = fig.axes
    assert points(ax) == len(rows)
    _check(fig)


@pytest.fixture(scope="module")
def relu_run():
    from simulator.simt import api
    prob = api.build(GTX480, "relu", n=1 << 15, block=128)
    return api.simulate(GTX480, prob, mode="full", trace=5000)


def test_timeline_draws_every_block_side_by_side(relu_run):
    """Blocks resident on one SM at once were drawn over each other, coloured by index."""
    fig = plots._simt_timeline_figure(relu_run)
    (ax,) = fig.axes
    b = relu_run.detail.launches[0].blocks
    assert bars(ax) == len(b["sm"]) == 120
    # no two bars cover one another: blocks that overlap in time sit in different lanes
    rects = [(p.get_y(), p.get_x(), p.get_x() + p.get_width()) for c in ax.containers for p in c.patches]
    for i, (y, x0, x1) in enumerate(rects):
        assert not any(abs(y - y2) < 1e-9 and x0 < e2 and s2 < x1 for y2, s2, e2 in rects[i + 1:])
    assert legend_text(ax)[0].startswith("wave 1")
    _check(fig)


def test_timeline_of_warps_draws_every_traced_instruction_coloured_by_opcode(relu_run):
    fig = plots._simt_timeline_figure(relu_run, warps=True)
    (ax,) = fig.axes
    tr = relu_run.detail.launches[0].trace
    assert points(ax) == len(tr) == 5000
    assert any(t.startswith("ALU (") for t in legend_text(ax))
    assert "the first 5,000 of" in ax.get_title()
    _check(fig)


def test_timeline_of_a_sampled_run_says_how_many_blocks_it_simulated():
    from simulator.simt import api
    prob = api.build(GTX480, "relu", n=1 << 22, block=256)
    r = api.simulate(GTX480, prob, mode="sampled")
    fig = plots._simt_timeline_figure(r)
    (ax,) = fig.axes
    n, total = len(r.detail.launches[0].blocks["sm"]), prob.programs[-1].launch.blocks
    assert n < total and bars(ax) == n
    assert f"{n} blocks of {total} (sampled" in ax.get_title()


# --- validation against measurements ----------------------------------------------------------------

@pytest.fixture(scope="module")
def validation_rows():
    """A few committed records of each kernel suite; the engine's budget leaves it out of
    the costlier ones."""
    from simulator.analysis.measurements import load_suite
    from simulator.analysis.validate import predict_records
    rows = []
    for suite in ("grid", "gemm", "conv"):
        sf = load_suite(MEASURED, suite)
        recs = sf.records[:4]
        if suite == "grid":     # the grid panel draws block 256; the rest only on the left
            small = [r for r in sf.records if r["size"] == "in_l2"]
            recs = [r for r in small if r["block"] == 256][:5] + [r for r in small if r["block"] == 512][:3]
        rows += predict_records(H100, dataclasses.replace(sf, records=recs), engine_budget=2e6)
    return rows


def test_validation_chart_draws_every_record_of_every_predictor(validation_rows):
    rows = validation_rows
    fig = plots._validation_figure(rows, "h100-sxm", H100)
    scatter, grid, roof = fig.axes[:3]
    predicted = {p: sum(r.predicted_s(p) is not None for r in rows)
                 for p in ("engine", "analytic", "roofline")}
    assert 0 < predicted["engine"] < len(rows)                # the budget left some out
    assert points(scatter) == sum(predicted.values())
    assert f"engine not run on {len(rows) - predicted['engine']}" in scatter.get_title()
    at = [r for r in rows if r.suite == "grid" and r.measurement.launch_shapes[-1][1][0] == 256]
    assert points(grid) == sum(1 + (r.predicted_s("engine") is not None) + 1 for r in at)
    assert f"the other {sum(r.suite == 'grid' for r in rows) - len(at)} grid records" in grid.get_title()
    assert points(roof) == len(rows) + predicted["engine"] + predicted["analytic"]
    _check(fig)


# --- plans of a network ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def plan_rows():
    from simulator.analysis import plan as pl
    net = pl.network("resnet50", 1)
    out, _ = pl.predict_plan(H100, pl.expand(net, pl.configs_of(net, "im2col-nhwc")), "analytic",
                             workers=1)
    return out.finished


def test_plan_chart_draws_every_layer_and_says_what_was_not_run(plan_rows):
    rows = plan_rows
    doc = {"workload": "resnet50", "batch": 1, "hw": "h100-sxm", "plan": "im2col-nhwc", "mode": "analytic"}
    fig = plots._plan_figure(rows, doc)
    (ax,) = fig.axes
    assert points(ax) == 2 * len(rows)                        # analytic and roofline
    assert "engine: not run (analytic mode)" in ax.get_title()
    _check(fig)


def test_plan_chart_beside_a_systolic_array_counts_its_layers(plan_rows, resnet_on_tpu):
    per = {r.workload: r.seconds for r in resnet_on_tpu.layers}
    rows = [{**r, "systolic_seconds": per.get(r["layer"])} for r in plan_rows]
    on = sum(r["systolic_seconds"] is not None for r in rows)
    doc = {"workload": "resnet50", "batch": 1, "hw": "h100-sxm", "plan": "im2col-nhwc",
           "mode": "analytic", "systolic_hw": "tpu-v1"}
    fig = plots._plan_figure(rows, doc)
    (ax,) = fig.axes
    assert 0 < on < len(rows)
    assert points(ax) == 2 * len(rows) + on
    assert f"tpu-v1: {on} of {len(rows)} layers (the rest are not on its array)" in ax.get_title()
    _check(fig)


# --- other tools' traces ------------------------------------------------------------------------------------

def _check_doc(kernels, trace):
    from simulator.analysis.check import check
    return {"trace": str(trace), "hw": H100.name, "precision": "fp32", **check(H100, kernels)}


def test_check_chart_draws_every_kernel_of_the_resnet50_trace():
    from simulator.analysis.check import read
    path = TRACES / "torch_resnet50_b8.json"
    doc = _check_doc(read(path), path)
    fig = plots._check_figure(doc, H100)
    assert points(fig.axes[0]) == len(doc["kernels"]) == 174
    assert "174 kernels" in title(fig)
    kinds = {r["op"] for r in doc["kernels"]}
    assert {t.split(" (")[0] for t in legend_text(fig.axes[0])} >= kinds
    _check(fig)


def test_check_chart_draws_kernels_without_flops_beside_the_roofline():
    """Nsight Compute's kernels map to no op (bytes counted, no FLOPs): the chart drew
    none of them. A copy has bytes and no FLOPs; a kernel with neither is counted."""
    from simulator.analysis.check import Kernel, read
    path = TRACES / "ncu_roofsim.csv"
    copy = Elementwise(name="copy", n=1 << 20, op="copy")
    ks = read(path) + [Kernel("copy_kernel", 2e-6, copy, "elementwise"),
                       Kernel("gemm_kernel", 1e-4, Gemm(name="g", M=512, N=512, K=512), "gemm"),
                       Kernel("mystery_kernel", 1e-6)]
    doc = _check_doc(ks, path)
    fig = plots._check_figure(doc, H100)
    assert sum(points(ax) for ax in fig.axes) == 1 + 10 + 1
    roof, side = fig.axes[:2]
    assert points(roof) == 1                                   # the GEMM
    assert points(side) == 10 + 1                              # Nsight's kernels and the copy
    assert "13 kernels" in title(fig) and "(1 with no op and no byte counts left out)" in title(fig)
    _check(fig)


def test_check_chart_writes_its_file(tmp_path):
    from simulator.analysis.check import read
    path = TRACES / "ncu_roofsim.csv"
    p = tmp_path / "c.png"
    plots.check_chart(_check_doc(read(path), path), H100, p)
    assert p.read_bytes()[:4] == b"\x89PNG"


def test_only_plots_imports_matplotlib_and_it_leaves_pyplot_alone():
    import re
    import sys
    for f in (ROOT / "simulator").rglob("*.py"):
        if f.name != "plots.py":
            assert not re.search(r"^\s*(from|import)\s+matplotlib", f.read_text(), re.MULTILINE), f
    src = (ROOT / "simulator" / "analysis" / "plots.py").read_text()
    assert not re.search(r"^\s*(from|import)\s+matplotlib(\.pyplot|\s+import\s+pyplot)", src, re.MULTILINE)
    before = sys.modules.get("matplotlib.pyplot")
    before_figs = before.get_fignums() if before else []
    plots._tpu_paper_figure()
    after = sys.modules.get("matplotlib.pyplot")
    assert after is before and (after.get_fignums() if after else []) == before_figs

"""Charts: the only module that imports matplotlib.

Each chart is two functions: ``_NAME_figure(...)`` builds and returns the matplotlib
``Figure`` from the data it is given (the tests inspect it), and ``NAME_chart(...,
path)`` saves it (PNG, SVG or PDF, written atomically). The figures are built without
pyplot (a ``Figure`` on an Agg canvas), so drawing a chart never changes the caller's
backend or pyplot's figures.

What every chart keeps to (``docs/charts.md``; ``tests/test_plots.py`` holds them):

* it draws every item of its data -- each op, layer, kernel, record, block or issued
  instruction is a marker, a bar or a line's point -- or says in its title how many it
  leaves out and why. A value a log axis cannot hold (no FLOPs, no DRAM bytes, zero
  seconds) is drawn hollow in a shaded band at the axis's edge and counted in the title;
* colour and marker encode something its legend names (the op kind, the predictor, the
  suite, the opcode, the wave), never an index;
* legends sit outside the axes, and names along an axis are thinned (every k-th) until
  none overlaps its neighbour, checked with the renderer.

Charts draw Results; they never lower or simulate anything.
"""
from __future__ import annotations

import math
import os

import numpy as np

from simulator.arguments import show

_LEVEL_STYLES = ["-", "--", ":", "-."]
# op kind -> (colour, marker). The roofline's kinds (workloads' op kinds) and the ones a
# framework's trace names (``analysis.check``) share a style; other kinds take spares.
_KIND_STYLE = {"conv2d": ("tab:blue", "o"), "gemm": ("tab:red", "s"),
               "batchnorm": ("tab:green", "D"), "pool2d": ("tab:purple", "v"),
               "elementwise": ("tab:orange", "^"), "other": ("0.45", "X")}
_KIND_ALIASES = {"convolution": "conv2d", "normalization": "batchnorm", "pooling": "pool2d"}
_SPARE_STYLES = [("tab:brown", "P"), ("tab:pink", "h"), ("tab:olive", "*"), ("tab:cyan", "p"),
                 ("tab:gray", "d"), ("gold", "<"), ("navy", ">"), ("lime", "8")]
_PREDICTOR_STYLE = {"engine": ("tab:blue", "o"), "analytic": ("tab:orange", "s"),
                    "roofline": ("0.45", "v")}
_SUITE_MARKERS = {"grid": "o", "gemm": "s", "conv": "^"}
_SPARE_MARKERS = ["D", "v", "P", "X", "h", "*", "<", ">"]
_PAPER_COLOURS = ["tab:red", "tab:green", "tab:blue", "tab:purple", "tab:orange", "tab:brown",
                  "tab:pink", "tab:gray", "tab:olive", "tab:cyan"]    # the TPU paper's first three
_TAB10 = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
          "tab:pink", "tab:gray", "tab:olive", "tab:cyan"]
_EDGE = 1.6          # a value off the log axis is drawn this factor inside the axis's edge
_BAND = 2.6          # ... in a shaded band this factor wide
_MARK = "mark"       # gid of an overlay that highlights items drawn elsewhere (not an item)


# --- figures, saving, and the helpers that keep labels apart -------------------------------

def _figure(figsize):
    """A Figure on its own Agg canvas (no pyplot), laid out by constrained layout (which
    makes room for legends and names outside the axes)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=figsize, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path):
    import io

    from hwmodels.fileio import atomic_write
    fmt = str(path).rsplit(".", 1)[-1].lower()
    if fmt not in ("png", "svg", "pdf"):
        raise ValueError(f"path={show(str(path), 200)}: the file must end in .png, .svg or .pdf")
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=130, bbox_inches="tight")
    atomic_write(path, buf.getvalue())


def _write(fig, path):
    """Save and release the figure (its artists hold the data; a loop of charts must not
    keep them all)."""
    try:
        _save(fig, path)
    finally:
        fig.clear()


def _legend_right(ax, handles=None, labels=None, **kw):
    """The axes' legend outside it, on the right (constrained layout makes room)."""
    kw.setdefault("fontsize", 8)
    args = () if handles is None else (handles, labels) if labels is not None else (handles,)
    return ax.legend(*args, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kw)


def _sectioned_legend(ax, sections, **kw):
    """One legend outside the axes on the right, in sections: (heading, handles, labels)
    each, the heading in bold."""
    head = _proxy("none", "none")
    hs, ls, heads = [], [], []
    for heading, handles, labels in sections:
        if not handles:
            continue
        heads.append(len(hs))
        hs += [head] + list(handles)
        ls += [heading] + list(labels)
    leg = _legend_right(ax, hs, ls, **kw)
    for i in heads:
        leg.get_texts()[i].set_fontweight("bold")
    return leg


def _name_ticks(fig, ax, names, fontsize=6, pad_px=1.5):
    """Name x positions 0..n-1 by ``names`` (rotated 90 degrees): every k-th, with k the
    smallest that keeps neighbouring names apart as drawn (measured with the renderer); a
    minor tick marks every position. Returns k."""
    n = len(names)
    pos = np.arange(n)
    ax.set_xticks(pos, minor=True)
    step = 1
    while True:
        ax.set_xticks(pos[::step], [str(names[i]) for i in range(0, n, step)], rotation=90,
                      fontsize=fontsize)
        if len(pos[::step]) < 2:
            return step
        fig.canvas.draw()
        boxes = [t.get_window_extent() for t in ax.get_xticklabels()]
        if min(b.x0 - a.x1 for a, b in zip(boxes, boxes[1:])) >= pad_px:
            return step
        pitch = (boxes[-1].x0 - boxes[0].x0) / (len(boxes) - 1)
        widest = max(b.width for b in boxes)
        step = max(step + 1, math.ceil(step * (widest + pad_px) / max(pitch, 1e-9)))


def _every(step, what):
    """How thinned the names along an axis are, for its label: '' or ' (every 3rd layer named)'."""
    if step <= 1:
        return ""
    nth = {1: "st", 2: "nd", 3: "rd"}.get(step % 10 if step % 100 not in (11, 12, 13) else 0, "th")
    return f" (every {step}{nth} {what} named)"


def _keep_apart(fig, texts):
    """Hide each text that would overlap one kept before it; the number hidden."""
    if not texts:
        return 0
    fig.canvas.draw()
    kept, hidden = [], 0
    for t in texts:
        b = t.get_window_extent()
        if any(b.overlaps(k) for k in kept):
            t.set_visible(False)
            hidden += 1
        else:
            kept.append(b)
    return hidden


def _kind_styles(kinds):
    """(colour, marker) of each kind: the table's, then spares in sorted order."""
    out, spare = {}, 0
    for k in sorted(set(kinds)):
        base = _KIND_ALIASES.get(k, k)
        if base in _KIND_STYLE:
            out[k] = _KIND_STYLE[base]
        else:
            out[k] = _SPARE_STYLES[spare % len(_SPARE_STYLES)]
            spare += 1
    return out


def _proxy(color, marker, hollow=False, markersize=6, **kw):
    from matplotlib.lines import Line2D
    return Line2D([], [], ls="none", marker=marker, ms=markersize, mec=color if hollow else "black",
                  mfc="none" if hollow else color, mew=1.0 if hollow else 0.4, **kw)


def _spot(x, y):
    """Where a marker lands on log-log axes, to about 1% (markers there coincide)."""
    return round(float(np.log10(x)), 2), round(float(np.log10(y)), 2)


def _count(n, noun):
    """'1 op', '3 ops'."""
    n = int(n)
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _off_axis_note(parts):
    return "\n" + "; ".join(parts) if parts else ""


# --- roofline ------------------------------------------------------------------------------

def _roof(ax, hw, precision, x, color):
    peak = hw.peak_flop_per_s(precision)
    for i, lv in enumerate(hw.memory_levels()):
        y = np.minimum(peak, lv.bandwidth_bytes_per_s * x)
        ax.plot(x, y, _LEVEL_STYLES[i % 4], color=color, lw=1.6 if i == 0 else 1.0,
                label=f"{lv.name.upper()} {lv.bandwidth_bytes_per_s / 1e12:.3g} TB/s, "
                      f"ridge {peak / lv.bandwidth_bytes_per_s:.3g} FLOP/B")
    return peak


def _roofline_figure(report, title=None):
    """Log-log hierarchical roofline: one marker per op at its DRAM intensity and its
    attainable FLOP/s, colour and marker by op kind. An op with no FLOPs sits hollow in
    the shaded floor band, one that moves no DRAM bytes (infinite intensity, an L2-warm
    bound) hollow in the right-edge band; the title counts both."""
    hw = report.hardware
    pts = report.points
    ai = np.array([p.intensity_flop_per_byte for p in pts], dtype=float)
    perf = np.array([p.attainable_flop_per_s for p in pts], dtype=float)
    floor = ~(perf > 0)                                   # no FLOPs: attainable 0
    edge = ~floor & ~np.isfinite(ai)                      # no DRAM bytes: intensity inf
    on = ~floor & ~edge
    lo = min(0.05, ai[on].min() / 3) if on.any() else 0.05
    hi = max(1e4, ai[on].max() * 3) if on.any() else 1e4
    if edge.any():
        hi *= _BAND * 2            # the right-edge band clear of the ops that have an intensity
    x = np.logspace(np.log10(lo), np.log10(hi), 400)
    fig = _figure((10.5, 6))
    ax = fig.subplots()
    peak = _roof(ax, hw, report.precision, x, "black")
    ymax = peak * 3
    pos = perf[~floor]
    ymin = min(pos.min() / 10, peak / 1e3) if pos.size else peak / 1e6
    # other precisions' compute ceilings within view, for context (equal peaks share a line)
    others = {}
    for q in hw.peak_rates().supported():
        pq = hw.peak_flop_per_s(q)
        if q != report.precision and ymin < pq < ymax and pq != peak:
            others.setdefault(pq, []).append(q)
    for pq, qs in others.items():
        ax.axhline(pq, color="0.6", lw=0.8, ls=(0, (2, 3)),
                   label=f"{'/'.join(qs)} peak {pq / 1e12:.3g} TFLOP/s")
    roof_handles, roof_labels = ax.get_legend_handles_labels()
    xs = np.where(on, ai, np.where(edge, hi / _EDGE, lo * _EDGE))
    ys = np.where(floor, ymin * _EDGE, perf)
    if floor.any():
        ax.axhspan(ymin, ymin * _BAND, color="0.92", zorder=0)
    if edge.any():
        ax.axvspan(hi / _BAND, hi, color="0.92", zorder=0)
    kinds = [p.kind for p in pts]
    styles = _kind_styles(kinds)
    handles, labels = [], []
    for kind, (color, marker) in styles.items():
        sel = np.array([k == kind for k in kinds])
        for part, hollow in ((sel & on, False), (sel & ~on, True)):
            if part.any():
                ax.scatter(xs[part], ys[part], marker=marker, s=30, zorder=3,
                           linewidths=1.0 if hollow else 0.4,
                           facecolors="none" if hollow else color,
                           edgecolors=color if hollow else "black")
        handles.append(_proxy(color, marker))
        spots = len({_spot(a, b) for a, b in zip(xs[sel], ys[sel])})
        labels.append(f"{kind} ({int(sel.sum())}" + (f", at {spots} spots)" if spots < sel.sum() else ")"))
    notes = []
    if floor.any():
        handles.append(_proxy("0.3", "o", hollow=True))
        labels.append(f"no FLOPs: floor band ({int(floor.sum())})")
        notes.append(f"{_count(floor.sum(), 'op')} with no FLOPs drawn hollow in the floor band")
    if edge.any():
        handles.append(_proxy("0.3", "o", hollow=True))
        labels.append(f"no DRAM bytes: right band ({int(edge.sum())})")
        notes.append(f"{_count(edge.sum(), 'op')} moving no DRAM bytes (infinite intensity) drawn "
                     "hollow in the right-edge band")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(ymin, ymax)
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte, lower-bound traffic)")
    ax.set_ylabel("attainable FLOP/s (roofline bound)")
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    _sectioned_legend(ax, [(f"roofs: {report.precision} peak {peak / 1e12:.4g} TFLOP/s",
                            roof_handles, roof_labels), ("op kind (ops)", handles, labels)])
    if len(pts) <= 20:          # each op's name; ops at one spot share a label
        groups = {}
        for i in range(len(pts)):
            groups.setdefault(_spot(xs[i], ys[i]), []).append(i)
        texts = [ax.annotate(", ".join(pts[i].layer for i in ix[:3])
                             + (f" +{len(ix) - 3}" if len(ix) > 3 else ""),
                             (xs[ix[0]], ys[ix[0]]), textcoords="offset points",
                             xytext=(-4, 3) if edge[ix[0]] else (4, 3), ha="right" if edge[ix[0]] else "left",
                             fontsize=7) for ix in groups.values()]
        hidden = _keep_apart(fig, texts)
        if hidden:
            notes.append(f"{hidden} names hidden where they would overlap")
    ax.set_title((title or f"{report.network.name} on {hw.name} ({report.precision}): "
                  f"{len(pts)} ops, bound {report.totals()['bound_seconds'] * 1e3:.4g} ms")
                 + _off_axis_note(notes), fontsize=11)
    return fig


def _kind(x) -> str:
    return "None" if x is None else type(x).__name__


def _path(path):
    import os
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise TypeError(f"path={path!r}: a file name ending in .png, .svg or .pdf")


def roofline_chart(report, path, title=None):
    """Log-log hierarchical roofline with one marker per op (at its DRAM intensity),
    colour and marker by op kind (see ``_roofline_figure``). ``report``: the Result of
    ``simulator.roofline`` or its ``detail``, a RooflineReport."""
    from .roofline import RooflineReport
    if isinstance(getattr(report, "detail", None), RooflineReport):
        report = report.detail
    if not isinstance(report, RooflineReport):
        raise TypeError(f"report={_kind(report)}: the Result of roofline() (or its detail, a "
                        "RooflineReport)")
    _path(path)
    _write(_roofline_figure(report, title), path)


# --- the TPU paper's comparison ------------------------------------------------------------

def _tpu_paper_figure(hardware=None):
    """One DRAM roofline per preset, each at its fastest precision, its ridge marked."""
    import hwmodels
    hws = hardware or [hwmodels.get(n) for n in ("tpu-v1", "k80", "haswell-e5-2699v3")]
    rows = []
    for hw in hws:
        prec = hw.fastest_precision()
        peak = hw.peak_flop_per_s(prec)
        dram = hw.memory_levels()[0]
        rows.append((hw, prec, peak, dram.bandwidth_bytes_per_s, peak / dram.bandwidth_bytes_per_s))
    ridges = [r[4] for r in rows] or [1.0]
    x = np.logspace(np.log10(min(0.1, min(ridges) / 100)), np.log10(max(1e4, max(ridges) * 10)), 400)
    fig = _figure((10.5, 5.5))
    ax = fig.subplots()
    for i, (hw, prec, peak, bw, r) in enumerate(rows):
        color = _PAPER_COLOURS[i % 10]
        ls = _LEVEL_STYLES[(i // 10) % 4]
        # the ridge in the legend, not beside its point: close ridges' labels overlapped
        ax.plot(x, np.minimum(peak, bw * x), ls, color=color, lw=2,
                label=f"{hw.name}: {peak / 1e12:.3g} T{'OP' if prec == 'int8' else 'FLOP'}/s "
                      f"{prec}, {bw / 1e9:.3g} GB/s, ridge {r:.0f} op/B")
        ax.plot([r], [peak], "o", color=color)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("operational intensity (ops per DRAM byte; a MAC = 2 ops)")
    ax.set_ylabel("attainable ops/s")
    ax.set_title(f"Rooflines of the TPU paper (Jouppi et al., ISCA 2017) from roofsim's presets: "
                 f"{len(rows)} chips, a dot at each ridge", fontsize=10)
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    _legend_right(ax)
    return fig


def tpu_paper_chart(path, hardware=None):
    """The TPU paper's comparison: TPU v1, K80 and Haswell rooflines on one chart, each
    at its fastest precision (TPU and Haswell int8, K80 fp32), drawn from the presets
    (or the presets in ``hardware``, as many as given)."""
    _write(_tpu_paper_figure(hardware), path)


# --- the systolic array --------------------------------------------------------------------

def _systolic_figure(result):
    """Utilisation (bars) and mapping efficiency (dots) of every layer the array ran,
    and the fold-by-PE-row heatmap of the longest layer. The layers a systolic Result
    leaves out (``systolic.not_on_array``) are counted in the title."""
    layers = result.layers
    n = len(layers)
    fig = _figure((min(18.0, max(9.0, n * 0.2)), 9.5))
    ax, hx = fig.subplots(2, 1, height_ratios=[1, 1.1])
    x = np.arange(n)
    ax.bar(x, [r.utilization for r in layers], color="tab:blue",
           label="utilisation (stalls included)")
    ax.plot(x, [r.systolic.mapping_efficiency for r in layers], "o-", color="tab:orange", ms=3,
            lw=1, label="mapping efficiency")
    ax.set_xlim(-0.7, n - 0.3)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("fraction of PE-cycles")
    t = result.systolic
    skipped = t.not_on_array or ()
    note = (f"\n{n} layers on the array; {len(skipped)} left out (not convolutions or GEMMs: "
            "batch norms, pools, ... a TPU applies as results drain)" if skipped
            else f"\n{n} layers, all on the array")
    ax.set_title(f"{result.workload} on {result.hardware} {t.rows}x{t.cols}, "
                 f"{t.dataflow}, {result.mode} mode: utilisation {result.utilization:.1%}"
                 + note, fontsize=10)
    # the legend outside the figure's right edge, above the heatmap's colour bar: clear of
    # the rotated layer names, and the colour bar stays beside its heatmap
    fig.legend(*ax.get_legend_handles_labels(), loc="outside right upper", fontsize=8)
    longest = max(range(n), key=lambda k: layers[k].cycles)
    ft = layers[longest].detail.fold_timing
    img = ft.pe_row_activity(400)
    nshow, nfolds = img.shape[1], len(ft.folds)
    im = hx.imshow(img, aspect="auto", cmap="magma", vmin=0, vmax=1, interpolation="nearest")
    hx.set_xlabel(f"fold (run order){'' if nshow == nfolds else f', first {nshow} of {nfolds}'}")
    from matplotlib.ticker import MaxNLocator
    hx.xaxis.set_major_locator(MaxNLocator(integer=True))
    hx.set_ylabel("PE row" if img.shape[0] == t.rows
                  else f"PE rows, {img.shape[0]} bands of {t.rows / img.shape[0]:.3g}")
    hx.set_title(f"longest layer, {layers[longest].workload}: {ft.row_folds} row x "
                 f"{ft.col_folds} column folds; share of each fold's cycles a row's PEs do MACs",
                 fontsize=10)
    cb = fig.colorbar(im, ax=hx, pad=0.01)
    cb.set_label("share of the fold's cycles")
    step = _name_ticks(fig, ax, [r.workload for r in layers])
    ax.set_xlabel("layer" + _every(step, "layer"))
    return fig


def systolic_chart(result, path):
    """Utilisation and mapping efficiency per layer, and a fold-by-PE-row heatmap of the
    layer that takes longest (share of each fold's cycles a PE row spends on MACs).

    Draws a systolic :class:`simulator.result.Result` as it is: the per-layer figures
    from its ``layers``, the heatmap from the fold timing the engine kept in each
    layer's ``detail`` (``fold_timing``); nothing is lowered or simulated here."""
    from simulator.result import Result
    if not isinstance(result, Result) or getattr(result, "systolic", None) is None \
            or not getattr(result, "layers", None):
        raise TypeError(f"result={_kind(result)}: the Result of simulate_systolic() (a "
                        "network's or an op's, with its layers)")
    _path(path)
    _write(_systolic_figure(result), path)


# --- sweeps of the SIMT engine ---------------------------------------------------------------

def _seconds_points(rows, key):
    """(index, microseconds) of the rows whose ``key`` was predicted."""
    return [(i, r[key] * 1e6) for i, r in enumerate(rows) if r.get(key) is not None]


def _grid_sweep_figure(rows, title=""):
    """Predicted time against grid size, one colour per block size: engine solid with
    dots, analytic dashed with small squares (the wave staircase); with one grid and
    several blocks, time against the block."""
    fig = _figure((11, 5))
    ax = fig.subplots()
    blocks = list(dict.fromkeys(r["block"] for r in rows))
    eng = sum(r["engine_seconds"] is not None for r in rows)
    note = ("" if eng == len(rows) else "; analytic model only (engine not run)" if eng == 0
            else f"; engine on {eng} of the {len(rows)} points")
    if len(blocks) > 1 and len(blocks) == len(rows):
        # one grid, several block sizes: time against the block size, not a dot per series
        for key, style, label in (("engine_seconds", "-o", "engine"),
                                  ("analytic_seconds", "--s", "analytic")):
            pts = _seconds_points(rows, key)
            if pts:
                ax.plot(*zip(*pts), style, ms=4, label=label)
        ax.set_xlabel(f"block ({rows[0]['blocks']} blocks in the grid)")
        ax.set_title((title or "block-size sweep") + f": {len(rows)} launches" + note, fontsize=10)
        step = _name_ticks(fig, ax, [str(r["block"]) for r in rows], fontsize=8)
        if step > 1:
            ax.set_xlabel(f"block ({rows[0]['blocks']} blocks in the grid)" + _every(step, "block"))
    else:
        for i, b in enumerate(blocks):
            rs = [r for r in rows if r["block"] == b]
            c = _TAB10[i % 10]
            for key, style, ms, what in (("engine_seconds", "-o", 3, "engine"),
                                         ("analytic_seconds", "--s", 2, "analytic")):
                pts = [(r["blocks"], r[key] * 1e6) for r in rs if r[key] is not None]
                if pts:
                    ax.plot(*zip(*pts), style, ms=ms, color=c, lw=1, label=f"block {b} {what}")
        ax.set_xlabel("blocks in the grid")
        ax.set_title((title or "grid-size sweep") + f": {len(rows)} launches" + note, fontsize=10)
    ax.set_ylabel("predicted time (us)")
    ax.grid(alpha=0.3)
    _legend_right(ax)
    return fig


def grid_sweep_chart(rows, path, title=""):
    """Predicted time against grid size, one line per block size: engine solid, analytic
    dashed (the wave staircase). ``rows`` are ``sweep grid`` rows."""
    _write(_grid_sweep_figure(rows, title), path)


def _block_slots(sm, start, end):
    """Each block's slot on its SM (blocks that overlap in time take different slots,
    lowest free first) and its wave (how many blocks held that slot before it)."""
    slot = np.zeros(len(sm), dtype=int)
    wave = np.zeros(len(sm), dtype=int)
    for s in np.unique(sm):
        free_at, count = [], []
        for i in sorted(np.flatnonzero(sm == s), key=lambda i: (start[i], end[i])):
            k = next((j for j, f in enumerate(free_at) if f <= start[i]), len(free_at))
            if k == len(free_at):
                free_at.append(0.0)
                count.append(0)
            free_at[k] = end[i]
            slot[i], wave[i] = k, count[k]
            count[k] += 1
    return slot, wave


def _simt_timeline_figure(result, launch=0, warps=False, op_names=None):
    """Blocks: a bar per simulated block on its SM, blocks resident at once side by side
    (a lane each), colour by wave. Warps: a row per (SM, block, warp), a tick per traced
    instruction, colour by opcode."""
    if result.predictor != "engine" or result.detail is None:
        raise ValueError("a timeline needs the engine's Result (simulate simt, full or sampled)")
    lr = result.detail.launches[launch]
    sms = len(np.unique(np.asarray(lr.blocks["sm"]))) if not warps else 0
    fig = _figure((11, min(12.0, max(4.8, 1.8 + 0.25 * sms))))
    ax = fig.subplots()
    total = lr.program.launch.blocks if hasattr(lr.program, "launch") else None
    if warps:
        tr = np.asarray(lr.trace).reshape(-1, 6)
        if not len(tr):
            raise ValueError("no trace: simulate with trace=N to draw warps")
        keys = sorted({(int(r[1]), int(r[3]), int(r[4])) for r in tr})
        row = {k: i for i, k in enumerate(keys)}
        ys = np.array([row[(int(r[1]), int(r[3]), int(r[4]))] for r in tr])
        names = op_names or getattr(lr.program, "op_names", None)
        ops = tr[:, 5].astype(int)
        for j, op in enumerate(np.unique(ops)):
            sel = ops == op
            label = names[op] if names is not None and op < len(names) else f"opcode {op}"
            ax.scatter(tr[sel, 0], ys[sel], marker="|", s=60, lw=1.5, color=_TAB10[j % 10],
                       label=f"{label} ({int(sel.sum())})")
        # at most ~16 labels, however many warps: every k-th row named
        step = max(1, -(-len(keys) // 16))
        ax.set_yticks(range(0, len(keys), step))
        ax.set_yticklabels([f"SM{s} b{b} w{w}" for s, b, w in keys[::step]], fontsize=7)
        ax.set_ylabel(f"warp ({len(keys)} rows)" + _every(step, "row"))
        issued = lr.warp_instructions
        what = (f"all {len(tr)} issued warp instructions" if len(tr) >= issued
                else f"the first {len(tr):,} of {issued:,.0f} issued warp instructions "
                     f"(the trace the engine kept)")
        _legend_right(ax, title="opcode (ticks)", title_fontsize=8)
    else:
        b = lr.blocks
        sm = np.asarray(b["sm"])
        ok = sm >= 0
        sm, start, end = sm[ok], np.asarray(b["start"])[ok], np.asarray(b["end"])[ok]
        slot, wave = _block_slots(sm, start, end)
        lanes = int(slot.max()) + 1 if len(slot) else 1
        h = 0.9 / lanes
        y = sm - 0.45 + (slot + 0.5) * h
        edge = "k" if len(np.unique(sm)) * lanes <= 150 else "none"   # edges only where bars are tall
        waves = int(wave.max()) + 1 if len(wave) else 0
        if waves <= 10:
            for w in range(waves):
                sel = wave == w
                ax.barh(y[sel], end[sel] - start[sel], left=start[sel], height=h * 0.92,
                        color=_TAB10[w], edgecolor=edge, lw=0.3, label=f"wave {w + 1} ({int(sel.sum())})")
            if waves:
                _legend_right(ax, title="block's turn in its slot", title_fontsize=8)
        else:
            from matplotlib import colormaps
            from matplotlib.cm import ScalarMappable
            from matplotlib.colors import Normalize
            norm = Normalize(1, waves)
            ax.barh(y, end - start, left=start, height=h * 0.92, color=colormaps["viridis"](norm(wave + 1)),
                    edgecolor=edge, lw=0.3)
            fig.colorbar(ScalarMappable(norm, "viridis"), ax=ax, pad=0.01,
                         label="wave (block's turn in its slot)")
        ax.set_ylabel(f"SM ({lanes} lane{'s' if lanes > 1 else ''} each: blocks resident at once)")
        sims = int(ok.sum())
        what = (f"{sims} blocks" + (f" of {total}" if total is not None and total != sims else "")
                + (" (sampled: the rest extrapolated)" if total is not None and sims < total else ""))
        if (~ok).any():
            what += f"; {int((~ok).sum())} skipped blocks left out"
    ax.set_xlabel("cycle")
    ax.set_title(f"{lr.program.describe()} on {result.hardware}\n{what}", fontsize=9)
    return fig


def simt_timeline_chart(result, path, launch=0, warps=False, op_names=None):
    """Per-SM timeline of one launch of an engine Result: a bar per block (SM on the y
    axis, blocks resident at once side by side, colour by wave); with ``warps=True`` and a
    trace, one row per (SM, block, warp) with a tick per issued instruction, colour by
    opcode (``op_names`` names the opcodes; by default the ISA's own names)."""
    from simulator.result import Result
    if not isinstance(result, Result) or result.predictor != "engine" or not result.launches:
        raise TypeError(f"result={_kind(result)}: an engine Result (simulate_simt() in full or "
                        "sampled mode)")
    _path(path)
    _write(_simt_timeline_figure(result, launch, warps, op_names), path)


# --- validation against measurements ----------------------------------------------------------

def _grid_block(grid_rows):
    """The block size the grid panel draws: 256 threads where measured, else the most
    common."""
    sizes = [r.measurement.launch_shapes[-1][1][0] for r in grid_rows]
    if not sizes:
        return None
    return 256 if 256 in sizes else max(set(sizes), key=sizes.count)


def _validation_figure(rows, title="", hw=None):
    """Predicted against measured seconds (colour: predictor, marker: suite); the relu
    grid sweep at one block size; with ``hw``, measured and predicted on one roofline."""
    all_grid = [r for r in rows if r.suite == "grid"]
    gblock = _grid_block(all_grid)
    grid_rows = [r for r in all_grid if r.measurement.launch_shapes[-1][1][0] == gblock]
    ncols = 1 + bool(grid_rows) + (hw is not None)
    fig = _figure((6.4 * ncols, 5.5))
    axes = np.atleast_1d(fig.subplots(1, ncols))
    ax = axes[0]
    suites = list(dict.fromkeys(r.suite for r in rows))
    spare = iter(_SPARE_MARKERS * 4)
    marks = {s: _SUITE_MARKERS.get(s) or next(spare) for s in suites}
    missing = {}
    for pred in ("roofline", "analytic", "engine"):
        color = _PREDICTOR_STYLE[pred][0]
        for suite, m in marks.items():
            rs = [r for r in rows if r.suite == suite and r.predicted_s(pred) is not None]
            if rs:
                ax.scatter([r.measured_s for r in rs], [r.predicted_s(pred) for r in rs], s=12,
                           marker=m, color=color, alpha=0.7, label=f"{pred} ({suite}, {len(rs)})")
        n = sum(r.predicted_s(pred) is None for r in rows)
        if n:
            missing[pred] = n
    vals = [v for r in rows for v in (r.measured_s, *(r.predicted_s(p) for p in _PREDICTOR_STYLE))
            if v is not None and v > 0]
    if vals:
        lo, hi = min(vals) / 2, max(vals) * 2
        ax.plot([lo, hi], [lo, hi], "k-", lw=0.8, label="predicted = measured")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured seconds")
    ax.set_ylabel("predicted seconds")
    ax.set_title((title or "predicted vs measured") + f": {len(rows)} records"
                 + "".join(f"\n{p} not run on {n} (over the engine budget)" if p == "engine"
                           else f"\n{p} missing on {n}" for p, n in missing.items()), fontsize=10)
    _legend_right(ax, fontsize=7, title="colour: predictor, marker: suite", title_fontsize=7)
    if grid_rows:
        ax = axes[1]
        sizes = sorted({r.group.rsplit("/", 1)[-1] for r in grid_rows},
                       key=lambda s: -int(s) if s.isdigit() else 0)      # largest n first
        for j, size in enumerate(sizes):
            style = _LEVEL_STYLES[j % 4]
            rs = sorted((r for r in grid_rows if r.group.rsplit("/", 1)[-1] == size),
                        key=lambda r: r.measurement.launch_shapes[-1][0][0])
            g = [r.measurement.launch_shapes[-1][0][0] for r in rs]
            ax.plot(g, [r.measured_s for r in rs], style, color="k", marker="o", ms=3,
                    label=f"measured n={size}")
            for pred in ("engine", "analytic"):
                color, mk = _PREDICTOR_STYLE[pred]
                pts = [(x, r.predicted_s(pred)) for x, r in zip(g, rs) if r.predicted_s(pred) is not None]
                if pts:
                    ax.plot(*zip(*pts), style, color=color, marker=mk, ms=2.5, label=f"{pred} n={size}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"grid (blocks of {gblock})")
        ax.set_ylabel("seconds per launch")
        rest = len(all_grid) - len(grid_rows)
        ax.set_title(f"relu grid sweep at block {gblock}: {len(grid_rows)} records"
                     + (f"\n(the other {rest} grid records, other blocks, are on the left)" if rest else ""),
                     fontsize=10)
        _legend_right(ax, fontsize=7)
    if hw is not None:
        ax = axes[-1]
        peak = hw.peak_flop_per_s("fp32")
        bw = hw.dram.bandwidth_bytes_per_s
        rs = [r for r in rows if (r.measurement.flops or 0) > 0 and (r.measurement.compulsory_bytes or 0) > 0]
        if rs:
            x = np.array([r.measurement.flops / r.measurement.compulsory_bytes for r in rs])
            xs = np.logspace(np.log10(x.min() / 2), np.log10(x.max() * 2), 100)
            ax.plot(xs, np.minimum(peak, bw * xs), "k-", lw=1, label="roofline (fp32 peak, DRAM)")
            ax.scatter(x, [r.measurement.flops / r.measured_s for r in rs], s=10, color="k",
                       label=f"measured ({len(rs)})")
            for pred in ("engine", "analytic"):
                color, mk = _PREDICTOR_STYLE[pred]
                pts = [(xi, r.measurement.flops / r.predicted_s(pred)) for xi, r in zip(x, rs)
                       if r.predicted_s(pred)]
                if pts:
                    ax.scatter(*zip(*pts), s=10, marker=mk, color=color, alpha=0.6,
                               label=f"{pred} ({len(pts)})")
            ax.set_xscale("log")
            ax.set_yscale("log")
        ax.set_xlabel("FLOP per compulsory DRAM byte")
        ax.set_ylabel("FLOP/s")
        left = len(rows) - len(rs)
        ax.set_title(f"{hw.name}: measured and predicted on the roofline"
                     + (f"\n({left} records with no FLOPs or no bytes left out)" if left else ""),
                     fontsize=10)
        _legend_right(ax, fontsize=7)
    return fig


def validation_chart(rows, path, title="", hw=None):
    """Predicted against measured seconds (log axes, one colour per predictor, one marker
    per suite) of ``analysis.validate.ValidationRow``s; for the grid suite, measured and
    predicted time against grid size at 256 threads; with ``hw``, measured and predicted
    points on one roofline chart (FLOP/s against FLOP per compulsory byte)."""
    _write(_validation_figure(rows, title, hw), path)


# --- plans of a network ----------------------------------------------------------------------

def _plan_figure(rows, doc):
    """Per-layer predicted time of a plan, one colour and marker per predictor; a layer
    a predictor did not predict is a gap in its line, counted in the title."""
    fig = _figure((min(18.0, max(10.0, len(rows) * 0.15)), 5))
    ax = fig.subplots()
    n = len(rows)
    notes = []
    preds = [(p, p, *_PREDICTOR_STYLE[p]) for p in ("engine", "analytic", "roofline")]
    if rows and "systolic_seconds" in rows[0]:
        preds.append(("systolic", doc.get("systolic_hw", "systolic"), "tab:green", "D"))
    floor_pts = []
    for key, label, color, mk in preds:
        vals = [r.get(f"{key}_seconds") for r in rows]
        have = [i for i, v in enumerate(vals) if v is not None]
        if not have:
            notes.append(f"{label}: not run" + (" (analytic mode)" if key == "engine" and
                                                doc.get("mode") == "analytic" else ""))
            continue
        if len(have) < n:
            notes.append(f"{label}: {len(have)} of {n} layers"
                         + (" (the rest are not on its array)" if key == "systolic" else ""))
        y = np.array([v * 1e6 if v is not None and v > 0 else np.nan for v in vals], dtype=float)
        ax.plot(np.arange(n), y, mk + ("-" if key != "systolic" else ""), ms=3, lw=1, color=color,
                label=f"{label} ({len(have)})")
        floor_pts += [(i, color, mk) for i, v in enumerate(vals) if v is not None and v <= 0]
    ax.set_yscale("log")
    if floor_pts:
        lo = ax.get_ylim()[0]
        ax.axhspan(lo, lo * _BAND, color="0.92", zorder=0)
        for i, color, mk in floor_pts:
            ax.plot([i], [lo * _EDGE], mk, ms=4, mfc="none", mec=color)
        ax.set_ylim(bottom=lo)
        notes.append(f"{len(floor_pts)} zero times drawn hollow in the floor band")
    ax.set_xlim(-0.7, n - 0.3)
    ax.set_ylabel("predicted us")
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(f"{doc['workload']} batch {doc['batch']} on {doc['hw']}, plan {doc['plan']}"
                 + (f" and on {doc['systolic_hw']}" if doc.get("systolic_hw") else "")
                 + f": {n} layers" + _off_axis_note(notes), fontsize=10)
    _legend_right(ax, title="predictor (layers)", title_fontsize=8)
    step = _name_ticks(fig, ax, [r["layer"] for r in rows])
    ax.set_xlabel("layer" + _every(step, "layer"))
    return fig


def plan_chart(rows, path, doc):
    """Per-layer predicted time of a plan (``roofsim plan``'s rows), one line per
    predictor, log scale."""
    _write(_plan_figure(rows, doc), path)


# --- other tools' traces against their bounds ----------------------------------------------------

def _check_figure(doc, hw, precision="fp32"):
    """Kernels with FLOPs on the roofline (colour and marker by the op kind the trace
    names); beside it, kernels with bytes but no FLOPs at their achieved bytes/s against
    the DRAM roof; kernels with neither are counted in the title."""
    ks = doc["kernels"]

    def pos(v):
        return v is not None and v > 0

    def category(r):
        return "no op (DRAM bytes counted)" if r["shape"] is None else f"{r['op']}: no FLOPs"
    on = [r for r in ks if pos(r["flops"]) and pos(r["compulsory_bytes"]) and pos(r["achieved_flop_per_s"])]
    ids = {id(r) for r in on}
    side = [r for r in ks if id(r) not in ids and pos(r.get("achieved_bytes_per_s"))]
    ids |= {id(r) for r in side}
    left = [r for r in ks if id(r) not in ids]
    panels = (["roofline"] if on or not side else []) + (["bytes"] if side else [])
    styles = _kind_styles([r["op"] for r in on + side])     # one style a kind, both panels
    ncats = len({category(r) for r in side})
    fig = _figure((14, 5.5) if len(panels) == 2 else (10, 5.5) if not side else
                  (8, max(3.2, 1.8 + 1.2 * ncats)))
    axes = np.atleast_1d(fig.subplots(1, len(panels), width_ratios=[2.2, 1][:len(panels)]
                                      if len(panels) > 1 else None))
    nbad = sum(r["faster_than_bound"] for r in on + side)
    if "roofline" in panels:
        ax = axes[0]
        xs = [r["flops"] / r["compulsory_bytes"] for r in on]
        ridges = [hw.peak_flop_per_s(precision) / lv.bandwidth_bytes_per_s for lv in hw.memory_levels()]
        # the roofs' bends in view, and at least two decades (no minor tick labels)
        lo = min(xs + ridges) / 10
        hi = max(xs + ridges) * 10
        grid = np.logspace(np.log10(lo), np.log10(hi), 201)
        peak = _roof(ax, hw, precision, grid, "black")
        # the roofs of the other arithmetic the kernels ran (TF32, bf16 tensor cores...):
        # each kernel is held to its own
        dram = hw.memory_levels()[0].bandwidth_bytes_per_s
        for m, color in zip(sorted({r.get("math") for r in on} - {None, precision}),
                            ("tab:blue", "tab:purple", "tab:olive", "tab:cyan", "tab:brown")):
            p = hw.peak_flop_per_s(m)
            ax.plot(grid, np.minimum(p, dram * grid), "-", color=color, lw=1.0,
                    label=f"{m} peak {p / 1e12:.4g} TFLOP/s (with DRAM)")
        roof_handles, roof_labels = ax.get_legend_handles_labels()
        handles, labels = [], []
        kinds = sorted({r["op"] for r in on})
        for kind in kinds:
            color, mk = styles[kind]
            v = [r for r in on if r["op"] == kind]
            ax.scatter([r["flops"] / r["compulsory_bytes"] for r in v], [r["achieved_flop_per_s"] for r in v],
                       s=16, marker=mk, color=color, edgecolors="black", linewidths=0.3, zorder=3)
            handles.append(_proxy(color, mk))
            labels.append(f"{kind} ({len(v)})")
        bad = [r for r in on if r["faster_than_bound"]]
        if bad:
            ax.scatter([r["flops"] / r["compulsory_bytes"] for r in bad],
                       [r["achieved_flop_per_s"] for r in bad], s=70, facecolors="none",
                       edgecolors="red", zorder=4, gid=_MARK)
        if nbad:
            handles.append(_proxy("red", "o", hollow=True, markersize=9))
            labels.append(f"faster than its bound ({nbad})")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_xlabel("FLOP per compulsory byte")
        ax.set_ylabel("achieved FLOP/s")
        ax.set_title(f"kernels with FLOPs, on the roofline ({len(on)})", fontsize=10)
        ax.grid(True, which="both", lw=0.3, alpha=0.4)
        _sectioned_legend(ax, [(f"roofs: {precision} peak {peak / 1e12:.4g} TFLOP/s, and the "
                                "other arithmetic the kernels ran"
                                if len(roof_handles) > len(hw.memory_levels())
                                else f"roofs: {precision} peak {peak / 1e12:.4g} TFLOP/s", roof_handles,
                                roof_labels), ("op kind (kernels)", handles, labels)], fontsize=7)
    if side:
        sx = axes[-1]
        groups = {}
        for r in side:
            groups.setdefault(category(r), []).append(r)
        cats = sorted(groups)
        for i, c in enumerate(cats):
            rs = groups[c]
            m = len(rs)
            jitter = (np.arange(m) / max(m - 1, 1) - 0.5) * 0.5
            color, mk = styles[rs[0]["op"]]
            sx.scatter([r["achieved_bytes_per_s"] for r in rs], i + jitter, s=16, marker=mk,
                       color=color, edgecolors="black", linewidths=0.3, zorder=3)
            flagged = [(r["achieved_bytes_per_s"], i + j) for r, j in zip(rs, jitter)
                       if r["faster_than_bound"]]
            if flagged:
                sx.scatter(*zip(*flagged), s=70, facecolors="none", edgecolors="red", zorder=4, gid=_MARK)
        dram = hw.memory_levels()[0].bandwidth_bytes_per_s
        sx.axvline(dram, color="black", lw=1.4, label=f"DRAM roof {dram / 1e12:.3g} TB/s")
        sx.set_xscale("log")
        vals = [r["achieved_bytes_per_s"] for r in side] + [dram]
        sx.set_xlim(min(vals) / 3, max(vals) * 3)
        sx.set_yticks(range(len(cats)), [f"{c}\n({len(groups[c])})" for c in cats], fontsize=7)
        sx.set_ylim(-0.7, len(cats) - 0.3)
        sx.set_xlabel("achieved bytes per second")
        sx.set_title(f"kernels with bytes but no FLOPs ({len(side)})", fontsize=10)
        sx.grid(True, axis="x", which="both", lw=0.3, alpha=0.4)
        extra = ([_proxy("red", "o", hollow=True, markersize=9)], [f"faster than its bound ({nbad})"]) \
            if nbad and "roofline" not in panels else ([], [])
        h, lab = sx.get_legend_handles_labels()
        _legend_right(sx, h + extra[0], lab + extra[1], fontsize=7)
    from pathlib import Path
    fig.suptitle(f"{Path(doc['trace']).name} on {hw.name} ({precision}): {len(ks)} kernels"
                 + (f"\n({len(left)} with no op and no byte counts left out)" if left else ""),
                 fontsize=11)
    return fig


def check_chart(doc, hw, path, precision="fp32"):
    """``roofsim check``: each mapped kernel at its arithmetic intensity (op FLOPs over
    compulsory bytes) and achieved FLOP/s, under the hardware's roofs (compute and each
    memory level); a kernel above a roof is faster than its bound. Kernels with bytes but
    no FLOPs (an unmapped kernel with Nsight Compute's DRAM counts, a copy) are drawn
    beside it at their achieved bytes per second."""
    _write(_check_figure(doc, hw, precision), path)


# ---------------------------------------------------------------- the systolic array, animated

def _array_figure(lab):
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle
    R, C = lab.rows, lab.cols
    stat = lab.df != "os"
    cw, ch = 2.3, 1.25                      # a PE's box, inches
    fig = Figure(figsize=(cw * C + 2.4, ch * R + 1.9 + 0.3 * stat), dpi=80)
    # (the figure's own canvas draws nothing between frames; each frame is drawn once,
    # as it is written)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(-1.25, C + 0.1)
    ax.set_ylim(R + 0.55, -0.95 - 0.3 * stat)
    ax.axis("off")
    fs = 7.5
    mono = {"family": "monospace", "fontsize": fs}
    boxes, cells = {}, {}
    for r in range(R):
        for c in range(C):
            box = Rectangle((c + 0.04, r + 0.04), 0.92, 0.92, facecolor="white", edgecolor="0.3")
            ax.add_patch(box)
            boxes[r, c] = box
            cells[r, c] = [ax.text(c + 0.09, r + 0.14 + 0.21 * g, "", va="center", ha="left",
                                   **mono) for g in range(4)]
    left = [ax.text(-0.05, r + 0.23, "", ha="right", va="center", color="tab:blue", **mono)
            for r in range(R)]
    for r in range(R):
        ax.annotate("", (0.04, r + 0.23), (-0.05, r + 0.23),
                    arrowprops={"arrowstyle": "->", "color": "tab:blue"})
    top = [ax.text(c + 0.5, -0.12, "", ha="center", va="bottom", color="tab:green", **mono)
           for c in range(C)]
    pre = [ax.text(c + 0.5, -0.42, "", ha="center", va="bottom", color="tab:purple", **mono)
           for c in range(C)] if stat else []
    bottom = [ax.text(c + 0.5, R + 0.12, "", ha="center", va="top", color="tab:red", **mono)
              for c in range(C)]
    title = ax.text(-1.2, -0.72 - 0.3 * stat, "", ha="left", va="bottom", fontsize=9.5,
                    family="monospace")
    return fig, boxes, cells, left, top, pre, bottom, title


def _array_draw(lab, t: int, parts):
    fig, boxes, cells, left, top, pre, bottom, title = parts
    names = lab.names
    tr = lab.tr
    for (r, c), box in boxes.items():
        active = bool(tr["active"][t, r, c])
        box.set_facecolor("#ffd54f" if active else "white")
        for g, txt in enumerate(cells[r, c]):
            used = active and g in tr["mac"][t, r, c]
            txt.set_text(f"{names[g]:<3} {lab.register(t, r, c, g)}")
            txt.set_fontweight("bold" if used else "normal")
    for r, txt in enumerate(left):
        txt.set_text(lab.left_in(t, r))
    for c, txt in enumerate(top):
        txt.set_text("top: " + lab.top_in(t, c))
    for c, txt in enumerate(pre):
        txt.set_text("preload: " + lab.preload(t, c))
    for c, txt in enumerate(bottom):
        txt.set_text("out: " + lab.bottom_out(t, c))
    L = lab.run.lowered
    M, N, K = L.mnk
    n_mac = int(tr["active"][t].sum())
    done = int(tr["active"][:t + 1].sum())
    title.set_text(f"{L.dataflow} {L.rows}x{L.cols}  C({M}x{N}) = A({M}x{K}) @ B({K}x{N})   "
                   f"cycle {t}/{lab.cycles - 1}: {n_mac} MACs ({done}/{lab.run.macs} done)")


def systolic_animation(lab, path, fps: float = 2.0, max_frames: int = 600) -> int:
    """One frame per cycle of a recorded run, written to ``path``: a GIF (``.gif``,
    matplotlib's PillowWriter) or an HTML page with a player (``.html``,
    ``Animation.to_jshtml``). PEs doing a MAC are highlighted, the registers it used in
    bold. Returns the number of frames."""
    import tempfile

    from matplotlib.animation import FuncAnimation, PillowWriter

    from hwmodels.fileio import atomic_write
    ext = os.fspath(path).rsplit(".", 1)[-1].lower() if "." in os.path.basename(os.fspath(path)) else ""
    if ext not in ("gif", "html", "htm"):
        raise ValueError(f"path={show(os.fspath(path))}: the animation's file must end in .gif "
                         "or .html")
    if lab.cycles > max_frames:
        raise ValueError(f"run: {lab.cycles} cycles; an animation draws at most {max_frames} "
                         "frames (use smaller matrices or a larger array)")
    parts = _array_figure(lab)
    fig = parts[0]
    anim = FuncAnimation(fig, lambda t: _array_draw(lab, t, parts), frames=lab.cycles,
                         interval=1000 / fps, repeat=False)
    if ext == "gif":
        folder = os.path.dirname(os.path.abspath(os.fspath(path)))
        fd, tmp = tempfile.mkstemp(suffix=".gif", dir=folder)
        os.close(fd)
        try:
            anim.save(tmp, writer=PillowWriter(fps=fps))
            with open(tmp, "rb") as fh:
                data = fh.read()
        finally:
            os.unlink(tmp)
        atomic_write(path, data)
    else:
        import matplotlib
        with matplotlib.rc_context({"animation.embed_limit": 512.0}):
            atomic_write(path, anim.to_jshtml(fps=fps, default_mode="once"))
    return lab.cycles

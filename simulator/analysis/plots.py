"""Charts (the only module that imports matplotlib; it uses the non-interactive Agg backend)."""
from __future__ import annotations

import numpy as np

_KIND_MARKERS = {"conv2d": "o", "gemm": "s", "elementwise": "^"}
_LEVEL_STYLES = ["-", "--", ":", "-."]


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path):
    from hwmodels.fileio import atomic_write
    import io
    fmt = str(path).rsplit(".", 1)[-1].lower()
    if fmt not in ("png", "svg", "pdf"):
        raise ValueError(f"--plot {path!r}: the file must end in .png, .svg or .pdf")
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=130, bbox_inches="tight")
    atomic_write(path, buf.getvalue())


def _roof(ax, hw, precision, x, color):
    peak = hw.peak_flop_per_s(precision)
    for i, lv in enumerate(hw.memory_levels()):
        y = np.minimum(peak, lv.bandwidth_bytes_per_s * x)
        ax.plot(x, y, _LEVEL_STYLES[i % 4], color=color, lw=1.6 if i == 0 else 1.0,
                label=f"{lv.name.upper()} {lv.bandwidth_bytes_per_s / 1e12:.3g} TB/s, "
                      f"ridge {peak / lv.bandwidth_bytes_per_s:.3g} FLOP/B")
    return peak


def roofline_chart(report, path, title=None):
    """Log-log hierarchical roofline with one point per op (at its DRAM intensity)."""
    plt = _plt()
    hw = report.hardware
    pts = report.points
    ai = np.array([p.intensity_flop_per_byte for p in pts])
    perf = np.array([p.attainable_flop_per_s for p in pts])
    finite = ai[np.isfinite(ai)]
    lo = min(0.05, finite.min() / 3 if finite.size else 0.05)
    hi = max(1e4, finite.max() * 3 if finite.size else 1e4)
    x = np.logspace(np.log10(lo), np.log10(hi), 400)
    fig, ax = plt.subplots(figsize=(9, 6))
    peak = _roof(ax, hw, report.precision, x, "black")
    ymax = peak * 3
    # other precisions' compute ceilings within view, for context (equal peaks share a line)
    others = {}
    for q in hw.peak_rates().supported():
        pq = hw.peak_flop_per_s(q)
        if q != report.precision and pq < ymax and pq != peak:
            others.setdefault(pq, []).append(q)
    for pq, qs in others.items():
        ax.axhline(pq, color="0.6", lw=0.8, ls=(0, (2, 3)))
        ax.text(x[0] * 1.1, pq * 1.06, f"{'/'.join(qs)} peak {pq / 1e12:.3g} TFLOP/s", fontsize=7,
                color="0.4")
    ax.text(x[-1] / 1.1, peak * 1.08, f"{report.precision} peak {peak / 1e12:.4g} TFLOP/s",
            fontsize=8, ha="right")
    cmap = plt.get_cmap("viridis")
    idx = np.arange(len(pts))
    sc = None
    for kind, marker in _KIND_MARKERS.items():
        sel = np.array([p.kind == kind for p in pts])
        if sel.any():
            sc = ax.scatter(ai[sel], perf[sel], c=idx[sel], cmap=cmap, vmin=0,
                            vmax=max(1, len(pts) - 1), marker=marker, s=28, edgecolors="black",
                            linewidths=0.4, zorder=3, label=f"{kind} ({int(sel.sum())})")
    if sc is not None and len(pts) > 1:
        cb = fig.colorbar(sc, ax=ax, pad=0.01)
        cb.set_label("layer index (network order)")
    if len(pts) <= 20:
        for p, a, y in zip(pts, ai, perf):
            ax.annotate(p.layer, (a, y), textcoords="offset points", xytext=(4, 3), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(max(1e6, perf.min() / 10) if len(perf) else 1e6, ymax)
    ax.set_xlabel("arithmetic intensity (FLOP per DRAM byte, lower-bound traffic)")
    ax.set_ylabel("attainable FLOP/s (roofline bound)")
    ax.set_title(title or f"{report.network.name} on {hw.name} ({report.precision}): "
                 f"{len(pts)} ops, bound {report.totals()['bound_seconds'] * 1e3:.4g} ms")
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(fontsize=8, loc="lower right")
    _save(fig, path)
    plt.close(fig)


def tpu_paper_chart(path, hardware=None):
    """The TPU paper's comparison: TPU v1, K80 and Haswell rooflines on one chart, each
    at its fastest precision (TPU and Haswell int8, K80 fp32), drawn from the presets."""
    import hwmodels
    hws = hardware or [hwmodels.get(n) for n in ("tpu-v1", "k80", "haswell-e5-2699v3")]
    plt = _plt()
    x = np.logspace(-1, 4, 400)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    colors = ["tab:red", "tab:green", "tab:blue", "tab:purple", "tab:orange"]
    for hw, color in zip(hws, colors):
        prec = hw.fastest_precision()
        peak = hw.peak_flop_per_s(prec)
        dram = hw.memory_levels()[0]
        r = peak / dram.bandwidth_bytes_per_s
        # the ridge in the legend, not beside its point: close ridges' labels overlapped
        ax.plot(x, np.minimum(peak, dram.bandwidth_bytes_per_s * x), color=color, lw=2,
                label=f"{hw.name}: {peak / 1e12:.3g} T{'OP' if prec == 'int8' else 'FLOP'}/s "
                      f"{prec}, {dram.bandwidth_bytes_per_s / 1e9:.3g} GB/s, ridge {r:.0f} op/B")
        ax.plot([r], [peak], "o", color=color)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("operational intensity (ops per DRAM byte; a MAC = 2 ops)")
    ax.set_ylabel("attainable ops/s")
    ax.set_title("Rooflines of the TPU paper (Jouppi et al., ISCA 2017) from roofsim's presets")
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(fontsize=8, loc="lower right")
    _save(fig, path)
    plt.close(fig)


def systolic_chart(result, path):
    """Utilisation and mapping efficiency per layer, and a fold-by-PE-row heatmap of the
    layer that takes longest (share of each fold's cycles a PE row spends on MACs).

    Draws a systolic :class:`simulator.result.Result` as it is: the per-layer figures
    from its ``layers`` (their ``systolic`` records), the heatmap from the fold timing the engine kept in each
    layer's ``detail`` (``fold_timing``); nothing is lowered or simulated here."""
    plt = _plt()
    layers = result.layers
    fig, (ax, hx) = plt.subplots(2, 1, figsize=(max(8, len(layers) * 0.18), 8.5),
                                 gridspec_kw={"height_ratios": [1, 1.1]})
    x = np.arange(len(layers))
    ax.bar(x, [r.utilization for r in layers], color="tab:blue", label="utilisation (stalls included)")
    ax.plot(x, [r.systolic.mapping_efficiency for r in layers], "o-", color="tab:orange", ms=3, lw=1,
            label="mapping efficiency")
    ax.set_xticks(x)
    ax.set_xticklabels([r.workload for r in layers], rotation=90, fontsize=6)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("fraction of PE-cycles")
    t = result.systolic
    ax.set_title(f"{result.workload} on {result.hardware} {t.rows}x{t.cols}, "
                 f"{t.dataflow}, {result.mode} mode: utilisation {result.utilization:.1%}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(0, -0.35 if len(layers) > 20 else -0.2),
              ncol=2, frameon=False)
    longest = max(range(len(layers)), key=lambda k: layers[k].cycles)
    ft = layers[longest].detail.fold_timing
    img = ft.pe_row_activity(400)
    nshow, nfolds = img.shape[1], len(ft.folds)
    im = hx.imshow(img, aspect="auto", cmap="magma", vmin=0, vmax=1, interpolation="nearest")
    hx.set_xlabel(f"fold (run order){'' if nshow == nfolds else f', first {nshow} of {nfolds}'}")
    hx.set_ylabel("PE row")
    hx.set_title(f"{layers[longest].workload}: {ft.row_folds} row x {ft.col_folds} column folds; "
                 "share of each fold's cycles a row's PEs do MACs")
    fig.colorbar(im, ax=hx, pad=0.01)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def grid_sweep_chart(rows, path, title=""):
    """Predicted time against grid size, one line per block size: engine solid, analytic
    dashed (the wave staircase). ``rows`` are ``sweep grid`` rows."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(10, 5))
    blocks = list(dict.fromkeys(r["block"] for r in rows))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    if len(blocks) > 1 and len(blocks) == len(rows):
        # one grid, several block sizes: time against the block size, not a dot per series
        x = [r["threads_per_block"] if "threads_per_block" in r else i for i, r in enumerate(rows)]
        if rows[0]["engine_seconds"] is not None:
            ax.plot(x, [r["engine_seconds"] * 1e6 for r in rows], "-o", label="engine")
        ax.plot(x, [r["analytic_seconds"] * 1e6 for r in rows], "--s", label="analytic")
        ax.set_xticks(x)
        ax.set_xticklabels([str(r["block"]) for r in rows], fontsize=8)
        ax.set_xlabel(f"block ({rows[0]['blocks']} blocks in the grid)")
        ax.set_ylabel("predicted time (us)")
        ax.set_title(title or "block-size sweep")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        _save(fig, path)
        return
    for i, b in enumerate(blocks):
        rs = [r for r in rows if r["block"] == b]
        x = [r["blocks"] for r in rs]
        c = colors[i % len(colors)]
        if rs[0]["engine_seconds"] is not None:
            ax.plot(x, [r["engine_seconds"] * 1e6 for r in rs], "-o", ms=3, color=c,
                    label=f"block {b} engine")
        ax.plot(x, [r["analytic_seconds"] * 1e6 for r in rs], "--", color=c,
                label=f"block {b} analytic")
    ax.set_xlabel("blocks in the grid")
    ax.set_ylabel("predicted time (us)")
    ax.set_title(title or "grid-size sweep")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))   # beside the data
    _save(fig, path)


def simt_timeline_chart(result, path, launch=0, warps=False):
    """Per-SM timeline of one launch of an engine Result: a bar per block (SM on the y
    axis); with ``warps=True`` and a trace, one row per (SM, warp) with a tick per issued
    instruction."""
    plt = _plt()
    if result.predictor != "engine" or result.detail is None:
        raise ValueError("a timeline needs the engine's Result (simulate simt, full or sampled)")
    lr = result.detail.launches[launch]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    if warps:
        tr = lr.trace
        if not len(tr):
            raise ValueError("no trace: simulate with trace=N to draw warps")
        keys = sorted({(int(r[1]), int(r[3]), int(r[4])) for r in tr})
        row = {k: i for i, k in enumerate(keys)}
        for r in tr:
            k = (int(r[1]), int(r[3]), int(r[4]))
            ax.plot([r[0], r[0] + 1], [row[k], row[k]], lw=6, color=colors[k[1] % len(colors)],
                    solid_capstyle="butt")
        # at most ~16 labels, however many warps: every k-th row named
        step = max(1, -(-len(keys) // 16))
        ax.set_yticks(range(0, len(keys), step))
        ax.set_yticklabels([f"SM{s} b{b} w{w}" for s, b, w in keys[::step]], fontsize=7)
        ax.set_ylabel(f"warp ({len(keys)} rows)")
    else:
        b = lr.blocks
        for i, (s, t0, t1) in enumerate(zip(b["sm"], b["start"], b["end"])):
            ax.barh(int(s), t1 - t0, left=t0, color=colors[i % len(colors)], edgecolor="k", lw=0.3)
        ax.set_ylabel("SM")
    ax.set_xlabel("cycle")
    ax.set_title(f"{lr.program.describe()} on {result.hardware}", fontsize=9)
    _save(fig, path)


def validation_chart(rows, path, title="", hw=None):
    """Predicted against measured seconds (log axes, one colour per predictor) of
    ``analysis.validate.ValidationRow``s; for the grid suite, measured and predicted time
    against grid size at 256 threads; with ``hw``, measured and predicted points on one
    roofline chart (FLOP/s against FLOP per compulsory byte)."""
    plt = _plt()
    grid_rows = [r for r in rows if r.suite == "grid" and r.measurement.launch_shapes[-1][1][0] == 256]
    ncols = 1 + bool(grid_rows) + (hw is not None)
    fig, axes = plt.subplots(1, ncols, figsize=(6.5 * ncols, 5.5), squeeze=False)
    ax = axes[0, 0]
    marks = {"grid": "o", "gemm": "s", "conv": "^"}
    for pred, color in (("roofline", "0.6"), ("analytic", "tab:orange"), ("engine", "tab:blue")):
        for suite, m in marks.items():
            rs = [r for r in rows if r.suite == suite and r.predicted_s(pred) is not None]
            if rs:
                ax.scatter([r.measured_s for r in rs], [r.predicted_s(pred) for r in rs], s=10,
                           marker=m, color=color, alpha=0.6, label=f"{pred} ({suite})")
    lo = min(min(r.measured_s, r.predicted_s("roofline")) for r in rows) / 2
    hi = max(r.measured_s for r in rows) * 2
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured seconds")
    ax.set_ylabel("predicted seconds")
    ax.set_title(title or "predicted vs measured")
    ax.legend(fontsize=7, ncol=2)
    if grid_rows:
        ax = axes[0, 1]
        for size, style in (("67108864", "-"), ("2097152", "--")):
            rs = sorted((r for r in grid_rows if r.group.endswith("/" + size)),
                        key=lambda r: r.measurement.launch_shapes[-1][0][0])
            g = [r.measurement.launch_shapes[-1][0][0] for r in rs]
            ax.plot(g, [r.measured_s for r in rs], "k" + style, marker="o", ms=3,
                    label=f"measured n={size}")
            for pred, color in (("engine", "tab:blue"), ("analytic", "tab:orange")):
                pts = [(x, r.predicted_s(pred)) for x, r in zip(g, rs) if r.predicted_s(pred) is not None]
                if pts:
                    ax.plot(*zip(*pts), style, color=color, label=f"{pred} n={size}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("grid (blocks of 256)")
        ax.set_ylabel("seconds per launch")
        ax.set_title("relu grid sweep")
        ax.legend(fontsize=7)
    if hw is not None:
        ax = axes[0, -1]
        peak = hw.peak_flop_per_s("fp32")
        bw = hw.dram.bandwidth_bytes_per_s
        rs = [r for r in rows if r.measurement.flops and r.measurement.compulsory_bytes]
        x = np.array([r.measurement.flops / r.measurement.compulsory_bytes for r in rs])
        xs = np.logspace(np.log10(x.min() / 2), np.log10(x.max() * 2), 100)
        ax.plot(xs, np.minimum(peak, bw * xs), "k-", lw=1, label="roofline (fp32 peak, DRAM)")
        ax.scatter(x, [r.measurement.flops / r.measured_s for r in rs], s=9, color="k", label="measured")
        for pred, color in (("engine", "tab:blue"), ("analytic", "tab:orange")):
            pts = [(xi, r.measurement.flops / r.predicted_s(pred)) for xi, r in zip(x, rs)
                   if r.predicted_s(pred)]
            if pts:
                ax.scatter(*zip(*pts), s=9, color=color, alpha=0.5, label=pred)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("FLOP per compulsory DRAM byte")
        ax.set_ylabel("FLOP/s")
        ax.set_title(f"{hw.name}: measured and predicted on the roofline")
        ax.legend(fontsize=7)
    _save(fig, path)


def plan_chart(rows, path, doc):
    """Per-layer predicted time of a plan (``roofsim plan``'s rows), one line per
    predictor, log scale."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(12, 4))
    x = list(range(len(rows)))
    for p, mk in (("engine", "o"), ("analytic", "s"), ("roofline", "v")):
        ys = [r[f"{p}_seconds"] for r in rows]
        if None not in ys:
            ax.plot(x, [y * 1e6 for y in ys], mk + "-", label=p, ms=3)
    if rows and "systolic_seconds" in rows[0]:
        pts = [(i, r["systolic_seconds"] * 1e6) for i, r in enumerate(rows)
               if r["systolic_seconds"] is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "D", label=doc.get("systolic_hw", "systolic"),
                ms=4)
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels([r["layer"] for r in rows], rotation=90, fontsize=6)
    ax.set_ylabel("predicted us")
    ax.set_title(f"{doc['workload']} batch {doc['batch']} on {doc['hw']}, plan {doc['plan']}"
                 + (f" and on {doc['systolic_hw']}" if doc.get("systolic_hw") else ""))
    ax.legend()
    _save(fig, path)
    plt.close(fig)


def check_chart(doc, hw, path, precision="fp32"):
    """``roofsim check``: each mapped kernel at its arithmetic intensity (op FLOPs over
    compulsory bytes) and achieved FLOP/s, under the hardware's roofs (compute and each
    memory level); a kernel above a roof is faster than its bound."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 5))
    pts = {}
    for r in doc["kernels"]:
        if r["flops"] and r["compulsory_bytes"] and r["achieved_flop_per_s"]:
            pts.setdefault(r["op"], []).append((r["flops"] / r["compulsory_bytes"],
                                                r["achieved_flop_per_s"]))
    xs = [x for v in pts.values() for x, _ in v] or [1.0]
    lo, hi = min(xs) / 4, max(xs) * 4
    peak = hw.peak_flop_per_s(precision)
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    for lv in hw.memory_levels():
        bw = lv.bandwidth_bytes_per_s
        ax.plot(grid, [min(peak, x * bw) for x in grid], "-", lw=1, label=f"{lv.name} roof")
    for kind, v in sorted(pts.items()):
        ax.scatter([x for x, _ in v], [y for _, y in v], s=14, label=kind)
    bad = [r for r in doc["kernels"] if r["faster_than_bound"] and r["compulsory_bytes"]]
    if bad:
        ax.scatter([r["flops"] / r["compulsory_bytes"] for r in bad],
                   [r["achieved_flop_per_s"] for r in bad], s=60, facecolors="none",
                   edgecolors="red", label="faster than its bound")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("FLOP per compulsory byte")
    ax.set_ylabel("achieved FLOP/s")
    from pathlib import Path
    ax.set_title(f"{Path(doc['trace']).name} on {hw.name} ({precision})")
    ax.legend(fontsize=7)
    _save(fig, path)
    plt.close(fig)

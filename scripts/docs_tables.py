"""The docs' tables of figures, generated from committed data.

A table lives in README.md or a page of docs/ between two marker comments:

    <!-- table: NAME -->
    (generated: never edit by hand)
    <!-- /table -->

    python3 scripts/docs_tables.py            # rewrite every marked table from the data
    python3 scripts/docs_tables.py --check    # exit 1 naming each stale table (0: all current)
    python3 scripts/docs_tables.py --list     # every table's name and what it is made from

A table whose data is not committed yet (a benchmark not yet recorded in
data/benchmarks/) is written as a caption saying so. Exit 2 on a marker that names no
table or is not closed. tests/test_readme.py runs ``--check``.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a marker is a line of its own (a marker quoted inside a sentence is text)
MARKER = re.compile(r"^(<!-- table: ([\w.-]+) -->\n)(.*?)^(<!-- /table -->)$",
                    re.DOTALL | re.MULTILINE)
OPEN = re.compile(r"^<!-- table: ([\w.-]+) -->$", re.MULTILINE)

#: name -> (function(root) -> markdown text, what it is made from)
TABLES: dict = {}


def table(name: str, source: str):
    def add(fn):
        TABLES[name] = (fn, source)
        return fn
    return add


def pages(root: Path = ROOT) -> list:
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


def md(header, rows) -> str:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def _json(path: Path):
    return json.loads(path.read_text())


# ---------------------------------------------------------------- validation

DEVICES = (("H100", "h100-sxm"), ("H200 (predicted from the H100)", "h200"))


def validation_cells(root: Path = ROOT) -> dict:
    """(device, suite, predictor) -> the cells after them: records, MAPE, Pearson on log
    times, Spearman, pairs in order. The template suites' rows are
    data/validation/HW_scores.json's; the kernels suite's row (users' kernels, timed
    from their own SASS) is recomputed from data/validation/HW_kernels.json's rows."""
    from scipy.stats import pearsonr, spearmanr
    folder = root / "data" / "validation"
    out = {}
    for device, name in DEVICES:
        sc = _json(folder / f"{name}_scores.json")["suites"]
        for suite, s in sc.items():
            for p in ("engine", "analytic", "roofline"):
                x = s[p]
                if x["n"] == 0:
                    continue
                out[(device, suite, p)] = [f"{x['n']}/{s['records']}", f"{x['mape']:.1%}",
                                           f"{x['pearson']:.3f}", f"{x['spearman']:.3f}",
                                           f"{x['pairs_in_order']:.1%}"]
        kf = folder / f"{name}_kernels.json"
        if kf.exists():
            doc = _json(kf)
            m = [r["measured_seconds"] for r in doc["rows"]]
            e = [r["engine_seconds"] for r in doc["rows"]]
            n = len(m)
            out[(device, "kernels", "engine (own SASS)")] = [
                f"{n}/{n}", f"{sum(abs(b / a - 1) for a, b in zip(m, e)) / n:.1%}",
                f"{pearsonr([math.log(x) for x in m], [math.log(x) for x in e])[0]:.3f}",
                f"{spearmanr(m, e)[0]:.3f}", f"{doc['scores']['pairs_in_order']['fraction']:.1%}"]
    return out


@table("validation", "data/validation/{h100-sxm,h200}_scores.json and _kernels.json")
def _validation(root):
    rows = [list(k) + v for k, v in validation_cells(root).items()]
    return md(["device", "suite", "predictor", "records", "MAPE", "Pearson (log)", "Spearman",
               "pairs in order"], rows)


@table("validation-summary", "data/validation/{h100-sxm,h200}_scores.json and _kernels.json")
def _validation_summary(root):
    cells = validation_cells(root)
    rows = []
    for suite in ("grid", "gemm", "conv", "kernels"):
        row = [suite]
        for device, _ in DEVICES:
            for p in ("engine", "analytic"):
                key = (device, suite, "engine (own SASS)" if suite == "kernels" and p == "engine"
                       else p)
                row.append(cells[key][1] if key in cells else "-")
        rows.append(row)
    return md(["suite", "H100 engine", "H100 analytic", "H200 engine", "H200 analytic"], rows)


def _scores_rows(scores: dict) -> list:
    """A kernel suite's scores (kernel_suite.score): one row a quantity."""
    names = {"seconds": "time", "instructions": "SASS warp instructions",
             "dram_bytes": "DRAM bytes", "l2_bytes": "L2 bytes (crossbar)",
             "simt_efficiency": "SIMT efficiency", "bank_conflicts": "bank conflicts"}
    rows = []
    for key, label in names.items():
        s = scores.get(key)
        if not s:
            continue
        if key == "simt_efficiency":
            rows.append([label, s["n"], f"largest difference {s['max_abs_error']:.3f}", "-",
                         f"within {s['goal']:.2f}: {s['within_goal_n']} of {s['n']}"])
        else:
            rows.append([label, s["n"], f"{s['mape']:.1%}", f"{s['median_error']:+.1%}",
                         f"{s['goal']:.0%} ({'met' if s['within_goal'] else 'missed'})"])
    p = scores.get("pairs_in_order")
    if p:
        rows.append(["what-if pairs in order", p["n"], f"{p['in_order']} of {p['n']}", "-",
                     f"{p['goal']:.0%} ({'met' if p['fraction'] >= p['goal'] else 'missed'})"])
    return rows


@table("kernels-scores", "data/validation/{h100-sxm,h200}_kernels.json (scores)")
def _kernels_scores(root):
    rows = []
    for device, name in DEVICES:
        f = root / "data" / "validation" / f"{name}_kernels.json"
        rows += [[device.split()[0]] + r for r in _scores_rows(_json(f)["scores"])]
    return md(["device", "quantity", "launches", "MAPE", "median error", "goal"], rows)


@table("any-size", "data/validation/h200_any_size.json (scripts/validate_any_size.py)")
def _any_size(root):
    doc = _json(root / "data" / "validation" / "h200_any_size.json")
    rows = [[f"`{r['launch']}`", r["what"], f"{r['measured_s'] * 1e6:,.1f}",
             f"{r['predicted_s'] * 1e6:,.1f}", f"{r['error']:+.1%}"] for r in doc["rows"]]
    return (f"*{doc['device']}, measured by `scripts/time_any_size.py`; predicted "
            f"{doc['date']}, sampled mode, L2 warm; MAPE {doc['mape']:.1%}.*\n\n"
            + md(["launch", "what", "measured us", "predicted us", "error"], rows))


@table("atomics-engine", "data/validation/h100-sxm_atomics.json (scripts/validate_atomics.py)")
def _atomics_engine(root):
    doc = _json(root / "data" / "validation" / "h100-sxm_atomics.json")
    rows = doc["atomics"]["rows"]
    warps = sorted({r["warps"] for r in rows})
    out = []
    for op in ("add", "cas"):
        for spread in sorted({r["spread_words"] for r in rows}):
            cells = []
            for w in warps:
                r = next((x for x in rows if (x["op"], x["spread_words"], x["warps"]) == (op, spread, w)),
                         None)
                cells.append("-" if r is None else f"{r['engine_s'] / r['measured_s'] - 1:+.0%}"
                             + (" (fit)" if r["set_by_it"] else ""))
            out.append([op, spread, -(-32 // spread)] + cells)
    s = doc["atomics"]["summary"]
    return (md(["op", "words", "lanes a word"] + [f"{w:,} warp{'s' if w > 1 else ''}" for w in warps], out)
            + f"\n\nValidation records (not the 2,112-warp ones the unit's rates came from): "
            f"{s['validation_records']}, MAPE {s['mape']:.1%}, {s['within_10pct']} within 10%, "
            f"largest {s['largest']:+.0%}.")


@table("atomic-trace-engine", "data/validation/h100-sxm_atomics.json (scripts/validate_atomics.py)")
def _atomic_trace_engine(root):
    doc = _json(root / "data" / "validation" / "h100-sxm_atomics.json")
    rows = []
    for r in doc["atomic_trace"]["rows"]:
        rows.append([f"{r['grid']}x{r['block']}, {r['lanes']} lane{'s' if r['lanes'] > 1 else ''}",
                     f"{_count(r['measured_tries'])}", f"{r['emulated_tries'] / r['measured_tries']:.2f}",
                     f"{_count(r['measured_cycles'])} cycles",
                     f"{r['engine_cycles'] / r['measured_cycles'] - 1:+.0%}"
                     + (" (fit)" if r["set_by_it"] else "")])
    return md(["shape (atomic_trace suite)", "H100 tries", "emulated / H100 (queue of 128)",
               "H100 time (first try to last success)", "engine (the launch)"], rows)


@table("one-path", "data/validation/h100-sxm_one_path.json (benchmarks/bench_one_path.py)")
def _one_path(root):
    doc = _json(root / "data" / "validation" / "h100-sxm_one_path.json")
    rows = []
    for s in doc["summary"]:
        done = s["records"] - s["failed"]
        rows.append([s["kernel"], s["records"], s["failed"],
                     f"{round(s['within_2pct'] * done)} of {done}", f"{s['median_dev']:.1%}",
                     f"{s['mape_template']:.1%}", f"{s['mape_sass']:.1%}",
                     f"{s['wall_template_s']:.2f}", f"{s['wall_sass_s']:.2f}"])
    return md(["kernel", "records", "refused", "SASS path within 2% of the template",
               "median difference", "MAPE, template", "MAPE, SASS path",
               "s a launch, template", "s a launch, SASS path"], rows)


@table("measured-suites", "data/measurements/{h100-sxm,h200}/*.json (each file's provenance)")
def _measured_suites(root):
    cells = {}
    for dev, gpu in (("H100", "h100-sxm"), ("H200", "h200")):
        folder = root / "data" / "measurements" / gpu
        for f in sorted(folder.glob("*.json")):
            doc = _json(f)
            cells.setdefault(f.name, {})[dev] = \
                f"{doc['provenance']['date'][:10]}, {len(doc['records'])} records"
        runs = sorted((folder / "compiled").glob("*.json"))
        if runs:
            dates = sorted({_json(f)["provenance"]["date"][:10] for f in runs})
            cells.setdefault("compiled/", {})[dev] = f"{', '.join(dates)}, {len(runs)} runs"
    return md(["file", "H100 SXM", "H200"],
              [[f"`{name}`", c.get("H100", "-"), c.get("H200", "-")] for name, c in cells.items()])


# ---------------------------------------------------------------- teaching

TEACHING = {
    "teaching.reduce_interleaved": "reduce: interleaved, `tid % (2*s)`",
    "teaching.reduce_strided": "reduce: strided index",
    "teaching.reduce_sequential": "reduce: sequential addressing",
    "teaching.reduce_first_add": "reduce: first add during load",
    "teaching.reduce_warp_shuffle": "reduce: warp shuffles",
    "teaching.branch_in_warp": "branch inside a warp",
    "teaching.branch_at_warp": "branch at warp boundaries",
    "teaching.transpose_tile32": "transpose, 32x32 tile",
    "teaching.transpose_tile33": "transpose, 32x33 tile",
}


def _count(x: float) -> str:
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x:,.0f}"


@table("teaching", "data/validation/h100-sxm_teaching.json (first shape of each kernel)")
def _teaching(root):
    doc = _json(root / "data" / "validation" / "h100-sxm_teaching.json")
    seen, rows = set(), []
    for r in doc["rows"]:
        if r["kernel"] in seen:
            continue
        seen.add(r["kernel"])
        bank = "-" if not r.get("measured_shared_instructions") else \
            f"{_count(r['engine_bank_conflicts'])} / {_count(r['measured_bank_conflicts'])}"
        rows.append([f"{TEACHING.get(r['kernel'], r['kernel'])} ({r['shape']})",
                     f"{r['measured_seconds'] * 1e6:.1f}", f"{r['engine_seconds'] * 1e6:.1f}",
                     f"{r['engine_simt_efficiency']:.3f} / {r['measured_simt_efficiency']:.3f}",
                     bank])
    return md(["kernel (shape)", "measured us", "predicted us", "SIMT efficiency, roofsim / ncu",
               "bank conflicts, roofsim / ncu"], rows)


@table("teaching-scores", "data/validation/h100-sxm_teaching.json (scores)")
def _teaching_scores(root):
    doc = _json(root / "data" / "validation" / "h100-sxm_teaching.json")
    return md(["quantity", "launches", "MAPE", "median error", "goal"],
              _scores_rows(doc["scores"]))


# ---------------------------------------------------------------- whole networks

GPUS = (("H100", "h100-sxm"), ("H200", "h200"))
UNIFORM = ("direct-nchw", "direct-nhwc", "im2col-nchw", "im2col-nhwc")


def _summary(root, gpu):
    import simulator as rs
    return rs.network_summary(gpu, root / "data" / "measurements", root / "data" / "plans")


def _ms2(v):
    return f"{v * 1e3:.2f}"


@table("network-times", "data/measurements/GPU/network_b*.json, data/plans/GPU "
                        "(simulator.analysis.networks, as scripts/network_report.py prints)")
def _network_times(root):
    rows = []
    for dev, gpu in GPUS:
        for r in _summary(root, gpu)["plans"]:
            if r["plan"] not in UNIFORM:
                continue
            rows.append([dev, r["batch"], r["plan"], r["layers"], _ms2(r["end_to_end_s"]),
                         _ms2(r["queued_s"]), _ms2(r["per_layer_sum_s"]),
                         _ms2(r["subtraction_sum_s"]),
                         f"{_ms2(r['engine_s'])} ({r['engine_error']:+.1%})",
                         f"{_ms2(r['analytic_s'])} ({r['analytic_error']:+.1%})",
                         f"{r['roofline_s'] * 1e3:.3f}"])
    return md(["GPU", "batch", "plan", "layers", "end to end", "queued", "per-layer sum",
               "subtraction", "engine", "analytic", "roofline"], rows)


@table("network-oracle", "data/measurements/GPU/network_b*.json, data/plans/GPU "
                         "(simulator.analysis.networks)")
def _network_oracle(root):
    rows = []
    for dev, gpu in GPUS:
        picked = ("engine", "analytic")
        for r in sorted((r for r in _summary(root, gpu)["regret"] if r["picked_from"] in picked),
                        key=lambda r: (r["batch"], picked.index(r["picked_from"]))):
            rows.append([dev, r["batch"], r["picked_from"], f"{r['measured_s'] * 1e3:.3f}",
                         f"{r['regret']:+.1%}", f"{r['dp_predicted_s'] * 1e3:.3f}",
                         f"{r['dp_error']:+.1%}"])
    return md(["GPU", "batch", "picked from", "measured ms", "regret", "DP predicted ms",
               "DP error"], rows)


@table("network-layers", "data/measurements/GPU/network_b*.json (simulator.analysis.networks)")
def _network_layers(root):
    rows = []
    for dev, gpu in GPUS:
        errs = _summary(root, gpu)["layer_errors"]
        kinds = sorted({k for p in errs.values() for k in p})
        for pred, e in errs.items():
            rows.append([dev, pred] + [f"{e[k]['mape']:.1%} ({e[k]['n']})" if k in e else "-"
                                       for k in kinds])
    return md(["GPU", "predictor"] + [f"{k} (layers)" for k in kinds], rows)


@table("network-torch", "data/measurements/GPU/torchvision.json and network_b*.json")
def _network_torch(root):
    rows = []
    for dev, gpu in GPUS:
        s = _summary(root, gpu)
        for b in sorted({r["batch"] for r in s["plans"]}):
            best = min((r for r in s["plans"] if r["batch"] == b), key=lambda r: r["queued_s"])
            tv = {t["memory_format"]: t["median_s"] for t in s["torchvision"] if t["batch"] == b}
            nchw = tv["nchw"]
            rows.append([dev, b, _ms2(nchw), _ms2(tv["channels_last"]),
                         f"{_ms2(best['queued_s'])} ({best['queued_s'] / nchw:.2g}x)",
                         f"{_ms2(best['end_to_end_s'])} ({best['end_to_end_s'] / nchw:.2g}x)",
                         f"{best['roofline_s'] * 1e3:.3f}"])
    return md(["GPU", "batch", "torch NCHW ms", "torch channels-last ms", "roofsim best, queued",
               "roofsim best, end to end", "roofline bound"], rows)


# ---------------------------------------------------------------- PyTorch's compilers

MODELS = ("resnet50", "mobilenet_v2")
CONFIGS = ("eager", "torchscript", "inductor", "inductor-max-autotune")
SHORT = {"eager": "eager", "torchscript": "TorchScript", "inductor": "compile",
         "inductor-max-autotune": "max-autotune"}


def _compiled(root):
    import simulator as rs
    return rs.compiled_summary("h100-sxm", root / "data" / "measurements", root / "data" / "plans")


def _model_order(m):
    return (MODELS.index(m) if m in MODELS else len(MODELS), m)


@table("compiled-forwards", "data/measurements/h100-sxm/compiled/ (simulator.analysis.compiled, "
                            "as scripts/compiled_report.py prints)")
def _compiled_forwards(root):
    fw = {(r["model"], r["batch"], r["forward"]): r for r in _compiled(root)["forwards"]}
    rows = []
    for (m, b) in sorted({k[:2] for k in fw}, key=lambda k: (_model_order(k[0]), k[1])):
        units = min(r["queued_s"] for k, r in fw.items()
                    if k[:2] == (m, b) and not k[2].startswith("whole-"))
        rows.append([m, b] + [f"{fw[(m, b, f'whole-{c}')]['end_to_end_s'] * 1e3:.3f} / "
                              f"{fw[(m, b, f'whole-{c}')]['queued_s'] * 1e3:.3f}"
                              for c in CONFIGS] + [f"{units * 1e3:.3f}"])
    return md(["model", "batch", "eager", "TorchScript", "compile", "compile max-autotune",
               "best per unit"], rows)


def _mix(plan: str) -> str:
    for c in sorted(SHORT, key=len, reverse=True):
        plan = plan.replace(f"{c} x", f"{SHORT[c]} x")
    return plan


@table("compiled-oracle", "data/measurements/h100-sxm/compiled/ (simulator.analysis.compiled)")
def _compiled_oracle(root):
    order = ("per_layer", "subtraction")
    oracle = sorted(_compiled(root)["oracle"],
                    key=lambda o: (_model_order(o["model"]), o["batch"],
                                   order.index(o["method"]) if o["method"] in order else 9))
    rows = []
    for o in oracle:
        head = [o["model"], o["batch"], o["method"].replace("_", "-")]
        if o["incomplete"]:
            rows.append(head + ["not measured", f"best-of {o['best_of_s'] * 1e3:.3f}", "-", "-",
                                "-", "-"])
        else:
            rows.append(head + [_mix(o["plan"]), f"{o['predicted_s'] * 1e3:.3f}",
                                f"{o['queued_s'] * 1e3:.3f}", f"{o['regret_units']:+.1%}",
                                f"{o['regret_queued']:+.1%}", f"{o['regret_end_to_end']:+.0%}"])
    return md(["model", "batch", "oracle from", "its plan", "predicted ms", "queued ms",
               "regret among per-unit forwards", "regret, queued", "regret, as issued"], rows)


# ---------------------------------------------------------------- roofsim check

TRACES = (
    ("torch_resnet50_b8.json", "ResNet-50, batch 8, TF32 off"),
    ("torch_resnet50_b8_defaults.json", "ResNet-50, batch 8, PyTorch's defaults (cuDNN's TF32)"),
    ("torch_resnet50_b8_compiled.json", "ResNet-50, batch 8, `torch.compile`"),
    ("torch_bert_base_b8_s128_fp32.json", "BERT-base, batch 8 x 128 tokens, fp32"),
    ("torch_bert_base_b8_s128_bf16.json", "BERT-base, batch 8 x 128 tokens, bf16 autocast"),
    ("torch_gpt2_b4_s256_bf16.json", "GPT-2 small, batch 4 x 256 tokens, bf16 autocast"),
    ("torch_gemm_loop.json", "six `torch.mm` with a ReLU and `c + c` each"),
)


@table("check-traces", "data/traces/h100-sxm/torch_*.json, each through roofsim check on h100-sxm")
def _check_traces(root):
    import hwmodels
    from simulator.analysis import check
    hw = hwmodels.get("h100-sxm")
    rows = []
    for f, what in TRACES:
        r = check.check(hw, check.read(root / "data" / "traces" / "h100-sxm" / f))
        rows.append([f"{what} (`{f}`)", len(r["kernels"]), f"{r['total_seconds'] * 1e3:.3f}",
                     f"{r['mapped_fraction']:.1%}", r["faster_than_bound"]])
    return md(["trace", "kernels", "GPU ms", "mapped", "faster than their bound"], rows)


# ---------------------------------------------------------------- benchmarks

def _bench(root, name):
    """data/benchmarks/NAME.json, or None."""
    f = root / "data" / "benchmarks" / f"{name}.json"
    return _json(f) if f.exists() else None


def _caption(doc, name, how) -> str:
    if doc is None:
        return (f"*Not yet recorded: `python3 benchmarks/{name}.py {how}--json "
                f"data/benchmarks/{name}.json --note \"what else was running\"` records it.*")
    m = doc.get("machine", {})
    what = f"{m.get('platform', '?')}, {m.get('cpus', '?')} CPUs"
    note = f"; {doc['note']}" if doc.get("note") else ""
    return f"*Recorded {doc['date']} on {what}{note} (`data/benchmarks/{name}.json`).*"


def _f(x, fmt):
    return "-" if x is None else format(x, fmt)


def bench_table(name: str, how: str = ""):
    """A benchmark's table (``table("bench-...")``) from ``data/benchmarks/NAME.json``:
    the function decorated takes the record and returns the tables under its caption; a
    caption saying how to record it where there is none."""
    def wrap(fn):
        def make(root):
            doc = _bench(root, name)
            if doc is None:
                return _caption(doc, name, how)
            return "\n\n".join([_caption(doc, name, ""), *fn(doc)])
        make.__doc__ = fn.__doc__
        return table(name.replace("_", "-"), f"data/benchmarks/{name}.json")(make)
    return wrap


@bench_table("bench_roofline")
def _bench_roofline(doc):
    rows = [[p["hw"], p["precision"], f"{p['roofline_ms']:.2f}", f"{p['datamove_ms']:.2f}"]
            for p in doc["presets"]]
    cli = [[f"`{c['command']}`", f"{c['median_s']:.2f}", f"{c['min_s']:.2f}", f"{c['max_s']:.2f}"]
           for c in doc["cli"]]
    return [
        md(["hardware", "precision",
            f"roofline ms ({doc['workload']} batch {doc['batch']}, {doc['ops']} ops)",
            "datamove ms"], rows),
        md(["CLI, process start and imports included", "median s", "min s", "max s"], cli)]


@bench_table("bench_systolic")
def _bench_systolic(doc):
    closed = [[c["dataflow"], c["stalls"], f"{c['median_ms']:.1f}", f"{c['min_ms']:.1f}",
               f"{c['max_ms']:.1f}", f"{c['cycles']:,}", f"{c['utilization']:.1%}"]
              for c in doc["closed_form"]]
    cyc = [[c["layer"], c["dataflow"], f"{c['cycles']:,}", f"{c['macs'] / 1e6:.1f}",
            c["correct"], f"{c['seconds']:.2f}"] for c in doc["cycle_level"]]
    return [
        md(["dataflow", f"stalls ({doc['workload']} batch {doc['batch']}, {doc['array']})",
            "median ms", "min ms", "max ms", "cycles", "utilisation"], closed),
        md(["layer", f"dataflow ({doc['cycle_level_array']} cycle-level array)", "cycles",
            "M MACs", "correct", "seconds"], cyc)]


@bench_table("bench_simt")
def _bench_simt(doc):
    full = [[f["hw"], f["launch"], f"{f['instructions'] / 1e6:.2f}", f"{f['seconds']:.2f}",
             f"{f['rate'] / 1e6:.2f}"] for f in doc["full"]]
    samp = [[s["what"], f"{s['full_cycles']:,.0f}", f"{s['full_s']:.2f}",
             f"{s['sampled_cycles']:,.0f}", f"{s['sampled_s']:.2f}", f"{s['error']:+.2%}",
             _f(s["estimated_error"], ".1%")] for s in doc["sampled"]]
    sw, mem = doc["sweep"], doc["memory"]
    state = [[e["hw"], f"{e['mib']:.1f}", f"{e['warp_slots_mib']:.1f}", f"{e['l1_tags_mib']:.1f}",
              f"{e['l2_tags_mib']:.1f}"] for e in mem["engine_state"]]
    return [
        md(["hw", "launch (full mode, one core, median of 3)", "M warp instructions", "seconds",
            "M warp-instr/s"], full),
        md(["sampled against full", "full cycles", "full s", "sampled cycles", "sampled s",
            "error", "estimated"], samp),
        md(["what", "points", "seconds", "ms a point"],
           [[sw["what"], sw["points"], f"{sw['seconds']:.2f}",
             f"{sw['seconds'] / sw['points'] * 1e3:.1f}"]]),
        md([f"engine state (peak resident set {mem['peak_rss_mib']:.0f} MiB)", "MiB",
            "warp slots", "L1 tags", "L2 tags"], state)]


@bench_table("bench_analytic", "--suites grid,gemm,conv,kernels ")
def _bench_analytic(doc):
    rows = [[s["device"], s["suite"], s["records"], f"{s['mape']:.1%}", f"{s['median_error']:+.1%}",
             "-" if s["pairs_in_order"] is None else f"{s['pairs_in_order']:.1%} of {s['pairs']}",
             f"{s['ms_median']:.1f}",
             f"{s['ms_max']:.1f}"] for s in doc["suites"]]
    worst = [[f"{w['error']:+.1%}", w["device"], w["suite"], w["launch"]]
             for w in doc["largest_errors"]]
    return [
        md(["device", "suite", "records", "MAPE", "median error", "pairs in order",
            "ms a launch, median", "max"], rows),
        md(["largest errors", "device", "suite", "launch"], worst)]


@bench_table("bench_emulator")
def _bench_emulator(doc):
    groups = [[g["group"], f"{g['instructions']:,}", f"{g['seconds']:.2f}",
               f"{g['aggregate_rate'] / 1e6:.2f}", f"{g['median_rate'] / 1e6:.2f}"]
              for g in doc["groups"]]
    rates = [x["rate"] for x in doc["launches"]]
    return [
        md(["launches", "warp instructions", "seconds", "M/s aggregate", "M/s median a launch"],
           groups),
        (f"Per launch {min(rates) / 1e6:.2f}-{max(rates) / 1e6:.2f} M warp-instructions a "
         f"second over {len(rates)} launches (median of {doc['repeats']} runs each).")]


@bench_table("bench_kernel_timing")
def _bench_kernel_timing(doc):
    rows = [[s["hw"], s["launches"], f"{s['median_s']:.2f}", f"{s['max_s']:.2f}",
             sum(1 for x in doc["launches"] if x["hw"] == s["hw"] and "refused" in x)]
            for s in doc["summary"]]
    return [
        md(["hw", "launches", "s a launch, median", "max", "refused"], rows)]


@bench_table("bench_any_size")
def _bench_any_size(doc):
    rows = [[f"`{x['launch']}`", x["what"],
             f"{x['wall_s']:.1f}" if "wall_s" in x else "-",
             f"{x['predicted_s'] * 1e6:,.0f}" if "predicted_s" in x else "-",
             f"{x['instructions']:.3g}" if "instructions" in x else "-",
             f"{x['peak_rss_mb']:,.0f}" if "peak_rss_mb" in x else "-",
             x.get("error", "")] for x in doc["launches"]]
    return [md(["launch", "what", "wall s", "predicted us", "warp instructions",
                "peak MB so far", "refused"], rows)]


@bench_table("bench_answer", "--workers 2 ")
def _bench_answer(doc):
    out = []
    if "validation" in doc:
        v = doc["validation"]
        rows = [[d["hw"], s["suite"], s["records"], f"{s['engine_mape']:.1%}",
                 _f(s["engine_pairs_in_order"], ".1%"), f"{s['analytic_mape']:.1%}",
                 f"{s['engine_s_median']:.2f}", f"{s['engine_s_max']:.2f}",
                 f"{s['analytic_ms_median']:.1f}", f"{s['analytic_ms_max']:.1f}"]
                for d in v["devices"] for s in d["suites"]]
        a = v["all"]
        rows.append(["all", "", a["records"], "", "", "", f"{a['engine_s_median']:.2f}",
                     f"{a['engine_s_max']:.2f}", f"{a['analytic_ms_median']:.1f}",
                     f"{a['analytic_ms_max']:.1f}"])
        out.append(md(["device", "suite", "records", "engine MAPE", "pairs in order",
                       "analytic MAPE", "engine s a launch, median", "max",
                       "analytic ms, median", "max"], rows))
        out.append(f"The whole validation, both devices: {a['whole_s']:.0f} s "
                   f"({doc.get('workers') or 'one per core'} workers).")
        al = doc["analytic_alone"]
        out.append(md(["analytic model alone, one core", "launches", "ms median", "ms max"],
                      [[s["suite"], s["launches"], f"{s['ms_median']:.1f}", f"{s['ms_max']:.1f}"]
                       for s in al["suites"]]
                      + [["all", al["all"]["launches"], f"{al['all']['ms_median']:.1f}",
                          f"{al['all']['ms_max']:.1f}"]]))
    p = doc["plans"]
    out.append(md([f"plan ({p['workload']} batch {p['batch']}, {p['hw']})", "layers", "shapes",
                   "seconds", "engine s a shape, median", "max", "engine total ms",
                   "analytic total ms"],
                  [[x["plan"], x["layers"], x["shapes"], f"{x['seconds']:.1f}",
                    f"{x['engine_s_per_shape_median']:.2f}", f"{x['engine_s_per_shape_max']:.2f}",
                    f"{x['engine_total_ms']:.2f}", f"{x['analytic_total_ms']:.2f}"]
                   for x in p["plans"]]))
    o = p["oracle"]
    out.append(f"Four plans {p['four_plans_s']:.0f} s; the oracle's {o['layers']} layer "
               f"configurations and transforms {o['seconds']:.0f} s (DP plan "
               f"{o['dp_plan_ms']:.2f} ms, best-of {o['best_of_ms']:.2f} ms).")
    return out


# ---------------------------------------------------------------- the rewrite

def render(name: str, root: Path = ROOT) -> str:
    fn, _ = TABLES[name]
    return fn(root)


def rewrite(text: str, root: Path = ROOT, page: str = "") -> tuple:
    """(the text with every marked table generated, the names of those that changed)."""
    opened = OPEN.findall(text)
    closed = [m.group(2) for m in MARKER.finditer(text)]
    if opened != closed:
        raise ValueError(f"{page}: a table marker is not closed by <!-- /table -->: "
                         f"{sorted(set(opened) - set(closed)) or opened}")
    changed = []

    def sub(m):
        name = m.group(2)
        if name not in TABLES:
            raise ValueError(f"{page}: <!-- table: {name} --> names no table; there are "
                             f"{', '.join(TABLES)}")
        new = render(name, root).rstrip("\n") + "\n"
        if m.group(3) != new:
            changed.append(name)
        return m.group(1) + new + m.group(4)

    return MARKER.sub(sub, text), changed


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true",
                    help="change nothing; exit 1 naming each stale table")
    ap.add_argument("--list", action="store_true", help="every table and what it is made from")
    a = ap.parse_args(argv)
    if a.list:
        for name, (_, source) in TABLES.items():
            print(f"{name:20s} {source}")
        return 0
    stale, rewritten = [], []
    try:
        for page in pages():
            new, changed = rewrite(page.read_text(), ROOT, str(page.relative_to(ROOT)))
            stale += [f"{page.relative_to(ROOT)}: {name}" for name in changed]
            if changed:
                rewritten.append((page, new))
    except ValueError as e:           # nothing is written when any page is wrong
        print(f"docs_tables: error: {e}", file=sys.stderr)
        return 2
    if a.check:
        if stale:
            print("stale tables (python3 scripts/docs_tables.py rewrites them):")
            for s in stale:
                print(f"  {s}")
            return 1
        print("every table is current")
        return 0
    for page, text in rewritten:
        page.write_text(text)
    for s in stale:
        print(f"rewrote {s}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())

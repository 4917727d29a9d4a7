"""``roofsim measure SUITE``: a measurement suite timed on this machine's NVIDIA GPU
(numba.cuda), written as SUITE.json with its provenance."""
from __future__ import annotations

import sys
from pathlib import Path

from simulator.table import format_table, write_json

from ..options import int_list, items, positive_int, positive_seconds
from . import BY_NAME

NEEDS = ("gpu",)
SUITE_CHOICES = ("micro", "grid", "gemm", "conv", "h2d", "resources", "slices", "lines", "kernels",
                 "teaching", "atomics", "atomic_order", "atomic_trace", "all", "network", "torchvision",
                 "compiled", "counters", "tune")


def add_measure(sub):
    p = sub.add_parser("measure", help=BY_NAME["measure"].help,
                       description="Run a measurement suite on a real GPU and write SUITE.json "
                       "(records with provenance) into --out.")
    p.add_argument("suite", choices=SUITE_CHOICES,
                   help="the measurement suite to run (all: the numba suites micro to atomics; network: a "
                        "whole forward pass, see --workload, --batch, --plan; torchvision: PyTorch's "
                        "ResNet-50 where PyTorch is importable, --batch default 1,8,32; "
                        "compiled: PyTorch eager, "
                        "TorchScript and torch.compile (default, max-autotune) end to end and per "
                        "layer, and the per-layer oracle between them, --workload resnet50,mobilenet_v2 "
                        "--batch 1,8,32 by default; counters: the kernels "
                        "under Nsight Compute, instructions and bytes; kernels: users' numba "
                        "kernels (workloads.kernelsuite) timed and under Nsight Compute; "
                        "teaching: examples/teaching.py's kernels, measured alike; atomics: warps' "
                        "atomic requests to one L2 line, round trip and throughput; atomic_order: the "
                        "order a contended CAS loop's successes come in; atomic_trace: the same loop traced, "
                        "each warp's SM, times and the successes it missed)")
    p.add_argument("--out", default=".", metavar="DIR", help="existing folder for SUITE.json")
    p.add_argument("--deadline", type=positive_seconds("deadline"), metavar="SECONDS",
                   help="gemm, conv, kernels, teaching: start no new shape after this many seconds; "
                        "keep what finished (compiled: no new model and batch)")
    p.add_argument("--workload", metavar="NET",
                   help="network: the network (default resnet50); compiled: torchvision "
                        "models, comma-separated (resnet50, mobilenet_v2)")
    p.add_argument("--batch", metavar="B[,B...]", help="network: batch sizes (default 1)")
    p.add_argument("--plan", metavar="PLAN[,PLAN...]",
                   help="network: uniform plans (direct-nchw, direct-nhwc, im2col-nchw, "
                        "im2col-nhwc), plan files, or oracle (the plan picked from this run's "
                        "measurements of the four uniform plans); default direct-nchw")
    p.add_argument("--reps", type=positive_int("reps", 100), metavar="N",
                   help="network, torchvision, compiled: repetitions of each timing (default 5; "
                        "torchvision 20; compiled 10)")
    p.set_defaults(func=run)


def _command_line():
    return "roofsim " + " ".join(sys.argv[1:])


def run(args):
    net_opts = [o for o in ("workload", "batch", "plan", "reps") if getattr(args, o, None) is not None]
    if args.suite in ("torchvision", "compiled"):
        allowed = ("batch", "reps") + (("workload",) if args.suite == "compiled" else ())
        bad = [o for o in net_opts if o not in allowed]
        if bad:
            raise ValueError(f"--{bad[0]} applies to the network suite")
    elif args.suite != "network" and net_opts:
        raise ValueError(f"--{net_opts[0]} applies to the network suite")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {args.out!r}: a file, not a folder; --out names the folder "
                         "SUITE.json is written in")
    if not out.is_dir():
        raise ValueError(f"--out {args.out!r}: no such folder (create it first)")
    if args.deadline is not None and args.suite in ("network", "torchvision", "counters"):
        raise ValueError("--deadline applies to the gemm, conv, kernels, teaching and compiled suites")
    one = {"network": _network, "torchvision": _torchvision, "compiled": _compiled,
           "counters": _counters, "tune": _tune}
    if args.suite in one:
        return _no_gpu_is_bad_input(one[args.suite], args, out)
    return _no_gpu_is_bad_input(_suites, args, out)


def _no_gpu_is_bad_input(fn, args, out):
    from simulator.measure import NoGPU
    try:
        return fn(args, out)
    except NoGPU as e:
        raise ValueError(str(e)) from None


def _suites(args, out):
    from simulator.measure import SUITES
    from simulator.measure import run as run_suite
    names = list(SUITES) if args.suite == "all" else [args.suite]
    for name in names:
        data = run_suite(name, command=_command_line(), deadline_s=args.deadline)
        path = out / f"{name}.json"
        write_json(path, data)
        recs = data["records"]
        bad = [r for r in recs if not r.get("ok", True)]
        print(f"{name}: {len(recs)} records in {data['wall_seconds']:.1f} s on "
              f"{data['provenance']['device']}; {len(bad)} failed their check; wrote {path}")
        _suite_table(name, data)


def _suite_table(name, data):
    """The micro, slices, lines and kernels suites' figures as a table."""
    recs = data["records"]
    if name in ("kernels", "teaching"):
        rows = [[r["kernel"], r["shape"], r["median_s"], r["buffer_sets"], r["ok"],
                 "yes" if r["counters"] else "no"] for r in recs]
        print(format_table(["kernel", "shape", "median s", "buffer sets", "ok", "ncu"], rows,
                           right=[False, False, True, True, False, False]))
        for item in data.get("skipped") or []:
            print(f"skipped: {item}")
    if name == "micro":
        rows = [[r["name"], r.get("median_s"), r.get("bandwidth_bytes_per_s") or r.get("flop_per_s")
                 or r.get("blocks_per_s") or r.get("latency_s"), r["ok"]] for r in recs]
        print(format_table(["what", "median s", "rate / latency", "ok"], rows,
                           right=[False, True, True, False]))
    if name == "atomics":
        rows = [[r["op"], r["spread_words"], r["warps"], r["median_s"], r["cycles_per_request"],
                 r["cycles_per_warp_request"], r["ok"]] for r in recs]
        print(format_table(["op", "words", "warps", "median s", "cycles/request",
                            "cycles/warp request", "ok"], rows,
                           right=[False, True, True, True, True, True, False]))
    if name == "atomic_order":
        rows = [[f"{r['name']} {r['grid']}x{r['block']}" + (f" {r['lanes']} lanes on {r['keys']}"
                                                              if "lanes" in r else ""),
                 r["launch"], r["total_tries"], r["first_come_tries"], r["ok"]] for r in recs]
        print(format_table(["what", "launch", "tries", "first come, first served",
                            "ok"], rows, right=[False, True, True, True, False]))
    if name == "atomic_trace":
        rows = [[f"{r['grid']}x{r['block']} {r['lanes']} lanes", r["launch"], r["total_tries"],
                 r["first_come_tries"], round(r["total_tries"] / r["first_come_tries"], 3),
                 max(r["success_ns"]) / 1e3, len(set(r["sm"])), r["ok"]] for r in recs]
        print(format_table(["what", "launch", "tries", "first come, first served", "ratio",
                            "last success us", "SMs", "ok"], rows,
                           right=[False, True, True, True, True, True, True, False]))
    if name == "slices":
        rows = [[r["stride_lines"], r["footprint_bytes"], r["median_s"], r["bandwidth_bytes_per_s"],
                 r["ok"]] for r in recs]
        print(format_table(["stride (lines)", "footprint B", "median s", "B/s", "ok"], rows,
                           right=[True, True, True, True, False]))
    if name == "lines":
        clock = 1e3 * (data["provenance"]["attributes"].get("clock_rate") or 0)   # kHz
        rows = [[r["name"], r.get("sms_used", "all"), r["warps_per_sm"], r["lines_per_request"],
                 r["median_s"], r["requests_per_sm_per_s"],
                 clock / r["requests_per_sm_per_s"] if clock else None, r["ok"]] for r in recs]
        print(format_table(["what", "SMs", "warps/SM", "lines/request", "median s",
                            "requests/SM/s", "cycles/request", "ok"], rows,
                           right=[False, True, True, True, True, True, True, False]))


def _batches(args, default):
    batches = int_list(args.batch or default, "--batch")
    if any(b > 4096 for b in batches):
        raise ValueError(f"--batch {args.batch}: at most 4096")
    return batches


def _network(args, out):
    """Each plan's forward pass at each batch, checked and timed the three ways, into
    DIR/network_bB.json (B: the batches, joined by -)."""
    from simulator.measure.network import check_plans, run_network
    batches = _batches(args, "1")
    from simulator.analysis.plan import uniform_name
    from simulator.arguments import repeated
    # a uniform plan's name as the plan command and plan files read it (any case)
    plans = [uniform_name(p) or p for p in items(args.plan or "direct-nchw", "--plan")]
    twice = repeated(plans)
    if twice:
        raise ValueError(f"--plan {args.plan!r}: {twice[0]!r} given twice; give each plan once")
    workload = args.workload or "resnet50"
    check_plans(workload, batches, plans)       # every plan's launches, before any work
    data = run_network(workload, batches, plans, reps=args.reps or 5, command=_command_line())
    path = out / f"network_b{'-'.join(map(str, batches))}.json"
    write_json(path, data)
    bad = [r for r in data["records"] if not r.get("ok", True)]
    print(f"network: {len(data['records'])} plans measured in {data['wall_seconds']:.1f} s on "
          f"{data['provenance']['device']}; {len(bad)} failed their check; wrote {path}")


def _tune(args, out):
    """Every candidate roofsim tune ranks, measured, into DIR/tune.json."""
    from simulator.measure.tune import run_suite
    data = run_suite(_command_line())
    path = out / "tune.json"
    write_json(path, data)
    recs = data["records"]
    print(f"tune: {len(recs)} candidates measured in {data['wall_seconds']:.1f} s; "
          f"{sum(not r['ok'] for r in recs)} failed their check; wrote {path}")


def _compiled(args, out):
    """PyTorch eager, TorchScript and torch.compile per model and batch, into
    DIR/compiled.json, rewritten after each model and batch (so that --deadline or Ctrl-C
    keeps what finished)."""
    from simulator.measure.compiled import MODELS, run_compiled
    models = items(args.workload or ",".join(MODELS), "--workload")
    bad = [m for m in models if m not in MODELS]
    if bad:
        raise ValueError(f"--workload {bad[0]!r}: the compiled suite runs {', '.join(MODELS)}")
    batches = _batches(args, "1,8,32")
    path = out / "compiled.json"

    def keep(data):
        write_json(path, data)
        r = data["records"][-1]
        cells = "  ".join(f"{c} {r['whole'][c]['end_to_end']['median_s'] * 1e3:.3f}"
                          for c in r["whole"])
        print(f"  {r['model'].split('.')[-1]} batch {r['batch']}: {cells} ms "
              f"({r['wall_seconds']:.0f} s)", flush=True)
    data = run_compiled(models, batches, reps=args.reps or 10, deadline_s=args.deadline,
                        command=_command_line(), on_record=keep,
                        say=lambda m: print(f"    {m}", flush=True))
    write_json(path, data)
    for item in data["skipped"]:
        print(f"skipped: {item}")
    print(f"compiled: {len(data['records'])} model-batches in {data['wall_seconds']:.0f} s; "
          f"wrote {path}")


def _counters(args, out):
    """roofsim's kernels under Nsight Compute, into DIR/counters.json."""
    from simulator.measure.counters import run_counters
    data = run_counters(command=_command_line())
    path = out / "counters.json"
    write_json(path, data)
    print(f"counters: {len(data['records'])} launches profiled in {data['wall_seconds']:.1f} s on "
          f"{data['provenance']['device']}; wrote {path}")


def _torchvision(args, out):
    """The framework's ResNet-50 end to end (where PyTorch is importable; where it is not,
    ``framework.NoFramework``, a NoGPU: refused, one line and exit 2)."""
    from simulator.measure.framework import run_framework
    batches = _batches(args, "1,8,32")
    data = run_framework(batches, reps=args.reps or 20, command=_command_line())
    path = out / "torchvision.json"
    write_json(path, data)
    for r in data["records"]:
        print(f"  torchvision resnet50 {r['memory_format']:<13} batch {r['batch']:3d}: "
              f"{r['median_s'] * 1e3:8.3f} ms  {'ok' if r['ok'] else 'FAILED'}")
    print(f"torchvision: {len(data['records'])} records; wrote {path}")

"""A network as roofsim's kernels: a plan says, per convolution, which algorithm runs it
and in which layout; ``expand`` turns it into every layer the GPU runs, the layout
transforms it implies included; ``predict_plan`` predicts each layer with the engine
(sampled), the analytic model and the roofline bound, and sums them.

A convolution's configuration is ``ALGORITHM-LAYOUT`` (``direct-nchw``, ``direct-nhwc``,
``im2col-nchw``, ``im2col-nhwc``): ``conv-direct`` reads and writes its layout;
``conv-im2col`` reads its layout and writes the GEMM's output, (n p q) x k, which is
NHWC whatever it read. The FC layer (a GEMM, no layout) runs as ``gemm-naive``
(``direct``) or ``gemm-tiled`` (``im2col``). Batch norm, pools and the FC's bias run in
the layout of the tensor they read (no transform); where a layer reads a tensor in the
other layout, a ``layout-transform`` of that tensor is inserted once (a tensor read
twice in one layout is transformed once). The network's input arrives NCHW, as a
framework hands it over. A 1 x 1 spatial tensor (the average pool's output) is the
same in both layouts.

A plan is a uniform name, or a plan file (TOML or JSON) a person can write::

    default = "direct-nhwc"          # every convolution, and the FC's algorithm
    [layers]                         # optional: per-layer exceptions
    "layer4.0.conv2" = "im2col-nhwc"
    fc = "im2col"                    # the FC: direct (gemm-naive) or im2col (gemm-tiled)

``plan --oracle`` writes its pick in that form, every convolution listed.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

from simulator.arguments import show

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable, Sequence

    from hwmodels.schema import SIMTGPU, Hardware
    from simulator.parallel import Outcome
    from simulator.simt.api import Problem
    from workloads.ir import Network, TensorOp

    from .oracle import Choice

UNIFORM = ("direct-nchw", "direct-nhwc", "im2col-nchw", "im2col-nhwc")
MAX_PLAN_BYTES = 1 << 20                # a plan file: a line a layer, far below this
CONFIGS = tuple(tuple(u.split("-")) for u in UNIFORM)        # (algorithm, layout)
FC_ALGORITHMS = ("direct", "im2col")
PREDICTORS = ("engine", "analytic", "roofline")
INPUT_LAYOUT = "nchw"                   # the network's input, as a framework hands it over
INPUT_ENTRY = "input"                   # the first segment's entry: the network's inputs
CONV_KERNEL = {"direct": "conv-direct", "im2col": "conv-im2col"}
GEMM_KERNEL = {"direct": "gemm-naive", "im2col": "gemm-tiled"}


@dataclass(frozen=True)
class LayerPlan:
    """How one layer runs: the op (its layout the one it runs in), the kernel, the
    algorithm (``transform`` for an inserted layout transform), the layout it reads,
    the layers whose outputs it reads (after any transform) and its output's layout
    (``-``: no spatial layout)."""

    op: object
    kernel: str
    algorithm: str
    layout: str
    inputs: tuple = ()
    out_layout: str = ""


def config_name(cfg: tuple | str) -> str:
    return "-".join(cfg) if isinstance(cfg, tuple) else cfg


def _short(v) -> str:
    t = repr(v)
    return t if len(t) <= 40 else f"{t[:30]}... ({len(t)} characters)"


def uniform_name(text: object) -> str | None:
    """The uniform plan ``text`` names (one of UNIFORM), or None: the one rule for a plan's
    name wherever one is read -- the command line, the API, a plan file's values --
    spaces around it and letter case aside (``" IM2COL-NHWC"`` is ``im2col-nhwc``)."""
    if not isinstance(text, str):
        return None
    name = text.strip().lower()
    return name if name in UNIFORM else None


def parse_config(text: object, layer: str = "default") -> tuple[str, ...]:
    """``direct-nhwc`` -> ("direct", "nhwc"); an error names the layer and the choices."""
    name = uniform_name(text)
    if name is None:
        raise ValueError(f"plan: {layer} = {_short(text)}: allowed: {', '.join(UNIFORM)}")
    return tuple(name.split("-"))


def input_dims(net: Network) -> tuple:
    """(N, C, H, W) of the network's one input (a GEMM's A: M x K x 1 x 1, no layout);
    a network of separate problems has none (measuring runs a chained network)."""
    from workloads.ir import INPUT
    shapes = net.input_shapes()
    if net.inputs != (INPUT,) or INPUT not in shapes:
        raise ValueError(f"workload {show(net.name)}: {len(net.inputs)} inputs "
                         f"({', '.join(net.inputs[:3])}{', ...' if len(net.inputs) > 3 else ''}); "
                         f"a chained network with one input {show(INPUT)} is what runs end to end")
    return shapes[INPUT]


def configurable(net: Network) -> list:
    """The layers a plan configures: every convolution and GEMM, in order."""
    return [op.name for op in net.ops if op.kind in ("conv2d", "gemm")]


def expand(net: Network, configs: dict, ops: Sequence[TensorOp] | None = None,
           layouts: dict | None = None, dims: dict | None = None) -> list:
    """The layers the GPU runs for ``net`` under ``configs`` (layer name -> (algorithm,
    layout) for a convolution, algorithm for a GEMM), transforms inserted (module doc).
    ``ops``: a run of the network's layers (default all); ``layouts``/``dims``: the
    layout and (N, C, H, W) of the tensors they read from before them."""
    from workloads.ir import Conv2d
    if ops is None:
        net.check_connected()
    layout = {**{t: INPUT_LAYOUT for t in net.inputs}, **(layouts or {})}
    layer_names = {op.name for op in net.ops}
    shape = {**net.input_shapes(), **(dims or {})}
    done, out = {}, []
    for op in (net.ops if ops is None else ops):
        ins = net.inputs_of(op.name)
        if op.kind == "conv2d":
            if op.groups != 1:
                raise ValueError(f"layer {op.name}: grouped convolutions have no kernel")
            alg, want = configs[op.name]
            kernel, out_layout = CONV_KERNEL[alg], (want if alg == "direct" else "nhwc")
        elif op.kind == "gemm":
            alg, want, kernel, out_layout = configs[op.name], None, GEMM_KERNEL[configs[op.name]], "-"
        elif op.kind in ("batchnorm", "pool2d"):
            alg, kernel = "-", "batchnorm" if op.kind == "batchnorm" else "pool2d"
            want = layout[ins[0]]
            if want == "-":      # after a GEMM: its M x N output is N x C x 1 x 1
                want = INPUT_LAYOUT
            out_layout = want
        else:
            raise ValueError(f"layer {op.name}: {op.kind} has no kernel")
        reads = []
        for t in ins:
            n, c, h, w = shape[t]
            if want is None or layout[t] in ("-", want) or h * w == 1:
                reads.append(t)
                continue
            key = (t, want)
            if key not in done:
                name = f"{t}.to_{want}"
                if name in layer_names:
                    raise ValueError(f"layer {name!r}: the name of the transform a plan inserts "
                                     f"for {t!r} into {want}; rename the layer")
                tr = Conv2d(name=name, N=n, C=c, H=h, W=w, K=1, R=1, S=1, layout=want,
                            dtype=op.dtype)
                out.append(LayerPlan(tr, "layout-transform", "transform", want, (t,), want))
                done[key] = name
                shape[name] = shape[t]
            reads.append(done[key])
        run = dataclasses.replace(op, layout=want) if want and hasattr(op, "layout") and \
            op.kind != "gemm" else op
        out.append(LayerPlan(run, kernel, alg, want or "-", tuple(reads), out_layout))
        layout[op.name] = out_layout
        shape[op.name] = op.out_shape()
    return out


def uniform_configs(net: Network, name: str) -> dict:
    if uniform_name(name) is None:
        raise ValueError(f"plan={show(name)}: allowed: {', '.join(UNIFORM)}, or a plan file "
                         "(.toml or .json)")
    cfg = parse_config(name)
    return {n: (cfg if op.kind == "conv2d" else cfg[0]) for op in net.ops
            for n in (op.name,) if op.kind in ("conv2d", "gemm")}


def load_plan_file(path: str | os.PathLike, net: Network) -> dict:
    """A plan file (TOML or JSON, module doc) -> the configuration of every layer it
    configures; errors name the file, the key and what is allowed."""
    import tomllib
    from pathlib import Path
    p = Path(path)
    if p.is_dir():
        raise ValueError(f"plan={show(str(path), 200)}: a folder, not a plan file")
    if p.exists() and not p.is_file():
        from hwmodels.fileio import file_kind
        raise ValueError(f"plan={show(str(path), 200)}: {file_kind(p.stat().st_mode)}, not a "
                         "regular file; a plan file is read from disk")
    if not p.is_file():
        raise ValueError(f"plan={show(str(path), 200)}: no such plan file (or one of {', '.join(UNIFORM)})")
    if p.stat().st_size > MAX_PLAN_BYTES:
        raise ValueError(f"plan file {path}: {p.stat().st_size:,} bytes; a plan file is at most "
                         f"{MAX_PLAN_BYTES:,} (one line a layer)")
    try:
        # (a byte-order mark, as some Windows editors write, is not part of the text)
        text = p.read_bytes().decode("utf-8-sig")
    except OSError as e:
        raise ValueError(f"plan file {path}: cannot read it ({e.strerror})") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"plan file {path}: not UTF-8 text (byte {e.start})") from None
    kind = "JSON" if p.suffix.lower() == ".json" else "TOML"

    def no_repeats(pairs):
        keys = [k for k, _ in pairs]
        twice = next((k for k in keys if keys.count(k) > 1), None)
        if twice is not None:
            raise ValueError(f"key {show(twice)} is given twice")
        return dict(pairs)
    try:
        doc = json.loads(text, object_pairs_hook=no_repeats) if kind == "JSON" else tomllib.loads(text)
    except RecursionError:
        raise ValueError(f"plan file {path}: not a plan ({kind} nested too deep)") from None
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise ValueError(f"plan file {path}: not valid {kind} ({str(e).splitlines()[0][:120]})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"plan file {path}: expected a table with default and layers")
    extra = set(doc) - {"default", "layers", "comment", "source"}
    if extra:
        raise ValueError(f"plan file {path}: unknown key {show(sorted(extra)[0])} (allowed: default, "
                         "layers, comment, source)")
    for key in ("comment", "source"):          # free text, but text
        if key in doc and not isinstance(doc[key], str):
            raise ValueError(f"plan file {path}: {key} = {_short(doc[key])}: must be text (a "
                             "string), or left out")
    kinds = {op.name: op.kind for op in net.ops}
    layers = doc.get("layers", {})
    if not isinstance(layers, dict):
        raise ValueError(f"plan file {path}: layers must be a table of layer = configuration")
    if "default" not in doc:
        missing = [n for n in configurable(net) if n not in layers]
        if missing:
            raise ValueError(f"plan file {path}: no default and no configuration for layer "
                             f"{show(missing[0])} ({len(missing)} layers unlisted)")
        default = None
    else:
        default = parse_config(doc["default"], f"{path}: default")
    out = {}
    for name in configurable(net):
        if kinds[name] == "gemm":
            v = layers.get(name, default[0] if default else None)
            if v not in FC_ALGORITHMS:
                raise ValueError(f"plan file {path}: {name} = {_short(v)}: allowed: "
                                 f"{', '.join(FC_ALGORITHMS)} (a GEMM has no layout)")
            out[name] = v
        else:
            out[name] = parse_config(layers[name], f"{path}: {name}") if name in layers else default
    for name in layers:
        if name not in kinds:
            near = [n for n in configurable(net) if n.startswith(str(name).split(".")[0])][:3]
            raise ValueError(f"plan file {path}: layer {_short(name)} is not in {net.name}"
                             + (f" (e.g. {', '.join(near)})" if near else ""))
        if kinds[name] not in ("conv2d", "gemm"):
            raise ValueError(f"plan file {path}: layer {show(name)} is a {kinds[name]}; it runs in the "
                             "layout of what it reads (configure convolutions and the FC)")
    return out


def configs_from_names(names: dict) -> dict:
    """{layer: "direct-nhwc" | "im2col"} (a plan file's or a record's) -> configurations."""
    return {k: (tuple(v.split("-")) if "-" in v else v) for k, v in names.items()}


def _default_config(net, configs: dict):
    """The configuration most of the convolutions take (a plan file's default)."""
    from collections import Counter
    convs = [configs[n] for n in configurable(net) if isinstance(configs[n], tuple)]
    return Counter(convs).most_common(1)[0][0] if convs else CONFIGS[0]


def plan_json(net: Network, configs: dict, comment: str = "") -> str:
    """A plan file (JSON) listing every configured layer."""
    return json.dumps({"comment": comment, "default": config_name(_default_config(net, configs)),
                       "layers": {n: config_name(configs[n]) for n in configurable(net)}},
                      indent=1) + "\n"


def _toml_string(s: str) -> str:
    """``s`` as a TOML basic string: quote, backslash and control characters escaped."""
    out = []
    for ch in s:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif o < 0x20 or o == 0x7F or 0xD800 <= o <= 0xDFFF:
            out.append(f"\\u{o:04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _printable(line: str) -> str:
    """A comment line with its control characters shown as escapes (TOML forbids them)."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in line)


def plan_text(net: Network, configs: dict, comment: str = "") -> str:
    """A plan file (TOML) listing every configured layer; layer names of any characters
    written so that ``load_plan_file`` reads them back."""
    default = _default_config(net, configs)
    lines = [f"# {_printable(line)}" for line in comment.splitlines()]
    lines += [f'default = "{config_name(default)}"', "", "[layers]"]
    for n in configurable(net):
        lines.append(f'{_toml_string(n)} = "{config_name(configs[n])}"')
    return "\n".join(lines) + "\n"


def configs_of(net: Network, plan: str) -> dict:
    """A plan argument (a uniform name or a file) -> every layer's configuration."""
    if uniform_name(plan) is not None:
        return uniform_configs(net, plan)
    if "/" in plan or plan.lower().endswith((".toml", ".json")):
        return load_plan_file(plan, net)
    raise ValueError(f"plan={show(plan)}: allowed: {', '.join(UNIFORM)}, or a plan file "
                     "(.toml or .json)")


def network(workload: str | os.PathLike | Network | TensorOp, batch: int | None) -> Network:
    """The network a plan runs: a workload string at ``batch`` (None: its own), or a
    Network (or op) as built, whose batch ``batch`` must be if given; its layers must
    connect (``Network.check_connected``) and each have a kernel."""
    import os

    import workloads
    from simulator import arguments
    if isinstance(workload, (str, os.PathLike)):       # a topology CSV's path as a Path too
        net = workloads.resolve(os.fspath(workload), batch=batch)
    else:
        net = arguments.workload(workload)
        if batch is not None and arguments.integer(batch, "batch", 1, 2**31 - 1) != batch_of(net):
            raise ValueError(f"batch={show(batch)}: workload {show(net.name)} is built at batch "
                             f"{batch_of(net)} (give batch=None, or build it at {batch})")
    if not any(op.kind in ("conv2d", "gemm") for op in net.ops):
        raise ValueError(f"workload={show(net.name)}: no convolution or GEMM to plan")
    bad = [op for op in net.ops if op.kind not in ("conv2d", "gemm", "batchnorm", "pool2d")]
    if bad:
        raise ValueError(f"layer {bad[0].name}: {bad[0].kind} has no kernel yet")
    net.check_connected()
    return net


def batch_of(net: Network) -> int:
    """The batch a network runs at: its first convolution's (batch norm's, pool's) N."""
    return next((op.N for op in net.ops if op.kind in ("conv2d", "batchnorm", "pool2d")), 1)


def uniform(network_name: str, batch: int, name: str) -> list[LayerPlan]:
    """Every layer of ``network_name`` at ``batch`` under uniform plan ``name`` (one of
    UNIFORM), transforms included."""
    if uniform_name(name) is None:
        raise ValueError(f"plan={show(name)}: allowed: {', '.join(UNIFORM)}")
    net = network(network_name, batch)
    return expand(net, uniform_configs(net, name))


@dataclass(frozen=True)
class LayerTask:
    hw: object
    layer: LayerPlan
    mode: str
    l2: str
    problem: object = None       # the layer's kernel problem, built where the plan was checked


def describe(lp: LayerPlan) -> str:
    """The layer's shape for tables (a transform: its tensor and the two layouts)."""
    if lp.algorithm == "transform":
        o = lp.op
        return f"{o.N}x{o.C}x{o.H}x{o.W} {'nhwc' if o.layout == 'nchw' else 'nchw'} -> {o.layout}"
    return lp.op.describe()


def kernel_args(lp: LayerPlan) -> dict:
    """The layer's kernel problem arguments."""
    if lp.op.kind == "gemm":
        return {"m": lp.op.M, "n": lp.op.N, "k": lp.op.K}
    if lp.kernel in ("pool2d", "batchnorm"):
        return {"op": lp.op}
    return {"conv": lp.op}


def build_layer(hw: SIMTGPU, lp: LayerPlan) -> Problem:
    """The layer's kernel problem on ``hw``; a launch the kernel cannot make (a grid past
    CUDA's limits at a large batch) is an error naming the layer."""
    from simulator.simt import api
    try:
        return api.build(hw, lp.kernel, **kernel_args(lp))
    except ValueError as e:
        raise ValueError(f"layer {lp.op.name} ({lp.kernel}, {describe(lp)}): {e}") from None


def predict_layer(task: LayerTask) -> dict:
    """One layer's row: its kernel, shape and predicted seconds per predictor."""
    from .compare import predict
    hw, lp = task.hw, task.layer
    prob = task.problem if task.problem is not None else build_layer(hw, lp)
    p = predict(hw, prob, task.mode, "gto", l2=task.l2)
    launch = hw.kernel_launch_s * len(prob.programs)
    e = p.engine
    return {"layer": lp.op.name, "kind": "transform" if lp.algorithm == "transform" else lp.op.kind,
            "kernel": lp.kernel, "layout": lp.layout, "out_layout": lp.out_layout,
            "shape": describe(lp), "launches": len(prob.programs),
            "engine_seconds": e.seconds + launch if e is not None else None,
            "analytic_seconds": p.analytic.seconds + launch,
            "roofline_seconds": p.roofline.seconds,
            "engine_estimated_error": e.estimated_error if e is not None else None,
            "engine_wall_seconds": e.wall_seconds if e is not None else None}


def _shape_key(lp: LayerPlan):
    """Layers of one kernel on one shape (a network repeats its blocks) predict alike."""
    import dataclasses
    return (lp.kernel, lp.layout, dataclasses.replace(lp.op, name=""))


def _sampled_cost(task) -> float:
    """The warp instructions sampled mode simulates for a layer's launches."""
    from simulator.simt.engine import sampled_cost
    hw, prob = task
    return sum(sampled_cost(hw, p) for p in prob.programs)


def predict_plan(hw: SIMTGPU, layers: Sequence[LayerPlan], mode: str = "sampled", l2: str = "cold",
                 workers: int | None = None, scheduler: str | None = None) -> tuple[Outcome, dict]:
    """Every layer of a plan predicted (spread over Dask workers, see
    ``simulator.parallel``): (Outcome whose results are layer rows, totals per
    predictor over the layers that finished).

    Each distinct (kernel, shape) is predicted once -- the predictors are deterministic
    -- and its row copied to the layers that repeat it, marked ``same_as`` the first
    (their ``engine_wall_seconds`` is 0: nothing ran for them)."""
    import dataclasses

    from simulator.parallel import map_tasks
    if mode not in ("sampled", "analytic"):
        raise ValueError(f"mode={show(mode)}: allowed: sampled, analytic")
    first = {}
    for i, lp in enumerate(layers):
        first.setdefault(_shape_key(lp), i)
    unique = sorted(set(first.values()))
    # every layer's launches, checked here before any work; the engine's layers go out
    # largest first (by the warp instructions their sampled runs simulate), so that two
    # workers do not end with one of them alone on a long layer
    from simulator.parallel import Outcome
    try:
        probs = {i: build_layer(hw, layers[i]) for i in unique}
    except KeyboardInterrupt:       # stopped before the first prediction
        return Outcome([None] * len(layers), 0, True, 0.0), {p: None for p in PREDICTORS}
    cost = {}
    if mode == "sampled":
        from simulator.simt.engine import check_size
        for i in unique:            # the engine's state of each layer fits, up front
            try:
                check_size(hw, probs[i].programs, "sampled")
            except ValueError as e:
                raise ValueError(f"layer {layers[i].op.name} ({describe(layers[i])}): {e}") from None
        # (seconds a layer at a large batch: its blocks' loop trips walked one by one;
        # here, on a thread, so that Ctrl-C and the progress notes reach the user)
        sized = map_tasks(_sampled_cost, [(hw, probs[i]) for i in unique], workers=1,
                          label="plan: sizing the engine's work")
        if sized.interrupted:
            return (Outcome([None] * len(layers), 0, True, sized.wall_seconds),
                    {p: None for p in PREDICTORS})
        cost = dict(zip(unique, sized.results))
    order = sorted(unique, key=lambda i: -cost.get(i, 0.0))
    _say_how_long(cost, len(unique), len(layers), workers, scheduler)
    from simulator.simt.api import announce_compiling, announce_compiling_analytic
    out = map_tasks(predict_layer, [LayerTask(hw, layers[i], mode, l2, probs[i]) for i in order],
                    workers=workers, scheduler=scheduler, label="plan",
                    ready=announce_compiling if mode == "sampled" else announce_compiling_analytic)
    by_first = dict(zip(order, out.results))
    results = []
    for i, lp in enumerate(layers):
        j = first[_shape_key(lp)]
        row = by_first[j]
        if row is not None and j == i:
            row = {**row, "same_as": None}
        elif row is not None:
            row = {**row, "layer": lp.op.name, "same_as": layers[j].op.name,
                   "engine_wall_seconds": 0.0 if row["engine_wall_seconds"] is not None else None}
        results.append(row)
    out = dataclasses.replace(out, results=results,
                              done=sum(r is not None for r in results))
    rows = out.finished
    totals = {}
    for p in PREDICTORS:
        vals = [r[f"{p}_seconds"] for r in rows]
        totals[p] = sum(vals) if vals and None not in vals else None
    return out, totals


ENGINE_RATE = 2.5e6     # warp instructions the engine simulates a second on one core (sampled
#                         mode, ResNet-50's layers on this project's 2-core machine: 1.66e8
#                         in 67 s; benchmarks/ gives 3-6 million in full mode)
LONG_RUN_S = 20.0       # a prediction expected to take longer is announced, with its size


def _say_how_long(cost, distinct, total, workers, scheduler):
    """Before a long engine run: how much there is to do, about how long it takes, and
    that Ctrl-C keeps what finished (a run of minutes does not start in silence)."""
    import sys

    from simulator.parallel import default_workers
    work = sum(cost.values())
    if scheduler is not None or not work:
        return
    n = min(distinct, 1 if workers == 1 else (workers or default_workers()))
    seconds = work / ENGINE_RATE / n
    if seconds >= LONG_RUN_S:
        took = f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"
        print(f"  plan: {distinct} distinct layers of {total} to predict with the engine "
              f"(sampled), about {work:.2g} warp instructions: about {took} on {n} "
              f"worker{'s' if n > 1 else ''}; Ctrl-C keeps the rows that finished",
              file=sys.stderr, flush=True)


# --- the oracle over a network's plans ----------------------------------------------------

def time_key(lp: LayerPlan) -> tuple:
    """What a layer's time depends on: a convolution its algorithm and layout, the FC
    its algorithm, batch norm and pools their layout, a transform its tensor and
    target."""
    if lp.algorithm == "transform":
        return ("transform", lp.inputs[0], lp.layout)
    if lp.op.kind == "conv2d":
        return ("conv", lp.op.name, lp.algorithm, lp.layout)
    if lp.op.kind == "gemm":
        return ("gemm", lp.op.name, lp.algorithm)
    return (lp.op.kind, lp.op.name, lp.layout)


def all_transforms(net: Network) -> list:
    """Every transform any plan of ``net`` may insert: each tensor a layer reads with a
    spatial extent, into each layout."""
    from workloads.ir import Conv2d
    net.check_connected()
    dims = net.input_shapes()
    out, seen = [], set()
    for op in net.ops:
        for t in net.inputs_of(op.name):
            n, c, h, w = dims[t]
            for lay in ("nchw", "nhwc"):
                if h * w > 1 and (t, lay) not in seen and op.kind != "gemm":
                    seen.add((t, lay))
                    tr = Conv2d(name=f"{t}.to_{lay}", N=n, C=c, H=h, W=w, K=1, R=1, S=1,
                                layout=lay, dtype=op.dtype)
                    out.append(LayerPlan(tr, "layout-transform", "transform", lay, (t,), lay))
        dims[op.name] = op.out_shape()
    return out


def oracle_layers(net: Network) -> list:
    """The layers whose times the oracle needs: the four uniform plans' layers (every
    convolution in each configuration, batch norms and pools in each layout, the FC each
    way) and every transform, each once."""
    seen, out = set(), []
    for lp in [lp for u in UNIFORM for lp in expand(net, uniform_configs(net, u))] + all_transforms(net):
        k = time_key(lp)
        if k not in seen:
            seen.add(k)
            out.append(lp)
    return out


def launchable(hw: SIMTGPU, layers: Iterable[LayerPlan]) -> tuple:
    """(the layers whose kernels can launch on ``hw``, [(layer, why not)] of the rest): a
    tiled GEMM's grid past CUDA's 65,535 rows of tiles (im2col from batch 84 on ResNet-50's
    first convolution), say."""
    ok, refused = [], []
    for lp in layers:
        try:
            build_layer(hw, lp)
            ok.append(lp)
        except ValueError as e:
            refused.append((lp, str(e)))
    return ok, refused


def segments(net: Network) -> list:
    """The network's layers cut where at most one layer's output is live and no input is
    between its first and last reader (a transform of it is shared by its readers):
    [(entry tensor -- the live output, or None --, ops)]. A network of separate problems
    cuts at every layer."""
    names = [op.name for op in net.ops]
    first, last = {}, {}
    for i, op in enumerate(net.ops):
        for t in net.inputs_of(op.name):
            first.setdefault(t, i)
            last[t] = i
    out, entry, cur = [], INPUT_ENTRY, []
    for i, op in enumerate(net.ops):
        cur.append(op)
        live = [t for t in names[:i + 1] if last.get(t, -1) > i]
        held = any(first[t] <= i < last[t] for t in net.inputs if t in first)
        if (len(live) <= 1 and not held) or i == len(net.ops) - 1:
            out.append((entry, cur))
            entry, cur = (live[0] if live else None), []
    return out


def choose(net: Network, seconds: dict) -> tuple[Choice, float]:
    """The fastest plan of ``net`` from per-layer times (``seconds[time_key(lp)]``):
    (Choice of the dynamic program -- its ``configs`` the plan's configuration of every
    layer --, best-of lower bound in seconds). A time the table lacks is an error naming
    the layer."""
    from .oracle import segmented
    net.check_connected()
    dims = {op.name: op.out_shape() for op in net.ops}

    def price(lp):
        # a configuration without a time (its kernel cannot launch at this size) is one
        # the search passes over
        return seconds.get(time_key(lp), float("inf"))

    segs = segments(net)
    options = []
    for _, ops in segs:
        names = [op.name for op in ops if op.kind in ("conv2d", "gemm")]
        choices = [CONFIGS if op.kind == "conv2d" else FC_ALGORITHMS
                   for op in ops if op.kind in ("conv2d", "gemm")]
        options.append([tuple(zip(names, combo)) for combo in itertools.product(*choices)])

    def cost(i, state, choice):
        entry, ops = segs[i]
        # the inputs arrive in INPUT_LAYOUT (expand's default); a layer's output in the
        # layout the segment before left it
        live = i > 0 and entry is not None
        layers = expand(net, dict(choice), ops=ops, layouts={entry: state} if live else None,
                        dims={entry: dims[entry]} if live else None)
        total = sum(price(lp) for lp in layers)
        switch = sum(price(lp) for lp in layers if lp.algorithm == "transform")
        return total, switch, layers[-1].out_layout

    pick = segmented(options, INPUT_LAYOUT, cost)
    configs = {name: cfg for seg in pick.configs for name, cfg in seg}
    # best-of: every layer at its fastest, switching ignored
    best = {}
    for k, v in seconds.items():
        if k[0] == "transform":
            continue
        who = k[:2]
        best[who] = min(best.get(who, float("inf")), v)
    return dataclasses.replace(pick, configs=configs), sum(best.values())


def plan_seconds(net: Network, configs: dict, seconds: dict) -> float | None:
    """A plan's total from per-layer times (the oracle's own pricing); None where a layer
    has no time (its kernel cannot launch)."""
    keys = [time_key(lp) for lp in expand(net, configs)]
    return None if any(k not in seconds for k in keys) else sum(seconds[k] for k in keys)


@dataclass(frozen=True)
class OracleReport:
    """What ``oracle`` found: the layer configurations and transforms it predicted (those
    that cannot launch left out, with why), their rows, and per predictor the dynamic
    program's pick, its transforms' share, the best-of bound and each uniform plan's
    total; the plan picked from ``picked_by``'s predictions (``configs``). A run Ctrl-C
    stopped (``outcome.interrupted``) picked nothing."""

    layers: tuple
    refused: tuple                 # (LayerPlan, why) it could not launch
    outcome: object                # the map_tasks Outcome of the layers' predictions
    picks: dict                    # predictor -> {seconds, switch_seconds, best_of_seconds,
    #                                 uniform_seconds, configs (layer -> config name)}
    choices: dict                  # predictor -> the dynamic program's Choice
    picked_by: str
    configs: dict                  # the picked plan: layer -> configuration

    def rows(self) -> list:
        """A row per predicted layer, with its time key (of a stopped run, the layers
        whose prediction finished)."""
        return [{**r, "key": " ".join(map(str, time_key(lp)))}
                for lp, r in zip(self.layers, self.outcome.results) if r is not None]


def oracle(hw: SIMTGPU, net: Network, mode: str = "sampled", l2: str = "cold",
           workers: int | None = None, scheduler: str | None = None) -> OracleReport:
    """Every layer of ``net`` predicted in each configuration and every transform, then
    per predictor the best-of bound and the dynamic program's plan; the plan picked from
    the engine's predictions (the analytic model's with ``mode='analytic'``)."""
    by = "engine" if mode != "analytic" else "analytic"
    wanted = oracle_layers(net)
    try:
        layers, refused = launchable(hw, wanted)
    except KeyboardInterrupt:       # stopped before the first prediction
        from simulator.parallel import Outcome
        return OracleReport(tuple(wanted), (), Outcome([None] * len(wanted), 0, True, 0.0), {}, {}, by, {})
    out, _ = predict_plan(hw, layers, mode, l2, workers, scheduler)
    if out.interrupted:
        return OracleReport(tuple(layers), tuple(refused), out, {}, {}, by, {})
    picks, choices = {}, {}
    try:
        for p in PREDICTORS:
            if p == "engine" and mode == "analytic":
                continue
            sec = {time_key(lp): r[f"{p}_seconds"] for lp, r in zip(layers, out.results)}
            choice, best = choose(net, sec)
            choices[p] = choice
            picks[p] = {"seconds": choice.seconds, "switch_seconds": choice.switch_seconds,
                        "best_of_seconds": best,
                        "uniform_seconds": {u: plan_seconds(net, uniform_configs(net, u), sec)
                                            for u in UNIFORM},
                        "configs": {k: config_name(v) for k, v in choice.configs.items()}}
    except KeyboardInterrupt:
        # stopped in the search: every prediction finished, no plan picked
        return OracleReport(tuple(layers), tuple(refused), dataclasses.replace(out, interrupted=True),
                            {}, {}, by, {})
    return OracleReport(tuple(layers), tuple(refused), out, picks, choices, by,
                        configs_from_names(picks[by]["configs"]))


def systolic_layers(hw: Hardware, net: Network) -> tuple:
    """The network's convolutions and FC on systolic preset ``hw`` (its own dataflow, the
    default engine mode): ({layer: seconds}, whether the stalls came from the closed form
    -- a small array's many folds are too many for the pipeline model)."""
    from simulator.systolic.engine import TooManyFoldsError, simulate_network
    if getattr(hw, "family", None) != "systolic":
        raise ValueError(f"vs={show(hw.name)}: not a systolic array (e.g. tpu-v1, systolic-8x8)")
    dataflow = getattr(hw, "dataflow", "ws")
    try:
        res, closed = simulate_network(hw, net, dataflow), False
    except TooManyFoldsError:
        res, closed = simulate_network(hw, net, dataflow, stalls="closed-form"), True
    return {lr.workload: lr.seconds for lr in res.layers}, closed

"""Eager PyTorch against its compilers, end to end and per layer, and the per-layer
oracle choosing between them (the 2024 PyTorch-compiler thesis's experiment; the 2021
abstraction-cost paper's PyTorch / TorchScript comparison).

Where PyTorch and torchvision are importable with a CUDA GPU (they are never
dependencies of roofsim; without them ``roofsim measure compiled`` refuses in one line,
exit 2, and writes nothing). A torchvision model (random weights, seeded, ``eval()``,
``torch.no_grad()``, PyTorch's default settings: cuDNN may use TF32, matrix products
do not, cuDNN's autotuner off, NCHW) runs in four configurations:

* ``eager``: the model as it is (cuDNN / cuBLAS kernels);
* ``torchscript``: ``torch.jit.freeze(torch.jit.trace(model, x))`` (frozen: batch norm
  folded into the convolutions, as ``torch.jit.optimize_for_inference`` does);
* ``inductor``: ``torch.compile(model, dynamic=False)`` (its default mode: Triton
  kernels);
* ``inductor-max-autotune``: ``torch.compile(model, mode="max-autotune",
  dynamic=False)`` (kernels chosen by benchmarking, CUDA graphs).

Shapes are static, as a user compiling one model for one batch gets: ``dynamic=False``,
and dynamo's caches reset before each model and batch. Left to PyTorch's default
(``dynamic=None``), the second shape one code object sees is compiled for any shape
(automatic dynamic shapes): every bottleneck block after the first of another size
(they share one ``forward``) and every batch after the first would get kernels compiled
for symbolic sizes. The runs before this was set measured that (their provenance has
no ``compile`` entry); ``simulator.analysis.compiled.load`` prefers a static run.

Each is built twice: the whole model, and the model cut into a chain of units (ResNet's
stem, its 16 bottleneck blocks and its head; MobileNetV2's 19 feature stages and its
head), each unit in each configuration on its own -- the granularity at which a
forward may switch between eager and compiled. A switch costs what crossing it costs
(a CUDA graph copies an input it does not own into its own buffers; the compiled
wrapper's guards run on the host).

Timing, with CUDA events (``torch.cuda._sleep`` is the spin kernel a queued forward
waits behind, sized from the host's measured time to issue it):

* ``end_to_end``: events around ``forward(x)`` as the host issues it (its launch
  latency included, as a user timing ``model(x)`` sees it), repeated;
* ``queued``: the same forward queued behind the spin, so the events time the GPU
  running it back to back (a sample whose issue outlasted the spin is taken again once;
  those that stay so are counted in ``host_bound_samples``);
* ``per_layer``: an event before each unit and after the last, in a queued forward of
  the chain, each unit's median over the repetitions;
* ``subtraction``: the chain's first i units queued, for every i; unit i's time the
  difference of consecutive prefixes' medians;
* ``isolated``: each unit alone on its own (eager-computed) input, queued; and each
  boundary's pair of units in every two different configurations, so that a switch's
  cost is the pair's time less its two units' isolated times.

The oracle (``simulator.analysis.oracle.dynamic_program``) picks per unit the
configuration from the per-layer (and, separately, the subtraction) times, charging
each switch its measured cost (a cost measured below zero is noise and charged 0; the
raw figure is kept); the plan it picks is then built and measured end to end like the
others. ``simulator.analysis.compiled`` reads the file: the regret of each pick against
the best forward measured.
"""
from __future__ import annotations

import datetime
import platform
import statistics
import sys
import time

from .framework import NoFramework

MODELS = ("resnet50", "mobilenet_v2")
CONFIGS = ("eager", "torchscript", "inductor", "inductor-max-autotune")
MAX_REL_ERROR = 5e-2       # against eager fp32 logits: TF32 convolutions on either side
SCHEMA_VERSION = 1


def _torch():
    try:
        import torch
        import torchvision
    except Exception as e:  # noqa: BLE001 -- any import failure means no framework here
        raise NoFramework(f"compiled: PyTorch is not importable here ({type(e).__name__}: "
                          f"{str(e)[:80]}); the compiled suite needs PyTorch and torchvision "
                          "with a CUDA GPU") from None
    if not torch.cuda.is_available():
        raise NoFramework("compiled: PyTorch sees no CUDA GPU here; the compiled suite needs one")
    return torch, torchvision


def check_models(models) -> list:
    """The model names, each one of MODELS (ValueError naming the one that is not)."""
    out = []
    for m in models:
        if m not in MODELS:
            raise ValueError(f"model {m!r}: the compiled suite runs {', '.join(MODELS)}")
        out.append(m)
    return out


def units(torch, model, name):
    """``[(unit name, module)]``: the model as a chain (each unit reads the one before)."""
    nn = torch.nn
    if name == "resnet50":
        us = [("stem", nn.Sequential(model.conv1, model.bn1, model.relu, model.maxpool))]
        for layer in ("layer1", "layer2", "layer3", "layer4"):
            us += [(f"{layer}.{i}", blk) for i, blk in enumerate(getattr(model, layer))]
        us.append(("head", nn.Sequential(model.avgpool, nn.Flatten(1), model.fc)))
    elif name == "mobilenet_v2":
        us = [(f"features.{i}", m) for i, m in enumerate(model.features)]
        us.append(("head", nn.Sequential(nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(1),
                                         model.classifier)))
    else:
        raise ValueError(f"model {name!r}: one of {', '.join(MODELS)}")
    return us


# --- timing ------------------------------------------------------------------------------

class Clock:
    """CUDA-event timings of a callable, as issued and queued behind a spin."""

    def __init__(self, torch, reps):
        self.torch, self.reps = torch, reps
        cu = torch.cuda
        cu.synchronize()
        s, e = cu.Event(enable_timing=True), cu.Event(enable_timing=True)
        n = 20_000_000
        cu._sleep(1000)
        s.record()
        cu._sleep(n)
        e.record()
        e.synchronize()
        self.s_per_cycle = s.elapsed_time(e) / 1e3 / n

    def sync(self):
        self.torch.cuda.synchronize()

    def _ev(self):
        return self.torch.cuda.Event(enable_timing=True)

    def issued(self, f):
        """Seconds of ``f()`` as the host issues it: events around it, repeated."""
        out = []
        for _ in range(self.reps):
            self.torch.cuda.synchronize()
            s, e = self._ev(), self._ev()
            s.record()
            f()
            e.record()
            e.synchronize()
            out.append(s.elapsed_time(e) / 1e3)
        return _summary(out)

    def _spin_for(self, f):
        self.torch.cuda.synchronize()
        t0 = time.perf_counter()
        f()
        host = time.perf_counter() - t0
        self.torch.cuda.synchronize()
        return 2.0 * host + 300e-6

    def marks(self, steps, spin_s=None):
        """One queued run of ``steps`` (callables, in order) with an event before the
        first and after each: (seconds per step, whole, host issue seconds)."""
        cu = self.torch.cuda
        ev = [self._ev() for _ in range(len(steps) + 1)]
        cu.synchronize()
        cu._sleep(int(spin_s / self.s_per_cycle))
        t0 = time.perf_counter()
        ev[0].record()
        for i, st in enumerate(steps):
            st()
            ev[i + 1].record()
        host = time.perf_counter() - t0
        ev[-1].synchronize()
        per = [ev[i].elapsed_time(ev[i + 1]) / 1e3 for i in range(len(steps))]
        return per, ev[0].elapsed_time(ev[-1]) / 1e3, host

    def queued(self, steps):
        """Medians over the repetitions of a queued run of ``steps``: per step, whole,
        and how many samples stayed host-bound (issued slower than the spin lasted, taken
        again once)."""
        for _ in range(2):                      # warm: CUDA graphs record on a later call
            for st in steps:
                st()
        spin = self._spin_for(lambda: [st() for st in steps])
        pers, wholes, bound = [], [], 0
        for _ in range(self.reps):
            per, whole, host = self.marks(steps, spin)
            if host > 0.9 * spin:
                per, whole, host = self.marks(steps, 2 * host + 300e-6)
                bound += host > 0.9 * (2 * host + 300e-6)
            pers.append(per)
            wholes.append(whole)
        med = [statistics.median(p[i] for p in pers) for i in range(len(steps))]
        return med, _summary(wholes, host_bound_samples=bound)


def _summary(samples, **extra):
    return {"median_s": statistics.median(samples), "min_s": min(samples), "max_s": max(samples),
            "samples_s": samples, **extra}


# --- the suite ---------------------------------------------------------------------------

def _provenance(torch, tv, command):
    from .harness import nvidia_smi
    p = torch.cuda.get_device_properties(0)
    smi = nvidia_smi("name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,"
               "power.limit,temperature.gpu,persistence_mode")
    keys = ("name", "driver_version", "clock_sm_mhz", "clock_max_sm_mhz", "clock_mem_mhz",
            "clock_max_mem_mhz", "power_limit_w", "temperature_c", "persistence_mode")
    try:
        import triton
        triton_v = triton.__version__
    except Exception:  # noqa: BLE001 -- provenance is best effort
        triton_v = None
    return {"device": torch.cuda.get_device_name(0), "compute_capability": f"{p.major}.{p.minor}",
            "multiprocessor_count": p.multi_processor_count,
            "nvidia_smi": dict(zip(keys, smi)) if smi else None,
            "torch": torch.__version__, "torchvision": tv.__version__, "triton": triton_v,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
            "settings": {"cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
                         "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                         "cudnn.benchmark": torch.backends.cudnn.benchmark,
                         "float32_matmul_precision": torch.get_float32_matmul_precision(),
                         "memory_format": "nchw", "grad": "torch.no_grad()"},
            "python": sys.version.split()[0], "host": platform.node(),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "command": command}


def _build(torch, module, config, x):
    if config == "eager":
        return module
    if config == "torchscript":
        return torch.jit.freeze(torch.jit.trace(module.eval(), x))
    if config == "inductor":
        return torch.compile(module, dynamic=False)
    if config == "inductor-max-autotune":
        return torch.compile(module, mode="max-autotune", dynamic=False)
    raise ValueError(f"configuration {config!r}: one of {', '.join(CONFIGS)}")


def _step(torch):
    """A new forward begins: CUDA graphs may reuse the buffers of the one before."""
    if hasattr(torch, "compiler") and hasattr(torch.compiler, "cudagraph_mark_step_begin"):
        torch.compiler.cudagraph_mark_step_begin()


def _call(torch, fn, x):
    _step(torch)
    return fn(x)


def _rel(y, ref):
    d = (y.float() - ref.float()).abs().max().item()
    return d / max(ref.float().abs().max().item(), 1e-30)


def _template_backends(torch, backends):
    """Which kernels max-autotune may choose a convolution's and a matrix product's from:
    ``"ATEN"`` (cuDNN / cuBLAS, the Triton templates not tried) or Inductor's default.
    On the H100 here autotuning the Triton templates took 10-80 s a convolution shape
    (about 20 shapes a batch in ResNet-50), past a measuring session's device time."""
    if backends:
        cfg = torch._inductor.config
        cfg.max_autotune_gemm_backends = backends
        cfg.max_autotune_conv_backends = backends
    cfg = torch._inductor.config
    return {"max_autotune_gemm_backends": cfg.max_autotune_gemm_backends,
            "max_autotune_conv_backends": cfg.max_autotune_conv_backends}


def _dynamo_limits(torch):
    """A unit's forward is one code object shared by every block of its class: raise
    dynamo's per-code recompile limits so that no block falls back to eager, and make
    hitting them an error rather than a silent fallback."""
    cfg = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(cfg, name):
            setattr(cfg, name, 1024)
    for name in ("accumulated_recompile_limit", "accumulated_cache_size_limit"):
        if hasattr(cfg, name):
            setattr(cfg, name, 8192)
    if hasattr(cfg, "fail_on_recompile_limit_hit"):
        cfg.fail_on_recompile_limit_hit = True


def run_compiled(models=MODELS, batches=(1, 8, 32), reps=10, seed=0, deadline_s=None,
                 command=None, on_record=None, configs=CONFIGS, device="cuda",
                 clock=None, image=224, template_backends="ATEN", say=None) -> dict:
    """Each model at each batch: the whole model in each configuration, the chain of
    units per configuration, switches, the oracle's picks measured. ``on_record(data)``
    after each (model, batch) finishes (so that a deadline or Ctrl-C keeps them)."""
    models = check_models(models)
    if device == "cuda":
        torch, tv = _torch()
    else:                                   # a CPU run: only to try the suite's logic
        import torch
        import torchvision as tv
    _dynamo_limits(torch)
    inductor = _template_backends(torch, template_backends)
    from simulator.analysis.oracle import best_of, dynamic_program
    t_start = time.time()
    data = {"suite": "compiled", "schema_version": SCHEMA_VERSION,
            "provenance": _provenance(torch, tv, command) if device == "cuda" else
            {"device": device, "command": command}, "configs": list(configs),
            "reps": reps, "records": [], "skipped": []}
    clock = clock or Clock(torch, reps)
    data["provenance"]["spin_s_per_cycle"] = clock.s_per_cycle
    data["provenance"]["inductor"] = inductor
    data["provenance"]["compile"] = {"dynamic": False,
                                     "dynamo_reset": "before each model and batch"}

    def late():
        return deadline_s is not None and time.time() - t_start > deadline_s

    for b in batches:                   # every model at a batch before the next batch
        for name in models:
            if late():
                data["skipped"].append(f"{name} batch {b}: past the deadline")
                continue
            rec = _one(torch, tv, name, b, clock, seed, configs, best_of, dynamic_program, late,
                       device, image, say or (lambda m: None))
            data["records"].append(rec)
            data["wall_seconds"] = time.time() - t_start
            if on_record:
                on_record(data)
    data["wall_seconds"] = time.time() - t_start
    return data


def _one(torch, tv, name, b, clock, seed, configs, best_of, dynamic_program, late, device,
         image, say):
    t0 = time.time()
    torch._dynamo.reset()               # nothing compiled for another model or batch is reused
    torch.manual_seed(seed)
    model = getattr(tv.models, name)(weights=None).to(device).eval()
    x = torch.randn(b, 3, image, image, device=device)
    us = units(torch, model, name)
    n = len(us)
    rec = {"model": f"torchvision.models.{name}", "batch": b, "units": [u for u, _ in us],
           "compile_seconds": {"whole": {}, "units": {}}, "whole": {}, "chains": {},
           "isolated": {}, "pairs": {}, "plans": {}, "incomplete": []}
    with torch.no_grad():
        ref = model(x)
        acts = [x]
        for _, m in us:
            acts.append(m(acts[-1]))
        rec["chain_vs_model_rel_error"] = _rel(acts[-1], ref)
        # the whole model, each configuration
        for c in configs:
            tc = time.time()
            fn = _build(torch, model, c, x)
            for _ in range(3):
                y = _call(torch, fn, x)
            clock.sync()
            rec["compile_seconds"]["whole"][c] = time.time() - tc
            say(f"{name} b{b}: whole model, {c}: built in {time.time() - tc:.1f} s")
            err = _rel(y, ref)
            _, q = clock.queued([lambda: _call(torch, fn, x)])
            rec["whole"][c] = {"end_to_end": clock.issued(lambda: _call(torch, fn, x)),
                               "queued": q, "rel_error": err, "ok": err < MAX_REL_ERROR}
            fn = None                      # the compiled model goes before the next is built
        # each unit, each configuration
        mods = {}
        for c in configs:
            tc = time.time()
            mods[c] = [_build(torch, m, c, acts[i]) for i, (_, m) in enumerate(us)]
            for _ in range(3):
                _step(torch)
                for i in range(n):
                    y = mods[c][i](acts[i])
            clock.sync()
            rec["compile_seconds"]["units"][c] = time.time() - tc
            say(f"{name} b{b}: {n} units, {c}: built in {time.time() - tc:.1f} s")

        def chain(plan):
            def steps():
                box = [x]

                def step(i):
                    if i == 0:
                        return lambda: box.__setitem__(0, _call(torch, mods[plan[0]][0], x))
                    return lambda: box.__setitem__(0, mods[plan[i]][i](box[0]))
                return [step(i) for i in range(n)], box
            return steps

        def measure_chain(plan):
            st, box = chain(plan)()
            per, q = clock.queued(st)
            err = _rel(box[0], ref)
            e2e = clock.issued(lambda: [s() for s in st])
            return {"end_to_end": e2e, "queued": q, "per_layer": per, "rel_error": err,
                    "ok": err < MAX_REL_ERROR}

        for c in configs:
            r = measure_chain([c] * n)
            st, box = chain([c] * n)()
            prefix = []
            for k in range(1, n + 1):
                _, qk = clock.queued(st[:k])
                prefix.append(qk["median_s"])
            r["subtraction"] = [prefix[0]] + [prefix[k] - prefix[k - 1] for k in range(1, n)]
            r["prefix_s"] = prefix
            rec["chains"][c] = r
            say(f"{name} b{b}: chain {c} timed")
            rec["isolated"][c] = [clock.queued([lambda i=i: _call(torch, mods[c][i], acts[i])])[1]
                                  ["median_s"] for i in range(n)]
        if late():
            rec["incomplete"].append("switch costs and the oracle's plans: past the deadline")
            rec["wall_seconds"] = time.time() - t0
            return rec
        for a in configs:
            for c in configs:
                if a != c:
                    rec["pairs"][f"{a}>{c}"] = [None] + [
                        _pair(torch, clock, mods[a][i - 1], mods[c][i], acts[i - 1])
                        for i in range(1, n)]
        say(f"{name} b{b}: switches timed")
        switch = {k: [None] + [v[i] - rec["isolated"][k.split(">")[0]][i - 1]
                               - rec["isolated"][k.split(">")[1]][i] for i in range(1, n)]
                  for k, v in rec["pairs"].items()}
        rec["switch_s"] = switch
        for method in ("per_layer", "subtraction"):
            times = {c: [max(0.0, t) for t in rec["chains"][c][method]] for c in configs}
            dp = dynamic_program(times, lambda a, c, i: max(0.0, switch[f"{a}>{c}"][i]))
            bo = best_of(times)
            rec["plans"][f"best_of-{method}"] = {"configs": list(bo.configs),
                                                 "predicted_s": bo.seconds}
            plan = list(dp.configs)
            same = next((f"chain-{c}" for c in configs if plan == [c] * n), None) or next(
                (k for k, p in rec["plans"].items() if p.get("configs") == plan
                 and "end_to_end" in p), None)
            entry = {"configs": plan, "predicted_s": dp.seconds, "switch_s": dp.switch_seconds}
            if same:
                entry["same_as"] = same
            else:
                entry.update(measure_chain(plan))
            rec["plans"][f"dp-{method}"] = entry
    rec["wall_seconds"] = time.time() - t0
    return rec


def _pair(torch, clock, first, second, x):
    box = [x]

    def one():
        box[0] = _call(torch, first, x)

    def two():
        second(box[0])
    return clock.queued([one, two])[1]["median_s"]

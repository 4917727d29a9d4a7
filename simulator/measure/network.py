"""A whole network's forward pass on a real GPU as roofsim's numba.cuda kernels, checked
against a numpy forward pass and timed three ways (the 2024 PyTorch-compiler thesis's,
docs/sources.md, "Timing methods and the per-layer oracle").

The network runs under a plan (``simulator.analysis.plan``): every layer's kernel in its
layout, the layout transforms the plan implies in between. Weights and inputs are
random (seeded): each convolution's weights He-scaled, each batch norm's gamma, beta,
running mean and variance drawn; the batch norm's scale is folded into the
convolution's weights on the host and its shift run by the ``batchnorm`` kernel, as the
IR states. The numpy reference runs the unfolded network (convolution, then batch norm
with its four parameters, ReLU, residual add, pools, FC) in float64, NCHW, and the
GPU's logits are compared with it.

Timing methods, each on the same device buffers:

* ``end_to_end``: CUDA events around the whole forward pass as the host issues it (the
  host's launch latency in the gaps between kernels included, as a user timing
  ``model(x)`` sees it), repeated; and ``end_to_end_queued``: the same forward queued
  behind a spin kernel (``harness.hidden_per_launch``'s method), so the events time the
  GPU running the kernels back to back;
* ``per_layer``: an event recorded before each layer and after the last, in one queued
  forward; each layer's time the difference of its two events, the median over the
  repetitions;
* ``subtraction``: the network cut after layer i (its first i layers, queued) timed end
  to end for every i; layer i's time the cut after i less the cut after i - 1 (medians).
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from simulator.arguments import show

from . import harness

BN_EPS = 1e-5
MAX_REL_ERROR = 1e-3        # the logits against numpy's float64 forward (float32 sums)


# --- weights ------------------------------------------------------------------------------

def random_weights(net, seed: int = 0) -> dict:
    """Per convolution (NCHW, K C R S) He-scaled weights and its batch norm's gamma,
    beta, mean and variance; the FC's weight (classes x features) and bias."""
    rng = np.random.default_rng(seed)
    w = {}
    for op in net.ops:
        if op.kind == "conv2d":
            fan = op.C * op.R * op.S
            w[op.name] = {
                "w": (rng.standard_normal((op.K, op.C, op.R, op.S)) * np.sqrt(2.0 / fan)).astype(np.float32),
                "gamma": rng.uniform(0.5, 1.0, op.K).astype(np.float32),
                "beta": (0.1 * rng.standard_normal(op.K)).astype(np.float32),
                "mean": (0.1 * rng.standard_normal(op.K)).astype(np.float32),
                "var": rng.uniform(0.5, 1.5, op.K).astype(np.float32)}
        elif op.kind == "gemm":
            w[op.name] = {"w": (rng.standard_normal((op.N, op.K)) / np.sqrt(op.K)).astype(np.float32),
                          "bias": (0.01 * rng.standard_normal(op.N)).astype(np.float32)}
    return w


def _scale_shift(p):
    scale = p["gamma"].astype(np.float64) / np.sqrt(p["var"].astype(np.float64) + BN_EPS)
    return scale, p["beta"].astype(np.float64) - p["mean"].astype(np.float64) * scale


def folded(net, weights) -> dict:
    """The folded parameters the kernels read: each convolution's weights times its
    batch norm's scale (float32, NCHW K C R S); each batch-norm layer's shift (its
    convolution's, plus the projection shortcut's where it adds one); the FC's."""
    out = {}
    for op in net.ops:
        if op.kind == "conv2d":
            scale, _ = _scale_shift(weights[op.name])
            out[op.name] = (weights[op.name]["w"].astype(np.float64)
                            * scale[:, None, None, None]).astype(np.float32)
        elif op.kind == "gemm":
            out[op.name] = np.ascontiguousarray(weights[op.name]["w"].T)     # K x N for C = A B
        elif op.kind == "batchnorm":
            ins = net.inputs_of(op.name)
            if ins[0] in weights and "bias" in weights[ins[0]]:             # the FC's bias
                out[op.name] = weights[ins[0]]["bias"]
                continue
            shift = _scale_shift(weights[ins[0]])[1]
            if op.residual and ins[1] in weights:                          # a projection shortcut
                shift = shift + _scale_shift(weights[ins[1]])[1]
            out[op.name] = shift.astype(np.float32)
    return out


# --- the numpy reference ------------------------------------------------------------------

def _conv_nchw(x, w, stride, pad):
    from numpy.lib.stride_tricks import sliding_window_view
    K, C, R, S = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = sliding_window_view(xp, (R, S), axis=(2, 3))[:, :, ::stride, ::stride]   # N C P Q R S
    return np.einsum("ncpqrs,kcrs->nkpq", win, w, optimize=True)


def _pool_nchw(x, op):
    from numpy.lib.stride_tricks import sliding_window_view
    pad = op.padding
    fill = -np.inf if op.mode == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    win = sliding_window_view(xp, (op.R, op.S), axis=(2, 3))[:, :, ::op.stride, ::op.stride]
    if op.mode == "max":
        return win.max(axis=(4, 5))
    if pad:
        raise ValueError(f"layer {op.name}: the reference averages unpadded windows only")
    return win.mean(axis=(4, 5))


def reference_forward(net, weights, x):
    """The unfolded network in float64, NCHW: logits (batch x classes)."""
    t = {"input": x.astype(np.float64)}
    for op in net.ops:
        ins = [t[n] for n in net.inputs_of(op.name)]
        if op.kind == "conv2d":
            t[op.name] = _conv_nchw(ins[0], weights[op.name]["w"].astype(np.float64), op.stride,
                                    op.padding)
        elif op.kind == "batchnorm":
            src = net.inputs_of(op.name)[0]
            if "bias" in weights.get(src, {}):
                y = ins[0] + weights[src]["bias"].astype(np.float64)[None, :, None, None]
            else:
                scale, shift = _scale_shift(weights[src])
                y = ins[0] * scale[None, :, None, None] + shift[None, :, None, None]
            if op.residual:
                r = ins[1]
                sc = net.inputs_of(op.name)[1]
                if sc in weights:           # the projection shortcut's own batch norm
                    scale, shift = _scale_shift(weights[sc])
                    r = r * scale[None, :, None, None] + shift[None, :, None, None]
                y = y + r
            t[op.name] = np.maximum(y, 0.0) if op.relu else y
        elif op.kind == "pool2d":
            t[op.name] = _pool_nchw(ins[0], op)
        elif op.kind == "gemm":
            a = ins[0].reshape(op.M, op.K)
            t[op.name] = (a @ weights[op.name]["w"].astype(np.float64).T)[:, :, None, None]
        else:
            raise ValueError(f"layer {op.name}: {op.kind} has no reference")
    return t[net.ops[-1].name].reshape(net.ops[-1].N, -1)


# --- the forward pass on the GPU ----------------------------------------------------------

class Forward:
    """The plan's layers bound to device buffers: ``launch(i, stream)`` enqueues layer i
    (a convolution by im2col enqueues its two kernels)."""

    def __init__(self, c, net, layers, params):
        from simulator.analysis.plan import input_dims, kernel_args
        from simulator.simt.kernels import REGISTRY
        self.net, self.layers, self.c = net, layers, c
        self.tensors = {}
        self.calls = []
        self.tensors["input"] = c.device_array(int(np.prod(input_dims(net))), np.float32)
        scratch = max([lp.op.N * lp.op.P * lp.op.Q * lp.op.C * lp.op.R * lp.op.S
                       for lp in layers if lp.kernel == "conv-im2col"] or [1])
        self.col = c.device_array(scratch, np.float32)
        for lp in layers:
            spec = REGISTRY.get(lp.kernel)
            prob = spec.problem(**kernel_args(lp))
            dev = spec.device(prob)
            arrays = self._bind(lp, dev, params)
            self.calls.append((lp.op.name, dev.launch, arrays))

    def _new(self, name, elements):
        a = self.c.device_array(int(elements), np.float32)
        self.tensors[name] = a
        return a

    def _bind(self, lp, dev, params):
        op, c = lp.op, self.c
        ins = [self.tensors[t] for t in lp.inputs]
        if lp.kernel == "conv-direct":
            wc = params[op.name]
            w = wc if op.layout == "nchw" else np.ascontiguousarray(wc.transpose(2, 3, 1, 0))
            y = self._new(op.name, op.N * op.K * op.P * op.Q)
            return {"x": ins[0].reshape(op.operands()[0].shape), "w": c.to_device(w),
                    "y": y.reshape(op.operands()[2].shape)}
        if lp.kernel == "conv-im2col":
            wc = params[op.name]
            Kc = op.C * op.R * op.S
            wmat = wc.reshape(op.K, Kc).T if op.layout == "nchw" else \
                wc.transpose(2, 3, 1, 0).reshape(Kc, op.K)
            M = op.N * op.P * op.Q
            y = self._new(op.name, M * op.K)
            return {"x": ins[0].reshape(op.operands()[0].shape),
                    "col": self.col[:M * Kc].reshape(M, Kc),
                    "wmat": c.to_device(np.ascontiguousarray(wmat)), "y": y.reshape(M, op.K)}
        if lp.kernel == "batchnorm":
            y = self._new(op.name, op.elements)
            d = {"x": ins[0], "b": c.to_device(params[op.name]), "y": y}
            if op.residual:
                d["r"] = ins[1]
            return d
        if lp.kernel == "pool2d":
            return {"x": ins[0], "y": self._new(op.name, op.N * op.C * op.P * op.Q)}
        if lp.kernel == "layout-transform":
            return {"x": ins[0], "y": self._new(op.name, op.N * op.C * op.H * op.W)}
        if lp.kernel in ("gemm-naive", "gemm-tiled"):
            y = self._new(op.name, op.M * op.N)
            return {"A": ins[0].reshape(op.M, op.K), "B": c.to_device(params[op.name]),
                    "C": y.reshape(op.M, op.N)}
        raise ValueError(f"layer {op.name}: kernel {lp.kernel} has no binding")

    def launch(self, i, stream=0):
        name, go, arrays = self.calls[i]
        go(arrays, stream)

    def launches(self, upto: int) -> int:
        """Kernel launches of the first ``upto`` layers (im2col: two a layer)."""
        return sum(2 if self.layers[i].kernel == "conv-im2col" else 1 for i in range(upto))

    def run(self, upto=None):
        for i in range(len(self.calls) if upto is None else upto):
            self.launch(i)

    def logits(self):
        last = self.net.ops[-1]
        return self.tensors[last.name].copy_to_host().reshape(last.N, -1)


def _spin_us(launches: int, host_per_launch_s: float = 100e-6) -> int:
    """How long the spin kernel must keep the GPU busy while the host queues
    ``launches`` launches and events: twice the host's measured time a launch (at least
    100 us), and 2 ms more."""
    return int(launches * max(100.0, 2e6 * host_per_launch_s) + 2000)


def _queued(c, fwd, upto, host_per_launch_s, per_layer=False):
    """One forward (its first ``upto`` layers) queued behind a spin kernel: (seconds of
    the whole, per-layer seconds or None, host bound?: the host's queueing outlasted the
    spin, so the GPU may have waited on it)."""
    from . import micro
    n = upto
    launches = fwd.launches(n) + (n if per_layer else 0)        # events count as launches
    spin = _spin_us(launches, host_per_launch_s)
    evs = [c.event() for _ in range(n + 1)] if per_layer else [c.event(), c.event()]
    micro.spin_kernel[1, 1](spin)
    h0 = time.perf_counter()
    evs[0].record()
    for i in range(n):
        fwd.launch(i)
        if per_layer:
            evs[i + 1].record()
    if not per_layer:
        evs[1].record()
    queued = time.perf_counter() - h0
    evs[-1].synchronize()
    total = c.event_elapsed_time(evs[0], evs[-1]) / 1e3
    layers = ([c.event_elapsed_time(evs[i], evs[i + 1]) / 1e3 for i in range(n)]
              if per_layer else None)
    return total, layers, queued * 1e6 > spin


def _sample(c, fwd, upto, host, per_layer, counts, key):
    """A queued sample, taken again once where the host bound it; ``counts[key]`` counts
    the samples that stayed host bound."""
    for _ in range(2):
        tot, layers, hb = _queued(c, fwd, upto, host, per_layer)
        if not hb:
            break
    counts[key] += int(hb)
    return tot, layers


def measure_plan(c, net, layers, params, x, ref, reps=5, subtraction_budget_s=40.0,
                 label="", log=print) -> dict:
    """One plan's forward: checked against ``ref`` (numpy's logits) and timed the three
    ways (module doc)."""
    from simulator.analysis.plan import describe
    t0 = time.time()
    fwd = Forward(c, net, layers, params)
    fwd.tensors["input"].copy_to_device(x.astype(np.float32).ravel())
    L = len(fwd.calls)
    fwd.run()                                   # JIT and module load
    c.synchronize()
    got = fwd.logits()
    err = harness.rel_error(got, ref)
    ok = bool(np.isfinite(got).all() and err < MAX_REL_ERROR)
    # end to end, as the host issues it; the host's own time to issue the forward
    e2e, issue = [], []
    for _ in range(reps):
        s, e = c.event(), c.event()
        c.synchronize()
        s.record()
        h0 = time.perf_counter()
        fwd.run()
        issue.append(time.perf_counter() - h0)
        e.record()
        e.synchronize()
        e2e.append(c.event_elapsed_time(s, e) / 1e3)
    host = statistics.median(issue) / fwd.launches(L)
    # end to end and per layer, queued
    counts = {"end_to_end_queued": 0, "per_layer": 0, "subtraction": 0}
    q, per = [], []
    for _ in range(reps):
        q.append(_sample(c, fwd, L, host, False, counts, "end_to_end_queued")[0])
        per.append(_sample(c, fwd, L, host, True, counts, "per_layer")[1])
    per_med = [statistics.median(p[i] for p in per) for i in range(L)]
    # layer subtraction: the cut after each layer, as many repetitions as the budget allows
    fwd_s = statistics.median(q)
    sub_reps = max(1, min(reps, int(subtraction_budget_s / max(fwd_s * L / 2, 1e-9))))
    cuts = [0.0]
    for i in range(1, L + 1):
        cuts.append(statistics.median(_sample(c, fwd, i, host, False, counts, "subtraction")[0]
                                      for _ in range(sub_reps)))
    sub = [cuts[i + 1] - cuts[i] for i in range(L)]
    rows = []
    for i, lp in enumerate(fwd.layers):
        rows.append({"layer": lp.op.name, "kernel": lp.kernel, "algorithm": lp.algorithm,
                     "layout": lp.layout, "shape": describe(lp),
                     "per_layer_s": per_med[i], "per_layer_min_s": min(p[i] for p in per),
                     "per_layer_max_s": max(p[i] for p in per),
                     "cut_after_s": cuts[i + 1], "subtraction_s": sub[i]})
    rec = {"rel_error": err, "ok": ok, "layers_run": L, "launches": fwd.launches(L),
           "end_to_end": {"median_s": statistics.median(e2e), "min_s": min(e2e), "max_s": max(e2e),
                          "reps": reps, "samples_s": e2e},
           "host_issue": {"median_s": statistics.median(issue), "min_s": min(issue),
                          "max_s": max(issue), "per_launch_s": host},
           "end_to_end_queued": {"median_s": fwd_s, "min_s": min(q), "max_s": max(q), "reps": reps,
                                 "samples_s": q},
           "per_layer_sum_s": sum(per_med), "subtraction_sum_s": cuts[-1],
           "subtraction_reps": sub_reps, "negative_subtractions": sum(v < 0 for v in sub),
           "host_bound": any(counts.values()), "host_bound_samples": counts,
           "wall_seconds": time.time() - t0, "layers": rows}
    log(f"  {label:<28} {L:4d} layers  e2e {rec['end_to_end']['median_s'] * 1e3:9.3f} ms  "
        f"(host issues in {statistics.median(issue) * 1e3:.3f})  queued {fwd_s * 1e3:9.3f}  "
        f"per-layer sum {sum(per_med) * 1e3:9.3f}  subtraction {cuts[-1] * 1e3:9.3f} "
        f"({sub_reps} rep)  err {err:.1e}  {'ok' if ok else 'FAILED'}  host-bound samples "
        f"{sum(counts.values())}  {time.time() - t0:.1f} s")
    del fwd
    return rec


def measure_transforms(c, net, reps=5) -> list:
    """Every transform a plan of ``net`` may insert (each tensor into each layout), timed
    as the per-layer method times a layer: events around each, queued back to back."""
    from simulator.analysis.plan import all_transforms, describe, kernel_args
    from simulator.simt.kernels import REGISTRY

    from . import micro
    trs = all_transforms(net)
    rng = np.random.default_rng(1)
    calls = []
    for lp in trs:
        spec = REGISTRY.get(lp.kernel)
        dev = spec.device(spec.problem(**kernel_args(lp)))
        op = lp.op
        n = op.N * op.C * op.H * op.W
        arrays = {"x": c.to_device(rng.standard_normal(n, dtype=np.float32)),
                  "y": c.device_array(n, np.float32)}
        calls.append((dev.launch, arrays))
    for go, a in calls:
        go(a)
    c.synchronize()
    samples = []
    for _ in range(reps):
        evs = [c.event() for _ in range(len(calls) + 1)]
        micro.spin_kernel[1, 1](_spin_us(2 * len(calls), 200e-6))
        evs[0].record()
        for i, (go, a) in enumerate(calls):
            go(a)
            evs[i + 1].record()
        evs[-1].synchronize()
        samples.append([c.event_elapsed_time(evs[i], evs[i + 1]) / 1e3 for i in range(len(calls))])
    return [{"layer": lp.op.name, "tensor": lp.inputs[0], "layout": lp.layout,
             "shape": describe(lp), "per_layer_s": statistics.median(s[i] for s in samples)}
            for i, lp in enumerate(trs)]


def measured_seconds(net, plans: dict, transforms: list) -> dict:
    """The oracle's table (``plan.time_key`` -> seconds) from the per-layer times of the
    measured plans and the transforms."""
    from simulator.analysis.plan import time_key
    table = {}
    for layers, rec in plans.values():
        for lp, row in zip(layers, rec["layers"]):
            table.setdefault(time_key(lp), row["per_layer_s"])
    for t in transforms:
        table[("transform", t["tensor"], t["layout"])] = t["per_layer_s"]
    return table


def check_plans(workload, batches, plans):
    """Every plan's launches at every batch, checked before any GPU work: a ValueError
    naming the plan, the batch and the layer whose launch cannot be made."""
    from simulator.analysis import plan as pl
    from simulator.simt.kernels import REGISTRY
    for b in batches:
        net = pl.network(workload, b)
        pl.input_dims(net)          # one input, run end to end (not separate problems)
        for p in plans:
            for name in (pl.UNIFORM if p == "oracle" else (p,)):
                for lp in pl.expand(net, pl.configs_of(net, name)):
                    spec = REGISTRY.get(lp.kernel)
                    try:
                        spec.device(spec.problem(**pl.kernel_args(lp)))
                    except ValueError as e:
                        raise ValueError(f"plan={show(name)} at batch {b}: layer {lp.op.name} "
                                         f"({lp.kernel}): {e}") from None


def run_network(workload="resnet50", batches=(1,), plans=("direct-nchw",), seed=0, reps=5,
                command=None, log=print) -> dict:
    """Measure each plan at each batch (``oracle`` in ``plans``: the plan the dynamic
    program picks from this run's measurements of the uniform plans, measured too)."""
    from simulator.analysis import plan as pl
    c = harness.require_gpu()
    prov = harness.provenance(command)
    t0 = time.time()
    records = []
    for batch in batches:
        # a network's name, or (tests) a function of the batch returning the Network
        net = pl.network(workload, batch) if isinstance(workload, str) else workload(batch)
        workload_name = net.name
        weights = random_weights(net, seed)
        params = folded(net, weights)
        x = np.random.default_rng(seed + 1).standard_normal(pl.input_dims(net)).astype(np.float32)
        tr = time.time()
        ref = reference_forward(net, weights, x)
        log(f"batch {batch}: numpy reference forward in {time.time() - tr:.1f} s")
        measured, base = {}, {"workload": workload_name, "batch": batch, "seed": seed}
        for name in plans:
            if name == "oracle":
                continue
            configs = pl.configs_of(net, name)
            same = next((k for k, (lay, _) in measured.items()
                         if lay == pl.expand(net, configs)), None)
            if same is not None:        # a plan file naming a plan measured already
                records.append({**base, "plan": name, "same_as": same,
                                "configs": {k: pl.config_name(v) for k, v in configs.items()}})
                log(f"  b{batch} {name}: the same layers as {same}; not run again")
                continue
            layers = pl.expand(net, configs)
            rec = measure_plan(c, net, layers, params, x, ref, reps=reps, label=f"b{batch} {name}",
                               log=log)
            measured[name] = (layers, rec)
            records.append({**base, "plan": name,
                            "configs": {k: pl.config_name(v) for k, v in configs.items()}, **rec})
        if "oracle" in plans:
            missing = [u for u in pl.UNIFORM if u not in measured]
            if missing:
                raise ValueError(f"plan='oracle' needs the four uniform plans measured too; "
                                 f"missing {', '.join(missing)}")
            trs = measure_transforms(c, net, reps=reps)
            table = measured_seconds(net, {u: measured[u] for u in pl.UNIFORM}, trs)
            choice, best = pl.choose(net, table)
            layers = pl.expand(net, choice.configs)
            rec = measure_plan(c, net, layers, params, x, ref, reps=reps,
                               label=f"b{batch} oracle (measured)", log=log)
            records.append({**base, "plan": "oracle", "picked_from": "per-layer measurements of "
                            "the four uniform plans and every transform",
                            "predicted_by_oracle_s": choice.seconds,
                            "oracle_switch_s": choice.switch_seconds, "best_of_s": best,
                            "configs": {k: pl.config_name(v) for k, v in choice.configs.items()},
                            "transforms": trs, **rec})
    return {"suite": "network", "schema_version": 1, "provenance": prov,
            "wall_seconds": time.time() - t0, "records": records}

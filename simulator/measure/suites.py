"""The measurement suites: ``micro``, ``grid``, ``gemm``, ``conv``, ``h2d``, ``resources``,
``slices``, ``lines`` and ``kernels`` (users' numba kernels, ``measure.kernels``).

Each suite returns ``{"suite", "provenance", "records": [...]}``. A record names the
kernel and its launch exactly as ``simulator.simt.api.build`` takes them (so the engine
can predict the same launch), with the timing (median, min, max seconds per launch over
back-to-back launches; ``includes_host_launch_latency`` false) and the check against
numpy (``rel_error``; ``ok``).
"""
from __future__ import annotations

import itertools
import time
from typing import TYPE_CHECKING

import numpy as np

from simulator.arguments import show
from simulator.simt.kernels import REGISTRY

from . import harness, micro
from .harness import rotation_sets  # noqa: F401 (suites.rotation_sets: its home was here)

if TYPE_CHECKING:
    import types
    from collections.abc import Sequence

    from simulator.simt.kernels.spec import Device

SUITES = ("micro", "grid", "gemm", "conv", "h2d", "resources", "slices", "lines", "kernels",
          "teaching", "atomics", "atomic_order", "atomic_trace")
SLICE_STRIDES = (1, 2, 3, 4, 8, 16, 32)     # lines between the lines read
LINE_SPREADS = (1, 2, 4, 8, 16, 32)         # lines one warp request touches
RELU_BLOCKS = (64, 128, 256, 512, 1024)
RELU_N = {"beyond_l2": 1 << 26, "in_l2": 1 << 21}     # 2 x 256 MiB; 2 x 8 MiB
GEMM_SQUARE = (256, 512, 1024, 2048, 4096)
GEMM_OTHER = ((1000, 3000, 500), (4096, 256, 1024), (128, 8192, 512))
CONV_BATCHES = (1, 8, 32)
MiB = 1 << 20


def _rng(seed):
    return np.random.default_rng(seed)


def _relu_grids(sms):
    g = {1, 2, 4, 8, 16, sms // 4, sms // 2}
    for k in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        g.update({k * sms, k * sms + 1})        # multiples of the SM count and one past
    return sorted(x for x in g if x >= 1)


# ------------------------------------------------------------------ micro

def run_micro(c: types.ModuleType, seed: int = 0) -> list[dict]:
    dev = c.get_current_device()
    sms = dev.MULTIPROCESSOR_COUNT
    l2 = dev.L2_CACHE_SIZE
    rng = _rng(seed)
    recs = []
    # DRAM copy bandwidth: 1 GiB read + 1 GiB written
    n = 1 << 28
    src = c.to_device(rng.standard_normal(n, dtype=np.float32))
    dst = c.device_array(n, np.float32)
    for blocks_per_sm in (4, 8, 16):
        grid = sms * blocks_per_sm
        t = harness.time_launch(lambda st: micro.copy_kernel[grid, 256, st](src, dst, n), reps=7)
        ok = bool(np.array_equal(dst.copy_to_host()[:: 1 << 16], src.copy_to_host()[:: 1 << 16]))
        recs.append({"name": "dram_copy", "bytes": 8 * n, "grid": grid, "block": 256, **t,
                     "bandwidth_bytes_per_s": 8 * n / t["median_s"], "ok": ok})
    # L2 read bandwidth: a buffer of a quarter of the L2, read 64 times
    n = l2 // 4 // 4
    src = c.to_device(rng.standard_normal(n, dtype=np.float32))
    grid = sms * 8
    out = c.device_array(grid * 256, np.float32)
    passes = 64
    t = harness.time_launch(lambda st: micro.read_kernel[grid, 256, st](src, out, n, passes), reps=7)
    host = src.copy_to_host()
    got = out.copy_to_host()
    ref0 = float(host[0::grid * 256].astype(np.float64).sum()) * passes
    recs.append({"name": "l2_read", "bytes": 4 * n * passes, "buffer_bytes": 4 * n, "grid": grid,
                 "block": 256, **t, "bandwidth_bytes_per_s": 4 * n * passes / t["median_s"],
                 "ok": abs(got[0] - ref0) <= 1e-3 * max(1.0, abs(ref0))})
    # pointer chase: one thread, a random cycle over lines of 128 B. Every timed run starts
    # at a fresh point of the cycle, so a footprint beyond the L2 is not brought into
    # the L2 by the runs before it (a repeated chase over one stretch would measure L2).
    out = c.device_array(1, np.int32)
    for label, size in (("l1", 16 * 1024), ("l2", 8 * MiB), ("dram", 1 << 30)):
        stride = 32                                   # int32 words: 128 B apart
        lines = size // 4 // stride
        order = rng.permutation(lines)
        nxt = np.zeros(lines * stride, np.int32)
        nxt[order * stride] = np.roll(order, -1) * stride
        d = c.to_device(nxt)
        steps = micro.CHASE_STEPS
        fresh = lines >= 16 * steps                   # room for separate stretches
        starts = (int(order[(k * steps) % lines]) * stride for k in range(64)) if fresh \
            else itertools.repeat(0)
        t, t0, lat = _time_chase(d, starts, steps, out)
        j = 0
        for _ in range(steps):
            j = int(nxt[j])
        micro.chase_kernel[1, 1](d, 0, steps, out)
        recs.append({"name": f"latency_{label}", "footprint_bytes": size, "steps": steps,
                     "fresh_start_each_run": fresh, **t, "one_step_s": t0["median_s"],
                     "latency_s": lat, "ok": int(out.copy_to_host()[0]) == j})
    # DRAM latency without TLB misses: the chase steps 2 KiB at a time through 1 GiB
    # (1,024 steps per 2 MiB page), each timed run from a fresh 128 MiB stretch, so every
    # step misses the L2 but not the TLB -- what a kernel streaming through its arrays sees
    stride = 512                                      # int32 words: 2 KiB apart
    words = (1 << 30) // 4
    nxt = ((np.arange(0, words, stride, dtype=np.int64) + stride) % words).astype(np.int32)
    full = np.zeros(words, np.int32)
    full[::stride] = nxt
    d = c.to_device(full)
    steps = micro.CHASE_STEPS
    t, t0, lat = _time_chase(d, ((k * steps * stride) % words for k in range(64)), steps, out)
    micro.chase_kernel[1, 1](d, 0, steps, out)
    recs.append({"name": "latency_dram_stream", "footprint_bytes": 1 << 30, "stride_bytes": 4 * stride,
                 "steps": steps, "fresh_start_each_run": True, **t, "one_step_s": t0["median_s"],
                 "latency_s": lat, "ok": int(out.copy_to_host()[0]) == (steps * stride) % words})
    del d, full
    # FP32 FMA throughput
    grid = sms * 8
    out = c.device_array(grid * 256, np.float32)
    iters = micro.FMA_ITERS
    t = harness.time_launch(lambda st: micro.fma_kernel[grid, 256, st](out, iters), reps=7)
    flops = 2 * 8 * iters * grid * 256
    recs.append({"name": "fp32_fma", "flops": flops, "grid": grid, "block": 256, **t,
                 "flop_per_s": flops / t["median_s"], "ok": bool(np.isfinite(out.copy_to_host()).all())})
    # shared-memory bandwidth
    for block in (256, 1024):
        grid = sms * (2048 // block)
        out = c.device_array(grid * block, np.float32)
        iters = micro.SHARED_ITERS
        t = harness.time_launch(lambda st: micro.shared_kernel[grid, block, st](out, iters), reps=7)
        b = 4 * iters * grid * block
        recs.append({"name": "shared_read", "block": block, "grid": grid, "bytes": b, **t,
                     "bandwidth_bytes_per_s": b / t["median_s"],
                     "ok": bool(np.isfinite(out.copy_to_host()).all())})
    # launch cost and block launch rate
    out = c.device_array(1, np.float32)
    one = harness.per_launch(lambda: micro.empty_kernel[1, 32](out), reps=7)
    host = harness.single_launch(lambda: micro.empty_kernel[1, 32](out), reps=15)
    recs.append({"name": "launch_back_to_back", **one, "ok": True,
                 "note": "numba launches from Python, back to back: host-bound"})
    recs.append({"name": "launch_single_between_events", **host, "ok": True})
    gpu = harness.hidden_per_launch(lambda: micro.empty_kernel[1, 32](out), reps=7)
    recs.append({"name": "launch_gpu_side", **gpu, "ok": True,
                 "note": "GPU-side cost of one launch: queued behind a spin kernel"})
    for blocks, threads in ((sms * 1024, 32), (sms * 1024, 256), (1 << 20, 32)):
        t = harness.time_launch(lambda st: micro.empty_kernel[blocks, threads, st](out), reps=7)
        recs.append({"name": "block_launch_rate", "grid": blocks, "block": threads, **t,
                     "blocks_per_s": blocks / t["median_s"], "ok": True})
    # block residency: how long a block holds its slot. Blocks of 512 and 1024 threads (4
    # and 2 per SM by the thread limit) that do nothing, one load, or one load and one
    # store (in the L2); cycles per block per SM x blocks per SM = a block's life
    words = 1 << 20
    x = c.to_device(np.ones(words, np.float32))
    y = c.device_array(words, np.float32)
    for threads in (512, 1024):
        blocks = sms * 256
        per_sm = 2048 // threads
        for work, launch in (("empty", lambda st: micro.empty_kernel[blocks, threads, st](out)),
                             ("load", lambda st: micro.load_kernel[blocks, threads, st](x, out, words - 1)),
                             ("load_store", lambda st: micro.load_store_kernel[blocks, threads, st](
                                 x, y, words - 1))):
            t = harness.time_launch(launch, reps=7)
            recs.append({"name": "block_residency", "work": work, "grid": blocks, "block": threads,
                         "blocks_per_sm_resident": per_sm, **t,
                         "block_life_s": per_sm * sms * t["median_s"] / blocks,
                         "ok": work != "load_store" or bool((y.copy_to_host() == 1).all())})
    return recs


def _time_chase(d, starts, steps, out):
    """A one-thread pointer chase over device array ``d``: timed over ``steps`` steps and
    over 1 (the launch's own cost), each launch from the next of ``starts``; returns
    (timing, one-step timing, seconds per step)."""
    def chase(n):
        return lambda: micro.chase_kernel[1, 1](d, next(starts), n, out)
    t = harness.single_launch(chase(steps), reps=5)
    t0 = harness.single_launch(chase(1), reps=5)
    return t, t0, (t["median_s"] - t0["median_s"]) / (steps - 1)


# ------------------------------------------------------------------ grid (relu)

def device_arrays(c: types.ModuleType, dev: Device, host: dict) -> dict:
    """Device copies of the host inputs and NaN-filled outputs of a registry Device."""
    arrays = {k: c.to_device(v) for k, v in host.items()}
    for name, shape in dev.outputs.items():
        arrays[name] = c.to_device(np.full(shape, np.nan, np.float32))
    return arrays


def run_grid(c: types.ModuleType, seed: int = 0) -> list[dict]:
    spec = REGISTRY.get("relu")
    sms = c.get_current_device().MULTIPROCESSOR_COUNT
    rng = _rng(seed)
    recs = []
    for label, n in RELU_N.items():
        first = spec.device(spec.problem(n=n, grid=1, block=32))
        host = first.inputs(rng)
        arrays = device_arrays(c, first, host)
        ref = first.reference(host)["y"]
        for block in RELU_BLOCKS:
            for grid in _relu_grids(sms):
                dev = spec.device(spec.problem(n=n, grid=grid, block=block))
                arrays["y"].copy_to_device(np.full(n, np.nan, np.float32))
                dev.launch(arrays)
                ok = bool(np.array_equal(arrays["y"].copy_to_host(), ref))
                t = harness.time_launch(lambda st: dev.launch(arrays, st), reps=5)
                recs.append({"kernel": "relu", "n": n, "size": label, "grid": grid, "block": block,
                             **t, "ok": ok, "rel_error": 0.0 if ok else float("inf"),
                             "includes_host_launch_latency": False})
    return recs


# ------------------------------------------------------------------ gemm

def _rotating(c, make, ws_bytes, l2_bytes):
    """Enough copies of the inputs that cycling through them misses the L2."""
    k = rotation_sets(ws_bytes, l2_bytes)
    free, _ = c.current_context().get_memory_info()
    if k * ws_bytes > free // 2:
        raise RuntimeError(f"rotating {k} buffer sets of {ws_bytes} bytes needs more than half "
                           f"of the GPU's {free} free bytes")
    return [make() for _ in range(k)]


GEMM_VARIANTS = [("gemm-naive", {"thread_x": tx}) for tx in ("cols", "rows")] + \
    [("gemm-tiled", {"tile": T}) for T in (8, 16, 32)]


def run_gemm(c: types.ModuleType, seed: int = 0, sizes: Sequence[tuple[int, int, int]] | None = None,
             deadline_s: float | None = None) -> list[dict]:
    l2 = c.get_current_device().L2_CACHE_SIZE
    rng = _rng(seed)
    shapes = [(s, s, s) for s in GEMM_SQUARE] + list(GEMM_OTHER) if sizes is None else sizes
    recs = []
    start = time.time()
    for M, N, K in shapes:
        if deadline_s and time.time() - start > deadline_s:
            break
        devs = [(kernel, kw, REGISTRY.get(kernel).device(REGISTRY.get(kernel).problem(m=M, n=N, k=K, **kw)))
                for kernel, kw in GEMM_VARIANTS]
        host = devs[0][2].inputs(rng)
        ref = devs[0][2].reference(host)["C"]
        ws = 4 * (M * K + K * N + M * N)
        sets = _rotating(c, lambda: {"A": c.to_device(host["A"]), "B": c.to_device(host["B"]),
                                     "C": c.device_array((M, N), np.float32)}, ws, l2)
        # one rotation for all the shape's variants: each launch takes the set used least
        # recently. (Until 2026-11-23 each variant started again at set 0 and could find
        # the sets the previous variant had just left in the L2.)
        state = {"i": 0}

        def next_set():
            state["i"] += 1
            return sets[(state["i"] - 1) % len(sets)]
        for kernel, kw, dev in devs:
            (g, b), = dev.shapes
            arrays = next_set()
            arrays["C"].copy_to_device(np.full((M, N), np.nan, np.float32))
            dev.launch(arrays)
            err = harness.rel_error(arrays["C"].copy_to_host(), ref)
            t = harness.time_launch(lambda st: dev.launch(next_set(), st),
                                    reps=5 if M * N * K < 2 ** 33 else 3)
            recs.append({"kernel": kernel, "m": M, "n": N, "k": K, **kw, "grid": list(g[:2]),
                         "block": list(b[:2]), **t, "rel_error": err, "ok": err < 1e-4,
                         "buffer_sets": len(sets), "rotation_bytes": len(sets) * ws,
                         "flops": 2 * M * N * K,
                         "includes_host_launch_latency": False})
    return recs


# ------------------------------------------------------------------ conv

def _unique_convs(batch, layout):
    import workloads
    seen, ops = set(), []
    for op in workloads.resolve("resnet50", batch=batch, layout=layout).ops:
        if op.kind != "conv2d":
            continue
        key = (op.C, op.H, op.W, op.K, op.R, op.S, op.stride, op.padding)
        if key not in seen:
            seen.add(key)
            ops.append(op)
    return ops


def run_conv(c: types.ModuleType, seed: int = 0, batches: Sequence[int] = CONV_BATCHES,
             deadline_s: float | None = None) -> list[dict]:
    rng = _rng(seed)
    recs = []
    start = time.time()
    for batch in batches:
        for layout in ("nchw", "nhwc"):
            for op in _unique_convs(batch, layout):
                if deadline_s and time.time() - start > deadline_s:
                    return recs
                base = {"layer": op.name, "batch": batch, "layout": layout,
                        "conv": {"n": op.N, "c": op.C, "h": op.H, "w": op.W, "k": op.K, "r": op.R,
                                 "s": op.S, "stride": op.stride, "pad": op.padding},
                        "flops": op.flops(), "includes_host_launch_latency": False}
                # direct (blocks of 256), then im2col + gemm-tiled (T = 16), on the same
                # random x and w (one seed per layer); y checked at 64 random outputs
                op_seed = int(rng.integers(1 << 31))
                for kernel in ("conv-direct", "conv-im2col"):
                    spec = REGISTRY.get(kernel)
                    dev = spec.device(spec.problem(conv=op))
                    inputs = dev.inputs(np.random.default_rng(op_seed))
                    arrays = device_arrays(c, dev, inputs)
                    dev.launch(arrays)
                    got = arrays["y"].copy_to_host()
                    idx = rng.integers(0, got.size, 64)
                    err = harness.rel_error(got.reshape(-1)[idx], dev.reference(inputs, idx)["y"])
                    full = bool(np.isfinite(got).all())
                    t = harness.time_launch(lambda st: dev.launch(arrays, st), reps=3)
                    # a 1-D launch as numbers, a 2-D one as lists (as the records always were)
                    shapes = [(g[0], b[0]) if b[1:] == (1, 1) else (list(g[:2]), list(b[:2]))
                              for g, b in dev.shapes]
                    grid, block = shapes[0] if len(shapes) == 1 else ([s[0] for s in shapes],
                                                                      [s[1] for s in shapes])
                    recs.append({"kernel": kernel, **base, "grid": grid, "block": block, **t,
                                 "rel_error": err, "ok": err < 1e-4 and full})
    return recs


# ------------------------------------------------------------------ h2d

def run_h2d(c: types.ModuleType, seed: int = 0) -> list[dict]:
    rng = _rng(seed)
    recs = []
    for mb in (1, 4, 16, 64, 256, 1024):
        n = mb * MiB // 4
        pageable = rng.standard_normal(n, dtype=np.float32)
        pinned = c.pinned_array(n, np.float32)
        pinned[:] = pageable
        d = c.device_array(n, np.float32)
        for kind, host in (("pageable", pageable), ("pinned", pinned)):
            d.copy_to_device(host)
            c.synchronize()
            samples = []
            for _ in range(7):
                s, e = c.event(), c.event()
                s.record()
                d.copy_to_device(host)
                e.record()
                e.synchronize()
                samples.append(c.event_elapsed_time(s, e) / 1e3)
            ok = bool(np.array_equal(d.copy_to_host()[:: 4096], pageable[:: 4096]))
            med = float(np.median(samples))
            recs.append({"kind": kind, "bytes": 4 * n, "median_s": med, "min_s": min(samples),
                         "max_s": max(samples), "reps": 7, "bandwidth_bytes_per_s": 4 * n / med,
                         "ok": ok})
    return recs


# ------------------------------------------------------------------ resources

def run_resources(c: types.ModuleType, seed: int = 0) -> list[dict]:
    """What the compiler made of each kernel: registers per thread, shared and local
    memory, and the SASS (opcode counts and text), for the program templates' estimates.
    Every registered kernel's ``variants`` (tiny problems, one per compiled variant) are
    launched once; each distinct numba kernel is read once."""
    rng = _rng(seed)
    launches, seen = [], set()
    for spec in REGISTRY:
        for problem in spec.variants:
            dev = spec.device(spec.problem(**problem))
            arrays = device_arrays(c, dev, dev.inputs(rng))
            for name, k in dev.kernels:
                if name not in seen:
                    seen.add(name)
                    launches.append((name, k, lambda _k, d=dev, a=arrays: d.launch(a)))
    recs = []
    for name, k, go in launches:
        go(k)
        c.synchronize()
        for sig in list(k.overloads):
            rec = {"kernel": name, "signature": str(sig), "ok": True}
            for attr, fn in (("regs_per_thread", "get_regs_per_thread"),
                             ("shared_mem_per_block", "get_shared_mem_per_block"),
                             ("local_mem_per_thread", "get_local_mem_per_thread"),
                             ("max_threads_per_block", "get_max_threads_per_block")):
                try:
                    v = getattr(k, fn)()          # one compiled signature: a value, else a dict
                    rec[attr] = int(v[sig] if isinstance(v, dict) else v)
                except Exception as e:  # noqa: BLE001 -- record what this numba-cuda lacks
                    rec[attr] = None
                    rec[f"{attr}_error"] = f"{type(e).__name__}: {e}"[:160]
            try:
                sass = k.inspect_sass(sig)
                ops = {}
                for line in sass.splitlines():
                    parts = line.split("*/")
                    if len(parts) >= 2 and parts[0].strip().startswith("/*") and parts[1].strip():
                        word = parts[1].strip().split()[0]
                        if word.startswith("@"):
                            word = parts[1].strip().split()[1]
                        word = word.rstrip(";").split(".")[0]
                        ops[word] = ops.get(word, 0) + 1
                rec["sass_opcodes"] = ops
                rec["sass"] = sass
            except Exception as e:  # noqa: BLE001
                rec["sass_error"] = f"{type(e).__name__}: {e}"[:200]
            recs.append(rec)
    return recs


# ------------------------------------------------------------------ slices

def strided_read_reference(host: np.ndarray, lines: int, stride_words: int, passes: int, shift: int,
                           threads: int) -> np.ndarray:
    """What ``micro.strided_read_kernel`` writes, in float64 (numpy)."""
    t = np.arange(threads)
    lane, base = t % 32, (4 * (t // 32)) % lines
    acc = np.zeros(threads)
    for _ in range(passes):
        a = base * stride_words + lane
        acc += sum(host[a + j * stride_words].astype(np.float64) for j in range(4))
        base = (base + shift) % lines
    return acc


def run_slices(c: types.ModuleType, seed: int = 0, passes: int = 512) -> list[dict]:
    """Reads of an L2-resident buffer, one 128-byte line per warp access, with the lines
    1 to 32 lines apart and the same count of them: a GPU that gave lines to its L2
    slices in turn (line number modulo the slice count) would serve a 16-line stride
    from a fraction of its slices; one that hashes addresses serves every stride alike."""
    dev = c.get_current_device()
    sms = dev.MULTIPROCESSOR_COUNT
    rng = _rng(seed)
    lines, grid, block = 4096, sms * 4, 256
    shift = 4 * 1553 % lines                      # a multiple of 4, coprime to lines / 4
    out = c.device_array(grid * block, np.float32)
    recs = []
    for stride in SLICE_STRIDES:
        sw = 32 * stride
        host = rng.standard_normal(lines * sw, dtype=np.float32)
        src = c.to_device(host)
        t = harness.time_launch(lambda st: micro.strided_read_kernel[grid, block, st](
            src, out, lines, sw, passes, shift), reps=7)
        probe = strided_read_reference(host, lines, sw, 3, shift, grid * block)
        micro.strided_read_kernel[grid, block](src, out, lines, sw, 3, shift)
        got = out.copy_to_host().astype(np.float64)
        ok = bool(np.allclose(got, probe, rtol=1e-4, atol=1e-4))
        read = grid * block // 32 * 4 * 128 * passes
        recs.append({"name": "strided_read", "stride_lines": stride, "lines": lines,
                     "footprint_bytes": 4 * lines * sw, "passes": passes, "grid": grid,
                     "block": block, **t, "bytes": read,
                     "bandwidth_bytes_per_s": read / t["median_s"], "ok": ok})
    return recs


def lines_read_reference(host: np.ndarray, nlines: int, spread: int, passes: int,
                         threads: int) -> np.ndarray:
    """What ``micro.lines_read_kernel`` writes, in float64 (numpy)."""
    t = np.arange(threads)
    lane = t % 32
    base, off, word = (4 * spread * (t // 32)) % nlines, lane % spread, lane // spread
    acc = np.zeros(threads)
    for _ in range(passes):
        for j in range(4):
            acc += host[((base + j * spread + off) % nlines) * 32 + word].astype(np.float64)
        base = (base + 4 * spread) % nlines
    return acc


def run_lines(c: types.ModuleType, seed: int = 0, passes: int = 1024) -> list[dict]:
    """L1-resident reads whose warp requests touch 1 to 32 lines (one word a lane): the
    time per request per SM says how many lines (or sectors) the L1 serves a cycle
    for scattered requests, which the naive GEMM with threadIdx.x on C's rows makes."""
    dev = c.get_current_device()
    sms = dev.MULTIPROCESSOR_COUNT
    rng = _rng(seed)
    nlines, block = 128, 256                      # 16 KiB: stays in any L1 carveout
    host = rng.standard_normal(nlines * 32, dtype=np.float32)
    src = c.to_device(host)
    recs = []
    for blocks_per_sm in (1, 8):
        grid = sms * blocks_per_sm
        out = c.device_array(grid * block, np.float32)
        for spread in LINE_SPREADS:
            t = harness.time_launch(lambda st: micro.lines_read_kernel[grid, block, st](
                src, out, nlines, spread, passes), reps=7)
            micro.lines_read_kernel[grid, block](src, out, nlines, spread, 3)
            got = out.copy_to_host().astype(np.float64)
            ok = bool(np.allclose(got, lines_read_reference(host, nlines, spread, 3, grid * block),
                                  rtol=1e-4, atol=1e-4))
            requests = grid * block // 32 * 4 * passes
            recs.append({"name": "lines_read", "lines_per_request": spread, "nlines": nlines,
                         "passes": passes, "grid": grid, "block": block,
                         "warps_per_sm": blocks_per_sm * block // 32, **t, "requests": requests,
                         "requests_per_sm_per_s": requests / sms / t["median_s"], "ok": ok})
    return recs + _run_lines_write(c, sms, WRITE_LINES, passes)


def lines_write_reference(grid: int, block: int, nlines: int, spread: int,
                          passes: int) -> np.ndarray:
    """What ``micro.lines_write_kernel`` leaves in a zeroed buffer (numpy): every word it
    stores holds its own index, the others 0."""
    out = np.zeros(grid * nlines * 32, np.int32)
    t = np.arange(grid * block)
    lane, b, w = t % 32, t // block, (t % block) // 32
    off, word = lane % spread, (lane // spread + (32 // spread) * w) % 32
    base = 0
    for _ in range(passes):
        for j in range(4):
            k = b * nlines * 32 + ((base + j * spread + off) % nlines) * 32 + word
            out[k] = k
        base = (base + 4 * spread) % nlines
    return out


WRITE_LINES = 1024     # a block's lines for the stores (128 KiB): each pass new lines


# (blocks, threads) of the stores: one block on every SM with 8 or 32 warps, eight of 8
# warps on every SM, and one of 32 warps on a quarter and a sixteenth of the SMs (a
# limit of each SM's shows as the same rate an SM there; one of the L2's, as a higher)
def _write_shapes(sms):
    return ((sms, 256), (sms * 8, 256), (sms, 1024), (max(1, sms // 4), 1024),
            (max(1, sms // 16), 1024))


def _run_lines_write(c, sms, nlines, passes):
    """L2-resident stores whose warp requests touch 1 to 32 lines (one word a lane, as a
    naive transpose writes): the time per request per SM says how many lines an SM
    sends the L2 a cycle, on all SMs and on a quarter and a sixteenth of them."""
    recs = []
    for grid, block in _write_shapes(sms):
        dst = c.device_array(grid * nlines * 32, np.int32)
        used = min(grid, sms)
        for spread in LINE_SPREADS:
            t = harness.time_launch(lambda st: micro.lines_write_kernel[grid, block, st](
                dst, nlines, spread, passes), reps=7)
            dst = c.to_device(np.zeros(grid * nlines * 32, np.int32))
            micro.lines_write_kernel[grid, block](dst, nlines, spread, 3)
            ok = bool(np.array_equal(dst.copy_to_host(),
                                     lines_write_reference(grid, block, nlines, spread, 3)))
            requests = grid * block // 32 * 4 * passes
            recs.append({"name": "lines_write", "lines_per_request": spread, "nlines": nlines,
                         "passes": passes, "grid": grid, "block": block, "sms_used": used,
                         "warps_per_sm": grid * block // 32 // used, **t, "requests": requests,
                         "requests_per_sm_per_s": requests / used / t["median_s"], "ok": ok})
    return recs


ATOMIC_SPREADS = (1, 4, 12, 32)             # distinct words of the line one request hits
ATOMIC_WARPS = ((1, 32), (132, 32), (132, 128), (132, 512))   # (blocks, threads)


def run_atomics(c: types.ModuleType, seed: int = 0) -> list[dict]:
    """Atomics on one 128-byte line: warps whose lanes hit 1 to 32 of its words, each
    warp with one request in flight. One warp gives the round trip of an atomic; many,
    how many cycles the L2 spends on a warp's request to one line (the rate a CAS loop
    under contention runs at). ``cycles_per_request`` uses the clock the provenance
    records (``clock_rate``, kHz)."""
    dev = c.get_current_device()
    clock_hz = 1e3 * dev.CLOCK_RATE
    recs = []
    for op in ("add", "cas"):
        for spread in ATOMIC_SPREADS:
            for blocks, threads in ATOMIC_WARPS:
                warps = blocks * threads // 32
                iters = 2048 if warps <= 132 else 256
                init = np.zeros(32, np.int32)
                words = c.to_device(init)
                out = c.device_array(blocks * threads, np.int64)
                t = harness.time_launch(lambda st: micro.atomic_line_kernel[blocks, threads, st](
                    words, out, iters, spread, int(op == "cas")), reps=5)
                # the check: one more launch from zero, its words against the closed form
                words = c.to_device(init)
                micro.atomic_line_kernel[blocks, threads](words, out, iters, spread,
                                                          int(op == "cas"))
                got = words.copy_to_host()
                want = init.copy()
                if op == "add":
                    np.add.at(want, np.arange(32) % spread, warps * iters)
                requests = warps * iters
                recs.append({"name": "atomic_line", "op": op, "spread_words": spread,
                             "grid": blocks, "block": threads, "warps": warps, "iters": iters,
                             **t, "requests": requests,
                             "cycles_per_request": t["median_s"] * clock_hz / requests,
                             "cycles_per_warp_request": t["median_s"] * clock_hz / iters,
                             "ok": bool(np.array_equal(got, want))})
    return recs


def run_atomic_order(c: types.ModuleType, seed: int = 0) -> list[dict]:
    """The order a contended CAS loop's successes come in (``micro.cas_order_kernel``):
    one lane a warp, each warp's tries and place, five launches of each shape; against
    the first come, first served line's W(W+1)/2 tries for W warps."""
    recs = []
    for blocks, threads in ((32, 128), (132, 32), (132, 128), (128, 128)):
        warps = blocks * threads // 32
        for rep in range(5):
            counter = c.to_device(np.zeros(1, np.int32))
            tries = c.device_array(warps, np.int32)
            rank = c.device_array(warps, np.int32)
            micro.cas_order_kernel[blocks, threads](counter, tries, rank)
            t, r = tries.copy_to_host(), rank.copy_to_host()
            recs.append({"name": "cas_order", "grid": blocks, "block": threads, "warps": warps,
                         "launch": rep, "tries": t.tolist(), "rank": r.tolist(),
                         "total_tries": int(t.sum()), "first_come_tries": warps * (warps + 1) // 2,
                         "ok": bool(int(counter.copy_to_host()[0]) == warps
                                    and np.array_equal(np.sort(r), np.arange(warps)))})
    # several lanes of a warp on one word: the first ``lanes`` lanes on ``keys`` words
    for blocks, threads in ((32, 128), (128, 128)):
        for lanes, keys in ((2, 1), (32, 1), (32, 12), (12, 12)):
            warps = blocks * threads // 32
            for rep in range(3):
                counter = c.to_device(np.zeros(32, np.int32))
                tries = c.to_device(np.zeros(blocks * threads, np.int32))
                micro.cas_lanes_kernel[blocks, threads](counter, tries, lanes, keys)
                t = tries.copy_to_host().reshape(warps, 32)
                want = np.zeros(32, np.int32)
                np.add.at(want, np.arange(lanes) % keys, warps)
                recs.append({"name": "cas_lanes", "grid": blocks, "block": threads,
                             "warps": warps, "lanes": lanes, "keys": keys, "launch": rep,
                             "tries": t[:, :lanes].tolist(), "total_tries": int(t.sum()),
                             "first_come_tries": None,
                             "ok": bool(np.array_equal(counter.copy_to_host(), want))})
    return recs


TRACE_SHAPES = ((32, 128), (64, 128), (128, 128), (128, 32), (32, 512))


def _skips(seen, tries):
    """A warp's tries as the successes it missed between them: for each try after the
    first, how far the value it found moved on from the one before (1: no success missed),
    as one string of digits and letters (base 36, ``z`` for 35 or more)."""
    d = np.diff(seen[:min(tries, seen.size)])
    return "".join(np.base_repr(int(min(x, 35)), 36).lower() for x in d)


def run_atomic_trace(c: types.ModuleType, seed: int = 0,
                     shapes: Sequence[tuple[int, int]] = TRACE_SHAPES) -> list[dict]:
    """A contended CAS loop traced (``micro.cas_trace_kernel``): the first 1 or 12 lanes of
    every warp, each on its own word of one line, on 32, 64 and 128 blocks of 4 warps,
    128 blocks of 1 warp and 32 blocks of 16; each warp's SM, its tries, its first try's and
    its success's global time (ns, relative to the launch's first try), and the values its
    tries found as the successes it missed between them (``skips``, the first launch of
    each shape). Lane 0 records; ``total_tries`` is its tries times the lanes (a request's
    lanes, each on its own word, succeed together: the atomic_order suite found every
    lane's tries equal with 12 lanes on 12 words). Which warps and SMs retry less than
    first come, first served says where the L2's arbitration departs from it."""
    kernel = micro.cas_trace_kernel()
    recs = []
    for blocks, threads in shapes:
        warps = blocks * threads // 32
        for lanes in (1, 12):
            for rep in range(2):
                counter = c.to_device(np.zeros(32, np.int32))
                tries = c.to_device(np.zeros(warps, np.int32))
                seen = c.to_device(np.full((warps, warps + 8), -1, np.int32))
                sm = c.to_device(np.zeros(warps, np.uint32))
                t0, t1 = (c.to_device(np.zeros(warps, np.uint64)) for _ in range(2))
                kernel[blocks, threads](counter, lanes, tries, seen, sm, t0, t1)
                t, s = tries.copy_to_host(), seen.copy_to_host()
                a0, a1 = t0.copy_to_host(), t1.copy_to_host()
                start = int(a0.min())
                got = counter.copy_to_host()
                want = np.zeros(32, np.int32)
                want[:lanes] = warps
                ok = bool(np.array_equal(got, want) and np.array_equal(
                    np.sort(s[np.arange(warps), np.minimum(t, s.shape[1]) - 1]),
                    np.arange(warps)))
                rec = {"name": "cas_trace", "grid": blocks, "block": threads, "warps": warps,
                       "lanes": lanes, "launch": rep, "tries": t.tolist(),
                       "sm": sm.copy_to_host().tolist(),
                       "start_ns": (a0 - start).astype(np.int64).tolist(),
                       "success_ns": (a1 - start).astype(np.int64).tolist(),
                       "total_tries": int(t.sum()) * lanes,
                       "first_come_tries": lanes * warps * (warps + 1) // 2, "ok": ok}
                if rep == 0:
                    rec["skips"] = [_skips(s[w], t[w]) for w in range(warps)]
                recs.append(rec)
    return recs


def run_kernels(c: types.ModuleType, seed: int = 0, deadline_s: float | None = None) -> dict:
    from .kernels import run_kernels as run
    return run(c, seed=seed, deadline_s=deadline_s)


def run_teaching(c: types.ModuleType, seed: int = 0, deadline_s: float | None = None) -> dict:
    """examples/teaching.py's kernels, measured as the kernels suite measures."""
    from workloads.kernelsuite import teaching_cases

    from .kernels import run_kernels as run
    return run(c, seed=seed, deadline_s=deadline_s, cases=teaching_cases())


RUNNERS = {"micro": run_micro, "grid": run_grid, "gemm": run_gemm, "conv": run_conv, "h2d": run_h2d,
           "resources": run_resources, "slices": run_slices, "lines": run_lines,
           "kernels": run_kernels, "teaching": run_teaching, "atomics": run_atomics,
           "atomic_order": run_atomic_order, "atomic_trace": run_atomic_trace}


def run(suite: str, command: str | None = None, deadline_s: float | None = None,
        **kw: object) -> dict:
    """Run one suite on the GPU; raises NoGPU (one line) without one. ``deadline_s``
    (gemm, conv, kernels) stops starting new shapes after that many seconds, keeping what
    finished. A runner returns its records, or a dict of them (``records``) and the
    suite's further fields (kernels: metrics, ncu, ncu_csv, skipped)."""
    if suite not in RUNNERS:
        raise ValueError(f"suite = {show(suite)}: allowed: {', '.join(SUITES)}")
    c = harness.require_gpu()
    prov = harness.provenance(command)
    t0 = time.time()
    if deadline_s and suite in ("gemm", "conv", "kernels", "teaching"):
        kw["deadline_s"] = deadline_s
    recs = RUNNERS[suite](c, **kw)
    extra = {}
    if isinstance(recs, dict):
        extra = {k: v for k, v in recs.items() if k != "records"}
        recs = recs["records"]
    return {"suite": suite, "schema_version": 1, "provenance": prov,
            "wall_seconds": time.time() - t0, "deadline_s": deadline_s, **extra, "records": recs}

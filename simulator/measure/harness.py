"""Timing kernels on a real NVIDIA GPU through numba.cuda, with provenance.

The one place in roofsim that launches work on a GPU. Importing it needs no GPU;
``require_gpu()`` says clearly when there is none.

Method (docs/sources.md, "Measuring GPU time"): warm up (JIT, module load); time
with CUDA events; repeat and keep median, min and max; a kernel shorter than the host's
launch latency is timed over many back-to-back launches between one pair of events
(``per_launch``), never as one launch between two events; inputs are random, outputs
poisoned with NaN before the checked run, and every result is compared with numpy.
"""
from __future__ import annotations

import datetime
import math
import os
import platform
import shlex
import statistics
import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import types
    from collections.abc import Callable

    from numpy.typing import ArrayLike

MIN_WINDOW_S = 2e-3        # back-to-back launches fill at least this much time per sample


class NoGPU(RuntimeError):
    pass


def cuda() -> types.ModuleType:
    import warnings

    from numba import cuda as c
    from numba.core.errors import NumbaPerformanceWarning
    warnings.simplefilter("ignore", NumbaPerformanceWarning)   # small grids are the point
    return c


def require_gpu() -> types.ModuleType:
    """Raise NoGPU with one clear line when no CUDA GPU can be used."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        raise NoGPU("no GPU: NUMBA_ENABLE_CUDASIM=1 selects numba's CUDA simulator, which "
                    "cannot time kernels; unset it on a machine with an NVIDIA GPU")
    try:
        c = cuda()
        ok = c.is_available()
    except Exception as e:  # noqa: BLE001 -- any import/driver failure means no GPU
        raise NoGPU(f"no GPU: numba.cuda is unusable here ({type(e).__name__}: {e})") from None
    if not ok:
        raise NoGPU("no GPU: numba.cuda finds no CUDA driver or device on this machine")
    return c


def nvidia_smi(query: str) -> list[str] | None:
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20)
        return [v.strip() for v in out.stdout.strip().splitlines()[0].split(",")]
    except Exception:  # noqa: BLE001 -- provenance is best effort, recorded as missing
        return None


def provenance(command: str | None = None) -> dict:
    """Device attributes, clocks, driver, CUDA, numba and numba-cuda versions, date, command."""
    import importlib.metadata as md

    import numpy as np
    c = cuda()
    dev = c.get_current_device()
    attrs = {}
    for a in ("MULTIPROCESSOR_COUNT", "MAX_THREADS_PER_BLOCK", "MAX_SHARED_MEMORY_PER_BLOCK",
              "MAX_REGISTERS_PER_BLOCK", "WARP_SIZE", "L2_CACHE_SIZE", "CLOCK_RATE",
              "MEMORY_CLOCK_RATE", "GLOBAL_MEMORY_BUS_WIDTH", "MAX_THREADS_PER_MULTI_PROCESSOR",
              "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"):
        try:
            attrs[a.lower()] = int(getattr(dev, a))
        except Exception:  # noqa: BLE001
            attrs[a.lower()] = None

    def ver(name):
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            return None
    smi = nvidia_smi("name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,"
               "power.limit,temperature.gpu,persistence_mode")
    keys = ("name", "driver_version", "clock_sm_mhz", "clock_max_sm_mhz", "clock_mem_mhz",
            "clock_max_mem_mhz", "power_limit_w", "temperature_c", "persistence_mode")
    try:
        rt = ".".join(map(str, c.runtime.get_version()))
    except Exception:  # noqa: BLE001
        rt = None
    try:
        drv = ".".join(map(str, c.cudadrv.driver.driver.get_version()))
    except Exception:  # noqa: BLE001
        drv = None
    name = dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name)
    return {
        "device": name, "compute_capability": ".".join(map(str, dev.compute_capability)),
        "attributes": attrs, "nvidia_smi": dict(zip(keys, smi)) if smi else None,
        "cuda_runtime": rt, "cuda_driver_api": drv,
        "numba": ver("numba"), "numba_cuda": ver("numba-cuda"), "numpy": np.__version__,
        "python": sys.version.split()[0], "host": platform.node(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": command or " ".join(shlex.quote(a) for a in sys.argv),
    }


def _events():
    c = cuda()
    return c.event(), c.event()


def _one_launch_s(launch):
    """Seconds between two events around one launch (host latency included)."""
    c = cuda()
    s, e = _events()
    s.record()
    launch()
    e.record()
    e.synchronize()
    return c.event_elapsed_time(s, e) / 1e3


def _summary(samples, **extra):
    return {"median_s": statistics.median(samples), "min_s": min(samples), "max_s": max(samples),
            "reps": len(samples), **extra}


def per_launch(launch: Callable[[], object], reps: int = 7, inner: int | None = None,
               window_s: float = MIN_WINDOW_S) -> dict:
    """Seconds per launch of ``launch()`` (a callable that enqueues one launch, and may
    rotate buffers itself): ``inner`` launches back to back between one pair of events,
    ``reps`` samples. ``inner`` is chosen so a sample lasts at least ``window_s``.
    Returns {median_s, min_s, max_s, inner, reps, samples_s}."""
    c = cuda()
    launch()
    c.synchronize()
    if inner is None:
        one = _one_launch_s(launch)
        inner = max(1, min(100_000, int(window_s / max(one, 1e-7)) + 1))
    samples = []
    for _ in range(reps):
        s, e = _events()
        s.record()
        for _ in range(inner):
            launch()
        e.record()
        e.synchronize()
        samples.append(c.event_elapsed_time(s, e) / 1e3 / inner)
    return _summary(samples, inner=inner, samples_s=samples)


def hidden_per_launch(launch: Callable[[], object], reps: int = 7, window_s: float = MIN_WINDOW_S,
                      max_inner: int = 200) -> dict:
    """Seconds per launch with the host's launch latency hidden: a spin kernel keeps the
    GPU busy while the host queues the start event, ``inner`` launches and the stop event
    behind it, so the events time the launches back to back on the GPU. A sample whose
    queueing outlasted the spin timed the host, not the GPU: it is taken again, up to
    ``reps`` times in all (``host_bound_retaken`` counts them), and the result is flagged
    (``host_bound``) only if one remains."""
    import time as _t

    from . import micro
    c = cuda()
    launch()
    c.synchronize()
    one = _one_launch_s(launch)
    inner = max(1, min(max_inner, int(window_s / max(one, 1e-7)) + 1))
    # the host queues a launch in about 25-45 us from Python; give it 100 us each
    spin_us = int(inner * 100 + 1000)
    samples, host_bound, retaken = [], False, 0
    while len(samples) < reps:
        s, e = _events()
        micro.spin_kernel[1, 1](spin_us)
        h0 = _t.perf_counter()
        s.record()
        for _ in range(inner):
            launch()
        e.record()
        queued = _t.perf_counter() - h0
        e.synchronize()
        sample = c.event_elapsed_time(s, e) / 1e3 / inner
        if queued * 1e6 > spin_us and retaken < reps:
            retaken += 1
            continue
        host_bound |= queued * 1e6 > spin_us
        samples.append(sample)
    return _summary(samples, inner=inner, samples_s=samples, method="queued_behind_spin",
                    host_bound=bool(host_bound), host_bound_retaken=retaken)


def time_launch(launch_on: Callable[[int], object], reps: int = 7,
                window_s: float = MIN_WINDOW_S) -> dict:
    """Per-launch GPU time of ``launch_on(stream)`` (stream 0): back to back, the host's
    launch latency hidden (``hidden_per_launch``)."""
    return hidden_per_launch(lambda: launch_on(0), reps=reps, window_s=window_s)


def single_launch(launch: Callable[[], object], reps: int = 7) -> dict:
    """One launch between two events, as a naive timer would (includes host latency)."""
    launch()
    cuda().synchronize()
    return _summary([_one_launch_s(launch) for _ in range(reps)])


def rel_error(out: ArrayLike, ref: ArrayLike) -> float:
    import numpy as np
    out, ref = np.asarray(out, np.float64), np.asarray(ref, np.float64)
    if not np.isfinite(out).all():
        return float("inf")
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))


def rotation_sets(ws_bytes: int, l2_bytes: int) -> int:
    """How many copies of a launch's buffers cycling through them takes for each launch to
    find its own evicted: one when the working set alone is twice the L2, else enough
    copies to span three L2s. (Until 2026-11-23 the count was capped at 64: the 256^3
    GEMMs then cycled through 48 MiB, which a 50 MiB L2 largely keeps.)"""
    return 1 if ws_bytes >= 2 * l2_bytes else math.ceil(3 * l2_bytes / ws_bytes)

"""The abstraction-cost baseline: torchvision's ResNet-50 timed end to end where PyTorch
is importable (it is never a dependency of roofsim; without it ``roofsim measure
torchvision`` refuses in one line, exit 2, as every suite does without a GPU, and writes
nothing).

Random weights (``weights=None``), ``eval()``, ``torch.inference_mode()``, TF32 off for
both cuDNN and matrix products (fp32 arithmetic throughout, as roofsim's kernels), NCHW
and channels-last; cuDNN's autotuner left at PyTorch's default (off). Each forward is
timed with CUDA events around it after warm-up, repeated; the logits are checked
finite.
"""
from __future__ import annotations

import statistics
import time

from .harness import NoGPU


class NoFramework(NoGPU):
    """No PyTorch (or no GPU it sees) here: the suite cannot run, and ``roofsim measure``
    refuses it as it refuses the other suites without a GPU (one line, exit 2)."""


def _torch():
    try:
        import torch
        import torchvision
    except Exception as e:  # noqa: BLE001 -- any import failure means no framework here
        raise NoFramework(f"torchvision: PyTorch is not importable here ({type(e).__name__}: "
                          f"{str(e)[:80]}); the torchvision suite needs PyTorch and "
                          f"torchvision with a CUDA GPU") from None
    if not torch.cuda.is_available():
        raise NoFramework("torchvision: PyTorch sees no CUDA GPU here; the torchvision suite "
                          "needs one")
    return torch, torchvision


def run_framework(batches=(1, 8, 32), reps=20, warmup=5, seed=0, command=None) -> dict:
    torch, tv = _torch()
    from . import harness
    prov = harness.provenance(command)
    prov.update(torch=torch.__version__, torchvision=tv.__version__,
                cudnn=torch.backends.cudnn.version(), torch_device=torch.cuda.get_device_name(0))
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(seed)
    t0 = time.time()
    model = tv.models.resnet50(weights=None).cuda().eval()
    recs = []
    for fmt in ("nchw", "channels_last"):
        m = model.to(memory_format=torch.channels_last) if fmt == "channels_last" else \
            model.to(memory_format=torch.contiguous_format)
        for b in batches:
            x = torch.randn(b, 3, 224, 224, device="cuda")
            if fmt == "channels_last":
                x = x.to(memory_format=torch.channels_last)
            with torch.inference_mode():
                for _ in range(warmup):
                    y = m(x)
                torch.cuda.synchronize()
                samples = []
                for _ in range(reps):
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    s.record()
                    y = m(x)
                    e.record()
                    e.synchronize()
                    samples.append(s.elapsed_time(e) / 1e3)
            ok = bool(torch.isfinite(y).all().item()) and tuple(y.shape) == (b, 1000)
            recs.append({"model": "torchvision.models.resnet50", "memory_format": fmt, "batch": b,
                         "median_s": statistics.median(samples), "min_s": min(samples),
                         "max_s": max(samples), "reps": reps, "warmup": warmup,
                         "samples_s": samples, "tf32": False, "cudnn_benchmark":
                         bool(torch.backends.cudnn.benchmark), "ok": ok})
    return {"suite": "torchvision", "schema_version": 1, "provenance": prov,
            "wall_seconds": time.time() - t0, "records": recs}

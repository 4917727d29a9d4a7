"""What torch.compile makes of a model, kept for `roofsim check` and the any-kernel path: run
on the GPU machine with its own python3 (PyTorch, torchvision, Triton):

    python3 scripts/record_compiled_traces.py OUTDIR

For torchvision's ResNet-50 at batch 8 (random weights, seed 0, eval, inference mode,
PyTorch's default settings) compiled with ``torch.compile`` (mode "default"):

* OUTDIR/torch_resnet50_b8_compiled.json: torch.profiler's Chrome trace
  (record_shapes=True) of one forward after three warm-ups: Inductor's Triton kernels
  (``triton_poi_fused_...``, with their grid and block) and the convolutions it leaves to
  cuDNN;
* OUTDIR/triton_resnet50_b8.tar.gz: every Triton kernel Inductor compiled for it, as
  Triton's cache holds it (``.ptx``, ``.json`` metadata: warps, shared memory, the
  signature), and Inductor's generated wrapper code (``output_code.py``: each kernel's
  launch, its arguments' buffers and sizes).

The compile and the eager/compiled end-to-end medians are printed (one CUDA-event
timing over 50 forwards each, for orientation only: the harness times what is
committed under data/measurements/).
"""
import glob
import json
import os
import sys
import tarfile
import tempfile
import time
from pathlib import Path

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
work = Path(tempfile.mkdtemp(prefix="inductor-"))
os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(work / "inductor")
os.environ["TRITON_CACHE_DIR"] = str(work / "triton")
os.environ["TORCH_COMPILE_DEBUG_DIR"] = str(work / "debug")
os.environ["TORCH_LOGS"] = "output_code"

import torch  # noqa: E402  (after the cache directories are set)
import torchvision  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

torch.manual_seed(0)
model = torchvision.models.resnet50(weights=None).cuda().eval()
x = torch.randn(8, 3, 224, 224, device="cuda")


def median_ms(f, n=50):
    ts = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return sorted(ts)[n // 2]


with torch.inference_mode():
    for _ in range(3):
        model(x)
    eager = median_ms(lambda: model(x))
    t0 = time.time()
    compiled = torch.compile(model)
    compiled(x)
    torch.cuda.synchronize()
    compile_s = time.time() - t0
    for _ in range(3):
        compiled(x)
    torch.cuda.synchronize()
    comp = median_ms(lambda: compiled(x))
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as p:
        compiled(x)
        torch.cuda.synchronize()
trace = out / "torch_resnet50_b8_compiled.json"
p.export_chrome_trace(str(trace))

files = sorted(set(glob.glob(str(work / "triton" / "**" / "*.ptx"), recursive=True)
                   + glob.glob(str(work / "triton" / "**" / "*.json"), recursive=True)
                   + glob.glob(str(work / "inductor" / "**" / "*.py"), recursive=True)))
with tarfile.open(out / "triton_resnet50_b8.tar.gz", "w:gz") as tar:
    for f in files:
        tar.add(f, arcname=os.path.relpath(f, work))
ev = json.loads(trace.read_text())["traceEvents"]
kernels = [e for e in ev if e.get("cat") == "kernel"]
triton = [e for e in kernels if e["name"].startswith("triton")]
print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
print(f"eager {eager:.3f} ms, compiled {comp:.3f} ms (median of 50, CUDA events), compile {compile_s:.1f} s")
print(f"trace: {len(kernels)} kernels ({len(triton)} Triton), {sum(e['dur'] for e in kernels) / 1e3:.3f} ms; "
      f"{trace.stat().st_size} bytes")
print(f"tar: {len(files)} files ({sum(f.endswith('.ptx') for f in files)} PTX), "
      f"{(out / 'triton_resnet50_b8.tar.gz').stat().st_size} bytes")
for e in sorted(triton, key=lambda e: -e["dur"])[:8]:
    print(f"   {e['dur']:8.2f} us  {e['name'][:70]}  "
          f"grid {e['args'].get('grid')} block {e['args'].get('block')}")

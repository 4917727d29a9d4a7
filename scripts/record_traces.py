"""Traces recorded with other people's tools, for `roofsim check` to read (run on the
GPU machine with its own python3, which holds PyTorch; see record_traces.sh):

    python3 scripts/record_traces.py OUTDIR

* OUTDIR/torch_resnet50_b8.json: torch.profiler's Chrome trace (record_shapes=True) of
  torchvision's ResNet-50 (random weights, eval, inference mode, fp32, TF32 off) at
  batch 8, one forward after three warm-ups;
* OUTDIR/torch_gemm_loop.json: the same profiler over a loop of float32 matrix products
  (torch.mm) of six shapes and a few element-wise ops.
"""
import sys
from pathlib import Path

import torch
import torchvision
from torch.profiler import ProfilerActivity, profile

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.manual_seed(0)

model = torchvision.models.resnet50(weights=None).cuda().eval()
x = torch.randn(8, 3, 224, 224, device="cuda")
with torch.inference_mode():
    for _ in range(3):
        model(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as p:
        model(x)
        torch.cuda.synchronize()
p.export_chrome_trace(str(out / "torch_resnet50_b8.json"))

shapes = [(1024, 1024, 1024), (4096, 4096, 4096), (2048, 512, 1024), (8192, 256, 256),
          (128, 8192, 512), (1000, 3000, 500)]
mats = [(torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")) for m, n, k in shapes]
with torch.inference_mode():
    for a, b in mats:
        torch.mm(a, b)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as p:
        for a, b in mats:
            c = torch.mm(a, b)
            torch.relu(c)
            c + c
        torch.cuda.synchronize()
p.export_chrome_trace(str(out / "torch_gemm_loop.json"))
print("torch", torch.__version__, "torchvision", torchvision.__version__, torch.cuda.get_device_name(0))
for f in sorted(out.glob("torch_*.json")):
    print(f.name, f.stat().st_size, "bytes")

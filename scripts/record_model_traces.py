"""Traces of models as people run them, for `roofsim check`: PyTorch's own
defaults, a transformer in fp32 and under bf16 autocast. Run on the GPU machine with its
own python3 (PyTorch, torchvision, transformers); see record_traces.sh:

    python3 scripts/record_model_traces.py OUTDIR

Every trace is torch.profiler's Chrome trace (record_shapes=True, export_chrome_trace)
of one forward after three warm-ups, random weights (seed 0), eval, inference mode:

* torch_resnet50_b8_defaults.json: torchvision's ResNet-50 at batch 8 with PyTorch's
  default settings (no allow_tf32 flag touched: cuDNN may use TF32, cuBLAS may not);
* torch_bert_base_b8_s128_fp32.json / _bf16.json: BERT-base (transformers' BertModel
  from its default BertConfig, no download), batch 8, 128 tokens, fp32 with the
  defaults, and under torch.autocast(dtype=bfloat16);
* torch_gpt2_b4_s256_bf16.json: GPT-2 small (GPT2LMHeadModel, default GPT2Config),
  batch 4, 256 tokens, under bf16 autocast.

The settings each ran with are printed (and written to OUTDIR/settings.json).
"""
import json
import sys
from pathlib import Path

import torch
import torchvision
import transformers
from torch.profiler import ProfilerActivity, profile

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
settings = {"torch": torch.__version__, "torchvision": torchvision.__version__,
            "transformers": transformers.__version__,
            "device": torch.cuda.get_device_name(0),
            "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
            "float32_matmul_precision": torch.get_float32_matmul_precision(),
            "traces": {}}


def record(name, model, inputs, autocast=None):
    torch.manual_seed(0)
    ctx = (torch.autocast("cuda", dtype=autocast) if autocast is not None
           else torch.autocast("cuda", enabled=False))
    with torch.inference_mode(), ctx:
        for _ in range(3):
            model(**inputs) if isinstance(inputs, dict) else model(inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     record_shapes=True) as p:
            model(**inputs) if isinstance(inputs, dict) else model(inputs)
            torch.cuda.synchronize()
    path = out / f"{name}.json"
    p.export_chrome_trace(str(path))
    ev = json.loads(path.read_text())["traceEvents"]
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    gpu_us = sum(e.get("dur", 0) for e in kernels)
    settings["traces"][name] = {"kernels": len(kernels), "gpu_us": gpu_us,
                                "autocast": str(autocast) if autocast else None,
                                "bytes": path.stat().st_size}
    print(f"{name}: {len(kernels)} kernels, {gpu_us / 1e3:.3f} ms, {path.stat().st_size} bytes")
    top = {}
    for e in kernels:
        top[e["name"][:90]] = top.get(e["name"][:90], 0) + e.get("dur", 0)
    for k, v in sorted(top.items(), key=lambda kv: -kv[1])[:12]:
        print(f"   {v:9.1f} us  {k}")


torch.manual_seed(0)
resnet = torchvision.models.resnet50(weights=None).cuda().eval()
record("torch_resnet50_b8_defaults", resnet, torch.randn(8, 3, 224, 224, device="cuda"))
del resnet

bert = transformers.BertModel(transformers.BertConfig()).cuda().eval()
ids = torch.randint(0, 30522, (8, 128), device="cuda")
mask = torch.ones(8, 128, dtype=torch.long, device="cuda")
record("torch_bert_base_b8_s128_fp32", bert, {"input_ids": ids, "attention_mask": mask})
record("torch_bert_base_b8_s128_bf16", bert, {"input_ids": ids, "attention_mask": mask},
       autocast=torch.bfloat16)
settings["bert_attention"] = getattr(bert.config, "_attn_implementation", None)
del bert

gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config()).cuda().eval()
ids = torch.randint(0, 50257, (4, 256), device="cuda")
record("torch_gpt2_b4_s256_bf16", gpt2, {"input_ids": ids}, autocast=torch.bfloat16)
settings["gpt2_attention"] = getattr(gpt2.config, "_attn_implementation", None)

(out / "settings.json").write_text(json.dumps(settings, indent=1) + "\n")
print(json.dumps({k: v for k, v in settings.items() if k != "traces"}))

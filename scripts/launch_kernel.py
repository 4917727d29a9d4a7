"""Launch registered roofsim kernels once each on the GPU (for ncu to profile them all in
one run):

    python3 scripts/launch_kernel.py KERNEL=WORKLOAD[@LAYOUT] ...

WORKLOAD is a workload spec (gemm:MxNxK, relu:N) or a ResNet-50 layer name with its
batch after a slash (layer3.0.conv2/8); inputs are random.
"""
import sys

import numpy as np
from numba import cuda

import workloads
from simulator.measure.suites import _device_arrays
from simulator.simt.kernels import REGISTRY

for item in sys.argv[1:]:
    kernel, rest = item.split("=", 1)
    spec_s, _, layout = rest.partition("@")
    layout = layout or "nchw"
    spec = REGISTRY.get(kernel)
    if "/" in spec_s:
        name, batch = spec_s.split("/")
        op = next(o for o in workloads.resolve("resnet50", batch=int(batch), layout=layout).ops
                  if o.name == name)
    else:
        op = workloads.resolve(spec_s).ops[0]
    takes = {a.name for a in spec.args}
    if "conv" in takes:
        problem = spec.problem(conv=op)
    elif "op" in takes:
        problem = spec.problem(op=op)
    elif op.kind == "gemm":
        problem = spec.problem(m=op.M, n=op.N, k=op.K)
    else:                  # relu: the grid that fills an H100 once (132 SMs x 8 blocks of 256)
        problem = spec.problem(n=op.n, grid=(1056,), block=(256,))
    dev = spec.device(problem)
    arrays = _device_arrays(cuda, dev, dev.inputs(np.random.default_rng(0)))
    dev.launch(arrays)
    cuda.synchronize()
    print(item, "launched")

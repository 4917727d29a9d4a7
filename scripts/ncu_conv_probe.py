# launches each conv a few times (one ncu profile per launch, --launch-skip 1)
import sys

import numpy as np
from numba import cuda

import workloads
from simulator.measure.suites import device_arrays
from simulator.simt.kernels import REGISTRY

spec_s, layout, kernel = sys.argv[1:4]
op = workloads.resolve(spec_s, layout=layout).ops[0]
spec = REGISTRY.get(kernel)
dev = spec.device(spec.problem(conv=op))
inputs = dev.inputs(np.random.default_rng(0))
arrays = device_arrays(cuda, dev, inputs)
for _ in range(3):
    dev.launch(arrays)
cuda.synchronize()

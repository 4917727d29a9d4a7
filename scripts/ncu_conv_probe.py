# launches each conv a few times (one ncu profile per launch, --launch-skip 1)
import sys, numpy as np
from numba import cuda
import workloads
from simulator.simt.kernels import REGISTRY
from simulator.measure.suites import _device_arrays
spec_s = sys.argv[1]; layout = sys.argv[2]; kernel = sys.argv[3]
op = workloads.resolve(spec_s, layout=layout).ops[0]
spec = REGISTRY.get(kernel)
dev = spec.device(spec.problem(conv=op))
inputs = dev.inputs(np.random.default_rng(0))
arrays = _device_arrays(cuda, dev, inputs)
for i in range(3):
    dev.launch(arrays)
cuda.synchronize()

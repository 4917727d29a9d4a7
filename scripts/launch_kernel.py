"""Launch registered roofsim kernels once each on the GPU (for ncu to profile them all in
one run):

    python3 scripts/launch_kernel.py KERNEL=WORKLOAD[@LAYOUT] ...

WORKLOAD is a workload spec (gemm:MxNxK, relu:N) or a ResNet-50 layer name with its
batch after a slash (layer3.0.conv2/8); inputs are random (the counters suite's child,
``simulator.measure.counters``, with the same problem syntax).
"""
import sys

from simulator.measure.counters import _child

_child(sys.argv[1:])

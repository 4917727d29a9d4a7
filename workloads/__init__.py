"""What to compute, hardware-independent: tensor ops, networks, topology import."""
from .ir import DTYPES, BatchNorm, Conv2d, Elementwise, Gemm, Network, Operand, Pool2d, TensorOp
from .networks import NETWORKS, conv_ablation, resnet50, resolve
from .scalesim import load_topology

__all__ = ["DTYPES", "BatchNorm", "Conv2d", "Elementwise", "Gemm", "Operand", "Pool2d", "TensorOp",
           "NETWORKS", "Network", "conv_ablation", "resnet50", "resolve", "load_topology"]

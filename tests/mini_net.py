"""A ResNet-shaped network small enough for brute force and numba's CUDA simulator: a
stem (convolution, batch norm with ReLU, 3x3/2 max pool), one bottleneck-like block
with a projection shortcut (its batch norm adding the shortcut), a second block with an
identity shortcut, the global average pool, the FC and its bias."""
from workloads.ir import BatchNorm, Conv2d, Gemm, Pool2d
from workloads.networks import Network


def mini(n: int = 2) -> Network:
    ops = [Conv2d(name="conv1", N=n, C=3, H=8, W=8, K=4, R=3, S=3, stride=2, padding=1),
           BatchNorm(name="bn1", N=n, C=4, H=4, W=4, relu=True),
           Pool2d(name="maxpool", N=n, C=4, H=4, W=4, R=3, S=3, stride=2, padding=1),
           Conv2d(name="a.conv1", N=n, C=4, H=2, W=2, K=4, R=3, S=3, padding=1),
           BatchNorm(name="a.bn1", N=n, C=4, H=2, W=2, relu=True),
           Conv2d(name="a.conv2", N=n, C=4, H=2, W=2, K=8, R=1, S=1),
           Conv2d(name="a.down", N=n, C=4, H=2, W=2, K=8, R=1, S=1),
           BatchNorm(name="a.bn2", N=n, C=8, H=2, W=2, relu=True, residual=True),
           Conv2d(name="b.conv1", N=n, C=8, H=2, W=2, K=8, R=1, S=1),
           BatchNorm(name="b.bn1", N=n, C=8, H=2, W=2, relu=True, residual=True),
           Pool2d(name="avgpool", N=n, C=8, H=2, W=2, R=2, S=2, mode="avg"),
           Gemm(name="fc", M=n, N=5, K=8),
           BatchNorm(name="fc.bias", N=n, C=5, H=1, W=1)]
    edges = (("a.down", ("maxpool",)), ("a.bn2", ("a.conv2", "a.down")),
             ("b.bn1", ("b.conv1", "a.bn2")))
    return Network("mini", tuple(ops), edges=edges)

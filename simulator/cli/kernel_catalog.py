"""The kernel registry's names and arguments as plain data, for ``--help`` (which must not
import the kernels, and with them numba). Written from the registry by
``python -m simulator.cli.kernel_options``; ``tests/test_registry.py`` holds it equal to
the registry, so a kernel added there fails that test until this file is written anew."""

KERNELS = [
    {'name': 'relu', 'computes': 'elementwise', 'args': [
        {'name': 'n', 'kind': 'size', 'help': 'elements', 'choices': (), 'ndim': 1, 'required': True},
        {'name': 'grid', 'kind': 'dims', 'help': 'blocks (any: the loop strides; default fills every SM once)', 'choices': (), 'ndim': 1, 'required': False},
        {'name': 'block', 'kind': 'dims', 'help': 'threads per block (default 256)', 'choices': (), 'ndim': 1, 'required': False},
    ]},
    {'name': 'matadd', 'computes': 'elementwise', 'args': [
        {'name': 'm', 'kind': 'size', 'help': 'rows', 'choices': (), 'ndim': 1, 'required': True},
        {'name': 'n', 'kind': 'size', 'help': 'columns', 'choices': (), 'ndim': 1, 'required': True},
        {'name': 'block', 'kind': 'dims', 'help': 'threads per block, BXxBY (default 16x16)', 'choices': (), 'ndim': 2, 'required': False},
    ]},
    {'name': 'gemm-naive', 'computes': 'gemm', 'args': [
        {'name': 'm', 'kind': 'size', 'help': 'rows of C', 'choices': (), 'ndim': 1, 'required': True},
        {'name': 'n', 'kind': 'size', 'help': 'columns of C', 'choices': (), 'ndim': 1, 'required': True},
        {'name': 'k', 'kind': 'size', 'help': 'the reduction', 'choices': (), 'ndim': 1, 'required': True},
        {'name': 'thread_x', 'kind': 'choice', 'help': "threadIdx.x on C's columns (coalesced) or rows", 'choices': ('cols', 'rows'), 'ndim': 1, 'required': False},
        {'name': 'block', 'kind': 'dims', 'help': 'threads per block, BXxBY (default 16x16)', 'choices': (), 'ndim': 2, 'required': False},
    ]},
    {'name': 'gemm-tiled', 'computes': 'gemm', 'args': [
        {'name': 'm', 'kind': 'size', 'help': 'rows of C', 'choices': (), 'ndim': 1, 'required': True},
        {'name': 'n', 'kind': 'size', 'help': 'columns of C', 'choices': (), 'ndim': 1, 'required': True},
        {'name': 'k', 'kind': 'size', 'help': 'the reduction', 'choices': (), 'ndim': 1, 'required': True},
        {'name': 'tile', 'kind': 'choice', 'help': 'T: the block is T x T threads (default 16)', 'choices': (8, 16, 32), 'ndim': 1, 'required': False},
    ]},
    {'name': 'conv-direct', 'computes': 'conv2d', 'args': [
        {'name': 'conv', 'kind': 'conv', 'help': "a convolution (workloads.ir.Conv2d; its layout is the tensors')", 'choices': (), 'ndim': 1, 'required': True},
        {'name': 'block', 'kind': 'dims', 'help': 'threads per block (default 256)', 'choices': (), 'ndim': 1, 'required': False},
    ]},
    {'name': 'conv-im2col', 'computes': 'conv2d', 'args': [
        {'name': 'conv', 'kind': 'conv', 'help': "a convolution (workloads.ir.Conv2d; its layout is the tensors')", 'choices': (), 'ndim': 1, 'required': True},
        {'name': 'block', 'kind': 'dims', 'help': 'threads per block of the im2col launch (default 256)', 'choices': (), 'ndim': 1, 'required': False},
        {'name': 'tile', 'kind': 'choice', 'help': 'T of the GEMM launch (default 16)', 'choices': (8, 16, 32), 'ndim': 1, 'required': False},
    ]},
    {'name': 'layout-transform', 'computes': 'elementwise', 'args': [
        {'name': 'conv', 'kind': 'conv', 'help': "the convolution whose input it lays out (into the conv's layout, from the other)", 'choices': (), 'ndim': 1, 'required': True},
        {'name': 'block', 'kind': 'dims', 'help': 'threads per block (default 256)', 'choices': (), 'ndim': 1, 'required': False},
    ]},
    {'name': 'pool2d', 'computes': 'pool2d', 'args': [
        {'name': 'op', 'kind': 'op', 'help': 'the layer (workloads.ir.Pool2d: its window, stride, padding, mode and layout)', 'choices': ('pool2d',), 'ndim': 1, 'required': True},
        {'name': 'block', 'kind': 'dims', 'help': 'threads per block (default 256)', 'choices': (), 'ndim': 1, 'required': False},
    ]},
    {'name': 'batchnorm', 'computes': 'batchnorm', 'args': [
        {'name': 'op', 'kind': 'op', 'help': 'the layer (workloads.ir.BatchNorm: its tensor, layout, residual and ReLU)', 'choices': ('batchnorm',), 'ndim': 1, 'required': True},
        {'name': 'block', 'kind': 'dims', 'help': 'threads per block (default 256)', 'choices': (), 'ndim': 1, 'required': False},
    ]},
]


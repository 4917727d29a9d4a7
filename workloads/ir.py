"""A small stated IR of tensor ops: GEMM, 2-D convolution, element-wise, 2-D pooling and
batch norm at inference (its per-channel shift, optionally with a residual add and ReLU).

Every op knows its multiply-accumulates, its FLOPs (2 per MAC; 1 per element for
element-wise ops) and its compulsory bytes: each input element that the op reads read
once, each output element written once -- the least any implementation must move
between DRAM and the chip. Shapes are validated on construction; errors name the
field, the value and what is allowed.

A :class:`Network` is a named tuple of ops in an order where each follows its inputs,
with the edges of a graph that is not a chain. The networks themselves (ResNet-50, the
convolution ablation, workload strings) are :mod:`workloads.networks`'; SCALE-Sim
topologies are read by :mod:`workloads.scalesim`; both build on this module only.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from typing import ClassVar

#: storage dtypes and their sizes in bytes
DTYPES = {"fp64": 8, "fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}
CONV_LAYOUTS = ("nchw", "nhwc")
GEMM_LAYOUTS = ("row", "col")
ELEMENTWISE_OPS = {"relu": (1, 1), "add": (2, 1), "sigmoid": (1, 4), "copy": (1, 0),
                   "gelu": (1, 8), "silu": (1, 5), "tanh": (1, 4), "pow": (1, 1), "scale": (1, 1)}
# op -> (inputs, FLOP per element), by convention: sigmoid 4 (exp, add, div, neg), silu
# 5 (a sigmoid and a multiply), tanh 4 (as a sigmoid), gelu 8 (erf's or tanh's form and
# its 4 multiplies and adds), pow 1 (a square or a cube, one or two multiplies, counted 1),
# scale 1 (a tensor and a scalar added, multiplied, subtracted or divided)


MAX_DIM = 2**31 - 1      # a tensor dimension: a C int, as CUDA kernels index it
MAX_ELEMENTS = 2**48     # elements of one tensor (1 PiB of fp32): beyond any device


def show(value, limit: int = 60) -> str:
    """``value`` as an error shows it: its repr, cut to ``limit`` characters ("..."
    ending it where cut). The same as ``simulator.arguments.show``, for the packages
    below ``simulator`` (which import nothing from it)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"


def _check_dim(obj, *names, minimum=1, maximum=MAX_DIM):
    for n in names:
        v = getattr(obj, n)
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{type(obj).__name__}.{n} = {_short(v)}: must be an integer >= {minimum}")
        if v < minimum:
            raise ValueError(f"{type(obj).__name__}.{n} = {_short(v)}: must be >= {minimum}")
        if v > maximum:
            raise ValueError(f"{type(obj).__name__}.{n} = {_short(v)}: must be at most {maximum}")


class TensorTooLarge(ValueError):
    """An operand over MAX_ELEMENTS elements (``workloads.resolve`` says what batch, if
    one caused it, is the largest allowed)."""


def _check_tensors(op):
    """Each operand of ``op`` at most MAX_ELEMENTS elements."""
    for t in op.operands():
        if t.elements > MAX_ELEMENTS:
            raise TensorTooLarge(f"{type(op).__name__}: tensor {t.name} has {t.elements:.3g} elements; "
                             f"at most {MAX_ELEMENTS:.3g} (2**48)")


def _check_choice(obj, name, allowed):
    v = getattr(obj, name)
    if v not in allowed:
        raise ValueError(f"{type(obj).__name__}.{name} = {show(v)}: allowed: {', '.join(allowed)}")


@dataclass(frozen=True)
class Operand:
    """One tensor an op reads or writes."""

    name: str
    role: str            # "input", "weight" or "output"
    shape: tuple[int, ...]
    layout: str
    dtype: str
    touched: int         # elements the op actually reads/writes (strided convs skip some)

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def bytes(self) -> int:
        return self.elements * DTYPES[self.dtype]

    @property
    def touched_bytes(self) -> int:
        return self.touched * DTYPES[self.dtype]


@dataclass(frozen=True, kw_only=True)
class TensorOp:
    """Base of the op set. ``name`` is the layer name within a network."""

    name: str = ""
    dtype: str = "fp32"
    kind: ClassVar[str] = ""

    def __post_init__(self):
        _check_choice(self, "dtype", tuple(DTYPES))

    @property
    def dtype_bytes(self) -> int:
        return DTYPES[self.dtype]

    def macs(self) -> int:
        return 0

    def flops(self) -> int:
        return 2 * self.macs()

    def operands(self) -> tuple[Operand, ...]:
        raise NotImplementedError

    def min_bytes(self) -> int:
        """Compulsory DRAM bytes: every touched input read once, every output written once."""
        return sum(o.touched_bytes for o in self.operands())

    def input_bytes(self) -> int:
        """Bytes of the operands the host must send (inputs and weights, whole tensors)."""
        return sum(o.bytes for o in self.operands() if o.role != "output")

    def with_dtype(self, dtype: str) -> TensorOp:
        return dataclasses.replace(self, dtype=dtype)

    def dims(self) -> dict:
        """The op's defining fields (no name/dtype), for tables and JSON."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name not in ("name", "dtype")}

    def identity(self) -> dict:
        """What names the op: name, kind, dtype and its defining fields (no derived
        counts; cheap)."""
        return {"name": self.name, "kind": self.kind, "dtype": self.dtype, **self.dims()}

    def to_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "dtype": self.dtype, **self.dims(),
                "macs": self.macs(), "flops": self.flops(), "min_bytes": self.min_bytes()}

    def describe(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.dims().items())

    def reads(self) -> int:
        """How many tensors the op reads (its weights not counted)."""
        return 1

    def in_shape(self) -> tuple:
        """(N, C, H, W) of the tensor it reads (a GEMM's A: M x K x 1 x 1; an
        element-wise op's: n x 1 x 1 x 1)."""
        raise NotImplementedError

    def out_shape(self) -> tuple:
        """(N, C, H, W) of the tensor it writes (a GEMM's C: M x N x 1 x 1)."""
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class Gemm(TensorOp):
    """``C[M,N] = A[M,K] @ B[K,N]``; ``layout`` is the storage order of all three."""

    M: int
    N: int
    K: int
    layout: str = "row"
    kind: ClassVar[str] = "gemm"

    def __post_init__(self):
        super().__post_init__()
        _check_dim(self, "M", "N", "K")
        _check_choice(self, "layout", GEMM_LAYOUTS)
        _check_tensors(self)

    def macs(self) -> int:
        return self.M * self.N * self.K

    def operands(self):
        d, lay = self.dtype, self.layout
        return (Operand("A", "input", (self.M, self.K), lay, d, self.M * self.K),
                Operand("B", "weight", (self.K, self.N), lay, d, self.K * self.N),
                Operand("C", "output", (self.M, self.N), lay, d, self.M * self.N))

    def describe(self):
        return f"{self.M}x{self.N}x{self.K} ({self.layout}-major)"

    def in_shape(self):
        return (self.M, self.K, 1, 1)

    def out_shape(self):
        return (self.M, self.N, 1, 1)


def _touched_1d(size: int, out: int, kernel: int, stride: int, pad: int) -> int:
    """Input positions in [0, size) that some output position's window reads."""
    if stride <= kernel:  # windows overlap or abut: one contiguous run
        lo = max(0, -pad)
        hi = min(size - 1, (out - 1) * stride + kernel - 1 - pad)
        return max(0, hi - lo + 1)
    # disjoint windows (stride > kernel): those wholly inside [0, size) read ``kernel``
    # each; at most a window or two at each end is cut by the padding (closed form, so a
    # height of 10^9 costs nothing)
    def overlap(o):
        a = o * stride - pad
        return max(0, min(size - 1, a + kernel - 1) - max(0, a) + 1)
    first = max(0, -(-(pad - kernel + 1) // stride))     # the first window reaching 0
    last = min(out - 1, (size - 1 + pad) // stride)       # the last one starting inside
    if last < first:
        return 0
    lo = max(first, -(-pad // stride))                    # whole windows: lo..hi
    hi = min(last, (size - kernel + pad) // stride)
    if hi < lo:
        return sum(overlap(o) for o in range(first, last + 1))
    return ((hi - lo + 1) * kernel + sum(overlap(o) for o in range(first, lo))
            + sum(overlap(o) for o in range(hi + 1, last + 1)))


class _Window:
    """The output size of a window (R x S, stride, padding) slid over H x W: floor, as
    PyTorch and cuDNN."""

    @property
    def P(self) -> int:
        return (self.H + 2 * self.padding - self.R) // self.stride + 1

    @property
    def Q(self) -> int:
        return (self.W + 2 * self.padding - self.S) // self.stride + 1


@dataclass(frozen=True, kw_only=True)
class Conv2d(_Window, TensorOp):
    """2-D convolution (cross-correlation): input N,C,H,W; K filters of C/groups x R x S.

    Output P x Q with ``P = (H + 2*padding - R) // stride + 1`` (floor, as PyTorch and
    cuDNN). ``layout`` is the activation layout; weights are K,C,R,S for NCHW and
    R,S,C,K for NHWC.
    """

    N: int
    C: int
    H: int
    W: int
    K: int
    R: int
    S: int
    stride: int = 1
    padding: int = 0
    groups: int = 1
    layout: str = "nchw"
    kind: ClassVar[str] = "conv2d"

    def __post_init__(self):
        super().__post_init__()
        _check_dim(self, "N", "C", "H", "W", "K", "R", "S", "stride", "groups")
        _check_dim(self, "padding", minimum=0)
        _check_choice(self, "layout", CONV_LAYOUTS)
        if self.R > self.H + 2 * self.padding:
            raise ValueError(f"Conv2d.R = {self.R}: filter is larger than the padded input "
                             f"(H + 2*padding = {self.H + 2 * self.padding})")
        if self.S > self.W + 2 * self.padding:
            raise ValueError(f"Conv2d.S = {self.S}: filter is larger than the padded input "
                             f"(W + 2*padding = {self.W + 2 * self.padding})")
        for n in ("C", "K"):
            if getattr(self, n) % self.groups:
                raise ValueError(f"Conv2d.{n} = {getattr(self, n)}: must be divisible by "
                                 f"groups ({self.groups})")
        _check_tensors(self)

    def macs(self) -> int:
        return self.N * self.K * self.P * self.Q * (self.C // self.groups) * self.R * self.S

    def operands(self):
        d = self.dtype
        th = _touched_1d(self.H, self.P, self.R, self.stride, self.padding)
        tw = _touched_1d(self.W, self.Q, self.S, self.stride, self.padding)
        if self.layout == "nchw":
            xs, ws, ys = ((self.N, self.C, self.H, self.W), (self.K, self.C // self.groups, self.R, self.S),
                          (self.N, self.K, self.P, self.Q))
        else:
            xs, ws, ys = ((self.N, self.H, self.W, self.C), (self.R, self.S, self.C // self.groups, self.K),
                          (self.N, self.P, self.Q, self.K))
        wl = "kcrs" if self.layout == "nchw" else "rsck"
        return (Operand("input", "input", xs, self.layout, d, self.N * self.C * th * tw),
                Operand("weight", "weight", ws, wl, d, math.prod(ws)),
                Operand("output", "output", ys, self.layout, d, math.prod(ys)))

    def as_gemm(self) -> Gemm:
        """The im2col GEMM: M = N*P*Q output pixels, N = K filters, K = C*R*S (groups=1)."""
        if self.groups != 1:
            raise ValueError(f"Conv2d.groups = {self.groups}: im2col lowering needs groups = 1")
        return Gemm(name=self.name, dtype=self.dtype, M=self.N * self.P * self.Q, N=self.K,
                    K=self.C * self.R * self.S)

    def describe(self):
        g = f" g{self.groups}" if self.groups != 1 else ""
        return (f"{self.N}x{self.C}x{self.H}x{self.W} -> {self.K} {self.R}x{self.S}/{self.stride} "
                f"p{self.padding}{g} -> {self.P}x{self.Q} {self.layout}")

    def in_shape(self):
        return (self.N, self.C, self.H, self.W)

    def out_shape(self):
        return (self.N, self.K, self.P, self.Q)


@dataclass(frozen=True, kw_only=True)
class Elementwise(TensorOp):
    """An element-wise op over ``n`` elements (``relu``: y = max(x, 0))."""

    n: int
    op: str = "relu"
    kind: ClassVar[str] = "elementwise"

    def __post_init__(self):
        super().__post_init__()
        _check_dim(self, "n", maximum=MAX_ELEMENTS)
        _check_choice(self, "op", tuple(ELEMENTWISE_OPS))

    def flops(self) -> int:
        return self.n * ELEMENTWISE_OPS[self.op][1]

    def operands(self):
        ins = ELEMENTWISE_OPS[self.op][0]
        xs = tuple(Operand(f"x{i}", "input", (self.n,), "linear", self.dtype, self.n)
                   for i in range(ins))
        return xs + (Operand("y", "output", (self.n,), "linear", self.dtype, self.n),)

    def describe(self):
        return f"{self.op} n={self.n}"

    def reads(self):
        return ELEMENTWISE_OPS[self.op][0]

    def in_shape(self):
        return (self.n, 1, 1, 1)

    out_shape = in_shape


POOL_MODES = ("max", "avg")


@dataclass(frozen=True, kw_only=True)
class Pool2d(_Window, TensorOp):
    """2-D pooling over an R x S window (``max`` or ``avg``) of an N,C,H,W tensor, each
    channel alone; output P x Q as a convolution's (floor). Padding is outside the max
    (a padded position never wins) and outside the average's count (the window's
    in-bounds positions are averaged). Global average pooling is ``avg`` with R = H,
    S = W. ``layout`` (nchw | nhwc) is the input's and the output's."""

    N: int
    C: int
    H: int
    W: int
    R: int
    S: int
    stride: int = 1
    padding: int = 0
    mode: str = "max"
    layout: str = "nchw"
    kind: ClassVar[str] = "pool2d"

    def __post_init__(self):
        super().__post_init__()
        _check_dim(self, "N", "C", "H", "W", "R", "S", "stride")
        _check_dim(self, "padding", minimum=0)
        _check_choice(self, "mode", POOL_MODES)
        _check_choice(self, "layout", CONV_LAYOUTS)
        if self.R > self.H + 2 * self.padding or self.S > self.W + 2 * self.padding:
            raise ValueError(f"Pool2d: window {self.R}x{self.S} is larger than the padded input "
                             f"({self.H + 2 * self.padding}x{self.W + 2 * self.padding})")
        if 2 * self.padding > max(self.R, self.S):
            raise ValueError(f"Pool2d.padding = {self.padding}: at most half the window "
                             f"({self.R}x{self.S}), as PyTorch's pools allow")
        _check_tensors(self)

    def flops(self) -> int:
        """One operation (a compare or an add) per window position read, per output;
        the average's one multiply per output."""
        per = self.R * self.S + (1 if self.mode == "avg" else 0)
        return self.N * self.C * self.P * self.Q * per

    def operands(self):
        d = self.dtype
        th = _touched_1d(self.H, self.P, self.R, self.stride, self.padding)
        tw = _touched_1d(self.W, self.Q, self.S, self.stride, self.padding)
        if self.layout == "nchw":
            xs, ys = (self.N, self.C, self.H, self.W), (self.N, self.C, self.P, self.Q)
        else:
            xs, ys = (self.N, self.H, self.W, self.C), (self.N, self.P, self.Q, self.C)
        return (Operand("input", "input", xs, self.layout, d, self.N * self.C * th * tw),
                Operand("output", "output", ys, self.layout, d, math.prod(ys)))

    def describe(self):
        return (f"{self.mode} {self.N}x{self.C}x{self.H}x{self.W} {self.R}x{self.S}/{self.stride} "
                f"p{self.padding} -> {self.P}x{self.Q} {self.layout}")

    def in_shape(self):
        return (self.N, self.C, self.H, self.W)

    def out_shape(self):
        return (self.N, self.C, self.P, self.Q)


@dataclass(frozen=True, kw_only=True)
class BatchNorm(TensorOp):
    """Batch norm at inference on an N,C,H,W tensor, as roofsim lowers it: the
    per-channel scale is folded into the preceding convolution's weights (``w' = w *
    gamma / sqrt(var + eps)``), so what runs is the per-channel shift ``y = x + b[c]``
    with ``b = beta - mean * gamma / sqrt(var + eps)``; ``residual`` adds a second
    tensor of the same shape (ResNet's shortcut, whose own batch norm's shift is summed
    into ``b``), ``relu`` clamps at 0. One operation per element for each of shift,
    add and ReLU."""

    N: int
    C: int
    H: int
    W: int
    layout: str = "nchw"
    relu: bool = False
    residual: bool = False
    kind: ClassVar[str] = "batchnorm"

    def __post_init__(self):
        super().__post_init__()
        _check_dim(self, "N", "C", "H", "W")
        _check_choice(self, "layout", CONV_LAYOUTS)
        for f in ("relu", "residual"):
            if not isinstance(getattr(self, f), bool):
                raise ValueError(f"BatchNorm.{f} = {show(getattr(self, f))}: must be true or false")
        _check_tensors(self)

    @property
    def elements(self) -> int:
        return self.N * self.C * self.H * self.W

    def flops(self) -> int:
        return self.elements * (1 + int(self.residual) + int(self.relu))

    def operands(self):
        d, n = self.dtype, self.elements
        shape = ((self.N, self.C, self.H, self.W) if self.layout == "nchw"
                 else (self.N, self.H, self.W, self.C))
        ops = [Operand("input", "input", shape, self.layout, d, n),
               Operand("shift", "weight", (self.C,), "linear", d, self.C)]
        if self.residual:
            ops.append(Operand("residual", "input", shape, self.layout, d, n))
        return tuple(ops) + (Operand("output", "output", shape, self.layout, d, n),)

    def describe(self):
        extra = "".join(f" +{f}" for f in ("residual", "relu") if getattr(self, f))
        return f"shift{extra} {self.N}x{self.C}x{self.H}x{self.W} {self.layout}"

    def reads(self):
        return 2 if self.residual else 1

    def in_shape(self):
        return (self.N, self.C, self.H, self.W)

    out_shape = in_shape


@dataclass(frozen=True, kw_only=True)
class BatchedGemm(TensorOp):
    """``batch`` independent products ``C[b] = A[b] @ B[b]`` (``torch.bmm``; a batched
    ``matmul``), row-major."""

    batch: int
    M: int
    N: int
    K: int
    kind: ClassVar[str] = "bmm"

    def __post_init__(self):
        super().__post_init__()
        _check_dim(self, "batch", "M", "N", "K")
        _check_tensors(self)

    def macs(self) -> int:
        return self.batch * self.M * self.N * self.K

    def operands(self):
        d, b = self.dtype, self.batch
        return (Operand("A", "input", (b, self.M, self.K), "row", d, b * self.M * self.K),
                Operand("B", "input", (b, self.K, self.N), "row", d, b * self.K * self.N),
                Operand("C", "output", (b, self.M, self.N), "row", d, b * self.M * self.N))

    def describe(self):
        return f"{self.batch} x {self.M}x{self.N}x{self.K}"

    def reads(self):
        return 2

    def in_shape(self):
        return (self.batch, self.M, self.K, 1)

    def out_shape(self):
        return (self.batch, self.M, self.N, 1)


@dataclass(frozen=True, kw_only=True)
class RowOp(TensorOp):
    """An op over the ``cols`` elements of each of ``rows`` rows: ``layernorm`` (the
    mean and variance of each row, then ``(x - mean) / sqrt(var + eps)``, scaled and
    shifted by ``cols`` weights and biases where ``affine``: 8 FLOP an element by
    convention -- 1 for the mean, 3 for the variance, 2 to normalise, 2 for the affine
    map) or ``softmax`` (``exp(x - max) / sum``: 5 an element -- max, subtract, exp, sum,
    divide)."""

    rows: int
    cols: int
    op: str = "layernorm"
    affine: bool = True
    kind: ClassVar[str] = "rowop"

    def __post_init__(self):
        super().__post_init__()
        _check_dim(self, "rows", "cols")
        _check_choice(self, "op", ("layernorm", "softmax"))
        if not isinstance(self.affine, bool):
            raise ValueError(f"RowOp.affine = {show(self.affine)}: must be true or false")
        _check_tensors(self)

    def flops(self) -> int:
        per = (8 if self.affine else 6) if self.op == "layernorm" else 5
        return self.rows * self.cols * per

    def operands(self):
        d, n = self.dtype, self.rows * self.cols
        shape = (self.rows, self.cols)
        ws = ((Operand("weight", "weight", (self.cols,), "linear", d, self.cols),
               Operand("bias", "weight", (self.cols,), "linear", d, self.cols))
              if self.op == "layernorm" and self.affine else ())
        return (Operand("x", "input", shape, "row", d, n),) + ws + (
            Operand("y", "output", shape, "row", d, n),)

    def describe(self):
        return f"{self.op} {self.rows}x{self.cols}"

    def in_shape(self):
        return (self.rows, self.cols, 1, 1)

    out_shape = in_shape


def _clipped_sum(lo: int, hi: int, top: int) -> int:
    """sum(min(max(x, 0), top) for x in range(lo, hi + 1)), in closed form."""
    a, b = max(lo, 1), min(hi, top)
    inner = (a + b) * (b - a + 1) // 2 if b >= a else 0
    return inner + top * max(0, hi - max(lo, top + 1) + 1)


def _causal_pairs(q: int, kv: int) -> int:
    """The (query, key) pairs a causal mask leaves, the fewer of its two alignments:
    PyTorch's top-left ``is_causal`` (query i sees keys 0..i) and FlashAttention's
    bottom-right (query i sees keys up to i + kv - q)."""
    return min(_clipped_sum(1, q, kv), _clipped_sum(1 + kv - q, kv, kv))


@dataclass(frozen=True, kw_only=True)
class Attention(TensorOp):
    """Scaled dot-product attention, ``softmax(Q K^T * scale) V``, as a fused kernel
    (FlashAttention, memory-efficient attention, cuDNN's) computes it: Q is batch x
    heads x q_len x head_dim, K and V batch x kv_heads x kv_len x head_dim (grouped-query
    attention where kv_heads < heads), O as Q. Its MACs are the two products' over the
    (query, key) pairs computed (all of them, or a causal mask's); the softmax's work is
    not counted (a lower bound), nor an explicit mask's bytes. Its compulsory bytes:
    Q, K, V read and O written once -- the score matrix never leaves the chip."""

    batch: int
    heads: int
    q_len: int
    kv_len: int
    head_dim: int
    kv_heads: int = 0          # 0: as many as heads
    causal: bool = False
    kind: ClassVar[str] = "attention"

    def __post_init__(self):
        super().__post_init__()
        _check_dim(self, "batch", "heads", "q_len", "kv_len", "head_dim")
        _check_dim(self, "kv_heads", minimum=0)
        if not isinstance(self.causal, bool):
            raise ValueError(f"Attention.causal = {show(self.causal)}: must be true or false")
        if self.kv_heads and self.heads % self.kv_heads:
            raise ValueError(f"Attention.kv_heads = {self.kv_heads}: must divide heads ({self.heads})")
        _check_tensors(self)

    @property
    def pairs(self) -> int:
        return _causal_pairs(self.q_len, self.kv_len) if self.causal else self.q_len * self.kv_len

    def macs(self) -> int:
        return 2 * self.batch * self.heads * self.pairs * self.head_dim

    def operands(self):
        d, b, hd = self.dtype, self.batch, self.head_dim
        kvh = self.kv_heads or self.heads
        q = (b, self.heads, self.q_len, hd)
        kv = (b, kvh, self.kv_len, hd)
        return (Operand("Q", "input", q, "bhsd", d, math.prod(q)),
                Operand("K", "input", kv, "bhsd", d, math.prod(kv)),
                Operand("V", "input", kv, "bhsd", d, math.prod(kv)),
                Operand("O", "output", q, "bhsd", d, math.prod(q)))

    def describe(self):
        kvh = f" kv_heads={self.kv_heads}" if self.kv_heads and self.kv_heads != self.heads else ""
        return (f"b={self.batch} h={self.heads} q={self.q_len} kv={self.kv_len} d={self.head_dim}"
                f"{kvh}{' causal' if self.causal else ''}")

    def reads(self):
        return 3

    def in_shape(self):
        return (self.batch, self.heads, self.q_len, self.head_dim)

    out_shape = in_shape


@dataclass(frozen=True, kw_only=True)
class Embedding(TensorOp):
    """A table lookup: ``tokens`` rows of ``dim`` elements gathered from a ``vocab`` x
    ``dim`` table (``torch.nn.Embedding``). Compulsory bytes: the rows looked up (at
    most the table) read once, the output written once; the token ids are not counted
    (an int64 tensor workloads.ir has no dtype for: a lower bound)."""

    tokens: int
    vocab: int
    dim: int
    kind: ClassVar[str] = "embedding"

    def __post_init__(self):
        super().__post_init__()
        _check_dim(self, "tokens", "vocab", "dim")
        _check_tensors(self)

    def flops(self) -> int:
        return 0

    def operands(self):
        d = self.dtype
        return (Operand("table", "weight", (self.vocab, self.dim), "row", d,
                        min(self.tokens, self.vocab) * self.dim),
                Operand("y", "output", (self.tokens, self.dim), "row", d, self.tokens * self.dim))

    def describe(self):
        return f"{self.tokens} of {self.vocab}x{self.dim}"

    def in_shape(self):
        return (self.tokens, 1, 1, 1)

    def out_shape(self):
        return (self.tokens, self.dim, 1, 1)


OP_KINDS = {c.kind: c for c in (Gemm, Conv2d, Elementwise, Pool2d, BatchNorm, BatchedGemm, RowOp,
                                Attention, Embedding)}


# ---------------------------------------------------------------- networks

INPUT = "input"      # the name a network's first layer reads


def _fits(reader, shape) -> bool:
    """Whether ``reader`` can read a tensor of ``shape`` (N, C, H, W): the shape it
    reads exactly; a GEMM also a tensor of its M rows of K (flattened); an element-wise
    op any tensor of its n elements."""
    want = reader.in_shape()
    if tuple(shape) == want:
        return True
    if reader.kind == "gemm":
        return shape[0] == reader.M and math.prod(shape[1:]) == reader.K
    if reader.kind == "elementwise":
        return math.prod(shape) == reader.n
    return False


def _dims(shape) -> str:
    return "x".join(map(str, shape))


@dataclass(frozen=True)
class Network:
    """An ordered list of ops with a name and the parameters that made it.

    ``inputs``: the tensors from outside the network that its layers read (by default
    one, ``INPUT``). ``edges``: (layer, the tensors it reads: layers before it or
    inputs) for a network that is not a chain; a layer not named there reads the layer
    before it (the first, ``INPUT``). The order of ``ops`` is one in which every layer
    follows its inputs. Declared edges must fit (each layer reads tensors of the shape
    it takes, as many as it takes); an implied chain is checked by ``check_connected``
    where it matters (a plan), since a list of separate layers -- a SCALE-Sim topology
    built by hand -- is a valid network for the systolic engine. ``independent`` builds
    a network of separate problems, each layer reading its own input."""

    name: str
    ops: tuple[TensorOp, ...]
    description: str = ""
    params: dict = field(default_factory=dict)
    edges: tuple = ()
    inputs: tuple = (INPUT,)

    @classmethod
    def independent(cls, name, ops, description="", params=None) -> Network:
        """Separate problems (an ablation, a SCALE-Sim topology): layer ``x`` reads
        its own input ``x.input``, nothing flows between layers."""
        ops = tuple(ops)
        ins = tuple(f"{op.name}.{INPUT}" for op in ops)
        return cls(name, ops, description, dict(params or {}),
                   edges=tuple((op.name, (i,)) for op, i in zip(ops, ins)), inputs=ins)

    def __post_init__(self):
        if not self.ops:
            raise ValueError(f"workload {show(self.name)} has no layers")
        if (not isinstance(self.inputs, tuple) or not self.inputs
                or not all(isinstance(t, str) and t for t in self.inputs)):
            raise ValueError(f"workload {show(self.name)}: inputs = {_short(self.inputs)}: must be a "
                             "non-empty tuple of tensor names")
        seen = set()
        for op in self.ops:
            if op.name in seen:
                raise ValueError(f"workload {show(self.name)}: layer name {show(op.name)} appears twice")
            seen.add(op.name)
        clash = seen & set(self.inputs)
        if clash:
            raise ValueError(f"workload {show(self.name)}: {show(sorted(clash)[0])} names both an input "
                             "and a layer")
        done = set(self.inputs)
        given = dict(self.edges)
        for op in self.ops:
            for src in given.get(op.name, ()):
                if src not in done:
                    raise ValueError(f"workload {show(self.name)}: layer {show(op.name)} reads {show(src)}, "
                                     "which is not an input or a layer before it")
            done.add(op.name)
        unknown = set(given) - done
        if unknown:
            raise ValueError(f"workload {show(self.name)}: "
                             f"edges name unknown layer {show(sorted(unknown)[0])}")
        if self.ops[0].name not in given and INPUT not in self.inputs:
            raise ValueError(f"workload {show(self.name)}: layer {show(self.ops[0].name)} "
                             f"reads {show(INPUT)}, "
                             f"which is not one of its inputs ({', '.join(self.inputs)})")
        if self.edges:
            err = self.connection_error(declared_only=True)
            if err:
                raise ValueError(f"workload {show(self.name)}: {err}")

    @functools.cached_property
    def _reads(self) -> dict:
        """{layer: the tensors it reads}, worked out once (a plan's search asks often)."""
        given = dict(self.edges)
        out, before = {}, INPUT
        for op in self.ops:
            out[op.name] = tuple(given[op.name]) if op.name in given else (before,)
            before = op.name
        return out

    def inputs_of(self, name: str) -> tuple:
        """The tensors ``name`` reads: layers, or the network's inputs."""
        try:
            return self._reads[name]
        except KeyError:
            raise ValueError(f"workload {show(self.name)} has no layer {show(name)}") from None

    def input_shapes(self) -> dict:
        """{input tensor: (N, C, H, W)} of the inputs a layer reads, each the shape of
        the first layer that reads it."""
        return dict(self._input_shapes)

    @functools.cached_property
    def _input_shapes(self) -> dict:
        out = {}
        for op in self.ops:
            for t in self.inputs_of(op.name):
                if t in self.inputs and t not in out:
                    out[t] = op.in_shape()
        return out

    def connection_error(self, declared_only: bool = False):
        """The first layer that reads a tensor of the wrong shape, or the wrong number
        of tensors, in words (None where every layer fits what it reads).
        ``declared_only``: check the declared edges alone, not the implied chain."""
        given = dict(self.edges)
        shape = {}
        for op in self.ops:
            ins = self.inputs_of(op.name)
            if declared_only and op.name not in given:
                for t in ins:
                    if t in self.inputs:
                        shape.setdefault(t, op.in_shape())
                shape[op.name] = op.out_shape()
                continue
            how = "reads" if op.name in given else "would read, as the next layer of a chain,"
            if len(ins) != op.reads():
                return (f"layer {op.name!r} ({op.kind}) {how} {len(ins)} tensor"
                        f"{'s' if len(ins) != 1 else ''} ({', '.join(ins)}); it takes {op.reads()}")
            for t in ins:
                have = shape.get(t)
                if have is None and t in self.inputs:
                    shape[t] = have = op.in_shape()
                if have is not None and not _fits(op, have):
                    what = "input" if t in self.inputs else "output"
                    return (f"layer {op.name!r} {how} {t!r} ({what} {_dims(have)}, N x C x H x W) "
                            f"but takes {_dims(op.in_shape())}")
            shape[op.name] = op.out_shape()
        return None

    def check_connected(self) -> None:
        """Raise where a layer does not fit what it reads (``connection_error``): a
        list of separate layers is not a chain; say how they connect (``edges``) or
        build it with ``Network.independent``."""
        err = self.connection_error()
        if err:
            hint = ("; its layers are not a chain: declare what each reads (edges) or make "
                    "each layer its own problem (Network.independent)") if not self.edges else ""
            raise ValueError(f"workload {show(self.name)}: {err}{hint}")

    def macs(self) -> int:
        return sum(op.macs() for op in self.ops)

    def flops(self) -> int:
        return sum(op.flops() for op in self.ops)

    def min_bytes(self) -> int:
        return sum(op.min_bytes() for op in self.ops)

    def with_dtype(self, dtype: str) -> Network:
        return dataclasses.replace(self, ops=tuple(op.with_dtype(dtype) for op in self.ops),
                                   params={**self.params, "dtype": dtype})

    def identity(self) -> dict:
        """What names the network (its layers' identities are its Results' layers')."""
        return {"name": self.name, "description": self.description, "params": self.params,
                "layers": len(self.ops)}

    def to_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "params": self.params,
                "totals": {"layers": len(self.ops), "macs": self.macs(), "flops": self.flops(),
                           "min_bytes": self.min_bytes()},
                "layers": [op.to_dict() for op in self.ops]}

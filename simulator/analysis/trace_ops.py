"""The op a PyTorch operator call computes, for ``roofsim check`` (``op_of``).

Each mapping reads every argument that changes the op's shape or cost -- from the
call's ``Input Dims`` and ``Concrete Inputs`` -- and checks them, in this order:

1. values no PyTorch call can have (a stride, dilation or groups < 1, a padding < 0, a
   matrix product's operands not 2-D) and shapes that disagree (a product's inner
   dimensions, a convolution's input channels against its weight's times groups) are
   refused: a ValueError naming the ``args`` fields, as for any other impossible value
   in a trace (the file cannot have come from PyTorch);
2. a call ``workloads.ir`` cannot describe faithfully is kept unmapped, (kind, None,
   why): a transposed or dilated convolution, an asymmetric stride or padding (its ops
   have one of each), a pool with dilation or with ``ceil_mode`` where it changes the
   output size, an adaptive pool to other than 1x1, a mean over other than the height
   and width, a product of other than two matrices, another dtype, an empty tensor, or
   an argument the trace does not record (an empty ``Concrete Inputs`` entry);
3. otherwise the op, never one of another shape.

A copy reads one dtype and may write another (``_copy``): ``copy_`` reads its ``src``
and writes ``self``'s dtype, ``_to_copy``, ``to`` and ``type_as`` write the dtype they
ask for (a ScalarType number in ``Concrete Inputs``, or the other tensor's ``Input
type``). A copy that converts is a :class:`Cast` (its bytes those of each side); one to
a dtype workloads.ir has not, or whose dtype the trace does not record, is unmapped with
a note.
"""
from __future__ import annotations

import dataclasses
import math
import re

from workloads.ir import DTYPES, Elementwise

from .trace_fields import decimal, show

#: PyTorch's ``Input type`` names of the dtypes ``workloads.ir`` has (``ir.DTYPES``)
TORCH_DTYPES = {"float": "fp32", "double": "fp64", "c10::Half": "fp16", "c10::BFloat16": "bf16",
                "signed char": "int8"}
#: ``Input type`` entries that are no tensor (their operand has no dtype)
_NOT_TENSORS = ("", "Scalar", "ScalarList", "TensorList", "GenericList", "None")

#: PyTorch's ScalarType numbers (how ``Concrete Inputs`` records a dtype argument, as
#: ``aten::_to_copy``'s) of the dtypes ``workloads.ir`` has
SCALAR_TYPES = {1: "int8", 5: "fp16", 6: "fp32", 7: "fp64", 15: "bf16"}
#: the operators that copy a tensor, converting it where the call asks (see ``_copy``)
_COPIES = ("copy", "contiguous", "clone", "to", "_to_copy", "type_as")

_CONV = ("cudnn_convolution", "convolution", "_convolution", "conv2d")
_TRANSPOSED = ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "cudnn_convolution_transpose",
               "miopen_convolution_transpose", "slow_conv_transpose2d", "slow_conv_transpose3d")
_GEMMS = ("addmm", "mm", "matmul", "linear")
#: the largest stride, padding, dilation or window (workloads.ir's: a C int)
_MAX_INT = 2 ** 31 - 1


def _sizes(d):
    """An operand's shape as a list, or [] where it is no single tensor (a scalar, a
    TensorList)."""
    return list(d) if all(isinstance(x, int) for x in d) else []


def _prod(xs):
    return math.prod(xs) if xs else 0


def _recorded(c, j) -> bool:
    return j < len(c) and c[j].strip() != ""


def _ints(c, j):
    """``Concrete Inputs[j]`` as a list of integers (``"[1, 1]"``, ``"2"`` or ``""``)."""
    text = c[j].strip().strip("[]() ") if j < len(c) else ""
    out = []
    for x in text.split(",") if text else []:
        v = decimal(x, integer=True)
        if v is None:
            raise ValueError(f"args.Concrete Inputs[{j}] = {show(c[j])}: integers, as '[1, 1]'")
        out.append(v)
    return out


def _pair(c, j, what, least):
    """``Concrete Inputs[j]``, a 2-D op's ``what`` (one integer, or one per dimension,
    each >= ``least``), as (height, width); None where the trace does not record it."""
    if not _recorded(c, j):
        return None
    v = _ints(c, j)
    if len(v) not in (1, 2) or min(v) < least or max(v) > _MAX_INT:
        raise ValueError(f"args.Concrete Inputs[{j}] = {show(c[j])}: the {what}, one or two integers "
                         f"from {least} to {_MAX_INT}")
    return (v[0], v[-1])


def _flag(c, j):
    v = c[j].strip() if j < len(c) else ""
    if v not in ("", "True", "False", "1", "0"):
        raise ValueError(f"args.Concrete Inputs[{j}] = {show(c[j])}: True or False")
    return None if v == "" else v in ("True", "1")


def _unrecorded(names) -> str:
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"its {listed} {'is' if len(names) == 1 else 'are'} not in the trace (empty Concrete Inputs)"


def _conv(n, d, c):
    """(note, Conv2d fields) of a 2-D convolution call; the note says why there is none."""
    if n == "cudnn_convolution":        # input, weight, padding, stride, dilation, groups
        js = {"padding": 2, "stride": 3, "dilation": 4, "groups": 5}
    elif n == "conv2d":                 # input, weight, bias, stride, padding, dilation, groups
        js = {"stride": 3, "padding": 4, "dilation": 5, "groups": 6}
    else:                               # input, weight, bias, stride, padding, dilation, transposed,
                                        # output_padding, groups
        js = {"stride": 3, "padding": 4, "dilation": 5, "groups": 8}
    a = {w: _pair(c, js[w], w, 0 if w == "padding" else 1) for w in ("stride", "padding", "dilation")}
    g = None
    if _recorded(c, js["groups"]):
        g = _ints(c, js["groups"])
        if len(g) != 1 or not 1 <= g[0] <= _MAX_INT:
            raise ValueError(f"args.Concrete Inputs[{js['groups']}] = {show(c[js['groups']])}: the "
                             f"groups, one integer from 1 to {_MAX_INT}")
        g = g[0]
    (N, C, H, W), (K, Cg, R, S) = d[0], d[1]
    gg = g if g is not None else C // Cg if Cg else 1
    if C and Cg and C != Cg * gg:
        raise ValueError(f"the input's {C} channels (Input Dims[0][1]) are not the weight's {Cg} "
                         f"(Input Dims[1][1]) times groups ({'not recorded' if g is None else g})")
    if K % gg:
        raise ValueError(f"the weight's {K} filters (Input Dims[1][0]) are not a multiple of groups ({gg})")
    if a["dilation"] is not None and a["dilation"] != (1, 1):
        return f"a dilated convolution (dilation {list(a['dilation'])}; workloads.ir's Conv2d has none)", None
    missing = [w for w in ("stride", "padding", "dilation") if a[w] is None]
    if missing:
        return _unrecorded(missing), None
    for w in ("stride", "padding"):
        if a[w][0] != a[w][1]:
            return (f"an asymmetric {w} {list(a[w])} (workloads.ir's Conv2d has one {w} for both "
                    "dimensions)"), None
    return "", dict(N=N, C=C, H=H, W=W, K=K, R=R, S=S, stride=a["stride"][0], padding=a["padding"][0],
                    groups=gg)


def _gemm(n, d):
    """(note, (M, N, K)) of a matrix product call; the note says why there is none."""
    a, b = (d[1], d[2]) if n == "addmm" else (d[0], d[1])
    fa, fb = (1, 2) if n == "addmm" else (0, 1)
    if n in ("mm", "addmm") and (len(a) != 2 or len(b) != 2):
        raise ValueError(f"aten::{n} multiplies two matrices; args.Input Dims[{fa}] = {show(a)} and "
                         f"[{fb}] = {show(b)} are not both 2-D")
    if n == "linear":
        if len(b) != 2 or not a:
            return (f"a linear of a {len(a)}-D input by a {len(b)}-D weight (workloads.ir's Gemm is one "
                    "2-D product)"), None
        if a[-1] != b[1]:
            raise ValueError(f"the input's last dimension {a[-1]} (Input Dims[0][-1]) is not the weight's "
                             f"{b[1]} (Input Dims[1][1])")
        return "", (math.prod(a[:-1]), b[0], b[1])
    if len(a) != 2 or len(b) != 2:
        return (f"a matmul of a {len(a)}-D by a {len(b)}-D tensor (workloads.ir's Gemm is one product "
                "of two matrices)"), None
    if a[1] != b[0]:
        raise ValueError(f"the inner dimensions disagree: Input Dims[{fa}][1] = {a[1]}, Input "
                         f"Dims[{fb}][0] = {b[0]}")
    if n == "addmm" and (len(d[0]) > 2 or any(x not in (1, y) for x, y in zip(reversed(d[0]), (b[1], a[0])))):
        raise ValueError(f"the bias (Input Dims[0] = {show(d[0])}) does not broadcast to the product's "
                         f"{a[0]}x{b[1]}")
    return "", (a[0], b[1], a[1])


def _pool_size(h, k, s, p, ceil):
    """PyTorch's output size of a pool over ``h`` (its pooling_output_shape, dilation 1)."""
    out = (h + 2 * p - k + ((s - 1) if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= h + p:
        out -= 1
    return out


def _max_pool(d, c):
    """(note, Pool2d fields) of a max pool call: input, kernel_size, stride, padding,
    dilation, ceil_mode."""
    k = _pair(c, 1, "kernel size", 1)
    s = _pair(c, 2, "stride", 1) if c[2:3] and c[2].strip().strip("[]() ") else k   # [] is the kernel size
    p, dil, ceil = _pair(c, 3, "padding", 0), _pair(c, 4, "dilation", 1), _flag(c, 5)
    if dil is not None and dil != (1, 1):
        return f"a dilated pool (dilation {list(dil)}; workloads.ir's Pool2d has none)", None
    missing = [w for w, v in (("kernel size", k), ("stride", s), ("padding", p), ("dilation", dil),
                              ("ceil_mode", ceil)) if v is None]
    if missing:
        return _unrecorded(missing), None
    for w, v in (("stride", s), ("padding", p)):
        if v[0] != v[1]:
            return (f"an asymmetric {w} {list(v)} (workloads.ir's Pool2d has one {w} for both "
                    "dimensions)"), None
    N, C, H, W = d[0]
    if ceil and any(_pool_size(x, kk, s[0], p[0], True) != _pool_size(x, kk, s[0], p[0], False)
                    for x, kk in ((H, k[0]), (W, k[1])) if x + 2 * p[0] >= kk):
        return ("ceil_mode=True, which rounds this pool's output size up (workloads.ir's Pool2d "
                "rounds it down)"), None
    return "", dict(N=N, C=C, H=H, W=W, R=k[0], S=k[1], stride=s[0], padding=p[0], mode="max")


def _global_pool(n, d, c):
    """(note, Pool2d fields) of an adaptive average pool or a mean: a global average pool
    only where it is one (an output of 1x1; a mean over dims 2 and 3)."""
    N, C, H, W = d[0]
    if n == "mean":
        if not _recorded(c, 1):
            return _unrecorded(["dims"]), None
        dims = _ints(c, 1)
        if any(not -4 <= x < 4 for x in dims):
            raise ValueError(f"args.Concrete Inputs[1] = {show(c[1])}: dims of a 4-D tensor, -4 to 3")
        if sorted({x % 4 for x in dims}) != [2, 3] or len(dims) != 2:
            return (f"a mean over dims {dims} (a global pool is a mean over dims 2 and 3, the height "
                    "and width)"), None
    else:
        out = _pair(c, 1, "output size", 0)
        if out is None:
            return _unrecorded(["output size"]), None
        if out != (1, 1):
            return (f"an adaptive pool to {list(out)} (workloads.ir's Pool2d holds only the one to "
                    "[1, 1], a global pool)"), None
    return "", dict(N=N, C=C, H=H, W=W, R=H, S=W, mode="avg")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Cast(Elementwise):
    """A copy that converts its data: reads ``n`` elements of ``dtype`` and writes ``n``
    of ``to`` (workloads.ir's Elementwise reads and writes one dtype), no FLOPs -- so its
    compulsory bytes, and its bound, are those of each side."""

    op: str = "copy"
    to: str = "fp32"

    def __post_init__(self):
        super().__post_init__()
        if self.op != "copy":
            raise ValueError(f"Cast.op = {self.op!r}: allowed: copy")
        if self.to not in DTYPES:
            raise ValueError(f"Cast.to = {self.to!r}: allowed: {', '.join(DTYPES)}")

    def operands(self):
        x, y = super().operands()
        return x, dataclasses.replace(y, dtype=self.to)

    def describe(self):
        return f"copy n={self.n} {self.dtype}->{self.to}"


def _dtype_arg(c, types, j):
    """(note, dtype) of a call's ``dtype`` argument ``j`` (a ScalarType number in
    ``Concrete Inputs``): None where the call gives none (its ``Input type`` empty), a
    note where the trace does not record it or workloads.ir has no such dtype."""
    t = types[j] if j < len(types) else ""
    if not _recorded(c, j):
        return ("", None) if t in ("", "None") else (_unrecorded(["dtype"]), None)
    v = _ints(c, j)
    if len(v) != 1 or v[0] < 0:
        raise ValueError(f"args.Concrete Inputs[{j}] = {show(c[j])}: the dtype, a ScalarType number "
                         "(5 for torch.half, 6 for torch.float)")
    if v[0] not in SCALAR_TYPES:
        return (f"a cast to ScalarType {v[0]} (workloads.ir's dtypes: "
                f"{', '.join(f'{d} ({k})' for k, d in SCALAR_TYPES.items())})"), None
    return "", SCALAR_TYPES[v[0]]


def _tensor_dtype(t):
    """(note, dtype) of a tensor's ``Input type`` as the dtype a copy writes: None where
    the trace records none."""
    if t in _NOT_TENSORS:
        return "", None
    if t not in TORCH_DTYPES:
        return f"a cast to {t} data (workloads.ir's dtypes: {', '.join(DTYPES)})", None
    return "", TORCH_DTYPES[t]


def _copy(n, d, c, types):
    """(note, the dtype written -- None for the one read --, the index of the operand
    read) of a copy call: ``copy_(self, src)`` reads ``src`` and writes ``self``'s dtype;
    ``_to_copy(self, *, dtype)`` and ``to`` (``to(dtype)``, ``to(device, dtype)``,
    ``to(other)``, ``to(*, dtype, layout, device)``: told apart by their inputs) write the
    dtype asked; ``type_as(self, other)`` writes ``other``'s; ``clone`` and
    ``contiguous`` their input's."""
    ty = [types[j] if j < len(types) else "" for j in range(max(len(types), 2))]
    if n == "copy":
        if len(d) > 1 and d[1] and _prod(d[1]) != _prod(d[0]):
            return (f"a broadcasting copy (src {list(d[1])} into {list(d[0])}; workloads.ir's copy reads "
                    "and writes n elements)"), None, 0
        note, to = _tensor_dtype(ty[0])
        return note, to, 1 if len(types) > 1 else 0
    if n == "type_as":
        return (*_tensor_dtype(ty[1]), 0)
    if n == "_to_copy":
        return (*_dtype_arg(c, types, 1), 0)
    if n == "to":
        if len(types) == 5 and ty[1] not in _NOT_TENSORS:      # to(other, ...)
            return (*_tensor_dtype(ty[1]), 0)
        j = {5: 1, 6: 2, 8: 1}.get(len(types))                  # to(dtype), to(device, dtype), to(*, dtype)
        if j is None:
            return (f"an aten::to of {len(types)} inputs (no overload PyTorch records: 5, 6 or 8)"
                    if types else _unrecorded(["dtype"])), None, 0
        note, to = _dtype_arg(c, types, j)
        if len(types) != 8 and not note and to is None:        # a dtype these overloads must have
            return _unrecorded(["dtype"]), None, 0
        return note, to, 0
    return "", None, 0


_NORMS = ("cudnn_batch_norm", "batch_norm", "native_batch_norm", "_native_batch_norm_legit_no_training")
_ELEMENTWISE = ("relu", "clamp_min", "threshold", "sigmoid", "add", "mul", "sub", "hardtanh", "div",
                "gelu", "silu", "tanh", "pow")
_LAYER_NORMS = ("native_layer_norm", "layer_norm")
_SOFTMAX = ("_softmax", "softmax", "_safe_softmax")
_BMM = ("bmm", "baddbmm")
#: fused attention operators: (layout of Q, K, V: "bhsd" or "bshd", Concrete Inputs index
#: of is_causal, or of the mask type for the memory-efficient kernel: "mask:j")
_ATTENTION = {
    "scaled_dot_product_attention": ("bhsd", 5),
    "_scaled_dot_product_flash_attention": ("bhsd", 4),
    "_scaled_dot_product_efficient_attention": ("bhsd", 6),
    "_scaled_dot_product_cudnn_attention": ("bhsd", 6),
    "_flash_attention_forward": ("bshd", 8),
    "_efficient_attention_forward": ("bshd", "mask:9"),
    "_cudnn_attention_forward": ("bhsd", 10),
}
_EMBEDDINGS = ("embedding", "index_select", "gather")
#: what each operator ``op_of`` maps needs of its Input Dims (op kind, what): a call
#: without it is kept unmapped with a note saying so
_SHAPES_NEEDED = {
    **{x: ("convolution", "the input's and the weight's shapes (Input Dims[0] and [1])") for x in _CONV},
    **{x: ("gemm", "both operands' shapes (Input Dims[0] and [1])") for x in _GEMMS},
    "addmm": ("gemm", "the bias's and both operands' shapes (Input Dims[0] to [2])"),
    **{x: ("normalization", "a 4-D input (Input Dims[0], N, C, H, W)") for x in _NORMS},
    **{x: ("pooling", "a 4-D input (Input Dims[0], N, C, H, W)") for x in
       ("max_pool2d_with_indices", "max_pool2d", "mean", "adaptive_avg_pool2d", "_adaptive_avg_pool2d")},
    **{x: ("elementwise", "its input's shape (Input Dims[0])") for x in _ELEMENTWISE},
    **{x: ("copy", "its input's shape (Input Dims[0])") for x in _COPIES},
    **{x: ("normalization", "the input's shape (Input Dims[0])") for x in _LAYER_NORMS},
    **{x: ("softmax", "the input's shape (Input Dims[0])") for x in _SOFTMAX},
    **{x: ("gemm", "both batches' shapes (Input Dims[0] and [1])") for x in _BMM},
    **{x: ("attention", "the query's, key's and value's shapes (Input Dims[0] to [2])") for x in _ATTENTION},
    **{x: ("embedding", "the table's and the indices' shapes") for x in _EMBEDDINGS},
}


def _layer_norm(d, c):
    """(note, RowOp fields) of a layer norm: its normalized_shape from Concrete Inputs[1]
    (else the weight's shape), the rows the rest of the input."""
    x = d[0]
    shape = _ints(c, 1) if _recorded(c, 1) else (list(d[2]) if len(d) > 2 and d[2] else None)
    if not shape:
        return _unrecorded(["normalized_shape"]), None
    if len(shape) > len(x) or list(x[len(x) - len(shape):]) != list(shape):
        raise ValueError(f"normalized_shape {show(shape)} (Concrete Inputs[1]) is not the input's "
                         f"last dimensions (Input Dims[0] = {show(x)})")
    cols = _prod(shape)
    affine = len(d) > 2 and bool(d[2])
    return "", {"rows": _prod(x) // cols, "cols": cols, "op": "layernorm", "affine": affine}


def _softmax(d, c):
    x = d[0]
    if not _recorded(c, 1):
        return _unrecorded(["dim"]), None
    dim = _ints(c, 1)
    if len(dim) != 1 or not -len(x) <= dim[0] < len(x):
        raise ValueError(f"args.Concrete Inputs[1] = {show(c[1])}: a dimension of the "
                         f"{len(x)}-D input")
    cols = x[dim[0]]
    return "", {"rows": _prod(x) // cols, "cols": cols, "op": "softmax"}


def _bmm(n, d):
    a, b = (d[1], d[2]) if n == "baddbmm" else (d[0], d[1])
    if len(a) != 3 or len(b) != 3:
        raise ValueError(f"aten::{n} multiplies two batches of matrices; its operands' shapes "
                         f"{show(a)} and {show(b)} are not both 3-D")
    if a[0] != b[0] or a[2] != b[1]:
        raise ValueError(f"the batches' shapes {show(a)} and {show(b)} do not multiply "
                         "(batch x M x K by batch x K x N)")
    return {"batch": a[0], "M": a[1], "N": b[2], "K": a[2]}


def _attention(n, d, c):
    """(note, Attention fields) of a fused attention call (``_ATTENTION``)."""
    layout, causal_at = _ATTENTION[n]
    if len(d) < 3 or any(len(x) != 4 for x in d[:3]):
        return ("a query, key and value that are not 4-D (Input Dims[0] to [2]; a nested or "
                "packed batch)"), None
    q, k, v = d[:3]
    if layout == "bshd":
        q, k, v = ([x[0], x[2], x[1], x[3]] for x in (q, k, v))
    if q[0] != k[0] or k[:3] != v[:3] or q[3] != k[3] or q[1] % k[1]:
        raise ValueError(f"the query {show(d[0])}, key {show(d[1])} and value {show(d[2])} "
                         "do not make one attention (batch, heads, length, head size)")
    if q[3] != v[3]:
        return (f"a value head size {v[3]} other than the query's {q[3]} (workloads.ir's Attention "
                "has one)"), None
    if isinstance(causal_at, str):          # the memory-efficient kernel's custom_mask_type
        j = int(causal_at.split(":")[1])
        if not _recorded(c, j):
            return _unrecorded(["custom_mask_type"]), None
        causal = _ints(c, j) != [0]
    else:
        causal = _flag(c, causal_at)
        if causal is None:
            return _unrecorded(["is_causal"]), None
    return "", {"batch": q[0], "heads": q[1], "q_len": q[2], "kv_len": k[2], "head_dim": q[3],
                "kv_heads": k[1], "causal": causal}


def _embedding(n, d, c):
    """(note, Embedding fields) of a table lookup: ``embedding(weight, indices)``,
    ``index_select(table, 0, indices)`` or ``gather(table, 0, index)`` whose index names a
    whole row for each token (index tokens x dim)."""
    if n == "embedding":
        table, idx = d[0], (d[1] if len(d) > 1 else [])
        tokens = _prod(idx) if idx else 0
    else:
        table, idx = d[0], (d[2] if len(d) > 2 else [])
        if not _recorded(c, 1):
            return _unrecorded(["dim"]), None
        if _ints(c, 1) != [0]:
            return f"a {n} along dimension {c[1]} (an embedding looks up rows: dimension 0)", None
        if n == "gather" and (len(idx) != 2 or len(table) != 2 or idx[1] != table[1]):
            return (f"a gather of index {show(idx)} from {show(table)} (an embedding's index is "
                    "tokens x the table's row)"), None
        tokens = idx[0] if n == "gather" else _prod(idx)
    if len(table) != 2 or not tokens:
        return f"a lookup in a {len(table)}-D table (an embedding's is vocabulary x dim)", None
    return "", {"tokens": tokens, "vocab": table[0], "dim": table[1]}


_OPAQUE = re.compile(r"OpaqueType<(\d+)u?>")
#: a dtype of each element size, for a copy whose tensors' dtype the trace does not
#: record (``cat``'s TensorList) but whose kernel names its element size: a copy's bound
#: is its bytes alone, the same for fp16 and bf16
_OF_SIZE = {1: "int8", 2: "fp16", 4: "fp32", 8: "fp64"}


def _cat(dims, types, kernel):
    """(note, elements, dtype) of ``aten::cat`` (a TensorList, then the dimension): the
    elements it writes, each read once; its dtype from the list's ``Input type`` where
    recorded, else from the element size in its kernel's name (PyTorch's
    ``CatArrayBatchedCopy<OpaqueType<2u>, ...>``)."""
    n = sum(_prod(list(x)) for x in dims[0] if x)
    t = types[0] if types else ""
    if t in TORCH_DTYPES:
        return "", n, TORCH_DTYPES[t]
    m = _OPAQUE.search(kernel)
    if m and int(m.group(1)) in _OF_SIZE:
        return "", n, _OF_SIZE[int(m.group(1))]
    return ("the dtype of its tensors (a TensorList's Input type, or its kernel's element size) is not "
            "in the trace"), n, None


def op_of(name: str, dims, concrete=(), types=(), kernel: str = ""):
    """(kind, workloads.ir op or None, note) of a PyTorch operator call: ``dims`` its
    ``Input Dims``, ``concrete`` its ``Concrete Inputs``, ``types`` its ``Input type``.
    The op's dtype is its first input's (a copy's: the one it reads; ``float`` fp32,
    ``double`` fp64, ``c10::Half``
    fp16, ``c10::BFloat16`` bf16, ``signed char`` int8; fp32 where the trace records no
    type). A call of a known kind that no op describes faithfully is (kind, None, why);
    one no PyTorch call can be (see the module's doc) a ValueError naming the ``args``
    fields at fault. ``kernel``: the name of the kernel the call launched (what ``cat``'s
    dtype is read from where its TensorList's is not recorded)."""
    from workloads.ir import Attention, BatchedGemm, BatchNorm, Conv2d, Embedding, Gemm, Pool2d, RowOp
    d = [_sizes(x) for x in dims]
    c = list(concrete)
    n = name.split("::")[-1].rstrip("_")
    kind, make, note, src = "other", None, "", 0       # src: the input whose dtype is the op's
    if n in _TRANSPOSED:
        return "convolution", None, "a transposed convolution (workloads.ir's Conv2d is a forward one)"
    if n in _CONV and len(d) > 1 and d[0] and d[1]:
        kind = "convolution"
        if n not in ("cudnn_convolution", "conv2d") and _flag(c, 6):
            return kind, None, "a transposed convolution (workloads.ir's Conv2d is a forward one)"
        if len(d[0]) != 4 or len(d[1]) != 4:
            return kind, None, (f"a convolution of a {len(d[0])}-D input by a {len(d[1])}-D weight "
                                "(workloads.ir's Conv2d is 2-D over a batch: 4-D by 4-D)")
        note, f = _conv(n, d, c)
        make = f and (lambda dtype: Conv2d(name=name, dtype=dtype, **f))
    elif n in _GEMMS and len(d) > (2 if n == "addmm" else 1):
        kind = "gemm"
        note, mnk = _gemm(n, d)
        make = mnk and (lambda dtype: Gemm(name=name, M=mnk[0], N=mnk[1], K=mnk[2], dtype=dtype))
    elif n in _NORMS and d and len(d[0]) == 4:
        kind = "normalization"

        def make(dtype):
            N, C, H, W = d[0]
            return BatchNorm(name=name, N=N, C=C, H=H, W=W, dtype=dtype)
    elif n in ("max_pool2d_with_indices", "max_pool2d") and d and len(d[0]) == 4:
        kind = "pooling"
        note, f = _max_pool(d, c)
        make = f and (lambda dtype: Pool2d(name=name, dtype=dtype, **f))
    elif n in ("mean", "adaptive_avg_pool2d", "_adaptive_avg_pool2d") and d and len(d[0]) == 4:
        kind = "pooling"
        note, f = _global_pool(n, d, c)
        make = f and (lambda dtype: Pool2d(name=name, dtype=dtype, **f))
    elif n == "cat" and dims and dims[0] and all(isinstance(x, tuple) for x in dims[0]):
        kind = "copy"
        note, elements, fixed = _cat(dims, types, kernel)
        if not note:
            if not elements:
                return kind, None, "an empty tensor (a size of 0)"
            return kind, Elementwise(name=name, n=elements, op="copy", dtype=fixed), ""
        return kind, None, note
    elif n in _LAYER_NORMS and d and d[0]:
        kind = "normalization"
        note, f = _layer_norm(d, c)
        make = f and (lambda dtype: RowOp(name=name, dtype=dtype, **f))
    elif n in _SOFTMAX and d and d[0]:
        kind = "softmax"
        note, f = _softmax(d, c)
        make = f and (lambda dtype: RowOp(name=name, dtype=dtype, **f))
    elif n in _BMM and len(d) > (2 if n == "baddbmm" else 1):
        kind = "gemm"
        f = _bmm(n, d)
        make = lambda dtype: BatchedGemm(name=name, dtype=dtype, **f)  # noqa: E731
        src = 1 if n == "baddbmm" else 0
    elif n in _ATTENTION and len(d) > 2 and d[0]:
        kind = "attention"
        note, f = _attention(n, d, c)
        make = f and (lambda dtype: Attention(name=name, dtype=dtype, **f))
    elif n in _EMBEDDINGS and len(d) > 1 and d[0] and (n == "embedding" or len(d) > 2):
        kind = "embedding"
        note, f = _embedding(n, d, c)
        make = f and (lambda dtype: Embedding(name=name, dtype=dtype, **f))
    elif n in _ELEMENTWISE and d and d[0]:
        kind = "elementwise"
        op = {"relu": "relu", "clamp_min": "relu", "threshold": "relu", "hardtanh": "relu",
              "sigmoid": "sigmoid", "gelu": "gelu", "silu": "silu", "tanh": "tanh",
              "pow": "pow"}.get(n, "add")
        if op == "add" and (len(d) < 2 or d[1] != d[0]):
            op = "scale"                      # a scalar (or broadcast) operand: one input read

        def make(dtype):
            return Elementwise(name=name, n=_prod(d[0]), op=op, dtype=dtype)
    elif n in _COPIES and d and d[0]:
        kind = "copy"
        note, to, src = _copy(n, d, c, types)

        def make(dtype):
            if to is None or to == dtype:
                return Elementwise(name=name, n=_prod(d[0]), op="copy", dtype=dtype)
            return Cast(name=name, n=_prod(d[0]), dtype=dtype, to=to)
        make = None if note else make
    if not make:
        if kind == "other" and n in _SHAPES_NEEDED:       # a known op without the shapes it needs
            what, need = _SHAPES_NEEDED[n]
            return what, None, (
                f"no Input Dims (profile with record_shapes=True); a {what} op needs {need}" if not any(d)
                else f"Input Dims = {show([list(x) for x in d], 60)}; a {what} op needs {need}")
        return kind, None, note
    t = types[src] if src < len(types) else ""
    if t not in TORCH_DTYPES and t not in _NOT_TENSORS:
        return kind, None, (f"{t} data (workloads.ir's dtypes: {', '.join(DTYPES)}; PyTorch's "
                            f"{', '.join(TORCH_DTYPES)})")
    if any(0 in x for x in d if x):
        return kind, None, "an empty tensor (a size of 0)"
    try:
        return kind, make(TORCH_DTYPES.get(t, "fp32")), ""
    except ValueError as e:
        raise ValueError(f"its inputs make no {kind} op ({e}); args.Input Dims = "
                         f"{show([list(x) for x in dims], 80)}") from None

"""Networks as ordered tuples of ops, and the workload argument the CLI takes.

* ``resnet50`` -- He et al., "Deep Residual Learning for Image Recognition", 2015,
  Table 1, every layer of the forward pass as torchvision names it: 53 convolutions
  (projection shortcuts included), 49 batch norms, the 3x3/2 max pool, the global
  average pool, the FC layer and its bias -- 106 layers. Default variant ``v1.5``
  (torchvision): the stride-2 of a stage's first block sits on its 3x3 convolution;
  ``v1`` (the paper's) puts it on the first 1x1. Batch norm is lowered for inference
  (``workloads.ir.BatchNorm``): its scale folded into the convolution before it, its
  shift run as a layer fused with the ReLU after it; a block's last batch norm also
  adds the shortcut (``residual``) and takes the projection shortcut's batch norm
  shift into its own, so ``downsample.1`` is no layer of its own. The FC's bias is
  the same per-channel shift (``fc.bias``). At 224x224, batch 1: 4.089 GMACs for
  v1.5 and 3.858 GMACs for v1 (computed; the commonly quoted ~4.1 G is v1.5). The
  network's ``edges`` name each layer's inputs (the shortcuts make it a graph).
* ``conv-ablation`` -- the 2024 PyTorch-compiler thesis's single-convolution ablation:
  kernel {1,3,5} x stride {1,2} x padding {1,2,3}, here at a stated input of
  batch x 64 x 56 x 56 with 64 filters (the shape of ResNet-50's first stage; the
  thesis does not fix one). ``resolution`` changes 56.
* ``gemm:MxNxK``, ``relu:N`` and ``conv:n=..,c=..,h=..,w=..,k=..,r=..,s=..,stride=..,pad=..``
  -- single ops; so are ``layernorm:RxC``, ``softmax:RxC``, ``bmm:BxMxNxK``,
  ``embedding:TxVxD``, ``gelu:N``/``silu:N``/``tanh:N`` and
  ``attention:b=..,h=..,q=..,kv=..,d=..[,kv_heads=..][,causal=1]`` (a transformer's ops,
  for ``roofsim check`` and the roofline bound; the engines simulate GEMMs, convolutions
  and ReLUs).
* a path to a SCALE-Sim topology CSV (conv or GEMM format), see :mod:`workloads.scalesim`.
"""
from __future__ import annotations

import numbers
import re
from pathlib import Path

# Network and INPUT live in ir.py (the topology reader imports them from there too)
from .ir import (
    DTYPES,
    GEMM_LAYOUTS,
    INPUT,
    MAX_DIM,
    MAX_ELEMENTS,
    BatchNorm,
    Conv2d,
    Elementwise,
    Gemm,
    Network,
    Pool2d,
    TensorOp,
    TensorTooLarge,
    show,
)

RESNET50_VARIANTS = ("v1.5", "v1")
RESNET50_STAGES = ((3, 64), (4, 128), (6, 256), (3, 512))  # (blocks, width); outputs x4


def resnet50(batch: int = 1, resolution: int = 224, variant: str = "v1.5",
             dtype: str = "fp32", layout: str = "nchw") -> Network:
    """Every layer of ResNet-50's forward pass, torchvision layer names (module doc)."""
    if variant not in RESNET50_VARIANTS:
        raise ValueError(f"variant = {show(variant)}: allowed: {', '.join(RESNET50_VARIANTS)}")
    _check_batch_resolution(batch, resolution, minimum_resolution=32)
    ops: list[TensorOp] = []
    edges: list = []

    def add(op, *inputs):
        ops.append(op)
        if inputs:
            edges.append((op.name, tuple(inputs)))
        return op

    def conv(name, src, c, h, k, r, stride, pad):
        op = add(Conv2d(name=name, dtype=dtype, layout=layout, N=batch, C=c, H=h, W=h, K=k,
                        R=r, S=r, stride=stride, padding=pad), src)
        return op.name, op.P

    def bn(name, src, c, h, relu=True, residual=None):
        add(BatchNorm(name=name, dtype=dtype, layout=layout, N=batch, C=c, H=h, W=h,
                      relu=relu, residual=residual is not None),
            *((src,) if residual is None else (src, residual)))
        return name

    x, h = conv("conv1", INPUT, 3, resolution, 64, 7, 2, 3)
    x = bn("bn1", x, 64, h)
    pool = add(Pool2d(name="maxpool", dtype=dtype, layout=layout, N=batch, C=64, H=h, W=h,
                      R=3, S=3, stride=2, padding=1, mode="max"), x)
    x, h = pool.name, pool.P
    cin = 64
    for stage, (blocks, width) in enumerate(RESNET50_STAGES, start=1):
        for b in range(blocks):
            s = 1 if (stage == 1 or b > 0) else 2
            s1, s3 = (1, s) if variant == "v1.5" else (s, 1)
            pre = f"layer{stage}.{b}"
            block_in, h_in = x, h
            y, h1 = conv(f"{pre}.conv1", block_in, cin, h_in, width, 1, s1, 0)
            y = bn(f"{pre}.bn1", y, width, h1)
            y, h2 = conv(f"{pre}.conv2", y, width, h1, width, 3, s3, 1)
            y = bn(f"{pre}.bn2", y, width, h2)
            y, h = conv(f"{pre}.conv3", y, width, h2, 4 * width, 1, 1, 0)
            shortcut = block_in
            if b == 0:
                shortcut, _ = conv(f"{pre}.downsample.0", block_in, cin, h_in, 4 * width, 1, s, 0)
            x = bn(f"{pre}.bn3", y, 4 * width, h, residual=shortcut)
            cin = 4 * width
    gap = add(Pool2d(name="avgpool", dtype=dtype, layout=layout, N=batch, C=cin, H=h, W=h,
                     R=h, S=h, stride=1, padding=0, mode="avg"), x)
    add(Gemm(name="fc", dtype=dtype, M=batch, N=1000, K=cin), gap.name)
    add(BatchNorm(name="fc.bias", dtype=dtype, layout=layout, N=batch, C=1000, H=1, W=1,
                  relu=False), "fc")
    convs = sum(op.kind == "conv2d" for op in ops)
    return Network("resnet50", tuple(ops),
                   f"ResNet-50 {variant} ({'stride on 3x3' if variant == 'v1.5' else 'stride on 1x1'}),"
                   f" {resolution}x{resolution}, batch {batch}: {len(ops)} layers ({convs} "
                   "convolutions, batch norms with ReLU and residual adds, 2 pools, FC)",
                   {"batch": batch, "resolution": resolution, "variant": variant,
                    "dtype": dtype, "layout": layout}, edges=tuple(edges))


def conv_ablation(batch: int = 1, resolution: int = 56, channels: int = 64, filters: int = 64,
                  dtype: str = "fp32", layout: str = "nchw") -> Network:
    """Kernel {1,3,5} x stride {1,2} x padding {1,2,3} on one stated input."""
    _check_batch_resolution(batch, resolution, minimum_resolution=5)
    ops = tuple(
        Conv2d(name=f"k{k}_s{s}_p{p}", dtype=dtype, layout=layout, N=batch, C=channels,
               H=resolution, W=resolution, K=filters, R=k, S=k, stride=s, padding=p)
        for k in (1, 3, 5) for s in (1, 2) for p in (1, 2, 3))
    # 18 separate experiments on one stated input shape: each layer its own problem
    return Network.independent("conv-ablation", ops,
                               f"kernel {{1,3,5}} x stride {{1,2}} x padding {{1,2,3}} on "
                               f"{batch}x{channels}x{resolution}x{resolution}, {filters} filters",
                               {"batch": batch, "resolution": resolution, "channels": channels,
                                "filters": filters, "dtype": dtype, "layout": layout})


def _check_batch_resolution(batch, resolution, minimum_resolution):
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch = {show(batch)}: must be an integer >= 1")
    if isinstance(resolution, bool) or not isinstance(resolution, int) or resolution < minimum_resolution:
        raise ValueError(f"resolution = {show(resolution)}: must be an integer >= {minimum_resolution}")


NETWORKS = {
    "resnet50": (resnet50, "ResNet-50 (torchvision v1.5 by default): 106 layers, 53 of them "
                           "convolutions"),
    "conv-ablation": (conv_ablation, "18 convolutions: kernel {1,3,5} x stride {1,2} x padding {1,2,3}"),
}
SINGLE_OP_FORMS = {
    "gemm:MxNxK": "one GEMM, e.g. gemm:1024x1024x1024",
    "relu:N": "one ReLU over N elements, e.g. relu:16777216",
    "conv:n=..,c=..,h=..,w=..,k=..,r=..,s=..,stride=..,pad=..": "one convolution",
    "layernorm:RxC / softmax:RxC": "a layer norm (with its weight and bias) or a softmax over R rows of C",
    "bmm:BxMxNxK": "B independent GEMMs (torch.bmm)",
    "attention:b=..,h=..,q=..,kv=..,d=..[,kv_heads=..][,causal=1]": "fused scaled dot-product "
        "attention (FlashAttention and kin)",
    "embedding:TxVxD": "T rows looked up in a V x D table",
    "gelu:N / silu:N / tanh:N": "one element-wise activation over N elements",
    "PATH.csv": "a SCALE-Sim topology CSV (conv or GEMM format)",
}
#: the single ops of the row, batched-GEMM, attention, embedding and activation forms:
#: (how many sizes "x" separates, or None for key=value fields) -- what roofsim check and
#: the roofline bound take; the engines simulate GEMMs, convolutions and ReLUs only
_OTHER_FORMS = {"layernorm": 2, "softmax": 2, "bmm": 4, "embedding": 3, "gelu": 1, "silu": 1,
                "tanh": 1, "attention": None}
_ATTENTION_KEYS = {"b": "batch", "h": "heads", "q": "q_len", "kv": "kv_len", "d": "head_dim",
                   "kv_heads": "kv_heads", "causal": "causal"}


def _other_op(single: str, body: str, spec: str, d: str, batch, layout):
    """The op of a ``layernorm:``, ``softmax:``, ``bmm:``, ``embedding:``,
    ``attention:`` or activation spec (``_OTHER_FORMS``)."""
    from .ir import Attention, BatchedGemm, Embedding, RowOp
    form = next(f for f in SINGLE_OP_FORMS if single in f.replace(" / ", " ").replace(":", " ").split())
    if layout is not None:
        raise ValueError(f"layout={layout!r}: a layout applies to convolutions (nchw, nhwc) and GEMMs "
                         f"(row, col), not to {single}")
    n = _OTHER_FORMS[single]
    if n is None:
        kw = {}
        for item in (x for x in body.split(",") if x.strip()):
            k, eq, v = item.partition("=")
            k = k.strip().lower()
            if not eq or k not in _ATTENTION_KEYS or not re.fullmatch(r"\s*[0-9]{1,18}\s*", v):
                raise ValueError(f"workload {spec[:60]!r}: {item.strip()[:30]!r}: expected {form}, "
                                 f"each field a non-negative integer ({', '.join(_ATTENTION_KEYS)})")
            kw[_ATTENTION_KEYS[k]] = int(v)
        missing = [k for k, f in _ATTENTION_KEYS.items() if f not in kw and k not in ("kv_heads", "causal")]
        if missing:
            raise ValueError(f"workload {spec[:60]!r}: {', '.join(missing)} missing; expected {form}")
        if kw.get("causal", 0) not in (0, 1):
            raise ValueError(f"workload {spec[:60]!r}: causal={kw['causal']}: 0 or 1")
        kw["causal"] = bool(kw.get("causal", 0))
        if batch is not None:
            kw["batch"] = kw["batch"] * batch
        return Attention(name="attention", dtype=d, **kw)
    m = re.fullmatch(r"\s*" + r"\s*[xX]\s*".join([r"([0-9]{1,18})"] * n) + r"\s*", body)
    if not m:
        raise ValueError(f"workload {spec[:60]!r}: expected {form} with positive integers")
    v = [int(x) for x in m.groups()]
    v[0] *= batch or 1
    if single in ("layernorm", "softmax"):
        return RowOp(name=single, dtype=d, rows=v[0], cols=v[1], op=single)
    if single == "bmm":
        return BatchedGemm(name="bmm", dtype=d, batch=v[0], M=v[1], N=v[2], K=v[3])
    if single == "embedding":
        return Embedding(name="embedding", dtype=d, tokens=v[0], vocab=v[1], dim=v[2])
    return Elementwise(name=single, dtype=d, n=v[0], op=single)

CONV_LAYOUT_NAMES = ("nchw", "nhwc")
_CONV_KEYS = {"n": "N", "c": "C", "h": "H", "w": "W", "k": "K", "r": "R", "s": "S",
              "stride": "stride", "pad": "padding", "groups": "groups"}


def _shape_items(what: str, text: str) -> list:
    """The KEY=VALUE items of a shape, split at commas; an empty one (``...,s=1,``,
    ``n=1,,c=3``) is an error, as in every comma-separated list roofsim reads."""
    parts = [x.strip() for x in text.split(",")]
    if any(not x for x in parts):
        raise ValueError(f"{what} shape: {show(text)} has an empty item (a comma too many); "
                         "separate KEY=VALUE items by single commas")
    return parts


def parse_conv_shape(text: str) -> dict:
    """``n=1,c=64,h=56,w=56,k=64,r=3,s=3,stride=1,pad=1`` -> Conv2d keyword arguments."""
    kw = {}
    for part in _shape_items("conv", text):
        key, eq, val = part.partition("=")
        key = key.strip().lower()
        if not eq or key not in _CONV_KEYS:
            raise ValueError(f"conv shape: {show(part)} is not KEY=VALUE with KEY one of "
                             f"{', '.join(_CONV_KEYS)}")
        if not re.fullmatch(r"-?[0-9]+", val.strip()):
            raise ValueError(f"conv shape: {key} = {val.strip()[:40]!r} is not an integer")
        if len(val.strip().lstrip("-")) > 18:
            raise ValueError(f"conv shape: {key} = {val.strip()[:12]}... ({len(val.strip())} digits) "
                             "is too large")
        if _CONV_KEYS[key] in kw:
            raise ValueError(f"conv shape: {key} is given twice")
        kw[_CONV_KEYS[key]] = int(val)
    missing = [k for k, v in _CONV_KEYS.items() if v not in kw and k not in ("stride", "pad", "groups")]
    if missing:
        raise ValueError(f"conv shape: missing {', '.join(missing)} (needs n,c,h,w,k,r,s; "
                         "stride, pad and groups are optional)")
    return kw


_OP_KEYS = {"pool2d": {"n": "N", "c": "C", "h": "H", "w": "W", "r": "R", "s": "S",
                      "stride": "stride", "pad": "padding", "mode": "mode"},
            "batchnorm": {"n": "N", "c": "C", "h": "H", "w": "W", "relu": "relu",
                          "residual": "residual"}}
_OP_REQUIRED = {"pool2d": ("n", "c", "h", "w", "r", "s"), "batchnorm": ("n", "c", "h", "w")}


def parse_op_shape(kind: str, text: str) -> dict:
    """``n=1,c=64,h=112,w=112,r=3,s=3,stride=2,pad=1,mode=max`` (a pool) or
    ``n=1,c=256,h=56,w=56,relu=1,residual=1`` (a batch norm) -> the op's keyword
    arguments; errors name the key and what is allowed."""
    keys = _OP_KEYS[kind]
    kw = {}
    for part in _shape_items(kind, text):
        key, eq, val = part.partition("=")
        key, val = key.strip().lower(), val.strip()
        if not eq or key not in keys:
            raise ValueError(f"{kind} shape: {part[:40]!r} is not KEY=VALUE with KEY one of "
                             f"{', '.join(keys)}")
        if keys[key] in kw:
            raise ValueError(f"{kind} shape: {key} is given twice")
        if key == "mode":
            kw["mode"] = val.lower()
        elif key in ("relu", "residual"):
            if val.lower() not in ("0", "1", "true", "false"):
                raise ValueError(f"{kind} shape: {key} = {val[:20]!r}: 0, 1, true or false")
            kw[key] = val.lower() in ("1", "true")
        else:
            if not re.fullmatch(r"-?[0-9]{1,18}", val):
                raise ValueError(f"{kind} shape: {key} = {val[:40]!r} is not an integer (at most "
                                 "18 digits)")
            kw[keys[key]] = int(val)
    missing = [k for k in _OP_REQUIRED[kind] if keys[k] not in kw]
    if missing:
        raise ValueError(f"{kind} shape: missing {', '.join(missing)} (needs "
                         f"{','.join(_OP_REQUIRED[kind])}; "
                         f"{', '.join(k for k in keys if k not in _OP_REQUIRED[kind])} optional)")
    return kw


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _check_count(name, v):
    """``batch`` or ``resolution``: None, or an int from 1 to a tensor dimension's limit."""
    if v is None:
        return
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name}={_short(v)}: must be an integer (or None), not a "
                        f"{type(v).__name__}")
    if not 1 <= v <= MAX_DIM:
        raise ValueError(f"{name}={_short(v)}: must be from 1 to {MAX_DIM} (a tensor "
                         "dimension's limit)")
    return int(v)


def resolve(spec: str, batch: int | None = None, resolution: int | None = None,
            dtype: str | None = None, layout: str | None = None) -> Network:
    """The network a workload argument names (see the module doc for the forms).

    Errors about an argument start with its name (``resolution applies to networks,
    ...``, ``layout='nhwc': ...``, ``batch=2 and n=4 ... disagree``, ``batch=N: layer
    ... would hold ... elements ...; batch at most M``), as the CLI maps names to its
    flags."""
    batch, resolution = _check_count("batch", batch), _check_count("resolution", resolution)
    try:
        return _resolve(spec, batch, resolution, dtype, layout)
    except ValueError as e:
        if batch is None or batch == 1 or str(e).startswith("batch=") or not _builds(
                spec, resolution, dtype, layout):
            raise
        # the workload builds at batch 1: the batch is what is too large
        limit = _batch_limit(spec, batch, resolution, dtype, layout) \
            if isinstance(e, TensorTooLarge) else None
        raise ValueError(limit or f"batch={batch}: {e}") from None


def _builds(spec, resolution, dtype, layout) -> bool:
    """Whether ``spec`` builds at batch 1."""
    try:
        _resolve(spec, 1, resolution, dtype, layout)
    except ValueError:
        return False
    return True


def _batch_limit(spec, batch, resolution, dtype, layout) -> str | None:
    """Why ``batch`` is too large for ``spec``: the first operand it takes over
    MAX_ELEMENTS and the largest batch every operand allows (tensors grow linearly with
    the batch, so batches 1 and 2 tell each one's growth); None where the workload is
    too large at batch 2 already (the batch is not the cause)."""
    try:
        one, two = (_resolve(spec, b, resolution, dtype, layout) for b in (1, 2))
    except ValueError:
        return None
    worst, largest = None, None
    for a, b in zip(one.ops, two.ops):
        for ta, tb in zip(a.operands(), b.operands()):
            grow = tb.elements - ta.elements
            if grow <= 0:
                continue
            allowed = (MAX_ELEMENTS - ta.elements) // grow + 1
            largest = allowed if largest is None else min(largest, allowed)
            if worst is None and ta.elements + grow * (batch - 1) > MAX_ELEMENTS:
                worst = (a.name, ta.name, ta.elements + grow * (batch - 1))
    if worst is None or largest is None:
        return None
    return (f"batch={batch}: layer {worst[0]}'s tensor {worst[1]} would hold {worst[2]:.3g} "
            f"elements, over 2**48; batch at most {largest:,} for workload {show(spec)}")


def _resolve(spec, batch, resolution, dtype, layout) -> Network:
    """:func:`resolve` of checked ``batch`` and ``resolution``."""
    for name, v, allowed in (("dtype", dtype, tuple(DTYPES)),
                             ("layout", layout, CONV_LAYOUT_NAMES + GEMM_LAYOUTS)):
        if v is not None and not isinstance(v, str):
            raise TypeError(f"{name}={_short(v)}: one of {', '.join(allowed)}, or None; not a "
                            f"{type(v).__name__}")
        if v is not None and v not in allowed:
            raise ValueError(f"{name}={_short(v)}: allowed: {', '.join(allowed)}")
    spec = str(spec).strip()
    kw = {k: v for k, v in (("batch", batch), ("resolution", resolution), ("dtype", dtype),
                            ("layout", layout)) if v is not None}
    if spec in NETWORKS:
        return NETWORKS[spec][0](**kw)
    single = spec.split(":", 1)[0].lower() if ":" in spec else None
    if single in _OTHER_FORMS:
        if resolution is not None:
            raise ValueError(f"resolution applies to networks, not to {show(spec)}")
        op = _other_op(single, spec.split(":", 1)[1], spec, dtype or "fp32", batch, layout)
        return Network(spec, (op,), op.describe(), {"dtype": dtype or "fp32"})
    if single in ("gemm", "relu", "conv"):
        if resolution is not None:
            raise ValueError(f"resolution applies to networks, not to {show(spec)}")
        d = dtype or "fp32"
        body = spec.split(":", 1)[1]
        if single == "gemm":
            m = re.fullmatch(r"\s*([0-9]+)\s*[xX]\s*([0-9]+)\s*[xX]\s*([0-9]+)\s*", body)
            if not m:
                raise ValueError(f"workload {spec[:60]!r}: expected gemm:MxNxK with positive integers")
            if any(len(g) > 18 for g in m.groups()):
                raise ValueError(f"workload gemm: a size of {max(map(len, m.groups()))} digits is too "
                                 "large; each of M, N, K at most 2147483647")
            M, N, K = map(int, m.groups())
            if layout in CONV_LAYOUT_NAMES:
                raise ValueError(f"layout={show(layout)}: a tensor layout applies to convolutions; "
                                 "a GEMM's operands are row (row-major) or col")
            op = Gemm(name="gemm", dtype=d, M=M * (batch or 1), N=N, K=K,
                      **({"layout": layout} if layout else {}))
        elif single == "relu":
            if not re.fullmatch(r"\s*[0-9]+\s*", body):
                raise ValueError(f"workload {spec[:60]!r}: expected relu:N with a positive integer N")
            if len(body.strip()) > 18:
                raise ValueError(f"workload relu: N of {len(body.strip())} digits is too large; at "
                                 "most 2**48 elements")
            if layout is not None:
                raise ValueError(f"layout={layout!r}: relu:N is a flat tensor of N elements; a "
                                 "layout applies to convolutions (nchw, nhwc) and GEMMs (row, col)")
            op = Elementwise(name="relu", dtype=d, n=int(body) * (batch or 1), op="relu")
        else:
            ckw = parse_conv_shape(body)
            if batch is not None:
                given = re.search(r"(?:^|,)\s*n\s*=", body, flags=re.I)
                if given and ckw["N"] != batch:
                    raise ValueError(f"batch={batch} and n={ckw['N']} in workload {spec[:60]!r} "
                                     "disagree: a convolution's n is its batch; give one of them")
                ckw["N"] = batch
            op = Conv2d(name="conv", dtype=d, **({"layout": layout} if layout else {}), **ckw)
        return Network(spec, (op,), op.describe(), {"dtype": d})
    if not spec:
        raise ValueError("workload '' is empty; allowed: "
                         + ", ".join(list(NETWORKS) + list(SINGLE_OP_FORMS)))
    if spec.lower().endswith(".csv") or Path(spec).is_file():
        from .scalesim import load_topology
        net = load_topology(spec, batch=batch or 1, dtype=dtype or "fp32",
                            layout=layout or "nchw")
        if resolution is not None:
            raise ValueError("resolution does not apply to a topology CSV (its sizes are fixed)")
        return net
    allowed = ", ".join(list(NETWORKS) + list(SINGLE_OP_FORMS))
    raise ValueError(f"workload {spec[:60]!r} is unknown; allowed: {allowed}")

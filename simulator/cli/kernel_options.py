"""The options of a registered kernel's problem (``--kernel`` and what each kernel
takes), declared once from the kernel registry, and the problem read back from them.

The registry imports every kernel module, and with them numba (half a second and more);
``--help`` must not pay for that, so help reads :mod:`.kernel_catalog`, the registry's
names and arguments as plain data (``tests/test_registry.py`` holds it equal to the
registry; ``python -m simulator.cli.kernel_options`` writes it anew). A command that runs
reads the registry itself, so a kernel registered at run time has its options too.
"""
from __future__ import annotations

from .options import LAYOUTS, positive_int

CONV_OPTIONS = ("shape", "layer", "layout", "batch")


def kernels(live: bool = True) -> list:
    """Every registered kernel as ``{"name", "computes", "args": [{"name", "kind",
    "help", "choices", "ndim", "required"}, ...]}`` -- from the registry, or (``live``
    False) from the catalog written from it."""
    if not live:
        from .kernel_catalog import KERNELS
        return list(KERNELS)
    from simulator.simt.kernels import REGISTRY
    return [describe(s) for s in REGISTRY]


def describe(spec) -> dict:
    """A KernelSpec as plain data (what the catalog holds)."""
    computes = spec.op(spec.problem(**spec.variants[0])).kind if spec.variants else None
    return {"name": spec.name, "computes": computes,
            "args": [{"name": a.name, "kind": a.kind, "help": a.help, "choices": tuple(a.choices),
                      "ndim": a.ndim, "required": a.required} for a in spec.args]}


def taking(name, table) -> list:
    """The kernels that take argument ``name``."""
    return [k["name"] for k in table if any(a["name"] == name for a in k["args"])]


def convolution_kernels(table) -> list:
    """The kernels whose operation is the convolution they take (not, say, the layout
    transform of its input): what ``sweep layout`` compares."""
    return [k["name"] for k in table if k["computes"] == "conv2d"
            and any(a["name"] == "conv" for a in k["args"])]


def problem_options(table) -> list:
    """Every problem argument a kernel takes besides its convolution or layer and its
    grid and block (which have options of their own)."""
    names = []
    for k in table:
        names += [a["name"] for a in k["args"] if a["kind"] in ("size", "choice")
                  and a["name"] not in names]
    return names


def add_problem(p, table, hw=True, required=True):
    """--kernel, every size and choice a kernel takes, and the convolution's or layer's
    --shape, --layer, --batch and --layout (``required``: whether --kernel must be
    given)."""
    from .options import add_hw
    if hw:
        add_hw(p)
    p.add_argument("--kernel", required=required, choices=[k["name"] for k in table])
    for name in problem_options(table):
        takers = [(k["name"], a) for k in table for a in k["args"] if a["name"] == name]
        arg = takers[0][1]
        helps = "; ".join(f"{k}: {a['help']}" for k, a in takers)
        if arg["kind"] == "size":
            p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=positive_int(name),
                           help=helps)
        else:
            choices = tuple(dict.fromkeys(c for _, a in takers for c in a["choices"]))
            p.add_argument(f"--{name.replace('_', '-')}", dest=name, choices=choices,
                           type=type(choices[0]), help=helps)
    if taking("conv", table):
        p.add_argument("--shape", metavar="n=..,c=..,h=..,w=..,k=..,r=..,s=..,stride=..,pad=..",
                       help="a convolution; pool2d: n=,c=,h=,w=,r=,s= and optionally stride= "
                            "(default 1), pad= (0), mode=max|avg (max); batchnorm: n=,c=,h=,w= and "
                            "optionally relu=0|1, residual=0|1 (0)")
        p.add_argument("--layer", metavar="NAME", help="a ResNet-50 layer of the kernel's kind, e.g. "
                                                       "layer1.0.conv2, maxpool, layer1.0.bn3")
        p.add_argument("--batch", type=positive_int("batch"), help="batch for --layer (default 1)")
        p.add_argument("--layout", choices=LAYOUTS,
                       help="the tensors' layout for convolutions, pools and batch norms (default "
                            "nchw); layout-transform: the layout it writes, from the other")


def _layer_op(args, kinds):
    """The op of --shape (its fields, of the first of ``kinds``) or --layer (a ResNet-50
    layer of one of ``kinds``), in --layout; None where neither is given."""
    import workloads
    from workloads.ir import BatchNorm, Conv2d, Pool2d
    from workloads.networks import parse_conv_shape, parse_op_shape
    if args.shape and args.layer:
        raise ValueError("give --shape or --layer, not both")
    layout = args.layout or "nchw"
    kind = kinds[0]
    if args.shape:
        if args.batch is not None:
            raise ValueError("--batch applies to --layer; put n= in --shape")
        if kind == "conv2d":
            return Conv2d(name="conv", layout=layout, **parse_conv_shape(args.shape))
        cls = Pool2d if kind == "pool2d" else BatchNorm
        return cls(name=kind, layout=layout, **parse_op_shape(kind, args.shape))
    if args.layer:
        net = workloads.resolve("resnet50", batch=args.batch or 1, layout=layout)
        for op in net.ops:
            if op.name == args.layer and op.kind in kinds:
                return op
        names = [op.name for op in net.ops if op.kind in kinds]
        if kind == "conv2d":
            raise ValueError(f"--layer {args.layer!r} is not a ResNet-50 convolution; e.g. "
                             f"{', '.join(names[:4])} ... {names[-1]}")
        raise ValueError(f"--layer {args.layer!r} is not a ResNet-50 {kind} layer; e.g. "
                         f"{', '.join(names[:4])}{' ... ' + names[-1] if len(names) > 4 else ''}")
    return None


def problem_args(args, grid=None, block=None):
    """(kernel name, its arguments) from the command line: every option the kernel's
    SPEC.args name, and an error for an option it does not take."""
    from simulator.simt.kernels import REGISTRY
    table = kernels()
    spec = REGISTRY.get(args.kernel)
    takes = {a.name: a for a in spec.args}
    kw = {}
    for name in problem_options(table):
        v = getattr(args, name, None)
        if name not in takes:
            if v is not None:
                raise ValueError(f"--{name.replace('_', '-')} applies to "
                                 f"{', '.join(taking(name, table))}, not {spec.name}")
            continue
        if v is not None:
            kw[name] = v
    if "conv" in takes or "op" in takes:
        key = "conv" if "conv" in takes else "op"
        op = _layer_op(args, ("conv2d",) if key == "conv" else takes["op"].choices)
        if op is None:
            raise ValueError(f"{spec.name} needs --shape or --layer")
        kw[key] = op
    else:
        for opt in CONV_OPTIONS:
            if getattr(args, opt, None) is not None:
                raise ValueError(f"--{opt} applies to "
                                 f"{', '.join(taking('conv', table) + taking('op', table))}")
    for name, v in (("grid", grid), ("block", block)):
        if v is None:
            continue
        if name not in takes:
            raise ValueError(f"--{name} applies to {', '.join(taking(name, table))} "
                             f"({spec.name}'s {name} follows from its problem)")
        kw[name] = v
    for a in spec.args:
        if a.required and a.name not in kw:
            raise ValueError(f"{spec.name} needs --{a.name.replace('_', '-')} ({a.help})")
    return spec.name, kw


def catalog_text(table) -> str:
    """``table`` as the Python literal :mod:`.kernel_catalog` holds: a kernel a few lines,
    an argument a line."""
    lines = ["KERNELS = ["]
    for k in table:
        lines.append(f"    {{'name': {k['name']!r}, 'computes': {k['computes']!r}, 'args': [")
        lines += [f"        {a!r}," for a in k["args"]]
        lines.append("    ]},")
    return "\n".join(lines + ["]"])


def write_catalog():
    """:mod:`.kernel_catalog` anew from the registry."""
    import re
    from pathlib import Path
    path = Path(__file__).with_name("kernel_catalog.py")
    text = re.sub(r"(?ms)^KERNELS = \[.*?^\]$", lambda m: catalog_text(kernels(live=True)),
                  path.read_text(), count=1)
    path.write_text(text)
    print(f"wrote {path}")


if __name__ == "__main__":
    write_catalog()

"""What a SIMT kernel declares once, and the registry that lists every kernel.

A kernel module holds the kernel's faces (the numba.cuda kernel that is measured, the
program the engine executes, a pure-Python reference of its accesses) and declares one
:class:`KernelSpec`. Everything that needs kernels -- the CLI's choices and options,
``simulator.simt.api.build``, the measurement suites, validation -- reads the
:data:`REGISTRY`. Adding a kernel is one module and one ``REGISTRY.add`` line in
``kernels/__init__.py`` (plus, when it brings new numba address functions, one line in
``dispatch.py``, which a test holds to the registry).

Every kernel takes its problem as one mapping of named arguments (:class:`Arg`),
validated and completed with defaults by :meth:`KernelSpec.problem`, and has one
signature for each face:

* ``build(hw, problem) -> tuple[Program, ...]`` -- the launches the engine runs;
* ``op(problem) -> TensorOp`` -- the operation computed (FLOPs, compulsory bytes);
* ``device(problem) -> Device`` -- the numba.cuda launches and their numpy reference;
* ``accesses(problem) -> tuple[dict, ...]`` -- per launch, every thread's global accesses.
"""
from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simulator.arguments import cut, show

ARG_KINDS = ("size", "choice", "conv", "dims", "op")


def _is_int(v) -> bool:
    """Whether ``v`` is an integer (a numpy one too), not a bool."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


@dataclass(frozen=True)
class Arg:
    """One named argument of a kernel's problem.

    ``kind``: ``size`` (a positive integer), ``choice`` (one of ``choices``), ``conv``
    (a ``workloads.ir.Conv2d``) or ``dims`` (1 to ``ndim`` positive integers: a grid or
    block shape) or ``op`` (a ``workloads.ir`` op whose ``kind`` is one of ``choices``:
    the layer a pool or batch-norm kernel computes). ``default`` None with ``required``
    False: the kernel picks it
    (``build`` sees None)."""

    name: str
    kind: str
    help: str
    default: Any = None
    required: bool = False
    choices: tuple = ()
    ndim: int = 1

    def __post_init__(self):
        if self.kind not in ARG_KINDS:
            raise ValueError(f"Arg.kind = {self.kind!r}: allowed: {', '.join(ARG_KINDS)}")

    def check(self, kernel: str, value):
        """The value, validated, naming the kernel, the argument and what is allowed: a
        TypeError for the wrong kind of thing (a float, a bool or a string for a size), a
        ValueError for a value not allowed."""
        if self.kind == "size":
            if not _is_int(value):
                raise TypeError(f"{kernel}: {self.name} = {show(value)}: must be a positive "
                                f"integer, not a {type(value).__name__}")
            if value < 1:
                raise ValueError(f"{kernel}: {self.name} = {show(value)}: must be a positive "
                                 f"integer")
            value = int(value)
            if value > MAX_SIZE:
                raise ValueError(f"{kernel}: {self.name} = {value:.3g}: at most {MAX_SIZE:.3g} "
                                 f"(2**48, a PiB of float32)")
            return value
        if self.kind == "choice":
            # the choice itself is returned (np.int64(16) as the 16 of the choices), and a
            # value is compared only with choices of its own kind (no array's elementwise ==)
            for c in self.choices:
                if (_is_int(c) and _is_int(value) and int(value) == c) or \
                        (not _is_int(c) and type(value) is type(c) and value == c):
                    return c
            raise ValueError(f"{kernel}: {self.name} = {show(value)}: allowed: "
                             f"{', '.join(map(str, self.choices))}")
        if self.kind == "conv":
            from workloads.ir import Conv2d
            if not isinstance(value, Conv2d):
                raise TypeError(f"{kernel}: {self.name} must be a workloads.ir.Conv2d, got "
                                 f"{type(value).__name__}")
            return value
        if self.kind == "op":
            from workloads.ir import TensorOp
            if not isinstance(value, TensorOp) or value.kind not in self.choices:
                got = value.kind if isinstance(value, TensorOp) else type(value).__name__
                raise ValueError(f"{kernel}: {self.name} must be a workloads.ir op of kind "
                                 f"{', '.join(self.choices)}, got {got}")
            return value
        if not _is_int(value) and not isinstance(value, (tuple, list)):
            raise TypeError(f"{kernel}: {self.name} = {show(value)}: this kernel takes 1 to "
                             f"{self.ndim} positive integers (an int, or a tuple of them)")
        t = (value,) if _is_int(value) else tuple(value)
        if not 1 <= len(t) <= self.ndim or any(not _is_int(x) or x < 1 or x > 2**31 - 1
                                               for x in t):
            want = (f"a 1-D {self.name}: one positive integer up to 2147483647" if self.ndim == 1
                    else f"1 to {self.ndim} positive integers, each up to 2147483647")
            ints = tuple(int(x) if _is_int(x) else x for x in t)      # np.int64(16) as 16
            given = show("x".join(map(str, t)) if t and all(map(_is_int, t)) else ints)
            raise ValueError(f"{kernel}: {self.name} = {given}: this kernel "
                             f"takes {want}")
        return tuple(int(x) for x in t)


MAX_SIZE = 2**48     # a size argument (elements, a GEMM side): workloads.ir's MAX_ELEMENTS


@dataclass(frozen=True)
class Device:
    """A problem's launches on a real GPU (numba.cuda).

    ``inputs(rng)``: host arrays by name (float32, random); ``outputs``: the names and
    shapes of the arrays the launches write; ``calls(arrays)``: every launch of the
    problem, in order, as (numba.cuda kernel, grid, block, args) on ``arrays`` (inputs
    and outputs by name, device or host arrays): what the GPU runs and what
    ``simulator.kernelcode.timing.simulate_launches`` times from the kernels' SASS;
    ``launch(arrays, stream)`` enqueues them on device arrays (given ``calls``, made from
    it: leave it None); ``reference(inputs)``: the numpy result of each output, float64;
    ``kernels``: (label, numba.cuda kernel) of each distinct kernel the launches use
    (what the resources suite reads the compiler's output of); ``shapes``: (grid, block)
    of each launch."""

    inputs: Callable
    outputs: dict
    launch: Callable = None
    reference: Callable = None
    kernels: tuple = ()
    shapes: tuple = ()
    calls: Callable = None

    def __post_init__(self):
        for name in ("inputs", "reference"):
            if not callable(getattr(self, name)):
                raise ValueError(f"Device.{name} = {show(getattr(self, name))}: a function "
                                 f"is required")
        if self.calls is not None and not callable(self.calls):
            raise ValueError(f"Device.calls = {show(self.calls)}: a function "
                             f"(arrays) -> [(kernel, grid, block, args), ...], or None")
        if self.launch is None:
            if self.calls is None:
                raise ValueError("Device: give calls (the launches as (kernel, grid, block, "
                                 "args)) or launch")
            object.__setattr__(self, "launch", launcher(self.calls))
        elif not callable(self.launch):
            raise ValueError(f"Device.launch = {show(self.launch)}: a function "
                             f"(arrays, stream=0), or None with calls")


def launcher(calls: Callable) -> Callable:
    """``Device.launch`` from ``Device.calls``: each call enqueued in order on ``stream``."""
    def launch(arrays, stream=0):
        for kernel, grid, block, args in calls(arrays):
            kernel[grid, block, stream](*args)
    return launch


class _Zeros:
    """An rng whose draws are zeros: a device's inputs at their shapes and dtypes, cheaply."""

    def standard_normal(self, size=None, dtype=float):
        return np.zeros(size if size is not None else (), dtype)


ZEROS = _Zeros()


def host_calls(device: Device, rng=None) -> list:
    """``device``'s launches on host arrays: (kernel, grid, block, args) of each, in
    order, their arrays numpy -- the inputs drawn from ``rng`` (default: zeros, cheap for
    a large problem; the kernels' control flow does not depend on their values except
    where a kernel says so), the outputs zeros (float32). What a simulation of the numba
    face (``simulator.kernelcode.timing.simulate_launches``) is given.

    >>> from simulator.simt.kernels import REGISTRY
    >>> spec = REGISTRY.get("matadd")
    >>> [(k.py_func.__name__, g, b, len(a)) for k, g, b, a in
    ...  host_calls(spec.device(spec.problem(m=40, n=20)))]
    [('matadd_kernel', (2, 3), (16, 16), 5)]
    """
    if not isinstance(device, Device):
        raise ValueError(f"device = {show(device)}: a Device (a KernelSpec's device(problem))")
    if device.calls is None:
        raise ValueError("device.calls is None: this device gives only launch(), not its "
                         "launches as (kernel, grid, block, args)")
    arrays = dict(device.inputs(ZEROS if rng is None else rng))
    arrays.update({k: np.zeros(s, np.float32) for k, s in device.outputs.items()})
    out = []
    for i, c in enumerate(device.calls(arrays)):
        if not isinstance(c, (tuple, list)) or len(c) != 4:
            raise ValueError(f"device.calls: launch {i}: {show(c)}: must be (kernel, grid, "
                             f"block, args)")
        out.append((c[0], c[1], c[2], tuple(c[3])))
    return out


@dataclass(frozen=True)
class KernelSpec:
    """One kernel algorithm as the rest of roofsim sees it (see the module doc)."""

    name: str
    summary: str
    args: tuple
    build: Callable
    op: Callable
    device: Callable
    accesses: Callable
    variants: tuple = ()        # problems the resources suite compiles (tiny, one per kernel variant)
    from_record: Callable = None  # a measurement record -> problem
    group: Callable = None        # problem -> the what-if group it ranks within
    doc: str = ""
    faces: tuple = field(default=())   # modules whose numba setup/lanes its programs use

    def arg(self, name: str) -> Arg:
        for a in self.args:
            if a.name == name:
                return a
        raise KeyError(name)

    def problem(self, **given) -> dict:
        """The kernel's problem: every argument named in ``given`` validated, the rest
        at their defaults; unknown or missing arguments are errors naming them."""
        names = [a.name for a in self.args]
        extra = [k for k, v in given.items() if k not in names and v is not None]
        if extra:
            raise ValueError(f"{self.name} does not take {cut(', '.join(extra))} (it takes "
                             f"{', '.join(names)})")
        out = {}
        for a in self.args:
            v = given.get(a.name)
            if v is None:
                if a.required:
                    raise ValueError(f"{self.name} needs {a.name} ({a.help})")
                out[a.name] = a.default
            else:
                out[a.name] = a.check(self.name, v)
        return out


class Registry:
    """Kernels by name, in the order they were added."""

    def __init__(self):
        self._specs: dict[str, KernelSpec] = {}

    def add(self, spec: KernelSpec) -> KernelSpec:
        if not isinstance(spec, KernelSpec):
            raise ValueError(f"register a KernelSpec, not {type(spec).__name__}")
        if spec.name in self._specs and self._specs[spec.name] is not spec:
            raise ValueError(f"kernel {spec.name!r} is registered already")
        self._specs[spec.name] = spec
        return spec

    def remove(self, name: str) -> None:
        self._specs.pop(name, None)

    def get(self, name: str) -> KernelSpec:
        try:
            return self._specs[name]
        except KeyError:
            raise ValueError(f"kernel = {show(name)}: allowed: {', '.join(self._specs)}") from None

    def names(self) -> tuple:
        return tuple(self._specs)

    def __iter__(self):
        return iter(self._specs.values())

    def __contains__(self, name) -> bool:
        return name in self._specs

    def __len__(self) -> int:
        return len(self._specs)


REGISTRY = Registry()

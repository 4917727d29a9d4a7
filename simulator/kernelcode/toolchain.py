"""A user's kernel to PTX, with no GPU: numba-cuda's compiler and NVIDIA's PyPI NVVM.

``kernel_ptx(kernel, args, cc)`` types the launch's arguments as numba would at
``kernel[grid, block](*args)``, compiles the kernel's Python function for compute
capability ``cc`` and returns a ``KernelPTX``: the PTX text, the entry's mangled name and
the argument types (each numba array becomes several ``.param`` entries; the emulator
reads them from the types).

numba-cuda asks the current device for its compute capability when a kernel calls a
``@cuda.jit(device=True)`` function, which fails with no GPU (REFERENCE.md, "Kernels from
their code"); for the length of a compile, ``_target`` answers with the target's ``cc``
instead. Compiles are remembered in-process by kernel fingerprint, argument types and cc.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import threading
import types as pytypes

#: the lowest compute capability CUDA 13's compilers target; older presets (a Fermi,
#: cc 2.0) are emulated from PTX compiled for this one: the PTX a kernel runs is the same
#: program, and only the SASS (issue 27) differs
LOWEST_CC = (7, 5)

_lock = threading.Lock()
_memo: dict = {}


@dataclasses.dataclass(frozen=True)
class KernelPTX:
    """A kernel compiled to PTX for one argument typing and compute capability."""
    name: str            # the Python function's name
    entry: str           # the mangled ``.entry`` name in ``ptx``
    ptx: str
    argtypes: tuple      # numba types, one per Python argument
    cc: tuple            # (major, minor)
    fingerprint: str     # hash of the kernel's code, its callees' and its constants


def cc_of(hw) -> tuple:
    """The compute capability to compile for on preset ``hw``: its own, or LOWEST_CC for
    presets older than CUDA 13's compilers support."""
    text = getattr(hw, "compute_capability", None) or "9.0"
    major, minor = (int(x) for x in str(text).split("."))
    return max((major, minor), LOWEST_CC)


def dispatcher_function(kernel):
    """The Python function behind a numba ``@cuda.jit`` kernel; TypeError for anything
    else (naming what was given)."""
    fn = getattr(kernel, "py_func", None)
    if fn is None or not isinstance(fn, pytypes.FunctionType):
        raise TypeError(f"kernel={kernel!r}: expected a numba @cuda.jit kernel "
                        "(a function decorated with numba.cuda.jit)")
    if getattr(kernel, "targetoptions", {}).get("device"):
        raise TypeError(f"kernel={fn.__name__!r} is a device function "
                        "(@cuda.jit(device=True)); launch a kernel that calls it")
    return fn


def argument_types(args) -> tuple:
    """numba's types of a launch's arguments, as ``kernel[grid, block](*args)`` types
    them; TypeError naming the argument numba cannot type."""
    from numba import typeof
    out = []
    for i, a in enumerate(args):
        try:
            out.append(typeof(a))
        except (ValueError, TypeError) as e:
            raise TypeError(f"args[{i}]: numba cannot type {type(a).__name__} "
                            f"({e})") from None
    return tuple(out)


def fingerprint(fn) -> str:
    """A hash of ``fn``'s bytecode and constants, and of the globals it names: the
    values of numbers and strings, the code of the numba functions it calls (recursively),
    the names of modules and other objects."""
    h = hashlib.sha256()
    seen = set()

    def code(c):
        h.update(c.co_code)
        for k in c.co_consts:
            if isinstance(k, pytypes.CodeType):
                code(k)
            else:
                h.update(repr(k).encode())
        h.update(repr(c.co_names).encode())

    def function(f):
        if id(f) in seen:
            return
        seen.add(id(f))
        code(f.__code__)
        h.update(repr(f.__defaults__).encode())
        for name in f.__code__.co_names:
            value = f.__globals__.get(name)
            inner = getattr(value, "py_func", None)
            if isinstance(inner, pytypes.FunctionType):
                function(inner)
            elif isinstance(value, (int, float, complex, str, bool, bytes, type(None))):
                h.update(f"{name}={value!r}".encode())
            elif isinstance(value, pytypes.ModuleType):
                h.update(f"{name}=module {value.__name__}".encode())
            else:
                h.update(f"{name}:{type(value).__qualname__}".encode())
        for cell in f.__closure__ or ():
            with contextlib.suppress(ValueError):
                h.update(repr(cell.cell_contents).encode())

    function(fn)
    return h.hexdigest()[:20]


@contextlib.contextmanager
def _target(cc):
    """numba-cuda's device-function compile asks the current device for its compute
    capability; answer ``cc`` while a compile runs (held under ``_lock``)."""
    import numba.cuda.dispatcher as dispatcher
    original = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=cc)
    try:
        yield
    finally:
        dispatcher.get_current_device = original


def kernel_ptx(kernel, args, cc=(9, 0)) -> KernelPTX:
    """Compile numba kernel ``kernel`` for a launch with ``args`` to PTX for ``cc``;
    ValueError naming the kernel and the compiler's message where it cannot compile."""
    fn = dispatcher_function(kernel)
    argtypes = argument_types(args)
    cc = tuple(int(x) for x in cc)
    key = (fingerprint(fn), argtypes, cc)
    with _lock:
        hit = _memo.get(key)
        if hit is not None:
            return hit
        from numba import cuda
        try:
            with _target(cc):
                ptx, _ = cuda.compile_ptx(fn, argtypes, cc=cc)
        except Exception as e:  # noqa: BLE001 -- numba's typing and lowering errors
            first = next((ln.strip() for ln in str(e).splitlines() if ln.strip()),
                         type(e).__name__)
            raise ValueError(f"kernel {fn.__name__!r} does not compile for "
                             f"{', '.join(map(str, argtypes))}: {first}") from None
        entry = next(ln.split()[-1].rstrip("(") for ln in ptx.splitlines()
                     if ln.startswith(".visible .entry") or ln.startswith(".entry"))
        out = KernelPTX(fn.__name__, entry, ptx, argtypes, cc, key[0])
        _memo[key] = out
        return out

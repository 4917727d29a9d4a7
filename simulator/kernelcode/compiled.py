"""One kernel compiled once: everything roofsim reads of a kernel's code, from one cache.

``compile(kernel, args, cc, name=None)`` takes a numba ``@cuda.jit`` kernel (typed by
the launch's ``args``) or PTX text (``name`` its entry where it has several) and a
compute capability, and returns a :class:`Compiled`:

* ``kptx``: the PTX (``toolchain.KernelPTX``: the kernel's name, the mangled entry, the
  text, argument types, cc, fingerprint), made by numba-cuda with no GPU;
* ``program``: the PTX decoded into the emulator's table (``decode.Program``);
* ``sass``, ``lines``, ``registers``, ``shared_static``: ptxas's SASS, the PTX line each
  SASS instruction came from, and ptxas -v's registers per thread and static shared
  bytes per block (``toolchain.sass_lines``);
* ``smap``: the map of a warp's PTX path onto its SASS (``sassmap.build``);
* ``arg_names``: the kernel's parameter names.

The PTX and the decoded program are made at once (emulating a kernel needs only them);
the SASS and what comes from it when first asked for. The same kernel, argument types
and target give the same object for the life of the process; ``toolchain`` keeps the
PTX, cubin and SASS on disk as well.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import threading
from typing import TYPE_CHECKING

from simulator.kernelcode import decode, sassmap, toolchain
from simulator.kernelcode.ptx import PTXError, parse

if TYPE_CHECKING:
    from collections.abc import Sequence

_lock = threading.RLock()
_cache: dict = {}


@dataclasses.dataclass(frozen=True, eq=False)
class Compiled:
    """A kernel compiled for one compute capability (see the module's docstring)."""
    kptx: toolchain.KernelPTX
    program: decode.Program
    arg_names: tuple
    from_text: bool           # PTX text (arrays passed as one pointer each), not numba

    @property
    def name(self) -> str:
        """The kernel's name (the Python function's, or the PTX entry's)."""
        return self.kptx.name

    @property
    def argtypes(self):
        """numba's argument types, or None for PTX text (arrays by pointer, numbers by
        value)."""
        return None if self.from_text else self.kptx.argtypes

    @functools.cached_property
    def sass(self):
        """ptxas's SASS of the PTX (``disasm.Sass``)."""
        return toolchain.sass(self.kptx)

    @functools.cached_property
    def _resources(self) -> tuple:
        return toolchain.sass_lines(self.kptx, self.sass)

    @property
    def lines(self):
        """Per SASS instruction, the PTX line it came from (0: none named)."""
        return self._resources[0]

    @property
    def registers(self) -> int:
        """Registers per thread (ptxas -v)."""
        return self._resources[1]

    @property
    def shared_static(self) -> int:
        """Static shared memory per block in bytes (ptxas -v)."""
        return self._resources[2]

    @functools.cached_property
    def smap(self) -> sassmap.SassMap:
        """The PTX-path -> SASS map (``sassmap.build``)."""
        return sassmap.build(self.program, self.sass, self.lines)

    @property
    def ptx_rows_lines(self) -> tuple:
        """The PTX line of each emulator row."""
        return tuple(self.program.lines)

    @property
    def successors(self) -> tuple:
        """The PTX blocks' successors (``decode.Program.successors``)."""
        return self.program.successors


def _arg_names(kernel, n: int) -> tuple:
    fn = getattr(kernel, "py_func", None)
    code = getattr(fn, "__code__", None)
    names = code.co_varnames[:code.co_argcount] if code is not None else ()
    return tuple(names[i] if i < len(names) else f"arg{i}" for i in range(n))


def _from_text(text: str, cc, name, n_args: int) -> Compiled:
    module = parse(text)
    entries = [n for n, f in module.functions.items() if f.entry]
    if name is None:
        if len(entries) != 1:
            raise ValueError(f"name=None: the PTX has {len(entries)} entries "
                             f"({', '.join(entries)}); name one")
        name = entries[0]
    prog = decode.decode(module, name)
    kp = toolchain.KernelPTX(name, prog.name, text, (), tuple(cc),
                             hashlib.sha256(text.encode()).hexdigest())
    return Compiled(kp, prog, tuple(f"arg{i}" for i in range(n_args)), True)


def compile(kernel: object | str, args: Sequence[object], cc: Sequence[int],  # noqa: A001 -- the module's verb
            name: str | None = None) -> Compiled:
    """``kernel`` (a numba kernel typed by ``args``, or PTX text with entry ``name``)
    compiled for compute capability ``cc``, from the process's cache where it was
    compiled before. ValueError (a ``PTXError`` for PTX the emulator cannot read) naming
    the kernel where it does not compile."""
    cc = tuple(int(x) for x in cc)
    if isinstance(kernel, str):
        key = ("ptx", hashlib.sha256(kernel.encode()).hexdigest(), name, cc, len(args))
        with _lock:
            hit = _cache.get(key)
            if hit is None:
                hit = _cache[key] = _from_text(kernel, cc, name, len(args))
            return hit
    kp = toolchain.kernel_ptx(kernel, list(args), cc)
    key = ("numba", kp.fingerprint, kp.argtypes, kp.cc, kp.entry, kp.key)
    with _lock:
        hit = _cache.get(key)
        if hit is None:
            try:
                prog = decode.decode(parse(kp.ptx), kp.entry)
            except PTXError as e:
                raise PTXError(f"kernel {kp.name!r}: {e}") from None
            hit = _cache[key] = Compiled(kp, prog, _arg_names(kernel, len(args)), False)
        return hit

"""A user's kernel to PTX, cubin and SASS, with no GPU: numba-cuda's compiler, NVIDIA's
PyPI NVVM, and ptxas and nvdisasm from NVIDIA's PyPI wheels.

``kernel_ptx(kernel, args, cc)`` types the launch's arguments as numba would at
``kernel[grid, block](*args)``, compiles the kernel's Python function for compute
capability ``cc`` and returns a ``KernelPTX``: the PTX text, the entry's mangled name and
the argument types (each numba array becomes several ``.param`` entries; the emulator
reads them from the types). ``cubin(kptx)`` assembles that PTX with ptxas for the
target's ``sm_XY`` (``sm_90a`` on an H100, as numba targets it); ``sass(kptx)``
disassembles the cubin with nvdisasm into a ``Sass``: the entry's instructions (pc,
predicate guard, opcode with modifiers, operands) and its basic blocks with their
successor edges.

numba-cuda asks the current device for its compute capability when a kernel calls a
``@cuda.jit(device=True)`` function, which fails with no GPU (docs/sources.md, "Kernels from
their code"); for the length of a compile, ``_target`` answers with the target's ``cc``
instead. Where numba's CUDA simulator is on (``NUMBA_ENABLE_CUDASIM=1``, as in the
tests), numba.cuda has no compiler; the PTX is then compiled in a child Python process with
the simulator off, which imports the kernel by its module and name.

Caching: every artefact is remembered in-process and on disk, under ``CACHE_DIR`` if set,
else ``$ROOFSIM_CACHE``, else ``~/.cache/roofsim/kernels`` (an empty string turns the disk
cache off). The PTX is keyed by the kernel's fingerprint, module and name, the argument
types (their ``str``), ``cc`` and the versions of numba, numba-cuda and NVIDIA's NVVM and
NVRTC wheels; the cubin by the PTX text, the arch and the ptxas binary; the SASS listing by
the cubin and the nvdisasm binary. Each cache file is a SHA-256 line and the artefact;
writes go to a temporary file moved into place with ``os.replace``; a file that is
unreadable or fails its checksum is compiled again, and a cache directory that cannot be
written leaves the in-process cache alone working.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import types as pytypes
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from simulator.kernelcode.disasm import Sass, parse_sass
from simulator.kernelcode.lineinfo import read_lines, resources, tagged_ptx

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from hwmodels.schema import Hardware

#: the lowest compute capability CUDA 13's compilers target; older presets (a Fermi,
#: cc 2.0) are emulated from PTX compiled for this one: the PTX a kernel runs is the same
#: program, and only the SASS (what timing reads) differs
LOWEST_CC = (7, 5)

#: the disk cache's directory; None: ``$ROOFSIM_CACHE``, else ``~/.cache/roofsim/kernels``;
#: "": no disk cache
CACHE_DIR: str | os.PathLike | None = None

#: the PyPI package that provides each binary tool
TOOL_PACKAGES = {"ptxas": "nvidia-cuda-nvcc", "nvdisasm": "nvidia-cuda-nvdisasm"}

_lock = threading.RLock()
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
    key: str = ""        # the disk cache's key of this PTX ("" for PTX made elsewhere)


def cc_of(hw: Hardware) -> tuple[int, int]:
    """The compute capability to compile for on preset ``hw``: its own, or LOWEST_CC for
    presets older than CUDA 13's compilers support."""
    text = getattr(hw, "compute_capability", None) or "9.0"
    major, minor = (int(x) for x in str(text).split("."))
    return max((major, minor), LOWEST_CC)


def dispatcher_function(kernel: object) -> pytypes.FunctionType:
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


def argument_types(args: Iterable[object]) -> tuple:
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


def fingerprint(fn: pytypes.FunctionType) -> str:
    """A hash of ``fn``'s bytecode and constants, and of the globals it names: the
    values of numbers and strings, the code of the numba functions it calls (recursively),
    the contents of numpy arrays (a kernel's constant tables), the names of modules and
    other objects."""
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
            else:
                h.update(f"{name}=".encode() + _value_digest(value))
        for cell in f.__closure__ or ():
            with contextlib.suppress(ValueError):
                inner = getattr(cell.cell_contents, "py_func", None)
                if isinstance(inner, pytypes.FunctionType):
                    function(inner)
                else:
                    h.update(_value_digest(cell.cell_contents))

    function(fn)
    return h.hexdigest()[:20]


def _value_digest(value) -> bytes:
    """What a kernel's fingerprint records of a global or closure value: the value of a
    number, string or tuple of them, the dtype, shape and bytes of a numpy array, the name
    of a module, else the type's name."""
    if isinstance(value, (int, float, complex, str, bool, bytes, type(None))):
        return repr(value).encode()
    if isinstance(value, tuple) and all(
            isinstance(v, (int, float, complex, str, bool)) for v in value):
        return repr(value).encode()
    if isinstance(value, pytypes.ModuleType):
        return f"module {value.__name__}".encode()
    data = getattr(value, "tobytes", None)
    if callable(data) and hasattr(value, "dtype") and hasattr(value, "shape"):
        return (f"array {value.dtype} {value.shape} ".encode()
                + hashlib.sha256(data()).hexdigest().encode())
    return f":{type(value).__qualname__}".encode()


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


def _compile_message(e: Exception) -> str:
    """numba's error as one meaningful line: colour codes removed, its generic lines
    ("Failed in cuda mode pipeline", "During: ...") skipped, the signature that found no
    implementation joined on, and the source line where numba records one."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(e))
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    skip = ("Failed in ", "During:", "There are ", "- Of which", "Overload of function")
    useful = [ln for ln in lines if not ln.startswith(skip)] or lines
    if not useful:
        return type(e).__name__
    first = useful[0]
    if first.endswith("found for signature:"):
        sig = next((ln for ln in useful[1:] if ln.startswith(">>>")), None)
        if sig:
            first = f"{first} {sig[3:].strip()}"
    loc = getattr(e, "loc", None)
    line = getattr(loc, "line", None)
    if line is not None:
        first += f" (line {line} of {Path(str(getattr(loc, 'filename', '?'))).name})"
    return first


def _entry_of(ptx: str):
    """The mangled name of the first ``.entry`` in ``ptx``; None where there is none."""
    for ln in ptx.splitlines():
        if ln.startswith(".visible .entry") or ln.startswith(".entry"):
            return ln.split()[-1].rstrip("(")
    return None


def fastmath_of(kernel: object) -> bool:
    """Whether ``kernel`` was decorated ``@cuda.jit(fastmath=True)`` (approximate
    division and square roots, flushed subnormals, contractions: another PTX)."""
    opts = getattr(kernel, "targetoptions", None) or {}
    return bool(opts.get("fastmath", False) or getattr(kernel, "_fastmath", False))


def _compile(fn, argtypes, cc, fastmath=False, lineinfo=False) -> str:
    """numba's PTX of ``fn`` for ``argtypes`` and ``cc`` (``lineinfo``: with the
    ``.loc`` line table naming the Python lines); ValueError naming the kernel and
    numba's message in one line."""
    from numba import cuda
    try:
        with _target(cc):
            ptx, _ = cuda.compile_ptx(fn, argtypes, cc=cc, fastmath=fastmath, lineinfo=lineinfo)
    except Exception as e:  # noqa: BLE001 -- numba's typing and lowering errors
        raise ValueError(f"kernel {fn.__name__!r} does not compile for "
                         f"({', '.join(map(str, argtypes))}): "
                         f"{_compile_message(e)}") from None
    return ptx


def simulated() -> bool:
    """Whether numba's CUDA simulator replaces numba.cuda in this process
    (``NUMBA_ENABLE_CUDASIM=1``): its compiler cannot make PTX."""
    try:
        from numba.cuda.core import config
    except ImportError:
        return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")
    return bool(config.ENABLE_CUDASIM)


def _compile_in_child(fn, argtypes, cc, lineinfo=False) -> str:
    """``_compile`` in a Python process without numba's CUDA simulator, for a process
    that has it on: the child imports the kernel by module and name (a kernel defined at
    a module's top level); ValueError where it cannot."""
    import pickle
    if "<locals>" in fn.__qualname__ or fn.__module__ == "__main__":
        raise ValueError(f"kernel {fn.__name__!r}: numba's CUDA simulator is on "
                         "(NUMBA_ENABLE_CUDASIM=1) and the kernel is not importable by "
                         "module and name; define it at a module's top level or compile "
                         "with the simulator off")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if isinstance(p, str) and p))
    from simulator.kernelcode.userfile import USER_PREFIX
    path = None
    if fn.__module__.startswith(USER_PREFIX):       # a launcher's file (roofsim emulate)
        path = getattr(sys.modules.get(fn.__module__), "__file__", None)
    job = pickle.dumps((fn.__module__, fn.__qualname__, argtypes, cc, path, lineinfo))
    r = subprocess.run([sys.executable, "-c", "from simulator.kernelcode.toolchain import "
                        "_child_main; _child_main()"], input=job, capture_output=True,
                       env=env)
    try:
        ok, text = pickle.loads(r.stdout.rpartition(_ANSWER)[2])
    except Exception:  # noqa: BLE001 -- the child died before answering
        lines = r.stderr.decode(errors="replace").strip().splitlines() or ["no output"]
        raise ValueError(f"kernel {fn.__name__!r}: the compiling process failed: "
                         f"{lines[-1]}") from None
    if not ok:
        raise ValueError(text)
    return text


def _child_main() -> None:
    """The child of ``_compile_in_child``: a pickled (module, qualname, argtypes, cc,
    file, lineinfo) on stdin (file: the path of a launcher's module, loaded from it); a pickled
    (True, PTX) or (False, message) on stdout."""
    import importlib
    import pickle
    module, qualname, argtypes, cc, path, lineinfo = pickle.loads(sys.stdin.buffer.read())
    try:
        if path is not None:
            from simulator.kernelcode.userfile import load_module
            obj = load_module(path)
        else:
            obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        answer = (True, _compile(dispatcher_function(obj), argtypes, cc, fastmath_of(obj),
                                 lineinfo))
    except (ValueError, TypeError, ImportError, AttributeError) as e:
        answer = (False, str(e).splitlines()[0] if str(e) else type(e).__name__)
    sys.stdout.flush()
    sys.stdout.buffer.write(_ANSWER + pickle.dumps(answer))


_ANSWER = b"\n--roofsim-kernel-ptx--\n"   # what the child prints before its answer


def kernel_ptx(kernel: object, args: Sequence[object], cc: Sequence[int] = (9, 0)) -> KernelPTX:
    """Compile numba kernel ``kernel`` for a launch with ``args`` to PTX for ``cc``;
    ValueError naming the kernel and the compiler's message where it cannot compile.
    A PTX compiled before (in this process or, through the disk cache, any other) is
    returned without running numba's compiler."""
    fn = dispatcher_function(kernel)
    argtypes = argument_types(args)
    cc = tuple(int(x) for x in cc)
    fast = fastmath_of(kernel)
    key = (fingerprint(fn), argtypes, cc, fast)
    with _lock:
        hit = _memo.get(key)
        if hit is not None:
            return hit
        dkey = _digest("ptx", fn.__module__, fn.__qualname__, key[0],
                       *map(str, argtypes), cc, *_versions(), *(("fastmath",) if fast else ()))
        ptx = entry = None
        data = _cache_read(f"{dkey}.ptx")
        if data is not None:
            with contextlib.suppress(UnicodeDecodeError):
                ptx = data.decode()
                entry = _entry_of(ptx)
        if entry is None:
            if simulated():
                ptx = _compile_in_child(fn, argtypes, cc)
            else:
                ptx = _compile(fn, argtypes, cc, fast)
            entry = _entry_of(ptx)
            if entry is None:
                raise ValueError(f"kernel {fn.__name__!r}: numba's PTX has no .entry")
            _cache_write(f"{dkey}.ptx", ptx.encode())
        out = KernelPTX(fn.__name__, entry, ptx, argtypes, cc, key[0], dkey)
        _memo[key] = out
        return out


def kernel_ptx_lines(kernel: object, args: Sequence[object], cc: Sequence[int] = (9, 0)) -> str:
    """numba's PTX of ``kernel`` for ``args`` and ``cc`` with its line table (``.file``
    and ``.loc`` directives naming the Python source lines), disk-cached as
    ``kernel_ptx``'s. NVVM emits the same instructions with and without the table
    (``simulator.kernelcode.source`` checks)."""
    fn = dispatcher_function(kernel)
    argtypes = argument_types(args)
    cc = tuple(int(x) for x in cc)
    fast = fastmath_of(kernel)
    # the line table names the file and its lines: a copy elsewhere, or an edit that
    # moves lines without changing the code, is another table
    source = getattr(getattr(fn, "__code__", None), "co_filename", "")
    try:
        with open(source, "rb") as f:
            text = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        text = ""
    dkey = _digest("ptx-lineinfo", fn.__module__, fn.__qualname__, fingerprint(fn), source, text,
                   *map(str, argtypes), cc, *_versions(), *(("fastmath",) if fast else ()))
    data = _cache_read(f"{dkey}.ptx")
    if data is not None:
        with contextlib.suppress(UnicodeDecodeError):
            return data.decode()
    ptx = (_compile_in_child(fn, argtypes, cc, lineinfo=True) if simulated()
           else _compile(fn, argtypes, cc, fast, lineinfo=True))
    _cache_write(f"{dkey}.ptx", ptx.encode())
    return ptx


# ---------------------------------------------------------------------------------------
# the disk cache


def cache_dir() -> Path | None:
    """The disk cache's directory (a Path), or None where the disk cache is off."""
    d = CACHE_DIR if CACHE_DIR is not None else os.environ.get("ROOFSIM_CACHE")
    if d is None:
        return Path.home() / ".cache" / "roofsim" / "kernels"
    return Path(d).expanduser() if str(d) else None


_unwritable: set = set()   # directories a write failed in (warned about once)


def _digest(*parts) -> str:
    """A short hash of ``parts``' text: a cache key."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:32]


def _versions() -> tuple:
    """The versions of the packages that make the PTX (a part of its cache key)."""
    global _versions_memo
    if _versions_memo is None:
        from importlib import metadata
        out = [f"python {sys.version_info[:3]}"]
        for dist in ("numba", "numba-cuda", "nvidia-nvvm", "nvidia-cuda-nvrtc"):
            try:
                out.append(f"{dist} {metadata.version(dist)}")
            except metadata.PackageNotFoundError:
                out.append(f"{dist} -")
        _versions_memo = tuple(out)
    return _versions_memo


_versions_memo = None


def _cache_read(name: str):
    """The artefact cached as ``name``, or None where there is none or it is unreadable
    or fails its checksum (then it is compiled again)."""
    d = cache_dir()
    if d is None:
        return None
    try:
        data = (d / name).read_bytes()
    except OSError:
        return None
    head, sep, body = data.partition(b"\n")
    if not sep or head != hashlib.sha256(body).hexdigest().encode():
        return None
    return body


def _cache_write(name: str, body: bytes) -> None:
    """Cache ``body`` as ``name``: a temporary file moved into place, so a reader sees
    the old file or the whole new one. A directory that cannot be written is warned
    about once and then left alone (the in-process cache still works)."""
    d = cache_dir()
    if d is None or d in _unwritable:
        return
    tmp = None
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=f".{name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        os.replace(tmp, d / name)
    except OSError as e:
        _unwritable.add(d)
        warnings.warn(f"roofsim: kernel cache {d} is not writable ({e}); compiled "
                      "kernels are kept in memory only", RuntimeWarning, stacklevel=3)
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def clear_memory_cache() -> None:
    """Forget the in-process cache (the disk cache stays)."""
    with _lock:
        _memo.clear()


# ---------------------------------------------------------------------------------------
# ptxas and nvdisasm


def _find_binary(name: str):
    """The path of NVIDIA's binary ``name``: cuda.pathfinder's choice (NVIDIA's wheels
    first, then conda, CUDA_PATH / CUDA_HOME), else the PATH's; None where there is none."""
    try:
        from cuda.pathfinder import find_nvidia_binary_utility
    except ImportError:
        find_nvidia_binary_utility = None
    path = find_nvidia_binary_utility(name) if find_nvidia_binary_utility else None
    return path or shutil.which(name)


def tool_path(name: str) -> str:
    """The path of ``ptxas`` or ``nvdisasm``; FileNotFoundError naming the PyPI package
    that provides it where it cannot be found."""
    path = _find_binary(name)
    if not path:
        pkg = TOOL_PACKAGES[name]
        raise FileNotFoundError(f"{name} not found: it comes with the PyPI package {pkg} "
                                f"(pip install {pkg}), a dependency of roofsim")
    return path


def _tool_id(path: str) -> str:
    """A binary's identity for cache keys: its path, size and modification time (a
    different or updated tool gets new keys)."""
    st = os.stat(path)
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


def _run(argv, cwd):
    """Run a tool (a seam the tests count calls through)."""
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True)


def sm_arch(cc: Sequence[int]) -> str:
    """ptxas's ``-arch`` for compute capability ``cc``: ``sm_90a`` for (9, 0), as numba
    targets an H100, else ``sm_XY``."""
    major, minor = (int(x) for x in cc)
    return f"sm_{major}{minor}" + ("a" if (major, minor) == (9, 0) else "")


def _first_error(stderr: str, default: str) -> str:
    """ptxas's first error line, without the temporary file's path."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    line = next((ln for ln in lines if "error" in ln.lower()), lines[0] if lines else default)
    line = re.sub(r"^ptxas\s+\S+?,\s*", "", line)
    return re.sub(r"\s+", " ", line)


def cubin(kptx: KernelPTX) -> bytes:
    """The cubin (an ELF image) ptxas assembles from ``kptx``'s PTX for its cc;
    ValueError naming the kernel and ptxas's first error line where it fails."""
    arch = sm_arch(kptx.cc)
    ptxas = tool_path("ptxas")
    key = _digest("cubin", hashlib.sha256(kptx.ptx.encode()).hexdigest(), arch,
                  _tool_id(ptxas))
    with _lock:
        hit = _memo.get(key)
        if hit is not None:
            return hit
        data = _cache_read(f"{key}.cubin")
        if data is None or not data.startswith(b"\x7fELF"):
            with tempfile.TemporaryDirectory(prefix="roofsim-ptxas-") as tmp:
                Path(tmp, "kernel.ptx").write_text(kptx.ptx)
                r = _run([ptxas, f"-arch={arch}", "kernel.ptx", "-o", "kernel.cubin"], tmp)
                if r.returncode != 0:
                    msg = _first_error(r.stderr or r.stdout, f"exit status {r.returncode}")
                    raise ValueError(f"kernel {kptx.name!r}: ptxas -arch={arch} failed: "
                                     f"{msg}")
                data = Path(tmp, "kernel.cubin").read_bytes()
            _cache_write(f"{key}.cubin", data)
        _memo[key] = data
        return data


def sass(kptx: KernelPTX) -> Sass:
    """``kptx``'s SASS: nvdisasm's listing of the cubin parsed into the entry's
    instructions and basic blocks (``disasm.Sass``); ValueError where nvdisasm fails or
    its listing has no code for the entry."""
    binary = cubin(kptx)
    nvdisasm = tool_path("nvdisasm")
    key = _digest("sass", hashlib.sha256(binary).hexdigest(), _tool_id(nvdisasm))
    arch = sm_arch(kptx.cc)
    with _lock:
        hit = _memo.get(key)
        if hit is not None:
            return hit
        data, out = _cache_read(f"{key}.sass"), None
        if data is not None:
            with contextlib.suppress(ValueError):   # unreadable: disassemble again
                out = parse_sass(data.decode(errors="replace"), kptx.entry, arch)
        if out is None:
            with tempfile.TemporaryDirectory(prefix="roofsim-nvdisasm-") as tmp:
                Path(tmp, "kernel.cubin").write_bytes(binary)
                r = _run([nvdisasm, "-c", "kernel.cubin"], tmp)
            if r.returncode != 0:
                msg = _first_error(r.stderr or r.stdout, f"exit status {r.returncode}")
                raise ValueError(f"kernel {kptx.name!r}: nvdisasm failed: {msg}")
            out = parse_sass(r.stdout, kptx.entry, arch)
            _cache_write(f"{key}.sass", r.stdout.encode())
        _memo[key] = out
        return out


def sass_lines(kptx: KernelPTX, sass: Sass) -> tuple:
    """(per instruction of ``sass`` -- ``kptx``'s SASS -- the line of ``kptx.ptx`` it was
    compiled from (0 where ptxas names none), registers per thread, static shared bytes
    per block): ptxas's build of the tagged PTX, with -v for its resources. Cached in
    memory and on disk as the cubin is. ValueError where the tagged build's code differs
    from ``sass``."""
    arch = sm_arch(kptx.cc)
    ptxas, nvdisasm = tool_path("ptxas"), tool_path("nvdisasm")
    key = _digest("ptx-lines", hashlib.sha256(kptx.ptx.encode()).hexdigest(), arch,
                  _tool_id(ptxas), _tool_id(nvdisasm))
    with _lock:
        hit = _memo.get(key)
        if hit is not None:
            return hit
        data = _cache_read(f"{key}.lines")
        try:
            saved = json.loads(data) if data is not None else None
        except ValueError:
            saved = None
        if not isinstance(saved, dict) or not isinstance(saved.get("listing"), str):
            with tempfile.TemporaryDirectory(prefix="roofsim-lines-") as tmp:
                Path(tmp, "kernel.ptx").write_text(tagged_ptx(kptx.ptx))
                r = _run([ptxas, f"-arch={arch}", "-v", "-lineinfo", "kernel.ptx", "-o",
                             "kernel.cubin"], tmp)
                if r.returncode != 0:
                    msg = _first_error(r.stderr or r.stdout, f"exit status {r.returncode}")
                    raise ValueError(f"kernel {kptx.name!r}: ptxas -lineinfo failed: {msg}")
                verbose = r.stderr + r.stdout
                r = _run([nvdisasm, "-c", "-g", "kernel.cubin"], tmp)
                if r.returncode != 0:
                    msg = _first_error(r.stderr or r.stdout, f"exit status {r.returncode}")
                    raise ValueError(f"kernel {kptx.name!r}: nvdisasm -g failed: {msg}")
            saved = {"listing": r.stdout, "verbose": verbose}
            _cache_write(f"{key}.lines", json.dumps(saved).encode())
        text = saved["listing"]
        tagged = parse_sass(text, kptx.entry, arch)
        if [(i.pc, i.opcode, i.operands) for i in tagged.instrs] != \
                [(i.pc, i.opcode, i.operands) for i in sass.instrs]:
            raise ValueError(f"kernel {kptx.name!r}: ptxas made different code with "
                             "-lineinfo; its SASS cannot be mapped onto its PTX")
        table = read_lines(text, kptx.entry)
        lines = np.array([table.get(i.pc, 0) for i in sass.instrs], dtype=np.int64)
        lines.setflags(write=False)
        out = (lines, *resources(str(saved.get("verbose", ""))))
        _memo[key] = out
        return out

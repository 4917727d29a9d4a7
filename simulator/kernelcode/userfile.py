"""A user's launcher, ``FILE.py:FUNCTION``: imported from its file, called, checked.

The function takes ``grid`` and ``block`` keywords (None: its own defaults) and returns
``(kernel, grid, block, args)``: what ``kernel[grid, block](*args)`` would launch.
Every way this can go wrong is one ValueError naming the file, the function and what
was found.
"""
from __future__ import annotations

import importlib.util
import inspect
import itertools
import os
import sys
import sysconfig
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import types
    from collections.abc import Sequence

_count = itertools.count()
#: the module names a launcher's file is imported under
USER_PREFIX = "_roofsim_user_"


def split_spec(spec: str) -> tuple[str, str]:
    """'path/to/file.py:launch' -> ('path/to/file.py', 'launch')."""
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"launcher {spec!r}: expected FILE.py:FUNCTION (a Python file and "
                         "the function in it that returns (kernel, grid, block, args))")
    path, _, func = spec.rpartition(":")
    if not path or not func.isidentifier():
        raise ValueError(f"launcher {spec!r}: expected FILE.py:FUNCTION, FUNCTION a Python "
                         "name")
    return path, func


def load_module(path: str) -> types.ModuleType:
    """Import the Python file ``path`` as a fresh module (its folder first on sys.path
    while it imports, so its own imports work)."""
    if not os.path.exists(path):
        raise ValueError(f"{path!r}: no such file")
    if os.path.isdir(path):
        raise ValueError(f"{path!r}: is a folder; expected a Python file (FILE.py:FUNCTION)")
    if not os.path.isfile(path):
        raise ValueError(f"{path!r}: not a regular file")
    if not path.endswith(".py"):
        raise ValueError(f"{path!r}: expected a Python file (.py)")
    name = f"{USER_PREFIX}{next(_count)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module          # (as an import would: the compiler finds it there)
    folder = os.path.dirname(os.path.abspath(path))
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except KeyboardInterrupt:
        raise
    except SyntaxError as e:
        sys.modules.pop(name, None)
        raise ValueError(f"{path}: line {e.lineno}: {e.msg}") from None
    except BaseException as e:  # noqa: BLE001 -- the user's code: any failure, one line
        sys.modules.pop(name, None)
        raise ValueError(f"{path}: importing it failed: {_where(e, path)}") from None
    finally:
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    return module


def _where(e: BaseException, path: str) -> str:
    """``Type: message (line N)``, N the deepest line of ``path`` in the traceback; where
    the error was raised in code the file imports (a launcher of a package's),
    ``(MODULE, line N)`` for the deepest frame of such code."""
    line, other = None, None
    tb = e.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        name = frame.f_globals.get("__name__", "")
        if os.path.abspath(frame.f_code.co_filename) == os.path.abspath(path):
            line, other = tb.tb_lineno, None
        elif not _library(frame.f_code.co_filename, name):
            other = (name, tb.tb_lineno)
        tb = tb.tb_next
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    where = f" ({other[0]}, line {other[1]})" if other else (f" (line {line})" if line else "")
    return f"{type(e).__name__}{': ' + msg if msg else ''}{where}"


def _library(filename: str, module: str) -> bool:
    """Whether a frame is roofsim's own, Python's or an installed package's (not the
    user's code)."""
    if module == "simulator" or module.startswith("simulator."):
        return True
    paths = sysconfig.get_paths()
    f = os.path.abspath(filename)
    return any(f.startswith(os.path.abspath(paths[k]) + os.sep)
               for k in ("stdlib", "platstdlib", "purelib", "platlib"))


def _launchers(module) -> list:
    """The public functions of ``module`` (its own and those it imports) that take
    ``grid`` and ``block``; all its public functions where none does."""
    funcs = {n: v for n, v in vars(module).items()
             if inspect.isfunction(v) and not n.startswith("_")}

    def takes_launch(f):
        try:
            return {"grid", "block"} <= set(inspect.signature(f).parameters)
        except (TypeError, ValueError):
            return False
    return [n for n, f in funcs.items() if takes_launch(f)] or list(funcs)


def call_launcher(spec: str, grid: int | Sequence[int] | None = None,
                  block: int | Sequence[int] | None = None, extra: dict | None = None
                  ) -> tuple[object, int | Sequence[int], int | Sequence[int], tuple]:
    """(kernel, grid, block, args) from the launcher ``spec`` (FILE.py:FUNCTION);
    ``extra``: further keyword arguments for it (the CLI's ``--arg NAME=VALUE``), each a
    parameter the function has."""
    path, func = split_spec(spec)
    module = load_module(path)
    fn = getattr(module, func, None)
    if fn is None:
        names = _launchers(module)
        raise ValueError(f"{path}: no function {func!r} (functions there: "
                         f"{', '.join(names) or 'none'})")
    if not callable(fn):
        raise ValueError(f"{path}: {func!r} is a {type(fn).__name__}, not a function")
    kwargs = {k: v for k, v in (("grid", grid), ("block", block)) if v is not None}
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}
    anything = any(p.kind == p.VAR_KEYWORD for p in params.values())
    missing = [k for k in kwargs if k not in params and not anything]
    if missing:
        raise ValueError(f"{path}:{func}: takes no {' or '.join(missing)} argument (define "
                         f"it as def {func}(grid=None, block=None))")
    for k, v in (extra or {}).items():
        if k in ("grid", "block"):
            raise ValueError(f"extra[{k!r}] = {v!r}: the {k} is its own argument")
        if k not in params and not anything:
            names = [n for n in params if n not in ("grid", "block")]
            raise ValueError(f"extra[{k!r}] = {v!r}: {path}:{func} takes no argument {k!r} "
                             f"(its others: {', '.join(names) or 'none'})")
        kwargs[k] = v
    try:
        out = fn(**kwargs)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa: BLE001 -- the user's code
        raise ValueError(f"{path}:{func}: raised {_where(e, path)}") from None
    if not isinstance(out, (tuple, list)) or len(out) != 4:
        raise ValueError(f"{path}:{func}: returned {type(out).__name__}"
                         f"{' of ' + str(len(out)) if isinstance(out, (tuple, list)) else ''}; "
                         "expected (kernel, grid, block, args)")
    kernel, g, b, args = out
    if not hasattr(kernel, "py_func"):
        raise ValueError(f"{path}:{func}: the kernel it returned is a "
                         f"{type(kernel).__name__}, not a numba @cuda.jit kernel")
    if not isinstance(args, (tuple, list)):
        raise ValueError(f"{path}:{func}: args is a {type(args).__name__}; expected a "
                         "tuple of the kernel's arguments")
    return kernel, g, b, tuple(args)

"""The public API's arguments, checked where they enter (``simulator.api``): each
checker returns the value in the form the library uses, or raises a ``TypeError`` (the
wrong kind of thing) or a ``ValueError`` (the right kind, a value not allowed) that names
the argument in keyword form (``workers=0: ...``), the value, and what is allowed -- the
CLI's option types refuse the same values, with its flags' names.
"""
from __future__ import annotations

import math
import numbers
import os
import re

MAX_BYTES = 10**15         # a byte count (hwmodels.units' largest quantity; the README's 10^15)
MAX_BUDGET = 10**15        # warp instructions an engine budget may allow (the CLI's --engine-budget)
MAX_TRACE = 20_000         # issued instructions a trace keeps (the CLI's --timeline)
MAX_ADDRESSES = 1 << 22    # lane addresses coalesce() takes (32 MiB of int64s)
ACCESS_BYTES = (1, 2, 4, 8, 16)     # what one lane's load or store moves (CUDA's widths)
MAX_SEGMENT_BYTES = 4096


def cut(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters ("..." ending it where cut): what any error
    message echoing a value it was given shows, however long the value."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


def show(value, limit: int = 60) -> str:
    """``value`` as an error shows it: its repr, cut short (``cut``). The one helper
    every library message echoing a value given uses."""
    return cut(repr(value), limit)


def _kind(value) -> str:
    return type(value).__name__


def hardware(hw, family: str | None = None, arg: str = "hw"):
    """A hardware model: ``hw`` itself (a ``hwmodels`` preset object), or the preset a
    name or a TOML/``.cfg`` path gives; of ``family`` (``simt`` or ``systolic``) where
    given."""
    import hwmodels
    if isinstance(hw, (str, os.PathLike)):
        hw = hwmodels.get(hw)
    elif not hasattr(hw, "family") or not hasattr(hw, "name"):
        raise TypeError(f"{arg}={show(hw)}: a preset's name (hardware_names()), a TOML file, "
                        f"or a model from load_hardware; not a {_kind(hw)}")
    if family is not None and hw.family != family:
        what = {"simt": "a SIMT GPU", "systolic": "a systolic array"}.get(family, family)
        raise ValueError(f"{arg}={show(hw.name)}: not {what} (its family is {show(hw.family)})")
    return hw


def workload(w, arg: str = "workload"):
    """A network: ``w`` itself, a network of the one op ``w`` is, or the workload a
    ``--workload`` string names."""
    from workloads.ir import Network, TensorOp
    if isinstance(w, (str, os.PathLike)):           # a topology CSV's path as a Path too
        import workloads
        return workloads.resolve(os.fspath(w))
    if isinstance(w, Network):
        return w
    if isinstance(w, TensorOp):
        return Network(w.name or w.kind, (w,))
    raise TypeError(f"{arg}={show(w)}: a workload string ('resnet50', 'gemm:MxNxK', ...), a "
                    f"Network or an op (workloads.ir); not a {_kind(w)}")


def integer(value, arg: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """An int (a bool or a float is not one), within [minimum, maximum] where given."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{arg}={show(value)}: must be an integer, not a {_kind(value)}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{arg}={value}: must be >= {minimum}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{arg}={value}: must be <= {maximum}")
    return value


def number(value, arg: str, minimum: float | None = None, positive: bool = False) -> float:
    """A finite real number (not a bool), > 0 where ``positive``, >= ``minimum`` where
    given."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{arg}={show(value)}: must be a number, not a {_kind(value)}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{arg}={value}: must be a finite number")
    if positive and value <= 0:
        raise ValueError(f"{arg}={value:g}: must be > 0")
    if minimum is not None and value < minimum:
        raise ValueError(f"{arg}={value:g}: must be >= {minimum:g}")
    return value


def choice(value, arg: str, allowed) -> str:
    """One of ``allowed`` (strings)."""
    if not isinstance(value, str):
        raise TypeError(f"{arg}={show(value)}: one of {', '.join(allowed)}; not a {_kind(value)}")
    if value not in allowed:
        raise ValueError(f"{arg}={show(value)}: allowed: {', '.join(allowed)}")
    return value


#: the L2 a launch starts from, the one argument ``l2`` from the API down to the engine:
#: ``cold`` full of earlier launches' lines, part of them dirty (an application, a benchmark
#: rotating buffers); ``warm`` holding the launch's arrays where they fit (a launch repeated
#: back to back); ``flushed`` empty (as Nsight Compute leaves it before a profiled launch)
L2_STATES = ("cold", "warm", "flushed")


def l2_state(value, arg: str = "l2") -> str:
    """One of ``L2_STATES``."""
    return choice(value, arg, L2_STATES)


def names(value, arg: str, allowed) -> tuple:
    """Some of ``allowed``: a sequence of names, or one string of them joined by commas
    (as the CLI takes them); none twice."""
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise TypeError(f"{arg}={show(value)}: a list of names ({', '.join(allowed)}) or one "
                        f"string of them joined by commas; not a {_kind(value)}")
    if not items:
        raise ValueError(f"{arg}={show(value)}: names none; allowed: {', '.join(allowed)}")
    for v in items:
        choice(v, arg, allowed)
    dup = sorted({v for v in items if items.count(v) > 1})
    if dup:
        raise ValueError(f"{arg}={show(value)}: {', '.join(dup)} given twice")
    return tuple(items)


def max_workers() -> int:
    """Four local worker processes a core: past that they only contend (and each holds an
    interpreter and numba's cache). The CLI's ``--workers`` has the same limit."""
    from simulator.parallel import default_workers
    return 4 * default_workers()


def workers(value, arg: str = "workers"):
    """How many local processes: None (one per core) or an int from 1 to
    :func:`max_workers`."""
    return None if value is None else integer(value, arg, minimum=1, maximum=max_workers())


def where_to_run(workers_value, scheduler_value):
    """(workers, scheduler): local processes or a Dask scheduler's cluster, not both (a
    cluster has its own workers; the CLI's ``--workers`` and ``--scheduler`` exclude
    each other). ``workers`` left at 1 (or None) beside a scheduler is not a contradiction."""
    w, sch = workers(workers_value), scheduler(scheduler_value)
    if sch is not None and w is not None and w > 1:
        raise ValueError(f"workers={w} and scheduler={show(sch)}: a scheduler's cluster has "
                         "its own workers; give one of them")
    return w, sch


POLICIES = ("gto", "lrr")     # the engine's warp schedulers (simulator.simt.engine.POLICIES)


def policy(value, mode):
    """The engine's warp scheduler for ``mode``: None (not given) is gto; a policy given
    with ``mode='analytic'`` is a ValueError (the analytic model has no scheduler; the
    CLI refuses ``--policy`` with ``--mode analytic`` by this rule)."""
    if value is None:
        return "gto"
    value = choice(value, "policy", POLICIES)
    if mode == "analytic":
        raise ValueError(f"policy={show(value)}: the analytic model has no warp scheduler; "
                         "policy applies to mode='sampled' or mode='full'")
    return value


def boolean(value, arg: str) -> bool:
    """True or False (numpy's bools too); not 1, ``"yes"`` or None."""
    if type(value).__name__ in ("bool", "bool_"):
        return bool(value)
    raise TypeError(f"{arg}={show(value)}: must be True or False, not a {_kind(value)}")


def path(value, arg: str, what: str = "a file or folder's path"):
    """A non-empty str or os.PathLike (returned as given)."""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{arg}={show(value)}: {what} (a str or a pathlib.Path), not a "
                        f"{_kind(value)}")
    if not os.fspath(value).strip():
        raise ValueError(f"{arg}={show(value)}: an empty path; {what}")
    return value


def function(value, arg: str):
    """None or something to call."""
    if value is not None and not callable(value):
        raise TypeError(f"{arg}={show(value)}: a function to call, or None; not a "
                        f"{_kind(value)}")
    return value


def budget(value, arg: str = "engine_budget"):
    """None, or warp instructions: a whole number from 0 to 1e15 (as ``--engine-budget``)."""
    if value is None:
        return None
    v = number(value, arg, minimum=0)
    if v != int(v) or v > MAX_BUDGET:
        raise ValueError(f"{arg}={show(value)}: a whole number of warp instructions from 0 "
                         "to 1e15")
    return v


def nbytes(value, arg: str, minimum: int = 0) -> int:
    """A byte count: an int from ``minimum`` to 10^15."""
    return integer(value, arg, minimum=minimum, maximum=MAX_BYTES)


def trace(value, arg: str = "trace") -> int:
    """Issued instructions to keep: an int from 0 to MAX_TRACE."""
    return integer(value, arg, minimum=0, maximum=MAX_TRACE)


def seconds_table(value, arg: str = "seconds") -> dict:
    """A dict from time keys (tuples, ``analysis.plan.time_key``) to seconds (finite
    numbers >= 0); not empty."""
    if not isinstance(value, dict):
        raise TypeError(f"{arg}={show(value)}: a dict from time keys (analysis.plan.time_key) "
                        f"to seconds; not a {_kind(value)}")
    if not value:
        raise ValueError(f"{arg}={{}}: no times; a dict from time keys (analysis.plan.time_key) "
                         "to seconds")
    for k, v in value.items():
        if not isinstance(k, tuple):
            raise TypeError(f"{arg}[{show(k)}]: a time key is a tuple "
                            f"(analysis.plan.time_key), not a {_kind(k)}")
        number(v, f"{arg}[{show(k)}]", minimum=0)
    return value


def repeated(keys) -> tuple | None:
    """(the first key given more than once, how many times), or None: a field set twice
    (the CLI's ``--set`` and ``overrides`` refuse it)."""
    keys = list(keys)
    twice = sorted({k for k in keys if keys.count(k) > 1})
    return (twice[0], keys.count(twice[0])) if twice else None


def overrides(value, arg: str = "overrides") -> list:
    """Hardware overrides: ``'FIELD=VALUE'`` strings (a list, or one string), each field
    once."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"{arg}={show(value)}: a list of 'FIELD=VALUE' strings; not a "
                        f"{_kind(value)}")
    for i, v in enumerate(items):
        if not isinstance(v, str):
            raise TypeError(f"{arg}[{i}]={show(v)}: a 'FIELD=VALUE' string, not a {_kind(v)}")
        if "=" not in v or not v.partition("=")[0].strip():
            raise ValueError(f"{arg}[{i}]={show(v)}: expected FIELD=VALUE, e.g. "
                             "l2.size_bytes=8MiB")
    twice = repeated(v.partition("=")[0].strip() for v in items)
    if twice:
        raise ValueError(f"{arg}={show(value)}: {twice[0]} given {twice[1]} times; set each "
                         "field once")
    return list(items)


def power_of_two(value, arg: str, maximum: int) -> int:
    """An int 2^k from 1 to ``maximum``."""
    v = integer(value, arg, minimum=1, maximum=maximum)
    if v & (v - 1):
        raise ValueError(f"{arg}={v}: must be a power of two")
    return v


def addresses(value, arg: str = "addresses"):
    """Lanes' byte addresses: a sequence of ints (one warp access) or of equal rows (one
    access a row), each >= 0 or -1 (an inactive lane); at most MAX_ADDRESSES. Returned
    as a 2-D int64 array."""
    import numpy as np
    size = getattr(value, "size", None) if hasattr(value, "dtype") else None
    if size is None and isinstance(value, (list, tuple)):
        size = sum(len(r) if hasattr(r, "__len__") and not isinstance(r, (str, bytes)) else 1
                   for r in value)
    if size is None:
        raise TypeError(f"{arg}={show(value)}: integer byte addresses, one row per warp access "
                        f"(a lane per column, -1 for an inactive lane); not a {_kind(value)}")
    if size > MAX_ADDRESSES:
        raise ValueError(f"{arg}: {size:,} addresses; at most {MAX_ADDRESSES:,}")
    try:
        a = np.asarray(value)
    except ValueError:
        a = None                      # ragged rows
    top = np.iinfo(np.int64).max
    if a is not None and a.dtype.kind == "O" and a.ndim in (1, 2) and all(
            isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in a.flat):
        big = next((int(x) for x in a.flat if not -1 <= x <= top), None)   # past int64
        if big is not None:
            raise ValueError(f"{arg}: address {big}: must be from -1 to {top} (an int64)")
        a = a.astype(np.int64)
    if a is None or a.ndim not in (1, 2) or (a.size and a.dtype.kind not in "iu"):
        raise TypeError(f"{arg}={show(value)}: integer byte addresses, one row per warp access "
                        "(a lane per column, -1 for an inactive lane)")
    # the range is checked on the values given, before int64 would wrap a uint64's
    if a.dtype.kind == "u" and a.size and int(a.max()) > top:
        raise ValueError(f"{arg}: address {int(a[a > top].flat[0])}: must be at most {top} "
                         "(an int64)")
    bad = a[a < -1]
    if bad.size:
        raise ValueError(f"{arg}: address {int(bad.flat[0])}: must be >= 0, or -1 for an "
                         "inactive lane")
    a = np.atleast_2d(a.astype(np.int64))
    return a


def scheduler(value, arg: str = "scheduler"):
    """A Dask scheduler's address (``host:port`` or ``tcp://host:port``), or None."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"{arg}={show(value)}: a Dask scheduler's address ('tcp://host:8786') "
                        "or None")
    return value


def dims_text(text: str, length: int = 2):
    """``"16x16"`` (the CLI's ROWSxCOLS, ``length`` numbers joined by x) -> a tuple of ints
    >= 1, or None where ``text`` is not that."""
    parts = text.strip().lower().split("x")
    if len(parts) != length or not all(re.fullmatch(r"\s*[0-9]{1,4000}\s*", x) for x in parts):
        return None
    t = tuple(int(x) for x in parts)
    return t if min(t) >= 1 else None


def shape(value, arg: str, length: int) -> tuple:
    """A tuple of ``length`` ints >= 1 (an array's rows and columns, say), or the CLI's
    form, a string ``"16x16"``."""
    if isinstance(value, str):
        t = dims_text(value, length)
        if t is None:
            raise ValueError(f"{arg}={show(value)}: expected {'x'.join(['N'] * length)} with "
                             f"positive integers (e.g. {'x'.join(['16'] * length)}), or a tuple")
        return t
    if isinstance(value, bytes) or not hasattr(value, "__len__"):
        raise TypeError(f"{arg}={show(value)}: {length} integers >= 1, as a tuple, or a "
                        f"string such as {'x'.join(['16'] * length)!r}; not a {_kind(value)}")
    if len(value) != length:
        raise ValueError(f"{arg}={show(value)}: {length} integers >= 1, not {len(value)}")
    return tuple(integer(v, f"{arg}[{i}]", minimum=1) for i, v in enumerate(value))

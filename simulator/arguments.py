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


def show(value, limit: int = 60) -> str:
    """``value`` as an error shows it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


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
        raise ValueError(f"{arg}={hw.name!r}: not {what} (its family is {hw.family!r})")
    return hw


def workload(w, arg: str = "workload"):
    """A network: ``w`` itself, a network of the one op ``w`` is, or the workload a
    ``--workload`` string names."""
    from workloads.ir import Network, TensorOp
    if isinstance(w, str):
        import workloads
        return workloads.resolve(w)
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


def workers(value, arg: str = "workers"):
    """How many local processes: None (one per core) or an int >= 1."""
    return None if value is None else integer(value, arg, minimum=1)


def scheduler(value, arg: str = "scheduler"):
    """A Dask scheduler's address (``host:port`` or ``tcp://host:port``), or None."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"{arg}={show(value)}: a Dask scheduler's address ('tcp://host:8786') "
                        "or None")
    return value


def shape(value, arg: str, length: int) -> tuple:
    """A tuple of ``length`` ints >= 1 (an array's rows and columns, say)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        raise TypeError(f"{arg}={show(value)}: {length} integers >= 1, as a tuple")
    if len(value) != length:
        raise ValueError(f"{arg}={show(value)}: {length} integers >= 1, not {len(value)}")
    return tuple(integer(v, f"{arg}[{i}]", minimum=1) for i, v in enumerate(value))

"""The fields every ``roofsim check`` reader shares: the limits on times and counts, the
one parser of numbers written as text, and the printable form of a name read from a trace.

* :data:`MIN_SECONDS`, :data:`MAX_SECONDS` and :data:`MAX_COUNT` bound every time and
  every count (bytes, instructions) any reader takes, whatever its unit: the times are
  the suites' range (``measurements``; a nanosecond to an hour), and a number outside
  it (such as 1e-300 s or 1e300 bytes) is a corrupt number, not a kernel. The one
  exception is a PyTorch trace's ``dur`` of 0: the profiler writes it for a kernel
  shorter than its resolution.
* :func:`ncu_units` is the units ncu may write for a metric (a time in ``nsecond``, a
  byte count in ``Kbyte``...): a metric in a unit not its own (bytes in ``%``) is refused.
* :func:`columns` is a CSV header's columns by name: a name given twice is refused by
  every CSV reader (which of the two is meant cannot be told).
* :func:`decimal` reads a number written in text (a CSV field, a ``Concrete Inputs``
  entry): ASCII decimal notation only -- an optional sign, digits (optionally grouped by
  commas in threes, as ncu writes 54,848), an optional fraction and exponent. Python's
  ``float``/``int`` accept more (``5_000``, ``nan``, ``inf``, Arabic-Indic or other
  Unicode digits, Unicode white space), none of which a profiler writes.
* :func:`printable` is a name as it is shown: every character Python does not count as
  printable (control characters such as ESC, newline and BEL, lone surrogates, format
  characters, separators other than the space) is replaced by its escape (``\\x1b``,
  ``\\n`` as ``\\x0a``, ``\\ud800``), so that the table, the CSV, the JSON and the plot
  get the same safe name, and no name can move the terminal's cursor or fail to encode.
  A backslash already in the name is kept as it is.
"""
from __future__ import annotations

import json
import math
import re

from simulator.table import printable  # noqa: F401 -- the one rule, shared with every table

# the longest time a kernel may take: an hour, the bound of the project's own suites
# (a profiler's trace lasts seconds to minutes; a longer time is a corrupt number, such
# as 1e308, not a kernel)
from .measurements import MAX_SECONDS, MIN_SECONDS  # noqa: F401

#: the largest count (bytes, instructions) a kernel may have: 2**64 = 1.8e19, what a
#: 64-bit hardware counter holds (ncu's are); a larger one is a corrupt number
MAX_COUNT = float(2 ** 64)

_DECIMAL = re.compile(r"[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?(?:[eE][+-]?\d+)?"
                      r"|[+-]?\.\d+(?:[eE][+-]?\d+)?", re.ASCII)
_INTEGER = re.compile(r"[+-]?\d+", re.ASCII)


def show(v, n: int = 40) -> str:
    """A value for a message: JSON's spelling for JSON values, repr for text, cut short."""
    s = repr(v) if isinstance(v, str) else json.dumps(v)
    return s if len(s) <= n else s[:n - 3] + "..."


def in_range(x, lo=None, lo_open=False, hi=None) -> bool:
    """Whether ``x`` is finite and within the limits given."""
    return math.isfinite(x) and (lo is None or (x > lo if lo_open else x >= lo)) and (hi is None or x <= hi)


def decimal(text: str, integer: bool = False):
    """The number ``text`` writes in ASCII decimal notation (spaces and tabs around it
    allowed), an int where ``integer``; None where it writes none."""
    t = text.strip(" \t")
    if integer:
        return int(t) if _INTEGER.fullmatch(t) else None
    return float(t.replace(",", "")) if _DECIMAL.fullmatch(t) else None




_PREFIXES = (("", 1.0), ("K", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12))
#: the units ncu writes a time in, each with its size in seconds
TIME_UNITS = {"nsecond": 1e-9, "usecond": 1e-6, "msecond": 1e-3, "second": 1.0, "ns": 1e-9, "us": 1e-6,
              "ms": 1e-3, "s": 1.0}
#: the units ncu writes a byte count in (its SI prefixes), each with its size in bytes
BYTE_UNITS = {f"{p}{u}": s for p, s in _PREFIXES for u in ("byte", "B")}
#: the units ncu writes an instruction count in, each with its size in instructions
INST_UNITS = {f"{p}inst": s for p, s in _PREFIXES}
#: the units ncu may write a plain count in (shared-memory bank conflicts): none, or a
#: unit word, each with its SI prefixes
COUNT_UNITS = {f"{p}{u}": s for p, s in _PREFIXES for u in ("", "conflict", "conflicts")}
#: the units ncu writes a count of sectors in (32-byte L2 sectors), each in sectors
SECTOR_UNITS = {f"{p}sector": s for p, s in _PREFIXES}


def ncu_units(metric: str) -> dict:
    """The units ncu may write ``metric``'s values in, each with its scale to the base
    unit (seconds, bytes, instructions, percent), from the metric's name."""
    if metric.startswith("gpu__time_duration"):
        return TIME_UNITS
    if "bytes" in metric.split(".")[0]:
        return BYTE_UNITS
    if "inst_executed" in metric.split(".")[0]:
        return INST_UNITS
    if ".pct" in metric:
        return {"%": 1.0}
    if "bank_conflicts" in metric.split(".")[0]:
        return COUNT_UNITS
    if "sectors" in metric.split(".")[0]:
        return SECTOR_UNITS
    raise ValueError(f"metrics: {metric!r} is none that roofsim knows the units of (a time "
                     "gpu__time_duration.*, a byte count *bytes*, an instruction count "
                     "*inst_executed*, a percentage *.pct*, a count *bank_conflicts*, a "
                     "count of sectors *sectors*)")


def columns(path, line, head) -> dict:
    """{name: index} of a CSV header (``path``'s line ``line``); a name given twice is an
    error (which column is meant cannot be told)."""
    col = {}
    for i, h in enumerate(head):
        if h in col:
            raise ValueError(f"{path} line {line}: column {h!r} appears {head.count(h)} times (fields "
                             f"{col[h] + 1} and {i + 1}); a header names each column once")
        col[h] = i
    return col

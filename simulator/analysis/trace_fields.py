"""The fields every ``roofsim check`` reader shares: the limits on times and counts, the
one parser of numbers written as text, and the printable form of a name read from a trace.

* :data:`MAX_SECONDS` and :data:`MAX_COUNT` bound every time and every count (bytes,
  instructions) any reader takes, whatever its unit: a larger one is a corrupt number
  (such as 1e300), not a kernel.
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
from .measurements import MAX_SECONDS  # noqa: F401
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



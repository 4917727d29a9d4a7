"""Units: SI values inside the project, strings with units only at the edges.

Values are plain ``int``/``float`` in SI units (bytes, hertz, seconds, bytes per
second). Strings such as ``"48KiB"``, ``"1401MHz"`` or ``"177.4GB/s"`` are parsed by
:func:`parse_quantity`, which is called only where text enters the program (the CLI,
TOML files). A string that should carry a unit but does not is an error, never a
guess.
"""
from __future__ import annotations

import math
import re

KiB = 1024
MiB = 1024**2
GiB = 1024**3
KB = 1000
MB = 1000**2
GB = 1000**3
TB = 1000**4


def show(value: object, limit: int = 60) -> str:
    """``value`` as an error shows it: its repr, cut to ``limit`` characters ("..."
    ending it where cut). The same as ``simulator.arguments.show``, for the packages
    below ``simulator`` (which import nothing from it)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."
kHz = 1e3
MHz = 1e6
GHz = 1e9
ns = 1e-9
us = 1e-6
ms = 1e-3

_PREFIX = {
    "": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40,
}
_TIME_PREFIX = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12}

#: unit families: the field-name suffix that selects them and the units accepted
UNIT_FAMILIES = {
    "bytes": "a size such as 48KiB, 8MiB, 786432B",
    "hz": "a frequency such as 1401MHz, 1.98GHz",
    "bytes_per_s": "a bandwidth such as 177.4GB/s, 3.35TB/s",
    "s": "a time such as 40us, 1.5ms, 2ns",
}

_NUM = r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)"
#: the largest quantity accepted in any unit (a petabyte, a petahertz, a petabyte a
#: second or ~31 million years): beyond any hardware, and exact as a float and an int64
MAX_QUANTITY = 1e15


def family_of_field(name: str) -> str | None:
    """The unit family a field name implies (``size_bytes`` -> ``"bytes"``), or None."""
    if name.endswith("_bytes_per_s"):
        return "bytes_per_s"
    if name.endswith("_bytes"):
        return "bytes"
    if name.endswith("_hz"):
        return "hz"
    if name.endswith("_s") and not name.endswith("_per_s"):
        return "s"
    return None


def parse_quantity(text: str, family: str, field: str = "value") -> float:
    """Parse ``text`` as a quantity of ``family`` and return it in SI units.

    A bare number is refused: at the edges a unit is required, so ``8`` cannot be
    mistaken for 8 MiB. Raises ``ValueError`` naming ``field``, the value and what is
    allowed.
    """
    if family not in UNIT_FAMILIES:
        raise ValueError(f"unknown unit family {show(family)}; allowed: {', '.join(UNIT_FAMILIES)}")
    s = str(text).strip().replace(" ", "")
    allowed = UNIT_FAMILIES[family]
    m = re.fullmatch(_NUM + r"(.*)", s)
    if not m:
        if re.fullmatch(r"-" + _NUM + r".*", s):
            raise ValueError(f"{field}: {show(text)} is negative; expected {allowed}")
        raise ValueError(f"{field}: {show(text)} is not a number with a unit; expected {allowed}")
    number, unit = float(m.group(1)), m.group(2)
    if unit == "":
        raise ValueError(f"{field}: {show(text)} has no unit; expected {allowed}")
    scale = None
    if family == "bytes":
        um = re.fullmatch(r"(Ki|Mi|Gi|Ti|k|K|M|G|T|)B", unit)
        if um:
            scale = _PREFIX[um.group(1)]
    elif family == "hz":
        um = re.fullmatch(r"(k|K|M|G|)Hz", unit)
        if um:
            scale = _PREFIX[um.group(1)]
    elif family == "bytes_per_s":
        um = re.fullmatch(r"(Ki|Mi|Gi|Ti|k|K|M|G|T|P|)B/s", unit)
        if um:
            scale = _PREFIX[um.group(1)]
    elif family == "s":
        scale = _TIME_PREFIX.get(unit)
    if scale is None:
        raise ValueError(f"{field}: unit {show(unit)} in {show(text)} is not allowed; expected {allowed}")
    value = number * scale
    if not math.isfinite(value) or value > MAX_QUANTITY:
        raise ValueError(f"{field}: {show(text)} is too large; at most 1e15 "
                         f"({allowed})")
    if family == "bytes" and value != math.floor(value):
        raise ValueError(f"{field}: {show(text)} is {value:g} bytes, not a whole number of bytes")
    return value


def format_bytes(n: float) -> str:
    """Human-readable binary size: 786432 -> '768 KiB'."""
    n = float(n) + 0.0      # -0.0 prints as 0
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            v = n / scale
            return f"{v:.4g} {unit}"
    return f"{n:.0f} B"


def format_si(x: float, unit: str) -> str:
    """Decimal SI prefix: 3.35e12, 'B/s' -> '3.35 TB/s'."""
    x = float(x) + 0.0      # -0.0 prints as 0
    for p, scale in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:.4g} {p}{unit}"
    return f"{x:.4g} {unit}"


def format_seconds(t: float) -> str:
    t = float(t) + 0.0      # -0.0 prints as 0
    if t >= 1:
        return f"{t:.4g} s"
    if t >= 1e-3:
        return f"{t * 1e3:.4g} ms"
    if t >= 1e-6:
        return f"{t * 1e6:.4g} us"
    return f"{t * 1e9:.4g} ns"

"""Plain-text tables and machine outputs (CSV/JSON written atomically)."""
from __future__ import annotations

import csv
import io
import json
import math
import re


def _escape(ch: str) -> str:
    o = ord(ch)
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def printable(text: str) -> str:
    """``text`` safe for a terminal: each character that is not printable (an escape
    sequence, a line break inside a cell, a lone surrogate) shown as its escape
    (``\\x1b``, ``\\x0a``, ``\\ud800``)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def fmt_num(x, digits=4) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return printable(x)
    if isinstance(x, int) and not isinstance(x, bool):
        return f"{x:,}" if abs(x) >= 10000 else str(x)
    if isinstance(x, float):
        if math.isinf(x):
            return "inf"
        if x == 0:
            return "0"
        if 1e4 <= abs(x) < 1e12:
            return f"{x:,.0f}"
        if abs(x) >= 1e12 or abs(x) < 1e-3:
            return f"{x:.{digits - 1}e}"
        return f"{x:.{digits}g}"
    return str(x)


def format_table(headers, rows, right=None) -> str:
    """Columns aligned; numbers right-aligned unless ``right`` says otherwise."""
    cells = [[fmt_num(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    if right is None:
        right = [all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) if rows else False
                 for i in range(len(headers))]

    def line(vals):
        return "  ".join(v.rjust(w) if ra else v.ljust(w) for v, w, ra in zip(vals, widths, right)).rstrip()

    headers = [printable(str(h)) for h in headers]
    widths = [max(w, len(h)) for w, h in zip(widths, headers)]
    out = [line(headers), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    return "\n".join(out)


#: set by ``roofsim ... --no-timing``: the writers leave out every field that times the
#: run itself (wall_seconds, engine_wall_s, ...), so two runs' files compare equal
NO_TIMING = False
_TIMING = re.compile(r"(^|_)wall(_|$)")


def is_timing(key) -> bool:
    """Whether a field name is a wall time of the run (not a prediction)."""
    return isinstance(key, str) and bool(_TIMING.search(key))


def _untimed(o):
    if isinstance(o, dict):
        return {k: _untimed(v) for k, v in o.items() if not is_timing(k)}
    if isinstance(o, (list, tuple)):
        return [_untimed(v) for v in o]
    return o


def write_csv(path, rows: list[dict]) -> None:
    from hwmodels.fileio import atomic_write
    if not rows:
        raise ValueError("nothing to write")
    if NO_TIMING:
        rows = [{k: v for k, v in r.items() if not is_timing(k)} for r in rows]
    cols = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if v is None else v) for k, v in r.items()})
    atomic_write(path, buf.getvalue())


def _jsonable(o):
    if hasattr(o, "item") and getattr(o, "shape", None) == ():   # numpy scalars
        o = o.item()
    elif hasattr(o, "tolist"):                                    # numpy arrays
        return _jsonable(o.tolist())
    if isinstance(o, float) and (math.isinf(o) or math.isnan(o)):
        return None
    if isinstance(o, dict):
        return {k: _jsonable(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_jsonable(v) for v in o]
    return o


def write_json(path, data) -> None:
    from hwmodels.fileio import atomic_write
    data = _jsonable(data)
    atomic_write(path, json.dumps(_untimed(data) if NO_TIMING else data, indent=1) + "\n")

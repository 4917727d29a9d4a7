"""The ``--json FILE`` record a benchmark writes beside what it prints.

The record holds the same figures as the printed output, plus ``bench`` (the script's
name), ``date`` (ISO, the day of the run), ``machine`` (platform, Python, processor and
CPU count) and ``note`` (what else was running: ``--note``). ``scripts/docs_tables.py``
turns ``data/benchmarks/<bench>.json`` into the tables of docs/performance.md:

    python3 benchmarks/bench_roofline.py --json data/benchmarks/bench_roofline.json \\
        --note "nothing else running"
"""
from __future__ import annotations

import datetime
import json
import os
import platform
from pathlib import Path


def add_options(ap) -> None:
    """``--json FILE`` and ``--note TEXT`` on an argparse parser."""
    ap.add_argument("--json", metavar="FILE",
                    help="also write the figures, the date and the machine to FILE (JSON)")
    ap.add_argument("--note", default="",
                    help="what else was running, kept in the JSON (e.g. 'nothing else running')")


def machine() -> dict:
    """The machine the figures come from."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:           # not on Linux
        usable = os.cpu_count()
    return {"platform": platform.platform(), "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "cpus_usable": usable}


def _plain(x):
    """numpy scalars as Python numbers (json cannot write them)."""
    if hasattr(x, "item"):
        return x.item()
    raise TypeError(f"{type(x).__name__} is not JSON")


def write(path, bench: str, figures: dict, note: str = "") -> None:
    """Write ``figures`` with the date, the machine and ``note`` to ``path``, whole (a
    temporary file moved into place)."""
    doc = {"bench": bench, "date": datetime.date.today().isoformat(), "machine": machine(),
           "note": note, **figures}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, default=_plain) + "\n")
    os.replace(tmp, path)
    print(f"wrote {path}")

"""Compares two folders written by ``scripts/snapshot_predictions.sh``: every JSON file
of one against the file of the same name in the other, number by number.

    python3 scripts/compare_snapshots.py BEFORE AFTER [--rtol 0]

Prints each value that differs (its file and path), how many values were compared, and
exits 1 where any differs beyond ``--rtol`` (0: bit for bit) or a file is missing.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path


def _walk(a, b, path, out, rtol):
    """Appends (path, a, b) for each leaf of ``a`` and ``b`` that differs; returns the
    count of leaves compared."""
    if isinstance(a, dict) and isinstance(b, dict):
        n = 0
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append((f"{path}.{k}", a.get(k, "<missing>"), b.get(k, "<missing>")))
                continue
            n += _walk(a[k], b[k], f"{path}.{k}", out, rtol)
        return n
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append((f"{path}[len]", len(a), len(b)))
            return 1
        return sum(_walk(x, y, f"{path}[{i}]", out, rtol) for i, (x, y) in enumerate(zip(a, b)))
    same = a == b
    if not same and isinstance(a, (int, float)) and isinstance(b, (int, float)) and rtol > 0:
        same = math.isclose(a, b, rel_tol=rtol)
    if not same:
        out.append((path, a, b))
    return 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", type=Path)
    ap.add_argument("after", type=Path)
    ap.add_argument("--rtol", type=float, default=0.0)
    a = ap.parse_args(argv)
    bad = 0
    total = 0
    for f in sorted(a.before.glob("*.json")):
        g = a.after / f.name
        if not g.exists():
            print(f"{f.name}: missing in {a.after}")
            bad += 1
            continue
        diffs = []
        total += _walk(json.loads(f.read_text()), json.loads(g.read_text()), f.name, diffs, a.rtol)
        for p, x, y in diffs[:20]:
            print(f"{p}: {x!r} -> {y!r}")
        if len(diffs) > 20:
            print(f"{f.name}: ... {len(diffs) - 20} more")
        bad += len(diffs)
    print(f"{total} values compared, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

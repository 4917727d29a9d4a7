"""The costs of stores that write part of a line's sector, from the lines suite's stores
(``roofsim measure lines``, ``lines_write`` records): the L2's
(``l2.partial_write_cycles``) and an SM's (``sm.l1.partial_lines_per_cycle``).

On every SM, stores whose warp requests touch 8, 16 or 32 lines write 16, 8 or 4 bytes
of one sector of each line; the whole GPU then sends ``sms x lines / cycles`` such writes
a cycle, and each of the L2's ``banks`` slices takes ``banks / rate`` cycles for one: the
median over those cases (8 and 32 warps an SM). On a sixteenth of the SMs the L2 is far
from that rate, and a request costs its SM about 2 cycles a line: the least-squares
cycles a line through the origin over the same three spreads.

    python3 scripts/fit_partial_writes.py [data/measurements/h100-sxm/lines.json]
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PARTIAL = (8, 16, 32)      # lines a request: 16, 8, 4 bytes of a sector each


def _stores(data: dict, sms_used: int):
    clock = 1e3 * data["provenance"]["attributes"]["clock_rate"]          # kHz
    for r in data["records"]:
        if r["name"] == "lines_write" and r["sms_used"] == sms_used \
                and r["grid"] == sms_used and r["lines_per_request"] in PARTIAL:
            yield r["lines_per_request"], clock / r["requests_per_sm_per_s"]   # an SM's


def fit(data: dict, banks: int) -> float:
    """``l2.partial_write_cycles``: from one block on every SM (eight an SM store 138 MB,
    DRAM's limit rather than the L2's)."""
    sms = data["provenance"]["attributes"]["multiprocessor_count"]
    per = [banks / (sms * lines / cycles) for lines, cycles in _stores(data, sms)]
    if not per:
        raise ValueError("no lines_write records on every SM: measure the lines suite")
    return statistics.median(per)


def fit_sm(data: dict) -> float:
    """``sm.l1.partial_lines_per_cycle``: from one block on a sixteenth of the SMs."""
    few = max(1, data["provenance"]["attributes"]["multiprocessor_count"] // 16)
    pts = list(_stores(data, few))
    if not pts:
        raise ValueError(f"no lines_write records on {few} SMs: measure the lines suite")
    cycles = sum(x * y for x, y in pts) / sum(x * x for x, _ in pts)   # a line
    return 1.0 / cycles


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else ROOT / "data" / "measurements" / "h100-sxm" / "lines.json"
    sys.path.insert(0, str(ROOT))
    import hwmodels
    data = json.loads(path.read_text())
    print(f"l2.partial_write_cycles = {fit(data, hwmodels.get('h100-sxm').l2.banks):.4g}")
    print(f"sm.l1.partial_lines_per_cycle = {fit_sm(data):.4g}")


if __name__ == "__main__":
    main()

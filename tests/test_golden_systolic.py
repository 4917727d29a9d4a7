"""The systolic engine's ResNet-50 totals on tpu-v1 are bit-identical to the figures
taken before the one-house restructuring (tests/golden/engine_before_restructure.json,
``SystolicReport.totals()`` of the old API): every key, compared with ==."""
import json
from pathlib import Path

import pytest

import hwmodels
import workloads
from simulator.result import Result
from simulator.systolic import simulate_network

GOLDEN = json.loads((Path(__file__).parent / "golden" / "engine_before_restructure.json").read_text())
ROWS = GOLDEN["systolic"]


def _id(row):
    arr = "x".join(map(str, row["array"])) if "array" in row else "preset"
    return f"{row['hw']}-{row['workload']}-{row['mode']}-{row['dataflow']}-{arr}"


@pytest.fixture(scope="module")
def results():
    cache = {}

    def get(row):
        key = _id(row)
        if key not in cache:
            rows, cols = row.get("array", (None, None))
            cache[key] = simulate_network(hwmodels.get(row["hw"]), workloads.resolve(row["workload"]),
                                          row["dataflow"], row["mode"], rows, cols)
        return cache[key]
    return get


def test_golden_covers_the_modes():
    assert len(ROWS) == 5
    assert {(r["mode"], r["dataflow"], tuple(r.get("array", ()))) for r in ROWS} == {
        ("default", "ws", ()), ("default", "os", ()), ("default", "is", ()),
        ("scalesim", "ws", ()), ("scalesim", "ws", (32, 32))}


@pytest.mark.parametrize("row", ROWS, ids=_id)
def test_totals_match_golden(row, results):
    res = results(row)
    assert isinstance(res, Result) and res.predictor == "systolic" and res.mode == row["mode"]
    assert (res.hardware, res.workload) == (row["hw"], row["workload"])
    want = row["totals"]
    got = {k: res.extra[k] for k in want}                 # the JSON form of res.systolic
    assert got == want                                    # exact, floats included
    # the Result's own fields carry the same figures
    assert res.cycles == want["total_cycles"] and res.seconds == want["seconds"]
    assert res.utilization == want["utilization"]
    assert res.stalls_by_cause == {"dram": want["stall_cycles"]}
    assert res.bytes_by_level["dram"] == sum(want[f"dram_{o}_{d}_bytes"]
                                             for o in ("ifmap", "filter", "ofmap")
                                             for d in ("read", "write"))
    wb = hwmodels.get(row["hw"]).word_bytes if row["mode"] == "default" else 1
    assert res.bytes_by_level["sram"] == wb * sum(want[f"sram_{o}_{d}"]
                                                  for o in ("ifmap", "filter", "ofmap")
                                                  for d in ("reads", "writes"))
    assert len(res.layers) == want["layers"]
    assert sum(lr.systolic.macs for lr in res.layers) == want["macs"] == res.systolic.macs

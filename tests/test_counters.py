"""The counters suite: Nsight Compute's counts of roofsim's kernels on the H100
(data/measurements/h100-sxm/counters.json, as the harness wrote it) against the
engine's."""
import hwmodels
from simulator.analysis import counters as cn
from simulator.analysis.counters import PROBLEMS, launches_of, problem_of
from simulator.simt import api

FOLDER = "data/measurements/h100-sxm"


def test_records_are_the_problems_launches_in_order():
    doc = cn.load(FOLDER)
    want = [(p, j) for p in PROBLEMS for j in range(launches_of(p))]
    assert [(r["problem"], r["launch"]) for r in doc["records"]] == want
    hw = hwmodels.get("h100-sxm")
    for p in PROBLEMS:                       # each problem builds as the engine runs it
        kernel, kw = problem_of(p)
        assert len(api.build(hw, kernel, **kw).programs) == launches_of(p)


def test_engine_instructions_match_nsight_compute():
    """Warp instructions within 2% (the goal) over every launch; DRAM bytes within 10%
    on the launches that start cold in both (one-launch problems: ncu flushes the caches
    before each launch, the engine keeps a second launch's L2 from the first)."""
    rows = cn.rows(hwmodels.get("h100-sxm"), FOLDER)
    sc = cn.scores(rows)
    assert sc["instructions"]["n"] == len(rows) and sc["instructions"]["mape"] <= 0.02
    one = [r for r in rows if sum(x["problem"] == r["problem"] for x in rows) == 1]
    assert cn.scores(one)["dram"]["mape"] <= 0.10

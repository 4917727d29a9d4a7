"""The counters suite: Nsight Compute's counts of roofsim's kernels on the H100
(data/measurements/h100-sxm/counters.json, as the harness wrote it) against the
engine's."""
import json

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


def test_engine_counts_match_nsight_compute_within_the_goals():
    """Over the launches of every third problem (a sample of each kind: the whole
    suite's figures are in docs/check.md, "Counters"): warp instructions within 2%, DRAM
    bytes within 10% (each launch from an empty L2, as ncu's cache control flushes it
    before every profiled launch, a problem's second launch included), L2 bytes within
    15% of what the SMs and the L2 exchanged over the crossbar."""
    # (the run of `roofsim validate --suites counters` that golden command 062 makes and
    # tests/test_golden_cli.py holds the code to)
    from test_golden_cli import written
    rows = json.loads(written("062", "vc.json"))["rows"]
    ok = [r for r in cn.load(FOLDER)["records"] if r["ok"]]
    sample = list(dict.fromkeys(r["problem"] for r in ok))[::3]
    assert [(r["problem"], r["launch"]) for r in rows] == \
        [(r["problem"], r["launch"]) for r in ok if r["problem"] in sample]
    sc = cn.scores(rows)
    assert all(sc[c]["n"] == len(rows) for c in ("instructions", "dram", "l2"))
    assert sc["instructions"]["mape"] <= 0.02
    assert sc["dram"]["mape"] <= 0.10
    assert sc["l2"]["mape"] <= 0.15
    # a problem's second launch finds none of the first's output in the L2: it reads it
    # from DRAM (the im2col matrix, 147,456 x 4 bytes... at least the matrix once)
    second = [r for r in rows if r["launch"] == 1]
    assert second and all(r["engine_dram_bytes"] / r["measured_dram_bytes"] > 0.5 for r in second)


def test_what_each_ncu_l2_metric_counts_on_a_streaming_kernel():
    """relu over n floats reads 4n bytes and writes 4n, each once, whole sectors: the
    crossbar carries exactly that (measured), the L2's lookups from the SMs too (no two
    SMs ask for one sector), and lts__t_bytes more -- the lookups repeated in the far L2
    partition over the fabric, about half the traffic. The engine counts 8n."""
    doc = cn.load(FOLDER)
    hw = hwmodels.get("h100-sxm")
    for r in doc["records"]:
        if not r["problem"].startswith("relu="):
            continue
        n = int(r["problem"].split(":")[1])
        assert r["xbar_to_l1_bytes"] == r["l1_to_xbar_bytes"] == 4 * n
        assert r["l2_sm_read_bytes"] == r["l2_sm_write_bytes"] == 4 * n
        assert cn.l2_measured(r) == 8 * n
        assert 0.4 < r["l2_fabric_bytes"] / (8 * n) < 0.7
        assert r["l2_bytes"] > 1.4 * 8 * n
        kernel, kw = problem_of(r["problem"])
        res = api.simulate(hw, api.build(hw, kernel, **kw), "sampled", l2="flushed")
        # (sampled: the slice's count scaled to the launch, within a few sectors)
        assert abs(res.launches[0].bytes_by_level["l2"] / (8 * n) - 1) < 1e-5


def test_the_l2_s_lookups_merge_what_the_crossbar_carries():
    """The L2's own count of the SMs' sector lookups is under the crossbar's in the tiled
    GEMMs, by 10-40% (the request coalescer merges SMs' requests for one sector) and never over it by
    more than noise: the reason the engine, which counts requests, is held to the
    crossbar's."""
    doc = cn.load(FOLDER)
    tiled = [r for r in doc["records"] if r["problem"].startswith("gemm-tiled")]
    share = [r["l2_sm_read_bytes"] / r["xbar_to_l1_bytes"] for r in tiled]
    assert len(share) == 9 and max(share) < 0.92 and min(share) < 0.65
    assert all(r["l2_sm_read_bytes"] <= 1.02 * r["xbar_to_l1_bytes"] for r in doc["records"])

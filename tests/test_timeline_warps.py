"""The engine's observation of warps: per-warp states, memory requests by level, per-site
accounting, and the Chrome trace drawn from them (``core.Recording``,
``analysis.traces.simt_trace``). None of it may change a cycle; each warp's spans must
tile its life; the per-site sums must add up to the launch's own counts."""
from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest

import simulator as rs
from simulator import api
from simulator.analysis.traces import STATES, simt_trace, warp_states
from simulator.simt import core, engine, isa, traces, walk
from simulator.simt.stats import SITE_COLUMNS

FERMI = rs.load_hardware("gtx480")
COL = {c: i for i, c in enumerate(SITE_COLUMNS)}
STALLS = ("memory", "dependency", "pipe", "mshr", "barrier", "not_selected")


def _engine(hw, kernel, policy="gto", trace=100_000, trace_memory=None, **args):
    """A full run of ``kernel`` keeping ``trace`` issues (the engine's own limit, not the
    API's 20,000: every issue of these small launches)."""
    progs = api.build(hw, kernel, **args).programs
    return engine.simulate(hw, list(progs), policy=policy, mode="full", trace=trace,
                           trace_memory=trace_memory)


@pytest.fixture(scope="module")
def gemm():
    # the shared-memory tiled GEMM: two barriers a tile, every lane active
    return _engine(FERMI, "gemm-tiled", m=32, n=32, k=32)


@pytest.fixture(scope="module")
def gemm_lrr():
    return _engine(FERMI, "gemm-tiled", policy="lrr", m=32, n=32, k=32)


def _issue_interval(result):
    return float(result.detail.hw.sm.issue_interval_cycles)


def _states(result, launch=0):
    return warp_states(result.detail.launches[launch], _issue_interval(result))


# ---------------------------------------------------------------- nothing changes

def test_recording_changes_no_cycle():
    progs = api.build(FERMI, "gemm-tiled", m=48, n=32, k=32).programs
    a = engine.simulate(FERMI, list(progs), mode="full", sites=True)
    b = engine.simulate(FERMI, list(progs), mode="full", trace=500, trace_memory=7)
    assert a.cycles == b.cycles and a.bytes_by_level == b.bytes_by_level
    assert a.stalls_by_cause == b.stalls_by_cause
    la, lb = a.detail.launches[0], b.detail.launches[0]
    assert la.stats == lb.stats
    np.testing.assert_array_equal(la.sites, lb.sites)       # per-site: asked for, or with a trace
    c = engine.simulate(FERMI, list(progs), mode="full").detail.launches[0]
    assert c.sites.shape == (0, len(SITE_COLUMNS)) and c.stats == la.stats
    assert len(la.trace) == len(la.waits) == len(la.warps) == len(la.memory) == 0
    assert len(lb.trace) == len(lb.waits) == 500 and len(lb.memory) == 7
    assert lb.sites.shape == (len(progs[0].template), len(SITE_COLUMNS))


# ---------------------------------------------------------------- the Chrome trace

def test_chrome_trace_schema(gemm):
    doc = simt_trace(gemm, FERMI.clock_hz)
    ev = doc["traceEvents"]
    assert json.loads(json.dumps(doc)) == doc
    for e in ev:
        assert {"ph", "ts", "pid", "tid", "name"} <= set(e), e
        if e["ph"] == "X":
            assert e["dur"] >= 0, e
    meta = [e for e in ev if e["ph"] == "M"]
    timed = [e for e in ev if e["ph"] != "M"]
    assert ev[:len(meta)] == meta                     # metadata first, then by time
    ts = [e["ts"] for e in timed]
    assert ts == sorted(ts)
    named_threads = {(e["pid"], e["tid"]) for e in meta if e["name"] == "thread_name"}
    named_procs = {e["pid"] for e in meta if e["name"] == "process_name"}
    used = {(e["pid"], e["tid"]) for e in timed}
    assert used <= named_threads, used - named_threads
    assert {p for p, _ in used} <= named_procs
    cats = {e.get("cat") for e in timed}
    assert {"issue", "stall", "barrier", "done", "memory", "block", "launch"} <= cats
    lr = gemm.detail.launches[0]
    assert sum(e.get("cat") == "issue" for e in timed) == len(lr.trace)
    assert sum(e.get("cat") == "memory" for e in timed) == len(lr.memory)
    # spans on one thread never overlap (a viewer would nest or hide them)
    by_thread = {}
    for e in timed:
        if e["ph"] == "X" and e["pid"] != 10_000:
            by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        spans.sort()
        for (a0, a1), (b0, b1) in itertools.pairwise(spans):
            assert b0 >= a1 - 1e-9 * max(1.0, a1), (a0, a1, b0, b1)


# ---------------------------------------------------------------- warps' spans

def _by_warp(states):
    order = np.lexsort((states["start"], states["warp"]))
    return {w: order[states["warp"][order] == w] for w in np.unique(states["warp"])}


def test_spans_tile_each_warps_life(gemm):
    lr = gemm.detail.launches[0]
    st = _states(gemm)
    d = _issue_interval(gemm)
    assert (st["end"] > st["start"]).all()
    assert set(st["state"]) <= set(STATES)
    assert (st["state"] == "issue").sum() == len(lr.trace) == gemm.instructions
    assert len(lr.warps) == sum(b * -(-t // 32) for b, t in
                                [(la.grid[0] * la.grid[1], la.block[0] * la.block[1])
                                 for la in gemm.launches])
    assert lr.warps[:, 7].sum() == len(lr.trace)            # every warp's issues kept
    block_end = np.asarray(lr.blocks["end"])
    for w, idx in _by_warp(st).items():
        s, e = st["start"][idx], st["end"][idx]
        np.testing.assert_array_equal(s[1:], e[:-1])        # no gap, no overlap
        assert s[0] == lr.warps[w, 0]                       # from its start
        end = max(lr.warps[w, 1], block_end[int(lr.warps[w, 6])])
        assert e[-1] == end                                 # to its block's end
        assert st["state"][idx[-1]] == "done"
        issues = st["state"][idx] == "issue"
        assert issues.sum() == lr.warps[w, 7]
        np.testing.assert_array_equal((e - s)[issues], d)


def test_per_site_stalls_equal_the_warps_spans(gemm):
    """Traced whole, the per-site stall columns are the warps' stalled spans, and each
    warp's life is its issues, stalls and done time."""
    lr = gemm.detail.launches[0]
    st = _states(gemm)
    dur = st["end"] - st["start"]
    name = {"not selected": "not_selected"}
    for state in ("memory", "dependency", "pipe", "mshr", "barrier", "not selected"):
        col = COL[name.get(state, state)]
        assert lr.sites[:, col].sum() == pytest.approx(dur[st["state"] == state].sum(), abs=1e-6)
    block_end = np.asarray(lr.blocks["end"])
    lives = np.maximum(lr.warps[:, 1], block_end[lr.warps[:, 6].astype(int)]) - lr.warps[:, 0]
    stalls = lr.sites[:, [COL[c] for c in STALLS]].sum()
    done = dur[st["state"] == "done"].sum()
    assert lives.sum() == pytest.approx(_issue_interval(gemm) * lr.sites[:, 0].sum() + stalls + done)


def test_barrier_spans_end_together(gemm):
    """Every warp of a block waiting at its k-th barrier is released at one cycle: the
    issue of that barrier by the block's last warp to arrive."""
    lr = gemm.detail.launches[0]
    st = _states(gemm)
    assert (st["state"] == "barrier").sum() > 0
    releases = {}
    bar_issue = {}
    for w, idx in _by_warp(st).items():
        pos = int(lr.warps[w, 6])
        k = -1
        for i in idx:
            if st["state"][i] == "issue" and st["op"][i] == isa.BAR:
                k += 1
                bar_issue.setdefault((pos, k), []).append(st["start"][i])
            elif st["state"][i] == "barrier":
                releases.setdefault((pos, k), set()).add(st["end"][i])
    assert releases
    for key, ends in releases.items():
        assert len(ends) == 1, (key, ends)
        assert ends == {max(bar_issue[key])}, (key, ends, bar_issue[key])


def test_policy_changes_issue_order(gemm, gemm_lrr):
    """Under GTO a scheduler keeps issuing from one warp while it can: consecutive issues
    of a scheduler come from the same warp far more often than under LRR."""
    def same_warp(result):
        tr = result.detail.launches[0].trace
        same = total = 0
        for sm, sc in {(a, b) for a, b in tr[:, 1:3]}:
            key = tr[(tr[:, 1] == sm) & (tr[:, 2] == sc)][:, 3:5]
            same += int((key[1:] == key[:-1]).all(axis=1).sum())
            total += len(key) - 1
        return same / total
    gto, lrr = same_warp(gemm), same_warp(gemm_lrr)
    assert gto > 3 * lrr and gto > 0.1, (gto, lrr)


def test_memory_stalls_dominate_streaming_on_gtx480():
    r = _engine(FERMI, "relu", trace=300_000, trace_memory=5000, n=1 << 18)
    lr = r.detail.launches[0]
    assert len(lr.trace) == r.instructions                  # traced whole
    totals = {c: lr.sites[:, COL[c]].sum() for c in STALLS}
    assert max(totals, key=totals.get) == "memory", totals
    st = _states(r)
    dur = st["end"] - st["start"]
    stalled = {s: dur[st["state"] == s].sum() for s in ("memory", "dependency", "pipe", "mshr",
                                                         "not selected", "barrier")}
    assert max(stalled, key=stalled.get) == "memory", stalled
    # the memory requests: one per global access kept, served by each level, data back
    # no sooner than issued
    mem = lr.memory
    assert len(mem) == 5000
    assert (mem[:, 1] >= mem[:, 0]).all()
    assert set(np.unique(mem[:, 2]).astype(int)) >= {1, 2}     # the L2 and DRAM
    assert set(np.unique(mem[:, 8]).astype(int)) == {isa.LDG, isa.STG}
    tl = rs.timeline(r)
    assert set(tl.memory["level"]) <= set(core.LEVELS) and len(tl.memory["issue"]) == 5000
    assert (tl.states["state"] == "issue").sum() == len(tl.trace["cycle"]) == r.instructions
    assert (tl.trace["warp_row"] >= 0).all() and tl.warps["sm"].shape == (len(lr.warps),)


# ---------------------------------------------------------------- per-site accounting

def test_site_sums_equal_the_launchs_counts(gemm):
    lr = gemm.detail.launches[0]
    prog = lr.program
    s = lr.sites.sum(axis=0)
    stats = lr.stats
    assert lr.sites.shape == (len(prog.template), len(SITE_COLUMNS))
    assert s[COL["issued"]] == stats.warp_instructions
    assert s[COL["threads"]] == 32 * stats.warp_instructions        # every lane active
    shared_ops = np.isin(prog.template[:, 0], (isa.LDS, isa.STS))
    assert s[COL["shared_passes"]] == (lr.sites[shared_ops, COL["issued"]].sum()
                                       + stats.shared_conflict_passes)
    assert lr.sites[~shared_ops, COL["shared_passes"]].sum() == 0
    assert s[COL["l1_bytes"]] == stats.l1_bytes == lr.bytes_by_level["l1"]
    assert s[COL["l2_bytes"]] == stats.l2_read_bytes + stats.l2_write_bytes == lr.bytes_by_level["l2"]
    assert s[COL["dram_bytes"]] == stats.dram_read_bytes + stats.dram_write_bytes
    glob = np.isin(prog.template[:, 0], (isa.LDG, isa.STG))
    assert lr.sites[~glob][:, [COL["l1_bytes"], COL["l2_bytes"], COL["dram_bytes"]]].sum() == 0
    # each row issued as often as the warps walk it
    assert (lr.sites[:, COL["issued"]] > 0).any()


def test_bank_conflicts_land_on_their_site():
    """gemm-tiled with T=8 (a warp of four rows of the tile): the engine's conflict passes
    all belong to shared-memory rows."""
    r = _engine(FERMI, "gemm-tiled", tile=8, m=16, n=16, k=16)
    lr = r.detail.launches[0]
    shared = np.isin(lr.program.template[:, 0], (isa.LDS, isa.STS))
    extra = lr.sites[:, COL["shared_passes"]] - np.where(shared, lr.sites[:, COL["issued"]], 0)
    assert extra.sum() == lr.stats.shared_conflict_passes
    assert (extra[~shared] == 0).all()


def _site_trace(prog):
    """``walk.from_template(prog)`` with each event's site its template row."""
    tp = walk.from_template(prog)
    wpb = tp.warps_per_block
    pcs = [pc for b in range(prog.launch.blocks) for w in range(wpb)
           for pc, *_ in walk.warp_stream(prog, b, w)]
    return dataclasses.replace(tp, sites=np.array(pcs, np.int64), n_sites=len(prog.template))


def test_trace_program_sites_match_the_template():
    """The trace of a template, its events' sites their rows, accounts alike, column by
    column; without sites a trace program has none."""
    (prog,) = api.build(FERMI, "gemm-tiled", m=32, n=16, k=32).programs
    tp = _site_trace(prog)
    a = engine.simulate(FERMI, [prog], mode="full", sites=True).detail.launches[0]
    b = engine.simulate(FERMI, [tp], mode="full").detail.launches[0]
    np.testing.assert_array_equal(a.sites, b.sites)
    bare = dataclasses.replace(tp, sites=np.zeros(0, np.int64), n_sites=0)
    c = engine.simulate(FERMI, [bare], mode="full").detail.launches[0]
    assert c.sites.shape == (0, len(SITE_COLUMNS)) and c.stats == b.stats
    # slicing keeps each event's site
    part = traces.keep_blocks(tp, [1])
    lo, hi = tp.warp_begin[tp.warps_per_block], tp.warp_begin[2 * tp.warps_per_block]
    np.testing.assert_array_equal(part.sites[:hi - lo], tp.sites[lo:hi])
    assert part.n_sites == tp.n_sites and len(part.sites) == len(part.rows)


def test_trace_program_sites_are_checked():
    (prog,) = api.build(FERMI, "relu", n=256).programs
    tp = walk.from_template(prog)
    n = len(tp.rows)
    with pytest.raises(ValueError, match="sites has"):
        dataclasses.replace(tp, sites=np.zeros(n - 1, np.int64), n_sites=4)
    with pytest.raises(ValueError, match="n_sites - 1"):
        dataclasses.replace(tp, sites=np.full(n, 4, np.int64), n_sites=4)
    with pytest.raises(ValueError, match="n_sites = 0"):
        dataclasses.replace(tp, sites=np.zeros(n, np.int64))
    with pytest.raises(ValueError, match="n_sites"):
        dataclasses.replace(tp, sites=np.zeros(n, np.int64), n_sites=-1)
    ok = dataclasses.replace(tp, sites=np.zeros(n, np.int64), n_sites=1)
    assert not ok.sites.flags.writeable

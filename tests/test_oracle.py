"""The per-layer oracle against brute force: every sequence of configurations of small
random networks, with and without the cost of switching between them."""
import itertools
import random

import pytest

from simulator.analysis.oracle import best_of, dynamic_program


def _brute(times, switch):
    cs = list(times)
    n = len(next(iter(times.values())))
    best = None
    for path in itertools.product(cs, repeat=n):
        t = sum(times[c][i] for i, c in enumerate(path))
        t += sum(switch(a, b, i) for i, (a, b) in enumerate(zip(path, path[1:]), 1) if a != b)
        if best is None or t < best[0] - 1e-15:
            best = (t, path)
    return best


@pytest.mark.parametrize("seed", range(25))
def test_dynamic_program_is_the_best_sequence(seed):
    rng = random.Random(seed)
    cs = [("direct", "nchw"), ("direct", "nhwc"), ("im2col", "nchw"), ("im2col", "nhwc")][:rng.randint(1, 4)]
    n = rng.randint(1, 6)
    times = {c: [rng.uniform(0, 1e-3) for _ in range(n)] for c in cs}
    cost = [rng.uniform(0, 5e-4) for _ in range(n)]

    def switch(a, b, i):           # a layout transform where the layouts differ
        return cost[i] if a[1] != b[1] else 0.0
    got = dynamic_program(times, switch)
    want_t, _ = _brute(times, switch)
    assert got.seconds == pytest.approx(want_t, rel=1e-12, abs=1e-18)
    # the path it returns adds up to what it says
    t = sum(times[c][i] for i, c in enumerate(got.configs))
    s = sum(switch(a, b, i) for i, (a, b) in enumerate(zip(got.configs, got.configs[1:]), 1) if a != b)
    assert got.seconds == pytest.approx(t + s) and got.switch_seconds == pytest.approx(s)
    # best-of-two is a lower bound, met when switching is free
    free = best_of(times)
    assert free.seconds <= got.seconds + 1e-18
    assert dynamic_program(times, lambda a, b, i: 0.0).seconds == pytest.approx(free.seconds)


def test_switching_keeps_a_plan_in_one_layout():
    """Two layers: NHWC faster for the first by 1 us, NCHW for the second by 1 us; a
    transform costing 5 us makes staying in one layout best, while best-of-two switches."""
    times = {"nchw": [11e-6, 10e-6], "nhwc": [10e-6, 11e-6]}
    assert best_of(times).configs == ("nhwc", "nchw") and best_of(times).seconds == pytest.approx(20e-6)
    dp = dynamic_program(times, lambda a, b, i: 5e-6)
    assert dp.seconds == pytest.approx(21e-6) and dp.switch_seconds == 0.0
    assert dp.configs in (("nchw", "nchw"), ("nhwc", "nhwc"))


@pytest.mark.parametrize("times,needle", [
    ({}, "at least one configuration"),
    ({"a": [1.0], "b": [1.0, 2.0]}, "one time per layer"),
    ({"a": [1.0, float("nan")]}, r"times\['a'\]\[1\] = nan"),
    ({"a": [-1.0]}, "must be a finite number"),
])
def test_bad_times_are_named(times, needle):
    with pytest.raises(ValueError, match=needle):
        dynamic_program(times, lambda a, b, i: 0.0)
    with pytest.raises(ValueError, match=needle):
        best_of(times)


# --- the oracle over a network graph (plan.choose) against brute force -------------------

def _all_plans(net):
    from simulator.analysis import plan as pl
    names = pl.configurable(net)
    kinds = {op.name: op.kind for op in net.ops}
    choices = [pl.CONFIGS if kinds[n] == "conv2d" else pl.FC_ALGORITHMS for n in names]
    for combo in itertools.product(*choices):
        yield dict(zip(names, combo))


@pytest.mark.parametrize("seed", range(6))
def test_graph_oracle_is_the_best_plan(seed):
    """plan.choose (cut where one tensor is live, every combination inside a segment,
    the recursion over cuts) against every plan of a network with residual branches
    priced in full by plan.plan_seconds, on random per-layer and transform times."""
    from mini_net import mini

    from simulator.analysis import plan as pl
    net = mini()
    rng = random.Random(seed)
    table = {pl.time_key(lp): rng.uniform(1e-6, 1e-3) for lp in pl.oracle_layers(net)}
    if seed % 2:                      # transforms dear: a plan pays to switch layouts
        table = {k: (v * 5 if k[0] == "transform" else v) for k, v in table.items()}
    brute = min(pl.plan_seconds(net, p, table) for p in _all_plans(net))
    choice, bound = pl.choose(net, table)
    assert choice.seconds == pytest.approx(brute, rel=1e-12)
    assert pl.plan_seconds(net, choice.configs, table) == pytest.approx(choice.seconds, rel=1e-12)
    assert bound <= choice.seconds + 1e-15
    switches = sum(v for lp in pl.expand(net, choice.configs) for k, v in [(pl.time_key(lp), 0)]
                   if lp.algorithm == "transform" for v in [table[k]])
    assert choice.switch_seconds == pytest.approx(switches)


def test_segments_cut_where_one_tensor_is_live():
    from mini_net import mini

    from simulator.analysis import plan as pl
    segs = [(entry, [op.name for op in ops]) for entry, ops in pl.segments(mini())]
    # the projection block's input feeds both its convolution and its shortcut: one
    # segment from the pool to the add; the identity block likewise
    assert ("maxpool", ["a.conv1", "a.bn1", "a.conv2", "a.down", "a.bn2"]) in segs
    assert ("a.bn2", ["b.conv1", "b.bn1"]) in segs
    assert segs[0] == ("input", ["conv1"])

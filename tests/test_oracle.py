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

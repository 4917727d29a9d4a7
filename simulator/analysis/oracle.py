"""The per-layer oracle: the best plan from per-layer times of several configurations.

A configuration is how one layer may run (an algorithm and a layout, e.g.
``("direct", "nhwc")``); ``times[c][i]`` is layer i's time under configuration c,
measured or predicted. Two answers, as the 2024 PyTorch-compiler thesis computed them:

* ``best_of``: each layer in its fastest configuration, switching ignored --
  ``sum_i min_c times[c][i]``, a lower bound on any plan of these configurations;
* ``dynamic_program``: the fastest sequence of configurations when moving from one
  configuration to another between layers i - 1 and i costs ``switch(a, b, i)``
  seconds (a layout transform of layer i's input where the layouts differ, zero where
  they agree). The Viterbi recursion over the layers in order, exact for a chain.

A network whose layers are not a chain (ResNet's residual branches: a block's input
feeds both its first convolution and its shortcut) is cut where a single tensor is
live (between ResNet's blocks): ``segmented`` runs the same recursion over those
segments, the state the layout of the tensor crossing the cut, every combination of
configurations tried inside a segment -- exact for any graph whose segments are small
(``simulator.analysis.plan.choose`` prices a segment with the transforms its branches
need).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from simulator.arguments import show

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable


@dataclass(frozen=True)
class Choice:
    """A plan picked by the oracle: per layer the configuration, and the total seconds
    (layers plus switches) it adds up to."""

    configs: tuple
    seconds: float
    switch_seconds: float = 0.0


def _check(times: dict) -> int:
    if not times:
        raise ValueError("times: give the per-layer times of at least one configuration")
    lengths = {c: len(t) for c, t in times.items()}
    n = next(iter(lengths.values()))
    if n == 0 or any(v != n for v in lengths.values()):
        raise ValueError(f"times: every configuration needs one time per layer, got {lengths}")
    for c, ts in times.items():
        for i, t in enumerate(ts):
            if not isinstance(t, (int, float)) or isinstance(t, bool) or not t >= 0 \
                    or t == float("inf"):
                raise ValueError(f"times[{show(c)}][{i}] = {show(t)}: must be a finite number of "
                                 "seconds >= 0")
    return n


def best_of(times: dict) -> Choice:
    """Each layer in its fastest configuration (the first listed on a tie), switching
    ignored."""
    n = _check(times)
    configs = tuple(min(times, key=lambda c: times[c][i]) for i in range(n))
    return Choice(configs, float(sum(times[c][i] for i, c in enumerate(configs))))


def dynamic_program(times: dict, switch: Callable[[Hashable, Hashable, int], float]) -> Choice:
    """The fastest sequence of configurations, ``switch(a, b, i)`` seconds charged where
    layer i runs in ``b`` after layer i - 1 ran in ``a`` (``a != b``; it may be 0)."""
    n = _check(times)
    cs = list(times)
    best = {c: (float(times[c][0]), 0.0, (c,)) for c in cs}      # total, switches, path
    for i in range(1, n):
        nxt = {}
        for b in cs:
            cand = []
            for a in cs:
                tot, sw, path = best[a]
                s = 0.0 if a == b else float(switch(a, b, i))
                if not s >= 0 or s == float("inf"):
                    raise ValueError(f"switch({show(a)}, {show(b)}, {i}) = {show(s)}: must be a finite "
                                     "number of seconds >= 0")
                cand.append((tot + s + times[b][i], sw + s, path + (b,)))
            nxt[b] = min(cand, key=lambda x: x[0])
        best = nxt
    tot, sw, path = min(best.values(), key=lambda x: x[0])
    return Choice(path, tot, sw)


MAX_SEGMENT_COMBINATIONS = 1 << 16


def segmented(options: list, start: Hashable,
              cost: Callable[[int, Hashable, object], tuple[float, float, Hashable]]) -> Choice:
    """The cheapest choice per segment: ``options[i]`` the choices segment i may take
    (every combination of its layers' configurations), ``start`` the state entering the
    first, ``cost(i, state, choice) -> (seconds, switch_seconds, state after)``; a choice
    that cannot run costs ``inf`` and is passed over. Exact: the recursion keeps, for each
    state at each cut, the cheapest way to reach it."""
    if not options:
        raise ValueError("segments: give at least one segment")
    for i, opts in enumerate(options):
        if not opts:
            raise ValueError(f"segment {i}: no choice to make")
        if len(opts) > MAX_SEGMENT_COMBINATIONS:
            raise ValueError(f"segment {i}: {len(opts)} combinations; at most "
                             f"{MAX_SEGMENT_COMBINATIONS} are searched exactly")
    best = {start: (0.0, 0.0, ())}
    for i, opts in enumerate(options):
        nxt = {}
        for state, (tot, sw, path) in best.items():
            for ch in opts:
                sec, ssec, after = cost(i, state, ch)
                if sec == float("inf"):
                    continue
                if not sec >= 0:
                    raise ValueError(f"segment {i}: cost {show(sec)} of {show(ch)}: must be a number of "
                                     "seconds >= 0")
                cand = (tot + sec, sw + ssec, path + (ch,))
                if after not in nxt or cand[0] < nxt[after][0]:
                    nxt[after] = cand
        if not nxt:
            raise ValueError(f"segment {i}: no combination of its layers' configurations can run "
                             "(each needs a time the table lacks)")
        best = nxt
    tot, sw, path = min(best.values(), key=lambda x: x[0])
    return Choice(path, tot, sw)

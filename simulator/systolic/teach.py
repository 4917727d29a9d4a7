"""The cycle-level array for teaching: every register labelled with the element of
``C = A @ B`` it holds, as text per cycle and as an animation.

A recorded :class:`~simulator.systolic.array.ArrayRun` keeps, per cycle and per PE
register, the element held as indices (``trace["index"]``: A[i, k], B[k, j], or C[i, j]
with the first and last k of the sum it holds, -1 where empty); the labels are built here:

* ``A[i,k]``, ``B[k,j]``: an operand element;
* ``C[i,j] 3/4``: a sum of C[i, j] holding 3 of its K = 4 terms, k = 0..2 (``C[i,j] 0/4``:
  a partial sum of no terms yet, the zero entering the top in ws and is);
* ``C[i,j] k4-6``: a partial sum of the terms k = 4..6 only (ws and is with several row
  folds: the earlier terms wait in the output SRAM and are added as it leaves the array).

Registers per PE (``REGISTERS``): ``h`` moves right, ``v`` moves down, and two stay:
``acc`` (the accumulator) and ``out`` (the shadow register of the column's drain chain)
in os; ``w0`` and ``w1`` (the two stationary buffers, filled through the column's
preload shift chain) in ws and is.
"""
from __future__ import annotations

import math

import numpy as np

from simulator.arguments import show

from .array import HOLDS, REGISTERS

MAX_VIEW_SIDE = 16       # PEs along a side the text view and the animation draw
MAX_FRAMES = 600         # cycles one animation draws

ROLES = {
    "os": "os (output stationary): C[i,j] stays in PE (i,j) (acc) and drains down its column "
          "(out); A[i,k] enters row i at the left and moves right (h); B[k,j] enters column "
          "j at the top and moves down (v).",
    "ws": "ws (weight stationary): B[k,j] is preloaded into PE (k,j) (w0/w1, shifted down "
          "the column's preload chain); A[i,k] enters row k at the left and moves right (h); "
          "partial sums of C[i,j] enter column j at the top as zeros, add A[i,k]B[k,j] in "
          "each row and leave at the bottom (v).",
    "is": "is (input stationary): A[i,k] is preloaded into PE (k,i) (w0/w1, shifted down "
          "the column's preload chain); B[k,j] enters row k at the left and moves right (h); "
          "partial sums of C[i,j] enter column i at the top as zeros, add A[i,k]B[k,j] in "
          "each row and leave at the bottom (v).",
}


def _number(x) -> str:
    return f"{x:.4g}" if math.isfinite(x) else "."


def label(kind: str, idx, K: int, value=None, full: bool = False) -> str:
    """The label of one register holding operand ``kind`` ("A", "B" or "C") at ``idx``
    (row, column, first k, last k; row -1: empty), its ``value`` appended where given."""
    p, q, lo, hi = (int(x) for x in idx)
    if p < 0:
        return "." if not full else "empty"
    if kind in "AB":
        text = f"{kind}[{p},{q}]"
    else:
        n = hi - lo + 1
        if full:
            text = (f"C[{p},{q}] ({n}/{K} terms: k={lo}..{hi})" if n > 0
                    else f"C[{p},{q}] (0/{K} terms: zero)")
        else:
            text = f"C[{p},{q}] {n}/{K}" if lo == 0 or n == 0 else f"C[{p},{q}] k{lo}-{hi}"
    if value is not None and math.isfinite(value):
        text += f"={_number(value)}"
    return text


def check_run(run, arg="run"):
    from .array import ArrayRun
    if not isinstance(run, ArrayRun):
        raise TypeError(f"{arg}={show(run)}: a run from systolic_array_run(..., record=True), "
                        f"not a {type(run).__name__}")
    if run.trace is None or "index" not in run.trace:
        raise ValueError(f"{arg}: a run recorded without its registers; run it with record=True")
    R, C = run.trace["active"].shape[1:]
    if max(R, C) > MAX_VIEW_SIDE:
        raise ValueError(f"{arg}: its array uses {R}x{C} PEs; the views draw at most "
                         f"{MAX_VIEW_SIDE} a side (use a smaller array or smaller matrices)")
    return run


class Labels:
    """The labels of a recorded run, cycle by cycle (``values``: with each value)."""

    def __init__(self, run, values: bool = False):
        self.run, self.values = run, values
        self.df = run.lowered.dataflow
        self.K = run.lowered.mnk[2]
        self.tr = run.trace
        self.names = REGISTERS[self.df]
        self.holds = HOLDS[self.df]
        self.cycles = self.tr["active"].shape[0]
        self.rows, self.cols = self.tr["active"].shape[1:]

    def _v(self, x):
        return float(x) if self.values else None

    def register(self, t, r, c, g, full=False) -> str:
        return label(self.holds[g], self.tr["index"][t, r, c, g], self.K,
                     self._v(self.tr["value"][t, r, c, g]), full)

    def mac(self, t, r, c) -> str:
        """``C[i,j]+=A[i,k]B[k,j]`` for a PE doing a MAC at cycle t, else ''."""
        if not self.tr["active"][t, r, c]:
            return ""
        ga, gb, gc = self.tr["mac"][t, r, c]
        i, k = self.tr["index"][t, r, c, ga, :2]
        j = self.tr["index"][t, r, c, gb, 1]
        return f"C[{i},{j}]+=A[{i},{k}]B[{k},{j}]"

    def left_in(self, t, r) -> str:
        """What entered row r at the left edge this cycle (PE (r, 0)'s h register)."""
        return self.register(t, r, 0, 0)

    def top_in(self, t, c) -> str:
        """What entered column c at the top this cycle (PE (0, c)'s v register as it came)."""
        idx = self.tr["index"][t, 0, c, 1].copy()
        if idx[0] < 0:
            return "."
        value = self.tr["value"][t, 0, c, 1]
        if self.holds[1] == "C":              # a partial sum of no terms: the zero entering
            idx[3] = idx[2] - 1
            value = 0.0
        return label(self.holds[1], idx, self.K, self._v(value))

    def preload(self, t, c) -> str:
        """ws/is: the element entering column c's preload chain this cycle, and its buffer."""
        k0, k1, b = self.tr["preload_index"][t, c]
        if k0 < 0:
            return "."
        kind = self.holds[2]
        return label(kind, (k0, k1, -1, -1), self.K, self._v(self.tr["preload_value"][t, c])) + \
            f">w{b}"

    def bottom_out(self, t, c) -> str:
        """What left column c for the output SRAM this cycle: from the bottom row of the
        fold's tile (named where it is not the array's bottom row; a tile of fewer rows
        can finish there while another fold's leaves the bottom)."""
        out = []
        for r in np.nonzero(self.tr["out_index"][t, :, c, 0] >= 0)[0][::-1]:
            text = label("C", self.tr["out_index"][t, r, c], self.K,
                         self._v(self.tr["out_value"][t, r, c]))
            out.append(text if r == self.rows - 1 else f"{text} (row {r})")
        return " + ".join(out) or "."


def _cycles(value, n, arg="cycles") -> range:
    if value is None:
        return range(n)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, range)):
        raise TypeError(f"{arg}={show(value)}: a cycle (int), a range of cycles or None (all); "
                        f"not a {type(value).__name__}")
    r = range(int(value), int(value) + 1) if not isinstance(value, range) else value
    if len(r) == 0 or r.start < 0 or r[-1] >= n:
        raise ValueError(f"{arg}={show(value)}: the run has cycles 0 to {n - 1}")
    return r


def systolic_text(run, cycles=None, values: bool = False) -> str:
    """Per cycle, the grid of PEs with each register's label (``*``: took part in the
    PE's MAC that cycle), the operands entering at the left and top edges, the preload
    chain (ws/is) and what leaves at the bottom."""
    run = check_run(run)
    lab = Labels(run, values)
    span = _cycles(cycles, lab.cycles)
    R, C, names = lab.rows, lab.cols, lab.names
    # one width for every cell and edge label of the cycles shown, so the grids line up
    texts = []
    for t in span:
        texts += [lab.register(t, r, c, g) for r in range(R) for c in range(C) for g in range(4)]
        texts += [lab.left_in(t, r) for r in range(R)]
        texts += [lab.top_in(t, c) for c in range(C)] + [lab.bottom_out(t, c) for c in range(C)]
        texts += [lab.preload(t, c) for c in range(C)]
    w = max(map(len, texts)) + 5
    lw = max(len(lab.left_in(t, r)) for t in span for r in range(R)) + 2
    lw = max(lw, 12)
    M, N, K = run.lowered.mnk
    L = run.lowered
    head = [f"{L.dataflow} on a {L.rows}x{L.cols} array: C ({M}x{N}) = A ({M}x{K}) @ B ({K}x{N}), "
            f"{run.cycles} cycles, {run.macs} MACs"
            + (f" (the {R}x{C} PEs it uses shown)" if (R, C) != (L.rows, L.cols) else ""),
            ROLES[L.dataflow],
            "Labels: A[i,k], B[k,j]; C[i,j] n/K: a sum of n of C[i,j]'s K terms (k = 0..n-1); "
            "C[i,j] kA-B: the terms k = A..B only; '.': empty; *: used by the PE's MAC this "
            "cycle; =x: the value."]
    starts = run.fold_starts
    folds = L.folds
    T = L.spatial[2]
    bar = " " * lw + "+" + "+".join("-" * w for _ in range(C)) + "+"

    def edge_row(title, cells):
        return f"{title:>{lw}} " + " ".join(f"{x:<{w}}" for x in cells)

    out = ["\n".join(head)]
    for t in span:
        n_mac = int(lab.tr["active"][t].sum())
        entering = [f for f in range(len(starts)) if starts[f] <= t < starts[f] + T + R + C]
        fold = ""
        if len(folds) > 1 and entering:
            fold = "; folds in flight: " + ", ".join(
                f"{f} (row fold {folds[f, 0]}, column fold {folds[f, 1]})" for f in entering)
        lines = [f"cycle {t}/{lab.cycles - 1}: {n_mac} MAC{'s' if n_mac != 1 else ''}{fold}"]
        if L.dataflow != "os":
            lines.append(edge_row("preload:", [lab.preload(t, c) for c in range(C)]))
        lines.append(edge_row("top in:", [lab.top_in(t, c) for c in range(C)]))
        lines.append(bar)
        for r in range(R):
            for g in range(4):
                prefix = f"{lab.left_in(t, r)} >" if g == 0 else ""
                cells = []
                for c in range(C):
                    used = lab.tr["active"][t, r, c] and g in lab.tr["mac"][t, r, c]
                    cell = f"{'*' if used else ' '}{names[g]:<3} {lab.register(t, r, c, g)}"
                    cells.append(f"{cell:<{w}}")
                lines.append(f"{prefix:>{lw}}|" + "|".join(cells) + "|")
            lines.append(bar)
        lines.append(edge_row("bottom out:", [lab.bottom_out(t, c) for c in range(C)]))
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"

"""Closed-form model of the physically faithful systolic schedule (the default mode).

Timing, per fold f with ``ru`` rows and ``cu`` columns used and T temporal steps; the
schedule is the one :mod:`simulator.systolic.array` executes register by register:

* ``os`` -- outputs accumulate in place. The left edge takes A, the top edge B, both
  skewed, so PE (r, c) does its t-th MAC at ``s_f + r + c + t``. A finished result moves
  into the PE's shadow register; once a column's last result is in, the column's
  shadow chain shifts down one row per cycle and the bottom port writes one output per
  cycle. The next fold may start when the edges are free (``s_f + T``) and its first
  result will not meet a shadow chain still draining (the chain of ru_f results needs
  ru_f shifts after the column's last result): ``s_{f+1} = s_f + max(T, 2 ru_f - 1)``.
  Fold f ends (last output written) at ``s_f + 2 ru_f + cu_f + T - 2``.
* ``ws`` / ``is`` -- the stationary tile is preloaded through a per-column shift chain
  (``ru`` cycles) into one of two weight buffers per PE; the buffer is chosen by a fold
  tag travelling with the left-edge operand, so a PE switches tiles exactly when the
  next fold's first operand reaches it (as in TPU v1). The chain preloads fold g after
  fold g-1's preload, and may overwrite a PE's buffer only after the latest fold that
  used it (of the same parity) is done with it; a fold that started at s used column c
  up to ``s + T - 1 + r + c`` and the chain writes row r at ``p + r``, so
  ``p_g = max(p_{g-1} + ru_{g-1}, max_c<cu_g(last_start(g % 2, c) + T + c))``; the
  stream starts when the edge is free and the preload has settled:
  ``s_g = max(s_{g-1} + T, p_g + ru_g)``, ``s_0 = ru_0``. In steady state with full
  R x C folds the spacing is ``max(T, ceil((T + R + C - 1) / 2))``: the preload is
  hidden when T >= R + C - 1. Partial sums enter the
  top as zeros, move down, and leave the tile's bottom row at ``s_f + ru - 1 + c + t``;
  fold f ends at ``s_f + ru_f + cu_f + T - 2``.

Compute cycles = the latest fold end. SRAM traffic in words: every operand word that
enters an array edge is one read (padding positions of a convolution are injected as
zeros and not read); every output leaving the array is one write, and a partial sum
from a second or later row fold first reads the stored partial sum (accumulation).

DRAM traffic, for SRAMs split into double-buffered halves, with folds run column
fold outer, row fold inner: the stationary operand is read once (its tiles partition
it); the left-edge operand is swept once per column fold unless it fits whole in its
half-SRAM, then once; ``os``'s top-edge operand is read once per column fold slice if
that slice fits, else once per fold; outputs accumulated over several row folds stay
on chip if one column fold's outputs fit in the half ofmap SRAM, otherwise every
partial sum spills to DRAM and is read back. With ``activations_on_chip`` (TPU v1: the
unified buffer keeps activations between layers, the DRAM holds weights) a layer whose
input and output fit in the ifmap SRAM moves no activations through DRAM. DRAM
transfers overlap compute; stall
cycles = ``max(0, DRAM cycles - compute cycles)`` at the preset's DRAM bandwidth (the
access/execute pipeline refines this at tile granularity).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from simulator.arguments import show
from simulator.result import OPERANDS, OperandCounts, SystolicFigures

from .lowering import Lowered, a_valid_total

if TYPE_CHECKING:
    from hwmodels.schema import SystolicArray
    from workloads.ir import TensorOp


@njit(cache=True, nogil=True)
def _starts_os(ru, T):
    F = ru.shape[0]
    s = np.zeros(F, np.int64)
    for f in range(1, F):
        s[f] = s[f - 1] + max(T, 2 * ru[f - 1] - 1)
    return s


@njit(cache=True, nogil=True)
def _starts_stationary(ru, cu, T, C):
    F = ru.shape[0]
    s = np.zeros(F, np.int64)
    p = np.zeros(F, np.int64)
    # start of the latest fold that used (buffer, column); a preload of column c may
    # overwrite it from that start + T + c on (the row offsets of use and overwrite cancel)
    last = np.full((2, C), -(1 << 40), np.int64)
    chain_free = 0
    for g in range(F):
        b = g % 2
        need = chain_free
        for c in range(cu[g]):
            need = max(need, last[b, c] + T + c)
        p[g] = need
        chain_free = need + ru[g]
        s[g] = need + ru[g] if g == 0 else max(s[g - 1] + T, need + ru[g])
        for c in range(cu[g]):
            last[b, c] = s[g]
    return s, p


def fold_timing(L: Lowered) -> tuple[np.ndarray, np.ndarray, int]:
    """Per fold: stream start and end cycle (exclusive), and the compute cycles."""
    ru, cu = L.folds[:, 2].copy(), L.folds[:, 3].copy()
    T = L.spatial[2]
    if L.dataflow == "os":
        s = _starts_os(ru, T)
        end = s + 2 * ru + cu + T - 2
    else:
        s, _ = _starts_stationary(ru, cu, T, L.cols)
        end = s + ru + cu + T - 2
    return s, end, int(end.max())


@dataclass(frozen=True, eq=False)
class FoldTiming:
    """One layer's folds on the array, in run order, under the default schedule (of one
    group, for a grouped convolution): what the fold-by-PE heatmap draws. The engine
    computes it once per layer (:func:`fold_timing`); charts read it, never re-lower."""

    rows: int
    cols: int
    row_folds: int
    col_folds: int
    steps: int                 # T: temporal steps (MACs per PE) of each fold
    folds: np.ndarray          # int64 (F, 4): row fold, column fold, rows used, columns used
    starts: np.ndarray         # int64 (F,): cycle each fold's stream starts
    ends: np.ndarray           # int64 (F,): cycle each fold ends (exclusive)
    compute_cycles: int        # the latest fold end

    @classmethod
    def of(cls, L: Lowered) -> FoldTiming:
        starts, ends, total = fold_timing(L)
        return cls(L.rows, L.cols, L.row_folds, L.col_folds, L.spatial[2], L.folds, starts, ends,
                   total)

    @property
    def spans(self) -> np.ndarray:
        """Cycles from each fold's start to the next one's (the last: to the layer's end)."""
        return np.diff(np.append(self.starts, self.compute_cycles))

    def pe_row_activity(self, max_folds: int = 400, max_rows: int = 400) -> np.ndarray:
        """(min(rows, max_rows), min(F, max_folds)): for each of the first folds, the share
        of its span a PE row spends on MACs -- columns used / columns x min(1, T / span), 0
        on unused rows. An array of more than ``max_rows`` rows is shown in that many
        bands of equal rows, each the mean of its rows (a 2**20-row array is an image of
        400 rows, not of a million)."""
        spans = self.spans
        n = min(len(self.folds), max_folds)
        nb = min(self.rows, max_rows)
        edges = np.linspace(0, self.rows, nb + 1)
        lo, width = edges[:-1], np.diff(edges)
        img = np.zeros((nb, n))
        for f in range(n):
            ru, cu = self.folds[f, 2], self.folds[f, 3]
            used = np.clip(ru - lo, 0, width) / width          # share of each band's rows used
            img[:, f] = used * (cu / self.cols) * min(1.0, self.steps / max(1, spans[f]))
        return img


def compulsory_words(op: TensorOp) -> int:
    """The op's compulsory words: every touched input and every output element once (the
    op's ``min_bytes`` counted in array words instead of its dtype's bytes)."""
    return sum(o.touched for o in op.operands())


@dataclass(frozen=True)
class SystolicResult:
    """One layer on one array: cycles, utilisation, SRAM and DRAM traffic.

    SRAM counts are in words, DRAM counts in bytes (the preset's ``word_bytes`` per word
    in the default mode; one byte per word in the scalesim mode). ``flops`` is the op's
    (2 x its MACs under the floor rule, whatever MACs the mode counts) and
    ``compulsory_bytes`` its compulsory words in the same bytes as the DRAM counts.
    The scalesim mode sets ``scalesim_compute_utilization`` (SCALE-Sim's own formula)
    and ``memory_replayed`` (its buffers replayed line by line); ``groups`` is a grouped
    convolution's groups, run one after another. ``fold_timing`` is the default
    schedule's per-fold timing (for charts)."""

    layer: str
    dataflow: str
    rows: int
    cols: int
    mode: str
    macs: int
    folds: int
    compute_cycles: int
    stall_cycles: int
    mapping_efficiency: float
    sram_reads: dict        # words per operand: ifmap, filter, ofmap
    sram_writes: dict
    dram_reads_bytes: dict  # bytes per operand
    dram_writes_bytes: dict
    clock_hz: float
    flops: int
    compulsory_bytes: int
    scalesim_compute_utilization: float | None = None
    memory_replayed: bool | None = None
    groups: int = 1
    fold_timing: FoldTiming | None = field(default=None, compare=False, repr=False)

    @property
    def total_cycles(self) -> int:
        return self.compute_cycles + self.stall_cycles

    @property
    def utilization(self) -> float:
        """MACs over PE-cycles of the whole run (stalls included)."""
        return self.macs / (self.rows * self.cols * self.total_cycles)

    @property
    def compute_utilization(self) -> float:
        return self.macs / (self.rows * self.cols * self.compute_cycles)

    @property
    def seconds(self) -> float:
        return self.total_cycles / self.clock_hz

    @property
    def dram_bytes(self) -> int:
        return sum(self.dram_reads_bytes.values()) + sum(self.dram_writes_bytes.values())

    @property
    def sram_words(self) -> int:
        """SRAM reads plus writes, words."""
        return sum(self.sram_reads.values()) + sum(self.sram_writes.values())

    def figures(self) -> SystolicFigures:
        """The layer's figures as its Result holds them (``Result.systolic``)."""
        return SystolicFigures(
            rows=self.rows, cols=self.cols, dataflow=self.dataflow, mode=self.mode,
            macs=self.macs, flops=self.flops, compulsory_bytes=self.compulsory_bytes,
            folds=self.folds, compute_cycles=self.compute_cycles,
            stall_cycles=self.stall_cycles, total_cycles=self.total_cycles,
            utilization=self.utilization, compute_utilization=self.compute_utilization,
            mapping_efficiency=self.mapping_efficiency,
            sram_reads=OperandCounts.of(self.sram_reads),
            sram_writes=OperandCounts.of(self.sram_writes),
            dram_read_bytes=OperandCounts.of(self.dram_reads_bytes),
            dram_write_bytes=OperandCounts.of(self.dram_writes_bytes), seconds=self.seconds,
            scalesim_compute_utilization=self.scalesim_compute_utilization,
            memory_replayed=self.memory_replayed, groups=self.groups)

    def row(self) -> dict:
        """The layer's CSV row: ``layer`` and :meth:`figures` as a dict."""
        return {"layer": self.layer, **self.figures().to_dict()}


def sram_counts(L: Lowered) -> tuple[dict, dict]:
    """SRAM reads and writes per operand (words) of the default schedule."""
    M, N, K = L.mnk
    Fr, Fc = L.row_folds, L.col_folds
    a_valid = a_valid_total(L.op)
    reads = dict.fromkeys(OPERANDS, 0)
    writes = dict.fromkeys(OPERANDS, 0)
    if L.dataflow == "os":
        reads["ifmap"] = Fc * a_valid          # each column fold streams all of A's rows
        reads["filter"] = Fr * K * N           # each row fold streams all of B
        writes["ofmap"] = M * N
    elif L.dataflow == "ws":
        reads["filter"] = K * N                # tiles preloaded once each
        reads["ifmap"] = Fc * a_valid
        writes["ofmap"] = Fr * M * N
        reads["ofmap"] = (Fr - 1) * M * N
    else:  # is
        reads["ifmap"] = a_valid               # tiles of A preloaded once each
        reads["filter"] = Fc * K * N
        writes["ofmap"] = Fr * M * N
        reads["ofmap"] = (Fr - 1) * M * N
    return reads, writes


def _words(scratchpad, word_bytes):
    size = scratchpad.size_bytes // (2 if scratchpad.double_buffered else 1)
    return size // word_bytes


def dram_plan(L: Lowered, hw: SystolicArray) -> dict:
    """How often each operand crosses DRAM (see the module doc for the rules).

    Keys: ``ifmap_passes``, ``filter_passes`` (times the operand is read whole),
    ``spill`` (partial sums go to DRAM between row folds), ``resident`` (activations
    stay on chip), and the compulsory words ``a_once``, ``b_words``, ``o_words``.
    """
    M, N, K = L.mnk
    Fr, Fc = L.row_folds, L.col_folds
    wb = hw.word_bytes
    a_tensor = L.op.operands()[0]
    a_store, a_once = a_tensor.elements, a_tensor.touched      # words stored / compulsory
    b_words, o_words = K * N, M * N
    half = {"ifmap": _words(hw.ifmap_sram, wb), "filter": _words(hw.filter_sram, wb),
            "ofmap": _words(hw.ofmap_sram, wb)}
    cols = L.cols
    spill = False
    if L.dataflow == "os":
        ifmap_passes = 1 if a_store <= half["ifmap"] else Fc
        slice_b = K * min(cols, N)
        filter_passes = 1 if slice_b <= half["filter"] else Fr
    else:
        if L.dataflow == "ws":
            filter_passes = 1
            ifmap_passes = 1 if a_store <= half["ifmap"] else Fc
            out_slice = M * min(cols, N)
        else:
            ifmap_passes = 1
            filter_passes = 1 if b_words <= half["filter"] else Fc
            out_slice = min(cols, M) * N
        spill = Fr > 1 and out_slice > half["ofmap"]
    # activations live in the ifmap SRAM (TPU v1's unified buffer) when the layer's
    # input and output fit there whole; only what does not fit goes to DRAM
    resident = bool(getattr(hw, "activations_on_chip", False)
                    and a_store + o_words <= hw.ifmap_sram.size_bytes // wb)
    return {"ifmap_passes": ifmap_passes, "filter_passes": filter_passes, "spill": spill,
            "resident": resident, "a_once": a_once, "b_words": b_words, "o_words": o_words}


def dram_traffic(L: Lowered, hw: SystolicArray, plan: dict | None = None) -> tuple[dict, dict]:
    """DRAM bytes read and written per operand (``plan``: :func:`dram_plan`'s, if at hand)."""
    plan = plan or dram_plan(L, hw)
    Fr = L.row_folds
    reads = dict.fromkeys(OPERANDS, 0)
    writes = dict.fromkeys(OPERANDS, 0)
    reads["ifmap"] = 0 if plan["resident"] else plan["a_once"] * plan["ifmap_passes"]
    reads["filter"] = plan["b_words"] * plan["filter_passes"]
    if plan["spill"]:
        writes["ofmap"] = Fr * plan["o_words"]
        reads["ofmap"] = (Fr - 1) * plan["o_words"]
    else:
        writes["ofmap"] = plan["o_words"]
    if plan["resident"]:
        writes["ofmap"] -= plan["o_words"]
    wb = hw.word_bytes
    return ({k: v * wb for k, v in reads.items()}, {k: v * wb for k, v in writes.items()})


def check_srams(L: Lowered, hw: SystolicArray) -> None:
    """Each SRAM half must hold what one fold needs at once: the stationary tile, one
    word per array row of the left-edge operand, one word per column of outputs."""
    Sr, Sc, _ = L.spatial
    ru, cu = min(L.rows, Sr), min(L.cols, Sc)
    stationary = {"os": "ofmap", "ws": "filter", "is": "ifmap"}[L.dataflow]
    left = {"os": "ifmap", "ws": "ifmap", "is": "filter"}[L.dataflow]
    need = {"ifmap": 0, "filter": 0, "ofmap": 0}
    need[stationary] = max(need[stationary], ru * cu)
    need[left] = max(need[left], ru)
    need["ofmap"] = max(need["ofmap"], cu)
    if L.dataflow == "os":
        need["filter"] = max(need["filter"], cu)
    for name, words in need.items():
        sp = getattr(hw, f"{name}_sram")
        have = _words(sp, hw.word_bytes)
        if have < words:
            half = " per half (double-buffered)" if sp.double_buffered else ""
            raise ValueError(f"{name}_sram.size_bytes = {sp.size_bytes}: a {L.rows}x{L.cols} "
                             f"{L.dataflow} fold of layer {show(L.op.name)} needs {words} words of "
                             f"{hw.word_bytes} B{half}, at least "
                             f"{words * hw.word_bytes * (2 if sp.double_buffered else 1)} B")


def simulate_layer(hw: SystolicArray, op: TensorOp, dataflow: str, rows: int | None = None,
                   cols: int | None = None) -> SystolicResult:
    """The default (physically faithful) closed-form model of one layer."""
    L = Lowered(op, dataflow, rows or hw.rows, cols or hw.cols)
    check_srams(L, hw)
    timing = FoldTiming.of(L)
    compute = timing.compute_cycles
    sr, sw = sram_counts(L)
    dr, dw = dram_traffic(L, hw)
    bytes_per_cycle = hw.dram.bandwidth_bytes_per_s / hw.clock_hz
    dram_cycles = math.ceil((sum(dr.values()) + sum(dw.values())) / bytes_per_cycle)
    stall = max(0, dram_cycles - compute)
    return SystolicResult(op.name, dataflow, L.rows, L.cols, "default", L.macs,
                          len(L.folds), compute, stall, L.mapping_efficiency, sr, sw, dr, dw,
                          hw.clock_hz, op.flops(), compulsory_words(op) * hw.word_bytes,
                          fold_timing=timing)

"""``--mode scalesim``: SCALE-Sim 3.0.0's conventions, reproduced from its documented and
measured behaviour (no SCALE-Sim code is used or copied).

Differences from the default (physically faithful) mode, and why SCALE-Sim counts so:

==========================  =====================================  =====================================
what                        default mode                           scalesim mode
==========================  =====================================  =====================================
output size                 floor((H + 2p - R)/s) + 1              ceil((H - R + s)/s) on the padded
                                                                   input: one extra output row/column
                                                                   when (H - R) % s != 0, whose window
                                                                   sticks out; its taps count as MACs,
                                                                   SRAM reads and cycles
padding                     zeros injected, never read             part of the input (SCALE-Sim's CSVs
                                                                   give padded sizes): read, counted
fold overlap                next fold streams while the last       none: each fold fills, computes and
                            drains; ws/is preload double-buffered  drains alone
per-fold cycles             spacing max(T, ...) (see closed_form)  os: T + R + C - 2;
                                                                   ws/is: 2R + C + T - 2 (R-cycle
                                                                   weight load not hidden)
total cycles                last output written                    F x per-fold - 1 (+ stalls)
SRAM ofmap writes (os)      M N                                    M N + F (R + C) (SCALE-Sim counts
                                                                   the padded block twice)
partial sums (ws/is)        accumulated on chip when they fit      every row fold's partial sums are
                                                                   SRAM and DRAM writes
DRAM reads                  tensor elements x passes               CALC: distinct addresses per
                                                                   buffer epoch; USER: whole fetch
                                                                   lines of the prefetch stream
                                                                   (duplicates and padding included)
stalls                      DRAM time not hidden (pipeline)        SCALE-Sim's double-buffered read
                                                                   buffers and ofmap drain buffer
words                       ``word_bytes`` of the preset           one byte (SCALE-Sim's fixed word)
==========================  =====================================  =====================================

Utilisation = MACs / (total cycles x R x C); mapping efficiency = Sr Sc / (R C F); both
as fractions here (SCALE-Sim prints percent). Batch > 1 (which SCALE-Sim cannot express)
stacks the images' output pixels: P = N x E_h x E_w.

The closed forms below hold whenever SCALE-Sim's buffers neither turn over nor drain
mid-layer (large SRAMs, the usual case); otherwise the address streams are replayed by
:mod:`.scalesim_memory`. A layer in SCALE-Sim's terms (:class:`SSLayer`) is
:mod:`.scalesim_layer`'s, shared with the replay.
"""
from __future__ import annotations

import math

from .closed_form import SystolicResult, compulsory_words
from .scalesim_layer import SSLayer, as_scalesim_layer, spatial
from .scalesim_memory import replay


def closed_form(L: SSLayer, rows: int, cols: int, dataflow: str) -> dict:
    """Stall-free SCALE-Sim numbers (cycles, utilisation, SRAM counts, compulsory DRAM)."""
    Sr, Sc, T = spatial(L, dataflow)
    Fr, Fc = math.ceil(Sr / rows), math.ceil(Sc / cols)
    F = Fr * Fc
    if dataflow == "os":
        per_fold, util_fold = T + rows + cols - 2, T + rows + cols - 2
    else:
        per_fold, util_fold = 2 * rows + cols + T - 2, 2 * rows + 2 * cols + T - 3
    P, K, Wn = L.P, L.K, L.Wn
    sram_reads = {"os": {"ifmap": P * Wn * Fc, "filter": Wn * K * Fr, "ofmap": 0},
                  "ws": {"ifmap": P * Wn * Fc, "filter": Wn * K, "ofmap": 0},
                  "is": {"ifmap": P * Wn, "filter": Wn * K * Fc, "ofmap": 0}}[dataflow]
    of_writes = P * K + F * (rows + cols) if dataflow == "os" else P * K * Fr
    valid_of = P * K if dataflow == "os" else P * K * Fr
    # prefetch stream lengths (elements, padding included) for USER mode
    n_pf = {"os": (Fr * T * rows, Fc * T * cols), "ws": (Fr * P * rows, Fc * Wn * cols),
            "is": (Fc * Wn * cols, Fr * K * rows)}[dataflow]
    return {"Sr": Sr, "Sc": Sc, "T": T, "Fr": Fr, "Fc": Fc, "F": F,
            "compute_cycles": F * per_fold - 1,
            "mapping_efficiency": Sr * Sc / (rows * cols * F),
            "compute_utilization": Sr * Sc * T / (rows * cols * F * util_fold),
            "sram_reads": sram_reads,
            "sram_writes": {"ifmap": 0, "filter": 0, "ofmap": of_writes},
            "valid_ofmap_writes": valid_of, "prefetch_elements": n_pf}


def _memory_closed_form(L: SSLayer, cf: dict, hw, rows, cols):
    """SCALE-Sim's DRAM counts and stalls when no buffer turns over or drains mid-layer;
    None when the address streams must be replayed."""
    iface = hw.scalesim
    tot = {"ifmap": hw.ifmap_sram.size_bytes, "filter": hw.filter_sram.size_bytes,
           "ofmap": hw.ofmap_sram.size_bytes}          # SCALE-Sim words are bytes
    if cf["valid_ofmap_writes"] > tot["ofmap"] - math.ceil(tot["ofmap"] / 2):
        return None                                       # the ofmap buffer drains mid-layer
    valid = {"ifmap": L.ifmap_valid_entries, "filter": L.Wn * L.K}
    reads = {}
    if iface.bandwidth_mode == "CALC":
        distinct = {"ifmap": L.ifmap_distinct, "filter": L.Wn * L.K}
        for op in ("ifmap", "filter"):
            ips = tot[op] // 100
            if ips == 0 or distinct[op] >= 50 * ips:
                return None                               # the estimate buffer turns over
            reads[op] = distinct[op]
    else:
        bws = {"ifmap": iface.ifmap_bandwidth_words_per_cycle,
               "filter": iface.filter_bandwidth_words_per_cycle}
        for k, op in enumerate(("ifmap", "filter")):
            eps = math.ceil(tot[op] / 100)
            n_sets = valid[op] // eps + 1
            active = math.ceil(tot[op] / 2)
            if n_sets > math.ceil(active / eps):
                return None                               # prefetch buffer refills: may stall
            bw = bws[op]
            reads[op] = min(math.ceil(active / bw), math.ceil(cf["prefetch_elements"][k] / bw)) * bw
    return {"stall_cycles": 0, "dram_reads": {**reads, "ofmap": 0},
            "dram_writes": {"ifmap": 0, "filter": 0, "ofmap": cf["valid_ofmap_writes"]}}


REPLAY_MAX_LINES = 500_000_000   # demand lines the buffer replay runs: about a minute
REPLAY_LINES_PER_S = 7_000_000   # of them a second, about, on one core (ResNet-50 on 8x8)


def replay_lines(hw, op, dataflow: str) -> int:
    """Demand lines the scalesim mode replays for ``op`` (0 where its closed forms hold:
    no buffer turns over or drains mid-layer), known before running: folds x lines a
    fold."""
    L = as_scalesim_layer(op)
    cf = closed_form(L, hw.rows, hw.cols, dataflow)
    if _memory_closed_form(L, cf, hw, hw.rows, hw.cols) is not None:
        return 0
    lines = cf["T"] + hw.rows + hw.cols - 2 if dataflow == "os" else 2 * hw.rows + hw.cols + cf["T"] - 2
    return cf["F"] * lines


def simulate_layer_scalesim(hw, op, dataflow: str) -> SystolicResult:
    """One layer as SCALE-Sim 3.0.0 reports it (fractions instead of percent).

    ``scalesim_compute_utilization`` is SCALE-Sim's compute utilisation (its own
    per-fold formula, see the table above); the result's ``compute_utilization`` is
    MACs / (PEs x compute cycles), as in the default mode."""
    L = as_scalesim_layer(op)
    rows, cols = hw.rows, hw.cols
    cf = closed_form(L, rows, cols, dataflow)
    mem = _memory_closed_form(L, cf, hw, rows, cols)
    replayed = mem is None
    if replayed:
        mem = replay(L, rows, cols, dataflow, hw)
    return SystolicResult(op.name, dataflow, rows, cols, "scalesim", L.macs, cf["F"],
                          cf["compute_cycles"], mem["stall_cycles"], cf["mapping_efficiency"],
                          cf["sram_reads"], cf["sram_writes"], mem["dram_reads"], mem["dram_writes"],
                          hw.clock_hz, op.flops(), compulsory_words(op),   # 1-byte words
                          scalesim_compute_utilization=cf["compute_utilization"],
                          memory_replayed=replayed)

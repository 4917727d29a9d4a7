"""The hardware vector: a preset and a launch's occupancy as the SIMT core's float64
vector, from one field table.

``HW_FIELDS`` lists (name, accessor) rows; ``hw_vector`` fills entry i with row i's
accessor applied to a :class:`HwContext`, and the ``H_*`` indices the numba code reads
are generated from the same table (``H_NSM == H["n_sm"]``), so a field is added in one
place. (numba reads module-level ints as compile-time constants, hence the ``H_*`` names.)

>>> N_HW == len(HW_FIELDS) and HW_NAMES[H_L2SVC]
'l2_service_cycles'
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np


class HwContext(NamedTuple):
    """What an accessor reads: the preset (and its parts), the launch's occupancy, the
    scheduling policy and the L1 bytes left by the launch's shared-memory carveout."""

    hw: object
    sm: object
    l1: object
    l2: object
    dram: object
    occ: object
    policy: str
    l1_bytes: int


def _ii(warp_size, lanes):
    """Cycles a warp's instruction holds a pipe of ``lanes`` lanes (at least one)."""
    return max(1, math.ceil(warp_size / lanes))


HW_FIELDS = (
    ("n_sm", lambda c: c.hw.sm_count),
    ("n_sched", lambda c: c.sm.warp_schedulers),
    ("max_warps", lambda c: c.sm.max_warps),                          # warp slots per SM
    ("blocks_per_sm", lambda c: c.occ.blocks_per_sm),                 # resident blocks (occupancy)
    ("warps_per_block", lambda c: c.occ.warps_per_sm // c.occ.blocks_per_sm),
    ("sp_ii", lambda c: _ii(c.sm.warp_size, c.sm.fp32_lanes / c.sm.warp_schedulers)),
    ("sfu_ii", lambda c: _ii(c.sm.warp_size, c.sm.sfu_units)),
    ("ldst_ii", lambda c: _ii(c.sm.warp_size, c.sm.ldst_units)),
    ("fp32_latency", lambda c: c.sm.fp32_latency_cycles),
    ("sfu_latency", lambda c: c.sm.sfu_latency_cycles),
    ("shared_latency", lambda c: c.sm.shared_latency_cycles),
    ("shared_banks", lambda c: c.sm.shared_banks),
    ("shared_bank_bytes", lambda c: c.sm.shared_bank_bytes),
    ("l1_sets", lambda c: c.l1_bytes // (c.l1.sector_bytes * c.l1.ways)),
    ("l1_ways", lambda c: c.l1.ways),
    ("segment_bytes", lambda c: c.l1.sector_bytes),                   # a coalesced request
    ("l1_latency", lambda c: c.l1.latency_cycles),
    ("l1_bytes_per_cycle", lambda c: c.l1.bandwidth_bytes_per_cycle),
    ("mshrs", lambda c: c.l1.mshrs),
    ("l2_sets", lambda c: c.l2.size_bytes // (c.l2.sector_bytes * c.l2.ways)),
    ("l2_ways", lambda c: c.l2.ways),
    ("l2_sector_bytes", lambda c: c.l2.sector_bytes),
    ("l2_latency", lambda c: c.l2.latency_cycles),
    ("l2_banks", lambda c: c.l2.banks),
    ("l2_service_cycles", lambda c: c.l2.sector_bytes / (c.l2.bandwidth_bytes_per_cycle
                                                         / c.l2.banks)),   # a sector at a bank
    ("l2_partial_cycles", lambda c: c.l2.partial_write_cycles or 0.0),  # 0: a sector's
    ("dram_latency", lambda c: c.dram.latency_cycles),
    ("dram_channels", lambda c: c.dram.channels),
    ("dram_service_cycles", lambda c: c.l2.sector_bytes / (c.dram.bandwidth_bytes_per_s
                                                           * c.dram.sustained_fraction
                                                           / c.hw.clock_hz / c.dram.channels)),
    # loaded latency: a DRAM access waits dram_queue_cycles x u / (1 - u) more, u the
    # DRAM's utilisation (memory.dram_wait)
    ("dram_queue_cycles", lambda c: c.dram.queue_cycles),
    ("block_launch_cycles", lambda c: c.sm.block_launch_cycles),      # an SM's dispatcher rate
    ("gto", lambda c: 1.0 if c.policy == "gto" else 0.0),              # 1 GTO, 0 LRR
    ("issue_interval", lambda c: c.sm.issue_interval_cycles),
    ("l2_sectors_per_line", lambda c: c.l2.line_bytes // c.l2.sector_bytes),
    ("block_start_cycles", lambda c: c.sm.block_start_cycles),
    # integer lanes of their own (Volta on): a pipe of their own; else 0: the FP32 pipe's
    ("int_ii", lambda c: _ii(c.sm.warp_size, c.sm.int32_lanes / c.sm.warp_schedulers)
     if c.sm.int32_lanes else 0),
    # FP64 lanes of their own: a pipe of their own; else 0: the FP32 pipe's
    ("fp64_ii", lambda c: _ii(c.sm.warp_size, c.sm.fp64_lanes / c.sm.warp_schedulers)
     if c.sm.fp64_lanes else 0),
    ("l2_hashed", lambda c: float(c.l2.hashed_banks)),                 # 1: hashed bank owners
    # sampled mode's slices of SMs: the share of missed sectors the slice fetches itself
    # (the rest the whole GPU's other SMs brought into the L2 first); 1 for the whole GPU
    ("l2_owned_fraction", lambda c: 1.0),
    # an L1 that serves a request's scattered lines one tag at a time: cycles per line
    ("l1_line_cycles", lambda c: 1.0 / c.l1.lines_per_cycle if c.l1.lines_per_cycle else 0.0),
    ("l1_partial_line_cycles", lambda c: 1.0 / c.l1.partial_lines_per_cycle
     if c.l1.partial_lines_per_cycle else 0.0),
    ("l1_line_bytes", lambda c: c.l1.line_bytes),
    ("l1_hashed", lambda c: float(c.l1.hashed_sets)),                  # 1: hashed L1 sets
    # the first L2 sector of lines earlier launches left (engine.prior_base); -1: none
    ("l2_prior_base", lambda c: -1.0),
    # the L2's atomic units (``atomic_figures``; memory.l2_atomic): an atomic's round trip
    # less its service, a line's unit per warp request (add; CAS or exchange) and per
    # further pass (a lane on a word already served)
    ("atomic_latency", lambda c: atomic_figures(c.hw)[0]),
    ("atomic_cycles", lambda c: atomic_figures(c.hw)[1]),
    ("atomic_cas_cycles", lambda c: atomic_figures(c.hw)[2]),
    ("atomic_lane_cycles", lambda c: atomic_figures(c.hw)[3]),
    # sampled mode's slices of SMs: a request to a line that several blocks share stands
    # for this many of the whole GPU's (1 / the slice's share); 1 for the whole GPU
    ("atomic_share_scale", lambda c: 1.0),
)

HW_NAMES = tuple(name for name, _ in HW_FIELDS)
H = {name: i for i, name in enumerate(HW_NAMES)}
N_HW = len(HW_FIELDS)

# the indices as module-level ints (numba reads global ints as compile-time constants)
H_NSM = H["n_sm"]
H_NSCHED = H["n_sched"]
H_MAXW = H["max_warps"]
H_BPS = H["blocks_per_sm"]
H_WPB = H["warps_per_block"]
H_SPII = H["sp_ii"]
H_SFUII = H["sfu_ii"]
H_LDSTII = H["ldst_ii"]
H_FPLAT = H["fp32_latency"]
H_SFULAT = H["sfu_latency"]
H_SHLAT = H["shared_latency"]
H_BANKS = H["shared_banks"]
H_BANKB = H["shared_bank_bytes"]
H_L1SETS = H["l1_sets"]
H_L1WAYS = H["l1_ways"]
H_SEG = H["segment_bytes"]
H_L1LAT = H["l1_latency"]
H_L1BW = H["l1_bytes_per_cycle"]
H_MSHR = H["mshrs"]
H_L2SETS = H["l2_sets"]
H_L2WAYS = H["l2_ways"]
H_L2SEC = H["l2_sector_bytes"]
H_L2LAT = H["l2_latency"]
H_L2BANKS = H["l2_banks"]
H_L2SVC = H["l2_service_cycles"]
H_L2PART = H["l2_partial_cycles"]
H_DLAT = H["dram_latency"]
H_DCH = H["dram_channels"]
H_DSVC = H["dram_service_cycles"]
H_DQ = H["dram_queue_cycles"]
H_LAUNCH = H["block_launch_cycles"]
H_GTO = H["gto"]
H_ISSUE = H["issue_interval"]
H_L2LINE = H["l2_sectors_per_line"]
H_BSTART = H["block_start_cycles"]
H_INTII = H["int_ii"]
H_FP64II = H["fp64_ii"]
H_L2HASH = H["l2_hashed"]
H_L2OWN = H["l2_owned_fraction"]
H_L1LINEC = H["l1_line_cycles"]
H_L1PLINEC = H["l1_partial_line_cycles"]
H_L1LINEB = H["l1_line_bytes"]
H_L1HASH = H["l1_hashed"]
H_L2PRIOR = H["l2_prior_base"]
H_ATOMLAT = H["atomic_latency"]
H_ATOMC = H["atomic_cycles"]
H_ACASC = H["atomic_cas_cycles"]
H_ALANEC = H["atomic_lane_cycles"]
H_ATOMSCALE = H["atomic_share_scale"]

_named = sorted(v for k, v in list(globals().items()) if k.startswith("H_"))
if _named != list(range(N_HW)):             # every field has exactly one H_ index
    raise ImportError(f"hwvec: H_* indices {_named} do not cover the {N_HW} fields")
del _named


def atomic_figures(hw) -> tuple:
    """(round trip less service, a warp request's service (add), a CAS's or an
    exchange's, a further pass's, the requests a line queues in order: 0 for no bound), in
    cycles, of preset ``hw``'s L2 atomics (the ``atomic_*`` fields: the atomics and
    atomic_trace suites). A preset without them takes the H100's unit figures in cycles
    and its round trip beyond the H100's L2 latency added to its own L2 latency; its queue
    is its own where it gives one, else the H100's."""
    import hwmodels
    l2, h100 = hw.l2, hwmodels.get("h100-sxm").l2
    if l2.atomic_latency_cycles is not None:
        src, lat = l2, l2.atomic_latency_cycles
    else:
        src, lat = h100, h100.atomic_latency_cycles - h100.latency_cycles + l2.latency_cycles
    queue = l2.atomic_queue_requests or h100.atomic_queue_requests or 0
    return (float(lat), float(src.atomic_cycles), float(src.atomic_cas_cycles),
            float(src.atomic_lane_cycles), int(queue))


def l1_capacity(hw, occ, smem_per_block: int = 0) -> int:
    """The L1's bytes for a launch: on a unified L1 + shared array, what the smallest
    carveout holding the resident blocks' shared memory leaves (the driver's choice when
    the kernel states no preference)."""
    need = occ.blocks_per_sm * occ.shared_bytes_per_block if smem_per_block else 0
    return hw.sm.l1_bytes(need)


def hw_vector(hw, occ, policy: str, smem_per_block: int = 0) -> np.ndarray:
    """The preset and the launch's occupancy as the core's float vector (``HW_FIELDS``)."""
    l1, l2 = hw.sm.l1, hw.l2
    if l1.sector_bytes < l2.sector_bytes:
        raise ValueError(f"{hw.name}: sm.l1.sector_bytes ({l1.sector_bytes}) below "
                         f"l2.sector_bytes ({l2.sector_bytes}) is not modelled")
    c = HwContext(hw, hw.sm, l1, l2, hw.dram, occ, policy, l1_capacity(hw, occ, smem_per_block))
    h = np.zeros(N_HW)
    for i, (_, get) in enumerate(HW_FIELDS):
        h[i] = get(c)
    return h


def describe(h) -> dict:
    """{field name: value} of a hardware vector (for reading one, e.g. in a test)."""
    return {name: float(h[i]) for i, name in enumerate(HW_NAMES)}

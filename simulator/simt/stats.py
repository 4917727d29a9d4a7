"""What the SIMT core counts while it runs: one name table, two faces.

Inside numba the counts are one float64 vector (``core.run`` returns it); outside it they
are a :class:`LaunchStats`, built from the vector by :meth:`LaunchStats.from_vector`.
The dataclass's fields are the table: their order is the vector's, and the ``S_*``
indices the numba code uses are generated from it (``S_INSTR == S["warp_instructions"]``
and so on), so a count is added in one place.

>>> N_STATS == len(STAT_NAMES) and STAT_NAMES[S_L2HIT]
'l2_hits'
"""
from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class LaunchStats:
    """One launch's counts (sampled mode: scaled by the work ratio to stand for the whole
    launch, every field alike -- so there ``end_cycle`` and ``done_blocks`` are not the
    launch's; its cycles are ``Launch.cycles``)."""

    warp_instructions: float        # warp instructions issued
    flops: float                    # FLOPs the active lanes executed
    l1_hits: float                  # global-load segments found in the L1
    l1_misses: float
    l2_hits: float                  # L2 sector reads that hit
    l2_misses: float                # L2 sector reads that went to DRAM
    l1_bytes: float                 # global-load segment bytes through the L1
    l2_read_bytes: float
    l2_write_bytes: float
    dram_read_bytes: float
    dram_write_bytes: float         # write-backs of dirty victims (the final flush is not here)
    shared_bytes: float             # shared-memory bytes of the active lanes
    shared_conflict_passes: float   # bank-conflict passes beyond the first
    global_load_segments: float
    global_store_segments: float
    end_cycle: float                # the cycle the run ended
    done_blocks: float              # blocks finished (skipped ones included)
    sp_instructions: float          # FP32 / integer pipe instructions
    sfu_instructions: float
    ldst_instructions: float
    cycles_visited: float           # cycles the main loop stopped at (the rest it skipped)
    scheduler_looks: float          # times a scheduler was asked to pick a warp
    l2_first_touches: float         # sampled slices: L2 read misses to sectors never held before
    dram_prior_write_bytes: float   # of dram_write_bytes: lines earlier launches left dirty
    read_victim_write_bytes: float  # of dram_write_bytes: victims of reads' allocations
    thread_instructions: float      # active lanes of the warp instructions issued, summed
    atomic_requests: float          # global atomics' warp requests (``isa.ATOMICS``)
    atomic_unit_cycles: float       # the cycles they held their lines' atomic units, summed

    @classmethod
    def from_vector(cls, st) -> LaunchStats:
        """The counts of ``core.run``'s statistics vector (``N_STATS`` floats)."""
        if len(st) != N_STATS:
            raise ValueError(f"statistics vector of {len(st)} entries; expected {N_STATS}")
        return cls(*(float(v) for v in st))

    def bytes_by_level(self) -> dict:
        """Bytes moved at each level: l1 (global-load segments), shared, l2 (reads and
        writes), dram (reads and write-backs, without the final flush)."""
        return {"l1": self.l1_bytes, "shared": self.shared_bytes,
                "l2": self.l2_read_bytes + self.l2_write_bytes,
                "dram": self.dram_read_bytes + self.dram_write_bytes}

    def hit_rates(self) -> dict:
        return hit_rates(self.l1_hits, self.l1_misses, self.l2_hits, self.l2_misses)


def hit_rates(l1_hits, l1_misses, l2_hits, l2_misses) -> dict:
    """{"l1": global-load segments that hit the L1, "l2": L2 sector reads that hit},
    each ``None`` where there were none."""
    l1 = l1_hits + l1_misses
    l2 = l2_hits + l2_misses
    return {"l1": l1_hits / l1 if l1 else None, "l2": l2_hits / l2 if l2 else None}


# Per-site accounting (``engine.LaunchResult.sites``, a float64 row per site of the
# program: a template's row, a trace program's ``sites`` entry), over every issue of the
# blocks a run simulated:
#   issued          warp instructions issued
#   threads         their active threads, summed (a trace event's: its mask's popcount, or
#                   its memory lanes with an address)
#   memory ... not_selected   cycles the issuing warp waited for it, per ``core.WARP_CAUSES``
#                   (``core.stall_split``): each issue ends a wait that began at the warp's
#                   previous issue's end (issue interval) or its start
#   shared_passes   shared-memory passes (1 + its bank-conflict passes beyond the first)
#   l1_bytes, l2_bytes, dram_bytes   what its global accesses added to the launch's counts:
#                   l1_bytes (global-load segments), l2_read_bytes + l2_write_bytes,
#                   dram_read_bytes + dram_write_bytes (the write-backs of the victims its
#                   allocations evicted included; the final flush is no instruction's)
SITE_COLUMNS = ("issued", "threads", "memory", "dependency", "pipe", "mshr", "barrier",
                "not_selected", "shared_passes", "l1_bytes", "l2_bytes", "dram_bytes")
(C_ISSUED, C_THREADS, C_MEMORY, C_DEPENDENCY, C_PIPE, C_MSHR, C_BARRIER, C_NOT_SELECTED,
 C_SHARED_PASSES, C_L1B, C_L2B, C_DRAMB) = range(len(SITE_COLUMNS))
N_SITE_COLUMNS = len(SITE_COLUMNS)

STAT_NAMES = tuple(f.name for f in fields(LaunchStats))
S = {name: i for i, name in enumerate(STAT_NAMES)}
N_STATS = len(STAT_NAMES)

# the indices as module-level ints (numba reads global ints as compile-time constants)
S_INSTR = S["warp_instructions"]
S_FLOPS = S["flops"]
S_L1HIT = S["l1_hits"]
S_L1MISS = S["l1_misses"]
S_L2HIT = S["l2_hits"]
S_L2MISS = S["l2_misses"]
S_L1B = S["l1_bytes"]
S_L2RB = S["l2_read_bytes"]
S_L2WB = S["l2_write_bytes"]
S_DRB = S["dram_read_bytes"]
S_DWB = S["dram_write_bytes"]
S_SHB = S["shared_bytes"]
S_CONFLICT = S["shared_conflict_passes"]
S_THREADS = S["thread_instructions"]
S_GLD = S["global_load_segments"]
S_GST = S["global_store_segments"]
S_END = S["end_cycle"]
S_DONE_BLOCKS = S["done_blocks"]
S_SP = S["sp_instructions"]
S_SFU = S["sfu_instructions"]
S_LDST = S["ldst_instructions"]
S_CYCLES_VISITED = S["cycles_visited"]
S_LOOKS = S["scheduler_looks"]
S_FIRST = S["l2_first_touches"]
S_DWBP = S["dram_prior_write_bytes"]
S_RWB = S["read_victim_write_bytes"]
S_ATOMS = S["atomic_requests"]
S_ATOMSVC = S["atomic_unit_cycles"]

_named = sorted(v for k, v in list(globals().items()) if k.startswith("S_"))
if _named != list(range(N_STATS)):          # every field has exactly one S_ index
    raise ImportError(f"stats: S_* indices {_named} do not cover the {N_STATS} fields")
del _named

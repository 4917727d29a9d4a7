"""Plausible ranges of every numeric hardware field, each with its reason, and the rules
for text fields (names printable, compute capabilities real).

Every hardware dataclass of :mod:`hwmodels.schema` calls :func:`check` from its
``__post_init__``, so a preset, a TOML file, a SCALE-Sim .cfg and a ``--set`` override
all meet the same limits when they are loaded, whatever the command. The ranges are wide
(orders of magnitude beyond any chip here) and only catch what cannot be hardware: a unit
slip (``clock_hz = 1.98`` meant as GHz), an overflow, a value no model can run.
Bounds are inclusive; the schema's own checks (integer, > 0) come first.
"""
from __future__ import annotations

import dataclasses
import re

from .units import show

#: PEs along one side of a systolic array (a what-if may go far past any chip; the
#: systolic engine checks ``--array`` against the same number)
MAX_ARRAY_SIDE = 2**20

# reasons shared by several fields
_CLOCK = (1e6, 1e11, "a clock between 1 MHz and 100 GHz; chips here run at 0.5 to 2.5 GHz, "
          "and a value outside is a unit slip")
_SECONDS = (0.0, 1.0, "at most a second; real costs are microseconds")
_CYCLES = (0, 10**6, "at most a million cycles (1 ms at 1 GHz); real latencies are tens to "
           "hundreds of cycles")
_COUNT = (1, 2**20, "at most 2**20; real counts are below a few thousand")
_BANKS = (1, 4096, "at most 4096; real parts have up to about a hundred")
_RATE = (1e-6, 1e6, "at most a million per unit per cycle; an H100 SM does 8,192 int8 op")
_PER_CYCLE = (1e-6, 1e6, "at most a million per cycle (1 PB/s at 1 GHz)")
_LINK = (1e6, 1e13, "1 MB/s to 10 TB/s; PCIe Gen5 x16 gives about 64 GB/s")
_ON_CHIP = (1, 2**34, "at most 16 GiB; the largest on-chip memories are hundreds of MiB")
_SM_BYTES = (0, 2**30, "at most 1 GiB per SM; real SMs have up to 256 KiB")
_WORDS_PER_CYCLE = (1, 2**20, "at most 2**20 words per cycle")

#: "Class.field" -> (lowest, highest, why); every int or float field of the schema has one
LIMITS: dict[str, tuple] = {
    **{f"PeakRates.{q}_flop_per_cycle": _RATE
       for q in ("fp64", "fp32", "tf32", "fp16", "bf16", "int8")},
    "Cache.size_bytes": _ON_CHIP,
    "Cache.line_bytes": (1, 4096, "a power of two up to a 4 KiB page"),
    "Cache.sector_bytes": (1, 4096, "a power of two up to a 4 KiB page"),
    "Cache.ways": (1, 2**20, "at most 2**20 ways (a fully associative cache has "
                            "size / line ways)"),
    "Cache.banks": _BANKS,
    "Cache.latency_cycles": _CYCLES,
    "Cache.bandwidth_bytes_per_cycle": _PER_CYCLE,
    "Cache.mshrs": _COUNT,
    "Cache.lines_per_cycle": (1e-6, 1e4, "at most 10,000 lines a cycle"),
    "Cache.partial_lines_per_cycle": (1e-6, 1e4, "at most 10,000 lines a cycle"),
    "Cache.atomic_queue_requests": (1, 4096, "1 to 4,096 requests"),
    **{f"Cache.{n}": _CYCLES for n in ("atomic_latency_cycles", "atomic_cycles",
                                        "atomic_cas_cycles", "atomic_lane_cycles",
                                        "partial_write_cycles")},
    "DRAM.size_bytes": (2**20, 2**50, "1 MiB to 1 PiB"),
    "DRAM.bandwidth_bytes_per_s": (1e6, 1e16, "1 MB/s to 10 PB/s; HBM3e gives about 5 TB/s "
                                              "and a SCALE-Sim CALC array 1 PB/s (unlimited)"),
    "DRAM.latency_cycles": _CYCLES,
    "DRAM.channels": _BANKS,
    "DRAM.sustained_fraction": (0.01, 1.0, "between 1% and 100% of the peak"),
    "DRAM.queue_cycles": _CYCLES,
    "HostLink.pinned_bandwidth_bytes_per_s": _LINK,
    "HostLink.pageable_bandwidth_bytes_per_s": _LINK,
    "HostLink.latency_s": _SECONDS,
    "SM.warp_size": (1, 1024, "at most 1024 threads a warp (NVIDIA: 32, AMD: 64)"),
    **{f"SM.{n}": _COUNT for n in (
        "max_threads", "max_warps", "max_blocks", "max_threads_per_block", "warp_schedulers",
        "issue_interval_cycles", "fp32_lanes", "sfu_units", "ldst_units")},
    **{f"SM.{n}": (0, 2**20, _COUNT[2]) for n in ("int32_lanes", "fp64_lanes")},
    **{f"SM.{n}": (1, 2**24, "at most 2**24 registers; an H100 SM has 65,536")
       for n in ("registers", "register_alloc_unit", "max_registers_per_thread",
                 "max_registers_per_block")},
    **{f"SM.{n}": _SM_BYTES for n in (
        "shared_bytes", "max_shared_per_block_bytes", "shared_alloc_unit_bytes",
        "shared_reserved_per_block_bytes", "l1_shared_bytes")},
    "SM.shared_carveouts_bytes": _SM_BYTES,
    "SM.shared_banks": _BANKS,
    "SM.shared_bank_bytes": (1, 1024, "at most 1 KiB per bank per cycle; real banks give 4 B"),
    **{f"SM.{n}": _CYCLES for n in (
        "shared_latency_cycles", "fp32_latency_cycles", "sfu_latency_cycles",
        "block_launch_cycles", "block_start_cycles")},
    "SIMTGPU.sm_count": _COUNT,
    "SIMTGPU.clock_hz": _CLOCK,
    "SIMTGPU.kernel_launch_s": _SECONDS,
    "MulticoreCPU.cores": _COUNT,
    "MulticoreCPU.clock_hz": _CLOCK,
    "Scratchpad.size_bytes": _ON_CHIP,
    **{f"ScaleSimInterface.{o}_bandwidth_words_per_cycle": _WORDS_PER_CYCLE
       for o in ("ifmap", "filter", "ofmap")},
    "SystolicArray.rows": (1, MAX_ARRAY_SIDE, f"at most {MAX_ARRAY_SIDE:,} PEs a side"),
    "SystolicArray.cols": (1, MAX_ARRAY_SIDE, f"at most {MAX_ARRAY_SIDE:,} PEs a side"),
    "SystolicArray.clock_hz": _CLOCK,
    "SystolicArray.word_bytes": (1, 16, "at most 16 bytes (a 128-bit word)"),
    "SystolicArray.weight_fifo_tiles": (1, 1024, "at most 1024 tiles; the TPU v1 holds 4"),
}

MAX_NAME_CHARS = 200   # a name heads tables and file names; longer is not a name

#: NVIDIA's compute capabilities run from 1.0 (2006) to 12.x (2025): MAJOR 1 to 19 leaves
#: room for future parts, MINOR is one digit
_CC = re.compile(r"(1[0-9]|[1-9])\.[0-9]")


def _fmt(x) -> str:
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:g}"


def _text(where: str, v: str, what: str) -> None:
    if not v.isprintable():
        bad = next(c for c in v if not c.isprintable())
        raise ValueError(f"{where} = {show(v)}: must be printable text; it holds {show(bad)} "
                         f"(U+{ord(bad):04X}), {what}")


def check(obj) -> None:
    """Check ``obj``'s (a hardware dataclass) numeric fields against :data:`LIMITS` and
    its text fields: printable (no control characters, which a table or a file written
    later would carry raw), non-empty (but ``description``), ``name`` at most ``MAX_NAME_CHARS`` characters,
    ``compute_capability`` MAJOR.MINOR in ASCII digits. ValueError naming
    ``Class.field``, the value and what is allowed."""
    cls = type(obj).__name__
    for f in dataclasses.fields(obj):
        v = getattr(obj, f.name)
        where = f"{cls}.{f.name}"
        if isinstance(v, str):
            if f.name != "description" and not v.strip():     # (a description may be left out)
                raise ValueError(f"{where} = {show(v)}: must not be empty")
            if f.name == "name":
                if len(v) > MAX_NAME_CHARS:
                    raise ValueError(f"{where}: {len(v)} characters; at most {MAX_NAME_CHARS}")
            _text(where, v, "a control character")
            if f.name == "compute_capability" and not _CC.fullmatch(v):
                raise ValueError(f"{where} = {show(v)}: expected MAJOR.MINOR in ASCII digits, "
                                 "MAJOR 1 to 19 and MINOR one digit, such as '2.0' or '9.0' "
                                 "(NVIDIA's run from 1.0 to 12.x)")
            continue
        limit = LIMITS.get(where)
        if limit is None or v is None or isinstance(v, bool):
            continue
        lo, hi, why = limit
        for x in (v if isinstance(v, tuple) else (v,)):
            if not lo <= x <= hi:
                raise ValueError(f"{where} = {show(v)}: must be between {_fmt(lo)} and {_fmt(hi)} "
                                 f"({why})")

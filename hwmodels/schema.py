"""Hardware as data: frozen dataclasses with SI units in their field names.

Each parameter is declared once with its type, default (where one makes sense) and a
one-line doc (``doc(cls, name)`` reads it). Presets live one module per family and
override only what differs (``dataclasses.replace``). Every ``__post_init__``
validates its fields and raises ``ValueError`` naming the field, the value and what is
allowed.

Three device families share one small protocol used by the analyses:

* ``peak_flop_per_s(precision)`` -- peak arithmetic rate for a precision (FLOP/s, or
  integer op/s for ``int8``; a multiply-accumulate counts 2);
* ``memory_levels()`` -- the memory hierarchy from DRAM inwards, each level with its
  bandwidth and the on-chip capacity closer to the compute than it (what the
  data-movement lower bounds take as fast-memory size);
* ``host_link`` -- the host-to-device link, or ``None`` for a host CPU.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from . import limits
from .units import show

#: precisions the presets may state peaks for (storage dtype names plus tf32)
PRECISIONS = ("fp64", "fp32", "tf32", "fp16", "bf16", "int8")


def p(*args, doc: str, only: str | None = None, **kw):
    """Declare a parameter: ``p(default, doc="...")`` or ``p(doc="...")`` (required);
    ``only="l2"``: a field of a shared schema that means something only where the
    parent's field is named so (the Cache's atomics figures: the L2's, not the L1's)."""
    if args:
        kw["default"] = args[0]
    return field(metadata={"doc": doc, "only": only}, **kw)


def doc(cls, name: str) -> str:
    """The one-line doc of field ``name`` of dataclass ``cls``."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            return f.metadata.get("doc", "")
    raise KeyError(name)


def _where(obj, name: str) -> str:
    return f"{type(obj).__name__}.{name}"


def _positive(obj, *names: str, allow_zero: bool = False) -> None:
    for n in names:
        v = getattr(obj, n)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
            raise ValueError(f"{_where(obj, n)} = {show(v)}: must be a number")
        if allow_zero and v < 0:
            raise ValueError(f"{_where(obj, n)} = {show(v)}: must be >= 0")
        if not allow_zero and v <= 0:
            raise ValueError(f"{_where(obj, n)} = {show(v)}: must be > 0")


def _integer(obj, *names: str) -> None:
    for n in names:
        v = getattr(obj, n)
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{_where(obj, n)} = {show(v)}: must be an integer")


def _power_of_two(obj, *names: str) -> None:
    for n in names:
        v = getattr(obj, n)
        if v <= 0 or v & (v - 1):
            raise ValueError(f"{_where(obj, n)} = {show(v)}: must be a power of two")


@dataclass(frozen=True, kw_only=True)
class PeakRates:
    """Arithmetic throughput per cycle of one compute unit, per precision.

    A multiply-accumulate counts as 2. ``None`` means the unit has no arithmetic of
    that precision (asking for it is an error, not a silent fallback).
    """

    fp64_flop_per_cycle: float | None = p(None, doc="FP64 FLOP per cycle per unit")
    fp32_flop_per_cycle: float | None = p(None, doc="FP32 FLOP per cycle per unit")
    tf32_flop_per_cycle: float | None = p(None, doc="TF32 (matrix) FLOP per cycle per unit")
    fp16_flop_per_cycle: float | None = p(None, doc="FP16 FLOP per cycle per unit")
    bf16_flop_per_cycle: float | None = p(None, doc="BF16 FLOP per cycle per unit")
    int8_flop_per_cycle: float | None = p(None, doc="INT8 op per cycle per unit (MAC = 2)")

    def __post_init__(self):
        for prec in PRECISIONS:
            name = f"{prec}_flop_per_cycle"
            if getattr(self, name) is not None:
                _positive(self, name)
        limits.check(self)

    def get(self, precision: str) -> float | None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision {show(precision)} is unknown; allowed: {', '.join(PRECISIONS)}")
        return getattr(self, f"{precision}_flop_per_cycle")

    def supported(self) -> tuple[str, ...]:
        return tuple(q for q in PRECISIONS if self.get(q) is not None)


@dataclass(frozen=True, kw_only=True)
class Cache:
    """A cache level (or, with ways=0, a plain scratchpad)."""

    size_bytes: int = p(doc="capacity in bytes")
    line_bytes: int = p(128, doc="line (block) size in bytes")
    sector_bytes: int = p(128, doc="fill/transfer granularity within a line, bytes")
    ways: int = p(4, doc="associativity")
    banks: int = p(1, doc="independent banks (L2 slices)")
    latency_cycles: int = p(doc="hit latency in core cycles")
    bandwidth_bytes_per_cycle: float = p(doc="peak bytes per core cycle (per SM for L1, total for L2)")
    mshrs: int = p(32, doc="miss status holding registers (outstanding misses)")
    hashed_banks: bool = p(False, doc="lines go to banks (L2: DRAM channels) by address hash")
    hashed_sets: bool = p(False, doc="lines go to sets by address hash (the index XOR the bits above)")
    lines_per_cycle: float | None = p(None, doc="lines a cycle to a scattered request (-: bytes)")
    partial_lines_per_cycle: float | None = p(
        None, doc="lines a cycle to a store writing part of a sector of each (-: lines_per_cycle)",
        only="l1")
    # L2 atomics (roofsim measure atomics; scripts/fit_atomics.py): all four or none
    atomic_latency_cycles: float | None = p(
        None, doc="L2: an atomic's round trip, less its service", only="l2")
    atomic_cycles: float | None = p(None, doc="L2: a line's atomic unit per warp request (add)", only="l2")
    atomic_cas_cycles: float | None = p(None, doc="L2: the same for a compare-and-swap", only="l2")
    atomic_lane_cycles: float | None = p(
        None, doc="L2: more per further lane on one word; a lone lane's request", only="l2")
    # (roofsim measure atomic_trace; scripts/fit_atomic_queue.py)
    atomic_queue_requests: int | None = p(
        None, doc="L2: requests a line's atomic unit queues in arrival order (-: all)", only="l2")
    # (roofsim measure lines, its stores): -: a part-sector write costs a sector's service
    partial_write_cycles: float | None = p(
        None, doc="L2: a slice's least cycles for a line write with a part-written sector",
        only="l2")

    def __post_init__(self):
        _integer(self, "size_bytes", "line_bytes", "sector_bytes", "ways", "banks",
                 "latency_cycles", "mshrs")
        if self.lines_per_cycle is not None:
            _positive(self, "lines_per_cycle")
        if self.partial_write_cycles is not None:
            _positive(self, "partial_write_cycles")
        if self.partial_lines_per_cycle is not None:
            _positive(self, "partial_lines_per_cycle")
        if self.atomic_queue_requests is not None:
            _integer(self, "atomic_queue_requests")
            _positive(self, "atomic_queue_requests")
        atomics = ("atomic_latency_cycles", "atomic_cycles", "atomic_cas_cycles",
                   "atomic_lane_cycles")
        given = [n for n in atomics if getattr(self, n) is not None]
        if given and len(given) < len(atomics):
            missing = [n for n in atomics if n not in given]
            raise ValueError(f"Cache.{missing[0]}: not given, while {given[0]} is; the "
                             f"atomics figures come together ({', '.join(atomics)})")
        if given:
            _positive(self, *atomics)
        _positive(self, "size_bytes", "line_bytes", "sector_bytes", "ways", "banks",
                  "bandwidth_bytes_per_cycle", "mshrs")
        _positive(self, "latency_cycles", allow_zero=True)
        _power_of_two(self, "line_bytes", "sector_bytes")
        if self.sector_bytes > self.line_bytes:
            raise ValueError(f"Cache.sector_bytes = {self.sector_bytes}: must be <= line_bytes "
                             f"({self.line_bytes})")
        if self.size_bytes % (self.line_bytes * self.ways):
            raise ValueError(f"Cache.size_bytes = {self.size_bytes}: must be a multiple of "
                             f"line_bytes x ways = {self.line_bytes * self.ways}")
        limits.check(self)

    @property
    def sets(self) -> int:
        return self.size_bytes // (self.line_bytes * self.ways)


@dataclass(frozen=True, kw_only=True)
class DRAM:
    """Off-chip memory."""

    kind: str = p(doc="technology, e.g. GDDR5, HBM3")
    size_bytes: int = p(doc="capacity in bytes")
    bandwidth_bytes_per_s: float = p(doc="peak bandwidth in bytes per second")
    latency_cycles: int = p(doc="unloaded access latency in core cycles")
    channels: int = p(1, doc="independent channels (memory partitions)")
    # the SIMT engine serves DRAM at peak x sustained_fraction; bounds use the peak
    sustained_fraction: float = p(1.0, doc="share of the peak the DRAM serves at full load")
    queue_cycles: float = p(0.0, doc="loaded latency: at utilisation u of the sustained "
                                     "bandwidth an access waits queue_cycles x u/(1-u) more "
                                     "(0: latency independent of load)")

    def __post_init__(self):
        _integer(self, "size_bytes", "latency_cycles", "channels")
        _positive(self, "size_bytes", "bandwidth_bytes_per_s", "channels", "sustained_fraction")
        _positive(self, "latency_cycles", "queue_cycles", allow_zero=True)
        if self.sustained_fraction > 1:
            raise ValueError(f"DRAM.sustained_fraction = {self.sustained_fraction}: must be <= 1")
        limits.check(self)


@dataclass(frozen=True, kw_only=True)
class HostLink:
    """The link that carries inputs from host memory to the device."""

    kind: str = p(doc="e.g. PCIe Gen3 x16")
    pinned_bandwidth_bytes_per_s: float = p(doc="host-to-device bandwidth from pinned memory")
    pageable_bandwidth_bytes_per_s: float = p(doc="host-to-device bandwidth from pageable memory")
    latency_s: float = p(10e-6, doc="fixed cost per transfer, seconds")

    def __post_init__(self):
        _positive(self, "pinned_bandwidth_bytes_per_s", "pageable_bandwidth_bytes_per_s")
        _positive(self, "latency_s", allow_zero=True)
        limits.check(self)


@dataclass(frozen=True)
class MemoryLevel:
    """One level of a hierarchical roofline."""

    name: str
    bandwidth_bytes_per_s: float
    inner_capacity_bytes: int  # on-chip storage closer to compute than this level (total)
    private_units: int = 1     # that storage is split into this many private parts (SMs, cores)


@dataclass(frozen=True, kw_only=True)
class SM:
    """A streaming multiprocessor (the SIMT core)."""

    warp_size: int = p(32, doc="threads per warp")
    max_threads: int = p(doc="resident threads per SM")
    max_warps: int = p(doc="resident warps per SM")
    max_blocks: int = p(doc="resident blocks per SM")
    max_threads_per_block: int = p(1024, doc="threads per block limit")
    registers: int = p(doc="32-bit registers per SM")
    register_alloc_unit: int = p(doc="registers are allocated per warp in units of this many")
    max_registers_per_thread: int = p(doc="registers per thread limit")
    max_registers_per_block: int = p(65536, doc="registers one block may hold")
    shared_bytes: int = p(doc="shared memory per SM (the configured carve-out)")
    max_shared_per_block_bytes: int = p(doc="shared memory one block may use")
    shared_alloc_unit_bytes: int = p(doc="shared memory allocation granularity per block")
    shared_reserved_per_block_bytes: int = p(0, doc="shared memory the system reserves per block")
    shared_banks: int = p(32, doc="shared memory banks")
    shared_bank_bytes: int = p(4, doc="bytes per bank per cycle")
    shared_latency_cycles: int = p(doc="shared memory load latency, cycles")
    warp_schedulers: int = p(doc="warp schedulers per SM")
    issue_interval_cycles: int = p(1, doc="cycles between two issues of one scheduler")
    fp32_lanes: int = p(doc="FP32 lanes (CUDA cores) per SM")
    int32_lanes: int = p(0, doc="INT32 lanes per SM; 0: the FP32 lanes do integers")
    fp64_lanes: int = p(doc="FP64 FMA lanes per SM")
    sfu_units: int = p(doc="special function units per SM")
    ldst_units: int = p(doc="load/store units per SM")
    fp32_latency_cycles: int = p(doc="dependent FP32 add/mul/FMA latency, cycles")
    sfu_latency_cycles: int = p(doc="special function latency, cycles")
    block_launch_cycles: int = p(doc="cycles between two block launches on one SM")
    block_start_cycles: int = p(0, doc="cycles from a block's launch to its first issue")
    l1: Cache = p(doc="L1 data cache")
    # a launch gets the smallest carveout that holds its resident blocks' shared memory
    # and the L1 the rest of the unified array (engine.l1_capacity)
    l1_shared_bytes: int = p(0, doc="unified L1 + shared array per SM; 0: a fixed L1")
    shared_carveouts_bytes: tuple[int, ...] = p(
        (), doc="shared carveouts of that array, bytes, ascending")
    tensor: PeakRates = p(PeakRates(), doc="matrix-unit throughput per SM per cycle")

    def _check_carveouts(self):
        c = self.shared_carveouts_bytes
        if isinstance(c, list):
            c = tuple(c)
            object.__setattr__(self, "shared_carveouts_bytes", c)
        what = (f"SM.shared_carveouts_bytes = {c!r}: must be a tuple of whole byte counts "
                f"in ascending order, e.g. (0, 8192, 16384)")
        if not isinstance(c, tuple) or any(isinstance(x, bool) or not isinstance(x, int) or x < 0
                                           for x in c):
            raise ValueError(what)
        if list(c) != sorted(set(c)):
            raise ValueError(what)
        if self.l1_shared_bytes and (not c or c[-1] < self.shared_bytes
                                     or c[-1] > self.l1_shared_bytes):
            raise ValueError(f"SM.shared_carveouts_bytes = {show(c)}: with a unified L1 + shared "
                             f"array (l1_shared_bytes = {self.l1_shared_bytes}) must be "
                             f"ascending bytes, the largest at least shared_bytes "
                             f"({self.shared_bytes}) and at most l1_shared_bytes "
                             f"({self.l1_shared_bytes})")

    def l1_bytes(self, shared_needed: int) -> int:
        """The L1's capacity when the resident blocks need ``shared_needed`` bytes of
        shared memory."""
        if not self.l1_shared_bytes:
            return self.l1.size_bytes
        carve = next(c for c in self.shared_carveouts_bytes if c >= shared_needed)
        return self.l1_shared_bytes - carve

    def __post_init__(self):
        ints = ("warp_size", "max_threads", "max_warps", "max_blocks", "max_threads_per_block",
                "registers", "register_alloc_unit", "max_registers_per_thread",
                "max_registers_per_block", "shared_bytes",
                "max_shared_per_block_bytes", "shared_alloc_unit_bytes", "shared_banks",
                "shared_bank_bytes", "shared_latency_cycles", "warp_schedulers", "fp32_lanes",
                "issue_interval_cycles",
                "fp64_lanes", "sfu_units", "ldst_units", "fp32_latency_cycles",
                "sfu_latency_cycles", "block_launch_cycles", "block_start_cycles",
                "shared_reserved_per_block_bytes", "int32_lanes", "l1_shared_bytes")
        optional = ("shared_reserved_per_block_bytes", "fp64_lanes", "block_launch_cycles",
                    "block_start_cycles", "int32_lanes", "l1_shared_bytes")
        _integer(self, *ints)
        _positive(self, *(n for n in ints if n not in optional))
        _positive(self, *optional, allow_zero=True)
        self._check_carveouts()
        if self.max_warps * self.warp_size != self.max_threads:
            raise ValueError(f"SM.max_warps = {self.max_warps}, warp_size = {self.warp_size}, "
                             f"max_threads = {self.max_threads}: max_warps x warp_size "
                             f"({self.max_warps * self.warp_size}) must equal max_threads; "
                             "change them together")
        if self.max_shared_per_block_bytes > self.shared_bytes:
            raise ValueError(f"SM.max_shared_per_block_bytes = {self.max_shared_per_block_bytes}: "
                             f"must be <= shared_bytes ({self.shared_bytes})")
        if self.max_threads_per_block > self.max_threads:
            raise ValueError(f"SM.max_threads_per_block = {self.max_threads_per_block}: must be "
                             f"<= max_threads ({self.max_threads})")
        limits.check(self)


class _Device:
    """What every hardware family shares: peaks from per-unit rates, on-chip capacity."""

    def peak_flop_per_s(self, precision: str) -> float:
        return _peak(self, self.peak_rates(), precision)

    def fastest_precision(self) -> str:
        """The precision with the highest peak (ties: the first in PRECISIONS)."""
        return max(self.peak_rates().supported(), key=self.peak_flop_per_s)

    @property
    def onchip_bytes(self) -> int:
        """All on-chip storage (what the DRAM-level data-movement bound takes as S)."""
        return self.memory_levels()[0].inner_capacity_bytes


@dataclass(frozen=True, kw_only=True)
class SIMTGPU(_Device):
    """A SIMT GPU: SMs, a shared L2, DRAM and a host link."""

    name: str = p(doc="preset name")
    description: str = p("", doc="one line saying what this is")
    compute_capability: str = p(doc="CUDA compute capability, e.g. '2.0', '9.0'")
    sm_count: int = p(doc="streaming multiprocessors")
    clock_hz: float = p(doc="SM clock used for every cycle count and peak")
    sm: SM = p(doc="the SM")
    l2: Cache = p(doc="the shared L2 cache")
    dram: DRAM = p(doc="device memory")
    host_link: HostLink | None = p(None, doc="host-to-device link")
    kernel_launch_s: float = p(0.0, doc="GPU-side cost of one kernel launch, seconds")

    family = "simt"

    def __post_init__(self):
        _integer(self, "sm_count")
        _positive(self, "sm_count", "clock_hz")
        if not isinstance(self.compute_capability, str):
            raise ValueError(f"SIMTGPU.compute_capability = {show(self.compute_capability)}: must "
                             "be a string such as '9.0'")
        _positive(self, "kernel_launch_s", allow_zero=True)
        for f in dataclasses.fields(Cache):
            v = getattr(self.sm.l1, f.name)
            if f.metadata.get("only") == "l2" and v is not None:
                raise ValueError(f"sm.l1.{f.name} = {show(v)}: an L2 figure (l2.{f.name}); "
                                 "the L1 takes none")
            v = getattr(self.l2, f.name)
            if f.metadata.get("only") == "l1" and v is not None:
                raise ValueError(f"l2.{f.name} = {show(v)}: an L1 figure (sm.l1.{f.name}); "
                                 "the L2 takes none")
        limits.check(self)

    @property
    def cc(self) -> tuple[int, int]:
        major, _, minor = self.compute_capability.partition(".")
        return int(major), int(minor)

    @property
    def compute_units(self) -> int:
        return self.sm_count

    def peak_rates(self) -> PeakRates:
        """Per-SM rates: FP32/FP64 from the lanes, the rest (and FP64 matrix) from ``sm.tensor``."""
        t = self.sm.tensor
        fp64 = max(2.0 * self.sm.fp64_lanes, t.fp64_flop_per_cycle or 0.0) or None
        return dataclasses.replace(t, fp32_flop_per_cycle=max(2.0 * self.sm.fp32_lanes,
                                                              t.fp32_flop_per_cycle or 0.0),
                                   fp64_flop_per_cycle=fp64)

    def memory_levels(self) -> tuple[MemoryLevel, ...]:
        regs = self.sm_count * self.sm.registers * 4
        # l1.size_bytes and shared_bytes are the two carve-outs of one SRAM array on
        # every preset here (Fermi to Hopper), so their sum is the on-chip capacity.
        l1_total = self.sm_count * (self.sm.l1.size_bytes + self.sm.shared_bytes)
        return (
            MemoryLevel("dram", self.dram.bandwidth_bytes_per_s, regs + l1_total + self.l2.size_bytes),
            # inside L2 and L1 the storage is private to each SM
            MemoryLevel("l2", self.l2.bandwidth_bytes_per_cycle * self.clock_hz, regs + l1_total,
                        self.sm_count),
            MemoryLevel("l1", self.sm.l1.bandwidth_bytes_per_cycle * self.sm_count * self.clock_hz,
                        regs, self.sm_count),
        )


@dataclass(frozen=True, kw_only=True)
class MulticoreCPU(_Device):
    """A host CPU, for roofline comparison (the TPU paper's Haswell)."""

    name: str = p(doc="preset name")
    description: str = p("", doc="one line saying what this is")
    cores: int = p(doc="physical cores")
    clock_hz: float = p(doc="core clock used for peaks")
    peak: PeakRates = p(doc="throughput per core per cycle")
    l1: Cache = p(doc="per-core L1 data cache")
    l2: Cache = p(doc="per-core L2 cache")
    l3: Cache = p(doc="shared last-level cache")
    dram: DRAM = p(doc="main memory")
    host_link: HostLink | None = p(None, doc="none: the CPU is the host")

    family = "cpu"

    def __post_init__(self):
        _integer(self, "cores")
        _positive(self, "cores", "clock_hz")
        limits.check(self)

    @property
    def compute_units(self) -> int:
        return self.cores

    def peak_rates(self) -> PeakRates:
        return self.peak

    def memory_levels(self) -> tuple[MemoryLevel, ...]:
        c = self.cores
        l1, l2 = c * self.l1.size_bytes, c * self.l2.size_bytes
        return (
            MemoryLevel("dram", self.dram.bandwidth_bytes_per_s, l1 + l2 + self.l3.size_bytes),
            MemoryLevel("l3", self.l3.bandwidth_bytes_per_cycle * self.clock_hz, l1 + l2, c),
            MemoryLevel("l2", c * self.l2.bandwidth_bytes_per_cycle * self.clock_hz, l1, c),
            # inside L1 only the vector registers: 16 x 32 B ymm per core (AVX2)
            MemoryLevel("l1", c * self.l1.bandwidth_bytes_per_cycle * self.clock_hz, c * 16 * 32, c),
        )


@dataclass(frozen=True, kw_only=True)
class Scratchpad:
    """An on-chip SRAM buffer of a systolic accelerator."""

    size_bytes: int = p(doc="capacity in bytes")
    double_buffered: bool = p(True, doc="split into two halves so fills overlap use")

    def __post_init__(self):
        _integer(self, "size_bytes")
        _positive(self, "size_bytes")
        limits.check(self)


@dataclass(frozen=True, kw_only=True)
class ScaleSimInterface:
    """SCALE-Sim 3.0.0's memory-interface settings, used by ``--mode scalesim``.

    ``CALC`` is SCALE-Sim's estimate-bandwidth mode (reads never stall); ``USER`` gives
    the DRAM-to-SRAM bandwidths in words per cycle (SCALE-Sim's word is one byte).
    """

    bandwidth_mode: str = p("CALC", doc="CALC (estimate bandwidth) or USER")
    ifmap_bandwidth_words_per_cycle: int = p(10, doc="USER: DRAM->ifmap SRAM words/cycle "
                                             "([layout] IfmapSRAMBankBandwidth)")
    filter_bandwidth_words_per_cycle: int = p(10, doc="USER: DRAM->filter SRAM words/cycle "
                                              "([layout] FilterSRAMBankBandwidth)")
    ofmap_bandwidth_words_per_cycle: int = p(10, doc="USER: ofmap SRAM->DRAM words/cycle "
                                             "(first value of Bandwidth)")

    def __post_init__(self):
        if self.bandwidth_mode not in ("CALC", "USER"):
            raise ValueError(f"ScaleSimInterface.bandwidth_mode = {show(self.bandwidth_mode)}: "
                             "allowed: CALC, USER")
        names = ("ifmap_bandwidth_words_per_cycle", "filter_bandwidth_words_per_cycle",
                 "ofmap_bandwidth_words_per_cycle")
        _integer(self, *names)
        _positive(self, *names)
        limits.check(self)


@dataclass(frozen=True, kw_only=True)
class SystolicArray(_Device):
    """A TPU-style systolic array with SRAM buffers for activations, weights and outputs.

    Buffers follow SCALE-Sim's three-way split: ``ifmap_sram`` (TPU v1: the unified
    buffer), ``filter_sram`` (the weight FIFO) and ``ofmap_sram`` (the accumulators).
    """

    name: str = p(doc="preset name")
    description: str = p("", doc="one line saying what this is")
    rows: int = p(doc="PE rows")
    cols: int = p(doc="PE columns")
    clock_hz: float = p(doc="array clock")
    peak: PeakRates = p(doc="throughput per PE per cycle (a MAC = 2)")
    word_bytes: int = p(doc="bytes per operand word held in the SRAMs")
    ifmap_sram: Scratchpad = p(doc="activation (input feature map) buffer")
    filter_sram: Scratchpad = p(doc="weight buffer")
    ofmap_sram: Scratchpad = p(doc="output / accumulator buffer")
    weight_fifo_tiles: int = p(4, doc="weight tiles the FIFO holds ahead of the array")
    activations_on_chip: bool = p(False, doc="activations stay in the ifmap/ofmap SRAMs between "
                                  "layers (TPU v1's unified buffer); DRAM then carries weights")
    dataflow: str = p("ws", doc="the dataflow the array runs unless told otherwise: os, ws or is")
    scalesim: ScaleSimInterface = p(ScaleSimInterface(),
                                    doc="SCALE-Sim memory-interface settings for --mode scalesim")
    dram: DRAM = p(doc="off-chip memory")
    host_link: HostLink | None = p(None, doc="host-to-device link")

    family = "systolic"

    def __post_init__(self):
        _integer(self, "rows", "cols", "word_bytes", "weight_fifo_tiles")
        _positive(self, "rows", "cols", "clock_hz", "word_bytes", "weight_fifo_tiles")
        if self.dataflow not in ("os", "ws", "is"):
            raise ValueError(f"SystolicArray.dataflow = {show(self.dataflow)}: allowed: os, ws, is")
        limits.check(self)
        self._check_srams()

    def _check_srams(self):
        """Each SRAM (each half, if double-buffered) holds what a fold of the whole array
        needs in the dataflow that needs least of it (the default mode's per-layer rule,
        ``closed_form.check_srams``, taken over os, ws and is): the ifmap SRAM one word
        per row (ws, os feed it along the rows), the filter SRAM one word per row or
        column (is, os), the ofmap SRAM one word per column (ws, is). With less no
        dataflow can run a full fold, so the hardware is refused here, for every mode."""
        need = {"ifmap": self.rows, "filter": min(self.rows, self.cols), "ofmap": self.cols}
        for name, words in need.items():
            sp = getattr(self, f"{name}_sram")
            halves = 2 if sp.double_buffered else 1
            if sp.size_bytes // halves // self.word_bytes < words:
                half = " per half (double-buffered)" if sp.double_buffered else ""
                raise ValueError(
                    f"SystolicArray.{name}_sram.size_bytes = {sp.size_bytes}: a {self.rows}x"
                    f"{self.cols} array needs at least {words} words of {self.word_bytes} B"
                    f"{half} in it, at least {words * self.word_bytes * halves} B")

    @property
    def compute_units(self) -> int:
        return self.rows * self.cols

    def peak_rates(self) -> PeakRates:
        return self.peak

    @property
    def sram_bytes(self) -> int:
        return self.ifmap_sram.size_bytes + self.filter_sram.size_bytes + self.ofmap_sram.size_bytes

    def memory_levels(self) -> tuple[MemoryLevel, ...]:
        # The array's edges take one word per row (activations) and one per column
        # (weights) each cycle and emit one word per column (outputs).
        edge = (self.rows + 2 * self.cols) * self.word_bytes * self.clock_hz
        pe_regs = 3 * self.rows * self.cols * self.word_bytes  # operand, weight, partial sum
        return (
            MemoryLevel("dram", self.dram.bandwidth_bytes_per_s, self.sram_bytes + pe_regs),
            MemoryLevel("sram", edge, pe_regs),
        )


Hardware = SIMTGPU | MulticoreCPU | SystolicArray


def _peak(hw, rates: PeakRates, precision: str) -> float:
    r = rates.get(precision)
    if r is None:
        raise ValueError(f"precision={show(precision)}: not supported by {hw.name}; "
                         f"it supports: {', '.join(rates.supported())}")
    return r * hw.compute_units * hw.clock_hz


def ridge_point(hw, precision: str, level: str = "dram") -> float:
    """FLOP per byte at which compute and ``level`` bandwidth bound equally."""
    for lv in hw.memory_levels():
        if lv.name == level:
            return hw.peak_flop_per_s(precision) / lv.bandwidth_bytes_per_s
    raise ValueError(f"memory level {show(level)} is unknown for {hw.name}; "
                     f"allowed: {', '.join(lv.name for lv in hw.memory_levels())}")

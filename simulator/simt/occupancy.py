"""Resident blocks and warps per SM, by CUDA's occupancy rules.

The rules of NVIDIA's occupancy calculator (``cuda_occupancy.h`` of the CUDA toolkit,
and the CUDA C Programming Guide's compute-capability tables), with the per-family
numbers taken from the hardware preset:

* warps: ``floor(max_warps / ceil(block / warp_size))``; blocks: ``max_blocks``;
* registers are allocated per warp, ``regs x warp_size`` rounded up to
  ``register_alloc_unit`` (64 on Fermi -- 128 for 21, 22, 29, 30, 37, 38, 45 or 46
  registers per thread, as the calculator special-cases -- 256 from Kepler on), inside
  each of the SM's sub-partitions (``warp_schedulers``: 2 on Fermi, 4 later):
  ``floor(floor(registers / partitions / regs_per_warp) x partitions / warps_per_block)``;
  a block whose registers exceed ``max_registers_per_block`` cannot launch;
* shared memory: ``(static + dynamic + shared_reserved_per_block_bytes)`` rounded up to
  ``shared_alloc_unit_bytes``, ``floor(shared_bytes / that)`` blocks.

The result is the smallest limit; ``limited_by`` names every limit equal to it.
Launches that cannot run at all (a block over the thread, register or shared-memory
limit) are errors naming the field, the value and the limit.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from simulator.arguments import show

if TYPE_CHECKING:
    from hwmodels.schema import SIMTGPU

_FERMI_REG_128 = {21, 22, 29, 30, 37, 38, 45, 46}
LIMITS = ("warps", "registers", "shared_memory", "blocks")


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    limited_by: str
    occupancy: float                 # resident warps / max warps
    limits: dict                     # blocks allowed by each resource (None: no limit)
    registers_per_block: int
    shared_bytes_per_block: int

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def _check(name, value, lo, hi=None, what=""):
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise ValueError(f"{name} = {show(value)}: must be an integer >= {lo}")
    if hi is not None and value > hi:
        raise ValueError(f"{name} = {value}: exceeds {what} ({hi})")


def occupancy(hw: SIMTGPU, block: int, regs: int, smem_bytes: int = 0) -> Occupancy:
    """Blocks and warps one SM of ``hw`` holds for a kernel of ``block`` threads using
    ``regs`` registers per thread and ``smem_bytes`` of shared memory per block."""
    if getattr(hw, "family", None) != "simt":
        raise ValueError(f"hardware {show(getattr(hw, 'name', hw))} is not a SIMT GPU")
    sm = hw.sm
    _check("block", block, 1, sm.max_threads_per_block, f"{hw.name}'s threads per block")
    _check("regs", regs, 0, sm.max_registers_per_thread, f"{hw.name}'s registers per thread")
    _check("smem_bytes", smem_bytes, 0, sm.max_shared_per_block_bytes, f"{hw.name}'s shared memory per block")
    warps_per_block = -(-block // sm.warp_size)
    major = hw.cc[0]
    unit = 128 if (major == 2 and regs in _FERMI_REG_128) else sm.register_alloc_unit
    regs_per_warp = -(-regs * sm.warp_size // unit) * unit
    partitions = sm.warp_schedulers
    regs_per_block = regs_per_warp * warps_per_block
    assumed = regs_per_warp * (-(-warps_per_block // partitions) * partitions)
    if max(regs_per_block, assumed) > sm.max_registers_per_block:
        raise ValueError(f"regs = {regs}: a block of {block} threads needs "
                         f"{max(regs_per_block, assumed)} registers, over {hw.name}'s "
                         f"{sm.max_registers_per_block} per block")
    smem = smem_bytes + sm.shared_reserved_per_block_bytes
    smem_alloc = -(-smem // sm.shared_alloc_unit_bytes) * sm.shared_alloc_unit_bytes
    # None: the resource sets no limit (no registers, no shared memory asked for)
    limits = {
        "warps": sm.max_warps // warps_per_block,
        "registers": ((sm.registers // partitions // regs_per_warp) * partitions // warps_per_block)
        if regs_per_warp else None,
        "shared_memory": sm.shared_bytes // smem_alloc if smem_alloc else None,
        "blocks": sm.max_blocks,
    }
    n = min(v for v in limits.values() if v is not None)
    if n == 0:
        which = [k for k in LIMITS if limits[k] == 0]
        raise ValueError(f"no block of {block} threads with {regs} registers and {smem_bytes} B "
                         f"of shared memory fits on a {hw.name} SM (limited by {', '.join(which)})")
    return Occupancy(n, n * warps_per_block, "+".join(k for k in LIMITS if limits[k] == n),
                     n * warps_per_block / sm.max_warps, limits, regs_per_block, smem_alloc)

"""Kepler: one GK210 die of a Tesla K80, as the TPU paper compares against it.

Sources:
  [TPU]  Jouppi et al., "In-Datacenter Performance Analysis of a Tensor Processing Unit",
         ISCA 2017, Table 2 (per die: 560 MHz, 2.8 TFLOP/s, 160 GB/s, 8 MiB on-chip).
  [K80]  NVIDIA Tesla K80 datasheet (board: 2 x GK210, 4992 cores, 480 GB/s, 24 GB).
  [CUDA] CUDA C Programming Guide, compute capability 3.7.
The paper's 160 GB/s per die is used (the datasheet's is 240 GB/s per die); the paper
ran the K80 with Boost off, at 560 MHz.
"""
from __future__ import annotations

from .schema import DRAM, SIMTGPU, SM, Cache, HostLink
from .units import GB, GiB, KiB, MHz, MiB

K80 = SIMTGPU(
    name="k80",
    description="NVIDIA Tesla K80, one GK210 die (13 SMX) at 560 MHz as in the TPU paper",
    compute_capability="3.7",
    sm_count=13,                          # [K80] 2496 cores per die / 192
    clock_hz=560 * MHz,                   # [TPU]
    sm=SM(
        max_threads=2048, max_warps=64, max_blocks=16,      # [CUDA] cc 3.7
        registers=131072,                                    # [CUDA] GK210: 128K registers per SMX
        register_alloc_unit=256, max_registers_per_thread=255,  # [CUDA]
        shared_bytes=112 * KiB,                              # [CUDA] GK210 carve-out 112 + 16 KiB
        max_shared_per_block_bytes=48 * KiB,                 # [CUDA]
        shared_alloc_unit_bytes=256,                         # [CUDA] occupancy calculator, cc 3.x
        shared_latency_cycles=47,                            # guess (Kepler microbenchmarks ~47)
        warp_schedulers=4,                                   # Kepler whitepaper
        fp32_lanes=192, fp64_lanes=64,                       # Kepler whitepaper (GK210)
        sfu_units=32, ldst_units=32,                         # Kepler whitepaper
        fp32_latency_cycles=9,                               # guess (Kepler FMA ~9 cycles)
        sfu_latency_cycles=18,                               # guess
        block_launch_cycles=200,                             # guess
        l1=Cache(size_bytes=16 * KiB, line_bytes=128, sector_bytes=32, ways=4,
                 latency_cycles=30, bandwidth_bytes_per_cycle=128.0,  # guess except size
                 mshrs=128),  # guess: Little's law, 13 x 128 x 32 B / 300 cycles ~ 100 GB/s
    ),
    l2=Cache(size_bytes=int(1.5 * MiB), line_bytes=128, sector_bytes=32, ways=16, banks=12,
             latency_cycles=200, bandwidth_bytes_per_cycle=512.0),  # size [K80]; rest guess
    dram=DRAM(kind="GDDR5 384-bit", size_bytes=12 * GiB, bandwidth_bytes_per_s=160 * GB,  # [TPU]
              latency_cycles=300, channels=6),  # latency, channels: guess
    host_link=HostLink(kind="PCIe 3.0 x16", pinned_bandwidth_bytes_per_s=12 * GB,
                       pageable_bandwidth_bytes_per_s=6 * GB),  # guess: typical Gen3 figures
)

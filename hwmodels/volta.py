"""Volta: NVIDIA V100 SXM2 16 GB (the platform of the 2024 PyTorch-compiler thesis).

Sources:
  [WP]   NVIDIA Tesla V100 GPU Architecture whitepaper, 2017 (80 SMs, 1530 MHz boost,
         15.7 TFLOP/s FP32, 7.8 FP64, 125 tensor, 900 GB/s, 6 MiB L2, 128 KiB L1/shared).
  [CUDA] CUDA C Programming Guide, compute capability 7.0.
  [JIA]  Jia et al., "Dissecting the NVIDIA Volta GPU Architecture via Microbenchmarking",
         2018 (latencies in cycles; L2 bandwidth 2155 GB/s measured).
"""
from __future__ import annotations

from .schema import DRAM, SIMTGPU, SM, Cache, HostLink, PeakRates
from .units import GB, GiB, KiB, MHz, MiB

V100_SXM2 = SIMTGPU(
    name="v100-sxm2",
    description="NVIDIA Tesla V100 SXM2 16 GB (Volta GV100, 80 SMs)",
    compute_capability="7.0",
    sm_count=80,                           # [WP]
    clock_hz=1530 * MHz,                   # [WP] boost
    sm=SM(
        max_threads=2048, max_warps=64, max_blocks=32,        # [CUDA] cc 7.0
        registers=65536, register_alloc_unit=256, max_registers_per_thread=255,  # [CUDA]
        shared_bytes=96 * KiB,                                 # [WP] max carve-out of 128 KiB
        max_shared_per_block_bytes=96 * KiB,                   # [CUDA] opt-in (48 KiB default)
        shared_alloc_unit_bytes=256,                           # [CUDA] occupancy calculator
        shared_latency_cycles=19,                              # [JIA]
        warp_schedulers=4,                                     # [WP]
        fp32_lanes=64, fp64_lanes=32, sfu_units=16, ldst_units=32,  # [WP]
        fp32_latency_cycles=4,                                 # [JIA]
        sfu_latency_cycles=20,                                 # guess
        block_launch_cycles=200,                               # guess
        l1=Cache(size_bytes=32 * KiB, line_bytes=128, sector_bytes=32, ways=4,  # [WP] 128-96 KiB
                 latency_cycles=28,                            # [JIA]
                 bandwidth_bytes_per_cycle=128.0,              # [WP] 128 B/clk per SM
                 mshrs=128),  # guess: Little's law, 80 x 128 x 32 B / 400 cycles ~ 900 GB/s
        tensor=PeakRates(fp16_flop_per_cycle=1024.0,           # [WP] 8 tensor cores x 64 FMA x 2
                         int8_flop_per_cycle=512.0),           # DP4A: 64 lanes x 4 MAC x 2 [CUDA]
    ),
    l2=Cache(size_bytes=6 * MiB, line_bytes=128, sector_bytes=32, ways=16, banks=64,  # size [WP]
             latency_cycles=193,                               # [JIA]
             bandwidth_bytes_per_cycle=2155e9 / 1530e6),        # [JIA] 2155 GB/s measured
    dram=DRAM(kind="HBM2 4096-bit", size_bytes=16 * GiB, bandwidth_bytes_per_s=900 * GB,  # [WP]
              latency_cycles=400, channels=32),                 # latency ~ [JIA]; channels guess
    host_link=HostLink(kind="PCIe 3.0 x16", pinned_bandwidth_bytes_per_s=12 * GB,
                       pageable_bandwidth_bytes_per_s=6 * GB),  # guess: typical Gen3 figures
)

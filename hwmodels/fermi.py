"""Fermi GF100 presets: GeForce GTX 480 (the teaching default) and Tesla C2050.

Sources:
  [WP]   NVIDIA, "Fermi Compute Architecture Whitepaper" v1.1, 2009.
  [GS]   GPGPU-Sim 3.x, configs/tested-cfgs/SM2_GTX480/gpgpusim.config.
  [CUDA] CUDA C Programming Guide, "Compute capabilities" table (cc 2.0).
  [C2050] NVIDIA Tesla C2050/C2070 datasheet, 2010.

Cycles are SM ("shader") cycles at 1401 MHz, where the 32 FP32 lanes run. GPGPU-Sim
counts latencies in its 700 MHz core domain; they are doubled here to shader cycles.
"""
from __future__ import annotations

from dataclasses import replace

from .schema import DRAM, SIMTGPU, SM, Cache, HostLink
from .units import GB, GiB, KiB, MHz

FERMI_SM = SM(
    warp_size=32,                        # [WP]
    max_threads=1536,                    # [CUDA] cc 2.0
    max_warps=48,                        # [CUDA]
    max_blocks=8,                        # [CUDA]
    max_threads_per_block=1024,          # [CUDA]
    registers=32768,                     # [WP] 32K x 32-bit per SM
    register_alloc_unit=64,              # [CUDA] occupancy calculator: 64 registers per warp
    max_registers_per_thread=63,         # [CUDA]
    max_registers_per_block=32768,       # [CUDA] cc 2.x
    shared_bytes=48 * KiB,               # [WP] 48/16 KiB split (the default)
    max_shared_per_block_bytes=48 * KiB,  # [CUDA]
    shared_alloc_unit_bytes=128,         # [CUDA] occupancy calculator, cc 2.x
    shared_reserved_per_block_bytes=0,   # [CUDA] none before cc 8.0
    shared_banks=32,                     # [WP]
    shared_bank_bytes=4,                 # [WP]
    shared_latency_cycles=52,            # [GS] 26 at 700 MHz, doubled
    warp_schedulers=2,                   # [WP] dual warp scheduler
    issue_interval_cycles=2,             # [WP, GS] a scheduler issues once per 700 MHz core cycle
    fp32_lanes=32,                       # [WP] two groups of 16 CUDA cores
    fp64_lanes=4,                        # GeForce caps FP64 at 1/8 of FP32 (168 GFLOP/s) [WP, retail spec]
    sfu_units=4,                         # [WP]
    ldst_units=16,                       # [WP]
    fp32_latency_cycles=10,              # [GS] mad 5 at 700 MHz, doubled (add/mul 4 -> 8)
    sfu_latency_cycles=78,               # [GS] div 39 at 700 MHz, doubled
    block_launch_cycles=200,             # guess: order of GPGPU-Sim's block issue cost; to calibrate
    l1=Cache(
        size_bytes=16 * KiB,             # [WP] 16 KiB L1 with 48 KiB shared
        line_bytes=128,                  # [GS] dl1 32:128:4
        sector_bytes=128,                # Fermi L1 path fetches whole 128 B lines [REFERENCE]
        ways=4,                          # [GS]
        latency_cycles=70,               # [GS] 35 at 700 MHz, doubled
        bandwidth_bytes_per_cycle=64.0,  # 16 LD/ST units x 4 B per shader cycle [WP]
        mshrs=32,                        # [GS] dl1 A:32:8
    ),
)

GTX480 = SIMTGPU(
    name="gtx480",
    description="NVIDIA GeForce GTX 480 (Fermi GF100, 15 SMs) -- the teaching default",
    compute_capability="2.0",
    sm_count=15,                         # [WP] 15 of 16 SMs enabled on GTX 480
    clock_hz=1401 * MHz,                 # shader clock [retail spec]; 1.345 TFLOP/s FP32
    sm=FERMI_SM,
    l2=Cache(
        size_bytes=768 * KiB,            # [WP]
        line_bytes=128, sector_bytes=128, ways=8,  # [GS] dl2 64:128:8 per bank
        banks=12,                        # [GS] 6 memory channels x 2 sub-partitions
        latency_cycles=240,              # [GS] ~120 at 700 MHz, doubled
        bandwidth_bytes_per_cycle=192.0,  # [GS] 12 banks x 32 B at 700 MHz = 268.8 GB/s; in 1401 MHz cycles
        mshrs=32,                        # [GS] dl2 A:32:4 (per bank)
    ),
    dram=DRAM(
        kind="GDDR5 384-bit",
        size_bytes=int(1.5 * GiB),       # [retail spec]
        bandwidth_bytes_per_s=177.4 * GB,  # 384 bit x 924 MHz x 4 [REFERENCE]
        latency_cycles=440,              # guess: L2 240 + DRAM ~100 at 700 MHz doubled; to calibrate
        channels=6,                      # [GS]
    ),
    host_link=HostLink(
        kind="PCIe 2.0 x16",
        pinned_bandwidth_bytes_per_s=6.0 * GB,    # guess: ~75% of the 8 GB/s link
        pageable_bandwidth_bytes_per_s=3.0 * GB,  # guess: half of pinned, as typical then
        latency_s=10e-6,                           # guess
    ),
)

C2050 = replace(
    GTX480,
    name="c2050",
    description="NVIDIA Tesla C2050 (Fermi GF100, 14 SMs, 1150 MHz, ECC off)",
    sm_count=14,                         # [C2050]
    clock_hz=1150 * MHz,                 # [C2050] 1.03 TFLOP/s FP32
    sm=replace(FERMI_SM, fp64_lanes=16),  # [C2050] 515 GFLOP/s FP64 (half rate)
    dram=replace(GTX480.dram, size_bytes=3 * GiB,
                 bandwidth_bytes_per_s=144 * GB),  # [C2050] 384-bit at 750 MHz
)

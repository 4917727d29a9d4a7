"""Hopper: NVIDIA H100 SXM 80 GB and H200, where measurements are taken.

Sources:
  [DEV]  read from the devices with the CUDA driver API, 2026-11.
  [WP]   NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022.
  [DS]   NVIDIA H100 / H200 datasheets (dense peaks: FP32 67, FP64 34, TF32 495,
         BF16 989 TFLOP/s).
  [CAL]  calibrated from roofsim's own micro and h2d suites on an H100 SXM,
         data/measurements/h100-sxm/{micro,h2d}.json, 2026-11-22, by
         `roofsim calibrate --hw h100-sxm --measurements data/measurements/h100-sxm`
         (simulator/analysis/calibrate.py says which record gives which field). A test
         checks that calibrating this preset again changes nothing.

Peaks are computed from per-SM rates at the device's maximum clock, 1980 MHz [DEV].
The datasheet's FP32 and FP64 figures match that clock; its tensor figures (989 BF16)
correspond to 1830 MHz, so this preset's BF16 peak is 1070 TFLOP/s. For bounds the
higher figure is the safe one; calibration may change the clock used.
"""
from __future__ import annotations

from dataclasses import replace

from .schema import DRAM, SIMTGPU, SM, Cache, HostLink, PeakRates
from .units import GB, TB, GiB, KiB, MHz, MiB

HOPPER_SM = SM(
    max_threads=2048, max_warps=64, max_blocks=32,            # [DEV]
    registers=65536, register_alloc_unit=256, max_registers_per_thread=255,  # [DEV], CUDA guide
    shared_bytes=228 * KiB,                                   # [DEV]
    max_shared_per_block_bytes=227 * KiB,                     # [DEV] opt-in (48 KiB default)
    shared_alloc_unit_bytes=128,                              # CUDA occupancy calculator, cc 9.0
    shared_reserved_per_block_bytes=1 * KiB,                  # [DEV]
    shared_latency_cycles=30,                                 # guess; to measure
    warp_schedulers=4,                                        # [WP]
    fp32_lanes=128, fp64_lanes=64, sfu_units=16, ldst_units=32,  # [WP]
    int32_lanes=64,                                           # [WP] 16 INT32 units per SM partition
    fp32_latency_cycles=4,                                    # guess (as Volta); to measure
    sfu_latency_cycles=20,                                    # guess
    block_launch_cycles=158,                                  # [CAL] block_launch_rate
    block_start_cycles=526,                                   # [CAL] block_residency (empty
                                                              # 1024-thread blocks)
    l1=Cache(size_bytes=28 * KiB, line_bytes=128, sector_bytes=32, ways=4,  # 256 KiB array - 228 [WP]
             latency_cycles=72,                               # [CAL] latency_l1 (load-to-use, chase)
             bandwidth_bytes_per_cycle=128.0,                 # [WP] 128 B/clk per SM
             lines_per_cycle=1.0,                             # [CAL] lines suite: 8, 16, 32 lines
                                                              # a request take 8.0, 16.0, 32.1 cycles
             # [CAL] lines suite, its stores on a sixteenth of the SMs: about 2.1 cycles
             # a line that a store writes part of a sector of (scripts/fit_partial_writes.py)
             partial_lines_per_cycle=0.4735,
             hashed_sets=True,    # [NCU] rows a power of two apart do not thrash a few sets:
                                  # thread-per-row matvec (kernels suite, 4096- and 1024-float
                                  # rows) moves 103 MB through the L2, as hashed sets give;
                                  # the index modulo the sets gives 437 MB
             mshrs=512),  # guess (32 B sectors in flight per SM), sized by Little's law:
                          # 132 SMs x 512 x 32 B / 717 cycles = 6 KB/cycle covers the
                          # measured copy bandwidth [CAL]; not measured by the micro suite
    l1_shared_bytes=256 * KiB,                                # [WP] combined L1 / shared per SM
    shared_carveouts_bytes=tuple(k * KiB for k in (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)),
                                                              # Hopper tuning guide, cc 9.0
    tensor=PeakRates(
        fp64_flop_per_cycle=256.0,    # [DS] 67 TFLOP/s FP64 tensor at 1980 MHz
        tf32_flop_per_cycle=2048.0,   # [WP] dense; [DS] 495 at 1830 MHz
        fp16_flop_per_cycle=4096.0,   # [WP] dense; [DS] 989 at 1830 MHz
        bf16_flop_per_cycle=4096.0,   # [WP] dense
        int8_flop_per_cycle=8192.0,   # [WP] dense; [DS] 1979 TOPS at 1830 MHz
    ),
)

H100_SXM = SIMTGPU(
    name="h100-sxm",
    description="NVIDIA H100 SXM 80GB HBM3 (Hopper GH100, 132 SMs)",
    compute_capability="9.0",                                 # [DEV]
    sm_count=132,                                             # [DEV]
    clock_hz=1980 * MHz,                                      # [DEV] max SM clock
    sm=HOPPER_SM,
    l2=Cache(size_bytes=50 * MiB, line_bytes=128, sector_bytes=32, ways=16, banks=80,  # size [DEV]
             latency_cycles=311,                              # [CAL] latency_l2 (8 MiB chase)
             bandwidth_bytes_per_cycle=2939.43788565864,    # [CAL] l2_read: 5.82 TB/s
             hashed_banks=True,                               # lines hashed over slices and channels
             # [CAL] scripts/fit_atomics.py: an atomic's round trip (atomic_trace suite: the
             # SIMT engine's CAS loops of one lane a warp take the H100's time); a line's
             # atomic unit per warp request (add, CAS) and per further lane on a word
             # (atomics suite)
             atomic_latency_cycles=511.1, atomic_cycles=4.902, atomic_cas_cycles=9.534,
             atomic_lane_cycles=1.256,
             # [CAL] atomic_trace suite (scripts/fit_atomic_queue.py): the requests a line's
             # atomic unit serves in their order of arrival; those beyond get in unordered
             atomic_queue_requests=128,
             # [CAL] lines suite, its stores on every SM: a slice takes 2.4-2.9 cycles for a
             # write to part of a line's sector (4-16 B a line, as a naive transpose
             # stores), the median of its six such cases (scripts/fit_partial_writes.py)
             partial_write_cycles=2.528),
                                                              # (NVIDIA L2s hash addresses; the
                                                              # function is not public), see core._owner
    dram=DRAM(kind="HBM3 5120-bit", size_bytes=80 * GiB,
              bandwidth_bytes_per_s=3.35 * TB,                # [DS]
              sustained_fraction=0.8772085642125625,          # [CAL] dram_copy at 32 and 64 warps
              queue_cycles=219.2494142072882,                 # an SM: loaded latency, 2.94 TB/s peak
              latency_cycles=717,                             # [CAL] latency_dram_stream (2 KiB steps, 1 GiB)
              channels=10),                                   # 5 stacks x 2 (guess)
    host_link=HostLink(kind="PCIe Gen5 x16",
                       pinned_bandwidth_bytes_per_s=49247272365,   # [CAL] 1 GiB pinned copy
                       pageable_bandwidth_bytes_per_s=4906822346,  # [CAL] 1 GiB pageable copy
                       latency_s=10e-6),                       # guess
    kernel_launch_s=1.588311732021761e-06,                   # [CAL] launch_gpu_side less one block start
)

# The H200 is the calibrated H100 changed only by the H200's datasheet differences --
# DRAM peak bandwidth and L2 size -- so that predicting it before measuring it is the
# what-if of a hardware change; its own micro suite is not applied here.
H200 = replace(
    H100_SXM,
    name="h200",
    description="NVIDIA H200 141GB HBM3e (Hopper GH100, 132 SMs)",
    l2=replace(H100_SXM.l2, size_bytes=60 * MiB),             # [DEV]
    dram=replace(H100_SXM.dram, kind="HBM3e 6144-bit", size_bytes=141 * GB,
                 bandwidth_bytes_per_s=4.8 * TB),              # [DS]
)

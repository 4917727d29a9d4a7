"""Systolic arrays: Google's TPU v1 and two small teaching arrays.

Sources:
  [TPU] Jouppi et al., "In-Datacenter Performance Analysis of a Tensor Processing Unit",
        ISCA 2017: 256 x 256 8-bit MACs at 700 MHz (92 TOPS), 24 MiB unified buffer,
        4 MiB of 32-bit accumulators, weight FIFO of four 64 KiB tiles, 8 GiB DDR3 at
        34 GB/s, PCIe Gen3 x16 host link.
The teaching arrays' numbers are chosen, not measured: small enough to follow cycle by
cycle, with SRAMs in SCALE-Sim's three-buffer arrangement.
"""
from __future__ import annotations

from dataclasses import replace

from .schema import DRAM, HostLink, PeakRates, Scratchpad, SystolicArray
from .units import GB, GHz, GiB, KiB, MHz, MiB

TPU_V1 = SystolicArray(
    name="tpu-v1",
    description="Google TPU v1: 256x256 int8 weight-stationary systolic array at 700 MHz",
    rows=256, cols=256,                            # [TPU]
    clock_hz=700 * MHz,                            # [TPU]
    peak=PeakRates(int8_flop_per_cycle=2.0),       # [TPU] 8-bit MAC per PE per cycle -> 91.8 TOPS
    word_bytes=1,                                  # [TPU] 8-bit operands
    ifmap_sram=Scratchpad(size_bytes=24 * MiB),    # [TPU] unified buffer
    filter_sram=Scratchpad(size_bytes=4 * 64 * KiB),  # [TPU] weight FIFO, four 64 KiB tiles
    ofmap_sram=Scratchpad(size_bytes=4 * MiB),     # [TPU] 4096 x 256 x 32-bit accumulators
    weight_fifo_tiles=4,                           # [TPU]
    activations_on_chip=True,                      # [TPU] the weight memory holds weights only
    dram=DRAM(kind="DDR3 weight memory", size_bytes=8 * GiB,
              bandwidth_bytes_per_s=34 * GB,       # [TPU]
              latency_cycles=100, channels=2),     # guess
    host_link=HostLink(kind="PCIe Gen3 x16", pinned_bandwidth_bytes_per_s=12 * GB,
                       pageable_bandwidth_bytes_per_s=6 * GB),  # guess: typical Gen3 figures
)

TEACHING_PEAK = PeakRates(fp32_flop_per_cycle=2.0, fp16_flop_per_cycle=2.0,
                        bf16_flop_per_cycle=2.0, int8_flop_per_cycle=2.0)

SYSTOLIC_4X4 = SystolicArray(
    name="systolic-4x4",
    description="4x4 teaching array, 1 GHz, 4-byte words, 16 KiB per SRAM (chosen values)",
    rows=4, cols=4, clock_hz=1 * GHz, peak=TEACHING_PEAK, word_bytes=4,
    ifmap_sram=Scratchpad(size_bytes=16 * KiB),
    filter_sram=Scratchpad(size_bytes=16 * KiB),
    ofmap_sram=Scratchpad(size_bytes=16 * KiB),
    weight_fifo_tiles=2,
    dram=DRAM(kind="teaching DRAM", size_bytes=1 * GiB, bandwidth_bytes_per_s=16 * GB,
              latency_cycles=100, channels=1),
    host_link=HostLink(kind="PCIe Gen3 x16", pinned_bandwidth_bytes_per_s=12 * GB,
                       pageable_bandwidth_bytes_per_s=6 * GB),
)

SYSTOLIC_8X8 = replace(
    SYSTOLIC_4X4,
    name="systolic-8x8",
    description="8x8 teaching array, 1 GHz, 4-byte words, 64 KiB per SRAM (chosen values)",
    rows=8, cols=8,
    ifmap_sram=Scratchpad(size_bytes=64 * KiB),
    filter_sram=Scratchpad(size_bytes=64 * KiB),
    ofmap_sram=Scratchpad(size_bytes=64 * KiB),
    dram=replace(SYSTOLIC_4X4.dram, bandwidth_bytes_per_s=32 * GB),
)

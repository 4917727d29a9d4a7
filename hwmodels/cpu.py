"""Host CPUs: the Haswell Xeon E5-2699 v3 of the TPU paper's comparison.

Sources:
  [TPU]  Jouppi et al., ISCA 2017, Table 2 (2300 MHz, 1.3 TFLOP/s FP32, 2.6 TOPS 8-bit,
         51 GB/s, 51 MiB on-chip).
  [INTEL] Intel ARK E5-2699 v3 (18 cores, 45 MiB L3) and the Intel optimisation manual
         (Haswell: two 256-bit FMA units; L1 2 x 32 B loads per cycle; L2 64 B/cycle).
"""
from __future__ import annotations

from .schema import DRAM, Cache, MulticoreCPU, PeakRates
from .units import GB, GiB, KiB, MHz, MiB

HASWELL_E5_2699V3 = MulticoreCPU(
    name="haswell-e5-2699v3",
    description="Intel Xeon E5-2699 v3 (Haswell, 18 cores) as in the TPU paper",
    cores=18,                                  # [INTEL]
    clock_hz=2300 * MHz,                       # [TPU]
    peak=PeakRates(fp64_flop_per_cycle=16.0,   # [INTEL] 2 FMA x 4 doubles x 2
                   fp32_flop_per_cycle=32.0,   # [INTEL] 2 FMA x 8 floats x 2 -> 1.32 TFLOP/s
                   int8_flop_per_cycle=64.0),  # [TPU] 2.6 TOPS / 18 / 2.3 GHz
    l1=Cache(size_bytes=32 * KiB, line_bytes=64, sector_bytes=64, ways=8, latency_cycles=4,
             bandwidth_bytes_per_cycle=64.0),   # [INTEL]
    l2=Cache(size_bytes=256 * KiB, line_bytes=64, sector_bytes=64, ways=8, latency_cycles=12,
             bandwidth_bytes_per_cycle=64.0),   # [INTEL]
    l3=Cache(size_bytes=45 * MiB, line_bytes=64, sector_bytes=64, ways=20, banks=18,
             latency_cycles=40,
             bandwidth_bytes_per_cycle=18 * 32.0),  # guess: 32 B/cycle per ring stop
    dram=DRAM(kind="DDR4-2133 4 channels", size_bytes=256 * GiB,  # size: as in the paper's server (guess)
              bandwidth_bytes_per_s=51 * GB,   # [TPU] (68 GB/s theoretical)
              latency_cycles=200, channels=4),  # latency guess (~85 ns)
    host_link=None,
)

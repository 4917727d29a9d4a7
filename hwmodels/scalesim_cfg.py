"""Read a SCALE-Sim 3.0.0 configuration file (.cfg, INI syntax) as a SystolicArray.

Parsed with ``configparser`` (never executed). SCALE-Sim's conventions: SRAM sizes are
in kB of 1024 one-byte words; ``Dataflow`` is os/ws/is; ``InterfaceBandwidth`` is CALC
(estimate bandwidth: reads never stall) or USER, where the DRAM-to-SRAM bandwidths are
the ``[layout]`` section's ``IfmapSRAMBankBandwidth`` and ``FilterSRAMBankBandwidth`` and
the output drain bandwidth is the first value of ``Bandwidth`` (words per cycle).

SCALE-Sim has no clock; the array is given 1 GHz (change it with ``--set clock_hz=...``).
For the physically faithful mode the DRAM bandwidth is the sum of the three USER
bandwidths, or unlimited (1 PB/s) in CALC mode. Features roofsim does not model --
sparsity, custom SRAM layouts, Ramulator traces -- are refused with an error rather
than ignored.
"""
from __future__ import annotations

import configparser
from pathlib import Path

from .schema import DRAM, HostLink, ScaleSimInterface, Scratchpad, SystolicArray
from .tpu import TEACHING_PEAK
from .units import GiB, KiB

ASSUMED_CLOCK_HZ = 1e9
CALC_BANDWIDTH_BYTES_PER_S = 1e15


def load_cfg(path) -> SystolicArray:
    p = Path(path)
    if not p.exists():
        raise ValueError(f"SCALE-Sim config {str(p)!r} does not exist")
    cp = configparser.ConfigParser(interpolation=None)
    try:
        cp.read_string(p.read_text(encoding="utf-8"), source=str(p))
    except UnicodeDecodeError:
        raise ValueError(f"{p}: not a text (UTF-8) SCALE-Sim config") from None
    except configparser.Error as e:
        raise ValueError(f"{p}: malformed SCALE-Sim config: {str(e).splitlines()[0]}") from None

    def get(section, key, required=True, default=None):
        if not cp.has_section(section):
            if required:
                raise ValueError(f"{p}: section [{section}] is missing")
            return default
        if not cp.has_option(section, key):
            if required:
                raise ValueError(f"{p}: [{section}] {key} is missing")
            return default
        return cp.get(section, key).strip()

    def integer(section, key, required=True, default=None, minimum=1):
        v = get(section, key, required, None)
        if v is None:
            return default
        try:
            n = int(v)
        except ValueError:
            raise ValueError(f"{p}: [{section}] {key} = {v!r} is not an integer") from None
        if n < minimum:
            raise ValueError(f"{p}: [{section}] {key} = {n}: must be >= {minimum}")
        return n

    arch = "architecture_presets"
    rows, cols = integer(arch, "ArrayHeight"), integer(arch, "ArrayWidth")
    kb = {k: integer(arch, f"{k}SramSzkB") for k in ("Ifmap", "Filter", "Ofmap")}
    dataflow = get(arch, "Dataflow").lower()
    if dataflow not in ("os", "ws", "is"):
        raise ValueError(f"{p}: [{arch}] Dataflow = {dataflow!r}: allowed: os, ws, is")
    mode = get("run_presets", "InterfaceBandwidth").upper()
    if mode not in ("CALC", "USER"):
        raise ValueError(f"{p}: [run_presets] InterfaceBandwidth = {mode!r}: allowed: CALC, USER")
    if get("run_presets", "UseRamulatorTrace", required=False, default="False").lower() == "true":
        raise ValueError(f"{p}: [run_presets] UseRamulatorTrace = True is not supported")
    if get("sparsity", "SparsitySupport", required=False, default="false").lower() == "true":
        raise ValueError(f"{p}: [sparsity] SparsitySupport = true is not supported")
    for k in ("IfmapCustomLayout", "FilterCustomLayout"):
        if get("layout", k, required=False, default="False").lower() == "true":
            raise ValueError(f"{p}: [layout] {k} = True is not supported")
    if mode == "USER":
        bw_text = get(arch, "Bandwidth")
        try:
            of_bw = int(bw_text.split(",")[0])
        except ValueError:
            raise ValueError(f"{p}: [{arch}] Bandwidth = {bw_text!r} is not an integer list") from None
        if of_bw < 1:
            raise ValueError(f"{p}: [{arch}] Bandwidth = {of_bw}: must be >= 1")
        if_bw = integer("layout", "IfmapSRAMBankBandwidth")
        f_bw = integer("layout", "FilterSRAMBankBandwidth")
        for k, bw in (("Ifmap", if_bw), ("Filter", f_bw)):
            banks = integer("layout", f"{k}SRAMBankNum", required=False, default=1)
            if bw % banks:
                raise ValueError(f"{p}: [layout] {k}SRAMBankBandwidth = {bw} must be a multiple "
                                 f"of {k}SRAMBankNum = {banks} (SCALE-Sim asserts this in USER mode)")
        dram_bw = (if_bw + f_bw + of_bw) * ASSUMED_CLOCK_HZ
    else:
        if_bw = f_bw = 10
        of_bw = cols
        dram_bw = CALC_BANDWIDTH_BYTES_PER_S
    name = get("general", "run_name", required=False, default=p.stem).strip('"') or p.stem
    return SystolicArray(
        name=name, description=f"SCALE-Sim config {p.name} ({mode} bandwidth)",
        rows=rows, cols=cols, clock_hz=ASSUMED_CLOCK_HZ, peak=TEACHING_PEAK, word_bytes=1,
        ifmap_sram=Scratchpad(size_bytes=kb["Ifmap"] * KiB),
        filter_sram=Scratchpad(size_bytes=kb["Filter"] * KiB),
        ofmap_sram=Scratchpad(size_bytes=kb["Ofmap"] * KiB),
        weight_fifo_tiles=2, dataflow=dataflow,
        dram=DRAM(kind=f"SCALE-Sim {mode}", size_bytes=16 * GiB, bandwidth_bytes_per_s=dram_bw,
                  latency_cycles=1),
        host_link=HostLink(kind="not modelled by SCALE-Sim", pinned_bandwidth_bytes_per_s=12e9,
                           pageable_bandwidth_bytes_per_s=6e9),
        scalesim=ScaleSimInterface(bandwidth_mode=mode, ifmap_bandwidth_words_per_cycle=if_bw,
                                   filter_bandwidth_words_per_cycle=f_bw,
                                   ofmap_bandwidth_words_per_cycle=of_bw),
    )

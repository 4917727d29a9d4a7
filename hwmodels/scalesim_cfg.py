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

Every field SCALE-Sim's own reader reads is checked where present, used here or not:
integers in ASCII decimal digits within a range (the limits below), keywords matched
exactly as SCALE-Sim matches them, booleans true or false; the hardware it makes then
meets the same limits as any preset (``hwmodels.limits``).
"""
from __future__ import annotations

import configparser
from pathlib import Path

from .fileio import MAX_HARDWARE_FILE_BYTES, read_small_file
from .limits import MAX_ARRAY_SIDE
from .schema import DRAM, HostLink, ScaleSimInterface, Scratchpad, SystolicArray
from .tpu import TEACHING_PEAK
from .units import GiB, KiB, show

ASSUMED_CLOCK_HZ = 1e9
CALC_BANDWIDTH_BYTES_PER_S = 1e15


#: SCALE-Sim keeps one entry per outstanding DRAM request (Read/WriteRequestBuffer) and
#: one per bank, port or word per cycle of a bank ([layout]); 0 would never move a word
MAX_COUNT = 2**20
#: SRAM sizes, kB: up to 16 GiB (hwmodels.limits' on-chip limit)
MAX_SRAM_KB = 2**24
#: operand address offsets: a 48-bit address space
MAX_OFFSET = 2**48
#: SCALE-Sim's booleans: getboolean's words for the custom layouts; for the others
#: SCALE-Sim compares text (``== 'True'``, ``.lower() == 'true'``), so only true/false
_BOOL_WORDS = {"true": True, "false": False}


def _ascii_int(text: str):
    """``text`` as a non-negative integer in ASCII decimal digits, else None (Python's
    int() would also read '3_2', '+4' and other scripts' digits such as '٣٢')."""
    return int(text) if text.isascii() and text.isdigit() else None


def load_cfg(path) -> SystolicArray:
    """A SCALE-Sim 3.0.0 .cfg as a SystolicArray. Every field SCALE-Sim's own reader
    (``scale_config.read_conf_file``) reads is checked for its type and range when
    present, even those roofsim does not use (offsets, request buffers, bank layout,
    ``Bandwidth`` in CALC mode): SCALE-Sim would fail or misbehave on them. Keywords are
    matched exactly as SCALE-Sim does (``ws``, not ``WS``; ``CALC``, not ``calc``). The
    file must be a regular file of at most ``fileio.MAX_HARDWARE_FILE_BYTES``."""
    p = Path(path)
    raw = read_small_file(p, "SCALE-Sim config", MAX_HARDWARE_FILE_BYTES)
    cp = configparser.ConfigParser(interpolation=None)
    try:
        text = raw.decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
        cp.read_string(text, source=str(p))
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
        v = cp.get(section, key).strip()
        if "%" in v:
            # SCALE-Sim's reader interpolates %(name)s and %% (and fails on a lone %);
            # this one reads values as written, so the two would disagree
            raise ValueError(f"{p}: [{section}] {key} = {show(v)}: '%' is not allowed (SCALE-Sim "
                             "would read it as an interpolation)")
        return v

    def integer(section, key, required=True, default=None, minimum=1, maximum=MAX_COUNT):
        v = get(section, key, required, None)
        if v is None:
            return default
        n = _ascii_int(v)
        if n is None or not minimum <= n <= maximum:
            shown = v if n is not None else repr(v)
            raise ValueError(f"{p}: [{section}] {key} = {shown}: must be an integer from "
                             f"{minimum:,} to {maximum:,} in ASCII decimal digits")
        return n

    def boolean(section, key, words=_BOOL_WORDS):
        v = get(section, key, required=False)
        if v is None:
            return False
        if v.lower() not in words:
            allowed = "True, False" if words is _BOOL_WORDS else "True, False, yes, no, on, off, 1, 0"
            raise ValueError(f"{p}: [{section}] {key} = {show(v)}: allowed: {allowed}")
        return words[v.lower()]

    def keyword(section, key, allowed):
        v = get(section, key)
        if v not in allowed:
            raise ValueError(f"{p}: [{section}] {key} = {show(v)}: allowed: {', '.join(allowed)} "
                             "(SCALE-Sim matches them exactly)")
        return v

    arch = "architecture_presets"
    rows = integer(arch, "ArrayHeight", maximum=MAX_ARRAY_SIDE)
    cols = integer(arch, "ArrayWidth", maximum=MAX_ARRAY_SIDE)
    kb = {k: integer(arch, f"{k}SramSzkB", maximum=MAX_SRAM_KB) for k in ("Ifmap", "Filter", "Ofmap")}
    for k in ("Ifmap", "Filter", "Ofmap"):      # read by SCALE-Sim, not used here
        integer(arch, f"{k}Offset", required=False, minimum=0, maximum=MAX_OFFSET)
    for k in ("ReadRequestBuffer", "WriteRequestBuffer"):
        integer(arch, k, required=False)
    dataflow = keyword(arch, "Dataflow", ("os", "ws", "is"))
    mode = keyword("run_presets", "InterfaceBandwidth", ("CALC", "USER"))
    if boolean("run_presets", "UseRamulatorTrace"):
        raise ValueError(f"{p}: [run_presets] UseRamulatorTrace = True is not supported")
    if boolean("sparsity", "SparsitySupport"):
        raise ValueError(f"{p}: [sparsity] SparsitySupport = true is not supported")
    for k in ("IfmapCustomLayout", "FilterCustomLayout"):
        if boolean("layout", k, configparser.ConfigParser.BOOLEAN_STATES):
            raise ValueError(f"{p}: [layout] {k} = True is not supported")
    layout = {f"{k}SRAMBank{x}": integer("layout", f"{k}SRAMBank{x}", required=False)
              for k in ("Ifmap", "Filter") for x in ("Bandwidth", "Num", "Port")}
    bandwidths = _bandwidths(p, get(arch, "Bandwidth", required=mode == "USER"))
    run_name = get("general", "run_name", required=False, default="").strip('"')
    if run_name and not run_name.isprintable():
        raise ValueError(f"{p}: [general] run_name = {show(run_name)}: must be printable text")
    if mode == "USER":
        of_bw = bandwidths[0]
        if_bw = integer("layout", "IfmapSRAMBankBandwidth")
        f_bw = integer("layout", "FilterSRAMBankBandwidth")
        for k, bw in (("Ifmap", if_bw), ("Filter", f_bw)):
            banks = layout[f"{k}SRAMBankNum"] or 1
            if bw % banks:
                raise ValueError(f"{p}: [layout] {k}SRAMBankBandwidth = {bw} must be a multiple "
                                 f"of {k}SRAMBankNum = {banks} (SCALE-Sim asserts this in USER mode)")
        dram_bw = (if_bw + f_bw + of_bw) * ASSUMED_CLOCK_HZ
    else:
        if_bw = f_bw = 10
        of_bw = cols
        dram_bw = CALC_BANDWIDTH_BYTES_PER_S
    name = run_name or p.stem
    try:
        return _array(p, name, mode, rows, cols, kb, dataflow, dram_bw, if_bw, f_bw, of_bw)
    except ValueError as e:
        raise ValueError(f"{p}: {e}") from None


def _bandwidths(p, text):
    """``[architecture_presets] Bandwidth``: comma-separated words per cycle, each an
    ASCII integer from 1 to MAX_COUNT (SCALE-Sim reads them with int() in USER mode;
    checked in CALC mode too, where it ignores them); None when absent."""
    if text is None:
        return None
    out = []
    for item in text.split(","):
        n = _ascii_int(item.strip())
        if n is None or not 1 <= n <= MAX_COUNT:
            raise ValueError(f"{p}: [architecture_presets] Bandwidth = {show(text)}: expected "
                             f"words per cycle, integers from 1 to {MAX_COUNT:,} separated "
                             "by commas")
        out.append(n)
    return out


def _array(p, name, mode, rows, cols, kb, dataflow, dram_bw, if_bw, f_bw, of_bw):
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

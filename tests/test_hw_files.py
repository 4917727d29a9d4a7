"""Hardware given as a file (--hw FILE: a TOML preset or a SCALE-Sim .cfg): what a file
must be before it is read, the checks of every .cfg field SCALE-Sim reads, and the
plausible ranges of every hardware field, all met on load whatever the command."""
import dataclasses
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import hwmodels
from hwmodels import fileio, limits, registry, schema
from simulator.cli import main

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_CFG = (ROOT / "examples" / "scalesim_32x32_ws.cfg").read_text()


def _cli(*argv, timeout=60):
    return subprocess.run([sys.executable, "-m", "simulator", *argv], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


# ---------------------------------------------------------------- what a file must be

@pytest.mark.parametrize("argv", [["hw", "show", "/dev/zero"],
                                  ["roofline", "--hw", "/dev/zero", "--workload", "gemm:4x4x4"]])
def test_a_device_is_refused_not_read_forever(argv):
    p = _cli(*argv)
    assert p.returncode == 2
    assert p.stderr.strip() == ("roofsim: error: hardware file '/dev/zero' is a character "
                                "device, not a regular file; give a file")


@pytest.mark.parametrize("name", ["x.toml", "x.cfg"])
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    # nobody ever writes to the FIFO: opening it would block for good
    p = _cli("hw", "show", str(fifo), timeout=60)
    assert p.returncode == 2 and "is a FIFO, not a regular file" in p.stderr and str(fifo) in p.stderr


@pytest.mark.parametrize("name", ["dir.cfg", "dir.toml"])
def test_a_folder_gets_one_message_in_either_format(tmp_path, name):
    (tmp_path / name).mkdir()
    with pytest.raises(ValueError, match=r"is a folder; give a preset name"):
        hwmodels.get(str(tmp_path / name))


def test_the_loaders_refuse_a_folder_themselves(tmp_path):
    from hwmodels.scalesim_cfg import load_cfg
    d = tmp_path / "d.cfg"
    d.mkdir()
    with pytest.raises(ValueError, match=r"hardware file '.*d.cfg' is a folder, not a regular file"):
        hwmodels.load_toml(d)
    with pytest.raises(ValueError, match=r"SCALE-Sim config '.*d.cfg' is a folder, not a regular file"):
        load_cfg(d)


def test_size_limit_is_one_mebibyte_and_presets_are_far_below(tmp_path):
    assert fileio.MAX_HARDWARE_FILE_BYTES == 2**20
    for n in hwmodels.names():      # a preset's TOML is a few KB
        assert len(hwmodels.dumps_toml(hwmodels.get(n)).encode()) < 16 * 1024
    toml = tmp_path / "big.toml"
    text = hwmodels.dumps_toml(hwmodels.get("gtx480"))
    # padded with a comment to exactly the limit: read; one byte more: refused
    toml.write_text(text + "#" * (2**20 - len(text.encode()) - 1) + "\n")
    assert toml.stat().st_size == 2**20
    assert hwmodels.get(str(toml)).name == "gtx480"
    toml.write_text(text + "#" * (2**20 - len(text.encode())) + "\n")
    with pytest.raises(ValueError, match=r"larger than 1,048,576 bytes"):
        hwmodels.get(str(toml))
    cfg = tmp_path / "big.cfg"
    cfg.write_text(EXAMPLE_CFG + "#" * 2**20 + "\n")
    with pytest.raises(ValueError, match=r"SCALE-Sim config .*larger than 1,048,576 bytes"):
        hwmodels.get(str(cfg))


# ---------------------------------------------------------------- SCALE-Sim .cfg fields

def _cfg(tmp_path, old, new):
    assert old in EXAMPLE_CFG
    p = tmp_path / "bad.cfg"
    p.write_text(EXAMPLE_CFG.replace(old, new, 1))
    return p


@pytest.mark.parametrize("old,new,needle", [
    # other scripts' digits, Python's int() extras: ASCII decimal only
    ("ArrayHeight:    32", "ArrayHeight: \u0663\u0662", r"ArrayHeight = '٣٢': must be an integer"),
    ("ArrayHeight:    32", "ArrayHeight: 3_2", r"ArrayHeight = '3_2'"),
    ("ArrayHeight:    32", "ArrayHeight: +32", r"ArrayHeight = '\+32'"),
    ("ArrayHeight:    32", "ArrayHeight: 99999999999999999999",
     r"ArrayHeight = 99999999999999999999: must be an integer from 1 to 1,048,576"),
    ("ArrayWidth:     32", "ArrayWidth: 1048577", r"ArrayWidth = 1048577"),
    # Bandwidth is checked in CALC mode too, where SCALE-Sim does not read it
    ("Bandwidth : 10", "Bandwidth : yesterday", r"Bandwidth = 'yesterday': expected words"),
    ("Bandwidth : 10", "Bandwidth : -10", r"Bandwidth = '-10'"),
    ("Bandwidth : 10", "Bandwidth : nan", r"Bandwidth = 'nan'"),
    ("Bandwidth : 10", "Bandwidth : 1e400", r"Bandwidth = '1e400'"),
    ("Bandwidth : 10", "Bandwidth : 0", r"Bandwidth = '0'"),
    ("Bandwidth : 10", "Bandwidth : 10,,10", r"Bandwidth = '10,,10'"),
    # fields roofsim does not use but SCALE-Sim reads with int()
    ("IfmapOffset:    0", "IfmapOffset: x", r"\[architecture_presets\] IfmapOffset = 'x'"),
    ("IfmapOffset:    0", "IfmapOffset: -1", r"IfmapOffset = '-1': must be an integer from 0"),
    ("ReadRequestBuffer: 32", "ReadRequestBuffer: x", r"ReadRequestBuffer = 'x'"),
    ("ReadRequestBuffer: 32", "ReadRequestBuffer: 0", r"ReadRequestBuffer = 0: must be an integer from 1"),
    ("WriteRequestBuffer: 32", "WriteRequestBuffer: 3.5", r"WriteRequestBuffer = '3.5'"),
    ("IfmapSRAMBankBandwidth: 10", "IfmapSRAMBankBandwidth: x", r"\[layout\] IfmapSRAMBankBandwidth = 'x'"),
    ("FilterSRAMBankPort: 2", "FilterSRAMBankPort: 0", r"FilterSRAMBankPort = 0"),
    ("IfmapSRAMBankNum: 10", "IfmapSRAMBankNum: ten", r"IfmapSRAMBankNum = 'ten'"),
    # booleans: true or false, nothing SCALE-Sim would silently read as false
    ("SparsitySupport : false", "SparsitySupport : maybe", r"SparsitySupport = 'maybe': allowed: True, False"),
    ("UseRamulatorTrace: False", "UseRamulatorTrace: no", r"UseRamulatorTrace = 'no'"),
    ("IfmapCustomLayout: False", "IfmapCustomLayout: perhaps", r"IfmapCustomLayout = 'perhaps'"),
    # keywords as SCALE-Sim matches them: exactly
    ("Dataflow : ws", "Dataflow : WS", r"Dataflow = 'WS': allowed: os, ws, is"),
    ("InterfaceBandwidth: CALC", "InterfaceBandwidth: calc", r"InterfaceBandwidth = 'calc'"),
    # SCALE-Sim interpolates %(name)s; this reader would not
    ("run_name = example_32x32_ws", "run_name = %(foo)s", r"run_name = '%\(foo\)s': '%' is not allowed"),
    ("IfmapSramSzkB:   64", "IfmapSramSzkB:   16777217", r"IfmapSramSzkB = 16777217"),
])
def test_every_field_scalesim_reads_is_checked(tmp_path, old, new, needle):
    p = _cfg(tmp_path, old, new)
    with pytest.raises(ValueError, match=needle) as e:
        hwmodels.get(str(p))
    assert str(e.value).startswith(f"{p}: ")


def test_the_example_cfg_still_loads_and_means_what_it_says():
    hw = hwmodels.get(str(ROOT / "examples" / "scalesim_32x32_ws.cfg"))
    assert (hw.name, hw.rows, hw.cols, hw.dataflow) == ("example_32x32_ws", 32, 32, "ws")
    assert hw.ifmap_sram.size_bytes == 64 * 1024 and hw.scalesim.bandwidth_mode == "CALC"


def test_well_formed_values_at_the_limits_load(tmp_path):
    p = _cfg(tmp_path, "IfmapOffset:    0", "IfmapOffset: 281474976710656")   # 2**48
    assert hwmodels.get(str(p)).rows == 32
    p = _cfg(tmp_path, "Bandwidth : 10", "Bandwidth : 10, 20, 30")
    assert hwmodels.get(str(p)).rows == 32


def test_array_limits_are_checked_on_load_for_every_command(tmp_path, capsys):
    """hw show used to accept what simulate refused: the limit is now the hardware's."""
    p = _cfg(tmp_path, "ArrayHeight:    32", "ArrayHeight: 2000000")
    errs = []
    for argv in (["hw", "show", str(p)], ["roofline", "--hw", str(p), "--workload", "gemm:4x4x4"],
                 ["simulate", "systolic", "--hw", str(p), "--workload", "gemm:4x4x4"]):
        assert main(argv) == 2
        errs.append(capsys.readouterr().err)
    assert len(set(errs)) == 1 and "ArrayHeight = 2000000" in errs[0]
    # the same limit for a TOML and a --set (1,048,576 PEs a side)
    with pytest.raises(ValueError, match=r"rows = 1048577: must be between 1 and 1,048,576"):
        hwmodels.with_overrides(hwmodels.get("systolic-4x4"), ["rows=1048577"])


# ---------------------------------------------------------------- TOML field ranges

def _numeric_fields():
    """Every int or float (or optional, or tuple of) field of the schema, as Class.field."""
    out = []
    for cls in (schema.PeakRates, schema.Cache, schema.DRAM, schema.HostLink, schema.SM,
                schema.SIMTGPU, schema.MulticoreCPU, schema.Scratchpad,
                schema.ScaleSimInterface, schema.SystolicArray):
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            tp, _ = registry._unwrap_optional(hints[f.name])
            if typing.get_origin(tp) is tuple:
                tp = typing.get_args(tp)[0]
            if tp in (int, float):
                out.append(f"{cls.__name__}.{f.name}")
    return out


def test_every_numeric_field_has_a_range_with_a_reason():
    fields = _numeric_fields()
    assert len(fields) > 60
    missing = [f for f in fields if f not in limits.LIMITS]
    assert missing == []
    for key in fields:
        lo, hi, why = limits.LIMITS[key]
        assert lo <= hi and why.strip(), key
    assert set(limits.LIMITS) <= set(fields)       # no stale entries


def _gpu_toml(tmp_path, **changes):
    d = hwmodels.to_dict(hwmodels.get("h100-sxm"))
    d.update(changes)
    p = tmp_path / "gpu.toml"
    p.write_text(_dump(d))
    return p


def _dump(d):
    """TOML of a dict built by hand (values the schema would refuse cannot go through
    dumps_toml, which takes hardware)."""
    lines, tables = [], []
    for k, v in d.items():
        if isinstance(v, dict):
            tables.append((k, v))
        else:
            lines.append(f"{k} = {registry._toml_value(v)}")
    for k, v in tables:
        lines.append(f"[{k}]")
        for kk, vv in v.items():
            if isinstance(vv, dict):
                continue
            lines.append(f"{kk} = {registry._toml_value(vv)}")
        for kk, vv in v.items():
            if isinstance(vv, dict):
                lines.append(f"[{k}.{kk}]")
                lines += [f"{a} = {registry._toml_value(b)}" for a, b in vv.items()]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("changes,needle", [
    # a clock between 1 MHz and 100 GHz (1e-300 Hz gave a peak of 3.4e-296 FLOP/s)
    ({"clock_hz": 1e-300}, r"SIMTGPU.clock_hz = 1e-300: must be between 1e\+06 and 1e\+11"),
    ({"clock_hz": 999999.0}, r"clock_hz = 999999.0"),
    ({"clock_hz": 1.0000001e11}, r"clock_hz = 100000010000.0"),
    ({"clock_hz": 1.98}, r"clock_hz = 1.98"),                 # GHz meant
    ({"name": ""}, r"SIMTGPU.name = '': must not be empty"),
    ({"name": "  "}, r"SIMTGPU.name = '  ': must not be empty"),
    ({"name": "x\x7fy"}, r"SIMTGPU.name = 'x\\x7fy': must be printable text; it holds '\\x7f'"),
    ({"name": "a\x07b"}, r"it holds '\\x07' \(U\+0007\)"),
    ({"description": "tab\there"}, r"SIMTGPU.description = .*must be printable"),
    ({"name": "n" * 201}, r"SIMTGPU.name: 201 characters; at most 200"),
    ({"compute_capability": "99.99"}, r"compute_capability = '99.99': expected MAJOR.MINOR"),
    ({"compute_capability": "20.0"}, r"compute_capability = '20.0'"),
    ({"compute_capability": "0.9"}, r"compute_capability = '0.9'"),
    ({"compute_capability": "9.10"}, r"compute_capability = '9.10'"),
    ({"compute_capability": "\u0669.\u0660"}, r"compute_capability = '٩.٠'"),
    ({"kernel_launch_s": 2.0}, r"kernel_launch_s = 2.0: must be between 0 and 1"),
    ({"sm_count": 2**20 + 1}, r"sm_count = 1048577"),
])
def test_toml_fields_out_of_range_are_refused(tmp_path, changes, needle):
    p = _gpu_toml(tmp_path, **changes)
    with pytest.raises(ValueError, match=needle) as e:
        hwmodels.get(str(p))
    assert str(e.value).startswith(f"{p}: ")


@pytest.mark.parametrize("changes", [
    {"clock_hz": 1e6}, {"clock_hz": 1e11}, {"compute_capability": "1.0"},
    {"compute_capability": "12.1"}, {"compute_capability": "19.9"}, {"name": "n" * 200},
    {"name": "H100 (ünïcode) ok"}, {"kernel_launch_s": 1.0},
])
def test_toml_fields_at_the_limits_load(tmp_path, changes):
    hw = hwmodels.get(str(_gpu_toml(tmp_path, **changes)))
    for k, v in changes.items():
        assert getattr(hw, k) == v


def test_nested_field_ranges(tmp_path):
    """Ranges apply inside tables and to --set, naming the nested field."""
    h = hwmodels.get("h100-sxm")
    with pytest.raises(ValueError, match=r"DRAM.bandwidth_bytes_per_s = 1e\+17: must be between "
                                         r"1e\+06 and 1e\+16"):
        dataclasses.replace(h.dram, bandwidth_bytes_per_s=1e17)
    assert dataclasses.replace(h.dram, bandwidth_bytes_per_s=1e16).bandwidth_bytes_per_s == 1e16
    with pytest.raises(ValueError, match=r"dram: DRAM.bandwidth_bytes_per_s = 999999.0"):
        hwmodels.with_overrides(h, ["dram.bandwidth_bytes_per_s=999999B/s"])
    with pytest.raises(ValueError, match=r"DRAM.sustained_fraction = 0.001"):
        hwmodels.with_overrides(h, ["dram.sustained_fraction=0.001"])
    with pytest.raises(ValueError, match=r"Cache.latency_cycles = 1000001"):
        hwmodels.with_overrides(h, ["l2.latency_cycles=1000001"])
    with pytest.raises(ValueError, match=r"HostLink.kind = 'PCIe\\x1b\[0m'"):
        hwmodels.with_overrides(h, ["host_link.kind=PCIe\x1b[0m"])


def test_presets_are_unchanged_by_the_checks():
    """Each preset loads and round-trips through its TOML to equal hardware."""
    for n in hwmodels.names():
        hw = hwmodels.get(n)
        assert hwmodels.from_dict(hwmodels.to_dict(hw)) == hw


# ---------------------------------------------------------------- systolic SRAMs on load

def _systolic(rows, cols, sizes, double=True, word=4):
    base = hwmodels.get("systolic-8x8")
    return dataclasses.replace(
        base, rows=rows, cols=cols, word_bytes=word,
        ifmap_sram=schema.Scratchpad(size_bytes=sizes[0], double_buffered=double),
        filter_sram=schema.Scratchpad(size_bytes=sizes[1], double_buffered=double),
        ofmap_sram=schema.Scratchpad(size_bytes=sizes[2], double_buffered=double))


def test_sram_minimum_is_one_full_array_fold_in_the_least_needy_dataflow():
    """8x4 array, 4-byte words, double-buffered: the ifmap SRAM feeds one word per row
    (8 words x 4 B x 2 halves = 64 B), the filter SRAM one word per row or column
    (is: 8, os: 4 -> 4 words, 32 B), the ofmap SRAM one per column (4 words, 32 B)."""
    big = 64 * 1024
    _systolic(8, 4, (64, 32, 32))                      # exactly enough
    with pytest.raises(ValueError, match=r"ifmap_sram.size_bytes = 63: a 8x4 array needs at "
                                         r"least 8 words of 4 B per half \(double-buffered\) "
                                         r"in it, at least 64 B"):
        _systolic(8, 4, (63, big, big))
    with pytest.raises(ValueError, match=r"filter_sram.size_bytes = 31: .* at least 32 B"):
        _systolic(8, 4, (big, 31, big))
    with pytest.raises(ValueError, match=r"ofmap_sram.size_bytes = 31: .* at least 32 B"):
        _systolic(8, 4, (big, big, 31))
    # single-buffered: the whole SRAM is one half
    _systolic(8, 4, (32, 16, 16), double=False)
    with pytest.raises(ValueError, match=r"ifmap_sram.size_bytes = 31: .*at least 32 B"):
        _systolic(8, 4, (31, 16, 16), double=False)


def test_a_one_byte_sram_is_refused_in_every_mode(capsys):
    f = str(ROOT / "tests" / "bad_inputs" / "hw2_ifmap_1_byte.toml")
    errs = []
    for mode in ("default", "scalesim"):
        assert main(["simulate", "systolic", "--hw", f, "--workload", "gemm:64x64x64",
                     "--mode", mode]) == 2
        errs.append(capsys.readouterr().err)
    assert errs[0] == errs[1]
    assert "ifmap_sram.size_bytes = 1: a 8x8 array needs at least 8 words of 4 B" in errs[0]


def test_a_byte_order_mark_is_not_part_of_a_hardware_file(tmp_path):
    """Issue 25, class 4: a UTF-8 byte-order mark (some Windows editors write one) is
    read as what it is, in a preset's TOML and in a SCALE-Sim .cfg."""
    import hwmodels
    from hwmodels import registry
    for src, suffix in ((None, ".toml"), ("examples/scalesim_32x32_ws.cfg", ".cfg")):
        plain = tmp_path / f"plain{suffix}"
        if src is None:
            registry.save_toml(hwmodels.get("gtx480"), plain)
        else:
            plain.write_bytes((ROOT / src).read_bytes())
        bom = tmp_path / f"bom{suffix}"
        bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
        a, b = hwmodels.get(str(bom)), hwmodels.get(str(plain))
        # (a .cfg's description names its file)
        assert a == dataclasses.replace(b, description=b.description.replace("plain", "bom"))

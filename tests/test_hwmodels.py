"""Presets against their published figures, validation, TOML round trip, overrides."""
import dataclasses
import re
import tomllib

import pytest

import hwmodels
from hwmodels import Cache, PeakRates, ridge_point

ALL = hwmodels.names()


def test_preset_names_exact():
    assert set(ALL) == {"gtx480", "c2050", "v100-sxm2", "h100-sxm", "h200", "tpu-v1", "k80",
                        "haswell-e5-2699v3", "systolic-4x4", "systolic-8x8"}


# (preset, precision, published peak in FLOP/s, relative tolerance) from docs/sources.md
PUBLISHED_PEAKS = [
    ("gtx480", "fp32", 1.345e12, 0.002),       # 480 lanes x 2 x 1.401 GHz
    ("c2050", "fp32", 1.03e12, 0.002),
    ("c2050", "fp64", 0.515e12, 0.002),
    ("v100-sxm2", "fp32", 15.7e12, 0.01),
    ("v100-sxm2", "fp64", 7.8e12, 0.01),
    ("v100-sxm2", "fp16", 125e12, 0.01),
    ("h100-sxm", "fp32", 67e12, 0.01),
    ("h100-sxm", "fp64", 67e12, 0.01),       # FP64 tensor
    ("h200", "fp32", 67e12, 0.01),
    ("tpu-v1", "int8", 92e12, 0.01),
    ("k80", "fp32", 2.8e12, 0.01),
    ("haswell-e5-2699v3", "fp32", 1.3e12, 0.02),
    ("haswell-e5-2699v3", "int8", 2.6e12, 0.02),
]


@pytest.mark.parametrize("name,prec,value,tol", PUBLISHED_PEAKS)
def test_peaks_match_published(name, prec, value, tol):
    assert hwmodels.get(name).peak_flop_per_s(prec) == pytest.approx(value, rel=tol)


def test_h100_tensor_peak_is_datasheet_scaled_to_device_clock():
    # datasheet 989.4 TFLOP/s BF16 dense at 1830 MHz; preset uses the 1980 MHz device clock
    hw = hwmodels.get("h100-sxm")
    assert hw.peak_flop_per_s("bf16") == pytest.approx(989.4e12 * 1980 / 1830, rel=0.001)


@pytest.mark.parametrize("name,bw", [("gtx480", 177.4e9), ("c2050", 144e9), ("v100-sxm2", 900e9),
                                     ("h100-sxm", 3.35e12), ("h200", 4.8e12), ("tpu-v1", 34e9),
                                     ("k80", 160e9), ("haswell-e5-2699v3", 51e9)])
def test_dram_bandwidth_matches_reference(name, bw):
    assert hwmodels.get(name).dram.bandwidth_bytes_per_s == pytest.approx(bw)


def test_tpu_ridge_is_about_1350_mac_per_byte():
    # TPU paper: about 1350 MAC per byte of weight-memory traffic
    hw = hwmodels.get("tpu-v1")
    assert ridge_point(hw, "int8") / 2 == pytest.approx(1350, rel=0.01)


@pytest.mark.parametrize("name", ALL)
def test_ridge_is_peak_over_bandwidth(name):
    hw = hwmodels.get(name)
    for prec in hw.peak_rates().supported():
        for lv in hw.memory_levels():
            assert ridge_point(hw, prec, lv.name) == pytest.approx(
                hw.peak_flop_per_s(prec) / lv.bandwidth_bytes_per_s)


@pytest.mark.parametrize("name", ALL)
def test_memory_levels_ordered_outwards_in(name):
    levels = hwmodels.get(name).memory_levels()
    assert levels[0].name == "dram"
    caps = [lv.inner_capacity_bytes for lv in levels]
    assert caps == sorted(caps, reverse=True) and all(c > 0 for c in caps)
    bws = [lv.bandwidth_bytes_per_s for lv in levels]
    assert bws == sorted(bws), "inner levels should be at least as fast"


@pytest.mark.parametrize("name", ALL)
def test_toml_round_trip_every_preset(name, tmp_path):
    hw = hwmodels.get(name)
    path = tmp_path / f"{name}.toml"
    hwmodels.save_toml(hw, path)
    again = hwmodels.load_toml(path)
    assert again == hw
    # the file is plain TOML with the schema version and family
    data = tomllib.loads(path.read_text())
    assert data["schema_version"] == 1 and data["family"] == hw.family
    # and --hw accepts the path
    assert hwmodels.get(str(path)) == hw


def test_toml_accepts_unit_strings(tmp_path):
    text = hwmodels.dumps_toml(hwmodels.get("gtx480")).replace(
        "size_bytes = 786432", 'size_bytes = "768KiB"')
    p = tmp_path / "x.toml"
    p.write_text(text)
    assert hwmodels.load_toml(p).l2.size_bytes == 768 * 1024


@pytest.mark.parametrize("edit,needle", [
    (lambda t: t.replace("sm_count = 15", "sm_count = 0"), "sm_count = 0: must be > 0"),
    (lambda t: t.replace("sm_count = 15", "sm_count = 15\nsm_cuont = 3"), "sm_cuont: unknown field"),
    (lambda t: t.replace("schema_version = 1", "schema_version = 7"), "schema_version = 7"),
    (lambda t: re.sub(r"^sm_count = .*\n", "", t, flags=re.M), "sm_count: missing"),
    (lambda t: t.replace("size_bytes = 786432", 'size_bytes = "768"'), "has no unit"),
    (lambda t: t.replace("[sm.l1]", "[sm.l1"), "malformed TOML"),
    (lambda t: t.replace("ways = 8", "ways = 7", 1), "multiple of line_bytes x ways"),
    (lambda t: t.replace('family = "simt"', 'family = "fpga"'), "family = 'fpga'"),
])
def test_toml_errors_name_the_field(edit, needle, tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text(edit(hwmodels.dumps_toml(hwmodels.get("gtx480"))))
    with pytest.raises(ValueError, match=needle) as e:
        hwmodels.load_toml(p)
    assert str(p) in str(e.value)


def test_overrides():
    hw = hwmodels.get("h100-sxm")
    new = hwmodels.with_overrides(hw, ["l2.size_bytes=8MiB", "clock_hz=1.5GHz", "sm_count=100"])
    assert new.l2.size_bytes == 8 * 2**20 and new.clock_hz == 1.5e9 and new.sm_count == 100
    assert new.dram == hw.dram and hw.l2.size_bytes == 50 * 2**20  # original untouched
    assert new.peak_flop_per_s("fp32") == pytest.approx(100 * 256 * 1.5e9)


@pytest.mark.parametrize("assignment,needle", [
    ("l2.sise_bytes=8MiB", "unknown field"),
    ("l2.size_bytes=8", "has no unit"),
    ("l2.size_bytes=0B", "must be > 0"),
    ("l2.size_bytes", "expected FIELD=VALUE"),
    ("sm_count=ten", "not a number"),
    ("sm_count=1.5", "whole number"),
    ("dram.bandwidth_bytes_per_s=900GB", "not allowed"),
])
def test_override_errors(assignment, needle):
    with pytest.raises(ValueError, match=needle):
        hwmodels.with_overrides(hwmodels.get("h100-sxm"), [assignment])


@pytest.mark.parametrize("assignments,start", [
    (["l2.sise_bytes=8MiB"], "l2.sise_bytes: unknown field for h100-sxm; did you mean l2.size_bytes"),
    (["l2.size_bytes"], "'l2.size_bytes': expected FIELD=VALUE"),
    (["sm_count=15_0"], "sm_count: '15_0' is not a number"),
    (["l2.size_bytes=8"], "l2.size_bytes: '8' has no unit"),
    (["sm_count=0"], "sm_count=0: SIMTGPU.sm_count = 0: must be > 0"),
    (["sm.warp_size=2", "sm.max_warps=768"], "sm.warp_size=2, sm.max_warps=768: sm: SM.max_warps"),
])
def test_override_errors_start_with_the_assignment(assignments, start):
    """Messages name the field (or the assignment) first and no CLI flag: the CLI puts
    ``--set `` before them."""
    with pytest.raises(ValueError) as e:
        hwmodels.with_overrides(hwmodels.get("h100-sxm"), assignments)
    assert str(e.value).startswith(start)


def test_override_of_an_absent_table_names_the_key():
    with pytest.raises(ValueError, match=r"^host_link\.kind: haswell-e5-2699v3 has no host_link$"):
        hwmodels.with_overrides(hwmodels.get("haswell-e5-2699v3"), ["host_link.kind=pcie"])


def test_override_keys_cover_nested_fields():
    keys = hwmodels.override_keys(hwmodels.get("gtx480"))
    assert "l2.size_bytes" in keys and "sm.l1.ways" in keys and "sm.tensor.fp16_flop_per_cycle" in keys


def test_unknown_preset_suggests():
    with pytest.raises(ValueError, match="did you mean 'h100-sxm'"):
        hwmodels.get("h100sxm")


@pytest.mark.parametrize("typed,meant", [
    ("h100", "h100-sxm"),       # a prefix of the name beats difflib's h200
    ("v100", "v100-sxm2"),
    ("tpu", "tpu-v1"),
    ("gtx48", "gtx480"),
    ("H100", "h100-sxm"),       # case ignored
    ("sxm2", "v100-sxm2"),      # a dash-separated part
    ("h2000", "h200"),          # begins no name: the closest whole name
    ("h100sxm", "h100-sxm"),
])
def test_unknown_preset_suggests_by_the_whole_name(typed, meant):
    with pytest.raises(ValueError) as e:
        hwmodels.get(typed)
    assert f"hardware {typed!r} is unknown (did you mean {meant!r}?)" in str(e.value)


def test_suggest_ranks_prefixes_then_parts_then_close_matches():
    from hwmodels import suggest
    names = ["h200", "h100-sxm", "sm.l1.size_bytes", "l2.size_bytes", "l2.sise"]
    assert suggest("h100", names, n=5) == ["h100-sxm", "h200"]
    assert suggest("size", names, n=5) == ["sm.l1.size_bytes", "l2.size_bytes"]
    assert suggest("l2.si", names, n=5) == ["l2.size_bytes", "l2.sise"]
    assert suggest("l2.sise_bytes", names, n=1) == ["l2.size_bytes"]
    assert suggest("", names) == [] and suggest("zzzz", names) == []


def test_toml_and_override_fields_suggest_by_the_whole_name(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text(hwmodels.dumps_toml(hwmodels.get("gtx480")).replace(
        "sm_count = 15", "sm_count = 15\nclo = 3"))          # difflib finds nothing for clo
    with pytest.raises(ValueError, match=r"clo: unknown field \(did you mean 'clock_hz'\?\)"):
        hwmodels.load_toml(p)
    # difflib alone offers sm.max_threads, sm.max_warps, sm.max_blocks
    with pytest.raises(ValueError, match=r"sm\.max_reg: unknown field for h100-sxm; did you mean "
                                         r"sm\.max_registers_per_thread, "
                                         r"sm\.max_registers_per_block, sm\.max_threads\?"):
        hwmodels.with_overrides(hwmodels.get("h100-sxm"), ["sm.max_reg=8"])


def test_unsupported_precision_is_an_error_not_a_fallback():
    with pytest.raises(ValueError, match="gtx480.*supports: fp64, fp32"):
        hwmodels.get("gtx480").peak_flop_per_s("fp16")


@pytest.mark.parametrize("kw,needle", [
    (dict(size_bytes=0, latency_cycles=1, bandwidth_bytes_per_cycle=1.0), "size_bytes = 0"),
    (dict(size_bytes=4096, line_bytes=96, latency_cycles=1, bandwidth_bytes_per_cycle=1.0),
     "power of two"),
    (dict(size_bytes=4096, sector_bytes=256, latency_cycles=1, bandwidth_bytes_per_cycle=1.0),
     "sector_bytes"),
    (dict(size_bytes=4096, latency_cycles=-1, bandwidth_bytes_per_cycle=1.0), "latency_cycles"),
])
def test_cache_validation(kw, needle):
    with pytest.raises(ValueError, match=needle):
        Cache(**kw)


def test_sm_validation_names_field():
    sm = hwmodels.get("gtx480").sm
    with pytest.raises(ValueError, match="SM.max_shared_per_block_bytes"):
        dataclasses.replace(sm, max_shared_per_block_bytes=sm.shared_bytes + 1)
    with pytest.raises(ValueError, match="PeakRates.fp16_flop_per_cycle = -1"):
        PeakRates(fp16_flop_per_cycle=-1.0)


def test_systolic_peak_scales_with_array():
    hw = hwmodels.get("systolic-4x4")
    big = dataclasses.replace(hw, rows=128, cols=64)
    assert big.peak_flop_per_s("fp32") / hw.peak_flop_per_s("fp32") == pytest.approx(128 * 64 / 16)
    with pytest.raises(ValueError, match="SystolicArray.rows = 0"):
        dataclasses.replace(hw, rows=0)


def test_shared_carveouts_are_bytes():
    """Hopper's carveouts are a tuple of bytes; l1_bytes picks the smallest carveout that
    holds the shared memory the resident blocks need (the L1 gets the rest)."""
    sm = hwmodels.get("h100-sxm").sm
    kib = (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)
    assert sm.shared_carveouts_bytes == tuple(k * 1024 for k in kib)
    assert sm.l1_bytes(0) == 256 * 1024
    assert sm.l1_bytes(8 * 1024) == 248 * 1024
    assert sm.l1_bytes(8 * 1024 + 1) == 240 * 1024
    assert sm.l1_bytes(228 * 1024) == 28 * 1024
    # a fixed L1 ignores the carveouts
    gtx = hwmodels.get("gtx480").sm
    assert gtx.shared_carveouts_bytes == () and gtx.l1_bytes(1000) == gtx.l1.size_bytes


def test_shared_carveouts_toml_and_overrides(tmp_path):
    hw = hwmodels.get("h100-sxm")
    text = hwmodels.dumps_toml(hw)
    assert "shared_carveouts_bytes = [0, 8192, 16384," in text
    p = tmp_path / "h.toml"
    p.write_text(text.replace("shared_carveouts_bytes = [0, 8192,",
                              'shared_carveouts_bytes = ["0B", "8KiB",'))
    assert hwmodels.load_toml(p) == hw                 # unit strings inside the array
    for value in ("0B,100KiB,228KiB", "[0B, 100KiB, 228KiB]", " 0B , 100KiB,228KiB "):
        new = hwmodels.with_overrides(hw, [f"sm.shared_carveouts_bytes={value}"])
        assert new.sm.shared_carveouts_bytes == (0, 100 * 1024, 228 * 1024)
        assert new.sm.l1_bytes(1) == 156 * 1024
        q = tmp_path / "o.toml"
        hwmodels.save_toml(new, q)
        assert hwmodels.load_toml(q) == new


@pytest.mark.parametrize("value,needle", [
    ("0B,8KiB,x", r"sm.shared_carveouts_bytes\[2\]: 'x' is not a number with a unit"),
    ("0,8KiB,228KiB", r"sm.shared_carveouts_bytes\[0\]: '0' has no unit"),
    ("0B,,228KiB", "has an empty item"),
    ("1.5B,228KiB", "whole number"),
    ("16KiB,8KiB,228KiB", r"SM.shared_carveouts_bytes = \(16384, 8192, 233472\): must be .*ascending"),
    ("0B,8KiB,16KiB", "the largest at least shared_bytes"),       # below shared_bytes
    ("0B,300KiB", "at most l1_shared_bytes"),
    ("", "the largest at least shared_bytes"),
])
def test_shared_carveouts_errors(value, needle):
    with pytest.raises(ValueError, match=needle):
        hwmodels.with_overrides(hwmodels.get("h100-sxm"), [f"sm.shared_carveouts_bytes={value}"])


def test_shared_carveouts_validated_on_construction():
    sm = hwmodels.get("h100-sxm").sm
    for bad in ((0, -8), (0, True), (0, 8.0), "0,8,16"):
        with pytest.raises(ValueError, match="SM.shared_carveouts_bytes = .*whole byte counts"):
            dataclasses.replace(sm, shared_carveouts_bytes=bad)


def test_atomic_write(tmp_path):
    from hwmodels import fileio, registry
    assert not hasattr(registry, "atomic_write")       # one writer, in hwmodels.fileio
    p = tmp_path / "out.txt"
    fileio.atomic_write(p, "one")
    fileio.atomic_write(p, b"two")
    assert p.read_bytes() == b"two" and [x.name for x in tmp_path.iterdir()] == ["out.txt"]
    with pytest.raises(ValueError, match="does not exist"):
        fileio.atomic_write(tmp_path / "nosuch" / "x.txt", "x")

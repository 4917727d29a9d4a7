import pytest

from hwmodels.units import family_of_field, parse_quantity


@pytest.mark.parametrize("text,family,expected", [
    ("48KiB", "bytes", 48 * 1024),
    ("8MiB", "bytes", 8 * 2**20),
    ("786432B", "bytes", 786432),
    ("1.5GB", "bytes", 1.5e9),
    ("1401MHz", "hz", 1.401e9),
    ("1.98GHz", "hz", 1.98e9),
    ("177.4GB/s", "bytes_per_s", 177.4e9),
    ("3.35TB/s", "bytes_per_s", 3.35e12),
    ("40us", "s", 40e-6),
    ("2ns", "s", 2e-9),
])
def test_parse_quantity(text, family, expected):
    assert parse_quantity(text, family) == pytest.approx(expected)


@pytest.mark.parametrize("text,family,needle", [
    ("8", "bytes", "has no unit"),
    ("1401", "hz", "has no unit"),
    ("8GHz", "bytes", "not allowed"),
    ("fast", "hz", "not a number"),
    ("12MB", "bytes_per_s", "not allowed"),
])
def test_parse_quantity_rejects(text, family, needle):
    with pytest.raises(ValueError, match=needle) as e:
        parse_quantity(text, family, field="l2.size_bytes")
    assert "l2.size_bytes" in str(e.value) and text in str(e.value)


def test_family_of_field():
    assert family_of_field("size_bytes") == "bytes"
    assert family_of_field("bandwidth_bytes_per_s") == "bytes_per_s"
    assert family_of_field("clock_hz") == "hz"
    assert family_of_field("latency_s") == "s"
    assert family_of_field("latency_cycles") is None

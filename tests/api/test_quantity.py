"""Quantities and durations as a Kubernetes user writes them in manifests."""

from decimal import Decimal

import pytest

from phalanx.api.quantity import (
    QuantityError,
    format_duration,
    format_resource,
    parse_duration,
    parse_quantity,
    resource_value,
    to_milli,
    to_units,
)

GI = 2**30
MI = 2**20


@pytest.mark.parametrize(("raw", "millicores"), [
    ("100m", 100),
    ("1.5", 1500),
    ("2", 2000),
    (2, 2000),
    (0.5, 500),
    ("0.25", 250),
    (".5", 500),
    ("1e3", 1_000_000),
    ("1E3", 1_000_000),
    ("1e-3", 1),
    ("250000u", 250),
    ("0", 0),
    ("+1", 1000),
    ("1k", 1_000_000),
])
def test_cpu_quantities_in_millicores(raw: object, millicores: int) -> None:
    assert resource_value("cpu", raw) == millicores


@pytest.mark.parametrize(("raw", "count"), [
    ("16Gi", 16 * GI),
    ("0.5Gi", GI // 2),
    ("1.5Gi", 3 * GI // 2),
    ("200Mi", 200 * MI),
    ("1Ki", 1024),
    ("1Ti", 2**40),
    ("1Pi", 2**50),
    ("1Ei", 2**60),
    ("64G", 64 * 10**9),
    ("1M", 10**6),
    ("129e6", 129 * 10**6),
    ("123456789", 123456789),
    (1073741824, GI),
    ("8", 8),
])
def test_memory_and_counts_in_base_units(raw: object, count: int) -> None:
    assert resource_value("memory", raw) == count


def test_fractional_base_units_round_up_like_value() -> None:
    # resource.Quantity.Value() rounds up: 100m of memory is one byte, 1.2 GPUs would be two.
    assert to_units("100m") == 1
    assert to_units("1.2") == 2
    assert to_milli("0.0001") == 1  # MilliValue rounds up too


def test_exact_value_is_kept() -> None:
    assert parse_quantity("1.5Gi") == Decimal(3 * GI) / 2
    assert parse_quantity("100m") == Decimal("0.1")


def test_exponent_suffix_is_not_exa() -> None:
    # "1E" alone is one exa; "1E3" is 1000 (the exponent form wins when digits follow).
    assert parse_quantity("1E") == Decimal(10) ** 18
    assert parse_quantity("1E3") == 1000


@pytest.mark.parametrize("raw", ["-1", "-100m", "-0.5Gi", -1, -0.5, "-1e3"])
def test_negative_quantities_are_rejected(raw: object) -> None:
    with pytest.raises(QuantityError, match="negative"):
        parse_quantity(raw)


@pytest.mark.parametrize("raw", [
    "4 cores", "abc", "", "1.2.3", "Gi", "1GB", "1gi", "1Mb", "0x10", "1e", "1e3Gi", "--1", ".", "1 Gi",
    None, True, [], {}, float("nan"), float("inf"),
])
def test_garbage_is_rejected(raw: object) -> None:
    with pytest.raises(QuantityError, match="invalid quantity"):
        parse_quantity(raw)


def test_quantity_too_large_for_int64_is_rejected() -> None:
    # Kubernetes counts in int64; a value beyond it cannot be scheduled with and must not crash the engine.
    with pytest.raises(QuantityError):
        resource_value("cpu", "1e30")
    with pytest.raises(QuantityError):
        resource_value("memory", "16Ei")  # 2**64 bytes
    assert resource_value("memory", "7Ei") == 7 * 2**60


def test_format_resource() -> None:
    assert format_resource("cpu", 3500) == "3.5"
    assert format_resource("memory", 16 * GI) == "16Gi"
    assert format_resource("memory", 200 * MI) == "200Mi"
    assert format_resource("nvidia.com/gpu", 4) == "4"


@pytest.mark.parametrize(("raw", "seconds"), [
    ("90s", 90.0),
    ("1h30m", 5400.0),
    ("2d", 172800.0),
    ("1.5h", 5400.0),
    ("500ms", 0.5),
    ("2m30s", 150.0),
    ("0s", 0.0),
    ("3600", 3600.0),
    (3600, 3600.0),
    (2.5, 2.5),
    ("1e3", 1000.0),
    (" 10m ", 600.0),
])
def test_durations(raw: object, seconds: float) -> None:
    assert parse_duration(raw) == seconds


@pytest.mark.parametrize("raw", ["", "soon", "-5s", "-1", -1, "1x", "1h30", "h", "30s1", "inf", "nan", True,
                                 None, float("inf"), "1h 30m"])
def test_bad_durations_are_rejected(raw: object) -> None:
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(raw)


def test_format_duration_round_trips() -> None:
    for text in ("1h30m", "45s", "2h", "1m5s"):
        assert format_duration(parse_duration(text)) == text
    assert format_duration(0) == "0s"

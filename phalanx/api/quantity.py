"""Kubernetes resource quantities (`500m`, `1.5`, `16Gi`, `1e3`) and Go-style durations (`1h30m`)."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_QUANTITY = re.compile(r"^([+-]?)([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?$")
_SUFFIX: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
    "P": Decimal("1e15"), "E": Decimal("1e18"),
    "Ki": Decimal(2**10), "Mi": Decimal(2**20), "Gi": Decimal(2**30), "Ti": Decimal(2**40),
    "Pi": Decimal(2**50), "Ei": Decimal(2**60),
}


# Kubernetes counts quantities in int64; anything larger cannot be a request or an allocatable amount.
MAX_INT64 = 2**63 - 1


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity, or a negative one."""


def _shown(raw: object) -> str:
    """The value as messages quote it, clipped: one error line stays readable whatever was written."""
    if isinstance(raw, int) and raw.bit_length() > 256:  # repr() of a huge int may exceed Python's digit limit
        return f"a {raw.bit_length()}-bit integer"
    text = repr(raw)
    return text if len(text) <= 60 else f"{text[:40]}…({len(text)} characters)"


def parse_quantity(raw: object) -> Decimal:
    """The exact value of a quantity in base units (cores, bytes, counts)."""
    if isinstance(raw, bool) or raw is None:
        raise QuantityError(f"invalid quantity {_shown(raw)}")
    if isinstance(raw, int):
        value = Decimal(raw)
    elif isinstance(raw, float):
        if not math.isfinite(raw):
            raise QuantityError(f"invalid quantity {_shown(raw)}")
        value = Decimal(repr(raw))
    elif isinstance(raw, str):
        match = _QUANTITY.match(raw.strip())
        if not match:
            raise QuantityError(f"invalid quantity {_shown(raw)}")
        sign, digits, suffix = match.groups()
        try:
            number = Decimal(digits)
        except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
            raise QuantityError(f"invalid quantity {_shown(raw)}") from exc
        suffix = suffix or ""
        try:
            # `E` alone and `Ei` are suffixes (exa, exbi); `e3`/`E3` is a decimal exponent.
            if suffix not in _SUFFIX and len(suffix.lstrip("eE+-").lstrip("0")) > 18:  # int64 exponents only
                raise QuantityError(f"quantity {_shown(raw)} is out of range")
            scale = _SUFFIX[suffix] if suffix in _SUFFIX else Decimal(10) ** int(suffix[1:])
            value = number * scale * (-1 if sign == "-" else 1)
        except ArithmeticError:  # an exponent beyond what Decimal holds
            raise QuantityError(f"quantity {_shown(raw)} is too large") from None
    else:
        raise QuantityError(f"invalid quantity {_shown(raw)}")
    if value < 0:
        raise QuantityError(f"negative quantity {_shown(raw)}")
    if value > MAX_INT64:
        raise QuantityError(f"quantity {_shown(raw)} is too large")
    return value


def to_milli(raw: object) -> int:
    """Millicores, rounded up as Kubernetes' MilliValue does."""
    return math.ceil(parse_quantity(raw) * 1000)


def to_units(raw: object) -> int:
    """Whole base units (bytes, devices), rounded up as Kubernetes' Value does."""
    return math.ceil(parse_quantity(raw))


def resource_value(name: str, raw: object) -> int:
    """The integer a resource is counted in: millicores for cpu, base units for everything else."""
    value = to_milli(raw) if name == "cpu" else to_units(raw)
    if value > MAX_INT64:  # millicores of a huge cpu amount; the node arrays are int64 too
        raise QuantityError(f"quantity {_shown(raw)} is too large")
    return value


def format_resource(name: str, value: float) -> str:
    """A human-readable amount: `3500m`→`3.5`, bytes in Gi/Mi when round."""
    if name == "cpu":
        cores = value / 1000
        return f"{cores:g}"
    if name == "memory" or name.startswith("hugepages-") or name == "ephemeral-storage":
        for suffix, scale in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value >= scale:
                return f"{value / scale:.4g}{suffix}"
    return f"{value:g}"


_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h|d)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


# Go's time.Duration is int64 nanoseconds: about 292 years.
MAX_DURATION_SECONDS = MAX_INT64 / 1e9


def parse_duration(raw: object) -> float:
    """Seconds from a Go duration (`90s`, `1h30m`, `2d`) or a plain number of seconds."""
    if isinstance(raw, bool):
        raise ValueError(f"invalid duration {_shown(raw)}")
    if isinstance(raw, int | float):
        if raw < 0 or (isinstance(raw, float) and not math.isfinite(raw)):
            raise ValueError(f"invalid duration {_shown(raw)}")
        if raw > MAX_DURATION_SECONDS:
            raise ValueError("duration is longer than Go's maximum (about 292 years)")
        return float(raw)
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError(f"invalid duration {_shown(raw)}")
    text = raw.strip()
    try:
        seconds = float(text)
    except ValueError:
        pos, seconds = 0, 0.0
        for match in _DURATION_PART.finditer(text):
            if match.start() != pos:
                break
            seconds += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
            pos = match.end()
        if pos != len(text) or pos == 0:
            raise ValueError(f"invalid duration {_shown(raw)}") from None
    if seconds < 0 or not math.isfinite(seconds):
        raise ValueError(f"invalid duration {_shown(raw)}")
    if seconds > MAX_DURATION_SECONDS:
        raise ValueError(f"duration {text[:40]!r} is longer than Go's maximum (about 292 years)")
    return seconds


def format_duration(seconds: float) -> str:
    """`5400` → `1h30m`; sub-minute values keep their seconds."""
    if seconds == math.inf:
        return "∞"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{hours}h" if hours else "", f"{minutes}m" if minutes else "", f"{secs}s" if secs else ""]
    return "".join(parts) or "0s"

"""Reports as strict JSON: a non-finite number (an infinite wait, a ratio of nothing) is written as null, so
every JSON parser reads the output (Python's `Infinity` and `NaN` are not JSON). `docs/report.md` says so."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any


def finite(value: Any) -> Any:
    """`value` with every non-finite float replaced by None (mappings and lists copied, the rest kept)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value


def dumps(value: Any, *, indent: int | None = 2) -> str:
    """Strict JSON text of `value` (non-finite numbers as null)."""
    return json.dumps(finite(value), indent=indent, allow_nan=False)

"""Values printed as Go prints them, for the Go templates Phalanx renders (phalanx.sim.go_template).

A template sees what Go's JSON decoder makes of YAML: numbers are float64 (Python `float`) unless the template
machinery made them Go `int` (Python `int`: `.Index`, a range counter, `AddInt`'s result), strings, booleans,
nil (`None`), lists and string-keyed maps. Two printers matter:

- `format_value`: what `{{.x}}` writes (fmt's `%v`). A float64 is written in the shortest form that reads
  back, switching to an exponent from 1e+06 on (`1000000.0` prints as `1e+06`, which is why scheduler_perf's
  templates pass numbers through `AddInt 0` before writing them), lists as `[a b]`, maps as `map[k:v]`.
- `to_json`: what encoding/json writes (scheduler_perf's `JSON` function): floats in plain notation below
  1e21, sorted map keys, no HTML escaping.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any


class GoValueError(ValueError):
    """A value Go cannot print this way (NaN or an infinity in JSON)."""


def _shortest(x: float) -> tuple[str, int]:
    """The shortest decimal digits that read back as |x| (Python's repr and Go's strconv agree on them) and
    the position of the decimal point: 1234.5 → ("12345", 4); 0.001 → ("1", -2)."""
    digits_tuple, exponent = Decimal(repr(abs(x))).as_tuple()[1:]
    assert isinstance(exponent, int)
    digits = "".join(map(str, digits_tuple)).rstrip("0")
    if not digits:
        return "0", 1
    stripped = len("".join(map(str, digits_tuple))) - len(digits)
    return digits, len(digits) + exponent + stripped


def _exponent_form(digits: str, point: int) -> str:
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    exp = point - 1
    return f"{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"


def _plain_form(digits: str, point: int) -> str:
    if point <= 0:
        return "0." + "0" * -point + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return digits[:point] + "." + digits[point:]


def format_float(x: float) -> str:
    """A float64 as `%v` writes it: `3`, `2.5`, `1e+06`, `1e-05`, `+Inf`, `NaN`."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    digits, point = _shortest(x)
    if x == 0:
        return sign + "0"
    exp = point - 1
    # Go's shortest %g form switches to an exponent when it is below -4 or at least 6.
    return sign + (_exponent_form(digits, point) if exp < -4 or exp >= 6 else _plain_form(digits, point))


def json_float(x: float) -> str:
    """A float64 as encoding/json writes it: plain from 1e-6 up to 1e21, else `1e+21`, `1e-7`."""
    if not math.isfinite(x):
        raise GoValueError(f"json: unsupported value: {format_float(x)}")
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        return sign + "0"
    digits, point = _shortest(x)
    if 1e-6 <= abs(x) < 1e21:
        return sign + _plain_form(digits, point)
    text = _exponent_form(digits, point)
    if "e-0" in text:  # encoding/json writes e-7, not e-07
        text = text.replace("e-0", "e-")
    return sign + text


def format_value(value: Any) -> str:
    """`value` as fmt's `%v` writes it (nil inside a list or map is `<nil>`)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{k}:{format_value(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list | tuple):
        return "[" + " ".join(format_value(v) for v in value) + "]"
    return str(value)


def to_json(value: Any) -> str:
    """`value` as encoding/json writes it with HTML escaping off, on one line."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json_float(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{to_json(str(k))}:{to_json(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    raise GoValueError(f"json: unsupported type {type(value).__name__}")


def go_type(value: Any) -> str:
    """The Go type a template value has, for messages."""
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "map[string]interface {}"
    return "[]interface {}"

"""The functions kube-scheduler's scheduler_perf registers for its templates (operations.go, getTemplateFuncs),
restated: exactly these eleven, with its rules.

- Arithmetic reads every argument as a float64 (an int, a float64, or a string that parses as a number; nil,
  a bool or other text is an error) and computes in float64: `AddInt`, `SubtractInt`, `MultiplyInt` and
  `DivideInt` then truncate the result toward zero to a Go int (`DivideInt 7 2` is 3, `DivideInt -7 2` is -3),
  while `AddFloat`, `SubtractFloat`, `MultiplyFloat` and `DivideFloat` keep the float64. `Add*` and
  `Multiply*` take any number of arguments; dividing by zero is an error.
- `Mod a b` truncates both to ints first and keeps the sign of `a` (`Mod -7 3` is -1); `b` of 0 is an error.
- `Int` makes a Go int: a float64 truncated toward zero, or a string of decimal digits.
- `JSON` writes its argument as encoding/json does, on one line without HTML escaping (nil is `null`).
"""

from __future__ import annotations

import math
import re
from typing import Any

from phalanx.sim.go_format import format_value, to_json
from phalanx.sim.go_template import INT64, Func, FuncError

_FLOAT_TEXT = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.IGNORECASE)


def _shown(value: Any) -> str:
    return "<nil>" if value is None else format_value(value)


def to_float(value: Any) -> float:
    """An argument as float64, as scheduler_perf's toFloat64 reads it."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and _FLOAT_TEXT.fullmatch(value):
        number = float(value)
        if not math.isinf(number) or "inf" in value.lower():
            return number
    raise FuncError(f"cannot cast {_shown(value)} to float64")


def go_int(number: float) -> int:
    """A float64 converted to a Go int (toward zero); NaN, the infinities and values past int64 are errors."""
    if not math.isfinite(number) or not -INT64 <= math.trunc(number) < INT64:
        raise FuncError(f"{_shown(number)} does not fit in an int")
    return math.trunc(number)


def to_int(value: Any) -> int:
    """`Int`: an int stays, a float64 truncates, a string of decimal digits parses."""
    if isinstance(value, bool):
        raise FuncError(f"cannot cast {_shown(value)} to int")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return go_int(value)
    if isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value) and -INT64 <= int(value) < INT64:
        return int(value)
    raise FuncError(f"cannot cast {_shown(value)} to int")


def _add(*numbers: Any) -> float:
    total = 0.0
    for n in numbers:  # one float64 addition after another, as Go adds
        total += to_float(n)
    return total


def _multiply(*numbers: Any) -> float:
    product = 1.0
    for n in numbers:
        product *= to_float(n)
    return product


def _divide(a: Any, b: Any) -> float:
    dividend, divisor = to_float(a), to_float(b)
    if divisor == 0:
        raise FuncError("division by zero")
    return dividend / divisor


def _mod(a: Any, b: Any) -> int:
    x, y = go_int(to_float(a)), go_int(to_float(b))
    if y == 0:
        raise FuncError("integer divide by zero")
    rest = abs(x) % abs(y)  # Go's % truncates: the remainder has the dividend's sign
    return -rest if x < 0 else rest


def _json(value: Any) -> str:
    return to_json(value)


FUNCS: dict[str, Func] = {
    "AddFloat": Func(_add, 0, variadic=True),
    "AddInt": Func(lambda *n: go_int(_add(*n)), 0, variadic=True),
    "DivideFloat": Func(_divide, 2),
    "DivideInt": Func(lambda a, b: go_int(_divide(a, b)), 2),
    "Int": Func(to_int, 1),
    "JSON": Func(_json, 1),
    "Mod": Func(_mod, 2),
    "MultiplyFloat": Func(_multiply, 0, variadic=True),
    "MultiplyInt": Func(lambda *n: go_int(_multiply(*n)), 0, variadic=True),
    "SubtractFloat": Func(lambda a, b: to_float(a) - to_float(b), 2),
    "SubtractInt": Func(lambda a, b: go_int(to_float(a) - to_float(b)), 2),
}

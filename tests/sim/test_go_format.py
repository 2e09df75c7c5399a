"""Values printed as Go prints them (phalanx.sim.go_format); the expected strings are Go 1.26's output."""

from __future__ import annotations

import math

import pytest

from phalanx.sim.go_format import GoValueError, format_float, format_value, go_type, json_float, to_json

# value, fmt's %v, encoding/json
FLOATS = [
    (0.0, "0", "0"), (-0.0, "-0", "-0"), (3.0, "3", "3"), (2.5, "2.5", "2.5"), (100000.0, "100000", "100000"),
    (999999.0, "999999", "999999"), (1e6, "1e+06", "1000000"), (1234567.0, "1.234567e+06", "1234567"),
    (0.0001, "0.0001", "0.0001"), (1e-5, "1e-05", "0.00001"), (1e-6, "1e-06", "0.000001"),
    (1e-7, "1e-07", "1e-7"), (9.99e-7, "9.99e-07", "9.99e-7"), (1e20, "1e+20", "100000000000000000000"),
    (1e21, "1e+21", "1e+21"), (123456789012345678.0, "1.2345678901234568e+17", "123456789012345680"),
    (0.30000000000000004, "0.30000000000000004", "0.30000000000000004"), (-1e6, "-1e+06", "-1000000"),
    (1e100, "1e+100", "1e+100"), (5e-324, "5e-324", "5e-324"), (12345.678, "12345.678", "12345.678"),
]


@pytest.mark.parametrize(("value", "shown", "json"), FLOATS, ids=[f[1] for f in FLOATS])
def test_floats_print_as_go_prints_them(value: float, shown: str, json: str) -> None:
    assert format_float(value) == shown
    assert json_float(value) == json


def test_special_floats() -> None:
    assert [format_float(v) for v in (math.inf, -math.inf, math.nan)] == ["+Inf", "-Inf", "NaN"]
    with pytest.raises(GoValueError, match="unsupported value"):
        json_float(math.nan)


def test_values() -> None:
    assert format_value([1.0, "a", None, True]) == "[1 a <nil> true]"
    assert format_value({"b": 1.0, "a": {"c": 2}}) == "map[a:map[c:2] b:1]"
    assert to_json({"b": [1.0, None], "a": "<&>\u2028\n"}) == '{"a":"<&>\\u2028\\n","b":[1,null]}'
    assert [go_type(v) for v in (None, True, 1, 1.0, "", [], {})] == [
        "nil", "bool", "int", "float64", "string", "[]interface {}", "map[string]interface {}"]

"""CEL selectors that pass validation but fail at run time (division by zero, overflow, an index out of range)
select nothing instead of crashing the simulation; expressions past the API server's length limit, or too
deeply nested for the CEL parser, are rejected when read."""

from __future__ import annotations

from pathlib import Path

import pytest

from phalanx import InputError, build_report, builtin
from phalanx.api.dra import MAX_CEL_LENGTH, compile_selector
from phalanx.sim.simulation import Simulation
from tests import dra_builders as b


@pytest.mark.parametrize("expression", [
    "1 / 0 == 1",
    "1 % 0 == 1",
    "9223372036854775807 + 1 > 0",
    "-9223372036854775808 / -1 == 1",
    "[1][5] == 1",
    "{'a': 1}['b'] == 1",
    "int('x') == 1",
    "device.attributes['gpu.example.com'].missing == 1",
])
def test_runtime_errors_select_no_device(tmp_path: Path, expression: str) -> None:
    inputs = b.load(tmp_path, b.node("n"), b.gpus("n", 2), b.device_class(),
                    b.template("t", b.claim_spec(b.request("gpu", b.exactly(1, selectors=[expression])))),
                    b.pod("p", template_name="t"))
    report = build_report(Simulation(inputs, builtin("default")).run())
    assert report["summary"]["pods"]["pending"] == 1


@pytest.mark.parametrize("expression", [
    "(" * 100_000 + "true" + ")" * 100_000,  # panicked in the CEL parser
    "1 + " * 20_000 + "1 > 0",
    "x" * (MAX_CEL_LENGTH + 1),
])
def test_overlong_and_deeply_nested_expressions_are_rejected(tmp_path: Path, expression: str) -> None:
    with pytest.raises(ValueError):
        compile_selector(expression)
    with pytest.raises(InputError, match=r"DeviceClass gpu.example.com: spec.selectors\[0\].cel.expression"):
        b.load(tmp_path, b.device_class(expression=expression))


def test_a_failing_cel_function_selects_nothing_and_prints_nothing(tmp_path: Path,
                                                                    capfd: pytest.CaptureFixture[str]) -> None:
    expression = "quantity('not a quantity') > quantity('1')"
    inputs = b.load(tmp_path, b.node("n"), b.gpus("n", 2), b.device_class(),
                    b.template("t", b.claim_spec(b.request("gpu", b.exactly(1, selectors=[expression])))),
                    b.pod("p", template_name="t"))
    report = build_report(Simulation(inputs, builtin("default")).run())
    assert report["summary"]["pods"]["pending"] == 1
    assert capfd.readouterr().err == ""

"""A DRA selector's worst-case CEL cost: too costly is refused at load as the API server refuses it (the campaign's
nested `.all()` of 10^9 steps hung the simulator), and ordinary selectors cost little."""

from __future__ import annotations

import time
from pathlib import Path

import cel
import pytest

from phalanx import InputError
from phalanx.api.cel_cost import MAX_COST, MAX_DEPTH, CostError, estimate, estimate_cost
from phalanx.api.dra import CEL_FUNCTIONS, TooCostly, compile_selector
from tests import dra_builders as b


def numbers(n: int) -> str:
    """A list literal of n elements in 2n characters (a selector is at most 10 KiB)."""
    return "[" + ",".join("1" * n) + "]"


THOUSAND = numbers(1000)
NESTED_BILLION = f"{THOUSAND}.all(a, {THOUSAND}.all(b, {THOUSAND}.all(c, true)))"  # 10^9 iterations
ATTRS = 'device.attributes["gpu.example.com"]'


@pytest.mark.parametrize("expression", [
    'device.driver == "gpu.example.com"',
    f'{ATTRS}.model == "H100" && device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0',
    f'{ATTRS}.driverVersion.isGreaterThan(semver("1.2.3"))',
    f"{ATTRS}.exists(name, name.startsWith('nv') && {ATTRS}[name] != '')",
    f"{ATTRS}.all(a, {ATTRS}.all(b, {ATTRS}.all(c, true)))",  # 32³ entries: within the limit, as in kube
    f"{numbers(300)}.all(a, {numbers(300)}.exists(b, a == b))",
    "'abc'.matches('^a.*c$') ? true : false",
], ids=lambda expression: expression[:40])
def test_ordinary_selectors_are_within_the_limit(expression: str) -> None:
    assert estimate_cost(expression) <= MAX_COST
    compile_selector(expression)


@pytest.mark.parametrize("expression", [
    NESTED_BILLION,
    f"{ATTRS}.all(a, {ATTRS}.all(b, {ATTRS}.all(c, {ATTRS}.all(d, true))))",  # 32⁴ entries
    f"{numbers(1200)}.map(x, {numbers(1200)}).size() > 0",
    f"{numbers(100)}.map(x, {numbers(100)}).all(row, row.all(y, {numbers(100)}.exists(z, y == z)))",
    f"({numbers(1000)} + {numbers(1000)}).all(a, {numbers(1000)}.exists(b, a == b))",
    f"{numbers(1500)}.map(x, 1).size() > 0",  # the cel package copies the list map builds at every step
    f"{numbers(1500)}.filter(x, true).size() > 0",
    f"{numbers(1000)}.map(x, device)",  # the value handed back: a thousand copies of the device's maps
], ids=lambda expression: expression[:40])
def test_too_costly_selectors_are_refused(expression: str) -> None:
    assert estimate_cost(expression) > MAX_COST
    with pytest.raises(TooCostly, match="too complex, exceeds cost limit"):
        compile_selector(expression)


def test_nested_comprehensions_multiply_by_their_ranges() -> None:
    one, two = estimate_cost(f"{numbers(10)}.all(a, true)"), estimate_cost(f"{numbers(10)}.all(a, {numbers(10)}"
                                                                            ".all(b, true))")
    assert two > 10 * one - 20
    inner = estimate(f"{numbers(7)}.map(x, {numbers(5)})")
    assert (inner.count, estimate(f"{numbers(7)}.filter(x, x > 1)").count) == (7, 7)
    assert estimate(f"{ATTRS}.name").count == 0 and estimate(f"{ATTRS}.name").length == 64


def test_the_estimate_bounds_what_the_interpreter_does() -> None:
    """Just under the limit, evaluation takes a fraction of a second: the load-time bound is the run-time one."""
    expression = f"{numbers(440)}.all(a, {numbers(440)}.all(b, a >= 0))"
    assert estimate_cost(expression) <= MAX_COST
    context = cel.Context(functions=CEL_FUNCTIONS)
    context.add_variable("device", {"driver": "d", "attributes": {}, "capacity": {}})
    started = time.perf_counter()
    assert compile_selector(expression).execute(context) is True
    assert time.perf_counter() - started < 2.0


def test_what_the_estimator_cannot_read_is_refused_not_guessed() -> None:
    deep = "(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1)
    with pytest.raises(CostError, match=f"nests more than {MAX_DEPTH} levels deep"):
        estimate(deep)
    with pytest.raises(CostError, match="unexpected"):
        estimate("1 @ 2")


@pytest.mark.parametrize("expression", [
    "b'abc' == b'abc' && r'\\d' != '' && '''x\ny''' != \"\"\"z\"\"\"", "0x1F == 31 && 1u == 1u && 1e3 == 1.0e3",
    "[1,2,][0] == 1 && {'a': 1,}['a'] == 1", ".device.driver == 'x'", "Foo{a: 1}", "-(-1) == 1 && !!true",
    "true ? 1 : false ? 2 : 3", "// a comment\ntrue", "1 in [1] && 'a' in {'a': 1}", "[1].map(x, x > 0, x * 2)",
    "[1].exists_one(x, x == 1)", "has(device.driver)", "a.all(x)", "cel.bind(x, 1, x + 1) == 2",
])
def test_every_form_the_cel_package_compiles_is_read(expression: str) -> None:
    cel.compile(expression)
    assert estimate_cost(expression) < 1000


def test_a_costly_selector_names_the_field_at_load(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"DeviceClass gpu.example.com: spec.selectors\[0\].cel.expression: "
                                         "Forbidden: too complex, exceeds cost limit"):
        b.load(tmp_path, b.device_class(expression=NESTED_BILLION))


def test_a_costly_selector_in_a_claim_names_the_field_too(tmp_path: Path) -> None:
    spec = b.claim_spec(b.request("gpu", b.exactly(1, selectors=[NESTED_BILLION])))
    with pytest.raises(InputError, match=r"ResourceClaim default/c: spec.devices.requests\[0\].exactly.selectors\[0\]"
                                         r".cel.expression: Forbidden: too complex"):
        b.load(tmp_path, b.device_class(), b.claim("c", spec))

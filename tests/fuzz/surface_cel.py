"""Random DRA CEL selectors (deep nesting, nested comprehensions over large lists and the device's maps, huge
literals, broken syntax, run-time errors), in a DeviceClass or a claim's request, loaded and simulated for a
minute: a pod that claims one GPU among a node's four.

Beyond the contract: an expression the `cel` package compiles must be one the cost estimator reads (it refuses
what it cannot read, so a gap in its parser would refuse valid selectors), and one it accepts must evaluate
in well under the runner's timeout (the estimate is the run-time bound).
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any

from tests.fuzz.surface import INPUT_ERROR, OK, Surface

DRIVER = "gpu.example.com"
ATTRIBUTES = f'device.attributes["{DRIVER}"]'
Case = tuple[str, str]  # (expression, where: "class" or "request")

LEAVES = ["device.driver", f"{ATTRIBUTES}.model", f"{ATTRIBUTES}.index", f"{ATTRIBUTES}.missing",
          f'device.capacity["{DRIVER}"].memory', "device.allowMultipleAllocations", "true", "false", "null",
          "0", "1", "-1", str(2**63 - 1), str(2**63), "9" * 400, "1e308", "1.0", "0.0000001", "0x7fffffffffffffff",
          "18446744073709551615u", "'H100'", "''", "'\\u00e9'", "'x'", "b'\\xff'", "[]", "{}", "[1, 2, 3]",
          "{'a': 1}", 'quantity("40Gi")', 'quantity("x")', 'semver("1.2.3")', 'semver("bad")', "device",
          "undefined_name", f"{ATTRIBUTES}", "device.attributes"]
BINARY = ["&&", "||", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "in"]
CALLS = ["size()", "contains('1')", "startsWith('H')", "endsWith('0')", "matches('^H[0-9]+$')",
         "matches('(a+)+$')", "compareTo(quantity('1'))", "isGreaterThan(semver('1.0.0'))", "asInteger()"]
MACROS = ["all", "exists", "exists_one", "map", "filter"]


def _list(rng: random.Random) -> str:
    size = rng.choice([0, 1, 3, 30, 300, 1500])
    return "[" + ",".join("1" * size) + "]"


def _range(rng: random.Random, depth: int) -> str:
    roll = rng.random()
    if roll < 0.5:
        return _list(rng)
    if roll < 0.8:
        return rng.choice([ATTRIBUTES, "device.attributes", f'device.capacity["{DRIVER}"]'])
    return f"({_expr(rng, depth - 1)})"


def _expr(rng: random.Random, depth: int) -> str:
    if depth <= 0 or rng.random() < 0.2:
        return rng.choice(LEAVES)
    roll = rng.random()
    if roll < 0.3:
        return f"{_expr(rng, depth - 1)} {rng.choice(BINARY)} {_expr(rng, depth - 1)}"
    if roll < 0.5:
        var = rng.choice(["x", "y", "device", "z"])
        body = _expr(rng, depth - 1).replace("device.driver", var, 1) if rng.random() < 0.5 else _expr(rng, depth - 1)
        return f"{_range(rng, depth)}.{rng.choice(MACROS)}({var}, {body})"
    if roll < 0.6:
        return f"{_expr(rng, depth - 1)}.{rng.choice(CALLS)}"
    if roll < 0.7:
        return f"{_expr(rng, depth - 1)} ? {_expr(rng, depth - 1)} : {_expr(rng, depth - 1)}"
    if roll < 0.8:
        return f"{rng.choice(['!', '-', '!!', '--'])}({_expr(rng, depth - 1)})"
    if roll < 0.9:
        return f"[{', '.join(_expr(rng, depth - 1) for _ in range(rng.randint(0, 3)))}]"
    return f"({_expr(rng, depth - 1)})"


def _hostile(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.2:  # comprehensions nested d deep over lists of n: the campaign's 10^9 steps, and its neighbours
        n, d = rng.choice([10, 100, 300, 1000]), rng.randint(1, 4)
        items = "[" + ",".join("1" * n) + "]"
        return "".join(f"{items}.all(v{i}, " for i in range(d)) + "true" + ")" * d
    if roll < 0.35:  # deep nesting, around the parser's bound
        depth = rng.choice([10, 90, 95, 96, 100, 101, 150, 3000])
        return rng.choice(["(", "[", "!(", "-(", "f("]) * depth + "true" + rng.choice([")", "]"]) * depth
    if roll < 0.45:  # long: near and past the 10 KiB limit
        part = f'{ATTRIBUTES}.model == "H100"'
        return " && ".join([part] * rng.choice([10, 200, 340, 400]))
    expression = _expr(rng, rng.randint(1, 5))
    if roll < 0.6:  # broken syntax: a character dropped, doubled or replaced
        at = rng.randrange(len(expression) + 1)
        junk = rng.choice(["(", ")", "[", "'", '"', ".", ",", "?", "\\", "\udcff", "#", "\n", "}", ""])
        expression = expression[:at] + junk + expression[at + rng.randint(0, 2):]
    return expression


def _generate(rng: random.Random) -> Case:
    return _hostile(rng), rng.choice(["class", "request"])


def _documents(expression: str, where: str) -> list[dict[str, Any]]:
    devices = [{"name": f"gpu-{i}", "attributes": {"model": {"string": "H100" if i % 2 else "A100"},
                                                   "index": {"int": i}},
                "capacity": {"memory": {"value": "80Gi"}}} for i in range(4)]
    selector = [{"cel": {"expression": expression}}]
    always = [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]
    request = {"name": "gpu", "exactly": {"deviceClassName": DRIVER, "count": 1,
                                          **({"selectors": selector} if where == "request" else {})}}
    return [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"},
         "status": {"allocatable": {"cpu": "8", "memory": "32Gi"}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n-gpus"},
         "spec": {"driver": DRIVER, "pool": {"name": "n", "generation": 1, "resourceSliceCount": 1},
                  "nodeName": "n", "devices": devices}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
         "spec": {"selectors": selector if where == "class" else always}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "gpu"},
         "spec": {"spec": {"devices": {"requests": [request]}}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                  "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}]}},
    ]


def _check_the_estimator_reads_it(expression: str) -> None:
    import cel

    from phalanx.api.cel_cost import CostError, estimate

    try:
        cel.compile(expression)
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        return
    try:
        estimate(expression)
    except CostError as exc:
        if "cannot estimate" in str(exc):
            raise AssertionError(f"the cel package compiles it, the cost estimator cannot read it: {exc}") from None


def _run(case: Case, directory: str) -> str:
    from phalanx.errors import InputError
    from phalanx.inputs.load import load_paths
    from phalanx.scheduler.profiles import builtin
    from phalanx.sim.simulation import Simulation

    expression, where = case
    if len(expression.encode("utf-8", "surrogatepass")) <= 10 * 1024:
        _check_the_estimator_reads_it(expression)
    path = os.path.join(directory, "dra.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump({"apiVersion": "v1", "kind": "List", "items": _documents(expression, where)}, handle)
    try:
        inputs = load_paths([path])
    except InputError:
        return INPUT_ERROR
    started = time.perf_counter()
    Simulation(inputs, builtin("default"), until=60.0).run()
    if time.perf_counter() - started > 5.0:
        raise AssertionError(f"an accepted selector took {time.perf_counter() - started:.1f} s to simulate")
    return OK


def _show(case: Case) -> str:
    expression, where = case
    return f"in the {where}'s selectors ({len(expression)} characters):\n{expression[:3000]}"


SURFACE = Surface("cel", _generate, _run, _show,
                  "DRA CEL selectors in a DeviceClass or a claim's request: nesting, costly comprehensions, huge "
                  "literals, broken syntax, run-time errors; loaded and simulated for a minute")

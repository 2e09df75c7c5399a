"""The report's types (phalanx/sim/report_schema.py) against reports built from the bundled examples: every
TypedDict block has each of its required keys and no key it does not declare, down to the nested blocks, and
its keys come in the order it declares them (the JSON's order)."""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Any, NotRequired

import pytest

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.report_schema import Report
from phalanx.sim.run import simulate
from phalanx.sim.scenario import scenario_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCENARIOS = Path(__file__).resolve().parents[1] / "scenarios"


def _is_typed_dict(hint: object) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__total__")


def _fields(typed: type) -> dict[str, tuple[object, bool]]:
    """Each key of a TypedDict: its type and whether it is required (read through NotRequired, which a
    postponed annotation hides from `__required_keys__` on Python 3.11)."""
    out: dict[str, tuple[object, bool]] = {}
    for key, hint in typing.get_type_hints(typed, include_extras=True).items():
        optional = typing.get_origin(hint) is NotRequired
        out[key] = (typing.get_args(hint)[0] if optional else hint, not optional)
    return out


def check(value: Any, hint: object, where: str) -> list[str]:
    """Where `value` has a key its TypedDict lacks, lacks a required one, or orders them otherwise."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if _is_typed_dict(hint):
        assert isinstance(hint, type)
        fields = _fields(hint)
        problems = [f"{where}: no {key!r}" for key, (_, required) in fields.items() if required and key not in value]
        problems += [f"{where}: {key!r} is not in {hint.__name__}" for key in value if key not in fields]
        order = [key for key in fields if key in value]
        if not problems and list(value) != order:
            problems.append(f"{where}: keys {list(value)} are not in {hint.__name__}'s order {order}")
        for key, item in value.items():
            if key in fields:
                problems += check(item, fields[key][0], f"{where}.{key}")
        return problems
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return [] if type(None) in args else [f"{where}: None"]
        typed = [a for a in args if a is not type(None)]
        return check(value, typed[0], where) if len(typed) == 1 else []
    if origin is list:
        return [p for i, item in enumerate(value) for p in check(item, args[0], f"{where}[{i}]")]
    if origin is dict:
        return [p for key, item in value.items() for p in check(item, args[1], f"{where}[{key!r}]")]
    return []


# name -> (inputs, profile, until, feature gates set on top, the blocks the run must hold)
RUNS: dict[str, tuple[list[Path], str, float | None, dict[str, bool], set[str]]] = {
    "kueue": ([EXAMPLES / "peers"], "kueue", None, {}, {"admission", "queues", "series"}),
    "volcano": ([EXAMPLES / "peers"], "volcano", None, {}, {"admission", "queues", "series"}),
    "services": ([EXAMPLES / "autoscaling"], "gang", 6 * 3600.0, {}, {"services"}),
    "exact placement": ([EXAMPLES / "mixed-gang"], "phalanx", 3600.0, {}, {"exactPlacement"}),
    "devices": ([EXAMPLES / "gpu-fleet"], "gang", None, {}, {"resourceClaims"}),
    "topology": ([SCENARIOS / "gang-in-one-rack" / "manifests.yaml"], "gang", 1800.0, {}, {"topologyConstraints"}),
    "composite trees": ([SCENARIOS / "composite-in-one-rack" / "manifests.yaml"], "gang", 1800.0,
                        {"TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True}, {"compositePodGroups"}),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_the_report_has_the_keys_its_types_declare(name: str) -> None:
    paths, profile_name, until, gates, blocks = RUNS[name]
    profile = builtin(profile_name)
    profile.feature_gates.update(gates)
    inputs = load_paths([str(p) for p in paths])
    report = simulate(inputs, profile, scenario=scenario_for(profile_name), until=until, series=True).report()
    assert blocks <= set(report)
    assert check(report, Report, "report") == []

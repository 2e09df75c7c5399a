"""Scenario tests: each sub-directory holds manifests and an `expected.yaml` with the outcome per profile.

expected.yaml:

    description: one line
    inputs: [../../../examples/bare-metal]   # optional; default: the directory's own manifests
    until: 8h                               # optional; default: until nothing more can change
    profiles:
      <default|gang|any label>:
        profile: gang                       # optional; the built-in profile (default: the label)
        featureGates: {Name: true}          # optional; gates set on top of it
        running: [ns/pod, ...]              # exactly the Running pods (likewise pending, succeeded, failed)
        nodes: {ns/pod: node}               # where these pods run or ran
        boundAt: {ns/pod: seconds}
        messages: {ns/pod: text}            # the pending pods' explanations, word for word
        podGroups: {ns/group: {field: value, ...}}   # fields of the report's podGroups entry;
                                            # `condition: "False"` checks PodGroupInitiallyScheduled
        summary: {allocated: {cpu: 0.84375}}   # a subset of the report's summary, nested as in the report
        endTime: seconds
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx import build_report, builtin, load_paths
from phalanx.api.quantity import parse_duration
from phalanx.scheduler.profiles import Profile
from phalanx.sim.simulation import Simulation

HERE = Path(__file__).parent
PHASES = {"running": "Running", "pending": "Pending", "succeeded": "Succeeded", "failed": "Failed"}


def _scenarios() -> list[Any]:
    cases = []
    for directory in sorted(p for p in HERE.iterdir() if (p / "expected.yaml").is_file()):
        expected = yaml.safe_load((directory / "expected.yaml").read_text())
        for profile in expected["profiles"]:
            cases.append(pytest.param(directory, profile, id=f"{directory.name}-{profile}"))
    return cases


def _inputs(directory: Path, expected: dict[str, Any]) -> list[str]:
    if "inputs" in expected:
        return [str((directory / p).resolve()) for p in expected["inputs"]]
    return [str(p) for p in sorted(directory.glob("*.yaml")) if p.name != "expected.yaml"]


def _compare(actual: Any, wanted: Any, path: str, problems: list[str]) -> None:
    """Every key in `wanted` (recursively) has the same value in `actual`."""
    if isinstance(wanted, dict):
        if not isinstance(actual, dict):
            problems.append(f"{path}: expected an object, got {actual!r}")
            return
        for key, value in wanted.items():
            if key not in actual:
                problems.append(f"{path}.{key}: missing from the report")
            else:
                _compare(actual[key], value, f"{path}.{key}", problems)
    elif not _same(actual, wanted):
        problems.append(f"{path}: expected {wanted!r}, got {actual!r}")


def _profile(label: str, want: dict[str, Any]) -> Profile:
    profile = builtin(want.get("profile", label))
    profile.feature_gates.update(want.get("featureGates") or {})
    return profile


def _same(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, float) and not isinstance(wanted, bool):
        return bool(actual == pytest.approx(wanted, abs=1e-6))
    return bool(actual == wanted)


def test_there_are_enough_scenarios() -> None:
    assert len({c.values[0] for c in _scenarios()}) >= 6


@pytest.mark.parametrize(("directory", "profile"), _scenarios())
def test_scenario(directory: Path, profile: str) -> None:
    expected = yaml.safe_load((directory / "expected.yaml").read_text())
    want = expected["profiles"][profile]
    until = expected.get("until")
    sim = Simulation(load_paths(_inputs(directory, expected)), _profile(profile, want),
                     until=None if until is None else parse_duration(until)).run()
    report = build_report(sim)
    pods = {p["name"]: p for p in report["pods"]}
    problems: list[str] = []

    for key, phase in PHASES.items():
        if key in want:
            have = sorted(name for name, p in pods.items() if p["phase"] == phase)
            if have != sorted(want[key]):
                problems.append(f"{key}: expected {sorted(want[key])}, got {have}")
    for field, report_field in (("nodes", "node"), ("boundAt", "boundAt"), ("messages", "message")):
        for name, value in (want.get(field) or {}).items():
            if name not in pods:
                problems.append(f"{field}: no pod {name}")
            elif not _same(pods[name][report_field], value):
                problems.append(f"{field}[{name}]: expected {value!r}, got {pods[name][report_field]!r}")
    groups = {g["name"]: g for g in report["podGroups"]}
    for name, fields in (want.get("podGroups") or {}).items():
        if name not in groups:
            problems.append(f"podGroups: no group {name} (have {sorted(groups)})")
            continue
        for field, value in fields.items():
            if field == "condition":
                conditions = {c["type"]: c["status"] for c in groups[name]["conditions"]}
                actual = conditions.get("PodGroupInitiallyScheduled")
            else:
                actual = groups[name][field]
            if not _same(actual, value):
                problems.append(f"podGroups[{name}].{field}: expected {value!r}, got {actual!r}")
    _compare(report["summary"], want.get("summary") or {}, "summary", problems)
    if "endTime" in want and not _same(report["endTime"], want["endTime"]):
        problems.append(f"endTime: expected {want['endTime']}, got {report['endTime']}")

    assert not problems, f"{directory.name} under {profile}:\n  " + "\n  ".join(problems)

"""The README's main job: the bare-metal example under both profiles."""

from pathlib import Path

from phalanx import build_report, builtin, load_paths
from phalanx.sim.simulation import Simulation

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "bare-metal"


def _run(profile: str) -> dict:
    return build_report(Simulation(load_paths([str(EXAMPLE)]), builtin(profile), until=8 * 3600).run())


def test_default_binds_half_the_gang_and_strands_its_cpu() -> None:
    report = _run("default")
    summary = report["summary"]
    assert summary["pods"]["pending"] == 4
    assert summary["gangPodsPending"] == 2
    assert summary["allocated"]["cpu"] == 54 / 64
    assert summary["stranded"]["cpu"] == 8 / 64
    assert summary["strandedResourceHours"]["cpu"] == 64.0


def test_gang_binds_the_tenants_and_no_gang_member() -> None:
    report = _run("gang")
    summary = report["summary"]
    running = {p["name"] for p in report["pods"] if p["phase"] == "Running"}
    assert {"tenants/tenant-worker-1", "tenants/tenant-worker-2"} <= running
    assert not any(name.startswith("batch/") for name in running)
    assert summary["allocated"]["cpu"] == 54 / 64
    assert summary["stranded"]["cpu"] == 0.0
    group = report["podGroups"][0]
    assert group["conditions"][0]["type"] == "PodGroupInitiallyScheduled"
    assert group["conditions"][0]["status"] == "False"
    assert group["message"].startswith("minCount (4) cannot be satisfied: 2 scheduled, 1 remaining")
    pending = {p["name"]: p["message"] for p in report["pods"] if p["phase"] == "Pending"}
    # kube-scheduler's words: the members that fitted carry the group's message, the one that did not its own.
    assert pending["batch/training-worker-0"] == f"pod group is unschedulable, {group['message']}"
    assert pending["batch/training-worker-2"] == "0/4 nodes are available: 4 Insufficient cpu."


def test_every_verb_of_the_parser_has_its_command() -> None:
    import argparse

    from phalanx.cli import COMMANDS, _parser

    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(COMMANDS)

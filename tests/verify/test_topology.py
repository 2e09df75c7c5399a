"""Topology-aware workload scheduling (KEP-5732) against the real kube-scheduler v1.37.2, with the
TopologyAwareWorkloadScheduling gate on in both (alpha, off by default upstream): each case runs through
`phalanx verify` and must agree on what binds, where (up to equally good nodes), when, and on the PodGroup
conditions; and the real scheduler's choice is checked to be the one the case is about."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phalanx.scheduler.profiles import Profile
from phalanx.verify.compare import CATEGORIES, Verdict, verify
from phalanx.verify.oracle import Oracle
from tests.builders import Buildable, MakeNode, MakePod, MakePodGroup, write_manifests

pytestmark = pytest.mark.kube

ROOT = Path(__file__).resolve().parents[2]
RACK = "topology.kubernetes.io/rack"


def topology_profile() -> Profile:
    return Profile("gang-topology", feature_gates={"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True})


def node(name: str, rack: str | None, cpu: int = 8) -> MakeNode:
    builder = MakeNode(name).alloc(cpu=str(cpu), memory="32Gi", pods="110").label("kubernetes.io/hostname", name)
    return builder.label(RACK, rack) if rack is not None else builder


def racks() -> list[Buildable]:
    return [node("a1", "rack-a"), node("a2", "rack-a"), node("b1", "rack-b"), node("b2", "rack-b")]


def gang(name: str, min_count: int) -> MakePodGroup:
    builder = MakePodGroup(name, "ml").gang(min_count)
    builder.doc["spec"]["schedulingConstraints"] = {"topology": [{"key": RACK}]}
    return builder


def worker(group: str, i: int, cpu: str = "4", on: str | None = None) -> MakePod:
    pod = MakePod(f"{group}-{i}", "ml").req(cpu=cpu, memory="1Gi").group(group)
    return pod.node(on) if on is not None else pod


def load(name: str, cpu: str, on: str) -> MakePod:
    return MakePod(name, "ops").req(cpu=cpu, memory="1Gi").node(on)


def _agree(verdict: Verdict) -> None:
    differing = {c for c in CATEGORIES if c != "messages" and verdict.agree[c] != verdict.total[c]}
    assert not differing, [d.to_json() for d in verdict.differences if d.category != "messages"]


def _real(verdict: Verdict) -> dict[str, dict[str, Any]]:
    """Each pod's outcome on the real cluster (state, node) by name."""
    return {entry["name"]: entry["kubeScheduler"] for entry in verdict.pods}


CASES: dict[str, tuple[list[Buildable], dict[str, set[str] | None]]] = {
    # rack-b is fuller (4 cpu on b1): the gang fits both racks and lands in rack-b.
    "fits in one rack lands in one rack": (
        [*racks(), load("web", "4", "b1"), gang("train", 2), *(worker("train", i) for i in range(2))],
        {"ml/train-0": {"b1", "b2"}, "ml/train-1": {"b1", "b2"}}),
    # Four 6-cpu workers: one per node would fit, no rack holds four. Nothing binds.
    "fits only across racks waits": (
        [*racks(), gang("train", 4), *(worker("train", i, "6") for i in range(4))],
        {f"ml/train-{i}": None for i in range(4)}),
    # The unlabelled 32-cpu node, the emptiest, would take the workers; it is in no placement, and they land
    # in the fuller rack-a.
    "nodes without the label are excluded": (
        [*racks(), node("x", None, 32), load("web-a", "4", "a1"), load("web-b", "3", "b1"), gang("train", 3),
         *(worker("train", i) for i in range(3))],
        {"ml/train-0": {"a1", "a2"}, "ml/train-1": {"a1", "a2"}, "ml/train-2": {"a1", "a2"}}),
    # A member already runs on a1: the others join rack-a although rack-b (6 cpu on b2) would score higher.
    "running members pin the domain": (
        [*racks(), load("web", "6", "b2"), gang("train", 2), worker("train", 0, on="a1"), worker("train", 1),
         worker("train", 2)],
        {"ml/train-1": {"a1", "a2"}, "ml/train-2": {"a1", "a2"}}),
    # rack-b (6 cpu on b1) is fuller but seats two workers, rack-a three: PodGroupPodsCount picks rack-a. (The
    # PodGroup comes a second later, so that its first cycle sees every member, not only the first minCount.)
    "best scored placement is chosen": (
        [*racks(), load("web", "6", "b1"), *(worker("train", i) for i in range(3)), gang("train", 2).arrival("1s")],
        {"ml/train-0": {"a1", "a2"}, "ml/train-1": {"a1", "a2"}, "ml/train-2": {"a1", "a2"}}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_topology_case_agrees_with_kube_scheduler(case: str, tmp_path: Path, oracle: Oracle) -> None:
    objects, expected = CASES[case]
    path = write_manifests(tmp_path / "manifests.yaml", *objects)
    verdict = verify([str(path)], topology_profile(), oracle)
    _agree(verdict)
    real = _real(verdict)
    for pod, nodes in expected.items():
        if nodes is None:
            assert real[pod]["state"] == "pending", (case, pod, real[pod])
        else:
            assert real[pod]["state"] == "bound" and real[pod]["node"] in nodes, (case, pod, real[pod])


def test_the_rack_scenario_agrees_with_kube_scheduler(oracle: Oracle) -> None:
    verdict = verify([str(ROOT / "tests" / "scenarios" / "gang-in-one-rack" / "manifests.yaml")],
                     topology_profile(), oracle)
    _agree(verdict)
    real = _real(verdict)
    assert {real[f"ml/train-{i}"]["state"] for i in range(4)} == {"pending"}
    assert {real[f"ml/eval-{i}"]["node"] for i in range(3)} <= {"node-a1", "node-a2"}

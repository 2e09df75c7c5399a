"""CompositePodGroup trees (KEP-6012) against the real kube-scheduler v1.37.2, with CompositePodGroup and the
gates it needs (GenericWorkload, TopologyAwareWorkloadScheduling) on in both: each case runs through
`phalanx verify` and must agree on what binds, where (up to equally good nodes), when, and on the leaf
PodGroups' conditions; the real scheduler's choice is checked to be the one the case is about, and the real
CompositePodGroups are checked to carry no condition (v1.37.2 writes none)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phalanx.scheduler.profiles import Profile
from phalanx.verify.compare import CATEGORIES, Verdict, verify
from phalanx.verify.oracle import Oracle, _generic_class
from tests.builders import Buildable, MakeCompositePodGroup, MakeNode, MakePod, MakePodGroup, write_manifests

pytestmark = pytest.mark.kube

ROOT = Path(__file__).resolve().parents[2]
RACK = "topology.kubernetes.io/rack"


def composite_profile() -> Profile:
    return Profile("composite", feature_gates={"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True,
                                               "CompositePodGroup": True})


def node(name: str, cpu: int = 8, rack: str = "rack-a") -> MakeNode:
    return MakeNode(name).alloc(cpu=str(cpu), memory="32Gi", pods="110").label("kubernetes.io/hostname", name) \
        .label(RACK, rack)


def composite(name: str, min_group_count: int | None) -> MakeCompositePodGroup:
    builder = MakeCompositePodGroup(name, "ml")
    return builder.gang(min_group_count) if min_group_count is not None else builder


def leaf(name: str, parent: str, min_count: int = 2) -> MakePodGroup:
    return MakePodGroup(name, "ml").gang(min_count).parent(parent)


def member(group: str, i: int, cpu: str = "4") -> MakePod:
    return MakePod(f"{group}-{i}", "ml").req(cpu=cpu, memory="1Gi").group(group)


def _agree(verdict: Verdict) -> None:
    differing = {c for c in CATEGORIES if c != "messages" and verdict.agree[c] != verdict.total[c]}
    assert not differing, [d.to_json() for d in verdict.differences if d.category != "messages"]


def _real(verdict: Verdict) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry["kubeScheduler"] for entry in verdict.pods}


def _composite_conditions(oracle: Oracle) -> list[Any]:
    kind = _generic_class("scheduling.k8s.io/v1alpha3", "CompositePodGroup")
    return [obj.status.get("conditions") if isinstance(obj.status, dict) else getattr(obj.status, "conditions", None)
            for obj in oracle.client.list(kind, namespace="*")]


CASES: dict[str, tuple[list[Buildable], dict[str, set[str] | None]]] = {
    # Two 8-cpu nodes: a (2 × 4 cpu) fits, b (2 × 8 cpu) does not beside it; minGroupCount 2: nothing binds.
    "a gang composite binds all children or none": (
        [node("n1"), node("n2"), composite("job", 2), leaf("a", "job"), leaf("b", "job"),
         *(member("a", i) for i in range(2)), *(member("b", i, "8") for i in range(2))],
        {"ml/a-0": None, "ml/a-1": None, "ml/b-0": None, "ml/b-1": None}),
    # The same with a basic composite: a binds on its own, b waits.
    "a basic composite binds the children that fit": (
        [node("n1"), node("n2"), composite("job", None), leaf("a", "job"), leaf("b", "job"),
         *(member("a", i) for i in range(2)), *(member("b", i, "8") for i in range(2))],
        {"ml/a-0": {"n1", "n2"}, "ml/a-1": {"n1", "n2"}, "ml/b-0": None, "ml/b-1": None}),
    # minGroupCount 2 and only a's pods exist: PreEnqueue holds the tree, nothing is tried.
    "a composite waits for its quorum": (
        [node("n1"), composite("job", 2), leaf("a", "job"), leaf("b", "job"), *(member("a", i, "1") for i in range(2))],
        {"ml/a-0": None, "ml/a-1": None}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_composite_case_agrees_with_kube_scheduler(case: str, tmp_path: Path, oracle: Oracle) -> None:
    objects, expected = CASES[case]
    path = write_manifests(tmp_path / "manifests.yaml", *objects)
    verdict = verify([str(path)], composite_profile(), oracle)
    _agree(verdict)
    real = _real(verdict)
    for pod, nodes in expected.items():
        if nodes is None:
            assert real[pod]["state"] == "pending", (case, pod, real[pod])
        else:
            assert real[pod]["state"] == "bound" and real[pod]["node"] in nodes, (case, pod, real[pod])


def test_the_composite_rack_scenario_agrees_with_kube_scheduler(oracle: Oracle) -> None:
    verdict = verify([str(ROOT / "tests" / "scenarios" / "composite-in-one-rack" / "manifests.yaml")],
                     composite_profile(), oracle)
    _agree(verdict)
    real = _real(verdict)
    llm0 = ["ml/llm-0-leader", *(f"ml/llm-0-workers-{i}" for i in range(3))]
    llm1 = ["ml/llm-1-leader", *(f"ml/llm-1-workers-{i}" for i in range(3))]
    assert {real[pod]["node"] for pod in llm0} == {"node-b1", "node-b2"}  # the only rack with 16 cpu free
    # Nothing of llm-1 binds at 1m (rack-a has 12 cpu free): all of it binds once llm-0 ends after 2h.
    assert {real[pod]["node"] for pod in llm1} == {"node-b1", "node-b2"}
    assert min(real[pod]["boundAt"] for pod in llm1) >= 7200
    assert _composite_conditions(oracle) == [None, None]  # no CompositePodGroupInitiallyScheduled in v1.37.2


def test_without_the_gate_each_pod_group_is_scheduled_on_its_own(oracle: Oracle) -> None:
    # The API server keeps the parent links (its gate is on); the scheduler's CompositePodGroup gate is off.
    profile = Profile("gang-topology", feature_gates={"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True})
    verdict = verify([str(ROOT / "tests" / "scenarios" / "composite-in-one-rack" / "manifests.yaml")], profile,
                     oracle)
    _agree(verdict)
    real = _real(verdict)
    assert real["ml/llm-1-leader"]["boundAt"] == 60  # alone, while its workers wait for llm-0 to end
    assert min(real[f"ml/llm-1-workers-{i}"]["boundAt"] for i in range(3)) >= 7200

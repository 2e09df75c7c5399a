"""CompositePodGroup trees (KEP-6012) against the real kube-scheduler v1.37.2, with CompositePodGroup and the
gates it needs (GenericWorkload, TopologyAwareWorkloadScheduling) on in both: each case runs through
`phalanx verify` and must agree on what binds, where (up to equally good nodes), when, on the victims of
workload-aware preemption for a tree, and on the leaf PodGroups' conditions; the real scheduler's choice is checked
to be the one the case is about, and the real CompositePodGroups are checked to carry no condition (v1.37.2 writes
none)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phalanx.scheduler.profiles import Profile
from phalanx.verify.compare import CATEGORIES, Verdict, verify
from phalanx.verify.oracle import Oracle, _generic_class
from tests.builders import (
    Buildable,
    MakeCompositePodGroup,
    MakeNode,
    MakePod,
    MakePodGroup,
    MakePriorityClass,
    write_manifests,
)

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


def high(builder: MakeCompositePodGroup | MakePodGroup, arrival: str = "5s") -> MakeCompositePodGroup | MakePodGroup:
    """The object at PriorityClass `high`, arriving after the low-priority pods run."""
    builder.doc["spec"]["priorityClassName"] = "high"
    return builder.arrival(arrival)


def high_member(group: str, i: int, cpu: str) -> MakePod:
    return member(group, i, cpu).priority_class("high").arrival("5s")


PREEMPTION: dict[str, tuple[list[Buildable], dict[str, set[str] | None], int]] = {
    # Three 8-cpu nodes each run a low-priority 8-cpu pod; the gang tree (minGroupCount 2) needs two 8-cpu pods
    # in a and one in b: three victims, then the tree binds where they were.
    "a gang composite preempts lower-priority pods and then binds": (
        [MakePriorityClass("low", 0), MakePriorityClass("high", 1000), node("n1"), node("n2"), node("n3"),
         *(MakePod(f"run-{i}", "ml").req(cpu="8", memory="1Gi").priority_class("low").node_selector(
             {"kubernetes.io/hostname": f"n{i + 1}"}) for i in range(3)),
         high(composite("job", 2)), high(leaf("a", "job")), high(leaf("b", "job", 1)),
         *(high_member("a", i, "8") for i in range(2)), high_member("b", 0, "8")],
        {"ml/a-0": {"n1", "n2", "n3"}, "ml/a-1": {"n1", "n2", "n3"}, "ml/b-0": {"n1", "n2", "n3"}}, 3),
    # The root wants one rack: rack-a (8 cpu, free) is too small for the tree's 16 cpu, rack-b is full of
    # low-priority pods. The dry run places the tree in rack-b with its two pods gone.
    "a composite with a topology constraint preempts inside one domain": (
        [MakePriorityClass("low", 0), MakePriorityClass("high", 1000), node("a1"), node("b1", rack="rack-b"),
         node("b2", rack="rack-b"),
         *(MakePod(f"run-{i}", "ml").req(cpu="8", memory="1Gi").priority_class("low").node_selector(
             {"kubernetes.io/hostname": f"b{i + 1}"}) for i in range(2)),
         high(composite("job", 2).topology(RACK)), high(leaf("a", "job")), high(leaf("b", "job")),
         *(high_member(g, i, "4") for g in "ab" for i in range(2))],
        {f"ml/{g}-{i}": {"b1", "b2"} for g in "ab" for i in range(2)}, 2),
    # b's pod asks for 12 cpu: even with every low-priority pod gone the tree does not fit, nothing is preempted.
    "nothing is preempted when the tree would not fit without every victim": (
        [MakePriorityClass("low", 0), MakePriorityClass("high", 1000), node("n1"), node("n2"),
         *(MakePod(f"run-{i}", "ml").req(cpu="8", memory="1Gi").priority_class("low").node_selector(
             {"kubernetes.io/hostname": f"n{i + 1}"}) for i in range(2)),
         high(composite("job", 2)), high(leaf("a", "job", 1)), high(leaf("b", "job", 1)),
         high_member("a", 0, "4"), high_member("b", 0, "12")],
        {"ml/a-0": None, "ml/b-0": None, "ml/run-0": {"n1"}, "ml/run-1": {"n2"}}, 0),
}


@pytest.mark.parametrize("case", sorted(PREEMPTION))
def test_composite_preemption_agrees_with_kube_scheduler(case: str, tmp_path: Path, oracle: Oracle) -> None:
    objects, expected, victims = PREEMPTION[case]
    path = write_manifests(tmp_path / "manifests.yaml", *objects)
    verdict = verify([str(path)], composite_profile(), oracle)
    _agree(verdict)
    real = _real(verdict)
    for pod, nodes in expected.items():
        if nodes is None:
            assert real[pod]["state"] == "pending", (case, pod, real[pod])
        else:
            assert real[pod]["state"] == "bound" and real[pod]["node"] in nodes, (case, pod, real[pod])
    mine = {entry["name"]: entry["phalanx"] for entry in verdict.pods}
    # A preempted bare pod ends Failed in Phalanx; `_agree` has checked that the real scheduler preempted the same.
    assert sum(1 for entry in mine.values() if entry["state"] == "failed") == victims


def all_mode(builder: MakeCompositePodGroup | MakePodGroup) -> MakeCompositePodGroup | MakePodGroup:
    builder.doc["spec"]["disruptionMode"] = {"all": {}}
    return builder


def with_class(builder: MakeCompositePodGroup | MakePodGroup, name: str) -> MakeCompositePodGroup | MakePodGroup:
    builder.doc["spec"]["priorityClassName"] = name
    return builder


def on(pod: MakePod, name: str) -> MakePod:
    return pod.node_selector({"kubernetes.io/hostname": name})


# Trees as victims (GetPodPriority, getHighestAllAncestor): the running tree arrives first, the preemptor at 5 s.
# Each case: objects, and per pod "failed" for a victim (preempted in both), else the nodes it runs on in the real
# cluster (None: pending).
TREE_VICTIMS: dict[str, tuple[list[Buildable], dict[str, set[str] | str | None]]] = {
    # The leaves say nothing (single), the root says all: the 8-cpu preemptor needs n1, both tree pods go.
    "a root with disruptionMode all is evicted whole": (
        [MakePriorityClass("high", 1000), node("n1"), node("n2"), all_mode(composite("job", 2)),
         leaf("a", "job", 1), leaf("b", "job", 1), member("a", 0, "8"), member("b", 0, "8"),
         on(MakePod("hi", "ml").req(cpu="8", memory="1Gi").priority_class("high").arrival("5s"), "n1")],
        {"ml/a-0": "failed", "ml/b-0": "failed", "ml/hi": {"n1"}}),
    # The leaf PodGroup is at 1000, its root and pods at 0: as a victim the pod has its root's 0, below 500.
    "a tree member is a victim at its root's priority": (
        [MakePriorityClass("mid", 500), MakePriorityClass("high", 1000), node("n1"), composite("job", 1),
         with_class(leaf("a", "job", 1), "high"), member("a", 0, "8"),
         MakePod("mid", "ml").req(cpu="8", memory="1Gi").priority_class("mid").arrival("5s")],
        {"ml/a-0": "failed", "ml/mid": {"n1"}}),
    # n1 runs a tree pod (root and pod at 10, leaf at 0), n2 a bare pod at 5: the victim of lowest priority is
    # the bare pod when the tree pod counts at its root's 10.
    "victims rank by their root's priority": (
        [MakePriorityClass("five", 5), MakePriorityClass("ten", 10), MakePriorityClass("high", 1000), node("n1"),
         node("n2"), with_class(composite("job", 1), "ten"), leaf("a", "job", 1),
         on(member("a", 0, "8").priority_class("ten"), "n1"),
         on(MakePod("low", "ml").req(cpu="8", memory="1Gi").priority_class("five"), "n2"),
         MakePod("hi", "ml").req(cpu="8", memory="1Gi").priority_class("high").arrival("5s")],
        {"ml/a-0": {"n1"}, "ml/low": "failed", "ml/hi": {"n2"}}),
}


@pytest.mark.parametrize("case", sorted(TREE_VICTIMS))
def test_tree_victims_agree_with_kube_scheduler(case: str, tmp_path: Path, oracle: Oracle) -> None:
    objects, expected = TREE_VICTIMS[case]
    path = write_manifests(tmp_path / "manifests.yaml", *objects)
    verdict = verify([str(path)], composite_profile(), oracle)
    _agree(verdict)  # the victims included: each pod preempted in Phalanx exactly when the real scheduler did
    real = _real(verdict)
    mine = {entry["name"]: entry["phalanx"] for entry in verdict.pods}
    # A preempted bare pod ends failed; a preempted tree member is recreated and waits, saying why.
    preempted = {pod for pod, entry in mine.items()
                 if entry["state"] == "failed" or "Preempted by" in (entry["message"] or "")}
    assert preempted == {pod for pod, want in expected.items() if want == "failed"}, (case, mine)
    for pod, want in expected.items():
        if want is None:
            assert real[pod]["state"] == "pending", (case, pod, real[pod])
        elif want != "failed":
            assert real[pod]["state"] == "bound" and real[pod]["node"] in want, (case, pod, real[pod])


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
    # The API server follows the profile too: with CompositePodGroup off it serves no CompositePodGroup, drops the
    # PodGroups' parent links, and refuses the Workload made only of compositePodGroupTemplates (it drops them,
    # then finds no template): those are left out with a note, as a cluster without the gate would refuse them.
    profile = Profile("gang-topology", feature_gates={"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True})
    verdict = verify([str(ROOT / "tests" / "scenarios" / "composite-in-one-rack" / "manifests.yaml")], profile,
                     oracle)
    _agree(verdict)
    assert any(note.startswith("not replayed: 1 Workload object(s)") and "CompositePodGroup off" in note
               for note in verdict.notes), verdict.notes
    assert any(note.startswith("not replayed: ") and "CompositePodGroup object(s)" in note for note in verdict.notes)
    real = _real(verdict)
    assert real["ml/llm-1-leader"]["boundAt"] == 60  # alone, while its workers wait for llm-0 to end
    assert min(real[f"ml/llm-1-workers-{i}"]["boundAt"] for i in range(3)) >= 7200


def test_children_are_tried_by_creation_second_then_by_name(tmp_path: Path, oracle: Oracle) -> None:
    """GetChildGroups (framework/types.go) tries a composite's children by creationTimestamp, which the API server
    keeps in whole seconds, then by name: of two 6-cpu leaves on one 8-cpu node, listed zz-first then aa-second
    (the fidelity issue's case; Phalanx tried them in document order). Both arrive at 0 s, so Phalanx ties them
    and takes aa-second by name, and where the real scheduler did so too both must agree in every category. The
    replay creates the leaves one after the other, so on a busy machine zz-first can be a second older, or the
    root's cycle can start before aa-second exists; then zz-first binds there, an outcome of the replay's wall
    clock that the simulation cannot know (docs/fidelity.md, Known differences)."""
    from lightkube.resources.scheduling_v1beta1 import PodGroup

    path = write_manifests(tmp_path / "manifests.yaml", node("n1"), composite("job", 1),
                           leaf("zz-first", "job", 1), leaf("aa-second", "job", 1),
                           member("zz-first", 0, "6"), member("aa-second", 0, "6"))
    verdict = verify([str(path)], composite_profile(), oracle)
    real = _real(verdict)
    stamps = {str(group.metadata.name): group.metadata.creationTimestamp.timestamp()
              for group in oracle.client.list(PodGroup, namespace="ml")
              if group.metadata is not None and group.metadata.creationTimestamp is not None}
    states = (real["ml/aa-second-0"]["state"], real["ml/zz-first-0"]["state"])
    assert states in (("bound", "pending"), ("pending", "bound")), (states, stamps)
    if states == ("bound", "pending"):  # the name decided on the real cluster: Phalanx must have taken it too
        _agree(verdict)

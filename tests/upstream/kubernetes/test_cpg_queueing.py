"""kube-scheduler v1.37.2's `podgroup/queueing_test.go` (TestCPGQueueing), restated as Phalanx inputs.

Each case builds a CompositePodGroup tree whose pods cannot be scheduled yet (the tree is incomplete, the root
lacks a ready child, or there is no node) and then makes one change that lets the tree through: the missing root
CompositePodGroup, a node, the second PodGroup or the last pod appears, or a PodGroup's minCount is lowered to
the pods it has (an update: the PodGroup's whole new state at that time). A later step is a later
`phalanx.dev/arrival`, one second after the step before it settled. Upstream's intermediate waits on queue
internals (incompletePodGroupPods, unschedulableEntities) are read as what they imply for the pods: none of them
binds before the change arrives; the end state is upstream's, every pod scheduled.

All cases run with GenericWorkload, TopologyAwareWorkloadScheduling and CompositePodGroup on, as upstream sets
them. Upstream's backoff is 0 s; Phalanx's cannot be set, which changes no end state here.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.builders import MakeCompositePodGroup, MakeNode, MakePod, MakePodGroup
from tests.upstream.kubernetes.restated import Case, Outcome, Unexpressed, names, params, run

FILE = "podgroup/queueing_test.go"
TEST = "TestCPGQueueing"
GATES = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True}


def node(arrival: int = 0) -> MakeNode:
    """The one node: 8 cpu and room for 32 pods (st.MakeNode().Capacity sets capacity and allocatable)."""
    built = MakeNode("node").capacity(cpu="8", pods="32").alloc(cpu="8", pods="32")
    return built.arrival(arrival) if arrival else built


def pod(name: str, group: str, arrival: int = 0) -> MakePod:
    """A member requesting 2 cpu, with upstream's second container that requests nothing."""
    built = MakePod(name).req(cpu="2").container().group(group)
    return built.arrival(arrival) if arrival else built


# st.PodGroupWrapper.WorkloadRef takes (template, workload); st.CompositePodGroupWrapper.WorkloadRef takes
# (workload, template). The objects below keep the fields each upstream call sets.
def pg1(min_count: int = 2) -> MakePodGroup:
    return MakePodGroup("pg1").workload("pg-t", "w1").gang(min_count).parent("cpg-mid")


def cpg_mid() -> MakeCompositePodGroup:
    return MakeCompositePodGroup("cpg-mid").workload("w1", "cpg-mid-t").gang(1).parent("cpg-root")


def cpg_root(arrival: int = 0) -> MakeCompositePodGroup:
    built = MakeCompositePodGroup("cpg-root").workload("w1", "cpg-t").gang(1)
    return built.arrival(arrival) if arrival else built


def cpg_root2() -> MakeCompositePodGroup:
    return MakeCompositePodGroup("cpg-root2").workload("w2", "cpg-t2").gang(2)


def pg2(name: str, workload_name: str, arrival: int = 0) -> MakePodGroup:
    built = MakePodGroup(name).workload(workload_name, "w2").gang(2).parent("cpg-root2")
    return built.arrival(arrival) if arrival else built


def scheduled_from(when: float, *pods: str) -> Callable[[Outcome], None]:
    """Every pod is scheduled, none before `when` (the step that unblocks them)."""
    def check(o: Outcome) -> None:
        for name in pods:
            assert o.bound(name), f"{name} was never scheduled: {o.message(name)}"
            bound_at = o.bound_at(name)
            assert bound_at is not None and bound_at >= when, f"{name} bound at {bound_at}, before {when}"
    return check


TREE2_PODS = ("p2-1", "p2-2", "p2-3", "p2-4")

CASES: list[Case] = [
    Case(FILE, TEST, "Incomplete CPG tree buffers pods and missing root CPG wakes them up",
         objects=(node(), pg1(), cpg_mid(), pod("p1", "pg1"), pod("p2", "pg1"), cpg_root(arrival=1)),
         check=scheduled_from(1, "p1", "p2"), gates=GATES),
    Case(FILE, TEST, "Node add triggers queueing hint for complete CPG tree from unschedulableQ",
         objects=(cpg_root(), cpg_mid(), pg1(), pod("p1", "pg1"), pod("p2", "pg1"), node(arrival=1)),
         check=scheduled_from(1, "p1", "p2"), gates=GATES),
    Case(FILE, TEST, "PodGroup add triggers queueing hint for unschedulable CPG root",
         objects=(node(), cpg_root2(), pg2("pg2-1", "pg-t2-1"),
                  pod("p2-1", "pg2-1"), pod("p2-2", "pg2-1"), pod("p2-3", "pg2-2"), pod("p2-4", "pg2-2"),
                  pg2("pg2-2", "pg-t2-2", arrival=1)),
         check=scheduled_from(1, *TREE2_PODS), gates=GATES),
    Case(FILE, TEST, "Pod add triggers queueing hint for unschedulable CPG root",
         objects=(node(), cpg_root2(), pg2("pg2-1", "pg-t2-1"), pg2("pg2-2", "pg-t2-2"),
                  pod("p2-1", "pg2-1"), pod("p2-2", "pg2-1"), pod("p2-3", "pg2-2"),
                  pod("p2-4", "pg2-2", arrival=1)),
         check=scheduled_from(1, *TREE2_PODS), gates=GATES),
    # The UpdatePodGroup step at 1 s gives pg1 its whole new state, upstream's fresh PodGroup with minCount 1.
    Case(FILE, TEST, "PodGroup update (reduce minCount) triggers queueing hint for unschedulable CPG tree",
         objects=(node(), cpg_root(), cpg_mid(), pg1(), pod("p1", "pg1")),
         updates=((1, pg1(min_count=1)),),
         check=scheduled_from(1, "p1"), gates=GATES, replay="a step updates PodGroup pg1's minCount mid-run"),
]

UNEXPRESSED: list[Unexpressed] = []

UPSTREAM_NAMES = (
    "Incomplete CPG tree buffers pods and missing root CPG wakes them up",
    "Node add triggers queueing hint for complete CPG tree from unschedulableQ",
    "PodGroup add triggers queueing hint for unschedulable CPG root",
    "Pod add triggers queueing hint for unschedulable CPG root",
    "PodGroup update (reduce minCount) triggers queueing hint for unschedulable CPG tree",
)


@pytest.mark.parametrize("case", params(CASES))
def test_upstream_case(case: Case) -> None:
    case.check(run(case))


def test_every_upstream_case_is_named_once() -> None:
    ours = names([*CASES, *UNEXPRESSED])
    assert len(set(ours)) == len(ours), "a case is named twice"
    assert sorted(ours) == sorted((TEST, name) for name in UPSTREAM_NAMES)

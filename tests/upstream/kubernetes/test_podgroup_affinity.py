"""kube-scheduler v1.37.2's `podgroup/podgroup_affinity_test.go` (TestPodGroupSchedulingWithPodAntiAffinity), restated
as Phalanx inputs.

A PodGroup cycle places its pods one after the other on one snapshot: a pod placed earlier in the cycle must count
for the required pod anti-affinity of the pods placed after it. The group (minCount 2, priority 200) has an
anti-affinity pod, pinned to node-1 and keeping pods labelled app=foo off its hostname, and a plain pod labelled
app=foo without any anti-affinity of its own, created in that order at one instant (upstream's CreatePodsInOrder).
Nodes have 2 cpu (room for 32 pods) and their hostname label; the pods ask 1 cpu plus upstream's request-less
container.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.builders import Buildable, MakePod, MakePodGroup, MakeWorkload
from tests.upstream.kubernetes.restated import Case, Outcome, Unexpressed, names, params, run
from tests.upstream.kubernetes.test_podgroup import condition, every, node, scheduled, unschedulable

FILE = "podgroup/podgroup_affinity_test.go"
TEST = "TestPodGroupSchedulingWithPodAntiAffinity"
HOSTNAME = "kubernetes.io/hostname"


def cluster_node(name: str) -> Buildable:
    return node(name, cpu="2", labels={HOSTNAME: name})


def group_objects() -> tuple[Buildable, ...]:
    """Upstream's steps after the nodes: the Workload, the PodGroup, then the two pods in order."""
    anti = (MakePod("anti-pod").label("app", "foo").req(cpu="1").container().node_selector({HOSTNAME: "node-1"})
            .pod_anti_affinity(HOSTNAME, {"app": "foo"}).group("pg").priority(200))
    plain = MakePod("plain-pod").label("app", "foo").req(cpu="1").container().group("pg").priority(200)
    return (MakeWorkload("workload").template("t", gang=2),
            MakePodGroup("pg").workload("workload", "t").priority(200).gang(2).arrival(1),
            anti.arrival(2), plain.arrival(2))


def on(pod: str, *nodes: str) -> Callable[[Outcome], None]:
    """VerifyAssignments: the pod is bound to one of `nodes`."""
    def check(o: Outcome) -> None:
        assert o.node(pod) in nodes, (pod, o.node(pod))
    return check


CASES: list[Case] = [
    Case(FILE, TEST, "anti-affinity honored across the cycle on a multi-topology cluster",
         (cluster_node("node-1"), cluster_node("node-2"), *group_objects()),
         every(scheduled("anti-pod", "plain-pod"), on("anti-pod", "node-1"), on("plain-pod", "node-2"))),
    Case(FILE, TEST, "anti-affinity keeps the group unschedulable on a single-topology cluster",
         (cluster_node("node-1"), *group_objects()),
         every(unschedulable("anti-pod", "plain-pod"), condition("pg", "False", "Unschedulable"))),
]

UNEXPRESSED: list[Unexpressed] = []


@pytest.mark.parametrize("case", params(CASES))
def test_upstream_case(case: Case) -> None:
    case.check(run(case))


UPSTREAM_NAMES = (
    "anti-affinity honored across the cycle on a multi-topology cluster",
    "anti-affinity keeps the group unschedulable on a single-topology cluster",
)


def test_every_upstream_case_is_named_once() -> None:
    ours = names([*CASES, *UNEXPRESSED])
    assert sorted(ours) == sorted((TEST, name) for name in UPSTREAM_NAMES)
    assert len(set(ours)) == len(ours)
    everything: list[Case | Unexpressed] = [*CASES, *UNEXPRESSED]
    assert all(c.file == FILE for c in everything)

"""Upstream topology-aware workload scheduling cases (podgroup/topology_aware_scheduling/tas_test.go), restated.

Both Go functions, TestTopologyAwareSchedulingWithGangPolicy and TestTopologyAwareSchedulingWithBasicPolicy, run
every scenario twice, as `<name> (CPG: false)` and `<name> (CPG: true)`, with GenericWorkload and
TopologyAwareWorkloadScheduling on and the CompositePodGroup gate off or on; each run is one Case here.

Each scenario first makes the Workload `workload` (template `t1`, minCount 1) the PodGroups name. Nodes have 2
cpu (and 32 pods) and `rack` and `zone` labels. Objects a step creates after a step that waits (for pods to be
scheduled or unschedulable), and a step's deletions, come `STEP` whole seconds after the step before; steps
that only create things follow each other at the same instant, in upstream's order. What upstream checks before
a later step (pods scheduled, or still unschedulable, a victim still running before the pod that preempts it
arrives) is asserted through bind and preemption times.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pytest

from tests.builders import Buildable, MakeNode, MakePod, MakePodGroup, MakeWorkload
from tests.upstream.kubernetes.restated import Case, Outcome, Unexpressed, names, params, run

FILE = "podgroup/topology_aware_scheduling/tas_test.go"
GANG = "TestTopologyAwareSchedulingWithGangPolicy"
BASIC = "TestTopologyAwareSchedulingWithBasicPolicy"
DELETES = "a step deletes a pod mid-run"

# Seconds between steps that follow a wait: upstream runs with no pod backoff (0 s initial and maximum), Phalanx
# with kube-scheduler's default (1 s initial, 10 s at most), so a step is given a whole backoff period to settle.
STEP = 10

Labels = dict[str, dict[str, str]]


# --- the objects of tas_test.go's helpers -------------------------------------------------------------------

def workload() -> MakeWorkload:
    return MakeWorkload("workload").template("t1", gang=1)


def node(name: str, rack: str, zone: str) -> MakeNode:
    return MakeNode(name).label("rack", rack).label("zone", zone).capacity(cpu="2", pods="32").alloc(cpu="2", pods="32")


def gang_group(name: str, key: str, min_count: int, priority: int = 100) -> MakePodGroup:
    return MakePodGroup(name).workload("workload", "t1").topology(key).gang(min_count).priority(priority)


def basic_group(name: str, key: str) -> MakePodGroup:
    return MakePodGroup(name).workload("workload", "t1").basic().topology(key).priority(100)


def member(name: str, group: str, priority: int = 100) -> MakePod:
    """makePod / makePodWithPriority: 1 cpu, zero grace period."""
    return MakePod(name).req(cpu="1").group(group).priority(priority).grace(0)


def large(name: str, group: str) -> MakePod:
    """makeLargePod: a whole node's 2 cpu, the default grace period."""
    return MakePod(name).req(cpu="2").group(group).priority(100)


def unfittable(name: str, group: str) -> MakePod:
    """makeUnfittablePod: 3 cpu, more than any node has."""
    return MakePod(name).req(cpu="3").group(group).priority(100)


def assigned(name: str, on: str, cpu: str, priority: int = 100) -> MakePod:
    """makeAssignedPod / makeAssignedPodWithPriority: already bound to `on`, zero grace period."""
    return MakePod(name).node(on).req(cpu=cpu).priority(priority).grace(0)


def at(step: int, *builders: MakePod | MakePodGroup) -> list[Buildable]:
    """Objects a later step creates, in the `step`-th period after the start."""
    return [b.arrival(f"{step * STEP}s") for b in builders]


# --- what upstream's steps assert ---------------------------------------------------------------------------

def scheduled(o: Outcome, *pods: str) -> None:
    for pod in pods:
        assert o.bound(pod), f"{pod} is not scheduled ({o.message(pod)})"


def unschedulable(o: Outcome, *pods: str) -> None:
    for pod in pods:
        assert o.pending(pod), f"{pod} should be unschedulable, is on {o.node(pod)}"
        assert o.message(pod), f"{pod} pending with no unschedulable reason"


def scheduled_by(o: Outcome, when: float, *pods: str) -> None:
    """Upstream waited for these to be scheduled before a step at `when`."""
    for pod in pods:
        bound_at = o.bound_at(pod)
        assert bound_at is not None and bound_at < when, f"{pod} bound at {bound_at}, not before {when}"


def unschedulable_until(o: Outcome, when: float, *pods: str) -> None:
    """Upstream waited for these to be unschedulable before a step at `when`: none bound earlier."""
    for pod in pods:
        bound_at = o.bound_at(pod)
        assert bound_at is None or bound_at >= when, f"{pod} bound at {bound_at}, before {when}"


def on(o: Outcome, pods: Sequence[str], nodes: set[str]) -> None:
    for pod in pods:
        assert o.node(pod) in nodes, f"{pod} on {o.node(pod)}, want one of {sorted(nodes)}"


def removed(o: Outcome, *pods: str, after: float = 0.0) -> None:
    for pod in pods:
        assert o.preempted(pod), f"{pod} was not preempted"
        first = o.record(pod).preempted_by[0]["time"]
        assert first >= after, f"{pod} preempted at {first}, before {after}"


def one_domain(o: Outcome, pods: Sequence[str], key: str, labels: Labels) -> None:
    domains = set()
    for pod in pods:
        where = o.node(pod)
        assert where is not None, f"{pod} is not assigned"
        assert labels[where].get(key), f"{where} has no {key} label"
        domains.add(labels[where][key])
    assert len(domains) == 1, f"{list(pods)} span {key} domains {sorted(domains)}"


def labels_of(objects: Sequence[Buildable]) -> Labels:
    return {b.doc["metadata"]["name"]: dict(b.doc["metadata"].get("labels", {}))
            for b in objects if isinstance(b, MakeNode)}


# --- the scenarios ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Scenario:
    test: str
    name: str  # the scenario's `name`, before t.Run appends " (CPG: …)"
    objects: tuple[Buildable, ...]
    check: Callable[[Outcome], None]
    deletions: tuple[tuple[float, str], ...] = ()
    replay: str = ""
    differs: str = ""


def scenario(test: str, name: str, objects: Sequence[Buildable], check: Callable[[Outcome, Labels], None],
             deletions: tuple[tuple[float, str], ...] = (), differs: str = "") -> Scenario:
    objs = (workload(), *objects)
    labels = labels_of(objs)
    return Scenario(test, name, objs, lambda o: check(o, labels), deletions, DELETES if deletions else "", differs)


def gang_scenarios() -> list[Scenario]:
    out: list[Scenario] = []

    def add(name: str, objects: Sequence[Buildable], check: Callable[[Outcome, Labels], None],
            deletions: tuple[tuple[float, str], ...] = (), differs: str = "") -> None:
        out.append(scenario(GANG, name, objects, check, deletions, differs))

    def c1(o: Outcome, _: Labels) -> None:
        scheduled(o, "p1", "p2", "p3")
        on(o, ("p1", "p2", "p3"), {"node1-rack1", "node2-rack1", "node3-rack1"})

    add("gang schedules on a single rack, when only one feasible rack is available",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack1", "rack-1", "zone-1"), node("node4-rack2", "rack-2", "zone-1"),
         node("node5-rack2", "rack-2", "zone-1"), node("node6-zone2", "rack-3", "zone-2"),
         assigned("existing1", "node4-rack2", "2"),
         gang_group("pg1", "rack", 3),
         member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1")], c1)

    def c2(o: Outcome, _: Labels) -> None:
        unschedulable(o, "p1", "p2", "p3")

    add("gang remains pending when no feasible resources are found",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack2", "rack-2", "zone-1"), node("node4-zone2", "rack-3", "zone-2"),
         gang_group("pg1", "rack", 3),
         large("p1", "pg1"), large("p2", "pg1"), large("p3", "pg1")], c2)

    def c3(o: Outcome, _: Labels) -> None:
        unschedulable_until(o, 1 * STEP, "p1", "p2", "p3")
        scheduled(o, "p1", "p2", "p3")

    add("gang remains pending when resources are consumed by existing pods",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack1", "rack-1", "zone-1"),
         assigned("existing1", "node1-rack1", "2"), assigned("existing2", "node3-rack1", "2"),
         gang_group("pg1", "rack", 3),
         member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1")], c3,
        deletions=((1 * STEP, "existing1"),))

    def c4(o: Outcome, _: Labels) -> None:
        scheduled(o, "p1", "p2", "p3")
        removed(o, "existing1", "existing2")

    add("gang uses pod group preemption when resources are consumed by lower priority existing pods",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack1", "rack-1", "zone-1"),
         assigned("existing1", "node1-rack1", "2"), assigned("existing2", "node3-rack1", "2"),
         gang_group("pg1", "rack", 3, 200),
         member("p1", "pg1", 200), member("p2", "pg1", 200), member("p3", "pg1", 200)], c4)

    def c5(o: Outcome, _: Labels) -> None:
        scheduled(o, "p1", "p2", "p3")
        removed(o, "low1-rack1")
        on(o, ("p1", "p2", "p3"), {"node1-rack1", "node2-rack1"})

    add("gang uses preemption and schedules on a single rack, choosing placement with the highest score",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack2", "rack-2", "zone-2"), node("node4-rack2", "rack-2", "zone-2"),
         node("node5-rack2", "rack-2", "zone-2"), node("node6-rack3", "rack-3", "zone-2"),
         assigned("low1-rack1", "node1-rack1", "2", 10), assigned("low1-rack2", "node3-rack2", "2", 10),
         assigned("low2-rack2", "node4-rack2", "2", 10),
         gang_group("pg1", "rack", 3, 200),
         member("p1", "pg1", 200), member("p2", "pg1", 200), member("p3", "pg1", 200)], c5)

    def c6(o: Outcome, _: Labels) -> None:
        scheduled(o, "p1", "p2", "p3")
        removed(o, "low1-rack2")
        on(o, ("p1", "p2", "p3"), {"node3-rack2", "node4-rack2", "node5-rack2"})

    add("gang uses preemption and schedules on a single rack, choosing placement with highest allocation "
        "percentage with pre-existing pods in cluster",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack2", "rack-2", "zone-2"), node("node4-rack2", "rack-2", "zone-2"),
         node("node5-rack2", "rack-2", "zone-2"), node("node6-rack3", "rack-3", "zone-2"),
         node("node7-rack3", "rack-3", "zone-2"), node("node8-rack3", "rack-3", "zone-2"),
         node("node9-rack4", "rack-4", "zone-2"),
         assigned("existing1", "node3-rack2", "2", 200), assigned("existing2", "node8-rack3", "1", 200),
         assigned("low1-rack1", "node1-rack1", "2", 10), assigned("low1-rack2", "node4-rack2", "2", 10),
         assigned("low1-rack3", "node6-rack3", "2", 10), assigned("low2-rack3", "node8-rack3", "1", 10),
         gang_group("pg1", "rack", 3, 200),
         member("p1", "pg1", 200), member("p2", "pg1", 200), member("p3", "pg1", 200)], c6)

    def c7(o: Outcome, _: Labels) -> None:
        scheduled(o, "p1", "p2", "p3")
        on(o, ("p1", "p2", "p3"), {"node1-rack1", "node2-rack1"})

    add("gang schedules on a single rack, choosing placement with the highest score in default placement scoring "
        "algorithm",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack2", "rack-2", "zone-2"), node("node4-rack2", "rack-2", "zone-2"),
         node("node5-rack2", "rack-2", "zone-2"), node("node6-rack3", "rack-3", "zone-2"),
         gang_group("pg1", "rack", 3),
         member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1")], c7)

    def c8(o: Outcome, _: Labels) -> None:
        scheduled(o, "p1", "p2", "p3")
        on(o, ("p1", "p2", "p3"), {"node3-rack2", "node4-rack2", "node5-rack2"})

    add("gang schedules on a single rack, choosing placement with highest allocation percentage (default placement "
        "scoring algorithm) with pre-existing pods in cluster",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack2", "rack-2", "zone-2"), node("node4-rack2", "rack-2", "zone-2"),
         node("node5-rack2", "rack-2", "zone-2"), node("node6-rack3", "rack-3", "zone-2"),
         node("node7-rack3", "rack-3", "zone-2"), node("node8-rack3", "rack-3", "zone-2"),
         node("node9-rack4", "rack-4", "zone-2"),
         assigned("existing1", "node3-rack2", "2"), assigned("existing2", "node8-rack3", "1"),
         gang_group("pg1", "rack", 3),
         member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1")], c8)

    def c9(o: Outcome, _: Labels) -> None:
        scheduled_by(o, 1 * STEP, "p1", "p2", "p3")
        scheduled(o, "p4", "p5")
        on(o, ("p1", "p2", "p3"), {"node1-rack1", "node2-rack1", "node3-rack1"})
        on(o, ("p4", "p5"), {"node4-rack2", "node5-rack2"})

    add("two gangs schedule consecutively, each on a separate rack",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack1", "rack-1", "zone-1"), node("node4-rack2", "rack-2", "zone-1"),
         node("node5-rack2", "rack-2", "zone-1"),
         gang_group("pg1", "rack", 3),
         large("p1", "pg1"), large("p2", "pg1"), large("p3", "pg1"),
         *at(1, gang_group("pg2", "rack", 2), member("p4", "pg2"), member("p5", "pg2"))], c9)

    def c10(o: Outcome, _: Labels) -> None:
        scheduled(o, "p1", "p2", "p3", "p4", "p5")
        on(o, ("p1", "p2", "p3", "p4", "p5"), {"node1-rack1", "node2-rack1", "node3-rack1"})

    add("two gangs schedule consecutively, both on the same rack",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack1", "rack-1", "zone-1"), node("node4-rack2", "rack-2", "zone-1"),
         gang_group("pg1", "rack", 2),
         large("p1", "pg1"), member("p2", "pg1"),
         gang_group("pg2", "rack", 3),
         member("p3", "pg2"), member("p4", "pg2"), member("p5", "pg2")], c10)

    def c11(o: Outcome, _: Labels) -> None:
        scheduled_by(o, 1 * STEP, "p1", "p2", "p3")
        scheduled(o, "p4", "p5", "p6")
        on(o, ("p1", "p2", "p3"), {"node4-zone2", "node5-zone2", "node6-zone2"})
        on(o, ("p4", "p5", "p6"), {"node1-rack1", "node2-rack1", "node3-rack2"})

    add("two gangs schedule consecutively, different topology keys",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack2", "rack-2", "zone-1"), node("node4-zone2", "rack-3", "zone-2"),
         node("node5-zone2", "rack-3", "zone-2"), node("node6-zone2", "rack-3", "zone-2"),
         gang_group("pg1", "rack", 3),
         large("p1", "pg1"), large("p2", "pg1"), large("p3", "pg1"),
         *at(1, gang_group("pg2", "zone", 3), large("p4", "pg2"), large("p5", "pg2"), large("p6", "pg2"))], c11)

    def c12(o: Outcome, _: Labels) -> None:
        scheduled_by(o, 1 * STEP, "p1", "p2", "p3")
        on(o, ("p1", "p2", "p3"), {"node1-rack1", "node2-rack1"})
        unschedulable(o, "p4", "p5")

    add("two gangs schedule consecutively, only one fits in the cluster",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         gang_group("pg1", "rack", 3),
         member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1"),
         *at(1, gang_group("pg2", "rack", 2), member("p4", "pg2"), member("p5", "pg2"))], c12)

    def c13(o: Outcome, labels: Labels) -> None:
        scheduled(o, "p1", "p2", "p3")
        one_domain(o, ("p1", "p2", "p3"), "rack", labels)

    add("gang with minCount < pod count schedules on a single rack",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack2", "rack-2", "zone-1"), node("node4-rack2", "rack-2", "zone-1"),
         gang_group("pg1", "rack", 2),
         member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1")], c13)

    def c14(o: Outcome, _: Labels) -> None:
        scheduled_by(o, 1 * STEP, "p1", "p2", "p3")
        scheduled_by(o, 2 * STEP, "p4")
        on(o, ("p1", "p2", "p3", "p4"), {"node4-rack2", "node5-rack2"})
        unschedulable(o, "p5")

    add("gang with minCount < pod count schedules on a single rack, choosing smaller rack",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack1", "rack-1", "zone-1"), node("node4-rack2", "rack-2", "zone-1"),
         node("node5-rack2", "rack-2", "zone-1"), node("node6-rack3", "rack-3", "zone-2"),
         gang_group("pg1", "rack", 3),
         member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1"),
         *at(1, member("p4", "pg1")),
         *at(2, member("p5", "pg1"))], c14)

    def c15(o: Outcome, _: Labels) -> None:
        rack2 = {"node4-rack2", "node5-rack2"}
        scheduled_by(o, 1 * STEP, "p1", "p2", "p3")
        on(o, ("p1", "p2", "p3"), rack2)
        scheduled_by(o, 2 * STEP, "p4")
        removed(o, "low1-rack2", after=1 * STEP)  # still on node5-rack2 when p1..p3 were checked, before p4 came
        on(o, ("p1", "p2", "p3", "p4"), rack2)
        unschedulable(o, "p5")

    add("gang with minCount < pod count schedules on a single rack without preemption, additional pod triggers "
        "preemption on the same rack",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack1", "rack-1", "zone-1"), node("node4-rack2", "rack-2", "zone-1"),
         node("node5-rack2", "rack-2", "zone-1"), node("node6-rack3", "rack-3", "zone-2"),
         assigned("low1-rack2", "node5-rack2", "1", 10),
         gang_group("pg1", "rack", 3, 200),
         member("p1", "pg1", 200), member("p2", "pg1", 200), member("p3", "pg1", 200),
         *at(1, member("p4", "pg1", 200)),
         *at(2, member("p5", "pg1", 200))], c15)

    def c16(o: Outcome, _: Labels) -> None:
        unschedulable(o, "p1", "p2", "p3")

    add("gang does not schedule on a single rack when preemption could free up enough resources",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         assigned("existing1", "node2-rack1", "2"),
         gang_group("pg1", "rack", 3),
         member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1")], c16)

    return out


def basic_scenarios() -> list[Scenario]:
    out: list[Scenario] = []

    def add(name: str, objects: Sequence[Buildable], check: Callable[[Outcome, Labels], None],
            deletions: tuple[tuple[float, str], ...] = (), differs: str = "") -> None:
        out.append(scenario(BASIC, name, objects, check, deletions, differs))

    def c1(o: Outcome, _: Labels) -> None:
        scheduled(o, "p1", "p2", "p3")
        on(o, ("p1", "p2", "p3"), {"node1-rack1", "node2-rack1"})

    add("basic podgroup schedules on the only rack in the cluster",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         basic_group("pg1", "rack"),
         member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1")], c1)

    def c2(o: Outcome, labels: Labels) -> None:
        scheduled(o, "p1", "p2", "p3")
        one_domain(o, ("p1", "p2", "p3"), "rack", labels)

    add("basic podgroup schedules all pods on a single rack, when there are multiple racks fitting in the cluster",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack2", "rack-2", "zone-1"), node("node4-rack2", "rack-2", "zone-1"),
         node("node5-zone2", "rack-3", "zone-2"), node("node6-zone2", "rack-3", "zone-2"),
         basic_group("pg1", "rack"),
         member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1")], c2)

    def c3(o: Outcome, labels: Labels) -> None:
        scheduled(o, "p1", "p2")
        unschedulable(o, "p3")
        one_domain(o, ("p1", "p2"), "rack", labels)

    add("basic podgroup cannot fit on a single rack, no pods get scheduled on a different rack",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack2", "rack-2", "zone-1"),
         basic_group("pg1", "rack"),
         member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1")], c3)

    def c4(o: Outcome, _: Labels) -> None:
        unschedulable(o, "p1", "p2")

    add("basic podgroup does not schedule at all when no pods fit",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack2", "rack-2", "zone-1"),
         basic_group("pg1", "rack"),
         unfittable("p1", "pg1"), unfittable("p2", "pg1")], c4)

    def c5(o: Outcome, _: Labels) -> None:
        scheduled(o, "p2")
        unschedulable(o, "p1")

    add("basic podgroup schedules only some pods when others don't fit on any node",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack2", "rack-2", "zone-1"),
         basic_group("pg1", "rack"),
         unfittable("p1", "pg1"), member("p2", "pg1")], c5)

    def c6(o: Outcome, _: Labels) -> None:
        scheduled(o, "p1", "p2", "p3")
        on(o, ("p1", "p2", "p3"), {"node1-rack1", "node2-rack1"})

    add("basic podgroup schedules on a single rack, choosing placement with highest allocation percentage (default "
        "placement scoring algorithm)",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack2", "rack-2", "zone-2"), node("node4-rack2", "rack-2", "zone-2"),
         node("node5-rack2", "rack-2", "zone-2"),
         basic_group("pg1", "rack"),
         member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1")], c6)

    def c7(o: Outcome, _: Labels) -> None:
        scheduled(o, "p1", "p2", "p3")
        on(o, ("p1", "p2", "p3"), {"node4-rack2", "node5-rack2", "node6-rack2"})

    add("basic podgroup schedules on a single rack, choosing placement with highest allocation percentage with "
        "pre-existing pods",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack1", "rack-1", "zone-1"), node("node4-rack2", "rack-2", "zone-2"),
         node("node5-rack2", "rack-2", "zone-2"), node("node6-rack2", "rack-2", "zone-2"),
         node("node7-rack3", "rack-3", "zone-2"), node("node8-rack3", "rack-3", "zone-2"),
         node("node9-rack3", "rack-3", "zone-2"), node("node10-rack3", "rack-3", "zone-2"),
         assigned("existing1", "node1-rack1", "1"), assigned("existing2", "node5-rack2", "1"),
         assigned("existing3", "node6-rack2", "1"),
         basic_group("pg1", "rack"),
         member("p1", "pg1"), member("p2", "pg1"), member("p3", "pg1")], c7)

    def c8(o: Outcome, _: Labels) -> None:
        scheduled_by(o, 1 * STEP, "p1")
        scheduled(o, "p2")
        on(o, ("p1", "p2"), {"node5-rack2"})
        unschedulable(o, "p3")

    add("basic podgroup schedules on a single rack, choosing best scoring placement that will not fit all podgroup",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack1", "rack-1", "zone-1"), node("node4-rack1", "rack-1", "zone-1"),
         node("node5-rack2", "rack-2", "zone-1"),
         assigned("existing1", "node1-rack1", "2"),
         basic_group("pg1", "rack"),
         member("p1", "pg1"),
         *at(1, member("p2", "pg1"), member("p3", "pg1"))], c8)

    def c9(o: Outcome, _: Labels) -> None:
        scheduled(o, "p1", "p2")
        on(o, ("p1", "p2"), {"node4-rack2"})
        scheduled(o, "p3", "p4")
        on(o, ("p3", "p4"), {"node1-rack1", "node2-rack1", "node3-rack1"})

    add("two basic podgroups schedule consecutively, each on a single rack",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack1", "rack-1", "zone-1"), node("node4-rack2", "rack-2", "zone-1"),
         basic_group("pg1", "rack"),
         member("p1", "pg1"), member("p2", "pg1"),
         basic_group("pg2", "rack"),
         member("p3", "pg2"), member("p4", "pg2")], c9)

    def c10(o: Outcome, _: Labels) -> None:
        scheduled(o, "p1", "p2", "p3", "p4", "p5")

    add("two basic podgroups schedule consecutively on the only rack",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack1", "rack-1", "zone-1"),
         basic_group("pg1", "rack"),
         member("p1", "pg1"), member("p2", "pg1"),
         basic_group("pg2", "rack"),
         member("p3", "pg2"), member("p4", "pg2"), member("p5", "pg2")], c10)

    def c11(o: Outcome, _: Labels) -> None:
        scheduled(o, "p1", "p2", "p3", "p4", "p5")
        on(o, ("p1", "p2"), {"node1-rack1"})
        on(o, ("p3", "p4", "p5"), {"node2-zone2", "node3-zone2", "node4-zone2", "node5-zone2"})

    add("two basic podgroups schedule consecutively, different topology keys",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-zone2", "rack-2", "zone-2"),
         node("node3-zone2", "rack-2", "zone-2"), node("node4-zone2", "rack-3", "zone-2"),
         node("node5-zone2", "rack-3", "zone-2"),
         basic_group("pg1", "rack"),
         member("p1", "pg1"), member("p2", "pg1"),
         basic_group("pg2", "zone"),
         large("p3", "pg2"), large("p4", "pg2"), large("p5", "pg2")], c11)

    def c12(o: Outcome, _: Labels) -> None:
        scheduled_by(o, 1 * STEP, "p1")
        scheduled_by(o, 2 * STEP, "p2")
        unschedulable_until(o, 2 * STEP, "p3")  # unschedulable when pg2 came
        on(o, ("p1", "p2"), {"node3-rack2"})
        scheduled(o, "p4", "p5", "p6")
        on(o, ("p4", "p5", "p6"), {"node1-rack1", "node2-rack1"})

    add("two basic podgroups schedule consecutively, one does not fit in the assigned rack",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack1", "rack-1", "zone-1"),
         node("node3-rack2", "rack-2", "zone-1"),
         basic_group("pg1", "rack"),
         member("p1", "pg1"),
         *at(1, member("p2", "pg1"), member("p3", "pg1")),
         *at(2, basic_group("pg2", "rack"), member("p4", "pg2"), member("p5", "pg2"), member("p6", "pg2"))], c12)

    def c13(o: Outcome, _: Labels) -> None:
        scheduled_by(o, 2 * STEP, "p1")
        on(o, ("p1",), {"node1-rack1"})
        unschedulable_until(o, 3 * STEP, "p2")
        scheduled(o, "p1", "p2")
        on(o, ("p1", "p2"), {"node1-rack1"})

    add("basic podgroup continues to schedule pods when more resources become available",
        [node("node1-rack1", "rack-1", "zone-1"), node("node2-rack2", "rack-2", "zone-1"),
         assigned("existing1", "node1-rack1", "1"),
         *at(1, basic_group("pg1", "rack"), member("p1", "pg1")),
         *at(2, member("p2", "pg1"))], c13,
        deletions=((3 * STEP, "existing1"),))

    return out


SCENARIOS: list[Scenario] = [*gang_scenarios(), *basic_scenarios()]


def _gates(cpg: bool) -> dict[str, bool]:
    return {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True, "CompositePodGroup": cpg}


CASES: list[Case] = [
    Case(FILE, s.test, f"{s.name} (CPG: {'true' if cpg else 'false'})", s.objects, s.check, deletions=s.deletions,
         gates=_gates(cpg), differs=s.differs, replay=s.replay)
    for s in SCENARIOS for cpg in (False, True)
]

UNEXPRESSED: list[Unexpressed] = []


@pytest.mark.parametrize("case", params(CASES))
def test_upstream_case(case: Case) -> None:
    case.check(run(case))


UPSTREAM_GANG = (
    "gang schedules on a single rack, when only one feasible rack is available",
    "gang remains pending when no feasible resources are found",
    "gang remains pending when resources are consumed by existing pods",
    "gang uses pod group preemption when resources are consumed by lower priority existing pods",
    "gang uses preemption and schedules on a single rack, choosing placement with the highest score",
    "gang uses preemption and schedules on a single rack, choosing placement with highest allocation percentage "
    "with pre-existing pods in cluster",
    "gang schedules on a single rack, choosing placement with the highest score in default placement scoring "
    "algorithm",
    "gang schedules on a single rack, choosing placement with highest allocation percentage (default placement "
    "scoring algorithm) with pre-existing pods in cluster",
    "two gangs schedule consecutively, each on a separate rack",
    "two gangs schedule consecutively, both on the same rack",
    "two gangs schedule consecutively, different topology keys",
    "two gangs schedule consecutively, only one fits in the cluster",
    "gang with minCount < pod count schedules on a single rack",
    "gang with minCount < pod count schedules on a single rack, choosing smaller rack",
    "gang with minCount < pod count schedules on a single rack without preemption, additional pod triggers "
    "preemption on the same rack",
    "gang does not schedule on a single rack when preemption could free up enough resources",
)

UPSTREAM_BASIC = (
    "basic podgroup schedules on the only rack in the cluster",
    "basic podgroup schedules all pods on a single rack, when there are multiple racks fitting in the cluster",
    "basic podgroup cannot fit on a single rack, no pods get scheduled on a different rack",
    "basic podgroup does not schedule at all when no pods fit",
    "basic podgroup schedules only some pods when others don't fit on any node",
    "basic podgroup schedules on a single rack, choosing placement with highest allocation percentage (default "
    "placement scoring algorithm)",
    "basic podgroup schedules on a single rack, choosing placement with highest allocation percentage with "
    "pre-existing pods",
    "basic podgroup schedules on a single rack, choosing best scoring placement that will not fit all podgroup",
    "two basic podgroups schedule consecutively, each on a single rack",
    "two basic podgroups schedule consecutively on the only rack",
    "two basic podgroups schedule consecutively, different topology keys",
    "two basic podgroups schedule consecutively, one does not fit in the assigned rack",
    "basic podgroup continues to schedule pods when more resources become available",
)


def test_every_upstream_case_is_named_once() -> None:
    # t.Run names each scenario "%s (CPG: %v)" for CPG false, then true.
    expected = [(test, f"{name} (CPG: {cpg})")
                for test, scenario_names in ((GANG, UPSTREAM_GANG), (BASIC, UPSTREAM_BASIC))
                for name in scenario_names for cpg in ("false", "true")]
    listed = names([*CASES, *UNEXPRESSED])
    assert len(listed) == len(set(listed))
    assert sorted(listed) == sorted(expected)

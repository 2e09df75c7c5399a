"""kube-scheduler v1.37.2's `TestPodGroupPreemption` (preemption/podgroup/podgrouppreemption_test.go), restated.

Every upstream case runs the same steps: nodes, then the PodDisruptionBudget if any, then the PodGroups, then
the initial pods (waited for until scheduled), then the preemptor pods. Here the first four arrive at 0 s and
the preemptors at 1 s, all of them at that instant in upstream's creation order. Every pod has a zero
termination grace period, and each carries upstream's extra request-less container ("image"), which kube-scheduler
scores as 100m cpu and 200Mi memory. Every case runs with GenericWorkload and TopologyAwareWorkloadScheduling on,
and PodGroupPreemptionPolicy as the case sets it (off unless it says otherwise).

What a case asserts, and how it is read here:

- `expectedScheduled`: the pod is bound and still running (not preempted);
- `expectedPreempted`: the pod was evicted by preemption;
- `expectedUnschedulable`: the pod is pending, with a scheduling message;
- `expectedPodsPreemptedByWAP` (in every case here, one per expected victim): each expected victim was evicted
  by a PodGroup (workload-aware preemption), not by a single pod.

Not read: `expectedToHaveNNNInfo`, the nominatedNodeName a mock Bind plugin copies from the pod when it binds
(Phalanx's pod record drops the nomination at binding), and `expectedEventOrder`, the order of internal calls of
that Bind plugin and a mock PodGroupPostFilter plugin; where it matters the check asserts its observable part
(the bind times and the preemption's time).

Two of upstream's harness steps have a Phalanx counterpart rather than a copy. `preemptorPodsQueuedInCreationOrder`
waits until each preemptor is in the scheduling queue before it creates the next, so that they queue in creation
order: here they arrive at one instant in that order, which is the order Phalanx queues them in. `tempRemovePG`
deletes the PodGroups before the preemptors are created and creates them again afterwards, so that every
preemptor is queued before the group's first cycle: pods arriving at one instant are all queued before Phalanx's
first cycle at that instant, so the PodGroup is simply there from 0 s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from tests.builders import Buildable, MakeNode, MakePod, MakePodGroup
from tests.upstream.kubernetes.restated import Case, Outcome, Unexpressed, names, params, run

FILE = "preemption/podgroup/podgrouppreemption_test.go"
TEST = "TestPodGroupPreemption"
LATER = "1"  # the preemptors' arrival: after the initial pods are scheduled at 0 s
HOSTNAME = "kubernetes.io/hostname"


# --- objects, as upstream's wrappers make them -------------------------------------------------------------

def node(name: str, cpu: str, **labels: str) -> MakeNode:
    """A node of `cpu` cores, 4Gi of memory and 32 pods, with these labels."""
    made = MakeNode(name).alloc(cpu=cpu, memory="4Gi", pods="32")
    for key, value in labels.items():
        made.label(key, value)
    return made


def hostnode(name: str, cpu: str) -> MakeNode:
    """A node labelled with its own name under kubernetes.io/hostname."""
    return node(name, cpu).label(HOSTNAME, name)


def pod(name: str, priority: int, cpu: str | None = "1", *, group: str | None = None, on: str | None = None,
        later: bool = False, never: bool = False, labels: dict[str, str] | None = None) -> MakePod:
    """A pod with a container requesting `cpu` (none for None) and upstream's request-less "image" container,
    zero grace, `priority`; in PodGroup `group`, already on node `on`, arriving with the preemptors (`later`),
    with preemptionPolicy Never (`never`)."""
    made = MakePod(name)
    for key, value in (labels or {}).items():
        made.label(key, value)
    if cpu is not None:
        made.req(cpu=cpu)
    made.container().grace(0).priority(priority)
    if group is not None:
        made.group(group)
    if on is not None:
        made.node(on)
    if never:
        made.spec["preemptionPolicy"] = "Never"
    return made.arrival(LATER) if later else made


def pod_level(made: MakePod, cpu: str) -> MakePod:
    """The pod's pod-level requests (spec.resources.requests, PodLevelResources)."""
    made.spec["resources"] = {"requests": {"cpu": cpu}}
    return made


def group(name: str, priority: int, min_count: int | None = None, *, all_mode: bool = False,
          policy: str | None = None, topology: str | None = None) -> MakePodGroup:
    """A PodGroup: a gang of `min_count`, or basic without one; disruptionMode all (`all_mode`), its own
    preemptionPolicy (`policy`), a topology constraint on `topology`."""
    made = MakePodGroup(name).policy(min_count, priority)
    if all_mode:
        made.doc["spec"]["disruptionMode"] = {"all": {}}
    if policy is not None:
        made.doc["spec"]["preemptionPolicy"] = policy
    if topology is not None:
        made.topology(topology)
    return made


def pdb(name: str, min_available: int, match: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minAvailable": min_available, "selector": {"matchLabels": dict(match)}}}


def host_port(made: MakePod) -> MakePod:
    """The pod's first container binds host port 8080 (containerPort 8080)."""
    made.spec["containers"][0]["ports"] = [{"containerPort": 8080, "hostPort": 8080}]
    return made


def spread_on_node1(made: MakePod) -> MakePod:
    """The preemptors of the topology spread cases: on node1 by nodeSelector, spread over hostnames with
    maxSkew 2 and minDomains 10 against the app=foo pods."""
    return made.node_selector({HOSTNAME: "node1"}).spread(2, HOSTNAME, "DoNotSchedule", {"app": "foo"},
                                                          minDomains=10)


def exists(key: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


def avoid_app(made: MakePod) -> MakePod:
    """Required anti-affinity, per hostname, to every pod with an `app` label."""
    return made.pod_anti_affinity(HOSTNAME, None, labelSelector=exists("app"))


# --- checks ------------------------------------------------------------------------------------------------

def running(outcome: Outcome, name: str) -> bool:
    record = outcome.record(name)
    return record.node is not None and record.phase == "Running" and not outcome.preempted(name)


def by_group(outcome: Outcome, name: str) -> bool:
    """The pod's (first) eviction was a PodGroup's preemption."""
    evictions = outcome.record(name).preempted_by
    return bool(evictions) and evictions[0]["preemptor"] in outcome.sim.groups


def expect(scheduled: Iterable[str] = (), preempted: Iterable[str] = (), unschedulable: Iterable[str] = (),
           and_then: Callable[[Outcome], None] | None = None) -> Callable[[Outcome], None]:
    """Upstream's assertions: `scheduled` bound and running, `preempted` evicted (each by a PodGroup, as
    every case here expects one workload-aware eviction per victim), `unschedulable` pending with a reason."""
    scheduled, preempted, unschedulable = tuple(scheduled), tuple(preempted), tuple(unschedulable)

    def check(outcome: Outcome) -> None:
        for name in unschedulable:
            assert outcome.pending(name) and outcome.message(name), f"{name} should be unschedulable"
        for name in scheduled:
            assert running(outcome, name), f"{name} should be scheduled ({outcome.record(name)})"
        for name in preempted:
            assert outcome.preempted(name), f"{name} should be preempted ({outcome.record(name)})"
            assert by_group(outcome, name), f"{name} should be preempted by a PodGroup ({outcome.record(name)})"
        if and_then is not None:
            and_then(outcome)

    return check


def bind_then_preempt(outcome: Outcome) -> None:
    """The observable part of `Bind:high-1, PodGroupPostFilter:pg1, Bind:high-2`: high-1 bound no later than the
    preemption, high-2 no earlier."""
    preempted_at = outcome.record("low-1").preempted_by[0]["time"]
    high_1, high_2 = outcome.bound_at("high-1"), outcome.bound_at("high-2")
    assert high_1 is not None and high_2 is not None
    assert high_1 <= preempted_at <= high_2


def lows(*numbers: int) -> list[str]:
    return [f"low-{i}" for i in numbers]


def highs(*numbers: int) -> list[str]:
    return [f"high-{i}" for i in numbers]


def case(name: str, *objects: Buildable, check: Callable[[Outcome], None], gate: bool = False,
         differs: str = "", replay: str = "") -> Case:
    """A case of TestPodGroupPreemption; `gate` is its enablePodGroupPreemptionPolicy."""
    return Case(FILE, TEST, name, tuple(objects), check, differs=differs, replay=replay,
                gates={"TopologyAwareWorkloadScheduling": True, "PodGroupPreemptionPolicy": gate})


def unexpressed(name: str, why: str) -> Unexpressed:
    return Unexpressed(FILE, TEST, name, why)


# --- the cases ---------------------------------------------------------------------------------------------

def three_lows_for_three_highs(name: str, pg: MakePodGroup, *, gate: bool = False, never: bool = False,
                               preempts: bool = True) -> Case:
    """One node of 3 cpu full of three bare low pods (priority 10); three 1-cpu members of pg1 (priority 100)."""
    objects = [node("node1", "3"), pg, *(pod(f"low-{i}", 10) for i in (1, 2, 3)),
               *(pod(f"high-{i}", 100, group="pg1", later=True, never=never) for i in (1, 2, 3))]
    check = (expect(scheduled=highs(1, 2, 3), preempted=lows(1, 2, 3)) if preempts
             else expect(scheduled=lows(1, 2, 3), unschedulable=highs(1, 2, 3)))
    return case(name, *objects, check=check, gate=gate)


def greedy(name: str, pg: MakePodGroup) -> Case:
    """Four 1-cpu nodes: p1, p2 (priority 10) and p3, p4 (priority 200); three preemptors of priority 100."""
    return case(
        name,
        *(node(f"node{i}", "1") for i in (1, 2, 3, 4)),
        pg,
        pod("p1", 10, on="node1"), pod("p2", 10, on="node2"), pod("p3", 200, on="node3"), pod("p4", 200, on="node4"),
        *(pod(f"p-{x}", 100, group="preemptor-pg", later=True) for x in "abc"),
        check=expect(scheduled=["p-a", "p-b", "p3", "p4"], preempted=["p1", "p2"], unschedulable=["p-c"]))


def no_reprieve(name: str, pg: MakePodGroup) -> Case:
    """Three 1-cpu nodes: v1, v2 of victim-pg (all, priority 50) and the bare v3 (priority 10); three
    preemptors of priority 100."""
    return case(
        name,
        *(node(f"node{i}", "1") for i in (1, 2, 3)),
        group("victim-pg", 50, 1, all_mode=True), pg,
        pod("v1", 50, group="victim-pg", on="node1"), pod("v2", 50, group="victim-pg", on="node2"),
        pod("v3", 10, on="node3"),
        *(pod(f"p-{x}", 100, group="preemptor-pg", later=True) for x in "abc"),
        check=expect(scheduled=["p-a", "p-b", "p-c"], preempted=["v1", "v2", "v3"]))


def partial_group(name: str, pg: MakePodGroup) -> Case:
    """Four 1-cpu nodes: victim-pg (all, priority 50) on node1-2, victim-pg2 (all, priority 200) on node3-4;
    three preemptors of priority 100."""
    return case(
        name,
        *(node(f"node{i}", "1") for i in (1, 2, 3, 4)),
        group("victim-pg", 50, 2, all_mode=True), group("victim-pg2", 200, 2, all_mode=True), pg,
        pod("v1", 50, group="victim-pg", on="node1"), pod("v2", 50, group="victim-pg", on="node2"),
        pod("v3", 200, group="victim-pg2", on="node3"), pod("v4", 200, group="victim-pg2", on="node4"),
        *(pod(f"p-{x}", 100, group="preemptor-pg", later=True) for x in "abc"),
        check=expect(scheduled=["p-a", "p-b", "v3", "v4"], preempted=["v1", "v2"], unschedulable=["p-c"]))


def bind_first(name: str, pg: MakePodGroup) -> Case:
    """A 4-cpu node: two running members of pg1 and low-1; two more members arrive, room for one."""
    return case(
        name,
        node("node1", "4"), pg,
        pod("pg-pod-1", 100, group="pg1"), pod("pg-pod-2", 100, group="pg1"), pod("low-1", 10),
        pod("high-1", 100, group="pg1", later=True), pod("high-2", 100, group="pg1", later=True),
        check=expect(scheduled=["pg-pod-1", "pg-pod-2", "high-1", "high-2"], preempted=["low-1"],
                     and_then=bind_then_preempt),
        replay="upstream deletes and recreates the PodGroup so that both preemptors queue before its cycle, and "
               "asserts the order of its mock Bind and PodGroupPostFilter plugins' calls")


def spread_case(name: str, *extra: MakePod, preempted: str) -> Case:
    """Two 16-cpu nodes, app=foo pods on them; two app=foo preemptors on node1 spread at most 2 apart."""
    return case(
        name,
        hostnode("node1", "16"), hostnode("node2", "16"),
        group("preemptor-pg", 100, 2),
        pod("initial-pod", 10, on="node1", labels={"app": "foo"}), *extra,
        *(spread_on_node1(pod(f"preemptor-{i}", 100, group="preemptor-pg", later=True, labels={"app": "foo"}))
          for i in (1, 2)),
        check=expect(scheduled=["preemptor-1", "preemptor-2"], preempted=[preempted]))


def zones(*zone_of_node: str) -> list[MakeNode]:
    return [node(f"node{i}", "1", **{"topology-key": zone}) for i, zone in enumerate(zone_of_node, start=1)]


CASES: list[Case] = [
    three_lows_for_three_highs("Full PodGroup Preemption", group("pg1", 100, 3)),
    three_lows_for_three_highs("Full PodGroup Preemption for basic policy", group("pg1", 100)),
    case(
        "PDB Violation Handling (Reprieve)",
        node("node1", "3"), pdb("foo-pdb", 2, {"app": "foo"}), group("pg1", 100, 2),
        pod("low-1", 10, labels={"app": "foo"}), pod("low-2", 10, labels={"app": "foo"}), pod("low-3", 10),
        pod("high-1", 100, "0.5", group="pg1", later=True), pod("high-2", 100, "0.5", group="pg1", later=True),
        check=expect(scheduled=highs(1, 2), preempted=lows(3))),
    case(
        "Multi-node Preemption",
        node("node1", "2"), node("node2", "2"), group("pg1", 100, 4),
        pod("low-1", 10, on="node1"), pod("low-2", 10, on="node1"),
        pod("low-3", 10, on="node2"), pod("low-4", 10, on="node2"),
        *(pod(f"high-{i}", 100, group="pg1", later=True) for i in (1, 2, 3, 4)),
        check=expect(scheduled=highs(1, 2, 3, 4), preempted=lows(1, 2, 3, 4))),
    case(
        "Insufficient Resources (No Preemption)",
        node("node1", "3"), group("pg1", 100, 3),
        pod("mid-1", 500), pod("low-1", 10), pod("low-2", 10),
        *(pod(f"high-{i}", 100, group="pg1", later=True) for i in (1, 2, 3)),
        check=expect(scheduled=["mid-1", "low-1", "low-2"], unschedulable=highs(1, 2, 3))),
    case(
        "Priority-based Victim Selection",
        node("node1", "3"), group("pg1", 100, 2),
        pod("mid-1", 50), pod("low-1", 10), pod("low-2", 10),
        *(pod(f"high-{i}", 100, group="pg1", later=True) for i in (1, 2)),
        check=expect(scheduled=["high-1", "high-2", "mid-1"], preempted=lows(1, 2))),
    case(
        "Preempt the whole PodGroup even if preempting a single Pod would suffice",
        node("node1", "3"), group("pg1", 100, 1), group("pg2", 10, 3, all_mode=True),
        *(pod(f"low-{i}", 10, group="pg2") for i in (1, 2, 3)),
        pod("high-1", 100, group="pg1", later=True),
        check=expect(scheduled=highs(1), preempted=lows(1, 2, 3))),
    case(
        "Preempt the whole basic PodGroup with a PodGroup disruption mode",
        node("node1", "3"), group("pg1", 100, 1), group("pg2", 10, all_mode=True),
        *(pod(f"low-{i}", 10, group="pg2") for i in (1, 2, 3)),
        pod("high-1", 100, group="pg1", later=True),
        check=expect(scheduled=highs(1), preempted=lows(1, 2, 3))),
    greedy("Gang scheduling: schedule as many pods as possible without preempting higher priority pods, "
           "but still more than minCount", group("preemptor-pg", 100, 1)),
    no_reprieve("Gang scheduling: do not reprieve victim pod group of lower priority", group("preemptor-pg", 100, 3)),
    partial_group("Gang scheduling: preempt a pod group victim but do not schedule full pod group",
                  group("preemptor-pg", 100, 1, all_mode=True)),
    greedy("Basic scheduling: schedule as many pods as possible without preempting higher priority pods",
           group("preemptor-pg", 100)),
    no_reprieve("Basic scheduling: do not reprieve victim pod group of lower priority", group("preemptor-pg", 100)),
    partial_group("Basic scheduling: preempt a pod group victim but do not schedule full pod group",
                  group("preemptor-pg", 100, all_mode=True)),
    three_lows_for_three_highs(
        "PodGroup with PreemptNever preemption policy does not perform preemption, "
        "with PodGroupPreemptionPolicy enabled",
        group("pg1", 100, 3, policy="Never"), gate=True, never=True, preempts=False),
    three_lows_for_three_highs(
        "PodGroup with PreemptLowerPriority preemption policy performs preemption, "
        "with PodGroupPreemptionPolicy enabled",
        group("pg1", 100, 3, policy="PreemptLowerPriority"), gate=True),
    three_lows_for_three_highs(
        "PodGroup with default preemption policy performs preemption, with PodGroupPreemptionPolicy enabled",
        group("pg1", 100, 3), gate=True),
    three_lows_for_three_highs(
        "PodGroup with PreemptNever preemption policy in all pods does not perform preemption, "
        "with PodGroupPreemptionPolicy disabled",
        group("pg1", 100, 3), never=True, preempts=False),
    case(
        "Gang scheduling: preemption with node resources",
        hostnode("node1", "2"), hostnode("node2", "2"), group("preemptor-pg", 100, 2),
        pod("initial-pod", 10, "2", on="node1", labels={"app": "initial"}),
        *(pod(f"preemptor-{i}", 100, "2", group="preemptor-pg", later=True) for i in (1, 2)),
        check=expect(scheduled=["preemptor-1", "preemptor-2"], preempted=["initial-pod"])),
    case(
        "Gang scheduling: preemption with node resources, prioritizes reprieval of higher priority pods",
        hostnode("node1", "2"), hostnode("node2", "2"), group("preemptor-pg", 100, 2),
        pod("initial-pod-1", 5, on="node1", labels={"app": "initial"}),
        pod("initial-pod-2", 10, on="node1", labels={"app": "initial"}),
        pod("preemptor-1", 100, group="preemptor-pg", later=True).node_selector({HOSTNAME: "node1"}),
        pod("preemptor-2", 100, group="preemptor-pg", later=True).node_selector({HOSTNAME: "node2"}),
        check=expect(scheduled=["preemptor-1", "preemptor-2"], preempted=["initial-pod-1"])),
    case(
        "Gang scheduling: preemption with pod level resources",
        hostnode("node1", "2"), hostnode("node2", "2"), group("preemptor-pg", 100, 2),
        pod_level(pod("initial-pod", 10, None, on="node1", labels={"app": "initial"}), "2"),
        *(avoid_app(pod_level(pod(f"preemptor-{i}", 100, None, group="preemptor-pg", later=True), "2"))
          for i in (1, 2)),
        check=expect(scheduled=["preemptor-1", "preemptor-2"], preempted=["initial-pod"])),
    case(
        "Gang scheduling: preemption with pod anti-affinity constraints",
        hostnode("node1", "2"), hostnode("node2", "2"), group("preemptor-pg", 100, 2),
        pod("initial-pod", 10, "0.25", on="node1", labels={"app": "initial"}),
        *(avoid_app(pod(f"preemptor-{i}", 100, "1.5", group="preemptor-pg", later=True)) for i in (1, 2)),
        check=expect(scheduled=["preemptor-1", "preemptor-2"], preempted=["initial-pod"])),
    case(
        "Gang scheduling: preemption with pod node port",
        node("node1", "2"), node("node2", "2"), group("preemptor-pg", 100, 2),
        host_port(pod("initial-pod", 10, "0.25", on="node1")),
        *(host_port(pod(f"preemptor-{i}", 100, "1.5", group="preemptor-pg", later=True)) for i in (1, 2)),
        check=expect(scheduled=["preemptor-1", "preemptor-2"], preempted=["initial-pod"])),
    spread_case("Gang scheduling: preemption with pod topology spread constraints", preempted="initial-pod"),
    spread_case("Gang scheduling: preemption with pod topology spread constraints, single reprieve",
                pod("initial-pod-2", 5, on="node2", labels={"app": "foo"}), preempted="initial-pod"),
    bind_first("Binding first before preemption for gang policy", group("pg1", 100, 2)),
    bind_first("Binding first before preemption for basic policy", group("pg1", 100)),
    case(
        "Topology-Aware Preemption: single topology domain",
        *zones("zone1", "zone1"), group("pg1", 100, 2, topology="topology-key"),
        pod("low-1", 10, on="node1"), pod("low-2", 10, on="node2"),
        *(pod(f"high-{i}", 100, group="pg1", later=True) for i in (1, 2)),
        check=expect(scheduled=highs(1, 2), preempted=lows(1, 2))),
    case(
        "Topology-Aware Preemption: two topologies, only one eligible",
        *zones("zone1", "zone1", "zone2", "zone2"), group("pg1", 100, 2, topology="topology-key"),
        pod("low-1", 10, on="node1"), pod("low-2", 10, on="node2"),
        pod("high-priority-initial-1", 200, on="node3"), pod("high-priority-initial-2", 200, on="node4"),
        *(pod(f"high-{i}", 100, group="pg1", later=True) for i in (1, 2)),
        check=expect(scheduled=["high-1", "high-2", "high-priority-initial-1", "high-priority-initial-2"],
                     preempted=lows(1, 2))),
    case(
        "Topology-Aware Preemption: insufficient capacity across all topologies, no preemption performed",
        *zones("zone1", "zone1", "zone2", "zone2"), group("pg1", 100, 2, topology="topology-key"),
        pod("low-1", 10, on="node1"), pod("high-priority-initial-1", 200, on="node2"),
        pod("low-2", 10, on="node3"), pod("high-priority-initial-2", 200, on="node4"),
        *(pod(f"high-{i}", 100, group="pg1", later=True) for i in (1, 2)),
        check=expect(scheduled=["low-1", "low-2", "high-priority-initial-1", "high-priority-initial-2"])),
]

CUSTOM_SCORE = ("registers an out-of-tree Score (and PlacementScore) plugin with preset node scores, "
                "which decides the placement; a Phalanx profile cannot add plugins")

UNEXPRESSED: list[Unexpressed] = [
    unexpressed("Partial Preemption", CUSTOM_SCORE),
    unexpressed("Partial Preemption with basic policy", CUSTOM_SCORE),
    unexpressed("Reserve plugins are called during preemption simulation, so second pod fails",
                "hinges on an out-of-tree Filter and Reserve plugin counting reserved pods; a Phalanx profile "
                "cannot add plugins"),
    unexpressed("Topology-Aware Preemption: two topologies, both eligible, selects higher scored topology",
                CUSTOM_SCORE),
]

UPSTREAM_NAMES = (
    "Full PodGroup Preemption",
    "Full PodGroup Preemption for basic policy",
    "Partial Preemption",
    "Partial Preemption with basic policy",
    "PDB Violation Handling (Reprieve)",
    "Multi-node Preemption",
    "Insufficient Resources (No Preemption)",
    "Priority-based Victim Selection",
    "Preempt the whole PodGroup even if preempting a single Pod would suffice",
    "Preempt the whole basic PodGroup with a PodGroup disruption mode",
    "Gang scheduling: schedule as many pods as possible without preempting higher priority pods, but still more than minCount",  # noqa: E501
    "Gang scheduling: do not reprieve victim pod group of lower priority",
    "Gang scheduling: preempt a pod group victim but do not schedule full pod group",
    "Basic scheduling: schedule as many pods as possible without preempting higher priority pods",
    "Basic scheduling: do not reprieve victim pod group of lower priority",
    "Basic scheduling: preempt a pod group victim but do not schedule full pod group",
    "PodGroup with PreemptNever preemption policy does not perform preemption, with PodGroupPreemptionPolicy enabled",
    "PodGroup with PreemptLowerPriority preemption policy performs preemption, with PodGroupPreemptionPolicy enabled",
    "PodGroup with default preemption policy performs preemption, with PodGroupPreemptionPolicy enabled",
    "PodGroup with PreemptNever preemption policy in all pods does not perform preemption, with PodGroupPreemptionPolicy disabled",  # noqa: E501
    "Gang scheduling: preemption with node resources",
    "Gang scheduling: preemption with node resources, prioritizes reprieval of higher priority pods",
    "Gang scheduling: preemption with pod level resources",
    "Gang scheduling: preemption with pod anti-affinity constraints",
    "Gang scheduling: preemption with pod node port",
    "Gang scheduling: preemption with pod topology spread constraints",
    "Gang scheduling: preemption with pod topology spread constraints, single reprieve",
    "Reserve plugins are called during preemption simulation, so second pod fails",
    "Binding first before preemption for gang policy",
    "Binding first before preemption for basic policy",
    "Topology-Aware Preemption: single topology domain",
    "Topology-Aware Preemption: two topologies, only one eligible",
    "Topology-Aware Preemption: two topologies, both eligible, selects higher scored topology",
    "Topology-Aware Preemption: insufficient capacity across all topologies, no preemption performed",
)


# --- running -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", params(CASES))
def test_upstream_case(case: Case) -> None:
    case.check(run(case))


def test_every_upstream_case_is_named_once() -> None:
    ours = names([*CASES, *UNEXPRESSED])
    assert sorted(ours) == sorted((TEST, name) for name in UPSTREAM_NAMES)
    assert len(set(ours)) == len(ours)

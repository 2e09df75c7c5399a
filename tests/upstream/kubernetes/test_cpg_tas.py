"""Upstream `podgroup/topology_aware_scheduling/cpg_tas_test.go` (kube-scheduler v1.37.2 integration tests),
restated as Phalanx inputs.

CompositePodGroup trees with topology constraints (`rack`, `zone`, `block` node labels) at some of their
levels, on 2-CPU nodes: `TestCPGTopologyAwareScheduling` checks that each subtree lands in one domain of its
key (the domain of its already bound pods, when it has some), and
`TestCPGTopologyAwareSchedulingWorkloadAwarePreemption` the same when the tree must first preempt
lower-priority pods, and that it never preempts outside the domain its bound pods fix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from tests.builders import Buildable, MakeCompositePodGroup, MakeNode, MakePod, MakePodGroup
from tests.upstream.kubernetes.restated import Case, Outcome, Unexpressed, names, params, run
from tests.upstream.kubernetes.test_cpg import scheduled, scheduling_error, unschedulable

FILE = "podgroup/topology_aware_scheduling/cpg_tas_test.go"
TAS = "TestCPGTopologyAwareScheduling"
WAP = "TestCPGTopologyAwareSchedulingWorkloadAwarePreemption"
# runCPGTestScenario's gates (GenericWorkload is on in the `gang` profile already).
GATES = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True}
PRIORITY = 100


# --- the objects, as the upstream helpers make them ------------------------------------------------------

def labelled_node(name: str, labels: Mapping[str, str]) -> MakeNode:
    """makeNodeWithLabels: 2 CPU (st.MakeNode().Capacity: capacity and allocatable, 32 pods)."""
    builder = MakeNode(name).alloc(cpu="2", pods="32").capacity(cpu="2", pods="32")
    for key, value in labels.items():
        builder.label(key, value)
    return builder


def node(name: str, rack: str, zone: str) -> MakeNode:
    """makeNode: labels `rack` and `zone`, 2 CPU."""
    return labelled_node(name, {"rack": rack, "zone": zone})


def tainted(builder: MakeNode) -> MakeNode:
    """addTaint(node, "taint"): NoSchedule, no value."""
    return builder.taint("taint")


def pod(name: str, group: str, at: int = 0) -> MakePod:
    """makePod: 1 CPU (plus a container without requests), priority 100, no grace period."""
    builder = MakePod(name).req(cpu="1").container().group(group).priority(PRIORITY).grace(0)
    return builder.arrival(at) if at else builder


def tolerating(builder: MakePod) -> MakePod:
    """addToleration(pod, "taint"): key only (operator Equal, empty value, every effect)."""
    return builder.toleration(key="taint")


def preferring(builder: MakePod, node_name: str) -> MakePod:
    """addPreferredNode: preferred node affinity of weight 100 on metadata.name."""
    return builder.preferred(100, fields=[{"key": "metadata.name", "operator": "In", "values": [node_name]}])


def assigned(name: str, node_name: str, cpu: str, priority: int = PRIORITY) -> MakePod:
    """makeAssignedPod / makeAssignedPodWithPriority: bound to `node_name`, no group."""
    return MakePod(name).node(node_name).req(cpu=cpu).container().priority(priority).grace(0)


def assigned_member(name: str, group: str, node_name: str, cpu: str) -> MakePod:
    """makeAssignedGroupPod: a member of `group` already bound to `node_name`, priority 100."""
    return MakePod(name).group(group).node(node_name).req(cpu=cpu).container().priority(PRIORITY).grace(0)


def gang_pg(name: str, parent: str, key: str, min_count: int, at: int = 0) -> MakePodGroup:
    """makeGangPodGroupWithParent (workloadRef pg/workload, priority 100; topology `key` unless empty)."""
    builder = MakePodGroup(name).workload("pg", "workload").gang(min_count).priority(PRIORITY).parent(parent)
    if key:
        builder.topology(key)
    return builder.arrival(at) if at else builder


def basic_pg(name: str, parent: str, key: str) -> MakePodGroup:
    """makeBasicPodGroupWithParent."""
    builder = MakePodGroup(name).workload("pg", "workload").basic().priority(PRIORITY).parent(parent)
    return builder.topology(key) if key else builder


def gang_cpg(name: str, parent: str, key: str, min_group_count: int) -> MakeCompositePodGroup:
    """makeGangCompositePodGroup (workloadRef cpg/workload, priority 100)."""
    builder = MakeCompositePodGroup(name).workload("cpg", "workload").gang(min_group_count).priority(PRIORITY)
    if parent:
        builder.parent(parent)
    return builder.topology(key) if key else builder


def basic_cpg(name: str, parent: str, key: str) -> MakeCompositePodGroup:
    """makeBasicCompositePodGroup."""
    builder = MakeCompositePodGroup(name).workload("cpg", "workload").priority(PRIORITY)
    if parent:
        builder.parent(parent)
    return builder.topology(key) if key else builder


# --- what upstream's steps assert --------------------------------------------------------------------------

Check = Callable[[Outcome, Mapping[str, Mapping[str, str]]], None]


def bound(*pods: str) -> Check:
    """WaitForPodsScheduled."""
    return lambda out, _labels: scheduled(out, pods)


def pending(*pods: str) -> Check:
    """WaitForPodsUnschedulable."""
    return lambda out, _labels: unschedulable(out, pods)


def erring(*pods: str) -> Check:
    """WaitForPodsSchedulingError."""
    return lambda out, _labels: scheduling_error(out, pods)


def removed(*pods: str) -> Check:
    """WaitForPodsRemoved: the lower-priority pods were preempted (deleted upstream)."""
    def check(out: Outcome, _labels: Mapping[str, Mapping[str, str]]) -> None:
        for name in pods:
            assert out.preempted(name), f"{name} was not preempted (node {out.node(name)})"
    return check


def on(pods: Sequence[str], nodes: Sequence[str]) -> Check:
    """VerifyAssignments: each pod on one of `nodes` (any of them)."""
    def check(out: Outcome, _labels: Mapping[str, Mapping[str, str]]) -> None:
        for name in pods:
            assert out.node(name) in nodes, f"{name} on {out.node(name)}, not one of {sorted(nodes)}"
    return check


def one_domain(pods: Sequence[str], key: str) -> Check:
    """VerifyAssignedInOneDomain: the pods' nodes have one non-empty value of label `key` (any value)."""
    def check(out: Outcome, labels: Mapping[str, Mapping[str, str]]) -> None:
        domains = {}
        for name in pods:
            node_name = out.node(name)
            assert node_name is not None, f"{name} is not bound"
            domains[name] = labels[node_name].get(key, "")
            assert domains[name], f"{name} on {node_name}, which has no {key} label"
        assert len(set(domains.values())) == 1, f"{key} domains: {domains}"
    return check


def case(test: str, name: str, objects: Sequence[Buildable], *checks: Check, **kwargs: Any) -> Case:
    """The case's objects and its steps' checks, read against the node labels of its objects."""
    labels = {o.doc["metadata"]["name"]: o.doc["metadata"].get("labels", {})
              for o in objects if isinstance(o, MakeNode)}

    def check(out: Outcome) -> None:
        for step in checks:
            step(out, labels)

    return Case(FILE, test, name, tuple(objects), check, gates=GATES, **kwargs)


EIGHT = [f"p{i}" for i in range(1, 9)]


def eight_leaves(leaf: Callable[[str, str, str, int], MakePodGroup], key: str) -> list[Buildable]:
    """pg1, pg2 under cpg-sub1 and pg3, pg4 under cpg-sub2 (gangs of 2, topology `key`), then p1…p8, two each."""
    return [leaf("pg1", "cpg-sub1", key, 2), leaf("pg2", "cpg-sub1", key, 2),
            leaf("pg3", "cpg-sub2", key, 2), leaf("pg4", "cpg-sub2", key, 2),
            *(pod(p, f"pg{(i // 2) + 1}") for i, p in enumerate(EIGHT))]


def pairs_in_racks() -> list[Check]:
    return [one_domain(["p1", "p2"], "rack"), one_domain(["p3", "p4"], "rack"),
            one_domain(["p5", "p6"], "rack"), one_domain(["p7", "p8"], "rack")]


def blocks_nodes() -> list[Buildable]:
    return [labelled_node("node1-z1-g1-r1", {"zone": "zone-1", "block": "block-1", "rack": "rack-1"}),
            labelled_node("node2-z1-g1-r2", {"zone": "zone-1", "block": "block-1", "rack": "rack-2"}),
            labelled_node("node3-z1-g2-r1", {"zone": "zone-1", "block": "block-2", "rack": "rack-1"}),
            labelled_node("node4-z1-g2-r2", {"zone": "zone-1", "block": "block-2", "rack": "rack-2"}),
            labelled_node("node5-z2-g1-r1", {"zone": "zone-2", "block": "block-1", "rack": "rack-1"}),
            labelled_node("node6-z2-g1-r1", {"zone": "zone-2", "block": "block-1", "rack": "rack-1"})]


def two_racks_two_nodes() -> list[Buildable]:
    return [node("node1-z1-r1", "rack-1", "zone-1"), node("node2-z1-r1", "rack-1", "zone-1"),
            node("node3-z1-r2", "rack-2", "zone-1"), node("node4-z1-r2", "rack-2", "zone-1")]


def eight_nodes_two_zones() -> list[Buildable]:
    return [node("node1-z1-r1", "rack-1", "zone-1"), node("node2-z1-r1", "rack-1", "zone-1"),
            node("node3-z1-r2", "rack-2", "zone-1"), node("node4-z1-r2", "rack-2", "zone-1"),
            node("node5-z2-r1", "rack-1", "zone-2"), node("node6-z2-r1", "rack-1", "zone-2"),
            node("node7-z2-r2", "rack-2", "zone-2"), node("node8-z2-r2", "rack-2", "zone-2")]


def rooted_pair(root_key: str, leaf: Callable[..., MakePodGroup], leaf_key: str, *extra: Any) -> list[Buildable]:
    """cpg-root (gang of 2, topology `root_key`) over pg1 and pg2 (built by `leaf`, topology `leaf_key`)."""
    return [gang_cpg("cpg-root", "", root_key, 2), leaf("pg1", "cpg-root", leaf_key, *extra),
            leaf("pg2", "cpg-root", leaf_key, *extra)]


# --- TestCPGTopologyAwareScheduling -------------------------------------------------------------------------

TAS_CASES: list[Case] = [
    case(TAS, "parent CPG has topology constraints, children do not; schedules on a single rack",
         [*two_racks_two_nodes(),
          assigned("existing", "node4-z1-r2", "2"),
          *rooted_pair("rack", gang_pg, "", 2),
          pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg2"), pod("p4", "pg2")],
         bound("p1", "p2", "p3", "p4"),
         on(["p1", "p2", "p3", "p4"], ["node1-z1-r1", "node2-z1-r1"])),

    case(TAS, "parent CPG has topology constraints, children do not; preexisting pod belonging to the hierarchy "
              "determines the topology",
         [*two_racks_two_nodes(),
          assigned_member("existing", "pg1", "node4-z1-r2", "1"),
          *rooted_pair("rack", gang_pg, "", 2),
          pod("p1", "pg1"), pod("p2", "pg2"), pod("p3", "pg2")],
         bound("p1", "p2", "p3"),
         on(["p1", "p2", "p3"], ["node3-z1-r2", "node4-z1-r2"])),

    case(TAS, "parent CPG has topology constraints, children do not; remains pending when no single rack can fit "
              "all children",
         [node("node1-z1-r1", "rack-1", "zone-1"), node("node2-z1-r2", "rack-2", "zone-1"),
          assigned("existing1", "node1-z1-r1", "1"), assigned("existing2", "node2-z1-r2", "1"),
          *rooted_pair("rack", basic_pg, ""),
          pod("p1", "pg1"), pod("p2", "pg2")],
         pending("p1", "p2")),

    case(TAS, "parent CPG and child PGs both have topology constraints (multi-level constraints: zone and rack)",
         [node("node1-z1-r1", "rack-1", "zone-1"), node("node2-z1-r2", "rack-2", "zone-1"),
          node("node3-z2-r1", "rack-1", "zone-2"), node("node4-z2-r1", "rack-1", "zone-2"),
          assigned("existing-z2", "node3-z2-r1", "1"),
          *rooted_pair("zone", gang_pg, "rack", 2),
          pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg2"), pod("p4", "pg2")],
         bound("p1", "p2", "p3", "p4"),
         on(["p1", "p2", "p3", "p4"], ["node1-z1-r1", "node2-z1-r2"]),
         one_domain(["p1", "p2"], "rack"), one_domain(["p3", "p4"], "rack")),

    case(TAS, "parent CPG and only one child PG has topology constraints; the other child uses parent's topology",
         [tainted(node("node1-z1-r1", "rack-1", "zone-1")), node("node2-z1-r2", "rack-2", "zone-1"),
          node("node3-z1-r3", "rack-3", "zone-1"), node("node4-z2-r1", "rack-1", "zone-2"),
          node("node5-z2-r2", "rack-2", "zone-2"),
          assigned("existing-z2", "node5-z2-r2", "1"),
          assigned("existing-z1-r2", "node2-z1-r2", "1"), assigned("existing-z1-r3", "node3-z1-r3", "1"),
          gang_cpg("cpg-root", "", "zone", 2), gang_pg("pg1", "cpg-root", "rack", 2),
          gang_pg("pg2", "cpg-root", "", 2),
          tolerating(pod("p1", "pg1")), tolerating(pod("p2", "pg1")),
          preferring(pod("p3", "pg2"), "node4-z2-r1"), preferring(pod("p4", "pg2"), "node4-z2-r1")],
         bound("p1", "p2", "p3", "p4"),
         one_domain(["p1", "p2", "p3", "p4"], "zone"), one_domain(["p1", "p2"], "rack")),

    case(TAS, "parent CPG and all child PGs have topology constraints, preexisting pod group pods constrain the "
              "available topology domains",
         [node("node1-z1-r1", "rack-1", "zone-1"), node("node2-z1-r2", "rack-2", "zone-1"),
          node("node3-z1-r2", "rack-2", "zone-1"), node("node4-z2-r1", "rack-1", "zone-2"),
          node("node5-z2-r1", "rack-1", "zone-2"),
          *rooted_pair("zone", gang_pg, "rack", 2),
          assigned_member("existing-z1", "pg1", "node1-z1-r1", "1"),
          pod("p1", "pg1"), pod("p2", "pg2"), pod("p3", "pg2")],
         bound("p1", "p2", "p3"),
         on(["p1"], ["node1-z1-r1"]), on(["p2", "p3"], ["node2-z1-r2", "node3-z1-r2"])),

    case(TAS, "parent CPG has topology constraints, preexisting pod group pods are in conflicting domains across "
              "pod groups, fails to schedule any pod",
         [node("node1-z1-r1", "rack-1", "zone-1"), node("node2-z1-r1", "rack-1", "zone-1"),
          node("node3-z2-r1", "rack-1", "zone-2"), node("node4-z2-r1", "rack-1", "zone-2"),
          *rooted_pair("zone", gang_pg, "rack", 2),
          assigned_member("existing-z1", "pg1", "node1-z1-r1", "1"),
          assigned_member("existing-z2", "pg2", "node3-z2-r1", "1"),
          pod("p1", "pg1"), pod("p2", "pg2")],
         erring("p1", "p2")),

    case(TAS, "3-level CPG hierarchy: all levels have topology constraints (root=zone, sub=block, leaf=rack)",
         [*blocks_nodes(),
          gang_cpg("cpg-root", "", "zone", 2), gang_cpg("cpg-sub1", "cpg-root", "block", 2),
          gang_cpg("cpg-sub2", "cpg-root", "block", 2),
          *eight_leaves(gang_pg, "rack")],
         bound(*EIGHT), one_domain(EIGHT, "zone"),
         one_domain(EIGHT[:4], "block"), one_domain(EIGHT[4:], "block"), *pairs_in_racks()),

    case(TAS, "3-level CPG hierarchy: mid-level without topology constraints (root=zone, sub=none, leaf=rack)",
         [node("node1-z1-r1", "rack-1", "zone-1"), node("node2-z1-r2", "rack-2", "zone-1"),
          node("node3-z2-r1", "rack-1", "zone-2"),
          gang_cpg("cpg-root", "", "zone", 2), basic_cpg("cpg-sub1", "cpg-root", ""),
          basic_cpg("cpg-sub2", "cpg-root", ""),
          gang_pg("pg1", "cpg-sub1", "rack", 2), gang_pg("pg2", "cpg-sub2", "rack", 2),
          pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg2"), pod("p4", "pg2")],
         bound("p1", "p2", "p3", "p4"), one_domain(["p1", "p2", "p3", "p4"], "zone"),
         one_domain(["p1", "p2"], "rack"), one_domain(["p3", "p4"], "rack")),

    case(TAS, "3-level CPG hierarchy: top level without topology constraint (root=none, sub=zone, leaf=rack)",
         [node("node1-z1-r1", "rack-1", "zone-1"), node("node2-z1-r2", "rack-2", "zone-1"),
          node("node3-z2-r3", "rack-3", "zone-2"), node("node4-z2-r4", "rack-4", "zone-2"),
          node("node5-z2-r5", "rack-5", "zone-2"),
          basic_cpg("cpg-root", "", ""), gang_cpg("cpg-sub1", "cpg-root", "zone", 2),
          gang_cpg("cpg-sub2", "cpg-root", "zone", 2),
          *eight_leaves(gang_pg, "rack")],
         bound(*EIGHT), one_domain(EIGHT[:4], "zone"), one_domain(EIGHT[4:], "zone"), *pairs_in_racks()),

    case(TAS, "3-level CPG hierarchy: bottom level without topology constraint (root=zone, sub=rack, leaf=none)",
         [*two_racks_two_nodes(),
          node("node5-z2-r3", "rack-3", "zone-2"), node("node6-z2-r3", "rack-3", "zone-2"),
          gang_cpg("cpg-root", "", "zone", 2), gang_cpg("cpg-sub1", "cpg-root", "rack", 2),
          gang_cpg("cpg-sub2", "cpg-root", "rack", 2),
          *eight_leaves(gang_pg, "")],
         bound(*EIGHT), one_domain(EIGHT, "zone"),
         one_domain(EIGHT[:4], "rack"), one_domain(EIGHT[4:], "rack")),

    case(TAS, "3-level CPG hierarchy: preexisting pod in leaf PodGroup determines topology for intermediate and "
              "root CPGs",
         [*eight_nodes_two_zones(),
          gang_cpg("cpg-root", "", "zone", 2), gang_cpg("cpg-sub1", "cpg-root", "rack", 2),
          gang_cpg("cpg-sub2", "cpg-root", "rack", 2),
          gang_pg("pg1", "cpg-sub1", "", 2), gang_pg("pg2", "cpg-sub1", "", 2),
          gang_pg("pg3", "cpg-sub2", "", 2), gang_pg("pg4", "cpg-sub2", "", 2),
          assigned_member("existing-pg1", "pg1", "node5-z2-r1", "1"),
          pod("p1", "pg1"), pod("p2", "pg2"), pod("p3", "pg2"), pod("p4", "pg3"), pod("p5", "pg3"),
          pod("p6", "pg4"), pod("p7", "pg4")],
         bound(*EIGHT[:7]),
         on(EIGHT[:7], ["node5-z2-r1", "node6-z2-r1", "node7-z2-r2", "node8-z2-r2"]),
         on(["p1", "p2", "p3"], ["node5-z2-r1", "node6-z2-r1"]),
         on(["p4", "p5", "p6", "p7"], ["node7-z2-r2", "node8-z2-r2"])),
]


# --- TestCPGTopologyAwareSchedulingWorkloadAwarePreemption --------------------------------------------------

def low(name: str, node_name: str, cpu: str) -> MakePod:
    """makeAssignedPodWithPriority(..., 10)."""
    return assigned(name, node_name, cpu, priority=10)


WAP_CASES: list[Case] = [
    case(WAP, "parent CPG has topology constraints, children do not; schedules on a single rack after preempting "
              "lower priority pods",
         [*two_racks_two_nodes(),
          low("low1-z1-r1", "node1-z1-r1", "2"), low("low2-z1-r1", "node2-z1-r1", "2"),
          assigned("existing", "node4-z1-r2", "2"),
          *rooted_pair("rack", gang_pg, "", 2),
          pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg2"), pod("p4", "pg2")],
         bound("p1", "p2", "p3", "p4"), removed("low1-z1-r1", "low2-z1-r1"),
         on(["p1", "p2", "p3", "p4"], ["node1-z1-r1", "node2-z1-r1"])),

    case(WAP, "parent CPG has topology constraints, children do not; schedules on a single rack after preempting "
              "lower priority pods, then cannot schedule additional pods",
         [*two_racks_two_nodes(),
          low("low1-z1-r1", "node1-z1-r1", "2"), low("low2-z1-r1", "node2-z1-r1", "2"),
          assigned("existing", "node4-z1-r2", "2"),
          *rooted_pair("rack", gang_pg, "", 2),
          pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg2"), pod("p4", "pg2"),
          pod("p5", "pg1", at=1)],
         bound("p1", "p2", "p3", "p4"), removed("low1-z1-r1", "low2-z1-r1"),
         on(["p1", "p2", "p3", "p4"], ["node1-z1-r1", "node2-z1-r1"]),
         pending("p5")),

    case(WAP, "parent CPG has topology constraints, children do not; preexisting pod belonging to the hierarchy "
              "determines topology and lower priority pods are preempted",
         [*two_racks_two_nodes(),
          assigned_member("existing", "pg1", "node4-z1-r2", "1"),
          low("low1-z1-r2", "node3-z1-r2", "2"), low("low2-z1-r2", "node4-z1-r2", "1"),
          *rooted_pair("rack", gang_pg, "", 2),
          pod("p1", "pg1"), pod("p2", "pg2"), pod("p3", "pg2")],
         bound("p1", "p2", "p3"), removed("low1-z1-r2", "low2-z1-r2"),
         on(["p1", "p2", "p3"], ["node3-z1-r2", "node4-z1-r2"])),

    case(WAP, "parent CPG has topology constraints, children do not; schedules on a rack after preempting lower "
              "priority pods",
         [node("node1-z1-r1", "rack-1", "zone-1"), node("node2-z1-r2", "rack-2", "zone-1"),
          low("low1-z1-r1", "node1-z1-r1", "2"), assigned("existing2", "node2-z1-r2", "2"),
          *rooted_pair("rack", basic_pg, ""),
          pod("p1", "pg1"), pod("p2", "pg2")],
         bound("p1", "p2"), removed("low1-z1-r1"), on(["p1", "p2"], ["node1-z1-r1"])),

    case(WAP, "parent CPG and child PGs both have topology constraints (multi-level constraints: zone and rack) with "
              "preemption",
         [node("node1-z1-r1", "rack-1", "zone-1"), node("node2-z1-r2", "rack-2", "zone-1"),
          node("node3-z2-r1", "rack-1", "zone-2"), node("node4-z2-r1", "rack-1", "zone-2"),
          low("low-z1-r1", "node1-z1-r1", "2"), low("low-z1-r2", "node2-z1-r2", "2"),
          assigned("existing-z2", "node3-z2-r1", "1"),
          *rooted_pair("zone", gang_pg, "rack", 2),
          pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg2"), pod("p4", "pg2")],
         bound("p1", "p2", "p3", "p4"), removed("low-z1-r1", "low-z1-r2"),
         on(["p1", "p2", "p3", "p4"], ["node1-z1-r1", "node2-z1-r2"]),
         one_domain(["p1", "p2"], "rack"), one_domain(["p3", "p4"], "rack")),

    case(WAP, "parent CPG and child PGs both have topology constraints (multi-level constraints: zone and rack), "
              "preemption does not help for subsequent",
         [node("node1-z1-r1", "rack-1", "zone-1"), node("node2-z1-r2", "rack-2", "zone-1"),
          node("node3-z1-r3", "rack-3", "zone-1"), node("node4-z2-r1", "rack-1", "zone-2"),
          node("node5-z2-r1", "rack-1", "zone-2"),
          low("low-z1-r3", "node3-z1-r3", "2"), low("low-z2-r1", "node4-z2-r1", "2"),
          *rooted_pair("zone", gang_pg, "rack", 2),
          pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg2"), pod("p4", "pg2"),
          gang_pg("pg3", "cpg-root", "rack", 2, at=1), pod("p5", "pg3", at=1), pod("p6", "pg3", at=1),
          gang_pg("pg4", "cpg-root", "rack", 2, at=2), pod("p7", "pg4", at=2), pod("p8", "pg4", at=2)],
         bound("p1", "p2", "p3", "p4"),
         one_domain(["p1", "p2"], "rack"), one_domain(["p3", "p4"], "rack"),
         bound("p5", "p6"), removed("low-z1-r3"), one_domain(["p5", "p6"], "rack"),
         pending("p7", "p8")),

    case(WAP, "parent CPG and only one child PG has topology constraints; the other child uses parent's topology "
              "with preemption",
         [tainted(node("node1-z1-r1", "rack-1", "zone-1")), node("node2-z1-r2", "rack-2", "zone-1"),
          node("node3-z1-r3", "rack-3", "zone-1"), node("node4-z2-r1", "rack-1", "zone-2"),
          node("node5-z2-r2", "rack-2", "zone-2"),
          low("low-z1-r1", "node1-z1-r1", "2"), assigned("existing-z2", "node5-z2-r2", "1"),
          assigned("existing-z1-r2", "node2-z1-r2", "1"), assigned("existing-z1-r3", "node3-z1-r3", "1"),
          gang_cpg("cpg-root", "", "zone", 2), gang_pg("pg1", "cpg-root", "rack", 2),
          gang_pg("pg2", "cpg-root", "", 2),
          tolerating(pod("p1", "pg1")), tolerating(pod("p2", "pg1")),
          preferring(pod("p3", "pg2"), "node4-z2-r1"), preferring(pod("p4", "pg2"), "node4-z2-r1")],
         bound("p1", "p2", "p3", "p4"), removed("low-z1-r1"),
         one_domain(["p1", "p2", "p3", "p4"], "zone"), one_domain(["p1", "p2"], "rack")),

    case(WAP, "parent CPG and all child PGs have topology constraints, preexisting pod group pods constrain "
              "available topology domains with preemption",
         [node("node1-z1-r1", "rack-1", "zone-1"), node("node2-z1-r2", "rack-2", "zone-1"),
          node("node3-z1-r2", "rack-2", "zone-1"), node("node4-z2-r1", "rack-1", "zone-2"),
          node("node5-z2-r1", "rack-1", "zone-2"),
          *rooted_pair("zone", gang_pg, "rack", 2),
          assigned_member("existing-z1", "pg1", "node1-z1-r1", "1"),
          low("low-z1-r1", "node1-z1-r1", "1"), low("low-z1-r2", "node2-z1-r2", "2"),
          pod("p1", "pg1"), pod("p2", "pg2"), pod("p3", "pg2")],
         bound("p1", "p2", "p3"), removed("low-z1-r1", "low-z1-r2"),
         on(["p1"], ["node1-z1-r1"]), on(["p2", "p3"], ["node2-z1-r2", "node3-z1-r2"])),

    case(WAP, "3-level CPG hierarchy: all levels have topology constraints (root=zone, sub=block, leaf=rack) with "
              "preemption",
         [*blocks_nodes(),
          low("low-z1-1", "node1-z1-g1-r1", "2"), low("low-z1-2", "node2-z1-g1-r2", "2"),
          low("low-z1-3", "node3-z1-g2-r1", "2"), low("low-z1-4", "node4-z1-g2-r2", "2"),
          gang_cpg("cpg-root", "", "zone", 2), gang_cpg("cpg-sub1", "cpg-root", "block", 2),
          gang_cpg("cpg-sub2", "cpg-root", "block", 2),
          *eight_leaves(gang_pg, "rack")],
         bound(*EIGHT), removed("low-z1-1", "low-z1-2", "low-z1-3", "low-z1-4"), one_domain(EIGHT, "zone"),
         one_domain(EIGHT[:4], "block"), one_domain(EIGHT[4:], "block"), *pairs_in_racks()),

    case(WAP, "3-level CPG hierarchy: mid-level without topology constraints (root=zone, sub=none, leaf=rack) with "
              "preemption",
         [node("node1-z1-r1", "rack-1", "zone-1"), node("node2-z1-r2", "rack-2", "zone-1"),
          node("node3-z2-r1", "rack-1", "zone-2"),
          low("low-z1-r1", "node1-z1-r1", "2"), low("low-z1-r2", "node2-z1-r2", "2"),
          gang_cpg("cpg-root", "", "zone", 2), basic_cpg("cpg-sub1", "cpg-root", ""),
          basic_cpg("cpg-sub2", "cpg-root", ""),
          gang_pg("pg1", "cpg-sub1", "rack", 2), gang_pg("pg2", "cpg-sub2", "rack", 2),
          pod("p1", "pg1"), pod("p2", "pg1"), pod("p3", "pg2"), pod("p4", "pg2")],
         bound("p1", "p2", "p3", "p4"), removed("low-z1-r1", "low-z1-r2"),
         one_domain(["p1", "p2", "p3", "p4"], "zone"),
         one_domain(["p1", "p2"], "rack"), one_domain(["p3", "p4"], "rack")),

    case(WAP, "3-level CPG hierarchy: top level without topology constraint (root=none, sub=zone, leaf=rack) with "
              "preemption",
         [node("node1-z1-r1", "rack-1", "zone-1"), node("node2-z1-r2", "rack-2", "zone-1"),
          node("node3-z2-r3", "rack-3", "zone-2"), node("node4-z2-r4", "rack-4", "zone-2"),
          low("low-z1-r1", "node1-z1-r1", "2"), low("low-z1-r2", "node2-z1-r2", "2"),
          low("low-z2-r3", "node3-z2-r3", "2"), low("low-z2-r4", "node4-z2-r4", "2"),
          basic_cpg("cpg-root", "", ""), gang_cpg("cpg-sub1", "cpg-root", "zone", 2),
          gang_cpg("cpg-sub2", "cpg-root", "zone", 2),
          *eight_leaves(gang_pg, "rack")],
         bound(*EIGHT), removed("low-z1-r1", "low-z1-r2", "low-z2-r3", "low-z2-r4"),
         one_domain(EIGHT[:4], "zone"), one_domain(EIGHT[4:], "zone"), *pairs_in_racks()),

    case(WAP, "3-level CPG hierarchy: bottom level without topology constraint (root=zone, sub=rack, leaf=none) with "
              "preemption",
         [*two_racks_two_nodes(),
          node("node5-z2-r3", "rack-3", "zone-2"), node("node6-z2-r3", "rack-3", "zone-2"),
          low("low-z1-r1-1", "node1-z1-r1", "2"), low("low-z1-r1-2", "node2-z1-r1", "2"),
          low("low-z1-r2-1", "node3-z1-r2", "2"), low("low-z1-r2-2", "node4-z1-r2", "2"),
          gang_cpg("cpg-root", "", "zone", 2), gang_cpg("cpg-sub1", "cpg-root", "rack", 2),
          gang_cpg("cpg-sub2", "cpg-root", "rack", 2),
          *eight_leaves(gang_pg, "")],
         bound(*EIGHT), removed("low-z1-r1-1", "low-z1-r1-2", "low-z1-r2-1", "low-z1-r2-2"),
         one_domain(EIGHT, "zone"), one_domain(EIGHT[:4], "rack"), one_domain(EIGHT[4:], "rack")),

    case(WAP, "3-level CPG hierarchy: preexisting pod in leaf PodGroup determines topology for intermediate and "
              "root CPGs with preemption",
         [*eight_nodes_two_zones(),
          gang_cpg("cpg-root", "", "zone", 2), gang_cpg("cpg-sub1", "cpg-root", "rack", 2),
          gang_cpg("cpg-sub2", "cpg-root", "rack", 2),
          gang_pg("pg1", "cpg-sub1", "", 2), gang_pg("pg2", "cpg-sub1", "", 2),
          gang_pg("pg3", "cpg-sub2", "", 2), gang_pg("pg4", "cpg-sub2", "", 2),
          assigned_member("existing-pg1", "pg1", "node5-z2-r1", "1"),
          low("low-z2-r1", "node6-z2-r1", "2"), low("low-z2-r2", "node7-z2-r2", "2"),
          pod("p1", "pg1"), pod("p2", "pg2"), pod("p3", "pg2"), pod("p4", "pg3"), pod("p5", "pg3"),
          pod("p6", "pg4"), pod("p7", "pg4")],
         bound(*EIGHT[:7]), removed("low-z2-r1", "low-z2-r2"),
         on(EIGHT[:7], ["node5-z2-r1", "node6-z2-r1", "node7-z2-r2", "node8-z2-r2"]),
         on(["p1", "p2", "p3"], ["node5-z2-r1", "node6-z2-r1"]),
         on(["p4", "p5", "p6", "p7"], ["node7-z2-r2", "node8-z2-r2"])),
]

CASES: list[Case] = [*TAS_CASES, *WAP_CASES]

UNEXPRESSED: list[Unexpressed] = []


@pytest.mark.parametrize("case", params(CASES))
def test_upstream_case(case: Case) -> None:
    case.check(run(case))


UPSTREAM_NAMES = (
    (TAS, "parent CPG has topology constraints, children do not; schedules on a single rack"),
    (TAS, "parent CPG has topology constraints, children do not; preexisting pod belonging to the hierarchy "
          "determines the topology"),
    (TAS, "parent CPG has topology constraints, children do not; remains pending when no single rack can fit all "
          "children"),
    (TAS, "parent CPG and child PGs both have topology constraints (multi-level constraints: zone and rack)"),
    (TAS, "parent CPG and only one child PG has topology constraints; the other child uses parent's topology"),
    (TAS, "parent CPG and all child PGs have topology constraints, preexisting pod group pods constrain the "
          "available topology domains"),
    (TAS, "parent CPG has topology constraints, preexisting pod group pods are in conflicting domains across pod "
          "groups, fails to schedule any pod"),
    (TAS, "3-level CPG hierarchy: all levels have topology constraints (root=zone, sub=block, leaf=rack)"),
    (TAS, "3-level CPG hierarchy: mid-level without topology constraints (root=zone, sub=none, leaf=rack)"),
    (TAS, "3-level CPG hierarchy: top level without topology constraint (root=none, sub=zone, leaf=rack)"),
    (TAS, "3-level CPG hierarchy: bottom level without topology constraint (root=zone, sub=rack, leaf=none)"),
    (TAS, "3-level CPG hierarchy: preexisting pod in leaf PodGroup determines topology for intermediate and root "
          "CPGs"),
    (WAP, "parent CPG has topology constraints, children do not; schedules on a single rack after preempting lower "
          "priority pods"),
    (WAP, "parent CPG has topology constraints, children do not; schedules on a single rack after preempting lower "
          "priority pods, then cannot schedule additional pods"),
    (WAP, "parent CPG has topology constraints, children do not; preexisting pod belonging to the hierarchy "
          "determines topology and lower priority pods are preempted"),
    (WAP, "parent CPG has topology constraints, children do not; schedules on a rack after preempting lower "
          "priority pods"),
    (WAP, "parent CPG and child PGs both have topology constraints (multi-level constraints: zone and rack) with "
          "preemption"),
    (WAP, "parent CPG and child PGs both have topology constraints (multi-level constraints: zone and rack), "
          "preemption does not help for subsequent"),
    (WAP, "parent CPG and only one child PG has topology constraints; the other child uses parent's topology with "
          "preemption"),
    (WAP, "parent CPG and all child PGs have topology constraints, preexisting pod group pods constrain available "
          "topology domains with preemption"),
    (WAP, "3-level CPG hierarchy: all levels have topology constraints (root=zone, sub=block, leaf=rack) with "
          "preemption"),
    (WAP, "3-level CPG hierarchy: mid-level without topology constraints (root=zone, sub=none, leaf=rack) with "
          "preemption"),
    (WAP, "3-level CPG hierarchy: top level without topology constraint (root=none, sub=zone, leaf=rack) with "
          "preemption"),
    (WAP, "3-level CPG hierarchy: bottom level without topology constraint (root=zone, sub=rack, leaf=none) with "
          "preemption"),
    (WAP, "3-level CPG hierarchy: preexisting pod in leaf PodGroup determines topology for intermediate and root "
          "CPGs with preemption"),
)


def test_every_upstream_case_is_named_once() -> None:
    named = names([*CASES, *UNEXPRESSED])
    assert sorted(named) == sorted(UPSTREAM_NAMES)
    assert len(set(named)) == len(named)
    everything: list[Case | Unexpressed] = [*CASES, *UNEXPRESSED]
    assert all(c.file == FILE for c in everything)

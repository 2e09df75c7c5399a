"""KEP-6012 CompositePodGroup trees (phalanx/scheduler/plugins/composite/) as kube-scheduler v1.37.2
schedules them with the CompositePodGroup gate on: PreEnqueue over the tree, one cycle per root, children in
turn under minGroupCount, a parent's failure passed down to its children, topology confinement top-down,
validation of the whole tree, workload-aware preemption at the root, and no effect with the gate off."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from phalanx.api.objects import CompositePodGroup, Node, Pod, PodGroup
from phalanx.scheduler.decisions import Bind, Decision, Evict, GroupCondition, Nominate, Preemption, Unschedulable
from phalanx.scheduler.plugins.composite.forest import Forest, depth, ready
from phalanx.scheduler.plugins.composite.report import tree_notes
from phalanx.scheduler.plugins.composite.tree_cycles import CompositeCycles
from phalanx.scheduler.profiles import Profile, builtin
from phalanx.scheduler.scheduler import Scheduler
from tests.builders import MakeCompositePodGroup, MakeNode, MakePod, MakePodGroup

RACK = "topology.kubernetes.io/rack"
GATES = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True}


def profile() -> Profile:
    return Profile("composite", feature_gates=dict(GATES), tie_break="first")


def node(name: str, cpu: int = 8, rack: str | None = None) -> Node:
    builder = MakeNode(name).alloc(cpu=str(cpu), memory="32Gi")
    if rack is not None:
        builder.label(RACK, rack)
    return builder.obj()


def leaf(name: str, parent: str | None, min_count: int | None = 2, priority: int | None = None) -> PodGroup:
    builder = MakePodGroup(name)
    builder.gang(min_count) if min_count is not None else builder.basic()
    if parent is not None:
        builder.parent(parent)
    if priority is not None:
        builder.priority(priority)
    return builder.obj()


def composite(name: str, min_group_count: int | None = 2, parent: str | None = None,
              topology: str | None = None) -> CompositePodGroup:
    builder = MakeCompositePodGroup(name)
    if min_group_count is not None:
        builder.gang(min_group_count)
    if parent is not None:
        builder.parent(parent)
    if topology is not None:
        builder.topology(topology)
    return builder.obj()


def members(group: str, count: int, cpu: str = "4") -> list[Pod]:
    return [MakePod(f"{group}-{i}").req(cpu=cpu, memory="1Gi").group(group).obj() for i in range(count)]


def binds(decisions: Sequence[Decision]) -> dict[str, str]:
    return {d.pod.name: d.node for d in decisions if isinstance(d, Bind)}


def messages(decisions: Sequence[Decision]) -> dict[str, str]:
    return {d.pod.name: d.message for d in decisions if isinstance(d, Unschedulable)}


def conditions(decisions: Sequence[Decision]) -> dict[str, tuple[bool, str]]:
    return {d.group.name: (d.status, d.reason) for d in decisions if isinstance(d, GroupCondition)}


def run(nodes: Sequence[Node], composites: Sequence[CompositePodGroup], groups: Sequence[PodGroup],
        pods: Sequence[Pod], prof: Profile | None = None) -> tuple[Scheduler, list[Decision]]:
    scheduler = Scheduler(prof or profile(), nodes)
    for item in composites:
        scheduler.add_composite_pod_group(item, 0.0)
    for group in groups:
        scheduler.add_pod_group(group, 0.0)
    for pod in pods:
        scheduler.add_pod(pod, 0.0)
    return scheduler, scheduler.schedule(0.0)


# --- PreEnqueue over the tree ------------------------------------------------------------------------------

def test_a_gang_composite_waits_until_min_group_count_children_have_their_pods() -> None:
    scheduler, decisions = run([node("n1"), node("n2")], [composite("job")],
                               [leaf("a", "job"), leaf("b", "job")], members("a", 2))
    assert decisions == []
    assert scheduler.pod_message("default/a-0") == "waiting for composite pod group default/job tree to meet quorum"
    for pod in members("b", 2):
        scheduler.add_pod(pod, 1.0)
    decisions = scheduler.schedule(1.0)
    assert len(binds(decisions)) == 4
    assert conditions(decisions) == {"a": (True, "Scheduled"), "b": (True, "Scheduled")}


def test_readiness_counts_children_recursively() -> None:
    forest = Forest()
    for item in (composite("root", 2), composite("mid", 1, parent="root")):
        forest.add(item)
    for group in (leaf("a", "root"), leaf("b", "mid", min_count=None)):
        forest.add_group(group)
    tree = forest.tree("default/root")
    assert not ready(tree, {"default/a": {"p1", "p2"}})  # mid has no ready child
    assert ready(tree, {"default/a": {"p1", "p2"}, "default/b": {"p3"}})


def test_members_wait_for_a_missing_parent_and_never_queue_in_a_cycle() -> None:
    scheduler, decisions = run([node("n1")], [], [leaf("a", "job", min_count=1)], members("a", 1))
    assert decisions == []
    assert scheduler.pod_message("default/a-0") == "waiting for composite pod group default/job to be created"
    scheduler, decisions = run([node("n1")], [composite("x", 1, parent="y"), composite("y", 1, parent="x")],
                               [leaf("a", "x", min_count=1)], members("a", 1))
    assert decisions == []
    assert "cycle detected in composite pod group hierarchy" in (scheduler.pod_message("default/a-0") or "")


def chain(length: int, *, top: str | None = None) -> list[CompositePodGroup]:
    """c0 under c1 under … c{length-1} (under `top` when given, else the root): basic CompositePodGroups."""
    return [composite(f"c{i}", None, parent=f"c{i + 1}" if i < length - 1 else top) for i in range(length)]


def test_a_chain_of_600_parents_holds_its_leaf_and_every_other_pod_schedules() -> None:
    # The campaign's poison object: kube-scheduler's hierarchy walk (BuildHierarchySnapshotFromPod) follows at
    # most 4 parents, finds no root and holds the leaf's pods in PreEnqueue; nothing else is affected.
    plain = MakePod("plain").req(cpu="1", memory="1Gi").obj()
    scheduler, decisions = run([node("n1")], chain(600), [leaf("a", "c0", min_count=1)], [*members("a", 1), plain])
    assert binds(decisions) == {"plain": "n1"}
    assert scheduler.pod_message("default/a-0") == (
        "failed to build hierarchy snapshot: composite pod group default/c0 has no root within 4 levels up (the "
        "API allows trees 4 levels deep)")
    assert scheduler.schedule(1.0) == []


def test_the_hierarchy_walk_reaches_a_root_four_parents_up_and_no_further() -> None:
    # As v1.37.2's walk: a leaf 5 levels down (4 CompositePodGroups above it) is scheduled, 6 levels down waits.
    _, decisions = run([node("n1")], chain(4), [leaf("a", "c0", min_count=1)], members("a", 1))
    assert binds(decisions) == {"a-0": "n1"}
    scheduler, decisions = run([node("n1")], chain(5), [leaf("a", "c0", min_count=1)], members("a", 1))
    assert decisions == [] and "no root within 4 levels up" in (scheduler.pod_message("default/a-0") or "")


def test_a_loop_of_600_parents_is_found_without_recursion() -> None:
    loop = chain(600, top="c0")
    scheduler, decisions = run([node("n1")], loop, [leaf("a", "c0", min_count=1)], members("a", 1))
    assert decisions == []
    assert "cycle detected in composite pod group hierarchy" in (scheduler.pod_message("default/a-0") or "")
    assert "cycle detected" in tree_notes([leaf("a", "c0", min_count=1)], loop)[0]


def test_a_tree_600_levels_deep_places_its_reachable_leaf() -> None:
    # A basic root with a leaf right below it and a chain of 600 CompositePodGroups beside it (an empty leaf at
    # its bottom): the placement walks the whole tree, without recursion, and the leaf in reach binds.
    deep = chain(600, top="root")
    scheduler, decisions = run([node("n1")], [composite("root", None), *deep],
                               [leaf("near", "root", min_count=1), leaf("far", "c0", min_count=1)],
                               members("near", 1))
    assert binds(decisions) == {"near-0": "n1"}
    assert conditions(decisions)["near"] == (True, "Scheduled")
    trees = scheduler.trees
    tree = trees.forest.tree("default/root") if isinstance(trees, CompositeCycles) else None
    assert tree is not None and depth(tree) == 602 and sorted(g.name for g in tree.leaves()) == ["far", "near"]
    assert ready(tree, {"default/near": {"p"}}) and not ready(tree, {})


def test_a_changed_parent_moves_a_composite_and_a_leaf() -> None:
    forest = Forest()
    for item in (composite("x", 1), composite("y", 1), composite("m", 1, parent="x")):
        forest.add(item)
    forest.add_group(leaf("a", "x"))
    forest.add(composite("m", 1, parent="y"))
    forest.add_group(leaf("a", "m"))
    assert [n.key for n in forest.tree("default/x").children] == []
    assert [n.key for n in forest.tree("default/y").children] == ["default/m"]
    assert [g.key for g in forest.tree("default/y").leaves()] == ["default/a"]


# --- the root cycle -----------------------------------------------------------------------------------------

def test_a_gang_composite_binds_all_children_or_none() -> None:
    # Two 8-cpu nodes: a (2 × 4 cpu) fits, b (2 × 8 cpu) does not fit beside it, so nothing binds.
    _, decisions = run([node("n1"), node("n2")], [composite("job")], [leaf("a", "job"), leaf("b", "job")],
                       [*members("a", 2), *members("b", 2, cpu="8")])
    assert binds(decisions) == {}
    assert conditions(decisions) == {"a": (False, "Unschedulable"), "b": (False, "Unschedulable")}
    # a placed alone but its parent failed: its pods carry the parent's status (completeComposite...Map), as a
    # pod never tried does: the composite's one placement (the parent's) and GangScheduling's words, minGroupCount
    # as its minCount.
    assert messages(decisions)["a-0"] == ("pod group is unschedulable, 0/1 placements are available, first "
                                          "placement status: minCount (2) cannot be satisfied: 1 scheduled, 0 "
                                          "remaining")


def test_a_basic_composite_binds_the_children_that_fit() -> None:
    _, decisions = run([node("n1"), node("n2")], [composite("job", None)], [leaf("a", "job"), leaf("b", "job")],
                       [*members("a", 2), *members("b", 2, cpu="8")])
    assert sorted(binds(decisions)) == ["a-0", "a-1"]
    assert conditions(decisions) == {"a": (True, "Scheduled"), "b": (False, "Unschedulable")}
    assert messages(decisions)["b-0"] == "0/2 nodes are available: 2 Insufficient cpu."  # its own failure


def test_min_group_count_below_the_number_of_children() -> None:
    _, decisions = run([node("n1"), node("n2")], [composite("job", 1)], [leaf("a", "job"), leaf("b", "job")],
                       [*members("a", 2), *members("b", 2, cpu="8")])
    assert sorted(binds(decisions)) == ["a-0", "a-1"]


def test_a_child_already_running_counts_toward_min_group_count() -> None:
    # a runs its minCount already and places nothing more: as a child it still succeeds (only the root must
    # place a pod), so b binds under minGroupCount 2.
    scheduler = Scheduler(profile(), [node("n1"), node("n2")])
    scheduler.add_composite_pod_group(composite("job"), 0.0)
    for group in (leaf("a", "job"), leaf("b", "job")):
        scheduler.add_pod_group(group, 0.0)
    for pod in members("a", 2):
        scheduler.add_pod(pod, 0.0, node="n1")
    for pod in members("b", 2):
        scheduler.add_pod(pod, 0.0)
    decisions = scheduler.schedule(0.0)
    assert binds(decisions) == {"b-0": "n2", "b-1": "n2"}
    assert conditions(decisions) == {"a": (True, "Scheduled"), "b": (True, "Scheduled")}


def test_the_tree_is_validated_as_one_group() -> None:
    # Every pod must have the root's priority (0 here): b's pods have 5.
    pods = [*members("a", 2), *(MakePod(f"b-{i}").req(cpu="1").group("b").priority(5).obj() for i in range(2))]
    _, decisions = run([node("n1")], [composite("job")], [leaf("a", "job"), leaf("b", "job")], pods)
    assert binds(decisions) == {}
    assert conditions(decisions) == {"a": (False, "SchedulerError"), "b": (False, "SchedulerError")}
    assert "same priority as the pod group's priority, got 5 and 0" in messages(decisions)["a-0"]


def test_topology_at_the_composite_confines_every_child_to_one_domain() -> None:
    # rack-a holds 12 free cpu, rack-b 16: the two 2 × 4-cpu children fit only together in rack-b; without the
    # constraint they would spread over both racks.
    nodes = [node("a1", 8, "rack-a"), node("a2", 4, "rack-a"), node("b1", 8, "rack-b"), node("b2", 8, "rack-b")]
    _, decisions = run(nodes, [composite("job", topology=RACK)], [leaf("a", "job"), leaf("b", "job")],
                       [*members("a", 2), *members("b", 2)])
    assert set(binds(decisions).values()) == {"b1", "b2"}
    assert len(binds(decisions)) == 4


def test_nested_composites_are_confined_top_down() -> None:
    # The root asks for one rack, its child composite for one host: both leaves of the child share a host
    # inside the rack the root chose.
    nodes = [node("a1", 8, "rack-a"), node("b1", 16, "rack-b")]
    for item in nodes:
        item.labels["kubernetes.io/hostname"] = item.name
    _, decisions = run(nodes, [composite("root", 1, topology=RACK),
                               composite("pair", 2, parent="root", topology="kubernetes.io/hostname")],
                       [leaf("a", "pair"), leaf("b", "pair")], [*members("a", 2), *members("b", 2)])
    assert Counter(binds(decisions).values()) == {"b1": 4}


def test_a_leaf_that_failed_itself_keeps_its_members_results() -> None:
    # a-0 fits, a-1 does not: the leaf fails on its own (its one placement, the parent's), so its members keep
    # what the cycle found, and the root's PodGroupPostFilter verdict follows the leaf's status.
    _, decisions = run([node("n1")], [composite("job", 1)], [leaf("a", "job")], members("a", 2, cpu="6"))
    status = ("pod group is unschedulable, 0/1 placements are available, first placement status: minCount (2) "
              "cannot be satisfied: 1 scheduled, 0 remaining")
    assert messages(decisions) == {
        "a-0": f"pod group is unschedulable, {status}, pod group preemption: No preemption victims found for "
               "incoming preemptor",
        "a-1": "0/1 nodes are available: 1 Insufficient cpu."}


def test_a_composite_with_no_domain_for_its_children_is_unschedulable() -> None:
    nodes = [node("a1", 8, "rack-a"), node("b1", 8, "rack-b")]
    _, decisions = run(nodes, [composite("job", topology=RACK)], [leaf("a", "job"), leaf("b", "job")],
                       [*members("a", 2), *members("b", 2)])
    assert binds(decisions) == {}
    assert messages(decisions)["a-0"] == ("pod group is unschedulable, 0/2 placements are available, first "
                                          "placement status: minCount (2) cannot be satisfied: 1 scheduled, 0 "
                                          "remaining")


def test_with_the_gate_off_the_parent_link_has_no_effect() -> None:
    gates = {**GATES, "CompositePodGroup": False}
    _, decisions = run([node("n1"), node("n2")], [composite("job")], [leaf("a", "job"), leaf("b", "job")],
                       [*members("a", 2), *members("b", 2, cpu="8")], Profile("p", feature_gates=gates))
    assert sorted(binds(decisions)) == ["a-0", "a-1"]  # each PodGroup on its own
    assert not builtin("gang").composite


# --- workload-aware preemption for the tree ------------------------------------------------------------------

HIGH = 100


def high_tree(scheduler: Scheduler, now: float, cpu: str = "4", topology: str | None = None) -> None:
    """A gang composite (minGroupCount 2, priority 100) over leaves a and b, each 2 pods of `cpu`."""
    root = MakeCompositePodGroup("job").gang(2).priority(HIGH)
    if topology is not None:
        root.topology(topology)
    scheduler.add_composite_pod_group(root.obj(), now)
    for name in ("a", "b"):
        scheduler.add_pod_group(leaf(name, "job", priority=HIGH), now)
        for i in range(2):
            scheduler.add_pod(MakePod(f"{name}-{i}").req(cpu=cpu, memory="1Gi").group(name).priority(HIGH).obj(),
                              now)


def busy(nodes: Sequence[Node], priorities: Sequence[int]) -> Scheduler:
    """A scheduler whose nodes each run one 8-cpu bare pod `run-i` of the given priority."""
    scheduler = Scheduler(profile(), nodes)
    for i, (item, priority) in enumerate(zip(nodes, priorities, strict=True)):
        scheduler.add_pod(MakePod(f"run-{i}").req(cpu="8", memory="1Gi").priority(priority).obj(), 0.0,
                          node=item.name)
    return scheduler


def test_a_gang_tree_preempts_lower_priority_pods_then_places() -> None:
    # Five full 8-cpu nodes, the tree's four 8-cpu pods need four of them: four victims, one pod reprieved.
    scheduler = busy([node(f"n{i}") for i in range(5)], [0] * 5)
    high_tree(scheduler, 1.0, cpu="8")
    decisions = scheduler.schedule(1.0)
    assert binds(decisions) == {}
    [preemption] = [d for d in decisions if isinstance(d, Preemption)]
    assert preemption.preemptor == "default/job" and preemption.group and len(preemption.victims) == 4
    evicted = {d.pod.key: d.node for d in decisions if isinstance(d, Evict)}
    assert set(evicted) == set(preemption.victims)
    assert all(d.message == f"Preempted by composite pod group default/job on node {d.node}"
               for d in decisions if isinstance(d, Evict))
    nominated = {d.pod.name: d.node for d in decisions if isinstance(d, Nominate)}
    assert sorted(nominated) == ["a-0", "a-1", "b-0", "b-1"]
    assert set(nominated.values()) == set(evicted.values())  # the tree lands where its victims were
    # While the victims terminate the tree waits on its nominations (isOngoingPreemption).
    scheduler.queue.move_all(2.0)
    decisions = scheduler.schedule(2.0)
    assert not [d for d in decisions if isinstance(d, Preemption | Nominate)]
    for key in preemption.victims:
        scheduler.delete_pod(key, 30.0)
    decisions = scheduler.schedule(30.0)
    assert binds(decisions) == nominated
    assert conditions(decisions) == {"a": (True, "Scheduled"), "b": (True, "Scheduled")}


def test_a_tree_with_a_domain_preempts_inside_one_domain() -> None:
    # The root wants one rack: rack-a has room for one leaf, rack-b for none until its low pods go.
    nodes = [node("a1", 8, "rack-a"), node("b1", 8, "rack-b"), node("b2", 8, "rack-b")]
    scheduler = Scheduler(profile(), nodes)
    for i, where in enumerate(("b1", "b2")):
        scheduler.add_pod(MakePod(f"run-{i}").req(cpu="8", memory="1Gi").obj(), 0.0, node=where)
    high_tree(scheduler, 1.0, topology=RACK)
    decisions = scheduler.schedule(1.0)
    [preemption] = [d for d in decisions if isinstance(d, Preemption)]
    assert sorted(preemption.victims) == ["default/run-0", "default/run-1"]
    nominated = {d.pod.name: d.node for d in decisions if isinstance(d, Nominate)}
    assert set(nominated.values()) == {"b1", "b2"}
    # Both leaves share b1 and b2: the tree's nominations leave room for each other once the victims are gone.
    for key in preemption.victims:
        scheduler.delete_pod(key, 30.0)
    assert binds(scheduler.schedule(30.0)) == nominated


def test_nothing_is_preempted_when_the_tree_would_not_fit_without_every_victim() -> None:
    # b's pods ask for 12 cpu on 8-cpu nodes: even with both low pods gone the root fails.
    scheduler = busy([node("n1"), node("n2")], [0, 0])
    scheduler.add_composite_pod_group(MakeCompositePodGroup("job").gang(2).priority(HIGH).obj(), 1.0)
    for name, cpu in (("a", "4"), ("b", "12")):
        scheduler.add_pod_group(leaf(name, "job", priority=HIGH), 1.0)
        for i in range(2):
            scheduler.add_pod(MakePod(f"{name}-{i}").req(cpu=cpu, memory="1Gi").group(name).priority(HIGH).obj(),
                              1.0)
    decisions = scheduler.schedule(1.0)
    assert not [d for d in decisions if isinstance(d, Preemption | Evict | Nominate)]
    assert conditions(decisions) == {"a": (False, "Unschedulable"), "b": (False, "Unschedulable")}


def test_pods_of_higher_or_equal_priority_are_never_preempted() -> None:
    # n1 runs a pod above the tree's priority, n2 one at it: neither is a victim, so nothing is preempted
    # although evicting them would make room.
    scheduler = busy([node("n1"), node("n2")], [HIGH + 1, HIGH])
    high_tree(scheduler, 1.0)
    decisions = scheduler.schedule(1.0)
    assert not [d for d in decisions if isinstance(d, Preemption | Evict | Nominate)]
    # With one lower-priority pod on a third node the tree still needs two nodes: it takes n3 and preempts
    # nothing either, as only one node could be freed.
    scheduler = busy([node("n1"), node("n2"), node("n3")], [HIGH + 1, HIGH, 0])
    high_tree(scheduler, 1.0)
    decisions = scheduler.schedule(1.0)
    assert not [d for d in decisions if isinstance(d, Preemption | Evict | Nominate)]


def test_a_tree_whose_root_says_never_preempts_nothing() -> None:
    gates = {**GATES, "PodGroupPreemptionPolicy": True}
    scheduler = Scheduler(Profile("composite", feature_gates=gates, tie_break="first"), [node("n1"), node("n2")])
    for i, where in enumerate(("n1", "n2")):
        scheduler.add_pod(MakePod(f"run-{i}").req(cpu="8", memory="1Gi").obj(), 0.0, node=where)
    root = MakeCompositePodGroup("job").gang(2).priority(HIGH)
    root.doc["spec"]["preemptionPolicy"] = "Never"
    scheduler.add_composite_pod_group(root.obj(), 1.0)
    for name in ("a", "b"):
        group = MakePodGroup(name).gang(2).parent("job").priority(HIGH)
        group.doc["spec"]["preemptionPolicy"] = "Never"
        scheduler.add_pod_group(group.obj(), 1.0)
        for i in range(2):
            pod = MakePod(f"{name}-{i}").req(cpu="4", memory="1Gi").group(name).priority(HIGH)
            scheduler.add_pod(pod.obj(), 1.0)
    decisions = scheduler.schedule(1.0)
    assert binds(decisions) == {}
    assert not [d for d in decisions if isinstance(d, Preemption | Evict | Nominate)]


# --- trees as victims (GetPodPriority, getHighestAllAncestor) ----------------------------------------------------

def running_tree(scheduler: Scheduler, *, root_priority: int | None = None, leaf_priority: int | None = None,
                 root_mode: str | None = None, leaf_mode: str | None = None, nodes: Sequence[str] = ("n1", "n2"),
                 cpu: str = "8") -> None:
    """A gang composite `job` over one leaf per node (`l0`, `l1`, …, minCount 1, one pod each), bound at time 0;
    its pods carry the root's priority, as validation requires."""
    root = MakeCompositePodGroup("job").gang(len(nodes))
    if root_priority is not None:
        root.priority(root_priority)
    if root_mode is not None:
        root.doc["spec"]["disruptionMode"] = {root_mode: {}}
    scheduler.add_composite_pod_group(root.obj(), 0.0)
    for i in range(len(nodes)):
        group = MakePodGroup(f"l{i}").gang(1).parent("job")
        if leaf_priority is not None:
            group.priority(leaf_priority)
        if leaf_mode is not None:
            group.doc["spec"]["disruptionMode"] = {leaf_mode: {}}
        scheduler.add_pod_group(group.obj(), 0.0)
        scheduler.add_pod(MakePod(f"l{i}-0").req(cpu=cpu, memory="1Gi").group(f"l{i}").priority(root_priority or 0)
                          .obj(), 0.0)
    assert len(binds(scheduler.schedule(0.0))) == len(nodes)


def preempt_with(scheduler: Scheduler, priority: int, cpu: str = "8", now: float = 5.0) -> list[Decision]:
    scheduler.add_pod(MakePod("hi").req(cpu=cpu, memory="1Gi").priority(priority).obj(), now)
    return scheduler.schedule(now)


def victims(decisions: Sequence[Decision]) -> list[str]:
    return sorted(d.pod.key for d in decisions if isinstance(d, Evict))


def test_a_root_with_disruption_mode_all_makes_the_whole_tree_one_victim() -> None:
    # Leaves say single, the root says all: evicting one tree pod evicts every pod of the tree.
    scheduler = Scheduler(profile(), [node("n1"), node("n2")])
    running_tree(scheduler, root_mode="all", leaf_mode="single")
    assert victims(preempt_with(scheduler, 100)) == ["default/l0-0", "default/l1-0"]
    # Without it each leaf's pod is a victim of its own.
    scheduler = Scheduler(profile(), [node("n1"), node("n2")])
    running_tree(scheduler, leaf_mode="single")
    assert len(victims(preempt_with(scheduler, 100))) == 1


def test_the_highest_all_ancestor_decides_what_goes_together() -> None:
    # root (single) > mid (all) > leaves l0, l1 (single); a second leaf l2 hangs under the root itself.
    scheduler = Scheduler(profile(), [node("n1"), node("n2"), node("n3")])
    scheduler.add_composite_pod_group(MakeCompositePodGroup("job").gang(2).obj(), 0.0)
    mid = MakeCompositePodGroup("mid").gang(2).parent("job")
    mid.doc["spec"]["disruptionMode"] = {"all": {}}
    scheduler.add_composite_pod_group(mid.obj(), 0.0)
    for name, parent in (("l0", "mid"), ("l1", "mid"), ("l2", "job")):
        scheduler.add_pod_group(MakePodGroup(name).gang(1).parent(parent).obj(), 0.0)
        scheduler.add_pod(MakePod(f"{name}-0").req(cpu="8", memory="1Gi").group(name).obj(), 0.0)
    assert len(binds(scheduler.schedule(0.0))) == 3
    units = scheduler.preemptor.units(list(scheduler.running.node_of), 100)
    assert [(u.pods, u.group, u.composite) for u in units] == [
        (("default/l0-0", "default/l1-0"), "default/mid", True), (("default/l2-0",), None, False)]
    # A CompositePodGroup unit ranks above a PodGroup member of equal priority (victimRank 3 > 2).
    assert units[0].importance() < units[1].importance()
    # The preemptor takes l2's node: one victim rather than the two of mid's subtree.
    assert victims(preempt_with(scheduler, 100)) == ["default/l2-0"]


def test_a_tree_members_priority_as_a_victim_is_its_roots() -> None:
    # Leaves at 1000, root and pods at 0: a pod of priority 500 may preempt the tree's pods.
    scheduler = Scheduler(profile(), [node("n1")])
    running_tree(scheduler, root_priority=None, leaf_priority=1000, nodes=("n1",))
    assert scheduler.preemptor.priority("default/l0-0") == 0
    assert victims(preempt_with(scheduler, 500)) == ["default/l0-0"]
    # Root and pods at 100, leaves unset (0): a pod of priority 50 may not.
    scheduler = Scheduler(profile(), [node("n1")])
    running_tree(scheduler, root_priority=100, nodes=("n1",))
    decisions = preempt_with(scheduler, 50)
    assert victims(decisions) == [] and not [d for d in decisions if isinstance(d, Preemption | Nominate)]


def test_victims_rank_by_their_roots_priority() -> None:
    # n1 runs a tree pod (root 10, leaf 0), n2 a bare pod of priority 5: the lowest victim priority is n2's.
    scheduler = Scheduler(profile(), [node("n1"), node("n2")])
    running_tree(scheduler, root_priority=10, nodes=("n1",))
    scheduler.add_pod(MakePod("low").req(cpu="8", memory="1Gi").priority(5).obj(), 0.0, node="n2")
    decisions = preempt_with(scheduler, 1000)
    assert victims(decisions) == ["default/low"]
    assert {d.pod.name: d.node for d in decisions if isinstance(d, Nominate)} == {"hi": "n2"}


def test_group_preemption_orders_tree_victims_by_their_roots_priority() -> None:
    # The tree (root 10, leaf 0) is more important than the bare pod (5): reprieved first by a gang preemptor.
    scheduler = Scheduler(profile(), [node("n1"), node("n2")])
    running_tree(scheduler, root_priority=10, nodes=("n1",))
    scheduler.add_pod(MakePod("low").req(cpu="8", memory="1Gi").priority(5).obj(), 0.0, node="n2")
    units = scheduler.preemptor.units(list(scheduler.running.node_of), 1000)
    assert [(u.pods, u.priority) for u in units] == [(("default/l0-0",), 10), (("default/low",), 5)]
    assert scheduler.preemptor.units(list(scheduler.running.node_of), 10) == units[1:]


def test_vectorised_and_one_by_one_selection_agree_for_tree_members() -> None:
    for vectorised in (True, False):
        scheduler = Scheduler(profile(), [node("n1"), node("n2"), node("n3")])
        scheduler.preemptor.vectorised = vectorised
        running_tree(scheduler, root_priority=10, leaf_priority=2000, nodes=("n1", "n2"))
        scheduler.add_pod(MakePod("low").req(cpu="8", memory="1Gi").priority(20).obj(), 0.0, node="n3")
        assert victims(preempt_with(scheduler, 1000)) in (["default/l0-0"], ["default/l1-0"])


# --- what upstream leaves unchecked -------------------------------------------------------------------------

def test_notes_name_orphans_deep_trees_and_mixed_workloads() -> None:
    chain = [composite("c1", 1), composite("c2", 1, parent="c1"), composite("c3", 1, parent="c2"),
             composite("c4", 1, parent="c3")]
    other = MakeCompositePodGroup("c5").parent("c1")
    other.doc["spec"]["workloadRef"]["workloadName"] = "other"
    notes = tree_notes([leaf("a", "c4"), leaf("b", "missing")], [*chain, other.obj()])
    assert notes == [
        "PodGroup members will wait: waiting for composite pod group default/missing to be created",
        "CompositePodGroup default/c1: its tree is 5 levels deep (more than 4); kube-scheduler v1.37.2 "
        "schedules it anyway (but for leaves more than 5 levels down: their root is out of its reach)",
        "CompositePodGroup default/c1: its tree names 2 Workloads (other, wl); kube-scheduler v1.37.2 schedules "
        "it anyway",
    ]

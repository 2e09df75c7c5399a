"""Exact gang placement (the `phalanx` profile) inside CompositePodGroup trees: a leaf gang the greedy cycle
cannot seat in its tree's domain is placed exactly there, the tree binds whole, and the report counts each
leaf's verdict once per real root cycle (not per domain tried, not in preemption dry runs, not for a leaf
whose tree failed after placing it). Under `gang` the same trees stay as upstream v1.37 leaves them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from phalanx import build_report
from phalanx.api.objects import CompositePodGroup, Pod, PodGroup
from phalanx.scheduler.decisions import Bind, Decision, GroupCondition, Nominate, Preemption
from phalanx.scheduler.placement import exact
from phalanx.scheduler.profiles import Profile, builtin
from phalanx.scheduler.scheduler import Scheduler
from phalanx.sim.simulation import Simulation
from tests.builders import MakeCompositePodGroup, MakeNode, MakePod, MakePodGroup, inputs_of

RACK = "topology.kubernetes.io/rack"
GATES = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True, "CompositePodGroup": True}
HIGH = 100


def profile(name: str) -> Profile:
    """A builtin profile with the three tree gates on and the first of equally scored placements taken."""
    base = builtin(name)
    return replace(base, feature_gates={**base.feature_gates, **GATES}, tie_break="first")


def node(name: str, cpu: int, memory_gib: int, rack: str) -> MakeNode:
    return MakeNode(name).alloc(cpu=str(cpu), memory=f"{memory_gib}Gi", pods="110").label(RACK, rack)


def member(name: str, cpu: int, memory_gib: int, group: str, priority: int | None = None) -> MakePod:
    pod = MakePod(name).req(cpu=str(cpu), memory=f"{memory_gib}Gi").group(group)
    return pod.priority(priority) if priority is not None else pod


def trap(group: str = "g", priority: int | None = None) -> list[MakePod]:
    """test_exact.greedy_trap's gang: on n0 (8 cpu, 9Gi) and n1 (6 cpu, 6Gi) every greedy fails (v1.37's
    cycle tries the small members first, by name; largest-first puts the big one on the tighter n1); the
    only placement is big + small on n0, two small on n1."""
    return [*(member(f"{group}-small-{i}", 3, 3, group, priority) for i in range(3)),
            member(f"{group}-xl", 5, 6, group, priority)]


def trap_racks() -> list[MakeNode]:
    """Rack r1 holds the trap's nodes; rack r2 is too small for the gang in any order."""
    return [node("n0", 8, 9, "r1"), node("n1", 6, 6, "r1"), node("m0", 4, 4, "r2"), node("m1", 4, 4, "r2")]


def run(prof: Profile, nodes: Sequence[MakeNode], composites: Sequence[CompositePodGroup],
        groups: Sequence[PodGroup], pods: Sequence[Pod]) -> tuple[Scheduler, list[Decision]]:
    s = Scheduler(prof, [n.obj() for n in nodes])
    for item in composites:
        s.add_composite_pod_group(item, 0.0)
    for group in groups:
        s.add_pod_group(group, 0.0)
    for pod in pods:
        s.add_pod(pod, 0.0)
    return s, s.schedule(0.0)


def binds(decisions: Sequence[Decision]) -> dict[str, str]:
    return {d.pod.name: d.node for d in decisions if isinstance(d, Bind)}


def conditions(decisions: Sequence[Decision]) -> dict[str, tuple[bool, str]]:
    return {d.group.name: (d.status, d.reason) for d in decisions if isinstance(d, GroupCondition)}


def cycles(s: Scheduler) -> dict[str, int]:
    return dict(exact.decisions(s.cluster).summary()["cycles"])


def one_leaf_tree() -> tuple[list[CompositePodGroup], list[PodGroup], list[Pod]]:
    """A root over racks (minGroupCount 1) with the trap gang as its only leaf."""
    return ([MakeCompositePodGroup("job").gang(1).topology(RACK).obj()],
            [MakePodGroup("g").gang(4).parent("job").obj()], [pod.obj() for pod in trap()])


def test_gang_leaves_the_leaf_unplaced_as_upstream_does() -> None:
    s, decisions = run(profile("gang"), trap_racks(), *one_leaf_tree())
    assert binds(decisions) == {}
    assert conditions(decisions) == {"g": (False, "Unschedulable")}
    assert "Exact placement" not in (s.pod_message("default/g-big") or "")
    assert sum(cycles(s).values()) == 0


def test_a_leaf_the_greedy_cycle_fails_is_placed_exactly_in_its_domain_and_counted_once() -> None:
    s, decisions = run(profile("phalanx"), trap_racks(), *one_leaf_tree())
    placed = binds(decisions)
    assert placed["g-xl"] == "n0" and sorted(placed.values()) == ["n0", "n0", "n1", "n1"]
    assert conditions(decisions) == {"g": (True, "Scheduled")}
    # Both racks were tried (exact placement ran in each: placed in r1, proven infeasible in r2); only the
    # domain chosen counts, once.
    assert cycles(s) == {"placed": 1, "infeasible": 0, "undecided": 0}
    assert exact.decisions(s.cluster).groups["placed"] == {"default/g"}
    assert len(exact.decisions(s.cluster).seconds) == 1
    assert not s.cluster.overcommitted().any()


def test_a_topology_constrained_gang_placed_exactly_is_counted_once() -> None:
    # No tree: the gang itself asks for one rack. Both racks are tried, each in a trial; the chosen one counts.
    group = MakePodGroup("g").gang(4).topology(RACK).obj()
    s, decisions = run(profile("phalanx"), trap_racks(), [], [group], [pod.obj() for pod in trap()])
    placed = binds(decisions)
    assert placed["g-xl"] == "n0" and sorted(placed.values()) == ["n0", "n0", "n1", "n1"]
    assert cycles(s) == {"placed": 1, "infeasible": 0, "undecided": 0}
    assert exact.decisions(s.cluster).groups["placed"] == {"default/g"}


def test_a_tree_binds_whole_with_an_exact_leaf_next_to_a_greedy_one() -> None:
    # Rack r1 has a third node for leaf h; the root needs both leaves, in one rack.
    nodes = [*trap_racks(), node("n2", 2, 2, "r1")]
    composites = [MakeCompositePodGroup("job").gang(2).topology(RACK).obj()]
    groups = [MakePodGroup("g").gang(4).parent("job").obj(), MakePodGroup("h").gang(1).parent("job").obj()]
    pods = [*(pod.obj() for pod in trap()), member("h-0", 2, 2, "h").obj()]
    _, decisions = run(profile("gang"), nodes, composites, groups, pods)
    assert binds(decisions) == {}
    s, decisions = run(profile("phalanx"), nodes, composites, groups, pods)
    placed = binds(decisions)
    assert len(placed) == 5 and placed["h-0"] == "n2" and placed["g-xl"] == "n0"
    assert conditions(decisions) == {"g": (True, "Scheduled"), "h": (True, "Scheduled")}
    assert cycles(s) == {"placed": 1, "infeasible": 0, "undecided": 0}  # h needed no exact placement


def test_a_leaf_placed_exactly_under_a_failed_tree_is_not_counted_as_placed() -> None:
    # Leaf g fits exactly in r1, leaf h (one 100-cpu member) nowhere: the root (minGroupCount 2) fails,
    # nothing binds, and only the proofs of infeasibility count: h's own and that of both leaves together.
    composites = [MakeCompositePodGroup("job").gang(2).obj()]
    groups = [MakePodGroup("g").gang(4).parent("job").obj(), MakePodGroup("h").gang(1).parent("job").obj()]
    pods = [*(pod.obj() for pod in trap()), member("h-0", 100, 1, "h").obj()]
    s, decisions = run(profile("phalanx"), trap_racks()[:2], composites, groups, pods)
    assert binds(decisions) == {}
    assert conditions(decisions) == {"g": (False, "Unschedulable"), "h": (False, "Unschedulable")}
    assert cycles(s) == {"placed": 0, "infeasible": 2, "undecided": 0}
    assert exact.decisions(s.cluster).groups["infeasible"] == {"default/h", "default/job"}
    [h] = [d for d in decisions if isinstance(d, GroupCondition) and d.group.name == "h"]
    assert "Exact placement: no placement of 1 more pod(s) exists" in h.message
    assert s.cluster.requested.sum() == 0


def test_a_preemption_dry_run_is_not_counted() -> None:
    # A low pod fills n1: in the real cycle the leaf is proven infeasible in both racks (counted once); the
    # preemption's dry run places it exactly without the victim (not counted), and it binds once the victim
    # is gone.
    s = Scheduler(profile("phalanx"), [n.obj() for n in trap_racks()])
    s.add_pod(MakePod("run").req(cpu="6", memory="6Gi").obj(), 0.0, node="n1")
    s.add_composite_pod_group(MakeCompositePodGroup("job").gang(1).topology(RACK).priority(HIGH).obj(), 1.0)
    s.add_pod_group(MakePodGroup("g").gang(4).parent("job").priority(HIGH).obj(), 1.0)
    for pod in trap(priority=HIGH):
        s.add_pod(pod.obj(), 1.0)
    decisions = s.schedule(1.0)
    assert binds(decisions) == {}
    [preemption] = [d for d in decisions if isinstance(d, Preemption)]
    assert list(preemption.victims) == ["default/run"]
    nominated = {d.pod.name: d.node for d in decisions if isinstance(d, Nominate)}
    assert nominated["g-xl"] == "n0" and sorted(nominated.values()) == ["n0", "n0", "n1", "n1"]
    assert cycles(s) == {"placed": 0, "infeasible": 1, "undecided": 0}
    s.delete_pod("default/run", 30.0)
    placed = binds(s.schedule(30.0))
    assert placed["g-xl"] == "n0" and sorted(placed.values()) == ["n0", "n0", "n1", "n1"]
    assert cycles(s)["infeasible"] == 1 and cycles(s)["placed"] <= 1


def test_the_report_counts_a_leaf_placed_exactly_once() -> None:
    def items() -> list[MakeNode | MakeCompositePodGroup | MakePodGroup | MakePod]:
        return [*trap_racks(), MakeCompositePodGroup("job").gang(1).topology(RACK),
                MakePodGroup("g").gang(4).parent("job"), *trap()]

    ours = build_report(Simulation(inputs_of(*items()), profile("phalanx")).run())
    assert ours["exactPlacement"]["placed"] == 1
    assert ours["exactPlacement"]["cycles"] == {"placed": 1, "infeasible": 0, "undecided": 0}
    assert ours["summary"]["podGroups"]["scheduled"] == 1
    theirs = build_report(Simulation(inputs_of(*items()), profile("gang")).run())
    assert "exactPlacement" not in theirs and theirs["summary"]["podGroups"]["scheduled"] == 0


# --- the composite's leaves placed together --------------------------------------------------------------

def two_leaves(a_pods: int = 1, a_min: int = 1, b_cpu: int = 8) -> tuple[list[CompositePodGroup], list[PodGroup],
                                                                       list[Pod]]:
    """A root over racks needing both leaves: a (`a_pods` 4-cpu pods, minCount `a_min`) and b (one pod of
    `b_cpu`). Each leaf fits r1 (n0: 8 cpu, n1: 4 cpu) alone; in turn, a takes n0 (the emptier node after it)
    and b finds no room, however exactly it is placed."""
    composites = [MakeCompositePodGroup("job").gang(2).topology(RACK).obj()]
    groups = [MakePodGroup("a").gang(a_min).parent("job").obj(), MakePodGroup("b").gang(1).parent("job").obj()]
    pods = [*(member(f"a-{i}", 4, 1, "a").obj() for i in range(a_pods)), member("b-0", b_cpu, 1, "b").obj()]
    return composites, groups, pods


def pair_racks() -> list[MakeNode]:
    return [node("n0", 8, 16, "r1"), node("n1", 4, 16, "r1"), node("m0", 2, 16, "r2")]


def test_leaves_that_fail_in_turn_are_placed_together() -> None:
    _, decisions = run(profile("gang"), pair_racks(), *two_leaves())
    assert binds(decisions) == {}
    s, decisions = run(profile("phalanx"), pair_racks(), *two_leaves())
    assert binds(decisions) == {"a-0": "n1", "b-0": "n0"}
    assert conditions(decisions) == {"a": (True, "Scheduled"), "b": (True, "Scheduled")}
    # One decision for the composite (b's own proof of infeasibility in the failed turn is replaced by it).
    assert cycles(s) == {"placed": 1, "infeasible": 0, "undecided": 0}
    assert exact.decisions(s.cluster).groups["placed"] == {"default/job"}
    assert not s.cluster.overcommitted().any()


def test_a_leaf_s_pods_beyond_its_min_count_wait_for_a_later_cycle() -> None:
    s, decisions = run(profile("phalanx"), pair_racks(), *two_leaves(a_pods=2))
    assert binds(decisions) == {"a-0": "n1", "b-0": "n0"}
    assert "exact placement of composite pod group default/job" in (s.pod_message("default/a-1") or "")


def test_leaves_that_do_not_fit_together_are_proven_infeasible() -> None:
    s, decisions = run(profile("phalanx"), pair_racks(), *two_leaves(a_pods=2, a_min=2))
    assert binds(decisions) == {}
    message = ("Exact placement: no placement of its leaves' 3 pod(s) together exists on the nodes their "
               "filters allow.")
    assert (s.pod_message("default/a-0") or "").endswith(message)  # a took its parent's failure
    # b's own verdict in r1 and the composite's, each once (r2, tried too, adds nothing).
    assert cycles(s) == {"placed": 0, "infeasible": 2, "undecided": 0}
    assert exact.decisions(s.cluster).groups["infeasible"] == {"default/b", "default/job"}
    assert s.cluster.requested.sum() == 0


def test_no_joint_placement_when_the_composite_does_not_need_every_child() -> None:
    composites = [MakeCompositePodGroup("job").gang(2).topology(RACK).obj()]
    groups = [MakePodGroup("a").gang(1).parent("job").obj(), MakePodGroup("b").gang(1).parent("job").obj(),
              MakePodGroup("c").gang(1).parent("job").obj()]
    pods = [member("a-0", 4, 1, "a").obj(), member("b-0", 8, 1, "b").obj(), member("c-0", 8, 1, "c").obj()]
    s, decisions = run(profile("phalanx"), pair_racks(), composites, groups, pods)
    assert binds(decisions) == {}  # a joint model over a choice of children would not be exact here
    assert exact.decisions(s.cluster).groups["placed"] == set()


def test_leaves_placed_together_in_a_preemption_dry_run_are_nominated_not_counted() -> None:
    s = Scheduler(profile("phalanx"), [n.obj() for n in pair_racks()])
    s.add_pod(MakePod("run").req(cpu="4", memory="1Gi").obj(), 0.0, node="n1")
    s.add_composite_pod_group(MakeCompositePodGroup("job").gang(2).topology(RACK).priority(HIGH).obj(), 1.0)
    for name, cpu in (("a", 4), ("b", 8)):
        s.add_pod_group(MakePodGroup(name).gang(1).parent("job").priority(HIGH).obj(), 1.0)
        s.add_pod(member(f"{name}-0", cpu, 1, name, HIGH).obj(), 1.0)
    decisions = s.schedule(1.0)
    assert binds(decisions) == {}
    [preemption] = [d for d in decisions if isinstance(d, Preemption)]
    assert list(preemption.victims) == ["default/run"]
    assert {d.pod.name: d.node for d in decisions if isinstance(d, Nominate)} == {"a-0": "n1", "b-0": "n0"}
    # The real cycle's verdicts only: b alone and both leaves together, infeasible with the low pod there.
    assert cycles(s) == {"placed": 0, "infeasible": 2, "undecided": 0}
    s.delete_pod("default/run", 30.0)
    assert binds(s.schedule(30.0)) == {"a-0": "n1", "b-0": "n0"}

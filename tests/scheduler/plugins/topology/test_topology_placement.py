"""KEP-5732 topology-aware workload scheduling (phalanx/scheduler/plugins/topology/) as kube-scheduler
v1.37.2 runs it with TopologyAwareWorkloadScheduling on: placements per label value, the group algorithm
confined to each, PlacementScore (NodeResourcesFit MostAllocated, PodGroupPodsCount), the best placement,
failure messages, scheduler errors, preemption inside the best placement; and the field's validation."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pytest

from phalanx.api.objects import Node, Pod, PodGroup
from phalanx.errors import InputError
from phalanx.scheduler.decisions import Bind, Decision, Evict, GroupCondition, Unschedulable
from phalanx.scheduler.plugins.node_resources import DEFAULT_RESOURCES, ResourceSpec
from phalanx.scheduler.plugins.topology.placement_scores import fit_score, pods_count_scores
from phalanx.scheduler.plugins.topology.placements import PlacementError, generate_placements
from phalanx.scheduler.plugins.topology.report import constraint_report
from phalanx.scheduler.profiles import Profile, builtin, profile_from_config
from phalanx.scheduler.scheduler import Scheduler
from tests.builders import MakeNode, MakePod, MakePodGroup, MakeWorkload, make_cluster

RACK = "topology.kubernetes.io/rack"
GATES = {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True}


def rack_node(name: str, rack: str | None, cpu: int = 8) -> Node:
    node = MakeNode(name).alloc(cpu=str(cpu), memory="32Gi")
    if rack is not None:
        node.label(RACK, rack)
    return node.obj()


def topology_group(name: str = "train", min_count: int | None = 2, key: str | None = RACK,
                   priority: int | None = None) -> PodGroup:
    builder = MakePodGroup(name).policy(min_count, priority)
    if key is not None:
        builder.doc["spec"]["schedulingConstraints"] = {"topology": [{"key": key}]}
    return builder.obj()


def member(group: str, i: int, cpu: str = "4", priority: int | None = None) -> Pod:
    pod = MakePod(f"{group}-{i}").req(cpu=cpu, memory="1Gi").group(group)
    if priority is not None:
        pod.priority(priority)
    return pod.obj()


def filler(name: str, cpu: str, priority: int | None = None) -> Pod:
    pod = MakePod(name).req(cpu=cpu, memory="1Gi")
    if priority is not None:
        pod.priority(priority)
    return pod.obj()


def tas(tie_break: str = "first", weights: dict[str, int] | None = None) -> Profile:
    profile = Profile("tas", feature_gates=dict(GATES), tie_break=tie_break)
    profile.placement_scores.update(weights or {})
    return profile


def binds(decisions: Sequence[Decision]) -> dict[str, str]:
    return {d.pod.name: d.node for d in decisions if isinstance(d, Bind)}


def messages(decisions: Sequence[Decision]) -> dict[str, str]:
    return {d.pod.name: d.message for d in decisions if isinstance(d, Unschedulable)}


def conditions(decisions: Sequence[Decision]) -> list[tuple[bool, str]]:
    return [(d.status, d.reason) for d in decisions if isinstance(d, GroupCondition)]


def run(nodes: Sequence[Node], group: PodGroup, pods: Sequence[Pod], profile: Profile | None = None,
        running: Sequence[tuple[Pod, str]] = ()) -> tuple[Scheduler, list[Decision]]:
    scheduler = Scheduler(profile or tas(), nodes)
    for pod, node in running:
        scheduler.add_pod(pod, 0.0, node=node)
    scheduler.add_pod_group(group, 0.0)
    for pod in pods:
        scheduler.add_pod(pod, 0.0)
    return scheduler, scheduler.schedule(0.0)


def racks(*spec: tuple[str, str | None, int]) -> list[Node]:
    return [rack_node(name, rack, cpu) for name, rack, cpu in spec]


TWO_RACKS = racks(("a1", "rack-a", 8), ("a2", "rack-a", 8), ("b1", "rack-b", 8), ("b2", "rack-b", 8))


# --- the placement phase, through the Scheduler -----------------------------------------------------------

@pytest.mark.parametrize(("case", "nodes", "running", "members", "min_count", "cpu", "bound", "waiting"), [
    # A gang that fits in one rack lands in one rack (rack-b is fuller: MostAllocated over the rack).
    ("fits in one rack", TWO_RACKS, [("web", "4", "b1")], 2, 2, "4", {"b1": 1, "b2": 1}, 0),
    # Four 6-cpu workers fit the cluster (one per node) but no single rack: the gang waits.
    ("fits only across racks", TWO_RACKS, [], 4, 4, "6", {}, 4),
    # The unlabelled 32-cpu node could hold all four, but is in no placement: three land in rack-a (equal to
    # rack-b, first by name), the fourth waits.
    ("unlabelled node excluded", [*TWO_RACKS, rack_node("x", None, 32)], [("web-a", "4", "a1"), ("web-b", "4", "b1")],
     4, 3, "4", {"a1": 1, "a2": 2}, 1),
])
def test_gang_stays_in_one_domain(case: str, nodes: list[Node], running: list[tuple[str, str, str]], members: int,
                                  min_count: int, cpu: str, bound: dict[str, int], waiting: int) -> None:
    _, decisions = run(nodes, topology_group(min_count=min_count), [member("train", i, cpu) for i in range(members)],
                       running=[(filler(n, c), node) for n, c, node in running])
    assert dict(Counter(binds(decisions).values())) == bound, case
    assert len(messages(decisions)) == waiting, case


def test_a_gang_that_fits_only_across_racks_waits_with_the_placement_message() -> None:
    _, decisions = run(TWO_RACKS, topology_group(min_count=4), [member("train", i, "6") for i in range(4)])
    assert binds(decisions) == {}
    # podGroupSchedulingPlacementAlgorithm reports the first placement's results under its own status, itself
    # carrying errPodGroupUnschedulable: a member that fitted there reads the prefix twice (as v1.37.2 writes it).
    # A member never tried takes the group's status from before the PodGroupPostFilter.
    status = ("pod group is unschedulable, 0/2 placements are available, first placement status: minCount (4) "
              "cannot be satisfied: 2 scheduled, 1 remaining")
    group = f"{status}, pod group preemption: No preemption victims found for incoming preemptor"
    assert messages(decisions) == {
        "train-0": f"pod group is unschedulable, {group}", "train-1": f"pod group is unschedulable, {group}",
        "train-2": "0/2 nodes are available: 2 Insufficient cpu.", "train-3": status}
    assert conditions(decisions) == [(False, "Unschedulable")]


def test_without_the_gate_the_constraint_has_no_effect() -> None:
    _, decisions = run(TWO_RACKS, topology_group(min_count=4), [member("train", i, "6") for i in range(4)],
                       profile=builtin("gang"))
    assert set(binds(decisions).values()) == {"a1", "a2", "b1", "b2"}  # v1.37.2's default: the gate is off


def test_no_labelled_node_means_no_placement() -> None:
    nodes = racks(("x", None, 32))
    _, decisions = run(nodes, topology_group(min_count=1), [member("train", 0)])
    assert binds(decisions) == {}
    assert messages(decisions)["train-0"] == "no feasible placements found"  # RunPlacementGeneratePlugins


def test_a_group_without_the_constraint_uses_every_node() -> None:
    nodes = [*TWO_RACKS, rack_node("x", None, 32)]
    _, decisions = run(nodes, topology_group(min_count=4, key=None), [member("train", i, "8") for i in range(4)])
    assert len(binds(decisions)) == 4


def test_running_members_pin_the_domain() -> None:
    # One member already runs in rack-a; the extra members join rack-a only (rack-b is empty and would score
    # as well), and one that does not fit there waits.
    nodes = TWO_RACKS
    group = topology_group(min_count=1, key=RACK)
    running = [(member("train", 0, "4"), "a1")]
    _, decisions = run(nodes, group, [member("train", i, "4") for i in (1, 2, 3, 4)], running=running)
    assert set(binds(decisions).values()) <= {"a1", "a2"}
    assert len(binds(decisions)) == 3
    assert len(messages(decisions)) == 1


def test_running_members_in_two_domains_are_a_scheduler_error() -> None:
    group = topology_group(min_count=1)
    running = [(member("train", 0), "a1"), (member("train", 1), "b1")]
    _, decisions = run(TWO_RACKS, group, [member("train", 2)], running=running)
    assert binds(decisions) == {}
    assert conditions(decisions) == [(False, "SchedulerError")]
    assert messages(decisions)["train-2"] == (
        "cannot determine domain for already scheduled pods: more than 1 domain found "
        "for pod group: rack-a, rack-b")


def test_a_running_member_on_an_unlabelled_node_is_a_scheduler_error() -> None:
    nodes = [*TWO_RACKS, rack_node("x", None)]
    _, decisions = run(nodes, topology_group(min_count=1), [member("train", 1)], running=[(member("train", 0), "x")])
    assert conditions(decisions) == [(False, "SchedulerError")]
    assert "no topology domain found for pod default/train-0" in messages(decisions)["train-1"]


@pytest.mark.parametrize(("case", "running", "weights", "want"), [
    # Equal pod counts: the fuller rack wins on NodeResourcesFit (MostAllocated).
    ("most allocated", [("web", "2", "b1")], {}, "rack-b"),
    # rack-a seats all three workers, rack-b (6 cpu taken) only two: PodGroupPodsCount prefers rack-a even
    # though rack-b would be fuller.
    ("more pods", [("web", "6", "b1")], {}, "rack-a"),
    # Without PodGroupPodsCount the fuller rack-b wins despite seating fewer pods.
    ("fit only", [("web", "6", "b1")], {"PodGroupPodsCount": 0}, "rack-b"),
    # Nothing tells the racks apart: tieBreak first takes the first by label value.
    ("tie", [], {}, "rack-a"),
])
def test_the_best_scored_placement_is_chosen(case: str, running: list[tuple[str, str, str]],
                                             weights: dict[str, int], want: str) -> None:
    group = topology_group(min_count=2)
    _, decisions = run(TWO_RACKS, group, [member("train", i, "4") for i in range(3)], profile=tas(weights=weights),
                       running=[(filler(n, c), node) for n, c, node in running])
    landed = {node[0] for node in binds(decisions).values()}
    assert landed == {want[-1]}, case


def test_equal_placements_are_chosen_at_random_with_the_seed() -> None:
    seen = set()
    for seed in range(12):
        scheduler = Scheduler(tas(tie_break="random"), TWO_RACKS, seed=seed)
        scheduler.add_pod_group(topology_group(min_count=2), 0.0)
        for i in range(2):
            scheduler.add_pod(member("train", i), 0.0)
        seen |= {node[0] for node in binds(scheduler.schedule(0.0)).values()}
    assert seen == {"a", "b"}


def test_a_basic_group_takes_the_placement_that_seats_most() -> None:
    group = topology_group(min_count=None)
    _, decisions = run(TWO_RACKS, group, [member("train", i, "4") for i in range(4)],
                       running=[(filler("web", "8"), "b1")])
    assert set(binds(decisions).values()) == {"a1", "a2"}
    assert len(binds(decisions)) == 4


def test_preemption_stays_inside_the_best_placement() -> None:
    # With every lower-priority pod gone, rack-a (4 cpu of a high-priority pod on a2) is fuller than rack-b:
    # the gang is placed there and only rack-a's pods are victims. Without the gate it spans a1 and b1.
    def cluster(profile: Profile) -> list[Decision]:
        running = [(filler("low-a1", "8", 0), "a1"), (filler("high-a2", "4", 1000), "a2"),
                   (filler("low-a2", "4", 0), "a2"), (filler("low-b1", "8", 0), "b1"), (filler("low-b2", "8", 0), "b2")]
        _, decisions = run(TWO_RACKS, topology_group(min_count=2, priority=100),
                           [member("train", i, "4", priority=100) for i in range(2)], profile=profile,
                           running=running)
        return decisions
    with_gate = sorted(d.pod.name for d in cluster(tas()) if isinstance(d, Evict))
    assert with_gate == ["low-a1"]
    without = sorted(d.pod.name for d in cluster(Profile("gang", feature_gates={"GenericWorkload": True},
                                                         tie_break="first")) if isinstance(d, Evict))
    assert without == ["low-a1", "low-b1"]


def test_a_nominated_node_outside_the_placement_is_passed_over() -> None:
    # The pod's nominated node a1 is tried first in rack-a's placement only (evaluateNominatedNode); the fuller
    # rack-b wins, and there a1 is not a candidate.
    for nominated, want in (("a1", "b1"), ("b1", "b1"), (None, "b1")):
        scheduler = Scheduler(tas(), TWO_RACKS)
        scheduler.add_pod(filler("web", "6"), 0.0, node="b2")
        scheduler.add_pod_group(topology_group(min_count=1), 0.0)
        if nominated is not None:
            scheduler.nominated["default/train-0"] = nominated
        scheduler.add_pod(member("train", 0), 0.0)
        assert binds(scheduler.schedule(0.0)) == {"train-0": want}


def test_a_confined_cycle_counts_only_the_placement_nodes() -> None:
    scheduler = Scheduler(tas(), TWO_RACKS)
    cycle = scheduler.cycle
    with cycle.confined(np.array([True, True, False, False])):
        result = cycle.schedule(member("train", 0, "9"))
        assert result.message == "0/2 nodes are available: 2 Insufficient cpu."
        assert cycle.schedule(member("train", 1, "4")).node in (0, 1)
    assert cycle.schedule(member("train", 2, "9")).message == "0/4 nodes are available: 4 Insufficient cpu."


# --- the pieces --------------------------------------------------------------------------------------------

def test_placements_are_one_per_label_value_and_pinned_by_bound_members() -> None:
    nodes = [*racks(("b1", "rack-b", 8), ("a1", "rack-a", 8), ("x", None, 8), ("a2", "rack-a", 8))]
    cluster = make_cluster(nodes)
    domains = generate_placements(cluster, RACK, [])
    assert [(d.name, d.nodes.tolist()) for d in domains] == [
        ("rack-a", [False, True, False, True]), ("rack-b", [True, False, False, False])]
    assert [d.name for d in generate_placements(cluster, RACK, [("default/m", 3)])] == ["rack-a"]
    assert generate_placements(cluster, "no-such-label", []) == []
    with pytest.raises(PlacementError, match="no topology domain found for pod default/m"):
        generate_placements(cluster, RACK, [("default/m", 2)])
    with pytest.raises(PlacementError, match="more than 1 domain found for pod group: rack-b, rack-a"):
        generate_placements(cluster, RACK, [("default/m", 0), ("default/n", 1)])


@pytest.mark.parametrize(("case", "placed", "resources", "nodes", "want"), [
    # cpu (4 + 8)·100/16 = 75, memory (1Gi + 2Gi of 64Gi)·100/64Gi = 4; (75 + 4) / 2 = 39.
    ("cpu and memory", ["4", "4"], DEFAULT_RESOURCES, [True, True, False], 39),
    # Weights: (75·3 + 4·1) / 4 = 57.
    ("weighted", ["4", "4"], (ResourceSpec("cpu", 3), ResourceSpec("memory", 1)), [True, True, False], 57),
    # More than the placement holds is scored as full.
    ("clamped", ["16", "16"], (ResourceSpec("cpu", 1),), [True, True, False], 100),
    # An extended resource the placed pods do not ask for, and `pods`, are left out.
    ("extended left out", ["4", "4"], (ResourceSpec("cpu", 1), ResourceSpec("example.com/gpu", 5),
                                       ResourceSpec("pods", 5)), [True, True, False], 75),
    # A placement of the one node: (4 + 8)·100/8 clamped = 100 cpu; memory (1 + 2)·100/32 = 9.
    ("one node", ["4", "4"], DEFAULT_RESOURCES, [True, False, False], 54),
])
def test_node_resources_fit_placement_score(case: str, placed: list[str], resources: Sequence[ResourceSpec],
                                            nodes: list[bool], want: int) -> None:
    cluster = make_cluster([MakeNode("a").alloc(cpu="8", memory="32Gi"), MakeNode("b").alloc(cpu="8", memory="32Gi"),
                            MakeNode("c").alloc(cpu="8", memory="32Gi")],
                           running=[(MakePod("web").req(cpu="4", memory="1Gi"), "a")])
    pods = [MakePod(f"p{i}").req(cpu=cpu, memory="1Gi").obj() for i, cpu in enumerate(placed)]
    assert fit_score(cluster, np.array(nodes), pods, resources) == want, case


def test_pods_count_scores_are_normalised_to_the_largest() -> None:
    assert pods_count_scores([3, 2, 4]) == [75, 50, 100]


# --- the field ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("constraints", "error"), [
    ({"topology": [{"key": RACK}]}, None),
    ({"topology": []}, None),
    ({}, None),
    ({"topology": [{"key": RACK}, {"key": "zone"}]}, "spec.schedulingConstraints.topology: must have at most 1 item"),
    ({"topology": [{}]}, "spec.schedulingConstraints.topology[0].key: is required"),
    ({"topology": [{"key": "Rack A"}]}, "spec.schedulingConstraints.topology[0].key: invalid label key 'Rack A'"),
    ({"topology": [{"key": "Example.com/rack"}]}, "the prefix before '/' must be a lowercase DNS subdomain"),
    ({"topology": [{"key": "x" * 64}]}, "the name must be at most 63 characters"),
    ({"topology": {"key": RACK}}, "spec.schedulingConstraints.topology: must be a list"),
])
def test_the_topology_field_is_validated(constraints: dict[str, object], error: str | None) -> None:
    builder = MakePodGroup("g").gang(2)
    builder.doc["spec"]["schedulingConstraints"] = constraints
    if error is None:
        assert builder.obj().topology_key == (RACK if constraints.get("topology") else None)
        return
    with pytest.raises(InputError) as raised:
        builder.obj()
    assert error in f"{raised.value.field}: {raised.value.detail}"


def test_workload_templates_carry_and_validate_the_topology_key() -> None:
    builder = MakeWorkload("wl").template("workers", gang=2)
    builder.doc["spec"]["podGroupTemplates"][0]["schedulingConstraints"] = {"topology": [{"key": RACK}]}
    assert builder.obj().templates["workers"].topology_key == RACK
    builder.doc["spec"]["podGroupTemplates"][0]["schedulingConstraints"] = {"topology": [{"key": ""}]}
    with pytest.raises(InputError) as raised:
        builder.obj()
    assert raised.value.field == "spec.podGroupTemplates[0].schedulingConstraints.topology[0].key"


# --- the profile -------------------------------------------------------------------------------------------

def test_the_gate_is_off_in_the_built_in_profiles_and_needs_generic_workload() -> None:
    assert not builtin("gang").topology_aware  # alpha, off by default in v1.37.2
    assert not Profile("p", feature_gates={"TopologyAwareWorkloadScheduling": True}).topology_aware
    assert tas().topology_aware


def test_placement_score_weights_come_from_the_profile_file() -> None:
    doc = {"featureGates": GATES, "profiles": [{"schedulerName": "p", "plugins": {"placementScore": {
        "enabled": [{"name": "NodeResourcesFit", "weight": 3}], "disabled": [{"name": "PodGroupPodsCount"}]}}}]}
    assert profile_from_config(doc, "p.yaml").placement_scores == {"NodeResourcesFit": 3}
    doc["profiles"][0]["plugins"]["placementScore"] = {"enabled": [{"name": "Nope"}]}  # type: ignore[index]
    with pytest.raises(InputError, match="unknown placement score plugin 'Nope'"):
        profile_from_config(doc, "p.yaml")


@pytest.mark.parametrize(("placement_phase", "gang", "note"), [
    (True, True, None),
    (False, True, "has no effect: TopologyAwareWorkloadScheduling is off"),
    (False, False, "has no effect: GenericWorkload is off"),
])
def test_the_report_says_when_the_constraint_has_no_effect(placement_phase: bool, gang: bool,
                                                           note: str | None) -> None:
    groups = [topology_group("a"), topology_group("b", key=None), topology_group("c")]
    report = constraint_report(groups, placement_phase=placement_phase, gang=gang)
    assert report is not None and report["podGroups"] == 2 and report["placementPhase"] == placement_phase
    if note is None:
        assert report["notes"] == []
    else:
        assert report["notes"][0].startswith("schedulingConstraints.topology of 2 PodGroup(s) (default/a, default/c)")
        assert note in report["notes"][0]
    assert constraint_report([topology_group("b", key=None)], placement_phase=False, gang=True) is None

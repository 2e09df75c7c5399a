"""The pod scheduling cycle: Filter in plugin order, the `0/N nodes are available` message, how many
nodes are scored (percentageOfNodesToScore), weighted scores, tie-breaking."""

import dataclasses
from collections import Counter

import numpy as np
import pytest

from phalanx.api.objects import Taint
from phalanx.scheduler.cycle import PodCycle, num_feasible_nodes_to_find
from phalanx.scheduler.framework import Code, default_normalize, fit_error
from phalanx.scheduler.profiles import Profile, builtin
from tests.builders import MakeNode, MakePod, expr, make_cluster


def schedule(nodes: list[MakeNode], pod: MakePod, profile: Profile | None = None,
             running: list[tuple[MakePod, str]] | None = None) -> tuple[str | None, str | None]:
    cluster = make_cluster(nodes, running or [])
    result = PodCycle(profile or builtin("default"), cluster).schedule(pod.obj())
    return (None if result.node is None else cluster.names[result.node]), result.message


# --- the failure message ---

def test_the_issue_example() -> None:
    nodes = [MakeNode("a").alloc(cpu="2"), MakeNode("b").alloc(cpu="2"),
             MakeNode("gpu-1").alloc(cpu="2").taint("gpu", "true"),
             MakeNode("gpu-2").alloc(cpu="64").taint("gpu", "true")]
    node, message = schedule(nodes, MakePod().req(cpu="4"))
    assert node is None
    # gpu-1 also lacks cpu, but a node reports only its first failing plugin (TaintToleration before Fit).
    assert message == "0/4 nodes are available: 2 Insufficient cpu, 2 node(s) had untolerated taint(s)."


def test_only_the_first_failing_plugin_counts_per_node() -> None:
    bad_everything = (MakeNode("cordoned").alloc(cpu="1").unschedulable().taint("gpu", "true").label("zone", "x"))
    tainted_elsewhere = MakeNode("tainted").alloc(cpu="1").taint("gpu", "true").label("zone", "x")
    wrong_zone_small = MakeNode("wrong-zone").alloc(cpu="1").label("zone", "x")
    small = MakeNode("small").alloc(cpu="1", memory="1Gi").label("zone", "y")
    pod = MakePod().req(cpu="2", memory="2Gi").node_selector(zone="y")
    node, message = schedule([bad_everything, tainted_elsewhere, wrong_zone_small, small], pod)
    assert node is None
    assert message == ("0/4 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
                       "1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint(s), "
                       "1 node(s) were unschedulable.")


def test_reasons_sort_as_strings() -> None:
    nodes = [MakeNode(f"small-{i}").alloc(cpu="1") for i in range(10)]
    nodes += [MakeNode(f"gpu-{i}").alloc(cpu="8").taint("gpu", "true") for i in range(2)]
    _, message = schedule(nodes, MakePod().req(cpu="2"))
    # "10 …" sorts before "2 …" as kube-scheduler's sort.Strings does
    assert message == "0/12 nodes are available: 10 Insufficient cpu, 2 node(s) had untolerated taint(s)."


def test_fit_error_format() -> None:
    assert fit_error(3, Counter({"Insufficient memory": 1, "Insufficient cpu": 2})) == \
        "0/3 nodes are available: 1 Insufficient memory, 2 Insufficient cpu."


def test_no_nodes_at_all() -> None:
    node, message = schedule([], MakePod().req(cpu="1"))
    assert node is None and message is not None and message.startswith("0/0 nodes are available")


def test_unresolvable_nodes_are_told_apart_for_preemption() -> None:
    cluster = make_cluster([MakeNode("tainted").alloc(cpu="8").taint("gpu", "true"), MakeNode("small").alloc(cpu="1")])
    result = PodCycle(builtin("default"), cluster).schedule(MakePod().req(cpu="2").obj())
    assert result.unresolvable is not None
    assert result.unresolvable.tolist() == [True, False]  # a taint cannot be fixed by evicting pods


KUBE_FILTER_ORDER = ["NodeName", "NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodeResourcesFit"]


def test_filter_plugins_run_in_kube_scheduler_order_with_their_codes() -> None:
    cycle = PodCycle(builtin("default"), make_cluster([]))
    codes = {f.name: f.code for f in cycle.filters}
    assert [name for name in codes if name in KUBE_FILTER_ORDER] == KUBE_FILTER_ORDER
    assert codes["NodeResourcesFit"] is Code.UNSCHEDULABLE  # evicting pods can make room
    for name in KUBE_FILTER_ORDER[:-1]:                       # evicting pods cannot change a node's labels
        assert codes[name] is Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# --- scoring ---

def test_default_normalize() -> None:
    assert default_normalize(np.array([0, 1, 3]), reverse=False).tolist() == [0, 33, 100]
    assert default_normalize(np.array([0, 1, 3]), reverse=True).tolist() == [100, 67, 0]
    assert default_normalize(np.array([0, 0]), reverse=True).tolist() == [100, 100]
    assert default_normalize(np.array([0, 0]), reverse=False).tolist() == [0, 0]


def test_default_weights_prefer_an_untainted_node_over_a_less_loaded_one() -> None:
    # TaintToleration (weight 3) outweighs NodeResourcesFit + BalancedAllocation (weight 1 each).
    nodes = [MakeNode("busy").alloc(cpu="16", memory="64Gi"),
             MakeNode("spot").alloc(cpu="16", memory="64Gi").taint("spot", "true", "PreferNoSchedule")]
    node, _ = schedule(nodes, MakePod().req(cpu="1", memory="1Gi"),
                       running=[(MakePod("x").req(cpu="8", memory="32Gi"), "busy")])
    assert node == "busy"


def test_least_allocated_spreads_and_most_allocated_packs() -> None:
    nodes = [MakeNode("a").alloc(cpu="16", memory="64Gi"), MakeNode("b").alloc(cpu="16", memory="64Gi")]
    running = [(MakePod("x").req(cpu="8", memory="32Gi"), "a")]
    pod = MakePod().req(cpu="1", memory="4Gi")
    assert schedule(nodes, pod, running=running)[0] == "b"
    packing = builtin("default")
    packing.plugin_args["NodeResourcesFit"] = {"scoringStrategy": {"type": "MostAllocated"}}
    assert schedule(nodes, pod, packing, running=running)[0] == "a"


def test_preferred_affinity_weighs_in() -> None:
    nodes = [MakeNode("a").alloc(cpu="4").label("zone", "x"), MakeNode("b").alloc(cpu="4").label("zone", "y")]
    assert schedule(nodes, MakePod().req(cpu="1").preferred(50, expr("zone", "In", "y")))[0] == "b"
    assert schedule(nodes, MakePod().req(cpu="1").preferred(50, expr("zone", "In", "x")))[0] == "a"


def test_ties_break_by_lowest_index_or_a_seeded_draw() -> None:
    nodes = [MakeNode(f"n{i}").alloc(cpu="4") for i in range(8)]
    first = builtin("default")
    first.tie_break = "first"
    assert schedule(nodes, MakePod().req(cpu="1"), first)[0] == "n0"

    def draws(seed: int) -> list[int | None]:
        cluster = make_cluster(nodes)
        cycle = PodCycle(builtin("default"), cluster, seed=seed)
        return [cycle.schedule(MakePod(f"p{i}").req(cpu="1").obj()).node for i in range(6)]

    assert draws(7) == draws(7)
    assert len({tuple(draws(s)) for s in range(5)}) > 1  # the seed matters


# --- how many nodes are looked at ---

@pytest.mark.parametrize(("percentage", "nodes", "expected"), [
    (0, 50, 50),        # fewer than 100 nodes: all of them
    (0, 99, 99),
    (0, 100, 100),      # adaptive 50% of 100 = 50 → raised to the 100 minimum
    (0, 250, 120),      # 50 - 250/125 = 48% → 250·48/100 = 120
    (0, 1000, 420),     # 50 - 8 = 42%
    (0, 5000, 500),     # 50 - 40 = 10%
    (0, 6000, 300),     # 50 - 48 = 2% → 5% minimum
    (0, 10000, 500),    # 50 - 80 < 5 → 5%
    (10, 500, 100),     # 50 nodes → 100 minimum
    (10, 5000, 500),
    (30, 1000, 300),
    (100, 5000, 5000),
    (50, 99, 99),
])
def test_num_feasible_nodes_to_find(percentage: int, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_percentage_of_nodes_to_score_limits_the_candidates_and_rotates() -> None:
    # 200 nodes: a pod is scored against the first 100 feasible nodes from a rotating start.
    nodes = [MakeNode(f"n{i:03}").alloc(cpu="4", memory="16Gi") for i in range(200)]
    nodes[50] = MakeNode("n050").alloc(cpu="32", memory="128Gi")
    nodes[150] = MakeNode("n150").alloc(cpu="64", memory="256Gi")
    cluster = make_cluster(nodes)
    profile = builtin("default")
    profile.percentage_of_nodes_to_score = 50
    cycle = PodCycle(profile, cluster)
    first = cycle.schedule(MakePod("p1").req(cpu="1").obj())
    assert first.node == 50            # n150 is best overall but not among the first 100
    assert cycle.next_start == 100
    second = cycle.schedule(MakePod("p2").req(cpu="1").obj())
    assert second.node == 150
    assert cycle.next_start == 0
    # With 100% every node is scored and n150 wins at once.
    profile.percentage_of_nodes_to_score = 100
    assert PodCycle(profile, make_cluster(nodes)).schedule(MakePod("p").req(cpu="1").obj()).node == 150


def test_infeasible_nodes_do_not_use_up_the_quota() -> None:
    nodes = [MakeNode(f"n{i:03}").alloc(cpu="4") for i in range(200)]
    for i in range(0, 120):
        nodes[i] = MakeNode(f"n{i:03}").alloc(cpu="4").taint("gpu", "true")
    nodes[199] = MakeNode("n199").alloc(cpu="64")
    profile = builtin("default")
    profile.percentage_of_nodes_to_score = 50
    # 80 feasible nodes < 100 to find: all of them are scored, n199 included.
    assert schedule(nodes, MakePod().req(cpu="1"), profile)[0] == "n199"


def test_static_masks_follow_node_changes() -> None:
    cluster = make_cluster([MakeNode("a").alloc(cpu="4"), MakeNode("b").alloc(cpu="4")])
    cycle = PodCycle(builtin("default"), cluster)
    pod = MakePod().req(cpu="1").obj()
    assert cycle.feasible(cycle.cycle_state(pod)).tolist() == [True, True]
    cluster.set_unschedulable(0, True)
    assert cycle.feasible(cycle.cycle_state(pod)).tolist() == [False, True]
    cluster.set_taints(1, (Taint("gpu", "true", "NoSchedule"),))
    assert cycle.feasible(cycle.cycle_state(pod)).tolist() == [False, False]
    tolerates_all = MakePod().req(cpu="1").toleration(operator="Exists").obj()
    cordon_tolerant = dataclasses.replace(pod, placement=tolerates_all.placement)
    assert cycle.feasible(cycle.cycle_state(cordon_tolerant)).tolist() == [True, True]

"""The cluster-autoscaler model (phalanx/autoscale/cluster_autoscaler.py).

Expectations restate kubernetes/autoscaler `cluster-autoscaler/FAQ.md` (sections "How does scale-up work?",
"How does scale-down work?", "What types of pods can prevent CA from removing a node?", "What are the
parameters to CA?", "What are Expanders?"), as each test's docstring names.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phalanx.api.objects import Node, Pod, PodGroup, Source
from phalanx.autoscale.cluster_autoscaler import (
    ClusterAutoscaler,
    NodeRecord,
    cost,
    estimate_nodes,
    idle_node_hours,
    node_hours,
    nodes_added,
)
from phalanx.autoscale.nodegroups import (
    COST_ANNOTATION,
    MAX_SIZE_ANNOTATION,
    MIN_SIZE_ANNOTATION,
    NODE_GROUP_ANNOTATION,
    NodeGroup,
    parse_node_group,
)
from tests.builders import MakeNode, MakePod, MakePodGroup

GI = 1024**3
Row = tuple[Node, dict[str, float], list[Pod]]  # a node, its utilization per resource, its pods


def make_group(name: str, cpu: int, memory_gi: int, *, min_size: int = 0, max_size: int = 100,
               taint: str | None = None, label: tuple[str, str] | None = None, cost_per_hour: str = "0") -> NodeGroup:
    node = MakeNode(f"tpl-{name}").alloc(cpu=str(cpu), memory=f"{memory_gi}Gi")
    node.annotation(NODE_GROUP_ANNOTATION, name).annotation(MIN_SIZE_ANNOTATION, str(min_size))
    node.annotation(MAX_SIZE_ANNOTATION, str(max_size)).annotation(COST_ANNOTATION, cost_per_hour)
    if taint:
        node.taint(taint, "true")
    if label:
        node.label(*label)
    group = parse_node_group(node.manifest(), Source("groups.yaml", 0))
    assert group is not None
    return group


def pod(name: str, cpu: int, memory_gi: int = 1, *, group: str | None = None, controller: str | None = "Job",
        builder: MakePod | None = None) -> Pod:
    made = (builder or MakePod()).name(name).req(cpu=str(cpu), memory=f"{memory_gi}Gi")
    if group:
        made.group(group)
    obj = made.obj()
    obj.controller = controller
    return obj


def gang(name: str, min_count: int) -> PodGroup:
    return MakePodGroup(name).gang(min_count).obj()


# --- estimator ---------------------------------------------------------------------------------------------

def test_autoscaler_binpacking_estimator_ten_pods_of_3_cpu_on_8_cpu_nodes() -> None:
    """FAQ "How does scale-up work?": CA estimates the nodes a group needs by bin packing the pending pods
    onto template nodes (`--estimator=binpacking`, the only estimator). Two 3-cpu pods fit an 8-cpu node."""
    demands = np.array([[3000, GI, 1]] * 10, dtype=np.int64)
    nodes, placed = estimate_nodes(demands, np.array([8000, 32 * GI, 110], dtype=np.int64))
    assert nodes == 5 and placed.all()
    ca = ClusterAutoscaler([make_group("cpu", 8, 32)])
    [decision] = ca.scale_up([pod(f"p{i}", 3) for i in range(10)], {})
    assert (decision.group, decision.count, len(decision.pods)) == ("cpu", 5, 10)


def test_autoscaler_estimator_is_first_fit_decreasing() -> None:
    """The binpacking estimator sorts pods largest first, then puts each on the first node with room:
    5+3 and 5+3 cpu on two 8-cpu nodes, whatever the order the pods came in."""
    ca = ClusterAutoscaler([make_group("cpu", 8, 32)])
    [decision] = ca.scale_up([pod("a", 3), pod("b", 5), pod("c", 3), pod("d", 5)], {})
    assert decision.count == 2
    demands = np.array([[5000], [5000], [3000], [3000]], dtype=np.int64)
    assert estimate_nodes(demands, np.array([8000], dtype=np.int64), limit=1)[1].tolist() == [True, False, True,
                                                                                             False]


def test_autoscaler_pod_counts_as_a_resource() -> None:
    """A node's `pods` allocatable (110 by default) bounds the estimate as any resource does."""
    group = make_group("cpu", 64, 256)
    group.template.allocatable["pods"] = 4
    [decision] = ClusterAutoscaler([group]).scale_up([pod(f"p{i}", 1) for i in range(10)], {})
    assert decision.count == 3


# --- expanders ---------------------------------------------------------------------------------------------

def test_autoscaler_least_waste_picks_the_group_leaving_least_idle() -> None:
    """FAQ "What are Expanders?": `least-waste` picks the node group that leaves the least idle cpu (then
    memory) after the scale-up. 3-cpu/3Gi pods leave a quarter of an 8-cpu/8Gi node idle and none of a
    6-cpu/6Gi node."""
    groups = [make_group("big", 8, 8), make_group("snug", 6, 6)]
    pods = [pod(f"p{i}", 3, 3) for i in range(10)]
    [decision] = ClusterAutoscaler(groups).scale_up(pods, {})
    assert (decision.group, decision.count) == ("snug", 5)
    assert "least-waste" in decision.reason


def test_autoscaler_most_pods_and_least_waste_differ_when_a_group_is_capped() -> None:
    """FAQ "What are Expanders?": `most-pods` picks the group that schedules the most pending pods;
    `least-waste` still prefers the snug group even when its max-size lets it take only some."""
    groups = [make_group("big", 8, 8), make_group("snug", 6, 6, max_size=2)]
    pods = [pod(f"p{i}", 3, 3) for i in range(10)]
    [waste] = ClusterAutoscaler(groups).scale_up(pods, {})
    assert (waste.group, waste.count, len(waste.pods)) == ("snug", 2, 4)
    [most] = ClusterAutoscaler(groups, expander="most-pods").scale_up(pods, {})
    assert (most.group, most.count, len(most.pods)) == ("big", 5, 10)


def test_autoscaler_random_expander_is_seeded() -> None:
    """FAQ "What are Expanders?": `random` picks any group that helps; Phalanx seeds it for determinism."""
    groups = [make_group(f"g{i}", 8, 8) for i in range(5)]
    pods = [pod("p", 3, 3)]
    first = [ClusterAutoscaler(groups, expander="random", seed=7).scale_up(pods, {})[0].group for _ in range(3)]
    again = [ClusterAutoscaler(groups, expander="random", seed=7).scale_up(pods, {})[0].group for _ in range(3)]
    assert first == again


def test_autoscaler_one_group_per_loop_unless_asked() -> None:
    """CA grows one node group per loop; pods only another group fits wait for the next loop."""
    groups = [make_group("cpu", 8, 8), make_group("gpu", 8, 8, taint="gpu", label=("pool", "gpu"))]
    gpu_pod = MakePod().toleration("gpu", "true").node_selector(pool="gpu")
    pods = [pod("plain", 3, 3), pod("trainer", 3, 3, builder=gpu_pod)]
    ca = ClusterAutoscaler(groups)
    assert [(d.group, d.pods) for d in ca.scale_up(pods, {})] == [("cpu", ("default/plain",))]
    assert ca.unhelped == []  # the trainer waits for the next loop: a group can help it
    both = ClusterAutoscaler(groups, groups_per_loop=2).scale_up(pods, {})
    assert [(d.group, d.count) for d in both] == [("cpu", 1), ("gpu", 1)]


# --- template fit and limits ---------------------------------------------------------------------------------

def test_autoscaler_template_taints_and_selectors_are_honoured() -> None:
    """FAQ "How does scale-up work?": CA runs the scheduler's predicates against the group's template node;
    a group whose template a pod does not fit (an untolerated taint, a nodeSelector) is not a candidate."""
    gpu = make_group("gpu", 8, 8, taint="gpu", label=("accelerator", "a100"))
    ca = ClusterAutoscaler([gpu])
    assert ca.scale_up([pod("plain", 1)], {}) == []
    assert [u.reason for u in ca.unhelped] == ["no node group's template fits the pod"]
    tolerant = MakePod().toleration("gpu", "true").node_selector(accelerator="a100")
    assert [d.group for d in ca.scale_up([pod("ok", 1, builder=tolerant)], {})] == ["gpu"]
    wrong = MakePod().toleration("gpu", "true").node_selector(accelerator="h100")
    assert ca.scale_up([pod("no", 1, builder=wrong)], {}) == []


def test_autoscaler_node_group_label_selects_the_group() -> None:
    """Nodes made from a template carry `phalanx.dev/node-group`, so a pod can select its group."""
    groups = [make_group("a", 8, 8), make_group("b", 16, 16)]
    picky = MakePod().node_selector({"phalanx.dev/node-group": "b"})
    [decision] = ClusterAutoscaler(groups).scale_up([pod("p", 3, 3, builder=picky)], {})
    assert decision.group == "b"


def test_autoscaler_pod_larger_than_any_template_is_unhelped() -> None:
    ca = ClusterAutoscaler([make_group("cpu", 8, 8)])
    assert ca.scale_up([pod("huge", 16)], {}) == []
    assert ca.unhelped[0].key == "default/huge"


def test_autoscaler_max_size_caps_the_scale_up() -> None:
    """FAQ "How does scale-up work?": a node group never grows past its max size; CA adds what the limit
    allows. Existing and upcoming nodes count toward the size."""
    ca = ClusterAutoscaler([make_group("cpu", 8, 32, max_size=3)])
    pods = [pod(f"p{i}", 3) for i in range(10)]
    [decision] = ca.scale_up(pods, {})
    assert (decision.count, len(decision.pods)) == (3, 6)
    assert "capped by max-size 3" in decision.reason
    [decision] = ca.scale_up(pods, {}, sizes={"cpu": 2})
    assert decision.count == 1
    assert ca.scale_up(pods, {}, {"cpu": 1}, sizes={"cpu": 2}) == []
    assert all("at max-size" in u.reason for u in ca.unhelped)


# --- gangs -----------------------------------------------------------------------------------------------

def test_autoscaler_pod_mode_adds_nodes_for_part_of_a_gang_gang_mode_adds_none() -> None:
    """CA treats every pending pod on its own (FAQ "How does scale-up work?" speaks of pods only), so when
    max-size is short it adds nodes for part of a gang that still cannot run; gang mode adds a gang's
    minCount at once or nothing, and says why."""
    groups_of_pods = {"default/train": gang("train", 4)}
    members = [pod(f"w{i}", 8, 8, group="train") for i in range(4)]
    group = make_group("cpu", 8, 8, max_size=2)
    [partial] = ClusterAutoscaler([group], mode="pod").scale_up(members, groups_of_pods)
    assert (partial.count, len(partial.pods)) == (2, 2)
    ca = ClusterAutoscaler([group], mode="gang")
    assert ca.scale_up(members, groups_of_pods) == []
    [why] = ca.unhelped
    assert why.key == "default/train"
    assert "cpu needs 4 node(s), max-size 2 leaves 2" in why.reason


def test_autoscaler_gang_mode_adds_the_whole_gang() -> None:
    groups_of_pods = {"default/train": gang("train", 4)}
    members = [pod(f"w{i}", 8, 8, group="train") for i in range(4)]
    [decision] = ClusterAutoscaler([make_group("cpu", 8, 8)], mode="gang").scale_up(members, groups_of_pods)
    assert (decision.count, len(decision.pods)) == (4, 4)
    assert "1 gang(s) whole: default/train" in decision.reason


def test_autoscaler_gang_mode_counts_running_members() -> None:
    """Members already running count toward minCount: two running members of a minCount-4 gang leave two."""
    groups_of_pods = {"default/train": gang("train", 4)}
    members = [pod(f"w{i}", 8, 8, group="train") for i in range(2)]
    ca = ClusterAutoscaler([make_group("cpu", 8, 8, max_size=2)], mode="gang")
    assert ca.scale_up(members, groups_of_pods) == []  # two pending of minCount 4: cannot run yet
    assert ca.unhelped[0].reason == ("gang default/train has 2 pending member(s); 4 must be placed to reach "
                                     "minCount 4")
    [decision] = ca.scale_up(members, groups_of_pods, running_members={"default/train": 2})
    assert decision.count == 2


def test_autoscaler_gang_mode_treats_basic_groups_and_lone_pods_per_pod() -> None:
    groups_of_pods = {"default/web": MakePodGroup("web").basic().obj()}
    pods = [pod("w0", 3, group="web"), pod("w1", 3, group="web"), pod("lone", 3)]
    [decision] = ClusterAutoscaler([make_group("cpu", 8, 32)], mode="gang").scale_up(pods, groups_of_pods)
    assert (decision.count, len(decision.pods)) == (2, 3)


# --- nodes being provisioned ------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["pod", "gang"])
def test_autoscaler_upcoming_nodes_suppress_repeated_scale_up(mode: str) -> None:
    """FAQ "How does scale-up work?": nodes being provisioned are counted (upcoming nodes), so the same pending
    pods do not trigger another scale-up while their nodes boot; only what they cannot hold does."""
    groups_of_pods = {"default/train": gang("train", 4)}
    pods = [pod(f"w{i}", 3, group="train") for i in range(4)] + [pod(f"p{i}", 3) for i in range(6)]
    ca = ClusterAutoscaler([make_group("cpu", 8, 32)], mode=mode)  # type: ignore[arg-type]
    [first] = ca.scale_up(pods, groups_of_pods)
    assert first.count == 5
    assert ca.scale_up(pods, groups_of_pods, {"cpu": 5}) == []
    assert ca.unhelped == []
    [more] = ca.scale_up([*pods, pod("late", 3)], groups_of_pods, {"cpu": 5})
    assert (more.count, more.pods) == (1, ("default/late",))


# --- scale-down ----------------------------------------------------------------------------------------------

def ready(group: NodeGroup, count: int) -> list[Node]:
    return [group.new_node(i) for i in range(count)]


def test_autoscaler_scale_down_after_the_unneeded_time_only() -> None:
    """FAQ "How does scale-down work?": a node is removed once it has been unneeded for 10 minutes
    (`--scale-down-unneeded-time`, default 10m); any moment it is needed resets the clock."""
    group = make_group("cpu", 8, 32)
    a, b = ready(group, 2)
    ca = ClusterAutoscaler([group])
    nodes: list[Row] = [(a, {"cpu": 0.1, "memory": 0.1}, []), (b, {"cpu": 0.9, "memory": 0.9}, [])]
    assert ca.scale_down(nodes, 0.0) == []
    assert ca.scale_down(nodes, 599.0) == []
    assert ca.scale_down(nodes, 600.0) == ["cpu-0"]
    busy: list[Row] = [(a, {"cpu": 0.8, "memory": 0.1}, []), (b, {"cpu": 0.9, "memory": 0.9}, [])]
    assert ca.scale_down(nodes, 700.0) == []
    assert ca.scale_down(busy, 800.0) == []  # needed again: the clock restarts
    assert ca.scale_down(nodes, 900.0) == []
    assert ca.scale_down(nodes, 1499.0) == []
    assert ca.scale_down(nodes, 1500.0) == ["cpu-0"]


def test_autoscaler_scale_down_utilization_threshold() -> None:
    """FAQ "How does scale-down work?": a node is a candidate when the sum of cpu and memory requests of its
    pods is below 50% of allocatable (`--scale-down-utilization-threshold`, default 0.5); the larger of the
    two counts."""
    group = make_group("cpu", 8, 32)
    a, b, c = ready(group, 3)
    nodes = [(a, {}, [pod("half", 4, 1)]), (b, {}, [pod("some", 3, 1)]), (c, {"cpu": 0.1, "memory": 0.6}, [])]
    ca = ClusterAutoscaler([group], scale_down_delay=0)
    assert ca.scale_down(nodes, 0.0) == ["cpu-1"]
    assert ClusterAutoscaler([group], scale_down_delay=0, utilization_threshold=0.7).scale_down(nodes, 0.0) == [
        "cpu-1", "cpu-2"]


def test_autoscaler_scale_down_never_below_min_size() -> None:
    """FAQ "How does scale-down work?" and the node group's min size: CA does not shrink a group below it."""
    group = make_group("cpu", 8, 32, min_size=2)
    nodes: list[Row] = [(n, {"cpu": 0.0, "memory": 0.0}, []) for n in ready(group, 3)]
    ca = ClusterAutoscaler([group], scale_down_delay=0)
    assert ca.scale_down(nodes, 0.0) == ["cpu-0"]
    assert ca.scale_down(nodes[1:], 10.0) == []


def test_autoscaler_scale_down_needs_room_elsewhere_for_the_pods() -> None:
    """FAQ "How does scale-down work?": all pods that would have to move must fit on other nodes; pods of
    earlier removals take their room, so of two 3-cpu nodes only one goes when the other has 4 cpu free."""
    group = make_group("cpu", 8, 32)
    a, b, c = ready(group, 3)
    nodes = [(a, {}, [pod("x", 3)]), (b, {}, [pod("y", 3)]), (c, {"cpu": 0.5, "memory": 0.5}, [pod("z", 4)])]
    assert ClusterAutoscaler([group], scale_down_delay=0).scale_down(nodes, 0.0) == ["cpu-0"]
    tainted = MakeNode("static").alloc(cpu="64", memory="256Gi").taint("dedicated", "db").obj()
    alone = [(a, {}, [pod("x", 3)]), (tainted, {"cpu": 0.0, "memory": 0.0}, [])]
    assert ClusterAutoscaler([group], scale_down_delay=0).scale_down(alone, 0.0) == []


def test_autoscaler_scale_down_pod_rules() -> None:
    """FAQ "What types of pods can prevent CA from removing a node?": DaemonSet pods do not block (they go
    with the node); pods not backed by a controller do. Gang members move like any pod in pod mode (CA does
    not know gangs); gang mode refuses to move them."""
    group = make_group("cpu", 8, 32)
    a, b = ready(group, 2)
    spare: Row = (b, {"cpu": 0.9, "memory": 0.0}, [])
    ds = pod("ds", 1, controller="DaemonSet")
    assert ClusterAutoscaler([group], scale_down_delay=0).scale_down([(a, {}, [ds]), spare], 0.0) == ["cpu-0"]
    bare = pod("bare", 1, controller=None)
    assert ClusterAutoscaler([group], scale_down_delay=0).scale_down([(a, {}, [bare]), spare], 0.0) == []
    assert ClusterAutoscaler([group], scale_down_delay=0, move_bare_pods=True).scale_down(
        [(a, {}, [bare]), spare], 0.0) == ["cpu-0"]
    member = pod("w0", 1, group="train")
    groups_of_pods = {"default/train": gang("train", 2)}
    assert ClusterAutoscaler([group], scale_down_delay=0).scale_down(
        [(a, {}, [member]), spare], 0.0, groups_of_pods) == ["cpu-0"]
    assert ClusterAutoscaler([group], mode="gang", scale_down_delay=0).scale_down(
        [(a, {}, [member]), spare], 0.0, groups_of_pods) == []


def test_autoscaler_scale_down_ignores_nodes_of_no_group() -> None:
    group = make_group("cpu", 8, 32)
    static = MakeNode("static").alloc(cpu="8", memory="32Gi").obj()
    nodes: list[Row] = [(static, {"cpu": 0.0, "memory": 0.0}, [])]
    assert ClusterAutoscaler([group], scale_down_delay=0).scale_down(nodes, 0.0) == []


# --- accounting ----------------------------------------------------------------------------------------------

def test_autoscaler_accounting() -> None:
    groups = {"cpu": make_group("cpu", 8, 32, cost_per_hour="0.5"), "gpu": make_group("gpu", 8, 32,
                                                                                      cost_per_hour="3")}
    records = [NodeRecord("cpu-3", "cpu", added=0.0, removed=3600.0, used=True),
               NodeRecord("cpu-4", "cpu", added=1800.0, used=True),
               NodeRecord("gpu-0", "gpu", added=0.0, removed=1800.0, used=False),
               NodeRecord("gpu-1", "gpu", added=3600.0, used=False)]
    assert nodes_added(records) == {"cpu": 2, "gpu": 2}
    assert node_hours(records, 7200.0) == {"cpu": 2.5, "gpu": 1.5}
    assert cost(groups, records, 7200.0) == {"cpu": 1.25, "gpu": 4.5}
    assert idle_node_hours(records, 7200.0) == 1.5


def test_autoscaler_rejects_unknown_settings() -> None:
    with pytest.raises(ValueError, match="unknown mode"):
        ClusterAutoscaler([], mode="whole")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown expander"):
        ClusterAutoscaler([], expander="price")  # type: ignore[arg-type]
    ca = ClusterAutoscaler([])
    assert ca.scale_up([pod("p", 1)], {}) == []
    assert ca.unhelped[0].reason == "no node groups"


@given(st.lists(st.integers(1, 8), min_size=1, max_size=40), st.integers(0, 12))
@settings(max_examples=60, deadline=None)
def test_autoscaler_estimator_bounds(cpus: list[int], limit: int) -> None:
    """The estimate never passes the limit, never over-fills a node, and with no limit places every pod on
    no more nodes than pods and no fewer than the cpu total needs."""
    demands = np.array([[c * 1000] for c in sorted(cpus, reverse=True)], dtype=np.int64)
    capacity = np.array([8000], dtype=np.int64)
    nodes, placed = estimate_nodes(demands, capacity, limit)
    assert nodes <= limit
    assert int(demands[placed].sum()) <= nodes * 8000
    free_nodes, all_placed = estimate_nodes(demands, capacity)
    assert all_placed.all()
    assert -(-sum(cpus) // 8) <= free_nodes <= len(cpus)

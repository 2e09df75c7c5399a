"""NodeResourcesFit and NodeResourcesBalancedAllocation against kube-scheduler's formulas, by hand.

k/k pkg/scheduler/framework/plugins/noderesources: least_allocated.go, most_allocated.go,
requested_to_capacity_ratio.go, balanced_allocation.go, resource_allocation.go.
"""

from typing import Any

import numpy as np
import pytest

from phalanx.cluster.state import ClusterState
from phalanx.errors import InputError
from phalanx.scheduler.plugins.node_resources import NodeResourcesBalancedAllocation, NodeResourcesFit, _balance
from tests.builders import MakeNode, MakePod, cycle_state, make_cluster

GI = 2**30


def scores(plugin: Any, pod: MakePod, cluster: ClusterState) -> list[int]:
    result = plugin.score(cycle_state(pod, cluster), cluster, np.arange(len(cluster)))
    return [int(s) for s in result]


def two_nodes() -> ClusterState:
    """node-a: 4 cpu, 10Gi, already running 1 cpu / 2Gi.  node-b: 6 cpu, 10Gi, empty."""
    return make_cluster([MakeNode("node-a").alloc(cpu="4", memory="10Gi"),
                         MakeNode("node-b").alloc(cpu="6", memory="10Gi")],
                        running=[(MakePod("db").req(cpu="1", memory="2Gi"), "node-a")])


POD = MakePod("p").req(cpu="1", memory="3Gi")


def fit(strategy: str, resources: list[dict[str, Any]] | None = None, **extra: Any) -> NodeResourcesFit:
    scoring: dict[str, Any] = {"type": strategy, **extra}
    if resources is not None:
        scoring["resources"] = resources
    return NodeResourcesFit({"scoringStrategy": scoring})


# --- LeastAllocated ---

def test_least_allocated_default_weights() -> None:
    # node-a: cpu (4000-2000)·100/4000 = 50, memory (10-5)·100/10 = 50 → (50+50)/2 = 50
    # node-b: cpu (6000-1000)·100/6000 = 83 (integer division), memory (10-3)·100/10 = 70 → 153/2 = 76
    assert scores(NodeResourcesFit(), POD, two_nodes()) == [50, 76]


def test_least_allocated_weights() -> None:
    plugin = fit("LeastAllocated", [{"name": "cpu", "weight": 3}, {"name": "memory", "weight": 1}])
    # node-b: (83·3 + 70·1)/4 = 319/4 = 79
    assert scores(plugin, POD, two_nodes()) == [50, 79]


def test_least_allocated_is_zero_when_the_request_exceeds_capacity() -> None:
    cluster = make_cluster([MakeNode("tiny").alloc(cpu="50m", memory="100Mi")])
    # Pod without requests scores with 100m / 200Mi: more than the node has → 0 for both.
    assert scores(NodeResourcesFit(), MakePod().container(), cluster) == [0]


def test_pods_without_requests_score_with_non_zero_defaults() -> None:
    # 1000m / 1000Mi node already running one best-effort pod (counted as 100m / 200Mi for scoring).
    cluster = make_cluster([MakeNode("n").alloc(cpu="1", memory="1000Mi")], running=[(MakePod().container(), "n")])
    # cpu: requested 100+100 = 200 → (1000-200)·100/1000 = 80; memory 400Mi of 1000Mi → 60 → 70
    assert scores(NodeResourcesFit(), MakePod("p").container(), cluster) == [70]
    # The fit filter still sees zero requests.
    assert int(cluster.requested[0, cluster.column["cpu"]]) == 0


def test_a_pod_requesting_only_memory_scores_cpu_at_100m() -> None:
    cluster = make_cluster([MakeNode("n").alloc(cpu="1", memory="10Gi")])
    # cpu: (1000-100)·100/1000 = 90; memory: (10-5)·100/10 = 50 → 70
    assert scores(NodeResourcesFit(), MakePod("p").req(memory="5Gi"), cluster) == [70]


GPU_NODE = MakeNode("gpu").alloc({"nvidia.com/gpu": 4}, cpu="8", memory="16Gi")
WITH_GPU = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 1}]


def test_extended_resources_count_only_for_pods_that_request_them() -> None:
    cluster = make_cluster([GPU_NODE])
    plugin = fit("LeastAllocated", WITH_GPU)
    # cpu (8-2)/8 → 75, memory (16-4)/16 → 75; the GPU is left out (counting it would give 83).
    assert scores(plugin, MakePod("cpu-only").req(cpu="2", memory="4Gi"), cluster) == [75]
    # With 2 of 4 GPUs: (75 + 75 + 50)/3 = 66
    assert scores(plugin, MakePod("trainer").req({"nvidia.com/gpu": 2}, cpu="2", memory="4Gi"), cluster) == [66]


def test_a_resource_the_node_lacks_is_left_out_of_the_weights() -> None:
    cluster = make_cluster([MakeNode("plain").alloc(cpu="8", memory="16Gi")])
    plugin = fit("LeastAllocated", WITH_GPU)
    assert scores(plugin, MakePod("trainer").req({"nvidia.com/gpu": 1}, cpu="2", memory="4Gi"), cluster) == [75]


# --- MostAllocated ---

def test_most_allocated() -> None:
    # node-a: cpu 2000·100/4000 = 50, memory 50 → 50.  node-b: 1000·100/6000 = 16, memory 30 → 46/2 = 23
    assert scores(fit("MostAllocated"), POD, two_nodes()) == [50, 23]


def test_most_allocated_weights() -> None:
    plugin = fit("MostAllocated", [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 3}])
    # node-b: (16 + 30·3)/4 = 106/4 = 26
    assert scores(plugin, POD, two_nodes()) == [50, 26]


def test_most_allocated_clamps_the_request_to_capacity() -> None:
    cluster = make_cluster([MakeNode("tiny").alloc(cpu="50m", memory="100Mi")])
    assert scores(fit("MostAllocated"), MakePod().container(), cluster) == [100]


# --- RequestedToCapacityRatio ---

def ratio(shape: list[tuple[int, int]], resources: list[dict[str, Any]] | None = None) -> NodeResourcesFit:
    points = [{"utilization": u, "score": s} for u, s in shape]
    return fit("RequestedToCapacityRatio", resources, requestedToCapacityRatio={"shape": points})


def test_requested_to_capacity_ratio_bin_packing_shape() -> None:
    # Shape (0,0)→(100,10): score = utilization (shape scores are ×10). node-a: 50, 50 → 50.
    # node-b: cpu util 1000·100/6000 = 16, memory 30 → (16+30)/2 = 23
    assert scores(ratio([(0, 0), (100, 10)]), POD, two_nodes()) == [50, 23]


def test_requested_to_capacity_ratio_rounds_the_mean() -> None:
    cluster = make_cluster([MakeNode("n").alloc(cpu="100", memory="10Gi")])
    # cpu util 35, memory util 50 → 85/2 = 42.5 → math.Round → 43 (LeastAllocated-style division would give 42)
    assert scores(ratio([(0, 0), (100, 10)]), MakePod().req(cpu="35", memory="5Gi"), cluster) == [43]


def test_requested_to_capacity_ratio_leaves_zero_scores_out_of_the_weights() -> None:
    cluster = make_cluster([MakeNode("n").alloc(cpu="1000", memory="10Gi")])
    # cpu util 1·100/1000 = 0 → score 0, not counted; memory util 50 → 50. Mean over memory alone: 50.
    assert scores(ratio([(0, 0), (100, 10)]), MakePod().req(cpu="1", memory="5Gi"), cluster) == [50]


def test_requested_to_capacity_ratio_interpolates_between_points() -> None:
    shape = [(0, 0), (50, 2), (100, 10)]
    cluster = make_cluster([MakeNode("n").alloc(cpu="100", memory="100Gi")])
    plugin = ratio(shape, [{"name": "cpu", "weight": 1}])
    # util 25: 0 + (20-0)·25/50 = 10.  util 75: 20 + (100-20)·25/50 = 60.  util 100: 100.
    assert scores(plugin, MakePod().req(cpu="25"), cluster) == [10]
    assert scores(plugin, MakePod().req(cpu="75"), cluster) == [60]
    assert scores(plugin, MakePod().req(cpu="100"), cluster) == [100]


def test_requested_to_capacity_ratio_decreasing_shape_truncates_toward_zero() -> None:
    # Go's integer division truncates toward zero: util 33 on (0,10)→(100,3) is
    # 100 + (30-100)·33/100 = 100 + (-2310/100) = 100 - 23 = 77 (flooring would give 76).
    cluster = make_cluster([MakeNode("n").alloc(cpu="100", memory="100Gi")])
    plugin = ratio([(0, 10), (100, 3)], [{"name": "cpu", "weight": 1}])
    assert scores(plugin, MakePod().req(cpu="33"), cluster) == [77]
    assert scores(plugin, MakePod().req(cpu="1"), cluster) == [100]


def test_requested_to_capacity_ratio_over_capacity_counts_as_full() -> None:
    cluster = make_cluster([MakeNode("tiny").alloc(cpu="50m", memory="100Gi")])
    plugin = ratio([(0, 0), (100, 10)], [{"name": "cpu", "weight": 1}])
    assert scores(plugin, MakePod().container(), cluster) == [100]  # 100m > 50m → utilization 100


def test_requested_to_capacity_ratio_outside_the_points() -> None:
    cluster = make_cluster([MakeNode("n").alloc(cpu="100", memory="100Gi")])
    plugin = ratio([(20, 5), (80, 9)], [{"name": "cpu", "weight": 1}])
    assert scores(plugin, MakePod().req(cpu="10"), cluster) == [50]   # below the first point
    assert scores(plugin, MakePod().req(cpu="90"), cluster) == [90]   # above the last point


def test_bad_scoring_arguments_are_input_errors() -> None:
    with pytest.raises(InputError):
        fit("Fastest")
    with pytest.raises(InputError):
        fit("RequestedToCapacityRatio", requestedToCapacityRatio={"shape": []})


# --- NodeResourcesFit filter ---

def test_fit_filter_and_reasons() -> None:
    cluster = make_cluster([MakeNode("small").alloc(cpu="2", memory="4Gi"),
                            MakeNode("big").alloc(cpu="16", memory="64Gi"),
                            MakeNode("no-mem").alloc(cpu="16", memory="1Gi"),
                            MakeNode("full").alloc(cpu="16", memory="64Gi", pods="1")],
                           running=[(MakePod("x").container(), "full")])
    state = cycle_state(MakePod("p").req(cpu="4", memory="2Gi"), cluster)
    plugin = NodeResourcesFit()
    mask = plugin.filter(state, cluster)
    assert mask.tolist() == [False, True, False, False]
    reasons = plugin.reasons(state, cluster, ~mask)
    assert dict(reasons) == {"Insufficient cpu": 1, "Insufficient memory": 1, "Too many pods": 1}


def test_fit_counts_every_short_resource_of_a_node() -> None:
    cluster = make_cluster([MakeNode("small").alloc(cpu="1", memory="1Gi")])
    state = cycle_state(MakePod("p").req(cpu="2", memory="2Gi"), cluster)
    plugin = NodeResourcesFit()
    assert dict(plugin.reasons(state, cluster, ~plugin.filter(state, cluster))) == {
        "Insufficient cpu": 1, "Insufficient memory": 1}


def test_fit_on_extended_resources() -> None:
    cluster = make_cluster([GPU_NODE, MakeNode("plain").alloc(cpu="8", memory="16Gi")])
    state = cycle_state(MakePod("p").req({"nvidia.com/gpu": 2}, cpu="1"), cluster)
    plugin = NodeResourcesFit()
    mask = plugin.filter(state, cluster)
    assert mask.tolist() == [True, False]
    assert dict(plugin.reasons(state, cluster, ~mask)) == {"Insufficient nvidia.com/gpu": 1}
    too_many = cycle_state(MakePod("q").req({"nvidia.com/gpu": 5}), cluster)
    assert plugin.filter(too_many, cluster).tolist() == [False, False]


def test_fit_exactly_full_is_fine() -> None:
    cluster = make_cluster([MakeNode("n").alloc(cpu="4", memory="8Gi")], running=[(MakePod().req(cpu="3"), "n")])
    assert NodeResourcesFit().filter(cycle_state(MakePod("p").req(cpu="1", memory="8Gi"), cluster), cluster).all()
    assert not NodeResourcesFit().filter(cycle_state(MakePod("p").req(cpu="1001m"), cluster), cluster).any()


# --- NodeResourcesBalancedAllocation ---

def test_balanced_allocation_two_resources() -> None:
    # v1.37 balancedResourceScorer: 50 + (50 + b(with pod) − b(without)) / 2, b = ⌊(1 − |f₀ − f₁|/2)·100⌋.
    # node-a: without cpu 1/4, memory 2/10 → std .025 → 97; with .5 and .5 → 100: 50 + 53/2 = 76.
    # node-b: without 0 and 0 → 100; with 1/6 and 3/10 → std .0667 → 93: 50 + 43/2 = 71.
    assert scores(NodeResourcesBalancedAllocation(), POD, two_nodes()) == [76, 71]


def test_balance_takes_half_the_difference_as_upstream() -> None:
    # balancedResourceScore: std = |(f₀ − f₁) / 2| in float64; (1.0, 0.1) → .45 → 55, where |f₀ + f₁ − 2·min|/2
    # rounds the other way and gives 54.
    requested = np.array([[10], [1]], dtype=np.int64)
    alloc = np.array([[10], [10]], dtype=np.int64)
    assert _balance(requested, alloc, True).tolist() == [55]
    assert _balance(requested, alloc, False).tolist() == [55]
    # A resource the node does not have is left out: two of three resources present → the same formula.
    three = np.array([[10], [0], [1]], dtype=np.int64)
    assert _balance(three, np.array([[10], [0], [10]], dtype=np.int64), False).tolist() == [55]


def test_balanced_allocation_three_resources_uses_the_standard_deviation() -> None:
    cluster = make_cluster([GPU_NODE])
    plugin = NodeResourcesBalancedAllocation({"resources": WITH_GPU})
    # fractions cpu 4/8 = .5, memory 8/16 = .5, gpu 1/4 = .25: mean .41667,
    # std = sqrt((2·.08333² + .16667²)/3) = .11785 → 88.2 → 88; the empty node was even (100): 50 + 38/2 = 69
    assert scores(plugin, MakePod().req({"nvidia.com/gpu": 1}, cpu="4", memory="8Gi"), cluster) == [69]
    # A pod without GPUs is scored over cpu and memory only: .5 and .5 → 100, as before it: 50 + 50/2 = 75
    assert scores(plugin, MakePod().req(cpu="4", memory="8Gi"), cluster) == [75]


def test_balanced_allocation_counts_real_requests_not_defaults() -> None:
    cluster = make_cluster([MakeNode("n").alloc(cpu="4", memory="10Gi")])
    # cpu 1/4 = .25, memory 0 (no 200Mi default here) → std .125 → 87 (the default would give 88);
    # the empty node scored 100: 50 + 37/2 = 68
    assert scores(NodeResourcesBalancedAllocation(), MakePod().req(cpu="1"), cluster) == [68]


def test_balanced_allocation_caps_fractions_at_one() -> None:
    cluster = make_cluster([MakeNode("n").alloc(cpu="4", memory="10Gi")],
                           running=[(MakePod().req(cpu="8"), "n")])  # already over (a snapshot can be)
    # with the pod: cpu min(9/4, 1) = 1, memory .5 → std .25 → 75; without: 1 and 0 → 50: 50 + 75/2 = 87
    assert scores(NodeResourcesBalancedAllocation(), MakePod().req(cpu="1", memory="5Gi"), cluster) == [87]


def test_balanced_allocation_skips_best_effort_pods() -> None:
    cluster = make_cluster([MakeNode("even").alloc(cpu="4", memory="4Gi"),
                            MakeNode("skewed").alloc(cpu="4", memory="4Gi")],
                           running=[(MakePod().req(cpu="3"), "skewed")])
    plugin = NodeResourcesBalancedAllocation()
    best_effort = scores(plugin, MakePod().container(), cluster)
    assert best_effort[0] == best_effort[1]
    # A memory-only pod evens out the cpu-heavy node (62 → 87: 87) and unbalances the empty one (100 → 75: 62).
    assert scores(plugin, MakePod().req(memory="2Gi"), cluster) == [62, 87]


def test_non_zero_defaults_apply_per_container() -> None:
    cluster = make_cluster([MakeNode("n").alloc(cpu="1", memory="10Gi"), MakeNode("m").alloc(cpu="1", memory="10Gi")])
    # Two containers that request only memory: kube-scheduler scores them as 100m + 100m = 200m of cpu.
    # cpu (1000-200)·100/1000 = 80, memory (10-2)·100/10 = 80 → 80 (with a per-pod 100m: (90+80)/2 = 85)
    pod = MakePod("p").req(memory="1Gi").req(memory="1Gi")
    assert scores(NodeResourcesFit(), pod, cluster) == [80, 80]

"""GpuShare: the GPU filter (model, per-device free milli), its reasons, and the device choice at Reserve
(FGD-PROTOCOL §1, §4)."""

from collections import Counter

import numpy as np
import pytest

from phalanx.cluster.gpus import MILLI, TargetWorkload, device_table, pod_shape
from phalanx.errors import InputError
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.plugins.gpu_share import GpuShare
from phalanx.scheduler.profiles import builtin
from tests.traces.builders import cluster_of, gpu_node, gpu_pod, place, state_of


def mask(plugin: GpuShare, pod, cluster) -> list[bool]:  # type: ignore[no-untyped-def]
    return [bool(x) for x in plugin.filter(state_of(pod, cluster), cluster)]


def test_cpu_only_pods_pass_everywhere_even_on_nodes_without_gpus() -> None:
    cluster, _ = cluster_of(gpu_node("a", 2), gpu_node("cpu", 0, model=None))
    assert mask(GpuShare(), gpu_pod("p", cpu=1000), cluster) == [True, True]


def test_model_constraint_matches_any_listed_model_exactly() -> None:
    cluster, _ = cluster_of(gpu_node("a", 2, "T4"), gpu_node("b", 4, "V100M16"), gpu_node("c", 8, "V100M32"),
                            gpu_node("d", 0, None))
    plugin = GpuShare()
    assert mask(plugin, gpu_pod("p", count=1, models=("V100M16", "V100M32")), cluster) == [False, True, True, False]
    assert mask(plugin, gpu_pod("q", count=1, models=("T4",)), cluster) == [True, False, False, False]
    assert mask(plugin, gpu_pod("r", count=1), cluster) == [True, True, True, False]  # any GPU node
    assert mask(plugin, gpu_pod("s", count=1, models=("V100",)), cluster) == [False] * 4  # no prefix match


def test_share_needs_one_gpu_with_enough_free_milli() -> None:
    cluster, table = cluster_of(gpu_node("a", 2), gpu_node("b", 1))
    place(cluster, gpu_pod("x", count=1, milli=700), 0, [0])
    place(cluster, gpu_pod("y", count=1, milli=500), 0, [1])
    place(cluster, gpu_pod("z", count=1, milli=800), 1, [0])
    assert table.free[0].tolist() == [300, 500]
    plugin = GpuShare()
    assert mask(plugin, gpu_pod("p", count=1, milli=500), cluster) == [True, False]
    assert mask(plugin, gpu_pod("p", count=1, milli=501), cluster) == [False, False]
    assert mask(plugin, gpu_pod("p", count=1, milli=200), cluster) == [True, True]


def test_whole_gpus_need_that_many_fully_free_gpus() -> None:
    cluster, _ = cluster_of(gpu_node("a", 4), gpu_node("b", 2))
    place(cluster, gpu_pod("x", count=1, milli=100), 0, [2])
    plugin = GpuShare()
    assert mask(plugin, gpu_pod("p", count=3), cluster) == [True, False]
    assert mask(plugin, gpu_pod("p", count=4), cluster) == [False, False]
    assert mask(plugin, gpu_pod("p", count=2), cluster) == [True, True]


def test_reasons_in_kube_scheduler_words() -> None:
    cluster, _ = cluster_of(gpu_node("a", 2, "T4"), gpu_node("b", 2, "G2"), gpu_node("c", 0, None))
    place(cluster, gpu_pod("x", count=1, milli=500), 0, [0])
    place(cluster, gpu_pod("y", count=1, milli=500), 0, [1])
    pod = gpu_pod("p", count=1, milli=600, models=("T4",))
    plugin = GpuShare()
    state = state_of(pod, cluster)
    failed = ~plugin.filter(state, cluster)
    assert plugin.reasons(state, cluster, failed) == Counter({
        "Insufficient GPU share": 1, "node(s) didn't match the requested GPU model": 1, "node(s) had no GPU": 1})
    # Through the engine, NodeResourcesFit speaks first: node c lacks GPU milli altogether; node a has
    # 1000 milli free in total but no single GPU with 600 (fragmentation).
    result = PodCycle(builtin("bestfit"), cluster).schedule(pod)
    assert result.node is None
    assert result.message == ("0/3 nodes are available: 1 Insufficient GPU share, 1 Insufficient "
                              "alibabacloud.com/gpu-milli, 1 node(s) didn't match the requested GPU model.")


def reserve(plugin: GpuShare, cluster, pod, node: int) -> tuple[int, ...]:  # type: ignore[no-untyped-def]
    cluster.assume(pod, node)
    plugin.reserve(state_of(pod, cluster), cluster, node)
    return device_table(cluster).assigned[pod.key].gpus


def test_whole_gpu_pods_take_the_lowest_index_fully_free_gpus_whatever_the_selection() -> None:
    for selection in ("best", "random", "fgd"):
        cluster, _ = cluster_of(gpu_node("a", 8))
        place(cluster, gpu_pod("x", count=1, milli=300), 0, [1])
        place(cluster, gpu_pod("y", count=1), 0, [3])
        assert reserve(GpuShare({"deviceSelection": selection}), cluster, gpu_pod("p", count=3), 0) == (0, 2, 4)


def test_best_takes_the_fitting_gpu_with_least_free_milli_first_index_on_ties() -> None:
    cluster, table = cluster_of(gpu_node("a", 4))
    place(cluster, gpu_pod("x", count=1, milli=600), 0, [0])   # 400 free
    place(cluster, gpu_pod("y", count=1, milli=800), 0, [1])   # 200 free
    place(cluster, gpu_pod("z", count=1, milli=600), 0, [3])   # 400 free
    plugin = GpuShare({"deviceSelection": "best"})
    assert reserve(plugin, cluster, gpu_pod("p", count=1, milli=300), 0) == (0,)
    assert reserve(plugin, cluster, gpu_pod("q", count=1, milli=300), 0) == (3,)
    assert reserve(plugin, cluster, gpu_pod("r", count=1, milli=900), 0) == (2,)  # a fully free one fits too
    assert table.free[0].tolist() == [100, 200, 100, 100]


def test_random_picks_among_fitting_gpus_and_is_seeded() -> None:
    picks = []
    for _ in range(2):
        cluster, _ = cluster_of(gpu_node("a", 8))
        place(cluster, gpu_pod("x", count=1, milli=900), 0, [5])
        plugin = GpuShare({"deviceSelection": "random", "seed": 7})
        picks.append([reserve(plugin, cluster, gpu_pod(f"p{i}", count=1, milli=100), 0)[0] for i in range(20)])
    assert picks[0] == picks[1]
    assert len(set(picks[0])) > 2


def test_fgd_selection_takes_the_gpu_fgd_scores_best() -> None:
    # Target workload: 500-milli shares. On free [700, 1000] a 500 share on GPU 0 strands 200 milli; on GPU 1
    # it strands none, so FGD takes GPU 1 (best-fit would take GPU 0).
    workload = TargetWorkload.from_shapes([pod_shape(gpu_pod("t", cpu=1000, count=1, milli=500))])
    cluster, _ = cluster_of(gpu_node("a", 2))
    place(cluster, gpu_pod("x", count=1, milli=300), 0, [0])
    plugin = GpuShare({"deviceSelection": "fgd", "targetWorkload": workload})
    assert reserve(plugin, cluster, gpu_pod("p", cpu=1000, count=1, milli=500), 0) == (1,)
    cluster, _ = cluster_of(gpu_node("a", 2))
    place(cluster, gpu_pod("x", count=1, milli=300), 0, [0])
    assert reserve(GpuShare(), cluster, gpu_pod("p", cpu=1000, count=1, milli=500), 0) == (0,)


def test_unreserve_gives_the_devices_back() -> None:
    cluster, table = cluster_of(gpu_node("a", 2))
    pod = gpu_pod("p", count=1, milli=250)
    plugin = GpuShare()
    reserve(plugin, cluster, pod, 0)
    assert table.free[0].tolist() == [750, 1000]
    plugin.unreserve(pod, cluster, 0)
    assert table.free[0].tolist() == [MILLI, MILLI]
    assert table.full[0] == 2 and table.idle[0] == 2000 and table.tags[0].sum() == 0


def test_a_device_is_never_allocated_twice() -> None:
    _cluster, table = cluster_of(gpu_node("a", 1))
    table.allocate("x", 0, [0], 700)
    with pytest.raises(ValueError):
        table.allocate("y", 0, [0], 400)
    with pytest.raises(ValueError):
        table.allocate("x", 0, [0], 100)
    assert not table.overallocated()


def test_unknown_device_selection_is_an_input_error() -> None:
    with pytest.raises(InputError, match="deviceSelection"):
        GpuShare({"deviceSelection": "worst"})


def test_table_grows_with_the_cluster() -> None:
    cluster, table = cluster_of(gpu_node("a", 2))
    cluster.add_nodes([gpu_node("b", 8, "V100M32")])
    grown = device_table(cluster)
    assert grown is table and len(grown) == 2 and grown.width == 8
    assert grown.free[0].tolist() == [1000, 1000, 0, 0, 0, 0, 0, 0]
    assert np.array_equal(grown.model_mask(("V100M32",)), [False, True])

"""The six GPU Score plugins against hand-computed cases (FGD-PROTOCOL §4 formulas, truncations and
normalisations)."""

import math

import numpy as np

from phalanx.cluster.gpus import Fragmentation, TargetWorkload, pod_shape
from phalanx.scheduler.plugins.gpu_share import (
    BestFitScore,
    DotProductScore,
    FGDScore,
    GpuClusteringScore,
    GpuPackingScore,
    RandomScore,
)
from phalanx.scheduler.plugins.gpu_share.best_fit import min_max_normalize
from phalanx.scheduler.plugins.gpu_share.fgd import FgdEngine, evaluate, fgd_score
from tests.traces.builders import all_nodes, cluster_of, gpu_node, gpu_pod, place, state_of


def scores(plugin, pod, cluster) -> list[int]:  # type: ignore[no-untyped-def]
    return [int(s) for s in plugin.score(state_of(pod, cluster), cluster, all_nodes(cluster))]


def three_nodes():  # type: ignore[no-untyped-def]
    """A: 64 cores, 2 GPUs; B: 96 cores, 8 GPUs; C: 64 cores, 4 GPUs; all free."""
    return cluster_of(gpu_node("a", 2, cpu=64000), gpu_node("b", 8, cpu=96000), gpu_node("c", 4, cpu=64000))[0]


def test_best_fit_raw_scores_and_min_max_rescaling() -> None:
    # raw = 0.5·(free cpu − 8000)/128000 + 0.5·(free milli − 1000)/8000
    # A: 0.21875 + 0.0625 = 0.28125 → 71; B: 0.34375 + 0.4375 = 0.78125 → 21; C: 0.21875 + 0.1875 → 59
    # rescaled: (s − 21)·100 // 50 → 100, 0, 76
    assert scores(BestFitScore(), gpu_pod("p", cpu=8000, count=1), three_nodes()) == [100, 0, 76]


def test_best_fit_normalisation_integer_division_and_all_equal() -> None:
    assert min_max_normalize(np.array([10, 10, 10])).tolist() == [0, 0, 0]
    assert min_max_normalize(np.array([0, 1, 2, 300])).tolist() == [0, 0, 0, 100]  # 1·100//300 = 0: a tie


def test_dot_product_prefers_the_smallest_dot_product() -> None:
    # A: (0.5, 0.25)·(0.0625, 0.125) = 0.0625, /2 → 0.03125 → int(96.875) = 96
    # B: (0.75, 1.0)·(0.0625, 0.125) = 0.171875, /2 → 0.0859375 → int(91.40625) = 91
    # C: (0.5, 0.5)·(0.0625, 0.125) = 0.09375, /2 → 0.046875 → int(95.3125) = 95
    assert scores(DotProductScore(), gpu_pod("p", cpu=8000, count=1), three_nodes()) == [96, 91, 95]


def test_gpu_clustering_bases_and_fill_bonus() -> None:
    cluster, _ = cluster_of(*(gpu_node(n, 8) for n in "abcd"))
    place(cluster, gpu_pod("s1", count=1, milli=500), 0, [0])           # a: share only, 7500 free
    place(cluster, gpu_pod("w1", count=1), 2, [0])                      # c: 1-gpu only, 7000 free
    place(cluster, gpu_pod("s2", count=1, milli=500), 3, [0])           # d: share and 1-gpu, 6500 free
    place(cluster, gpu_pod("w2", count=1), 3, [1])
    share = gpu_pod("p", count=1, milli=300)
    # a: 75 + 25·500//8000 = 76; b: 25 + 0; c: 0 + 25·1000//8000 = 3; d: 50 + 25·1500//8000 = 54
    assert scores(GpuClusteringScore(), share, cluster) == [76, 25, 3, 54]
    # a 1-GPU pod: a holds other tags only → 0 + 1; c holds only its tag → 75 + 3
    assert scores(GpuClusteringScore(), gpu_pod("q", count=1), cluster) == [1, 25, 78, 54]
    assert scores(GpuClusteringScore(), gpu_pod("r", cpu=4000), cluster) == [0, 0, 0, 0]


def test_gpu_packing_three_cases() -> None:
    cluster, _ = cluster_of(gpu_node("e", 2), gpu_node("f", 2), gpu_node("g", 2), gpu_node("h", 4))
    place(cluster, gpu_pod("x", count=1, milli=600), 1, [0])   # f: [400, 1000]
    place(cluster, gpu_pod("y", count=1, milli=800), 2, [0])   # g: [200, 1000]
    place(cluster, gpu_pod("z", count=1), 3, [0])              # h: [0, 1000, 1000, 1000]
    share = gpu_pod("p", count=1, milli=300)
    # e: all free → 33 − 2 = 31; f: shared GPU with 400 → 100 − (40 // 10) = 96; g: 200 too small, takes a
    # free GPU → 50 − 1 = 49; h: free GPU → 49
    assert scores(GpuPackingScore(), share, cluster) == [31, 96, 49, 49]
    # two whole GPUs: e all free → 31; f, g one free GPU only (filtered in practice) → 49; h: 50 − 2 = 48
    assert scores(GpuPackingScore(), gpu_pod("q", count=2), cluster) == [31, 49, 49, 48]
    assert scores(GpuPackingScore(), gpu_pod("r", cpu=100), cluster) == [0, 0, 0, 0]


def test_gpu_packing_caps() -> None:
    cluster, _ = cluster_of(gpu_node("a", 1))
    place(cluster, gpu_pod("x", count=1, milli=10), 0, [0])    # 990 free: 100 − 99//10 = 91
    assert scores(GpuPackingScore(), gpu_pod("p", count=1, milli=100), cluster) == [91]


def test_random_gives_one_node_100_and_is_seeded() -> None:
    cluster = three_nodes()
    first = [scores(RandomScore({"seed": 3}), gpu_pod("p", count=1), cluster) for _ in range(2)]
    assert first[0] == first[1]
    assert sorted(first[0]) == [0, 0, 100]
    plugin = RandomScore({"seed": 3})
    picks = {tuple(scores(plugin, gpu_pod("p", count=1), cluster)) for _ in range(30)}
    assert len(picks) == 3


def sigmoid100(x: float) -> int:
    return int(100 / (1 + math.exp(-x / 1000)))


def test_fgd_score_truncates() -> None:
    assert fgd_score(np.array([0.0, -200.0, 2000.0, -2000.0])).tolist() == [50, 45, 88, 11]
    assert [sigmoid100(x) for x in (0.0, -200.0, 2000.0, -2000.0)] == [50, 45, 88, 11]


def share_workload() -> TargetWorkload:
    return TargetWorkload.from_shapes([pod_shape(gpu_pod("t", cpu=1000, count=1, milli=500))])


def test_fgd_sharing_pod_tries_every_gpu() -> None:
    # Workload: 1-core, 500-milli shares. Node a: free [700, 1000]; node b: [1000, 1000].
    # a, GPU 0 → [200, 1000]: 200 milli now too small for the workload: ΔF = −200 → 45; GPU 1 → [700, 500]: 0 → 50
    # b: either GPU leaves 500 usable: 50
    cluster, _ = cluster_of(gpu_node("a", 2), gpu_node("b", 2))
    place(cluster, gpu_pod("x", count=1, milli=300), 0, [0])
    pod = gpu_pod("p", cpu=1000, count=1, milli=500)
    assert scores(FGDScore({"targetWorkload": share_workload()}), pod, cluster) == [50, 50]
    engine = FgdEngine(share_workload())
    from phalanx.cluster.gpus import device_table
    got, gpus = engine.scores(cluster, device_table(cluster), pod_shape(pod), all_nodes(cluster))
    assert got.tolist() == [50, 50] and gpus.tolist() == [1, 0]
    # A 600-milli share: on a, GPU 0 → [100, 1000] strands 100 (47), GPU 1 → [700, 400] strands 400 (40);
    # on b either GPU strands 400 (40)
    big = gpu_pod("q", cpu=1000, count=1, milli=600)
    assert scores(FGDScore({"targetWorkload": share_workload()}), big, cluster) == [sigmoid100(-100),
                                                                                     sigmoid100(-400)]


def test_fgd_cpu_only_pod_avoids_starving_gpu_pods_of_cpu() -> None:
    # Workload: 8-core whole-GPU pods. Taking 4 of a's 10 cores leaves 6 < 8: all 2000 idle milli become
    # fragment (q4): ΔF = −2000 → 11. b keeps 16 cores: ΔF = 0 → 50.
    workload = TargetWorkload.from_shapes([pod_shape(gpu_pod("t", cpu=8000, count=1))])
    cluster, _ = cluster_of(gpu_node("a", 2, cpu=10000), gpu_node("b", 2, cpu=20000))
    assert scores(FGDScore({"targetWorkload": workload}), gpu_pod("p", cpu=4000), cluster) == [11, 50]


def test_fragmentation_amount_by_bucket() -> None:
    # Shapes: 500-milli share (p .5), CPU-only (p .25), two whole T4s (p .25). Node: G2, 2 cores,
    # free [600, 300, 1000, 0] → idle 1900.
    # share: fits (q3), fragment = milli on GPUs below 500 = 300 → .5·300 = 150
    # CPU-only: all idle (xl) → .25·1900 = 475; T4 pair on a G2 node: no access → 475. F = 1100.
    shapes = [pod_shape(gpu_pod("s", cpu=1000, count=1, milli=500))] * 2 + [pod_shape(gpu_pod("c", cpu=0))] + \
        [pod_shape(gpu_pod("t", cpu=1000, count=2, models=("T4",)))]
    workload = TargetWorkload.from_shapes(shapes, threshold=100)
    assert workload.popularity == (0.5, 0.25, 0.25)
    _cluster, table = cluster_of(gpu_node("n", 4, "G2", cpu=2000), gpu_node("m", 4, "T4", cpu=500))
    frag = Fragmentation(workload, table)
    free = np.array([[600, 300, 1000, 0], [600, 300, 1000, 0]])
    assert frag.amount(np.array([2000, 2000]), free, table.model).tolist() == [1100.0, 1100.0]
    # Half a core: the share lacks CPU (q4: all idle), T4 pair lacks GPUs on the T4 node (q2)
    assert frag.amount(np.array([500, 500]), free, table.model).tolist() == [1900.0, 1900.0]


def test_target_workload_keeps_the_popular_prefix() -> None:
    a, b, c, d = (pod_shape(gpu_pod(n, cpu=cpu, count=1)) for n, cpu in (("a", 1), ("b", 2), ("c", 3), ("d", 4)))
    workload = TargetWorkload.from_shapes([a] * 5 + [b] * 3 + [c] + [d], threshold=80)
    assert workload.shapes == (a, b)
    assert workload.popularity == ((5 / 10) / (8 / 10), (3 / 10) / (8 / 10))  # KSS's order of operations
    everything = TargetWorkload.from_shapes([a] * 5 + [b] * 3 + [c] + [d], threshold=95)
    assert everything.shapes == (a, b, d, c)  # count ties: the larger shape first
    assert TargetWorkload.parse(everything.describe()) == everything


def test_fgd_cache_matches_a_fresh_evaluation_after_random_placements() -> None:
    rng = np.random.default_rng(1)
    cluster, table = cluster_of(*(gpu_node(f"n{i}", int(g), "G2" if g == 8 else "T4", cpu=int(c))
                                  for i, (g, c) in enumerate(zip(rng.choice([2, 8], 60), rng.choice([16000, 96000], 60),
                                                                 strict=True))))
    shapes = [gpu_pod("a", cpu=6000, count=1, milli=460), gpu_pod("b", cpu=12000, count=1),
              gpu_pod("c", cpu=4000), gpu_pod("d", cpu=8000, count=2), gpu_pod("e", cpu=2000, count=1, milli=250)]
    workload = TargetWorkload.from_pods(shapes)
    engine = FgdEngine(workload)
    frag = Fragmentation(workload, table)
    from phalanx.scheduler.plugins.gpu_share import GpuShare
    share = GpuShare({"deviceSelection": "fgd", "targetWorkload": workload})
    for step in range(150):
        template = shapes[int(rng.integers(len(shapes)))]
        pod = gpu_pod(f"p{step}", cpu=template.requests["cpu"], count=template.gpu.count if template.gpu else 0,
                      milli=template.gpu.milli if template.gpu else 1000)
        feasible = np.flatnonzero(share.filter(state_of(pod, cluster), cluster) & (
            cluster.allocatable[:, 0] - cluster.requested[:, 0] >= pod.requests["cpu"]))
        if feasible.size == 0:
            continue
        got, gpus = engine.scores(cluster, table, pod_shape(pod), feasible)
        cpu = cluster.allocatable[feasible, 0] - cluster.requested[feasible, 0]
        want, want_gpus = evaluate(frag, pod_shape(pod), cpu, table.free[feasible], table.model[feasible])
        assert got.tolist() == want.tolist()
        assert gpus.tolist() == want_gpus.tolist()
        node = int(feasible[int(np.argmax(got))])
        cluster.assume(pod, node)
        share.reserve(state_of(pod, cluster), cluster, node)
    assert not table.overallocated()

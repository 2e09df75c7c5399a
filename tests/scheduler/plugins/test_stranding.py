"""StrandingScore (FGD plus GPUs stranded without CPU or memory) against hand-computed cases, its
direction, its agreement with FGD when the stranding weight is 0, and the `fgd-stranding` and `phalanx`
profiles on a small trace replay."""

from pathlib import Path

import numpy as np
import pytest

from phalanx.cluster.gpus import Fragmentation, TargetWorkload, pod_shape
from phalanx.errors import InputError
from phalanx.scheduler.plugins.gpu_share import FGDScore, GpuShare, StrandingScore
from phalanx.scheduler.plugins.gpu_share.fgd import evaluate
from phalanx.scheduler.plugins.gpu_share.stranding import StrandingEngine, cpu_per_gpu, memory_per_gpu, stranded
from phalanx.scheduler.profiles import builtin, for_gpu_sharing
from phalanx.traces.compare import compare_trace
from tests.traces.builders import (
    GIB,
    NODE_HEADER,
    POD_HEADER,
    all_nodes,
    cluster_of,
    gpu_node,
    gpu_pod,
    place,
    small_trace,
    state_of,
    write,
)


def scores(plugin, pod, cluster) -> list[int]:  # type: ignore[no-untyped-def]
    return [int(s) for s in plugin.score(state_of(pod, cluster), cluster, all_nodes(cluster))]


def share_workload() -> TargetWorkload:
    """1-core, 500-milli shares only: 2000 mCPU per whole GPU."""
    return TargetWorkload.from_shapes([pod_shape(gpu_pod("t", cpu=1000, count=1, milli=500))])


def test_workload_ratios() -> None:
    # Shapes: 500-milli share with 1 core (p .5), whole GPU with 8 cores (p .25), CPU-only (p .25).
    # CPU per GPU = (.5·1000 + .25·8000) / (.5·0.5 + .25·1) = 2500 / 0.5 = 5000 mCPU.
    pods = [gpu_pod("s1", cpu=1000, count=1, milli=500, memory_gib=4),
            gpu_pod("s2", cpu=1000, count=1, milli=500, memory_gib=8),
            gpu_pod("w", cpu=8000, count=1, memory_gib=30), gpu_pod("c", cpu=4000, memory_gib=64)]
    workload = TargetWorkload.from_pods(pods, threshold=100)
    assert cpu_per_gpu(workload) == pytest.approx(5000.0)
    # Memory per GPU over the typical GPU pods (CPU-only pods left out): (4 + 8 + 30) GiB over 2 GPUs.
    assert memory_per_gpu(pods, workload) == pytest.approx(21 * GIB)
    assert cpu_per_gpu(TargetWorkload.from_pods([gpu_pod("c", cpu=4000)])) is None
    assert memory_per_gpu([], workload) is None


def test_stranded_milli() -> None:
    # 2000 mCPU and 10 GiB per GPU. Node 1: 3000 idle, 4000 mCPU → 2000 usable → 1000 stranded.
    # Node 2: 3000 idle, 4000 mCPU but 5 GiB → 500 usable → 2500 stranded. Node 3: plenty → 0.
    got = stranded(np.array([4000, 4000, 64000]), np.array([100 * GIB, 5 * GIB, 100 * GIB]),
                   np.array([3000, 3000, 3000]), 2000.0, 10.0 * GIB)
    assert got.tolist() == [1000.0, 2500.0, 0.0]
    assert stranded(np.array([-5]), np.array([0]), np.array([800]), 2000.0, None).tolist() == [800.0]
    assert stranded(np.array([0]), np.array([0]), np.array([800]), None, None).tolist() == [0.0]


def test_leaving_gpus_without_cpu_scores_worse() -> None:
    # Workload 2000 mCPU per GPU. Pod: a 500-milli share with 5 cores. a: 4 GPUs, 8 cores; b: 4 GPUs, 40 cores.
    # FGD sees nothing: the 1-core shares still fit both nodes afterwards (ΔF = 0 → 50, 50).
    # a: before 8000 mCPU feed 4000 milli of 4000 idle (S = 0); after 3000 mCPU feed 1500 of 3500 → S = 2000.
    #    w = 1: int(100·σ(−2000/1000)) = int(11.92) = 11.  b: S stays 0 → 50.
    cluster, _ = cluster_of(gpu_node("a", 4, cpu=8000), gpu_node("b", 4, cpu=40000))
    pod = gpu_pod("p", cpu=5000, count=1, milli=500)
    assert scores(FGDScore({"targetWorkload": share_workload()}), pod, cluster) == [50, 50]
    plugin = StrandingScore({"targetWorkload": share_workload(), "strandingWeight": 1, "ratioScale": 1})
    assert scores(plugin, pod, cluster) == [11, 50]
    # w = 0.5: int(100·σ(−1)) = int(26.89) = 26
    half = StrandingScore({"targetWorkload": share_workload(), "strandingWeight": 0.5, "ratioScale": 1})
    assert scores(half, pod, cluster) == [26, 50]
    # ratioScale 0.75: 1500 mCPU per GPU; a after: 3000 mCPU feed 2000 of 3500 → S = 1500 → int(18.24) = 18
    scaled = StrandingScore({"targetWorkload": share_workload(), "strandingWeight": 1, "ratioScale": 0.75})
    assert scores(scaled, pod, cluster) == [18, 50]
    # The defaults: w = 2, ratioScale 0.75 → int(100·σ(−3)) = int(4.74) = 4
    assert scores(StrandingScore({"targetWorkload": share_workload()}), pod, cluster) == [4, 50]


def test_leaving_gpus_without_memory_scores_worse() -> None:
    # 32 GiB per GPU. Pod: one whole GPU, 1 core, 40 GiB. a: 2 GPUs, 64 GiB; b: 2 GPUs, 256 GiB.
    # a: before 64 GiB feed 2000 milli (S = 0); after 24 GiB feed 750 of 1000 idle → S = 250 → int(100·σ(−0.25))
    #    = int(43.78) = 43.  b: S stays 0 → 50. FGD does not read memory: 50, 50.
    workload = TargetWorkload.from_shapes([pod_shape(gpu_pod("t", cpu=1000, count=1))])
    cluster, _ = cluster_of(gpu_node("a", 2, memory_gib=64), gpu_node("b", 2, memory_gib=256))
    pod = gpu_pod("p", count=1, memory_gib=40)
    assert scores(FGDScore({"targetWorkload": workload}), pod, cluster) == [50, 50]
    plugin = StrandingScore({"targetWorkload": workload, "strandingWeight": 1, "memoryPerGpu": 32 * GIB,
                             "ratioScale": 1})
    assert scores(plugin, pod, cluster) == [43, 50]
    # Without a memory ratio, memory is not judged.
    assert scores(StrandingScore({"targetWorkload": workload, "strandingWeight": 1, "ratioScale": 1}), pod,
                  cluster) == [50, 50]


def test_using_a_stranded_gpu_scores_better() -> None:
    # 8000 mCPU per whole GPU. Pod: one whole GPU, 4 cores. a: 2 GPUs, 20 cores; b: 2 GPUs, 12 cores.
    # FGD: the 8-core pods fit both nodes before and after (50, 50). b strands 500 milli (12 cores feed 1.5
    # GPUs); after the pod, 8 cores feed its last GPU: S 500 → 0, so int(100·σ(0.5)) = int(62.2) = 62.
    workload = TargetWorkload.from_shapes([pod_shape(gpu_pod("t", cpu=8000, count=1))])
    cluster, _ = cluster_of(gpu_node("a", 2, cpu=20000), gpu_node("b", 2, cpu=12000))
    pod = gpu_pod("p", cpu=4000, count=1)
    assert scores(FGDScore({"targetWorkload": workload}), pod, cluster) == [50, 50]
    plugin = StrandingScore({"targetWorkload": workload, "strandingWeight": 1, "ratioScale": 1})
    assert scores(plugin, pod, cluster) == [50, 62]


def test_cpu_only_pods_get_fgds_score() -> None:
    # Workload: 8-core whole-GPU pods; a keeps 6 of 10 cores after a 4-core CPU-only pod: FGD's 11 and 50.
    workload = TargetWorkload.from_shapes([pod_shape(gpu_pod("t", cpu=8000, count=1))])
    cluster, _ = cluster_of(gpu_node("a", 2, cpu=10000), gpu_node("b", 2, cpu=20000))
    pod = gpu_pod("p", cpu=4000)
    assert scores(StrandingScore({"targetWorkload": workload, "strandingWeight": 3}), pod, cluster) == [11, 50]


def test_sharing_pod_without_a_fitting_gpu_scores_zero_and_scores_are_integers() -> None:
    cluster, _ = cluster_of(gpu_node("a", 1), gpu_node("b", 2))
    place(cluster, gpu_pod("x", count=1, milli=800), 0, [0])
    got = StrandingScore({"targetWorkload": share_workload()}).score(
        state_of(gpu_pod("p", count=1, milli=500), cluster), cluster, all_nodes(cluster))
    assert got.dtype == np.int64
    assert got.tolist()[0] == 0 and 0 <= got.tolist()[1] <= 100


def test_bad_arguments() -> None:
    for args in ({"strandingWeight": -1}, {"memoryPerGpu": "x"}, {"cpuPerGpu": True}, {"ratioScale": "1"}):
        with pytest.raises(InputError):
            StrandingScore(args)


def test_weight_zero_is_fgd_and_the_cache_matches_fresh_evaluations() -> None:
    rng = np.random.default_rng(7)
    cluster, table = cluster_of(*(gpu_node(f"n{i}", int(g), "G2" if g == 8 else "T4", cpu=int(c),
                                           memory_gib=int(m))
                                  for i, (g, c, m) in enumerate(zip(rng.choice([2, 8], 60),
                                                                    rng.choice([16000, 96000], 60),
                                                                    rng.choice([64, 384], 60), strict=True))))
    shapes = [gpu_pod("a", cpu=6000, count=1, milli=460, memory_gib=24), gpu_pod("b", cpu=12000, count=1,
                                                                                  memory_gib=48),
              gpu_pod("c", cpu=4000), gpu_pod("d", cpu=8000, count=2, memory_gib=64),
              gpu_pod("e", cpu=2000, count=1, milli=250, memory_gib=8)]
    workload = TargetWorkload.from_pods(shapes)
    zero = StrandingEngine(workload, weight=0.0, memory_ratio=memory_per_gpu(shapes, workload))
    engine = StrandingEngine(workload, weight=2.0, memory_ratio=memory_per_gpu(shapes, workload))
    frag = Fragmentation(workload, table)
    share = GpuShare({"deviceSelection": "fgd", "targetWorkload": workload})
    mem = cluster.column["memory"]
    for step in range(120):
        template = shapes[int(rng.integers(len(shapes)))]
        gpu = template.gpu
        pod = gpu_pod(f"p{step}", cpu=template.requests["cpu"], count=gpu.count if gpu else 0,
                      milli=gpu.milli if gpu else 1000, memory_gib=template.requests["memory"] // GIB)
        free_cpu = cluster.allocatable[:, 0] - cluster.requested[:, 0]
        free_mem = cluster.allocatable[:, mem] - cluster.requested[:, mem]
        feasible = np.flatnonzero(share.filter(state_of(pod, cluster), cluster) & (free_cpu >= pod.requests["cpu"])
                                  & (free_mem >= pod.requests["memory"]))
        if feasible.size == 0:
            continue
        fgd, _ = evaluate(frag, pod_shape(pod), free_cpu[feasible], table.free[feasible], table.model[feasible])
        assert zero.scores(cluster, table, pod, feasible).tolist() == fgd.tolist()
        got = engine.scores(cluster, table, pod, feasible)
        fresh = engine.evaluate(frag, pod_shape(pod), pod.requests["memory"], free_cpu[feasible],
                                free_mem[feasible], table.free[feasible], table.model[feasible])
        assert got.tolist() == fresh.tolist()
        node = int(feasible[int(np.argmax(got))])
        cluster.assume(pod, node)
        share.reserve(state_of(pod, cluster), cluster, node)
    assert not table.overallocated()


def test_phalanx_profile_scores_gpu_traces_with_fgd_stranding(tmp_path: Path) -> None:
    phalanx = for_gpu_sharing(builtin("phalanx"))
    stranding = builtin("fgd-stranding")
    assert phalanx.name == "phalanx" and phalanx.exact_placement is not None and phalanx.gang
    assert (phalanx.filters, phalanx.scores, phalanx.reserve, phalanx.tie_break) == (
        stranding.filters, {"StrandingScore": 1}, stranding.reserve, "first")
    assert for_gpu_sharing(builtin("gang")) == builtin("gang")
    nodes, pods = small_trace(tmp_path, pods=80, seed=3)
    results = compare_trace("openb", nodes, pods, "fragmentation", 1.3, [1, 2], ["phalanx", "fgd-stranding"])
    assert results[0]["profile"] == "phalanx"
    assert [s["unallocatedGpus"] for s in results[0]["seeds"]] == [s["unallocatedGpus"] for s in results[1]["seeds"]]


def test_fgd_stranding_leaves_fewer_gpus_unallocated_than_fgd_on_a_cpu_tight_cluster(tmp_path: Path) -> None:
    """Eight 4-GPU nodes, four with 16 cores and four with 40; pods take one whole GPU with 4 cores, every
    fifth with 12. FGD sees no change when a 12-core pod lands on a 16-core node (a 4-core pod still fits)
    and ties go to the lowest node; the node can then feed only one of its three other GPUs. The stranding
    term sends the 12-core pods to the 40-core nodes."""
    nodes = NODE_HEADER + "".join(f"node-{i},{16000 if i < 4 else 40000},262144,4,G2\n" for i in range(8))
    pods = POD_HEADER + "".join(f"pod-{i:03d},{12000 if i % 5 == 0 else 4000},16384,1,1000,,LS,Running,0,10,0\n"
                                for i in range(30))
    nodes_csv, pods_csv = write(tmp_path / "nodes.csv", nodes), write(tmp_path / "pods.csv", pods)
    fgd, stranding = compare_trace("openb", nodes_csv, pods_csv, "fragmentation", 1.3, list(range(1, 11)),
                                   ["fgd", "fgd-stranding"])
    left = [[s["unallocatedGpusFinal"] for s in r["seeds"]] for r in (fgd, stranding)]
    assert all(b <= a for a, b in zip(*left, strict=True))
    assert sum(left[1]) < sum(left[0])

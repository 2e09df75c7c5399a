"""Small builders for GPU nodes and pods (the openb trace's shapes), shared by the GPU plugin tests and the
trace tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from phalanx.api.objects import GpuRequest, Node, Pod
from phalanx.cluster.gpus import GPU_COUNT, GPU_MILLI, GPU_MODEL_LABEL, GpuTable, device_table, pod_tag
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import CycleState

GIB = 2**30


def gpu_node(name: str, gpus: int, model: str | None = "G2", cpu: int = 96000, memory_gib: int = 256) -> Node:
    labels = {GPU_MODEL_LABEL: model} if model else {}
    return Node(name=name, allocatable={"cpu": cpu, "memory": memory_gib * GIB, "pods": 1001, GPU_COUNT: gpus,
                                        GPU_MILLI: gpus * 1000}, labels=labels)


def gpu_pod(name: str, cpu: int = 1000, count: int = 0, milli: int = 1000, models: Sequence[str] = (),
            memory_gib: int = 1) -> Pod:
    requests = {"cpu": cpu, "memory": memory_gib * GIB}
    gpu = None
    if count:
        gpu = GpuRequest(count, milli, tuple(models))
        requests[GPU_MILLI] = count * milli
    return Pod(namespace="openb", name=name, requests=requests, gpu=gpu)


def cluster_of(*nodes: Node) -> tuple[ClusterState, GpuTable]:
    cluster = ClusterState(list(nodes))
    return cluster, device_table(cluster)


def place(cluster: ClusterState, pod: Pod, node: int, gpus: Sequence[int] = ()) -> None:
    """Put a pod on a node by hand, on the given devices."""
    cluster.assume(pod, node)
    if pod.gpu is not None:
        device_table(cluster).allocate(pod.key, node, gpus, pod.gpu.milli, pod_tag(pod.gpu.count, pod.gpu.milli))


def state_of(pod: Pod, cluster: ClusterState) -> CycleState:
    return CycleState(pod=pod, demand=cluster.demand(pod))


def all_nodes(cluster: ClusterState) -> np.ndarray:
    return np.arange(len(cluster))


NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
              "scheduled_time\n")
SHORT_POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def small_trace(tmp: Path, pods: int = 60, seed: int = 0) -> tuple[str, str]:
    """A small openb-like cluster (8 nodes, 28 GPUs, two models) and a random pod list in its format."""
    nodes = NODE_HEADER + "".join([
        "node-0,96000,393216,8,G2\n", "node-1,96000,393216,8,G2\n", "node-2,104000,524288,2,T4\n",
        "node-3,104000,524288,2,T4\n", "node-4,64000,262144,2,P100\n", "node-5,32000,131072,4,V100M16\n",
        "node-6,16000,122880,2,P100\n", "node-7,32000,131072,0,\n",
    ])
    rng = np.random.default_rng(seed)
    rows = []
    shapes = [(0, 0, 4000), (1, 1000, 8000), (1, 500, 4000), (1, 250, 2000), (2, 1000, 16000), (1, 460, 6000),
              (4, 1000, 32000), (1, 1000, 12000)]
    for i in range(pods):
        count, milli, cpu = shapes[int(rng.integers(len(shapes)))]
        spec = "T4" if count == 1 and milli < 1000 and rng.random() < 0.1 else ""
        rows.append(f"openb-pod-{i:04d},{cpu},{cpu // 250},{count},{milli},{spec},LS,Running,{i * 10},"
                    f"{i * 10 + 500},{i * 10 + 1}\n")
    return write(tmp / "nodes.csv", nodes), write(tmp / "pods.csv", POD_HEADER + "".join(rows))

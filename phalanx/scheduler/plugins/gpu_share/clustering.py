"""GpuClusteringScore: keep GPU pods of a kind together. A pod's tag is share-gpu (one GPU, less than
1000 milli), `k-gpu` (k whole GPUs) or none; a node's tags are those of the GPU pods on it.

base = 75 if the node holds only the pod's tag, 50 if that tag and others, 25 if no GPU pods, 0 if only
other tags; score = base + ⌊25·(8000 − free GPU milli)/8000⌋. Pods without GPUs score 0 everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from phalanx.cluster.gpus import device_table, pod_tag
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import MAX_NODE_SCORE, CycleState, IntArray
from phalanx.scheduler.plugins.gpu_share.common import MAX_SPEC_GPU, gpu_free


class GpuClusteringScore:
    name = "GpuClusteringScore"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        pass

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        gpu = state.pod.gpu
        tag = -1 if gpu is None else pod_tag(gpu.count, gpu.milli)
        if tag < 0:
            return np.zeros(len(nodes), dtype=np.int64)
        table = device_table(cluster)
        held = table.tags[nodes] > 0
        kinds = held.sum(axis=1)
        has = held[:, tag] if tag < held.shape[1] else np.zeros(len(nodes), dtype=bool)
        quarter = MAX_NODE_SCORE // 4
        base = np.where(has, np.where(kinds == 1, 3 * quarter, 2 * quarter), np.where(kinds == 0, quarter, 0))
        return np.asarray(quarter * (MAX_SPEC_GPU - gpu_free(table, nodes)) // MAX_SPEC_GPU + base,
                          dtype=np.int64)

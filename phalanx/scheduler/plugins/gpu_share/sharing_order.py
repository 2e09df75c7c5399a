"""GpuSharingOrder: KAI Scheduler's `gpusharingorder` node order (NVIDIA/KAI-Scheduler
`pkg/scheduler/plugins/gpusharingorder/gpusharingorder.go`): a pod that shares a GPU (a `gpu-fraction` or
`gpu-memory` ask) scores a node whose GPUs already shared by other pods have room for it, so that shares fill used
GPUs before taking a free one on another node. KAI adds its GpuSharing score (1000) above its binpack scores;
here a node with such a GPU scores the maximum and the others 0, and the `kai` profile weighs the plugin above
NodeResourcesFit. Pods asking whole GPUs, or none, score 0 everywhere."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from phalanx.cluster.gpus import MILLI, device_table
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import MAX_NODE_SCORE, CycleState, IntArray


class GpuSharingOrder:
    name = "GpuSharingOrder"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        pass

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        gpu = state.pod.gpu
        if gpu is None or (gpu.memory <= 0 and not 0 < gpu.milli < MILLI):
            return np.zeros(len(nodes), dtype=np.int64)
        table = device_table(cluster)
        free = table.free[nodes]
        need = table.milli_on(gpu.memory)[nodes] if gpu.memory > 0 else np.full(len(nodes), gpu.milli)
        exists = np.arange(table.width)[None, :] < table.count[nodes][:, None]
        shared = exists & (free < MILLI) & (free >= need[:, None]) & (free > 0)
        return np.where(shared.any(axis=1), MAX_NODE_SCORE, 0).astype(np.int64)

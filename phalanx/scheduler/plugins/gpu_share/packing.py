"""GpuPackingScore: prefer partly used GPUs, then used nodes, then free nodes (KSS getPackingScore).

CPU-only pods score 0. For a GPU pod: (a) every GPU on the node fully free: 33 − #GPUs; otherwise walk
the node's GPUs by ascending free milli (stable) taking those with room until `count` are chosen;
(b) if any chosen GPU is fully free: max(50 − #fully free chosen, 33); (c) otherwise
max(100 − ⌊Σ ⌊free·100/1000⌋ / 10⌋, 50).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from phalanx.cluster.gpus import MILLI, device_table
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import MAX_NODE_SCORE, CycleState, IntArray


class GpuPackingScore:
    name = "GpuPackingScore"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        pass

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        gpu = state.pod.gpu
        if gpu is None or gpu.milli <= 0 or gpu.count <= 0:
            return np.zeros(len(nodes), dtype=np.int64)
        table = device_table(cluster)
        free = table.free[nodes]
        count = table.count[nodes]
        full = table.full[nodes]
        exists = np.arange(table.width)[None, :] < count[:, None]
        key = np.where(exists & (free >= gpu.milli), free, MILLI + 1)
        order = np.argsort(key, axis=1, kind="stable")[:, : gpu.count]
        chosen = np.take_along_axis(free, order, axis=1)
        fully_free_used = (chosen == MILLI).sum(axis=1)
        all_free = np.maximum(MAX_NODE_SCORE // 3 - full, full)
        new_gpus = np.maximum(MAX_NODE_SCORE // 2 - fully_free_used, MAX_NODE_SCORE // 3)
        shared = np.maximum(MAX_NODE_SCORE - (chosen * 100 // MILLI).sum(axis=1) // 10, MAX_NODE_SCORE // 2)
        return np.asarray(np.where(full == count, all_free, np.where(fully_free_used > 0, new_gpus, shared)),
                          dtype=np.int64)

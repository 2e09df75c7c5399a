"""DotProductScore (Tetris-style packing, KSS `-dimext merge -norm max`): node vector (free CPU/128000,
free GPU milli/8000), pod vector (CPU/128000, count·milli/8000); score = int(100·(1 − dot/2)), so the
smallest dot product wins. No normalisation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from phalanx.cluster.gpus import device_table, pod_shape
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import MAX_NODE_SCORE, CycleState, IntArray
from phalanx.scheduler.plugins.gpu_share.common import MAX_SPEC_CPU, MAX_SPEC_GPU, cpu_free, gpu_free


class DotProductScore:
    name = "DotProductScore"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        pass

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        shape = pod_shape(state.pod)
        table = device_table(cluster)
        node_cpu = cpu_free(cluster, nodes).astype(np.float64) / MAX_SPEC_CPU
        node_gpu = gpu_free(table, nodes).astype(np.float64) / MAX_SPEC_GPU
        pod_cpu = float(shape.cpu) / MAX_SPEC_CPU
        pod_gpu = float(shape.milli * shape.count) / MAX_SPEC_GPU
        dot = (node_cpu * pod_cpu + node_gpu * pod_gpu) / 2.0
        return np.asarray(np.trunc(float(MAX_NODE_SCORE) * (1.0 - dot)), dtype=np.int64)

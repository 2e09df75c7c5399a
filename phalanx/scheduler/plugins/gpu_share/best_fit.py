"""BestFitScore: the node left with the least free CPU and GPU after placement wins.

raw = 0.5·(free CPU − CPU)/128000 + 0.5·(free GPU milli − count·milli)/8000; s = int(100·(1 − raw)); then
min-max rescaled over the scored nodes to 0..100 with integer division (all equal: 0), as KSS's
NormalizeScore does. The integer rescaling can merge close scores into ties.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from phalanx.cluster.gpus import device_table, pod_shape
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import MAX_NODE_SCORE, CycleState, IntArray
from phalanx.scheduler.plugins.gpu_share.common import MAX_SPEC_CPU, MAX_SPEC_GPU, cpu_free, gpu_free


def min_max_normalize(scores: IntArray) -> IntArray:
    """(s − lowest)·100 // (highest − lowest); all equal → 0 (KSS plugin.NormalizeScore)."""
    if scores.size == 0:
        return scores
    low = scores.min()
    span = scores.max() - low
    if span == 0:
        return np.zeros_like(scores)
    return np.asarray((scores - low) * MAX_NODE_SCORE // span, dtype=np.int64)


class BestFitScore:
    name = "BestFitScore"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        pass

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        shape = pod_shape(state.pod)
        table = device_table(cluster)
        cpu_left = cpu_free(cluster, nodes) - shape.cpu
        gpu_left = gpu_free(table, nodes) - shape.milli * shape.count
        raw = cpu_left / MAX_SPEC_CPU * 0.5 + gpu_left / MAX_SPEC_GPU * 0.5
        # astype truncates toward zero, as Go's int64() does
        return min_max_normalize(((1.0 - raw) * float(MAX_NODE_SCORE)).astype(np.int64))

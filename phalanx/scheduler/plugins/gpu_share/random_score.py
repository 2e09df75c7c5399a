"""RandomScore: one feasible node, drawn uniformly with a seeded generator, scores 100; the rest 0
(KSS's PreScore draw with `rand.Intn` over the feasible nodes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import MAX_NODE_SCORE, CycleState, IntArray
from phalanx.scheduler.plugins.gpu_share.common import seed_arg


class RandomScore:
    name = "RandomScore"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        self.rng = np.random.default_rng([seed_arg(args, self.name), 1])

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        out = np.zeros(len(nodes), dtype=np.int64)
        if len(nodes):
            out[int(self.rng.integers(len(nodes)))] = MAX_NODE_SCORE
        return out

"""NodeName: a pod that names a node in spec.nodeName fits only that node."""

from __future__ import annotations

from collections import Counter

import numpy as np

from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import BoolArray, Code, CycleState

REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = "NodeName"
    static = True
    node_static = False  # a template node has no name a pod could ask for
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    def filter(self, state: CycleState, cluster: ClusterState) -> BoolArray:
        wanted = state.pod.placement.node_name
        mask = np.ones(len(cluster), dtype=bool)
        if wanted is not None:
            mask[:] = False
            if wanted in cluster.index:
                mask[cluster.index[wanted]] = True
        return mask

    def reasons(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> Counter[str]:
        return Counter({REASON: int(failed.sum())})

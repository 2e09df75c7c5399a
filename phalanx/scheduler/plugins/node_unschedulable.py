"""NodeUnschedulable: cordoned nodes take only pods tolerating `node.kubernetes.io/unschedulable`."""

from __future__ import annotations

from collections import Counter

import numpy as np

from phalanx.api.objects import Taint
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import BoolArray, Code, CycleState

UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", value="", effect="NoSchedule")
REASON = "node(s) were unschedulable"


class NodeUnschedulable:
    name = "NodeUnschedulable"
    static = True
    node_static = True
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    def filter(self, state: CycleState, cluster: ClusterState) -> BoolArray:
        if any(t.tolerates(UNSCHEDULABLE_TAINT) for t in state.pod.placement.tolerations):
            return np.ones(len(cluster), dtype=bool)
        return ~cluster.unschedulable

    def reasons(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> Counter[str]:
        return Counter({REASON: int(failed.sum())})

"""NodePorts: a pod that binds host ports fits only nodes where no bound pod holds one of them.

Restates kube-scheduler v1.37's nodeports plugin: PreFilter skips a pod without host ports; Filter rejects a
node where a wanted (host IP, protocol, port) conflicts with one in use (`HostPortInfo.CheckConflict`:
0.0.0.0 overlaps every address), Unschedulable (preemption can free the port). The ports in use are counted per
node in the pod index (cluster/pods.py), so preemption's dry run, which hides victims there, frees theirs.
Only the nodes that hold host ports are visited: few pods bind them.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from phalanx.api.host_ports import conflicts
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import BoolArray, Code, CycleState

REASON = "node(s) didn't have free ports for the requested pod ports"


class NodePorts:
    name = "NodePorts"
    static = False
    node_static = False  # the ports in use are the bound pods', not the node's
    reads_bound_pods = True
    code = Code.UNSCHEDULABLE

    def skips(self, state: CycleState, cluster: ClusterState) -> bool:
        return not state.pod.host_ports

    def filter(self, state: CycleState, cluster: ClusterState) -> BoolArray:
        mask = np.ones(len(cluster), dtype=bool)
        wanted = state.pod.host_ports
        if not wanted:
            return mask
        for node, used in cluster.pod_index.ports.items():
            if node < len(mask) and any(conflicts(port, used) for port in wanted):
                mask[node] = False
        return mask

    def reasons(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> Counter[str]:
        return Counter({REASON: int(failed.sum())})

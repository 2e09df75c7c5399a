"""The placement scorers (RunPlacementScorePlugins): NodeResourcesFit's ScorePlacement (MostAllocated over a
placement taken as one node) and PodGroupPodsCount's (the pods a placement seats, normalised)."""

from __future__ import annotations

from collections.abc import Sequence

from phalanx.api.objects import Pod
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import MAX_NODE_SCORE, BoolArray
from phalanx.scheduler.plugins.node_resources import ResourceSpec

NODE_RESOURCES_FIT = "NodeResourcesFit"
POD_GROUP_PODS_COUNT = "PodGroupPodsCount"
# Resources scored by their non-zero requests (row 0 cpu, 1 memory of ClusterState.nonzero_requested).
_NONZERO_ROWS = {"cpu": 0, "memory": 1}


def fit_score(cluster: ClusterState, nodes: BoolArray, placed: Sequence[Pod], resources: Sequence[ResourceSpec]) -> int:
    """NodeResourcesFit.ScorePlacement: MostAllocated over the placement's nodes taken as one node.

    Per resource: allocatable summed over the placement's nodes that have some, requested = what those nodes
    hold already (non-zero requests for cpu and memory) plus what the group's placed pods ask; score
    `min(requested, allocatable)·100/allocatable`, averaged with the resources' weights. A resource no node
    offers counts for nothing; an extended resource the placed pods do not ask for is left out, and so is
    `pods` (kube-scheduler reads neither for these nodes).
    """
    total = weights = 0
    for spec in resources:
        col = cluster.column.get(spec.name)
        if col is None or spec.name == "pods":
            continue
        allocatable = cluster.allocatable[:, col]
        row = _NONZERO_ROWS.get(spec.name)
        if row is not None:
            group = sum(int(cluster.demand(pod).nonzero[row]) for pod in placed)
            held = cluster.nonzero_requested[:, row]
        else:
            group = sum(pod.requests.get(spec.name, 0) for pod in placed)
            if group == 0 and spec.name != "ephemeral-storage":
                continue
            held = cluster.requested[:, col]
        counted = nodes & (allocatable > 0)
        capacity = int(allocatable[counted].sum())
        if capacity == 0:
            continue
        requested = min(group + int(held[counted].sum()), capacity)
        total += requested * MAX_NODE_SCORE // capacity * spec.weight
        weights += spec.weight
    return total // weights if weights else 0


def pods_count_scores(counts: Sequence[int]) -> list[int]:
    """PodGroupPodsCount: NormalizePlacementScore's 100·count/max (never 0 here: a feasible placement seats
    at least one pod)."""
    most = max(counts)
    return [count * MAX_NODE_SCORE // most for count in counts]

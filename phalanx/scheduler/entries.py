"""The scheduling queue's entry keys (a pod's, a PodGroup's, a CompositePodGroup tree root's) and the priority a
PodGroup's entry is queued at."""

from __future__ import annotations

from phalanx.api.objects import PodGroup

POD = "pod:"
GROUP = "group:"
COMPOSITE = "composite:"  # a CompositePodGroup tree's entry, by its root (plugins/composite/)


def group_priority(group: PodGroup) -> int:
    """A PodGroup's priority as kube-scheduler reads it: spec.priority, 0 when unset."""
    return group.priority if group.priority is not None else 0

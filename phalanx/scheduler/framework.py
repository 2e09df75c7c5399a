"""The plugin framework, after kube-scheduler's: Filter and Score extension points over node arrays.

A Filter plugin returns a boolean mask over all nodes; when a pod fits nowhere, the framework asks the
failing plugins why, node by node in plugin order (as kube-scheduler stops at a node's first failing
plugin), and counts the reasons into `0/N nodes are available: …`. A Score plugin returns integer scores
for the candidate nodes; NormalizeScore maps them to 0..100; the framework sums them by weight.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from phalanx.api.objects import Pod
from phalanx.cluster.state import ClusterState, PodDemand

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
MAX_NODE_SCORE = 100


class PluginError(Exception):
    """A plugin's Error status (not Unschedulable): kube-scheduler ends the pod's (or group's) cycle with
    SchedulerError and this message, and retries it after backoff."""


class Code(Enum):
    """kube-scheduler's status codes for a failed Filter."""

    UNSCHEDULABLE = "Unschedulable"
    # No preemption can help (a taint, an affinity mismatch): PostFilter skips such nodes.
    UNSCHEDULABLE_AND_UNRESOLVABLE = "UnschedulableAndUnresolvable"


@dataclass(slots=True)
class CycleState:
    """Per-cycle scratch data of one pod (kube-scheduler's CycleState)."""

    pod: Pod
    demand: PodDemand
    data: dict[str, object] = field(default_factory=dict)


class FilterPlugin(Protocol):
    name: str
    # Static filters depend only on the pod's Placement and the nodes' labels, taints and cordons:
    # their masks are cached per Placement until the nodes change.
    static: bool
    # Node-static filters look only at the pod and the node's own labels, taints and spec (not its name, not
    # the pods on it, not its free room): the cluster autoscaler asks them about a node group's template node.
    node_static: bool
    code: Code

    def filter(self, state: CycleState, cluster: ClusterState) -> BoolArray: ...

    def reasons(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> Counter[str]:
        """Count why each node in `failed` fails this plugin (one node may give several reasons)."""
        ...


@runtime_checkable
class RangeFilterPlugin(Protocol):
    """A dynamic Filter that can also check only nodes [lo, hi): the cycle then stops filtering once it has
    found enough feasible nodes to score, as kube-scheduler does, instead of filtering every node."""

    def filter_range(self, state: CycleState, cluster: ClusterState, lo: int, hi: int) -> BoolArray: ...


@runtime_checkable
class SkippingFilterPlugin(Protocol):
    """A Filter whose PreFilter can Skip it for a pod (kube-scheduler's Skip status): every node passes, and the
    cycle does not call `filter` at all. Rules between pods use it so that pods without them cost nothing."""

    def skips(self, state: CycleState, cluster: ClusterState) -> bool: ...


@runtime_checkable
class PerNodeCodePlugin(Protocol):
    """A Filter whose failures are UnschedulableAndUnresolvable on some nodes only (its `code` covers the rest)."""

    def unresolvable(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> BoolArray: ...


@runtime_checkable
class AssignedPodHintPlugin(Protocol):
    """A Filter with a queueing hint for an assigned pod being added (EventsToRegister's AssignedPod/Add): whether
    a pod this plugin rejected may fit now that `added` is bound (kube-scheduler's QueueingHintFn: Queue or
    QueueSkip). A pod whose rejecting plugins all answer False stays unschedulable."""

    name: str

    def requeue_after_assigned_pod_add(self, pending: Pod, added: Pod) -> bool: ...


@runtime_checkable
class SkippingScorePlugin(Protocol):
    """A Score plugin whose PreScore can Skip it for a pod, or that would score every node alike: it is not
    called, and a score the same for every candidate changes no choice (the total is only compared)."""

    def skips_score(self, state: CycleState, cluster: ClusterState) -> bool: ...


class ScorePlugin(Protocol):
    name: str

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        """Normalized scores (0..100) for the candidate nodes, in their order."""
        ...


class ReservePlugin(Protocol):
    """Reserve claims what the node count alone does not say (a device, a share of one) for a placed pod;
    Unreserve gives it back when a PodGroup cycle rolls back or the pod leaves."""

    name: str

    def reserve(self, state: CycleState, cluster: ClusterState, node: int) -> None: ...

    def unreserve(self, pod: Pod, cluster: ClusterState, node: int) -> None: ...


@runtime_checkable
class RestoringReservePlugin(Protocol):
    """A Reserve plugin whose holdings (a device, a share of one) can be put back exactly after Unreserve, so
    that a trial that lifts a running pod (a preemption dry run) never moves what the pod holds."""

    def held(self, pod: Pod, cluster: ClusterState) -> object: ...

    def restore(self, pod: Pod, cluster: ClusterState, node: int, held: object) -> bool:
        """Put back exactly what `held` recorded; False (and nothing changed) if that is taken meanwhile."""
        ...


def default_normalize(scores: IntArray, *, reverse: bool) -> IntArray:
    """kube-scheduler's DefaultNormalizeScore: scale to 0..100 by the maximum, optionally reversed."""
    top = int(scores.max()) if scores.size else 0
    if top == 0:
        return np.full(scores.shape, MAX_NODE_SCORE if reverse else 0, dtype=np.int64)
    out = MAX_NODE_SCORE * scores // top
    return MAX_NODE_SCORE - out if reverse else out


def fit_error(total: int, reasons: Counter[str]) -> str:
    """`0/4 nodes are available: 2 Insufficient cpu, 2 node(s) had untolerated taint(s).`"""
    parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
    return f"0/{total} nodes are available: {', '.join(parts)}."

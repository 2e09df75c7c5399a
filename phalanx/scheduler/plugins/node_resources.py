"""NodeResourcesFit (filter and score) and NodeResourcesBalancedAllocation, with kube-scheduler's formulas.

Fit checks every requested resource plus the pod count. Scoring strategies: LeastAllocated (default),
MostAllocated and RequestedToCapacityRatio, over the configured resources and weights (cpu=1, memory=1).
Scores use the non-zero requests (100m cpu, 200Mi memory for pods that set none) for cpu and memory;
an extended resource the pod does not request is left out, as kube-scheduler does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from phalanx.cluster.state import ClusterState
from phalanx.errors import InputError
from phalanx.scheduler.framework import MAX_NODE_SCORE, BoolArray, Code, CycleState, IntArray

FloatArray = npt.NDArray[np.float64]
MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


def _requested_and_allocatable(state: CycleState, cluster: ClusterState, nodes: IntArray, resource: str,
                               *, nonzero: bool) -> tuple[IntArray, IntArray] | None:
    """Node's requests plus the pod's, and allocatable, for `nodes`; None if the resource is to be skipped."""
    demand = state.demand
    if nonzero and resource in ("cpu", "memory"):
        j = 0 if resource == "cpu" else 1
        pod_request = int(demand.nonzero[j])
        node_requested = cluster.nonzero_requested[nodes, j]
    else:
        col = cluster.column.get(resource)
        pod_request = int(demand.requests[col]) if col is not None and col < demand.requests.shape[0] else 0
        if pod_request == 0 and resource not in ("cpu", "memory", "ephemeral-storage"):
            return None  # extended resources count only for pods that request them
        if col is None:
            return None
        node_requested = cluster.requested[nodes, col]
    col = cluster.column.get(resource)
    if col is None:
        return None
    return node_requested + pod_request, cluster.allocatable[nodes, col]


def _weighted(scores: list[tuple[IntArray, IntArray, int]], n: int) -> IntArray:
    """Σ(score·w)/Σw over resources, skipping a resource on nodes where its allocatable is 0."""
    total = np.zeros(n, dtype=np.int64)
    weights = np.zeros(n, dtype=np.int64)
    for score, alloc, weight in scores:
        present = alloc > 0
        total += np.where(present, score * weight, 0)
        weights += np.where(present, weight, 0)
    return np.where(weights > 0, total // np.maximum(weights, 1), 0)


def least_allocated(requested: IntArray, alloc: IntArray) -> IntArray:
    safe = np.maximum(alloc, 1)
    score = (alloc - requested) * MAX_NODE_SCORE // safe
    return np.where((alloc == 0) | (requested > alloc), 0, score)


def most_allocated(requested: IntArray, alloc: IntArray) -> IntArray:
    safe = np.maximum(alloc, 1)
    score = np.minimum(requested, alloc) * MAX_NODE_SCORE // safe
    return np.where(alloc == 0, 0, score)


class BrokenLinear:
    """RequestedToCapacityRatio's shape: points (utilization 0..100, score 0..10) joined by lines."""

    def __init__(self, shape: Sequence[tuple[int, int]]) -> None:
        self.util = np.array([p[0] for p in shape], dtype=np.int64)
        self.score = np.array([p[1] * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE) for p in shape],
                              dtype=np.int64)

    def __call__(self, p: IntArray) -> IntArray:
        out = np.full(p.shape, self.score[-1], dtype=np.int64)
        out = np.where(p < self.util[0], self.score[0], out)
        for i in range(len(self.util) - 1, 0, -1):
            lo_u, hi_u, lo_s, hi_s = self.util[i - 1], self.util[i], self.score[i - 1], self.score[i]
            inside = (p >= lo_u) & (p <= hi_u)
            span = max(int(hi_u - lo_u), 1)
            out = np.where(inside, lo_s + (hi_s - lo_s) * (p - lo_u) // span, out)
        return out


class NodeResourcesFit:
    name = "NodeResourcesFit"
    static = False
    code = Code.UNSCHEDULABLE

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        strategy = dict((args or {}).get("scoringStrategy") or {})
        self.strategy = str(strategy.get("type", "LeastAllocated"))
        if self.strategy not in ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"):
            raise InputError(f"unsupported scoring strategy {self.strategy!r}",
                             field="pluginConfig[NodeResourcesFit].args.scoringStrategy.type")
        raw = strategy.get("resources")
        self.resources = tuple(ResourceSpec(str(r["name"]), int(r.get("weight", 1)) or 1) for r in raw) \
            if raw else DEFAULT_RESOURCES
        self.shape: BrokenLinear | None = None
        if self.strategy == "RequestedToCapacityRatio":
            ratio = strategy.get("requestedToCapacityRatio") or {}
            points = [(int(p["utilization"]), int(p["score"])) for p in ratio.get("shape", [])]
            if not points:
                raise InputError("needs at least one point",
                                 field="pluginConfig[NodeResourcesFit].args.scoringStrategy"
                                       ".requestedToCapacityRatio.shape")
            self.shape = BrokenLinear(sorted(points))

    # --- Filter ---

    def filter(self, state: CycleState, cluster: ClusterState) -> BoolArray:
        demand = state.demand
        mask = np.ones(len(cluster), dtype=bool)
        for col in demand.columns:
            mask &= cluster.requested[:, col] + demand.requests[col] <= cluster.allocatable[:, col]
        return mask

    def reasons(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> Counter[str]:
        demand = state.demand
        out: Counter[str] = Counter()
        for col in demand.columns:
            short = cluster.requested[failed, col] + demand.requests[col] > cluster.allocatable[failed, col]
            count = int(short.sum())
            if count:
                name = cluster.resources[col]
                out["Too many pods" if name == "pods" else f"Insufficient {name}"] += count
        return out

    # --- Score ---

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        parts: list[tuple[IntArray, IntArray, int]] = []
        for spec in self.resources:
            pair = _requested_and_allocatable(state, cluster, nodes, spec.name, nonzero=True)
            if pair is None:
                continue
            requested, alloc = pair
            if self.strategy == "LeastAllocated":
                parts.append((least_allocated(requested, alloc), alloc, spec.weight))
            elif self.strategy == "MostAllocated":
                parts.append((most_allocated(requested, alloc), alloc, spec.weight))
            else:
                parts.append((self._ratio(requested, alloc), alloc, spec.weight))
        if self.strategy == "RequestedToCapacityRatio":
            return self._ratio_combine(parts, len(nodes))
        return _weighted(parts, len(nodes))

    def _ratio(self, requested: IntArray, alloc: IntArray) -> IntArray:
        assert self.shape is not None
        util = np.where((alloc == 0) | (requested > alloc), MAX_UTILIZATION,
                        requested * MAX_UTILIZATION // np.maximum(alloc, 1))
        return self.shape(util)

    @staticmethod
    def _ratio_combine(parts: list[tuple[IntArray, IntArray, int]], n: int) -> IntArray:
        """RequestedToCapacityRatio leaves zero scores out of Σw and rounds the mean."""
        total = np.zeros(n, dtype=np.int64)
        weights = np.zeros(n, dtype=np.int64)
        for score, alloc, weight in parts:
            counted = (alloc > 0) & (score > 0)
            total += np.where(counted, score * weight, 0)
            weights += np.where(counted, weight, 0)
        mean = np.floor(total / np.maximum(weights, 1) + 0.5).astype(np.int64)  # Go's math.Round, half up
        return np.where(weights > 0, mean, 0)


class NodeResourcesBalancedAllocation:
    """Favours nodes whose resource fractions stay even: score = (1 − std of fractions) · 100."""

    name = "NodeResourcesBalancedAllocation"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        raw = (args or {}).get("resources")
        self.resources = tuple(ResourceSpec(str(r["name"]), int(r.get("weight", 1))) for r in raw) \
            if raw else DEFAULT_RESOURCES

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        fractions: list[FloatArray] = []
        present: list[BoolArray] = []
        pod_requests_any = False
        for spec in self.resources:
            pair = _requested_and_allocatable(state, cluster, nodes, spec.name, nonzero=False)
            if pair is None:
                continue
            requested, alloc = pair
            col = cluster.column.get(spec.name)
            if col is not None and col < state.demand.requests.shape[0] and state.demand.requests[col] > 0:
                pod_requests_any = True
            with np.errstate(divide="ignore", invalid="ignore"):
                fractions.append(np.minimum(np.where(alloc > 0, requested / np.maximum(alloc, 1), 0.0), 1.0))
            present.append(alloc > 0)
        if not pod_requests_any or not fractions:
            # kube-scheduler skips BalancedAllocation for best-effort pods: every node scores the same.
            return np.zeros(len(nodes), dtype=np.int64)
        frac = np.vstack(fractions)
        mask = np.vstack(present)
        count = mask.sum(axis=0)
        mean = np.where(count > 0, (frac * mask).sum(axis=0) / np.maximum(count, 1), 0.0)
        variance = ((frac - mean) ** 2 * mask).sum(axis=0) / np.maximum(count, 1)
        std = np.where(count == 2, np.abs(np.where(mask, frac, 0).sum(axis=0) - 2 * np.min(
            np.where(mask, frac, np.inf), axis=0)) / 2, np.sqrt(variance))
        std = np.where(count < 2, 0.0, std)
        return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)

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


_GATHERED = "NodeResources/gathered"
_EXTENDED_ALWAYS = ("cpu", "memory", "ephemeral-storage")


def _gathered(state: CycleState, cluster: ClusterState, nodes: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """Requested, allocatable (resources × `nodes`) and non-zero requested (2 × `nodes`), taken from the
    cluster once per cycle and shared by the resource scores (kept in the cycle's scratch data)."""
    cached = state.data.get(_GATHERED)
    if isinstance(cached, tuple) and cached[0] is nodes and cached[1] is cluster and cached[2] == cluster.generation:
        return cached[3], cached[4], cached[5]
    requested = cluster.requested_by_resource.take(nodes, axis=1)
    allocatable = cluster.allocatable_by_resource.take(nodes, axis=1)
    nonzero = cluster.nonzero_by_resource.take(nodes, axis=1)
    state.data[_GATHERED] = (nodes, cluster, cluster.generation, requested, allocatable, nonzero)
    return requested, allocatable, nonzero


@dataclass(slots=True)
class _Rows:
    """The resources a score counts for one pod, as rows over the candidate nodes."""

    requested: IntArray  # the node's requests plus the pod's, resources × nodes
    allocatable: IntArray  # resources × nodes
    weights: list[int]
    columns: list[int]  # the cluster's column of each row
    all_present: bool  # every node has a non-zero allocatable of every row's resource


def _rows(state: CycleState, cluster: ClusterState, nodes: IntArray, specs: Sequence[ResourceSpec], *,
          nonzero: bool) -> _Rows | None:
    """kube-scheduler's resource list for scoring: cpu and memory (non-zero requests when `nonzero`),
    ephemeral-storage, and an extended resource only when the pod requests it. None when nothing counts."""
    demand = state.demand
    width = demand.requests.shape[0]
    requested, allocatable, nonzero_requested = _gathered(state, cluster, nodes)
    columns: list[int] = []
    weights: list[int] = []
    sources: list[tuple[IntArray, int]] = []
    from_nonzero = 0
    for spec in specs:
        resource = spec.name
        col = cluster.column.get(resource)
        if nonzero and resource in ("cpu", "memory"):
            if col is None:
                continue
            j = 0 if resource == "cpu" else 1
            sources.append((nonzero_requested[j], int(demand.nonzero[j])))
            from_nonzero += 1
        else:
            pod_request = int(demand.requests[col]) if col is not None and col < width else 0
            if (pod_request == 0 and resource not in _EXTENDED_ALWAYS) or col is None:
                continue  # extended resources count only for pods that request them
            sources.append((requested[col], pod_request))
        columns.append(col)
        weights.append(spec.weight)
    if not columns:
        return None
    if columns == [0, 1]:  # cpu and memory, the default: two rows in one operation
        if from_nonzero == 2:
            rows = nonzero_requested + demand.nonzero[:, None]
        elif from_nonzero == 0:
            rows = requested[:2] + demand.requests[:2, None]
        else:
            rows = np.vstack([row + pod_request for row, pod_request in sources])
        alloc = allocatable[:2]
    else:
        rows = np.vstack([row + pod_request for row, pod_request in sources])
        alloc = allocatable[columns]
    return _Rows(rows, alloc, weights, columns, all(cluster.allocatable_positive(c) for c in columns))


def _weighted_rows(scores: IntArray, rows: _Rows) -> IntArray:
    """Σ(score·w)/Σw over the rows, skipping a resource on nodes where its allocatable is 0."""
    if rows.all_present:
        weights = rows.weights
        total = scores[0] * weights[0] if weights[0] != 1 else scores[0]
        for i in range(1, len(weights)):
            total = total + (scores[i] * weights[i] if weights[i] != 1 else scores[i])
        weight_sum = sum(weights)
        if weight_sum <= 0:
            return np.zeros(scores.shape[1], dtype=np.int64)
        return np.asarray(total // weight_sum if weight_sum != 1 else total, dtype=np.int64)
    return _weighted([(scores[i], rows.allocatable[i], w) for i, w in enumerate(rows.weights)], scores.shape[1])


def _requested_and_allocatable(state: CycleState, cluster: ClusterState, nodes: IntArray, resource: str,
                               *, nonzero: bool) -> tuple[IntArray, IntArray] | None:
    """Node's requests plus the pod's, and allocatable, for `nodes`; None if the resource is to be skipped."""
    rows = _rows(state, cluster, nodes, (ResourceSpec(resource),), nonzero=nonzero)
    if rows is None:
        return None
    return rows.requested[0], rows.allocatable[0]


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
            rise = (hi_s - lo_s) * (p - lo_u)
            # Go's integer division truncates toward zero (a falling segment must not round down).
            out = np.where(inside, lo_s + np.sign(rise) * (np.abs(rise) // span), out)
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
        return self.filter_range(state, cluster, 0, len(cluster))

    def filter_range(self, state: CycleState, cluster: ClusterState, lo: int, hi: int) -> BoolArray:
        """`filter` for nodes lo..hi-1: the node's free capacity covers every resource the pod requests."""
        demand = state.demand
        requests = demand.requests
        free = cluster.free_by_resource
        columns = demand.columns
        mask: BoolArray = free[columns[0], lo:hi] >= requests[columns[0]]
        for col in columns[1:]:
            mask &= free[col, lo:hi] >= requests[col]
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
        rows = _rows(state, cluster, nodes, self.resources, nonzero=True)
        if rows is None:
            return np.zeros(len(nodes), dtype=np.int64)
        requested, alloc = rows.requested, rows.allocatable
        if self.strategy == "LeastAllocated":
            if rows.all_present:
                # (alloc − requested)·100 // alloc, and 0 where the request exceeds alloc: the quotient is
                # negative exactly there, so a maximum with 0 is least_allocated for positive alloc.
                scores = np.maximum((alloc - requested) * MAX_NODE_SCORE // alloc, 0)
            else:
                scores = least_allocated(requested, alloc)
            return _weighted_rows(scores, rows)
        if self.strategy == "MostAllocated":
            if rows.all_present:
                scores = np.minimum(requested, alloc) * MAX_NODE_SCORE // alloc
            else:
                scores = most_allocated(requested, alloc)
            return _weighted_rows(scores, rows)
        parts = [(self._ratio(requested[i], alloc[i]), alloc[i], w) for i, w in enumerate(rows.weights)]
        return self._ratio_combine(parts, len(nodes))

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
        rows = _rows(state, cluster, nodes, self.resources, nonzero=False)
        requests = state.demand.requests
        if rows is None or not any(requests[col] > 0 for col in rows.columns if col < requests.shape[0]):
            # kube-scheduler skips BalancedAllocation for best-effort pods: every node scores the same.
            return np.zeros(len(nodes), dtype=np.int64)
        requested, alloc = rows.requested, rows.allocatable
        if rows.all_present and len(rows.columns) == 2:
            # Two resources on nodes that have both: std = |f₀ + f₁ − 2·min(f₀, f₁)| / 2, the same
            # operations, in the same order, as the general formula below takes for count == 2.
            frac = np.minimum(requested / alloc, 1.0)
            std: FloatArray = np.abs(frac[0] + frac[1] - 2 * np.minimum(frac[0], frac[1])) / 2
            return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.minimum(np.where(alloc > 0, requested / np.maximum(alloc, 1), 0.0), 1.0)
        mask = alloc > 0
        count = mask.sum(axis=0)
        mean = np.where(count > 0, (frac * mask).sum(axis=0) / np.maximum(count, 1), 0.0)
        variance = ((frac - mean) ** 2 * mask).sum(axis=0) / np.maximum(count, 1)
        std = np.where(count == 2, np.abs(np.where(mask, frac, 0).sum(axis=0) - 2 * np.min(
            np.where(mask, frac, np.inf), axis=0)) / 2, np.sqrt(variance))
        std = np.where(count < 2, 0.0, std)
        return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)

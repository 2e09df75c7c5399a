"""NodeResourcesFit (filter and score) and NodeResourcesBalancedAllocation, with kube-scheduler's formulas.

Fit checks every requested resource plus the pod count. Scoring strategies: LeastAllocated (default),
MostAllocated and RequestedToCapacityRatio, over the configured resources and weights (cpu=1, memory=1).
Scores use the non-zero requests (100m cpu, 200Mi memory for pods that set none) for cpu and memory;
an extended resource the pod does not request is left out, as kube-scheduler does.
"""

from __future__ import annotations

import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from phalanx.cluster.state import ClusterState, PodDemand
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
    allocatable = cluster.allocatable_by_resource.take(nodes, axis=1)
    requested = allocatable - cluster.free_by_resource.take(nodes, axis=1)
    nonzero = cluster.nonzero_requested.take(nodes, axis=0).T
    state.data[_GATHERED] = (nodes, cluster, cluster.generation, requested, allocatable, nonzero)
    return requested, allocatable, nonzero


@dataclass(frozen=True, slots=True)
class _Plan:
    """What a resource score reads for one pod shape: for every resource it counts, the row of the node's
    requests (non-zero ones or plain ones), the pod's request, the allocatable column and the weight."""

    from_nonzero: tuple[bool, ...]  # the row is one of the non-zero requests (cpu 0, memory 1)
    rows: tuple[int, ...]  # the non-zero request's index (cpu 0, memory 1), or the requested column
    pod: tuple[int, ...]  # the pod's request of each resource
    columns: tuple[int, ...]  # the cluster's column of each resource
    weights: tuple[int, ...]
    all_present: bool  # every node has a non-zero allocatable amount of every resource counted
    requests_any: bool  # the pod requests (a plain, not a non-zero default) some resource counted


class _Plans:
    """A plugin's plans by pod shape (PodDemand), for the cluster's current layout of columns."""

    def __init__(self, specs: Sequence[ResourceSpec], *, nonzero: bool) -> None:
        self.specs = specs
        self.nonzero = nonzero
        self._known: dict[int, tuple[PodDemand, weakref.ref[ClusterState], int, _Plan | None]] = {}

    def get(self, demand: PodDemand, cluster: ClusterState) -> _Plan | None:
        known = self._known.get(id(demand))
        if known is not None and known[0] is demand and known[1]() is cluster and known[2] == cluster.layout:
            return known[3]
        plan = _plan(demand, cluster, self.specs, nonzero=self.nonzero)
        if not _cacheable(demand):
            return plan
        if len(self._known) >= _MAX_SHAPES:
            self._known.clear()
        self._known[id(demand)] = (demand, weakref.ref(cluster), cluster.layout, plan)
        return plan


def _plan(demand: PodDemand, cluster: ClusterState, specs: Sequence[ResourceSpec], *, nonzero: bool) -> _Plan | None:
    """kube-scheduler's resource list for scoring: cpu and memory (non-zero requests when `nonzero`),
    ephemeral-storage, and an extended resource only when the pod requests it. None when nothing counts."""
    width = demand.requests.shape[0]
    from_nonzero: list[bool] = []
    rows: list[int] = []
    pod: list[int] = []
    columns: list[int] = []
    weights: list[int] = []
    for spec in specs:
        resource = spec.name
        col = cluster.column.get(resource)
        if nonzero and resource in ("cpu", "memory"):
            if col is None:
                continue
            j = 0 if resource == "cpu" else 1
            from_nonzero.append(True)
            rows.append(j)
            pod.append(int(demand.nonzero[j]))
        else:
            pod_request = int(demand.requests[col]) if col is not None and col < width else 0
            if (pod_request == 0 and resource not in _EXTENDED_ALWAYS) or col is None:
                continue  # extended resources count only for pods that request them
            from_nonzero.append(False)
            rows.append(col)
            pod.append(pod_request)
        columns.append(col)
        weights.append(spec.weight)
    if not columns:
        return None
    return _Plan(tuple(from_nonzero), tuple(rows), tuple(pod), tuple(columns), tuple(weights),
                 all(cluster.allocatable_positive(c) for c in columns),
                 any(demand.requests[c] > 0 for c in columns if c < width))


def _rows(state: CycleState, cluster: ClusterState, nodes: IntArray, plan: _Plan) -> tuple[IntArray, IntArray]:
    """The plan's rows over `nodes`: the node's requests plus the pod's, and allocatable (resources × nodes)."""
    requested, allocatable, nonzero_requested = _gathered(state, cluster, nodes)
    if plan.columns == (0, 1):  # cpu and memory, the default: both rows in one operation
        if plan.from_nonzero == (True, True):
            return nonzero_requested + state.demand.nonzero[:, None], allocatable[:2]
        if plan.from_nonzero == (False, False):
            return requested[:2] + state.demand.requests[:2, None], allocatable[:2]
    rows = np.vstack([(nonzero_requested if nz else requested)[row] + pod
                      for nz, row, pod in zip(plan.from_nonzero, plan.rows, plan.pod, strict=True)])
    return rows, allocatable[list(plan.columns)]


def _weighted_rows(scores: IntArray, alloc: IntArray, plan: _Plan) -> IntArray:
    """Σ(score·w)/Σw over the rows, skipping a resource on nodes where its allocatable is 0."""
    weights = plan.weights
    if plan.all_present:
        total = scores[0] * weights[0] if weights[0] != 1 else scores[0]
        for i in range(1, len(weights)):
            total = total + (scores[i] * weights[i] if weights[i] != 1 else scores[i])
        weight_sum = sum(weights)
        if weight_sum <= 0:
            return np.zeros(scores.shape[1], dtype=np.int64)
        return np.asarray(total // weight_sum if weight_sum != 1 else total, dtype=np.int64)
    return _weighted([(scores[i], alloc[i], w) for i, w in enumerate(weights)], scores.shape[1])


# Per-node scores of one pod shape are kept for every node and brought up to date node by node from the
# cluster's log of changed nodes; the update of one node is plain integer (or float) arithmetic in Python,
# the same operations the vector formulas do, element by element. Values this large could overflow the
# int64 vector formulas, which the exact Python integers would not: such nodes take the vector path.
_SCALAR_LIMIT = 1 << 55
_MAX_SHAPES = 64
_MAX_CHANGES = 256


@dataclass(slots=True)
class _NodeScores:
    cluster: weakref.ref[ClusterState]
    demand: PodDemand
    mark: tuple[int, int]
    scores: IntArray


class _ScoreCache:
    """Scores of every node per pod shape (PodDemand), for scores that depend only on the node and the pod.

    A shape gets its table on its second use within _MAX_CHANGES node changes (a shape seen once, or
    rarely, is scored on the candidate nodes only, as without the cache), and keeps it while it is used
    at least that often."""

    def __init__(self) -> None:
        self._entries: dict[int, _NodeScores] = {}
        self._seen: dict[int, tuple[PodDemand, weakref.ref[ClusterState], tuple[int, int]]] = {}

    def scores(self, state: CycleState, cluster: ClusterState, nodes: IntArray,
               vector: Callable[[CycleState, ClusterState, IntArray], IntArray],
               one: Callable[[ClusterState, int], int | None]) -> IntArray:
        demand = state.demand
        key = id(demand)
        entry = self._entries.get(key)
        if entry is not None:
            if entry.demand is demand and entry.cluster() is cluster:
                changed = cluster.changes_since(entry.mark)
                if changed is not None and len(changed) <= _MAX_CHANGES:
                    table = entry.scores
                    for node in set(changed):
                        value = one(cluster, node)
                        if value is None:
                            break
                        table[node] = value
                    else:
                        entry.mark = cluster.change_mark()
                        return table.take(nodes)
            del self._entries[key]
        seen = self._seen.get(key)
        if len(self._seen) >= 4 * _MAX_SHAPES:
            self._seen.clear()
        self._seen[key] = (demand, weakref.ref(cluster), cluster.change_mark())
        if seen is None or seen[0] is not demand or seen[1]() is not cluster:
            return vector(state, cluster, nodes)
        changed = cluster.changes_since(seen[2])
        if changed is None or len(changed) > _MAX_CHANGES:
            return vector(state, cluster, nodes)
        if len(self._entries) >= _MAX_SHAPES:
            self._entries.clear()
        everywhere = np.array(vector(state, cluster, np.arange(len(cluster))), dtype=np.int64)
        self._entries[key] = _NodeScores(weakref.ref(cluster), demand, cluster.change_mark(), everywhere)
        return everywhere.take(nodes)


def _cacheable(demand: PodDemand) -> bool:
    """A PodDemand from ClusterState.demand: shared by every pod of its shape and never changed."""
    return not demand.requests.flags.writeable


def _requested_and_allocatable(state: CycleState, cluster: ClusterState, nodes: IntArray, resource: str,
                               *, nonzero: bool) -> tuple[IntArray, IntArray] | None:
    """Node's requests plus the pod's, and allocatable, for `nodes`; None if the resource is to be skipped."""
    plan = _plan(state.demand, cluster, (ResourceSpec(resource),), nonzero=nonzero)
    if plan is None:
        return None
    requested, alloc = _rows(state, cluster, nodes, plan)
    return requested[0], alloc[0]


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
        self._plans = _Plans(self.resources, nonzero=True)
        self._cache = _ScoreCache()

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
        plan = self._plans.get(state.demand, cluster)
        if plan is None:
            return np.zeros(len(nodes), dtype=np.int64)
        if self.strategy != "RequestedToCapacityRatio" and plan.all_present and _cacheable(state.demand):
            return self._cache.scores(state, cluster, nodes, self._score,
                                      lambda c, node: self._score_one(plan, c, node))
        return self._score(state, cluster, nodes)

    def _score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        plan = self._plans.get(state.demand, cluster)
        if plan is None:
            return np.zeros(len(nodes), dtype=np.int64)
        requested, alloc = _rows(state, cluster, nodes, plan)
        if self.strategy == "LeastAllocated":
            if plan.all_present:
                # (alloc − requested)·100 // alloc, and 0 where the request exceeds alloc: the quotient is
                # negative exactly there, so a maximum with 0 is least_allocated for positive alloc.
                scores = np.maximum((alloc - requested) * MAX_NODE_SCORE // alloc, 0)
            else:
                scores = least_allocated(requested, alloc)
            return _weighted_rows(scores, alloc, plan)
        if self.strategy == "MostAllocated":
            if plan.all_present:
                scores = np.minimum(requested, alloc) * MAX_NODE_SCORE // alloc
            else:
                scores = most_allocated(requested, alloc)
            return _weighted_rows(scores, alloc, plan)
        parts = [(self._ratio(requested[i], alloc[i]), alloc[i], w) for i, w in enumerate(plan.weights)]
        return self._ratio_combine(parts, len(nodes))

    def _score_one(self, plan: _Plan, cluster: ClusterState, node: int) -> int | None:
        """`_score` of one node (all resources present), in Python integers; None for huge values."""
        nonzero, free = cluster.nonzero_requested, cluster.free_by_resource
        allocatable = cluster.allocatable_by_resource
        least = self.strategy == "LeastAllocated"
        total = 0
        for from_nonzero, row, pod, col, weight in zip(plan.from_nonzero, plan.rows, plan.pod, plan.columns,
                                                       plan.weights, strict=True):
            alloc = int(allocatable[col, node])
            req = (int(nonzero[node, row]) if from_nonzero else alloc - int(free[row, node])) + pod
            if not (-_SCALAR_LIMIT < req < _SCALAR_LIMIT and 0 < alloc < _SCALAR_LIMIT):
                return None
            if least:
                score = (alloc - req) * MAX_NODE_SCORE // alloc
                if score < 0:
                    score = 0
            else:
                score = min(req, alloc) * MAX_NODE_SCORE // alloc
            total += score * weight
        weight_sum = sum(plan.weights)
        return total // weight_sum if weight_sum > 0 else 0

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
    """Favours nodes whose resource fractions stay even, and placements that even them out (v1.37).

    kube-scheduler v1.37 (`balancedResourceScorer` in noderesources/balanced_allocation.go) scores the change
    in balance: with b(x) = ⌊(1 − std of the fractions x/allocatable) · 100⌋ (`balancedResourceScore`; for two
    resources std = |(f₀ − f₁)/2|), score = 50 + (50 + b(with the pod) − b(without it)) / 2. Fractions use the
    plain requests (not the non-zero defaults), clamped to 1; resources a node has none of are left out.
    """

    name = "NodeResourcesBalancedAllocation"

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        raw = (args or {}).get("resources")
        self.resources = tuple(ResourceSpec(str(r["name"]), int(r.get("weight", 1))) for r in raw) \
            if raw else DEFAULT_RESOURCES
        self._plans = _Plans(self.resources, nonzero=False)
        self._cache = _ScoreCache()

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        plan = self._plans.get(state.demand, cluster)
        if plan is None or not plan.requests_any:
            # kube-scheduler skips BalancedAllocation for best-effort pods: every node scores the same.
            return np.zeros(len(nodes), dtype=np.int64)
        if plan.all_present and len(plan.columns) == 2 and _cacheable(state.demand):
            return self._cache.scores(state, cluster, nodes, self._score,
                                      lambda c, node: self._score_one(plan, c, node))
        return self._score(state, cluster, nodes)

    @staticmethod
    def _score_one(plan: _Plan, cluster: ClusterState, node: int) -> int | None:
        """`_score` of one node for two resources it has, in Python floats (the same IEEE operations)."""
        free, allocatable = cluster.free_by_resource, cluster.allocatable_by_resource
        before: list[float] = []
        after: list[float] = []
        for row, pod, col in zip(plan.rows, plan.pod, plan.columns, strict=True):
            alloc = int(allocatable[col, node])
            req = alloc - int(free[row, node])
            if not (-_SCALAR_LIMIT < req + pod < _SCALAR_LIMIT and -_SCALAR_LIMIT < req < _SCALAR_LIMIT
                    and 0 < alloc < _SCALAR_LIMIT):
                return None
            before.append(min(float(req) / float(alloc), 1.0))
            after.append(min(float(req + pod) / float(alloc), 1.0))
        with_pod = int((1 - abs((after[0] - after[1]) / 2)) * MAX_NODE_SCORE)
        without = int((1 - abs((before[0] - before[1]) / 2)) * MAX_NODE_SCORE)
        return MAX_NODE_SCORE // 2 + (MAX_NODE_SCORE // 2 + with_pod - without) // 2

    def _score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        plan = self._plans.get(state.demand, cluster)
        if plan is None or not plan.requests_any:
            return np.zeros(len(nodes), dtype=np.int64)
        requested, alloc = _rows(state, cluster, nodes, plan)
        pod = np.asarray(plan.pod, dtype=np.int64)[:, None]
        with_pod = _balance(requested, alloc, plan.all_present)
        without = _balance(requested - pod, alloc, plan.all_present)
        return MAX_NODE_SCORE // 2 + (MAX_NODE_SCORE // 2 + with_pod - without) // 2


def _balance(requested: IntArray, alloc: IntArray, all_present: bool) -> IntArray:
    """`balancedResourceScore` per node (column): ⌊(1 − std) · 100⌋ over the resources the node has."""
    if all_present and requested.shape[0] == 2:
        frac = np.minimum(requested / alloc, 1.0)
        two: FloatArray = np.abs((frac[0] - frac[1]) / 2)
        return ((1 - two) * MAX_NODE_SCORE).astype(np.int64)
    mask = alloc > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.minimum(np.where(mask, requested / np.maximum(alloc, 1), 0.0), 1.0)
    count = mask.sum(axis=0)
    total = (frac * mask).sum(axis=0)
    mean = total / np.maximum(count, 1)
    variance = ((frac - mean) ** 2 * mask).sum(axis=0) / np.maximum(count, 1)
    # For exactly two resources upstream takes |(f_first − f_second) / 2|, not the square root.
    first = frac[mask.argmax(axis=0), np.arange(frac.shape[1])]
    last = frac[mask.shape[0] - 1 - mask[::-1].argmax(axis=0), np.arange(frac.shape[1])]
    std = np.where(count == 2, np.abs((first - last) / 2), np.sqrt(variance))
    std = np.where(count < 2, 0.0, std)
    return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)

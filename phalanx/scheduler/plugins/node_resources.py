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
_MAX_PLANS = 1024  # plans remembered per plugin (by PodDemand, one per distinct request shape)
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
        if len(self._known) >= _MAX_PLANS:
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


# Per-node scores of the pod shapes in use are kept for every node, one row per shape in a table per plan
# layout (the resources, rows and weights a score reads), and brought up to date for the nodes the cluster's
# log says changed, for every shape at once: one vector formula over (shapes × changed nodes), the same
# element-wise operations as the formula over candidate nodes, so the scores are the same.
_MAX_SHAPES = 128  # rows of one table; the least recently used row makes way beyond that
_MAX_SEEN = 4096  # shapes seen once (scored on the candidates only) remembered, to give them a row next time
_MAX_TABLES = 16

# (shapes × resources × nodes requests with the pod, resources × nodes allocatable, resources × nodes
# requests without it, the plan) -> shapes × nodes scores
Formula = Callable[[IntArray, IntArray, IntArray, "_Plan"], IntArray]
# The same for one node: (shapes × resources requests of the shapes, resources requests of the node without
# the pod, resources allocatable, the plan) -> shapes.
NodeFormula = Callable[[IntArray, IntArray, IntArray, "_Plan"], IntArray]
# The same for one node in Python numbers: (the shapes' requests, the node's requests without the pod, its
# allocatable, the plan) -> a score per shape, or None when a value is too large for the int64 formulas to
# be sure not to overflow (the node then takes the NumPy path). Tables whose shapes request such amounts
# always take the NumPy path.
ColumnFormula = Callable[[list[tuple[int, ...]], list[int], list[int], "_Plan"], "list[int] | None"]
# Up to this many (shape, node) scores to bring up to date, Python arithmetic beats NumPy's per-call cost.
_PYTHON_WORK = 8
_SCALAR_LIMIT = 1 << 55


class _Table:
    """Scores of every node for the pod shapes (the plan's pod requests) of one plan layout."""

    __slots__ = ("alloc", "alloc_rows", "clock", "cluster", "layout", "mark", "pod_list", "pods", "python", "rows",
                 "scores", "span", "used")

    def __init__(self, cluster: ClusterState, plan: _Plan) -> None:
        self.cluster = weakref.ref(cluster)
        self.layout = cluster.layout
        self.mark = cluster.change_mark()
        self.rows: dict[tuple[int, ...], int] = {}
        self.pods = np.zeros((0, len(plan.pod)), dtype=np.int64)
        self.pod_list: list[tuple[int, ...]] = []  # the rows' pod requests, in row order
        self.python = True  # every row's requests are small enough for the Python path
        self.scores = np.zeros((0, len(cluster)), dtype=np.int64)
        self.used: list[int] = []
        self.clock = 0
        # Allocatable of the plan's resources (resources × nodes): it changes only with a new layout.
        self.alloc = np.array(cluster.allocatable_by_resource[list(plan.columns)], dtype=np.int64)
        # The plan's requested rows as a slice of the resources × nodes arrays, when they are contiguous.
        first, count = plan.rows[0], len(plan.rows)
        self.span = slice(first, first + count) if plan.rows == tuple(range(first, first + count)) else None
        self.alloc_rows: list[list[int]] | None = None  # allocatable per node as Python ints, made on first use

    def base_row(self, cluster: ClusterState, plan: _Plan, node: int) -> tuple[list[int], list[int]]:
        """`base` of one node as Python ints."""
        if self.alloc_rows is None:
            self.alloc_rows = self.alloc.T.tolist()
        alloc = self.alloc_rows[node]
        span = self.span
        if span is not None and all(plan.from_nonzero):
            return cluster.nonzero_requested[node, span].tolist(), alloc
        if span is not None and not any(plan.from_nonzero) and plan.rows == plan.columns:
            return [a - f for a, f in zip(alloc, cluster.free_by_resource[span, node].tolist(), strict=True)], alloc
        return self.base(cluster, plan, node)[0].tolist(), alloc

    def base(self, cluster: ClusterState, plan: _Plan, nodes: IntArray | slice | int) -> tuple[IntArray, IntArray]:
        """The nodes' requests (without the pod) and allocatable of the plan's resources (resources × nodes,
        or resources for one node `nodes`)."""
        alloc = self.alloc[:, nodes]
        span = self.span
        if span is not None and all(plan.from_nonzero):
            return cluster.nonzero_requested[nodes, span].T, alloc
        free = cluster.free_by_resource
        if span is not None and not any(plan.from_nonzero) and plan.rows == plan.columns:
            return alloc - free[span, nodes], alloc
        base = np.empty(alloc.shape, dtype=np.int64)
        nonzero, allocatable = cluster.nonzero_requested, cluster.allocatable_by_resource
        for i, (from_nonzero, row) in enumerate(zip(plan.from_nonzero, plan.rows, strict=True)):
            base[i] = nonzero[nodes, row] if from_nonzero else allocatable[row, nodes] - free[row, nodes]
        return base, alloc


class _ScoreCache:
    """Scores of every node per pod shape, for scores that depend only on the node and the pod's requests.

    A shape gets its row on its second use (a shape seen once is scored on the candidate nodes only)."""

    def __init__(self, formula: Formula, node_formula: NodeFormula, column: ColumnFormula) -> None:
        self.formula = formula
        self.node_formula = node_formula
        self.column = column
        self._tables: dict[tuple[int, tuple[bool, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]],
                           _Table] = {}
        self._seen: set[tuple[int, tuple[int, ...]]] = set()

    def _compute(self, table: _Table, cluster: ClusterState, plan: _Plan, pods: IntArray,
                 nodes: IntArray | slice | int) -> IntArray:
        """Scores of the shapes `pods` (shapes × resources) on `nodes`: shapes × nodes, or shapes for one node."""
        base, alloc = table.base(cluster, plan, nodes)
        if isinstance(nodes, int):
            return self.node_formula(pods, base, alloc, plan)
        return self.formula(base[None, :, :] + pods[:, :, None], alloc, base, plan)

    def scores(self, state: CycleState, cluster: ClusterState, nodes: IntArray, plan: _Plan,
               vector: Callable[[CycleState, ClusterState, IntArray], IntArray]) -> IntArray:
        key = (id(cluster), plan.from_nonzero, plan.rows, plan.columns, plan.weights)
        table = self._tables.get(key)
        if table is None or table.cluster() is not cluster or table.layout != cluster.layout:
            if len(self._tables) >= _MAX_TABLES:
                self._tables.clear()
            table = self._tables[key] = _Table(cluster, plan)
        row = table.rows.get(plan.pod)
        if row is None:
            seen = (id(table), plan.pod)
            if seen not in self._seen:
                if len(self._seen) >= _MAX_SEEN:
                    self._seen.clear()
                self._seen.add(seen)
                return vector(state, cluster, nodes)
        self._bring_up_to_date(table, cluster, plan)
        if row is None:
            row = self._add_row(table, cluster, plan)
        table.clock += 1
        table.used[row] = table.clock
        scores: IntArray = table.scores[row].take(nodes)
        return scores

    def _bring_up_to_date(self, table: _Table, cluster: ClusterState, plan: _Plan) -> None:
        mark = cluster.change_mark()
        if mark == table.mark:
            return
        changed = cluster.changes_since(table.mark)
        table.mark = mark
        if not table.rows:
            return
        count = len(table.rows)
        if changed is None or len(changed) > len(cluster) >> 3:
            table.scores[:count] = self._compute(table, cluster, plan, table.pods[:count], slice(None))
            return
        unique = changed if len(changed) == 1 else sorted(set(changed))
        if count * len(unique) <= _PYTHON_WORK and table.python:
            scores = table.scores
            for node in unique:
                base, alloc = table.base_row(cluster, plan, node)
                values = self.column(table.pod_list, base, alloc, plan)
                if values is None:
                    break
                if count == 1:
                    scores[0, node] = values[0]
                else:
                    scores[:count, node] = values
            else:
                return
        if len(unique) == 1:
            node = int(unique[0])
            table.scores[:count, node] = self._compute(table, cluster, plan, table.pods[:count], node)
            return
        nodes = np.array(unique, dtype=np.int64)
        table.scores[:count, nodes] = self._compute(table, cluster, plan, table.pods[:count], nodes)

    def _add_row(self, table: _Table, cluster: ClusterState, plan: _Plan) -> int:
        count = len(table.rows)
        pod = np.array(plan.pod, dtype=np.int64)
        if count < _MAX_SHAPES:
            row = count
            if row == table.scores.shape[0]:
                size = min(max(8, 2 * row), _MAX_SHAPES)
                scores = np.zeros((size, table.scores.shape[1]), dtype=np.int64)
                scores[:row] = table.scores
                pods = np.zeros((size, pod.shape[0]), dtype=np.int64)
                pods[:row] = table.pods
                table.scores, table.pods = scores, pods
            table.used.append(0)
        else:
            row = min(range(count), key=table.used.__getitem__)
            del table.rows[next(k for k, v in table.rows.items() if v == row)]
        table.pods[row] = pod
        table.rows[plan.pod] = row
        if not all(-_SCALAR_LIMIT < v < _SCALAR_LIMIT for v in plan.pod):
            table.python = False
        if row == len(table.pod_list):
            table.pod_list.append(plan.pod)
        else:
            table.pod_list[row] = plan.pod
        table.scores[row] = self._compute(table, cluster, plan, pod[None, :], slice(None))[0]
        return row


def _cacheable(demand: PodDemand) -> bool:
    """A PodDemand from ClusterState.demand: shared by every pod of its shape and never changed."""
    return not demand.requests.flags.writeable


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
    node_static = False
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
        self._cache = _ScoreCache(self._table_formula, self._node_formula, self._column)

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
            return self._cache.scores(state, cluster, nodes, plan, self._score)
        return self._score(state, cluster, nodes)

    def _node_formula(self, pods: IntArray, base: IntArray, alloc: IntArray, plan: _Plan) -> IntArray:
        """`_table_formula` on one node, in fewer NumPy calls: the same int64 values (integer arithmetic
        wraps the same way whichever order the products and differences are taken in)."""
        if self.strategy != "LeastAllocated":
            return self._table_formula(pods + base, alloc, base, plan)
        scores = ((alloc - base) * MAX_NODE_SCORE - pods * MAX_NODE_SCORE) // alloc
        np.maximum(scores, 0, out=scores)
        weights = plan.weights
        total = scores[:, 0] + scores[:, 1] if weights == (1, 1) else scores @ np.array(weights, dtype=np.int64)
        weight_sum = sum(weights)
        if weight_sum <= 0:
            return np.zeros(total.shape, dtype=np.int64)
        if weight_sum != 1:
            total //= weight_sum
        return total

    def _table_formula(self, requested: IntArray, alloc: IntArray, base: IntArray, plan: _Plan) -> IntArray:
        """`_score` (all resources present) for shapes × resources × nodes requests: shapes × nodes."""
        if self.strategy == "LeastAllocated":
            scores = np.maximum((alloc - requested) * MAX_NODE_SCORE // alloc, 0)
        else:
            scores = np.minimum(requested, alloc) * MAX_NODE_SCORE // alloc
        weights = plan.weights
        total = scores[:, 0] * weights[0] if weights[0] != 1 else scores[:, 0]
        for i in range(1, len(weights)):
            total = total + (scores[:, i] * weights[i] if weights[i] != 1 else scores[:, i])
        weight_sum = sum(weights)
        if weight_sum <= 0:
            return np.zeros(total.shape, dtype=np.int64)
        return np.asarray(total // weight_sum if weight_sum != 1 else total, dtype=np.int64)

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

    def _column(self, pods: list[tuple[int, ...]], base: list[int], alloc: list[int], plan: _Plan) -> list[int] | None:
        """`_node_formula` in Python integers (exact; None for values the int64 formula might overflow)."""
        limit = _SCALAR_LIMIT
        if not all(0 < a < limit for a in alloc) or not all(-limit < b < limit for b in base):
            return None
        weights = plan.weights
        weight_sum = sum(weights)
        if weight_sum <= 0:
            return [0] * len(pods)
        if self.strategy == "LeastAllocated":
            if weights == (1, 1):
                (b0, b1), (a0, a1) = base, alloc
                c0, c1 = (a0 - b0) * MAX_NODE_SCORE, (a1 - b1) * MAX_NODE_SCORE
                return [(max((c0 - p0 * MAX_NODE_SCORE) // a0, 0) + max((c1 - p1 * MAX_NODE_SCORE) // a1, 0)) // 2
                        for p0, p1 in pods]
            return [sum(max((a - b - p) * MAX_NODE_SCORE // a, 0) * w
                        for a, b, p, w in zip(alloc, base, pod, weights, strict=True)) // weight_sum for pod in pods]
        return [sum(min(b + p, a) * MAX_NODE_SCORE // a * w
                    for a, b, p, w in zip(alloc, base, pod, weights, strict=True)) // weight_sum for pod in pods]

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
        self._cache = _ScoreCache(self._table_formula, self._node_formula, self._column)

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        plan = self._plans.get(state.demand, cluster)
        if plan is None or not plan.requests_any:
            # kube-scheduler skips BalancedAllocation for best-effort pods: every node scores the same.
            return np.zeros(len(nodes), dtype=np.int64)
        if plan.all_present and len(plan.columns) == 2 and _cacheable(state.demand):
            return self._cache.scores(state, cluster, nodes, plan, self._score)
        return self._score(state, cluster, nodes)

    @staticmethod
    def _column(pods: list[tuple[int, ...]], base: list[int], alloc: list[int], plan: _Plan) -> list[int] | None:
        """`_node_formula` in Python numbers (the same IEEE operations on the same values; None for values
        the int64 formula might overflow)."""
        limit = _SCALAR_LIMIT
        (b0, b1), (a0, a1) = base, alloc
        if not (0 < a0 < limit and 0 < a1 < limit and -limit < b0 < limit and -limit < b1 < limit):
            return None
        f0, f1 = float(a0), float(a1)
        without = int((1 - abs((min(float(b0) / f0, 1.0) - min(float(b1) / f1, 1.0)) / 2)) * MAX_NODE_SCORE)
        half = MAX_NODE_SCORE // 2
        rest = half - without
        return [half + (int((1 - abs((min(float(b0 + p0) / f0, 1.0) - min(float(b1 + p1) / f1, 1.0)) / 2))
                             * MAX_NODE_SCORE) + rest) // 2 for p0, p1 in pods]

    @staticmethod
    def _node_formula(pods: IntArray, base: IntArray, alloc: IntArray, plan: _Plan) -> IntArray:
        """`_table_formula` on one node, in fewer NumPy calls (the node's own balance in Python floats, the
        same IEEE operations)."""
        frac = (pods + base) / alloc
        np.minimum(frac, 1.0, out=frac)
        two = frac[:, 0] - frac[:, 1]
        two /= 2
        np.abs(two, out=two)
        np.subtract(1, two, out=two)
        two *= MAX_NODE_SCORE
        with_pod = two.astype(np.int64)
        (b0, b1), (a0, a1) = base.tolist(), alloc.tolist()
        without = int((1 - abs((min(float(b0) / float(a0), 1.0) - min(float(b1) / float(a1), 1.0)) / 2))
                      * MAX_NODE_SCORE)
        with_pod += MAX_NODE_SCORE // 2 - without
        with_pod //= 2
        with_pod += MAX_NODE_SCORE // 2
        return with_pod

    @staticmethod
    def _table_formula(requested: IntArray, alloc: IntArray, base: IntArray, plan: _Plan) -> IntArray:
        """`_score` (two resources, both present) for shapes × 2 × nodes requests: shapes × nodes."""
        frac = np.minimum(requested / alloc, 1.0)
        with_pod = ((1 - np.abs((frac[:, 0] - frac[:, 1]) / 2)) * MAX_NODE_SCORE).astype(np.int64)
        without = _balance(base, alloc, True)
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

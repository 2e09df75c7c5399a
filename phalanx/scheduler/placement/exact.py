"""Exact gang placement (the `phalanx` profile): seat a gang whenever some placement of it exists.

v1.37's PodGroup cycle (gang.py) places members one at a time with the pod algorithm. On a tight cluster
that fails heterogeneous gangs which fit: an early small member takes the room a later large one needed.
When that cycle fails, `plan` searches the same snapshot again and ends in one of three verdicts: placed
(members → nodes), infeasible (proven: no placement exists), or undecided (the time budget ran out).

1. Shapes and candidates. Members with equal requests, placement and claims are one shape. A node is a
   candidate for a shape when it passes every Filter for it now (fit included, the room of nominated pods
   held, as the pod cycle's Filter does). Placing other members only takes room away, so a node outside
   that set can never take the member: the search loses nothing by ignoring it.
2. Bounds: each shape's members fit one by one across its candidates, and the gang's requests fit into the
   summed room. These necessary conditions prove most hopeless gangs infeasible at once.
3. A greedy of our own: largest member first (dominant share), each on the node it leaves tightest.
4. CP-SAT, one model per topology domain, with these reductions, each of which keeps the model exact:

   - Room rounding. A node's free room in a resource is rounded down to the largest sum Σ kₛ·dₛ (kₛ up to
     the gang's count of shape s) not above it. Every load a node can carry is such a sum, so a load fits
     the rounded room exactly when it fits the real one; slack no member can use stops splitting classes.
   - Classes. Nodes with the same rounded room and the same set of shapes they take are interchangeable
     (numpy `unique` over those rows). A class of k nodes is still k bins: one bin of k times the room
     would be a relaxation (two half-members do not make a member), so each kept node has its own
     variables and capacity rows, and the nodes of one class are ordered by their count vectors
     (lexicographically, as a mixed-radix number), which only removes permutations of identical nodes.
   - Dominance. A placement of M members uses at most M nodes. Say node A is above node B when A's
     rounded room is at least B's in every resource and A takes every shape B takes (strictly more
     somewhere), or A is an earlier node of B's class. A node with M or more nodes above it is left out:
     in a placement that uses it, at most M−1 other nodes are used, so some node above it is free and can
     take all its members; the set of nodes above shrinks with each such move, so repeating it ends in a
     placement on kept nodes. Hence the model has a solution exactly when the gang has a placement.

   Variables: members of each shape on each kept node. Constraints: each node's rounded room per resource,
   each shape's count (all of them, or at least `need` members in all with the count maximised when the
   gang has more pending members than it needs). One worker, a fixed seed and a deterministic-time limit
   make the verdict reproducible; a wall-clock cap of WALL_FACTOR times the budget guards a loaded machine.

Everything here works on arrays over nodes (`free` is resources × nodes, as `ClusterState.free_by_resource`);
`seat` then reserves the chosen nodes through the ordinary Filter checks and Reserve plugins.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import numpy as np
import numpy.typing as npt

from phalanx.api.objects import Pod
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.profiles import ExactPlacement

if TYPE_CHECKING:
    from phalanx.scheduler.cycle import PodCycle

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
Verdict = Literal["placed", "infeasible", "undecided"]
PLACED: Verdict = "placed"
INFEASIBLE: Verdict = "infeasible"
UNDECIDED: Verdict = "undecided"
VERDICTS: tuple[Verdict, ...] = (PLACED, INFEASIBLE, UNDECIDED)

MAX_SUMS = 1 << 15  # achievable sums kept per resource for rounding; with more, that resource is not rounded
DOMINATORS = 256  # classes (the roomiest) counted as possible dominators when pruning; fewer only keeps more
WALL_FACTOR = 10.0  # the wall-clock cap, as a multiple of the deterministic budget


@dataclass(slots=True)
class Packing:
    """The verdict of `pack`; when placed, the node (a column of `free`) of each member placed, by shape."""

    verdict: Verdict
    nodes: list[list[int]]
    method: str  # what decided: "bounds", "greedy", "cp-sat", "budget" (a budget of 0), "empty"
    candidates: int = 0  # nodes in the CP-SAT models (after classes and dominance)
    deterministic_time: float = 0.0


def pack(demands: IntArray, counts: Sequence[int] | IntArray, need: int, free: IntArray, allowed: BoolArray, *,
         settings: ExactPlacement | None = None, domains: IntArray | None = None) -> Packing:
    """Place at least `need` of the members (`counts[s]` of shape s, requesting `demands[s]`, shapes ×
    resources) on nodes with `free` room (resources × nodes), shape s only where `allowed[s]` (shapes × nodes).
    With `domains` (a domain id per node, −1 for none), all placed members share one domain: one model per
    domain, roomiest first. Every member is placed when `need` equals their number."""
    settings = settings or ExactPlacement()
    counts_arr = np.asarray(counts, dtype=np.int64)
    shapes = len(counts_arr)
    if need <= 0:
        return Packing(PLACED, [[] for _ in range(shapes)], "empty")
    cols = np.flatnonzero(np.asarray(demands).any(axis=0))
    d = np.ascontiguousarray(np.asarray(demands, dtype=np.int64)[:, cols])
    f = np.ascontiguousarray(free[cols])
    fits = allowed.copy()
    for i in range(len(cols)):
        fits &= f[i][None, :] >= d[:, i][:, None]
    candidates = np.flatnonzero(fits.any(axis=0))
    groups: list[IntArray]
    if domains is None:
        groups = [candidates]
    else:
        ids = domains[candidates]
        candidates, ids = candidates[ids >= 0], ids[ids >= 0]
        order = np.argsort(ids, kind="stable")
        ids, candidates = ids[order], candidates[order]
        _, starts = np.unique(ids, return_index=True)
        groups = np.split(candidates, starts[1:]) if candidates.size else []
        scale = np.maximum(f[:, candidates].max(axis=1), 1) if candidates.size else np.ones(len(cols))
        room = [float((f[:, g] / scale[:, None]).sum()) for g in groups]
        groups = [groups[k] for k in sorted(range(len(groups)), key=lambda k: -room[k])]
    remaining = settings.budget
    proven = True
    size = 0
    for nodes in groups:
        result = _pack_domain(d, counts_arr, need, f[:, nodes], fits[:, nodes], settings, remaining)
        remaining = max(remaining - result.deterministic_time, 0.0)
        size += result.candidates
        if result.verdict == PLACED:
            result.nodes = [[int(nodes[j]) for j in placed] for placed in result.nodes]
            result.candidates = size
            result.deterministic_time = settings.budget - remaining
            return result
        proven &= result.verdict == INFEASIBLE
    if proven:
        return Packing(INFEASIBLE, [], "bounds" if size == 0 else "cp-sat", size, settings.budget - remaining)
    return Packing(UNDECIDED, [], "cp-sat" if settings.budget > 0 else "budget", size, settings.budget - remaining)


def _pack_domain(d: IntArray, counts: IntArray, need: int, f: IntArray, fits: BoolArray, settings: ExactPlacement,
                 budget: float) -> Packing:
    """`pack` on one domain's candidates (columns of `f` and `fits`); node numbers are those columns."""
    total = int(counts.sum())
    each = _each(d, counts, f, fits)
    fitting = np.minimum(each.sum(axis=1), counts)
    if int(fitting.sum()) < need or (need == total and (
            bool((fitting < counts).any()) or bool((counts @ d > f.sum(axis=1)).any()))):
        return Packing(INFEASIBLE, [], "bounds")
    placed = _greedy(d, counts, f, fits)
    if sum(len(p) for p in placed) >= need:
        return Packing(PLACED, placed, "greedy")
    if budget <= 0:
        return Packing(UNDECIDED, [], "budget")
    return _solve(d, counts, need, _rounded(d, counts, f), fits, settings, budget)


def _each(d: IntArray, counts: IntArray, f: IntArray, fits: BoolArray) -> IntArray:
    """How many members of each shape fit on each node alone (shapes × nodes), at most the shape's count."""
    each = np.where(fits, counts[:, None], 0)
    for i in range(d.shape[1]):
        need = d[:, i]
        pos = need > 0
        if pos.any():
            each[pos] = np.minimum(each[pos], f[i][None, :] // need[pos][:, None])
    return each


def _greedy(d: IntArray, counts: IntArray, f: IntArray, fits: BoolArray) -> list[list[int]]:
    """Largest member first (its dominant share of the roomiest node), each on the node it leaves tightest
    (least room left, each resource scaled by the roomiest node's); ties to the first node. Places as many
    members as it can."""
    left = f.copy()
    scale = 1.0 / np.maximum(f.max(axis=1), 1).astype(np.float64) if f.shape[1] else np.ones(d.shape[1])
    share = (d * scale[None, :]).max(axis=1)
    placed: list[list[int]] = [[] for _ in counts]
    weighted = left * scale[:, None]
    for s in sorted(range(len(counts)), key=lambda s: (-share[s], s)):
        want = d[s]
        for _ in range(int(counts[s])):
            ok = fits[s].copy()
            for i in range(len(want)):
                ok &= left[i] >= want[i]
            if not ok.any():
                break
            slack = weighted.sum(axis=0)
            slack[~ok] = np.inf
            node = int(np.argmin(slack))
            left[:, node] -= want
            weighted[:, node] = left[:, node] * scale
            placed[s].append(node)
    return placed


def _rounded(d: IntArray, counts: IntArray, f: IntArray) -> IntArray:
    """The room rounded down, per resource, to the largest load of the gang's members that fits in it."""
    out = f.copy()
    for i in range(d.shape[1]):
        top = int(f[i].max()) if f.shape[1] else 0
        sums: IntArray | None = np.zeros(1, dtype=np.int64)
        for s in range(len(counts)):
            step = int(d[s, i])
            if step == 0 or sums is None:
                continue
            grown = (sums[:, None] + step * np.arange(int(counts[s]) + 1, dtype=np.int64)[None, :]).ravel()
            sums = np.unique(grown[grown <= top])
            if sums.size > MAX_SUMS:
                sums = None
        if sums is not None:
            out[i] = sums[np.searchsorted(sums, f[i], side="right") - 1]
    return out


def _solve(d: IntArray, counts: IntArray, need: int, room: IntArray, fits: BoolArray, settings: ExactPlacement,
           budget: float) -> Packing:
    """The CP-SAT model over classes of nodes (see the module's docstring for why it is exact)."""
    # OR-Tools takes over half a second to import: only gangs that reach the search pay for it.
    from ortools.sat.python import cp_model

    shapes, resources = len(counts), d.shape[1]
    total = int(counts.sum())
    rows = np.vstack([room, fits.astype(np.int64)]).T  # nodes × (resources + shapes)
    classes, of_node, sizes = np.unique(rows, axis=0, return_inverse=True, return_counts=True)
    of_node = of_node.ravel()
    keep = np.minimum(sizes, total)
    if int(keep.sum()) > total:
        keep = np.minimum(keep, np.maximum(total - _above(classes, sizes, resources), 0))
    members = np.argsort(of_node, kind="stable")  # nodes by class, in node order within a class
    firsts = np.concatenate(([0], np.cumsum(sizes)[:-1]))

    model = cp_model.CpModel()
    by_shape: list[list[Any]] = [[] for _ in range(shapes)]
    slots: list[tuple[int, list[tuple[int, Any]]]] = []  # (node, [(shape, variable)])
    for c in np.flatnonzero(keep):
        cap = classes[c, :resources]
        ubs = [(s, int(min(counts[s], min((int(cap[i]) // int(d[s, i]) for i in range(resources) if d[s, i] > 0),
                                           default=int(counts[s])))))
               for s in range(shapes) if classes[c, resources + s]]
        ubs = [(s, ub) for s, ub in ubs if ub > 0]
        if not ubs:
            continue
        weights = [1] * len(ubs)  # mixed radix: lexicographic order of a node's counts as one number
        for k in range(len(ubs) - 2, -1, -1):
            weights[k] = weights[k + 1] * (ubs[k + 1][1] + 1)
        previous: Any = None
        for copy in range(int(keep[c])):
            node = int(members[firsts[c] + copy])
            xs = [(s, model.new_int_var(0, ub, f"x{s}_{node}")) for s, ub in ubs]
            for i in range(resources):
                if sum(ub * int(d[s, i]) for s, ub in ubs) > int(cap[i]):
                    model.add(sum(int(d[s, i]) * x for s, x in xs) <= int(cap[i]))
            key = cp_model.LinearExpr.weighted_sum([x for _, x in xs], weights)
            if previous is not None:
                model.add(previous >= key)
            previous = key
            for s, x in xs:
                by_shape[s].append(x)
            slots.append((node, xs))
    for s in range(shapes):
        if need == total:
            model.add(sum(by_shape[s]) == int(counts[s]))
        else:
            model.add(sum(by_shape[s]) <= int(counts[s]))
    if need < total:
        everything = sum(x for xs in by_shape for x in xs)
        model.add(everything >= need)
        model.maximize(everything)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = settings.seed
    solver.parameters.max_deterministic_time = budget
    solver.parameters.max_time_in_seconds = budget * WALL_FACTOR
    status = solver.solve(model)
    spent = float(solver.deterministic_time)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        placed: list[list[int]] = [[] for _ in range(shapes)]
        for node, xs in slots:
            for s, x in xs:
                placed[s].extend([node] * int(solver.value(x)))
        return Packing(PLACED, placed, "cp-sat", len(slots), spent)
    verdict = INFEASIBLE if status == cp_model.INFEASIBLE else UNDECIDED
    return Packing(verdict, [], "cp-sat", len(slots), spent)


def _above(classes: IntArray, sizes: IntArray, resources: int) -> IntArray:
    """For each class, how many nodes strictly dominate it (at least its room in every resource and every
    shape it takes), counted among the DOMINATORS roomiest classes only (counting fewer keeps more nodes)."""
    scale = 1.0 / np.maximum(classes[:, :resources].max(axis=0), 1)
    roominess = (classes[:, :resources] * scale).sum(axis=1) + classes[:, resources:].sum(axis=1)
    top = np.argsort(-roominess, kind="stable")[:DOMINATORS]
    dominates = np.ones((len(top), len(classes)), dtype=bool)
    for w in range(classes.shape[1]):
        dominates &= classes[top, w][:, None] >= classes[:, w][None, :]
    dominates[np.arange(len(top)), top] = False  # rows are unique: only a class itself is equal
    return np.asarray(sizes[top] @ dominates, dtype=np.int64)


# --- on a cluster ---------------------------------------------------------------------------------------

@dataclass(slots=True)
class Plan:
    """`plan`'s result: the verdict and, when placed, the members to seat and their nodes."""

    verdict: Verdict
    assignment: list[tuple[Pod, int]]
    method: str
    seconds: float
    candidates: int = 0


def shape(pod: Pod) -> tuple[object, ...]:
    """What decides where a member fits: its requests, placement and the claims it names. Members of one
    shape are interchangeable in a placement."""
    claims = tuple((c.claim_name, c.template_name) for c in pod.resource_claims)
    return tuple(sorted(pod.requests.items())), pod.placement, claims


def applicable(pending: Sequence[Pod]) -> bool:
    """Whether exact placement can judge these members: not when a member has rules between pods (topology
    spread, pod (anti-)affinity), whose feasibility depends on where the other members go."""
    return not any(pod.placement.spread or pod.placement.pod_affinity for pod in pending)


def held_room(cycle: PodCycle, pod: Pod) -> IntArray | None:
    """The room the Filter holds for nominated pods against the gang (one for all members: a group's
    members share its priority and are all left out of it)."""
    return cycle.nominated_room(pod) if cycle.nominated_room is not None else None


def plan(cycle: PodCycle, pending: Sequence[Pod], need: int, settings: ExactPlacement, *,
         domains: IntArray | None = None) -> Plan:
    """Find nodes for at least `need` of `pending` (all of them when possible) on the cycle's cluster as it is
    now (nothing is reserved: `seat` does that). Members are taken in their order within each shape."""
    start = time.perf_counter()
    cluster = cycle.cluster
    by_shape: dict[tuple[object, ...], list[Pod]] = {}
    for pod in pending:
        by_shape.setdefault(shape(pod), []).append(pod)
    groups = list(by_shape.values())
    for members in groups:
        cluster.demand(members[0])  # adds any new resource column before the arrays are read
    room = held_room(cycle, pending[0])
    if room is not None:
        cycle.hold_room(room, -1, requested=False)
    try:
        allowed = np.vstack([cycle.feasible(cycle.cycle_state(members[0])) for members in groups])
        demands = np.vstack([cluster.demand(members[0]).requests for members in groups])
        free = cluster.free_by_resource.copy()
    finally:
        if room is not None:
            cycle.hold_room(room, 1, requested=False)
    packing = pack(demands, [len(m) for m in groups], need, free, allowed, settings=settings, domains=domains)
    assignment = [(members[k], node) for members, nodes in zip(groups, packing.nodes, strict=False)
                  for k, node in enumerate(nodes)]
    order = {pod.key: i for i, pod in enumerate(pending)}
    assignment.sort(key=lambda pair: order[pair[0].key])
    return Plan(packing.verdict, assignment, packing.method, time.perf_counter() - start, packing.candidates)


def seat(cycle: PodCycle, assignment: Sequence[tuple[Pod, int]], room: IntArray | None) -> str | None:
    """Reserve each member on its node after the ordinary Filter checks (with `room` held for nominated pods);
    None when all are seated, else why not (the caller's trial then undoes what was reserved)."""
    for pod, node in assignment:
        if room is not None:
            cycle.hold_room(room, -1, requested=False)
        try:
            passes = bool(cycle.feasible(cycle.cycle_state(pod))[node])
        finally:
            if room is not None:
                cycle.hold_room(room, 1, requested=False)
        if not passes:
            return f"pod {pod.key} no longer passes the filters on node {cycle.cluster.names[node]}"
        cycle.reserve(pod, node)
    return None


# --- what it decided ------------------------------------------------------------------------------------

class VerdictCounts(TypedDict):
    placed: int
    infeasible: int
    undecided: int


class ExactPlacementReport(VerdictCounts):
    """The report's `exactPlacement` block: gangs per verdict, and `cycles` per verdict."""

    cycles: VerdictCounts


class ExactPlacementSeconds(TypedDict):
    """The report's `stats.exactPlacementSeconds`."""

    p50: float
    p99: float
    max: float


@dataclass(slots=True)
class Decisions:
    """Exact placement's verdicts in a scheduler's own group cycles (dry runs left out), kept with the
    cluster they were made on (`decisions`): cycles per verdict, and the gangs that had each verdict."""

    cycles: Counter[str] = field(default_factory=Counter)
    groups: dict[str, set[str]] = field(default_factory=lambda: {v: set() for v in VERDICTS})
    seconds: list[float] = field(default_factory=list)

    def add(self, group_key: str, verdict: Verdict, seconds: float) -> None:
        self.cycles[verdict] += 1
        self.groups[verdict].add(group_key)
        self.seconds.append(seconds)

    def summary(self) -> ExactPlacementReport:
        """The report's `exactPlacement` block."""
        return {"placed": len(self.groups[PLACED]), "infeasible": len(self.groups[INFEASIBLE]),
                "undecided": len(self.groups[UNDECIDED]),
                "cycles": {"placed": self.cycles[PLACED], "infeasible": self.cycles[INFEASIBLE],
                           "undecided": self.cycles[UNDECIDED]}}

    def timing(self) -> ExactPlacementSeconds:
        """Wall seconds per decision (p50, p99, max): the report's `stats.exactPlacementSeconds`."""
        if not self.seconds:
            return {"p50": 0.0, "p99": 0.0, "max": 0.0}
        times = np.asarray(self.seconds, dtype=float)
        p50, p99 = np.percentile(times, [50, 99])
        return {"p50": round(float(p50), 6), "p99": round(float(p99), 6), "max": round(float(times.max()), 6)}


def decisions(cluster: ClusterState) -> Decisions:
    """The cluster's record of exact placement's verdicts, made on first use (a typed extension)."""
    found = cluster.extension(Decisions)
    if found is None:
        found = Decisions()
        cluster.add_extension(found)
    return found

"""The pod scheduling algorithm: Filter over all nodes, pick the nodes to score, Score, select a host.

This is kube-scheduler's SchedulePod on arrays: static filter masks are cached per Placement, the fit
filter is a few vector comparisons, `percentageOfNodesToScore` limits scoring to the first feasible nodes
from a rotating start index (and, as in kube-scheduler, filtering stops once more than that many are
found), and ties go to a seeded random choice among the best nodes.

As in schedule_one.go, the Filter counts the room of pods nominated (status.nominatedNodeName) at the
pod's priority or higher as taken on their nodes (RunFilterPluginsWithNominatedPods); scoring does not
see them. The filters that read other pods (InterPodAffinity, PodTopologySpread) run on a node with its
nominated pods added as well as without them, and the node must pass both (addGENominatedPods, then the
second pass): a preemptor's anti-affinity keeps others off the node it waits for. A pod with a nomination
of its own tries that node first and takes it without scoring when it passes every filter
(evaluateNominatedNode). The Scheduler supplies these through `nominated_room` (resources × nodes, one
vector subtraction per cycle), `nominated_pods` and `nominated_node`.

`confined(nodes)` limits the algorithm to a set of nodes, as kube-scheduler's Snapshot.AssumePlacement does
for a PodGroup placement (KEP-5732): only those nodes are filtered, counted in "0/N nodes are available" and
scored, and a nominated node outside them is passed over.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast

import numpy as np

from phalanx.api.objects import Placement, Pod
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import (
    AssignedPodHintPlugin,
    BoolArray,
    Code,
    CycleState,
    FilterPlugin,
    IntArray,
    PerNodeCodePlugin,
    RangeFilterPlugin,
    ReservePlugin,
    RestoringReservePlugin,
    ScorePlugin,
    SkippingFilterPlugin,
    SkippingScorePlugin,
    fit_error,
)
from phalanx.scheduler.plugins.registry import build
from phalanx.scheduler.profiles import Profile

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(percentage: int, num_nodes: int) -> int:
    """How many feasible nodes kube-scheduler looks for before it stops filtering."""
    if num_nodes < MIN_FEASIBLE_NODES_TO_FIND or percentage >= 100:
        return num_nodes
    if percentage == 0:  # adaptive
        percentage = 50 - num_nodes // 125
        percentage = max(percentage, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


NO_FIT = "no node fits"  # the failure message without the diagnosis (`explain=False`)


@dataclass(slots=True)
class Result:
    node: int | None
    message: str | None = None
    # Nodes whose failure no eviction could fix (UnschedulableAndUnresolvable), for preemption.
    unresolvable: BoolArray | None = None
    # The Filter plugins that rejected some node (Diagnosis.UnschedulablePlugins), for the queueing hints.
    rejectors: frozenset[str] = frozenset()


@dataclass(slots=True)
class _NominatedRejects:
    nodes: BoolArray
    unresolvable: BoolArray
    reasons: dict[int, Counter[str]] = field(default_factory=dict)
    rejectors: set[str] = field(default_factory=set)


@dataclass(frozen=True, slots=True)
class Lifted:
    """A running pod taken off its node for a trial, and what its Reserve plugins held (`PodCycle.lift`)."""

    pod: Pod
    node: int
    held: list[tuple[ReservePlugin, object]]


def required_anti(pod: Pod) -> bool:
    """Whether the pod has required pod anti-affinity terms (which the Filter checks for other pods)."""
    affinity = pod.placement.pod_affinity
    return affinity is not None and bool(affinity.required_anti)


def reads_other_pods(pod: Pod) -> bool:
    """Whether the pod's own rules read other pods: spread constraints, required pod (anti-)affinity, host
    ports."""
    affinity = pod.placement.pod_affinity
    return bool(pod.placement.spread) or bool(pod.host_ports) or (
        affinity is not None and bool(affinity.required or affinity.required_anti))


class PodCycle:
    """Finds a node for one pod against the current ClusterState (or a group cycle's assumed view)."""

    def __init__(self, profile: Profile, cluster: ClusterState, seed: int = 0, *, explain: bool = True) -> None:
        """`explain=False` skips the kube-scheduler-style diagnosis of a pod no node fits (it only explains, never
        decides): for a caller that reads no failure message."""
        self.cluster = cluster
        self.explain = explain
        self.profile = profile
        self.percentage = profile.percentage_of_nodes_to_score
        self.filters: list[FilterPlugin] = [build(n, profile.plugin_args.get(n, {})) for n in profile.filters]
        self.static_filters = [f for f in self.filters if f.static]
        self.dynamic_filters = [f for f in self.filters if not f.static]
        self.scorers: list[tuple[ScorePlugin, int]] = [
            (build(n, profile.plugin_args.get(n, {})), w) for n, w in profile.scores.items() if w > 0
        ]
        self.reservers: list[ReservePlugin] = [build(n, profile.plugin_args.get(n, {})) for n in profile.reserve]
        self.tie_break = profile.tie_break
        self.rng = np.random.default_rng(seed)
        self.next_start = 0
        self._static: dict[Placement, BoolArray] = {}
        # The same masks by the Placement object's identity (holding the object, so the id stays its own):
        # a dict lookup by id skips hashing the Placement's nested tuples on every cycle.
        self._static_by_id: dict[int, tuple[Placement, BoolArray]] = {}
        self._static_version = -1
        # Verification only (`phalanx verify`): where the real scheduler put each pod, taken among equally
        # best nodes, and the best nodes of every decision, so node choices compare where ties are random.
        self.hints: Mapping[str, str] | None = None
        self.ties: dict[str, tuple[str, ...]] = {}
        # `schedule` stops filtering, as kube-scheduler does, once it has found enough feasible nodes:
        # dynamic filters with a `filter_range(state, cluster, lo, hi)` filter only the nodes visited, the
        # others filter every node once per cycle (unless a subclass changes how feasibility is computed).
        self._ranged = type(self).feasible is PodCycle.feasible and type(self).static_mask is PodCycle.static_mask
        self._range_filters = [f for f in self.dynamic_filters if isinstance(f, RangeFilterPlugin)]
        self._whole_filters = [f for f in self.dynamic_filters if not isinstance(f, RangeFilterPlugin)]
        # PreFilter/PreScore Skip, by plugin id: a skipped Filter passes every node, a skipped Score adds nothing.
        self._filter_skips = {id(f): f.skips for f in self.filters if isinstance(f, SkippingFilterPlugin)}
        # Filters that read the other pods bound to the nodes (PodTopologySpread, InterPodAffinity):
        # preemption's dry run runs them again with the victims gone.
        self._pod_rules = [f for f in self.dynamic_filters if getattr(f, "reads_bound_pods", False)]
        self._score_skips = {id(p): p.skips_score for p, _ in self.scorers if isinstance(p, SkippingScorePlugin)}
        # Nominated pods (set by the Scheduler): the room (resources × nodes) the Filter holds for them against
        # `pod` (None: none), and the node `pod` itself is nominated to.
        self.nominated_room: Callable[[Pod], IntArray | None] | None = None
        self.nominated_pods: Callable[[Pod], Mapping[int, list[Pod]]] | None = None
        self.nominated_node: Callable[[Pod], int | None] | None = None
        # During `schedule`: the nodes the pod-reading filters reject once their nominated pods are added, with
        # those filters' reasons and whether preemption can help there (None: no node is rejected that way).
        self._with_nominated: _NominatedRejects | None = None
        self._confined: BoolArray | None = None  # the placement's nodes (`confined`), None for every node
        # The Filter plugins that rejected a node in the last `diagnose`, and those with a queueing hint for an
        # assigned pod being added.
        self.last_rejectors: frozenset[str] = frozenset()
        self.assigned_pod_hints: list[AssignedPodHintPlugin] = [
            f for f in self.filters if isinstance(f, AssignedPodHintPlugin)]

    @contextmanager
    def confined(self, nodes: BoolArray) -> Iterator[None]:
        """Schedule on `nodes` only (a mask over nodes) inside the block; nested blocks intersect."""
        outer = self._confined
        self._confined = nodes if outer is None else nodes & outer
        try:
            yield
        finally:
            self._confined = outer

    @property
    def confinement(self) -> BoolArray | None:
        """The nodes `schedule` is confined to (a placement's), or None for every node."""
        return self._confined

    def cycle_state(self, pod: Pod) -> CycleState:
        return CycleState(pod=pod, demand=self.cluster.demand(pod))

    def static_mask(self, state: CycleState) -> BoolArray:
        if self._static_version != self.cluster.version:
            self._static.clear()
            self._static_by_id.clear()
            self._static_version = self.cluster.version
        placement = state.pod.placement
        known = self._static_by_id.get(id(placement))
        if known is not None and known[0] is placement:
            return known[1]
        mask = self._static.get(placement)
        if mask is None:
            mask = np.ones(len(self.cluster), dtype=bool)
            for plugin in self.static_filters:
                mask &= plugin.filter(state, self.cluster)
            self._static[placement] = mask
        self._static_by_id[id(placement)] = (placement, mask)
        return mask

    def _skipped(self, plugin: FilterPlugin, state: CycleState) -> bool:
        skips = self._filter_skips.get(id(plugin))
        return skips is not None and skips(state, self.cluster)

    def pod_rules(self, pod: Pod) -> bool:
        """Whether a filter that reads other bound pods applies to `pod` (is not skipped for it)."""
        state = self.cycle_state(pod)
        return any(not self._skipped(plugin, state) for plugin in self._pod_rules)

    def pod_rules_pass(self, pod: Pod, node: int) -> bool:
        """The filters that read other bound pods, on `node`, against the bound pods as they are now (a
        fresh CycleState: preemption calls it while it hides victims)."""
        state = self.cycle_state(pod)
        return all(self._skipped(plugin, state) or bool(plugin.filter(state, self.cluster)[node])
                   for plugin in self._pod_rules)

    def feasible(self, state: CycleState) -> BoolArray:
        mask = self.static_mask(state)
        for plugin in self.dynamic_filters:
            if self._filter_skips and self._skipped(plugin, state):
                continue
            mask = mask & plugin.filter(state, self.cluster)
        if self._with_nominated is not None:
            mask = mask & ~self._with_nominated.nodes
        if self._confined is not None:
            mask = mask & self._confined
        return mask

    def schedule(self, pod: Pod) -> Result:
        state = self.cycle_state(pod)
        n = len(self.cluster)
        confined = self._confined
        count = n if confined is None else int(np.count_nonzero(confined))  # nodes in the placement
        if count == 0:
            return Result(None, "0/0 nodes are available: no nodes available to schedule pods.")
        to_find = num_feasible_nodes_to_find(self.percentage, count)
        start = self.next_start
        held = self.nominated_room(pod) if self.nominated_room is not None else None
        if held is not None:
            self.hold_room(held, -1, requested=False)  # the Filter reads free room; `diagnose` also requests
            self._with_nominated = self._nominated_rejects(pod)
        try:
            nominated = self.nominated_node(pod) if self.nominated_node is not None else None
            if nominated is not None and nominated < n and self.feasible(state)[nominated]:
                if self.hints is not None:
                    self.ties[pod.key] = (self.cluster.names[nominated],)
                return Result(nominated)
            if self._ranged and to_find < n and confined is None:
                feasible_idx, found = self._find_feasible(state, start, n, to_find)
            else:
                feasible_idx = np.flatnonzero(self.feasible(state))
                found = feasible_idx.size
                if start and found:
                    split = int(np.searchsorted(feasible_idx, start))
                    if split:
                        feasible_idx = np.concatenate((feasible_idx[split:], feasible_idx[:split]))
            if found == 0:
                if held is not None:
                    self.hold_room(held, -1, free=False)
                try:
                    message, unresolvable = self.diagnose(state) if self.explain \
                        else (NO_FIT, np.zeros(n, dtype=bool))
                finally:
                    if held is not None:
                        self.hold_room(held, 1, free=False)
                return Result(None, message, unresolvable, self.last_rejectors)
        finally:
            if held is not None:
                self.hold_room(held, 1, requested=False)
                self._with_nominated = None
        if found > to_find:
            feasible_idx = feasible_idx[:to_find]
            processed = (int(feasible_idx[-1]) - start) % n + 1
        else:
            processed = n
        self.next_start = (start + processed) % n
        if feasible_idx.size == 1:
            if self.hints is not None:
                self.ties[pod.key] = (self.cluster.names[int(feasible_idx[0])],)
            return Result(int(feasible_idx[0]))
        return Result(self.select(state, feasible_idx))

    def _nominated_rejects(self, pod: Pod) -> _NominatedRejects | None:
        """The filters that read other pods, on each node that has nominated pods (of at least the pod's
        priority), with those pods added to it (addGENominatedPods: only the node's own nominated pods): the nodes
        they reject, with their reasons. The pods are added in a trial, never kept."""
        if not self._pod_rules or self.nominated_pods is None:
            return None
        placed = self.nominated_pods(pod)
        if not placed:
            return None
        n = len(self.cluster)
        own = reads_other_pods(pod)
        rejects = _NominatedRejects(np.zeros(n, dtype=bool), np.zeros(n, dtype=bool))
        for node, pods in placed.items():
            if node >= n or not (own or any(required_anti(other) for other in pods)):
                continue  # the filters answer here as without the nominated pods
            one = np.zeros(n, dtype=bool)
            one[node] = True
            with self.cluster.trial():
                for other in pods:
                    self.cluster.assume(other, node)
                state = self.cycle_state(pod)
                for plugin in self._pod_rules:
                    if self._skipped(plugin, state) or plugin.filter(state, self.cluster)[node]:
                        continue
                    rejects.nodes[node] = True
                    rejects.rejectors.add(plugin.name)
                    rejects.reasons[node] = plugin.reasons(state, self.cluster, one)
                    rejects.unresolvable[node] = plugin.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE or bool(
                        isinstance(plugin, PerNodeCodePlugin) and plugin.unresolvable(state, self.cluster, one)[node])
                    break
        return rejects if rejects.nodes.any() else None

    def hold_room(self, room: IntArray, sign: int, *, free: bool = True, requested: bool = True) -> None:
        """Take (sign -1) or give back (+1) the room held for nominated pods (resources × nodes) in the free
        and/or requested arrays, without a change record: callers restore them before anything is scored."""
        cluster = self.cluster
        rows, cols = min(room.shape[0], cluster.free_by_resource.shape[0]), min(room.shape[1], len(cluster))
        part = room[:rows, :cols]
        if free:
            target = cluster.free_by_resource[:rows, :cols]
            (np.add if sign > 0 else np.subtract)(target, part, out=target)
        if requested:
            target = cluster.requested[:cols, :rows]
            (np.subtract if sign > 0 else np.add)(target, part.T, out=target)

    def _find_feasible(self, state: CycleState, start: int, n: int, to_find: int) -> tuple[IntArray, int]:
        """Feasible nodes in the order kube-scheduler visits them (from `start` on, wrapping around), filtering
        range by range until more than `to_find` are found or every node was visited; and how many were found
        (more than `to_find` means the search stopped early)."""
        static = self.static_mask(state)
        cluster = self.cluster
        ranged = self._range_filters
        whole = [plugin.filter(state, cluster) for plugin in self._whole_filters if not self._skipped(plugin, state)]
        chunk = to_find + (to_find >> 2) + 64
        parts: list[IntArray] = []
        found = 0
        lo = start
        visited = 0
        while visited < n:
            hi = min(lo + chunk, n if lo >= start else start)
            mask = static[lo:hi]
            for plugin in ranged:
                mask = mask & plugin.filter_range(state, cluster, lo, hi)
            for full in whole:
                mask = mask & full[lo:hi]
            if self._with_nominated is not None:
                mask = mask & ~self._with_nominated.nodes[lo:hi]
            idx = mask.nonzero()[0]
            if idx.size:
                parts.append(idx + lo if lo else idx)
                found += idx.size
                if found > to_find:
                    break
            visited += hi - lo
            lo = hi if hi < n else 0
        if len(parts) == 1:
            return parts[0], found
        if not parts:
            return np.zeros(0, dtype=np.int64), 0
        return np.concatenate(parts), found

    def scores(self, state: CycleState, nodes: IntArray) -> IntArray:
        total: IntArray | None = None
        for plugin, weight in self.scorers:
            if self._score_skips:
                skips = self._score_skips.get(id(plugin))
                if skips is not None and skips(state, self.cluster):
                    continue
            score = plugin.score(state, self.cluster, nodes)
            if weight != 1:
                score = weight * score
            total = np.asarray(score, dtype=np.int64) if total is None else total + score
        return np.zeros(len(nodes), dtype=np.int64) if total is None else total

    def select(self, state: CycleState, nodes: IntArray) -> int:
        total = self.scores(state, nodes)
        best = (total == total.max()).nonzero()[0]
        if self.hints is not None:
            chosen = self._hinted(state.pod.key, nodes[best])
            if chosen is not None:
                return chosen
        if best.size == 1 or self.tie_break == "first":
            return int(nodes[best[0]])
        return int(nodes[best[self.rng.integers(best.size)]])

    def _hinted(self, pod_key: str, best: IntArray) -> int | None:
        assert self.hints is not None
        names = self.cluster.names
        self.ties[pod_key] = tuple(names[int(i)] for i in best)
        want = self.cluster.index.get(self.hints.get(pod_key, ""))
        return want if want is not None and bool((best == want).any()) else None

    def reserve(self, pod: Pod, node: int) -> None:
        """Account the pod on its node and run the Reserve plugins (kube-scheduler's assume + Reserve)."""
        self.cluster.assume(pod, node)
        if self.reservers:
            state = self.cycle_state(pod)
            for plugin in self.reservers:
                plugin.reserve(state, self.cluster, node)

    def lift(self, pod_key: str, pod: Pod) -> Lifted:
        """Unreserve a running pod for a trial, remembering what its Reserve plugins held (`put_back`)."""
        node = self.cluster.bound[pod_key][0]
        held: list[tuple[ReservePlugin, object]] = [
            (plugin, cast(RestoringReservePlugin, plugin).held(pod, self.cluster)) for plugin in self.reservers
            if isinstance(plugin, RestoringReservePlugin)]
        self.unreserve(pod_key, pod)
        return Lifted(pod, node, held)

    def fits_back(self, lifted: Lifted) -> bool:
        """Whether `put_back` would succeed: its requests fit on its node (the held devices are checked there)."""
        return self.cluster.fits(lifted.pod, lifted.node)

    def put_back(self, lifted: Lifted) -> bool:
        """Undo `lift` exactly: the pod on its node with the very devices it held. False, and nothing changed,
        when those are taken meanwhile."""
        with self.cluster.trial() as trial:
            self.cluster.assume(lifted.pod, lifted.node)
            for plugin, held in lifted.held:
                if not cast(RestoringReservePlugin, plugin).restore(lifted.pod, self.cluster, lifted.node, held):
                    return False
            trial.keep()
        return True

    def unreserve(self, pod_key: str, pod: Pod) -> int:
        """Undo `reserve`: Unreserve plugins in reverse order, then forget the pod's requests."""
        node = self.cluster.bound[pod_key][0]
        for plugin in reversed(self.reservers):
            plugin.unreserve(pod, self.cluster, node)
        return self.cluster.forget(pod_key)

    def diagnose(self, state: CycleState) -> tuple[str, BoolArray]:
        """Why no node fits, in kube-scheduler's words; and the nodes no preemption can help."""
        confined = self._confined
        remaining = np.ones(len(self.cluster), dtype=bool) if confined is None else confined.copy()
        unresolvable = np.zeros(len(self.cluster), dtype=bool)
        reasons: Counter[str] = Counter()
        rejectors: set[str] = set()
        for plugin in self.filters:
            if self._filter_skips and self._skipped(plugin, state):
                continue
            mask = plugin.filter(state, self.cluster)
            failed = remaining & ~mask
            if failed.any():
                rejectors.add(plugin.name)
                reasons.update(plugin.reasons(state, self.cluster, failed))
                if plugin.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    unresolvable |= failed
                elif isinstance(plugin, PerNodeCodePlugin):
                    unresolvable |= plugin.unresolvable(state, self.cluster, failed)
            remaining &= mask
        extra = self._with_nominated
        if extra is not None and (remaining & extra.nodes).any():
            failed = remaining & extra.nodes
            for node in failed.nonzero()[0]:
                reasons.update(extra.reasons[int(node)])
            rejectors.update(extra.rejectors)
            unresolvable |= failed & extra.unresolvable
        total = len(self.cluster) if confined is None else int(np.count_nonzero(confined))
        self.last_rejectors = frozenset(rejectors)
        return fit_error(total, reasons), unresolvable

"""Preemption: kube-scheduler's DefaultPreemption for one pod, and KEP-5710 workload-aware preemption.

Victims are *units*: a single pod, or every running member of a PodGroup with `disruptionMode: all`
(evicted together or not at all). A unit is more important when it has a higher priority, then when it
is a PodGroup rather than a pod, then a larger group, then an earlier start.

One pod (PostFilter): candidate nodes are those where removing every lower-priority unit would make
room (a vector test over all nodes), taken from a random offset until enough are found (10% of nodes,
at least 100). On each, every lower-priority unit is removed, then units are reprieved, PDB-violating
ones first and the most important first, as long as the pod still fits. The node is chosen by fewest
PDB violations, lowest highest-victim priority, lowest priority sum, fewest victims, latest start of
the highest-priority victims, then candidate order.

A PodGroup (PodGroupPostFilter): the domain is the whole cluster. Every lower-priority unit is removed,
the group cycle runs on what is left; if it cannot place `minCount` members nothing is preempted.
Otherwise, with the preemptor assumed in place, units are reprieved (PDB-violating first, most important
first) wherever all their pods still fit on their nodes; the rest are the victims.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from phalanx.api.objects import Pod, PodDisruptionBudget, PodGroup
from phalanx.cluster.state import ClusterState, IntArray
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.framework import BoolArray
from phalanx.scheduler.gang import schedule_group
from phalanx.scheduler.running import RunningPods

MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100
PRIORITY_OFFSET = 2**31  # kube adds MaxInt32+1 so that priority sums stay positive


@dataclass(frozen=True, slots=True)
class Unit:
    """Pods that are evicted together: one pod, or a `disruptionMode: all` group's running members."""

    pods: tuple[str, ...]
    priority: int
    group: str | None
    size: int
    start: float

    def importance(self) -> tuple[int, int, int, float]:
        """Sort key: the most important unit first."""
        return (-self.priority, 0 if self.group else 1, -self.size, self.start)


@dataclass(slots=True)
class Outcome:
    victims: list[str] = field(default_factory=list)
    nominations: dict[str, str] = field(default_factory=dict)  # preemptor pod key -> node name
    node: str | None = None


def num_candidates(num_nodes: int) -> int:
    """DefaultPreemption's candidate count: 10% of nodes, at least 100, at most all."""
    count = num_nodes * MIN_CANDIDATE_NODES_PERCENTAGE // 100
    return min(max(count, MIN_CANDIDATE_NODES_ABSOLUTE), num_nodes)


def _scaled(value: int | str, total: int) -> int:
    if isinstance(value, str):
        return math.ceil(int(value[:-1]) * total / 100)
    return value


class Budgets:
    """PodDisruptionBudgets' allowed disruptions, computed from the pods they select as the disruption
    controller does: healthy (running) pods minus the desired healthy count, never below zero."""

    def __init__(self, pdbs: Sequence[PodDisruptionBudget], pods: Mapping[str, Pod], running: RunningPods) -> None:
        self.pdbs = list(pdbs)
        self.selects: dict[str, list[int]] = {}
        self.allowed: list[int] = []
        for pdb in self.pdbs:
            selected = [key for key, pod in pods.items() if self._matches(pdb, pod)]
            healthy = sum(1 for key in selected if key in running.node_of and key not in running.terminating)
            expected = len(selected)
            if pdb.min_available is not None:
                desired = _scaled(pdb.min_available, expected)
            else:
                desired = expected - _scaled(pdb.max_unavailable or 0, expected)
            self.allowed.append(max(healthy - desired, 0))
        for key, pod in pods.items():
            hits = [i for i, pdb in enumerate(self.pdbs) if self._matches(pdb, pod)]
            if hits:
                self.selects[key] = hits

    @staticmethod
    def _matches(pdb: PodDisruptionBudget, pod: Pod) -> bool:
        empty = not pdb.selector.match_labels and not pdb.selector.expressions
        return pod.namespace == pdb.namespace and not empty and pdb.selector.matches(pod.labels)

    def split(self, units: Sequence[Unit]) -> tuple[list[Unit], list[Unit]]:
        """(violating, not violating), each in the given order; kube's filterPodsWithPDBViolation."""
        allowed = list(self.allowed)
        violating: list[Unit] = []
        fine: list[Unit] = []
        for unit in units:
            violates = False
            for key in unit.pods:
                for i in self.selects.get(key, ()):
                    allowed[i] -= 1
                    if allowed[i] < 0:
                        violates = True
            (violating if violates else fine).append(unit)
        return violating, fine


@dataclass(slots=True)
class _Candidate:
    node: int
    victims: list[Unit]
    violations: int

    def pods(self) -> list[str]:
        return [key for unit in self.victims for key in unit.pods]


class Preemptor:
    """Finds victims for a pod or a PodGroup; the Scheduler carries out the evictions."""

    def __init__(self, cycle: PodCycle, running: RunningPods, pods: Mapping[str, Pod],
                 groups: Mapping[str, PodGroup], members: Mapping[str, set[str]], gang: bool,
                 pdbs: Callable[[], Sequence[PodDisruptionBudget]], seed: int = 0) -> None:
        self.cycle = cycle
        self.cluster: ClusterState = cycle.cluster
        self.running = running
        self.pods = pods
        self.groups = groups
        self.members = members
        self.gang = gang
        self.pdbs = pdbs
        self.rng = np.random.default_rng(seed + 1)

    # --- victim units ---------------------------------------------------------------------------------

    def _all_group(self, key: str) -> str | None:
        pod = self.pods.get(key)
        if not self.gang or pod is None or pod.group_key is None:
            return None
        group = self.groups.get(pod.group_key)
        return group.key if group is not None and group.disruption_mode == "all" else None

    def _unit(self, key: str, seen: set[str]) -> Unit | None:
        group = self._all_group(key)
        if group is None:
            return Unit((key,), self.running.priority[key], None, 1, self.running.started[key])
        if group in seen:
            return None
        seen.add(group)
        pods = tuple(sorted(k for k in self.members.get(group, ()) if k in self.running.node_of
                            and k not in self.running.terminating))
        return Unit(pods, max(self.running.priority[k] for k in pods), group, len(self.members.get(group, ())),
                    min(self.running.started[k] for k in pods))

    def units(self, keys: Iterable[str], below: int) -> list[Unit]:
        """Victim units among `keys` with a priority below `below`, the most important first."""
        seen: set[str] = set()
        out: list[Unit] = []
        for key in sorted(keys):
            if key in self.running.terminating or self.running.priority[key] >= below:
                continue
            unit = self._unit(key, seen)
            if unit is not None and unit.priority < below:
                out.append(unit)
        out.sort(key=Unit.importance)
        return out

    def _on_node(self, unit: Unit, node: int) -> IntArray:
        total = np.zeros(len(self.cluster.resources), dtype=np.int64)
        for key in unit.pods:
            if self.running.node_of.get(key) == node:
                total += self.running.requests(key)
        return total

    # --- one pod ----------------------------------------------------------------------------------------

    def eligible(self, pod: Pod, priority: int, nominated: str | None) -> bool:
        if pod.preemption_policy == "Never":
            return False
        if nominated is not None and nominated in self.cluster.index:
            node = self.cluster.index[nominated]
            if any(k in self.running.terminating and self.running.priority[k] < priority
                   for k in self.running.on_node.get(node, ())):
                return False  # its earlier victims are still terminating: wait for them
        return True

    def for_pod(self, pod: Pod, priority: int, unresolvable: BoolArray | None) -> Outcome | None:
        """DefaultPreemption's PostFilter for a pod that fits nowhere."""
        cluster = self.cluster
        n = len(cluster)
        if n == 0:
            return None
        demand = cluster.demand(pod)
        cols = list(demand.columns)
        need = demand.requests
        removable = self.running.removable_below(priority) + self.running.pending_changes()
        room = cluster.allocatable[:, cols] - cluster.requested[:, cols] + removable[:, cols]
        possible = np.all(room >= need[cols], axis=1)
        if unresolvable is not None:
            possible &= ~unresolvable
        nodes = np.flatnonzero(possible)
        if nodes.size == 0:
            return None
        offset = int(self.rng.integers(n))
        split = int(np.searchsorted(nodes, offset))
        nodes = np.concatenate((nodes[split:], nodes[:split]))
        wanted = num_candidates(n)
        budgets = Budgets(self.pdbs(), self.pods, self.running)
        candidates: list[_Candidate] = []
        non_violating = 0
        for node in nodes.tolist():
            candidate = self._select_on_node(node, cols, need, priority, budgets)
            if candidate is None:
                continue
            candidates.append(candidate)
            non_violating += candidate.violations == 0
            if non_violating > 0 and len(candidates) >= wanted:
                break
        if not candidates:
            return None
        best = pick_one_node(candidates, self.running)
        return Outcome(victims=best.pods(), nominations={pod.key: cluster.names[best.node]},
                       node=cluster.names[best.node])

    def _select_on_node(self, node: int, cols: list[int], need: IntArray, priority: int,
                        budgets: Budgets) -> _Candidate | None:
        """SelectVictimsOnNode: remove every lower-priority unit, then reprieve as many as still fit."""
        units = self.units(self.running.on_node.get(node, ()), priority)
        shares = [self._on_node(unit, node) for unit in units]
        free = self.cluster.allocatable[node] - self.cluster.requested[node] + self.running.pending_change(node)
        for share in shares:
            free = free + share
        if np.any(free[cols] < need[cols]):
            return None
        share_of = {unit: share for unit, share in zip(units, shares, strict=True)}
        violating, fine = budgets.split(units)
        bad = set(violating)
        victims: list[Unit] = []
        violations = 0
        for unit in (*violating, *fine):
            share = share_of[unit]
            if np.all(free[cols] - share[cols] >= need[cols]):
                free = free - share
                continue
            victims.append(unit)
            violations += unit in bad
        # No victims: the room that earlier victims are freeing here is enough (kube counts terminating
        # victims and nominated pods the same way); the pod is nominated here without new evictions.
        return _Candidate(node, victims, violations)

    # --- a PodGroup -------------------------------------------------------------------------------------

    def group_eligible(self, group: PodGroup, preemption_policy_gate: bool) -> bool:
        if preemption_policy_gate and group.preemption_policy == "Never":
            return False
        # Retries do not start new preemptions while this group's victims are still terminating.
        return not any(preemptor == group.key for preemptor in self.running.terminating.values())

    def for_group(self, group: PodGroup, priority: int, pending: Sequence[Pod], running: int) -> Outcome | None:
        """Workload-aware preemption: victims anywhere in the cluster, so that minCount members fit."""
        units = self.units(list(self.running.node_of), priority)
        if not units:
            return None
        removed = [(key, self.running.node_of[key]) for unit in units for key in unit.pods]
        for key, _ in removed:
            self.cycle.unreserve(key, self.pods[key])
        outcome = schedule_group(self.cycle, group, pending, running)
        if not outcome.success or not outcome.placed:
            for key, node in removed:
                self.cycle.reserve(self.pods[key], node)
            return None
        violating, fine = Budgets(self.pdbs(), self.pods, self.running).split(units)
        victims: list[str] = []
        for unit in (*violating, *fine):
            if self._reprieve(unit):
                continue
            victims.extend(unit.pods)
        for pod, _ in outcome.placed:
            self.cycle.unreserve(pod.key, pod)
        for key in victims:  # victims hold their nodes until they are gone
            self.cycle.reserve(self.pods[key], self.running.node_of[key])
        return Outcome(victims=victims,
                       nominations={pod.key: self.cluster.names[node] for pod, node in outcome.placed})

    def _reprieve(self, unit: Unit) -> bool:
        """Put the unit back if all its pods fit on their nodes; all or none (with rollback)."""
        placed: list[str] = []
        for key in unit.pods:
            node = self.running.node_of[key]
            if not self.cluster.fits(self.pods[key], node):
                for done in placed:
                    self.cycle.unreserve(done, self.pods[done])
                return False
            self.cycle.reserve(self.pods[key], node)
            placed.append(key)
        return True


def pick_one_node(candidates: Sequence[_Candidate], running: RunningPods) -> _Candidate:
    """kube-scheduler's pickOneNodeForPreemption over the candidates, in order."""

    def key(c: _Candidate) -> tuple[int, int, int, int, float]:
        pods = c.pods()
        if not pods:
            return (c.violations, -PRIORITY_OFFSET, 0, 0, -math.inf)
        top = max(running.priority[k] for k in pods)
        total = sum(running.priority[k] + PRIORITY_OFFSET for k in pods)
        earliest_top = min(running.started[k] for k in pods if running.priority[k] == top)
        return (c.violations, top, total, len(pods), -earliest_top)

    return min(candidates, key=key)  # min() keeps the first of equal keys: candidate order breaks ties

"""Topology-aware workload scheduling (KEP-5732): a PodGroup's placement search, as kube-scheduler v1.37.2
runs it with the TopologyAwareWorkloadScheduling gate on (schedule_one_podgroup.go,
podGroupSchedulingPlacementAlgorithm).

1. Placements (topologyaware TopologyPlacement.GeneratePlacements): a group whose
   `schedulingConstraints.topology[0].key` names a node label gets one placement per distinct value of that
   label; a node without the label is in none. When members are already bound (assigned or assumed,
   terminating ones too), only their domain is a placement, and members on an unlabelled node or in two
   domains are a scheduler error (the group fails with SchedulerError and preempts nothing). No node with the
   label: no placement, and the group is unschedulable ("no feasible placements found").
2. Each placement runs the ordinary group algorithm (`gang.schedule_group`) confined to its nodes
   (`PodCycle.confined`, as Snapshot.AssumePlacement), and its assumptions are undone before the next one.
3. With more than one feasible placement, each is scored (RunPlacementScorePlugins, findBestPodGroupPlacement):
   NodeResourcesFit.ScorePlacement is MostAllocated with NodeResourcesFit's configured resources and weights
   over the placement as one node (resourceAllocationScorer.scorePlacement: every node's allocatable and
   non-zero requests summed, plus the group's placed pods), not normalised; PodGroupPodsCount.ScorePlacement
   counts the group's bound members plus the pods the placement seats, and NormalizePlacementScore makes that
   100·count/max. Each score is multiplied by its plugin's placementScore weight (1 and 1 by default).
4. The highest total wins. Equal totals go to a random one upstream (findBestPlacement's Randomizer): here
   the profile's seeded generator picks, or the first placement by label value with `tieBreak: first`.
   Upstream tries placements in no particular order and prefers no nominated placement; neither does this.
5. The winner's placed pods are reserved again, as upstream assumes them again for the binding cycle.
6. No feasible placement: the group is unschedulable with "0/P placements are available", the first
   placement's reason appended (upstream reports whichever placement it tried first), and goes to
   workload-aware preemption, where the Scheduler runs this search again with every possible victim gone
   and chooses victims against the best placement (the PodGroupSchedulingFunc that preemption calls).

A group without the constraint has one placement, every node, and is placed by `schedule_group` directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from phalanx.api.objects import Pod, PodGroup
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.framework import MAX_NODE_SCORE, BoolArray
from phalanx.scheduler.gang import GroupOutcome, schedule_group
from phalanx.scheduler.plugins.node_resources import NodeResourcesFit, ResourceSpec

NODE_RESOURCES_FIT = "NodeResourcesFit"
POD_GROUP_PODS_COUNT = "PodGroupPodsCount"
# Resources scored by their non-zero requests (row 0 cpu, 1 memory of ClusterState.nonzero_requested).
_NONZERO_ROWS = {"cpu": 0, "memory": 1}


class PlacementError(Exception):
    """The group's bound members give no single domain (kube-scheduler: an error status, SchedulerError)."""


@dataclass(frozen=True, slots=True)
class Domain:
    """One placement: the nodes with one value of the topology label."""

    name: str  # the label value
    nodes: BoolArray


@dataclass(slots=True)
class PlacementOutcome:
    """The search's result: the group outcome of the chosen placement (or, when none is feasible, the first
    placement's with the search's message), the chosen placement, and what was tried and scored."""

    outcome: GroupOutcome
    placement: Domain | None = None
    placements: int = 0
    scores: dict[str, int] = field(default_factory=dict)  # label value -> total score, when scored
    error: str | None = None  # a scheduler error: nothing binds and nothing is preempted


def generate_placements(cluster: ClusterState, key: str, scheduled: Sequence[tuple[str, int]],
                        within: BoolArray | None = None) -> list[Domain]:
    """TopologyPlacement.GeneratePlacements: one Domain per value of node label `key`, by value; only the
    domain of the bound members `scheduled` ((pod key, node) pairs) when there are any. `within`: the
    parent placement's nodes (a CompositePodGroup's domain); a value with no node there is no placement."""
    ids = cluster.labels.ids(key)
    required: int | None = None
    for pod_key, node in scheduled:
        domain = int(ids[node])
        if domain < 0:
            raise PlacementError(f"cannot determine domain for already scheduled pods: no topology domain found "
                                 f"for pod {pod_key} (node {cluster.names[node]} has no label {key})")
        if required is not None and domain != required:
            raise PlacementError("cannot determine domain for already scheduled pods: more than 1 domain found "
                                 f"for pod group: {_value(cluster, key, ids, required)}, "
                                 f"{_value(cluster, key, ids, domain)}")
        required = domain
    values, first = np.unique(ids, return_index=True)
    domains = [Domain(cluster.labels.labels(int(node))[key], ids == value)
               for value, node in zip(values.tolist(), first.tolist(), strict=True)
               if value >= 0 and (required is None or value == required)]
    if within is not None:
        domains = [Domain(d.name, d.nodes & within) for d in domains if bool((d.nodes & within).any())]
    domains.sort(key=lambda d: d.name)
    return domains


def _value(cluster: ClusterState, key: str, ids: npt.NDArray[np.int32], domain: int) -> str:
    """The label value of domain id `domain`."""
    return cluster.labels.labels(int(np.flatnonzero(ids == domain)[0]))[key]


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


class TopologyPlacer:
    """The placement search of one profile: its NodeResourcesFit resources and its placementScore weights."""

    def __init__(self, plugin_args: Mapping[str, Mapping[str, Any]], weights: Mapping[str, int]) -> None:
        self.resources = NodeResourcesFit(dict(plugin_args.get(NODE_RESOURCES_FIT, {}))).resources
        self.weights = dict(weights)

    def schedule(self, cycle: PodCycle, group: PodGroup, pending: Sequence[Pod], running: int,
                 scheduled: Sequence[tuple[str, int]], *, commit: bool = True, inner: bool = False
                 ) -> PlacementOutcome:
        """Find the best placement of `group` (`running` members counting toward minCount, `scheduled` the
        bound members and their nodes) and, with `commit`, reserve its placed pods as schedule_group does.
        `inner`: a child in a CompositePodGroup tree, placed within the parent's domain (schedule_group)."""
        assert group.topology_key is not None
        key = group.topology_key
        try:
            domains = generate_placements(cycle.cluster, key, scheduled, cycle.confinement)
        except PlacementError as exc:
            return PlacementOutcome(GroupOutcome(message=f"pod group {group.key}: {exc}"), error=str(exc))
        if not domains:
            return PlacementOutcome(GroupOutcome(message=f"pod group {group.key}: no feasible placements found: "
                                                         f"no node has the label {key}"))
        tried: list[tuple[Domain, GroupOutcome]] = []
        for domain in domains:
            # A trial never kept: the next placement starts from the same state.
            with cycle.cluster.trial(), cycle.confined(domain.nodes):
                tried.append((domain, schedule_group(cycle, group, pending, running, inner=inner)))
        feasible = [(domain, outcome) for domain, outcome in tried if outcome.success]
        if not feasible:
            first_domain, first = tried[0]
            why = (first.message or "").removeprefix(f"pod group {group.key}: ")
            first.message = (f"pod group {group.key}: 0/{len(domains)} placements are available ({key}), "
                             f"first placement {first_domain.name}: {why}")
            return PlacementOutcome(first, placements=len(domains))
        scores: dict[str, int] = {}
        if len(feasible) == 1:
            chosen = feasible[0]
        else:
            totals = self._scores(cycle.cluster, [d for d, _ in feasible], [o for _, o in feasible], len(scheduled))
            scores = {domain.name: total for (domain, _), total in zip(feasible, totals, strict=True)}
            best = [i for i, total in enumerate(totals) if total == max(totals)]
            chosen = feasible[self._tie_break(cycle, [feasible[i] for i in best], best)]
        domain, outcome = chosen
        if commit:
            for pod, node in outcome.placed:
                cycle.reserve(pod, node)
        return PlacementOutcome(outcome, domain, len(domains), scores)

    def _scores(self, cluster: ClusterState, domains: Sequence[Domain], outcomes: Sequence[GroupOutcome],
                bound: int) -> list[int]:
        totals = [0] * len(domains)
        weight = self.weights.get(NODE_RESOURCES_FIT, 0)
        if weight:
            for i, (domain, outcome) in enumerate(zip(domains, outcomes, strict=True)):
                totals[i] += weight * fit_score(cluster, domain.nodes, [p for p, _ in outcome.placed], self.resources)
        weight = self.weights.get(POD_GROUP_PODS_COUNT, 0)
        if weight:
            counts = pods_count_scores([bound + len(o.placed) for o in outcomes]) if any(
                bound + len(o.placed) for o in outcomes) else [0] * len(outcomes)
            totals = [total + weight * count for total, count in zip(totals, counts, strict=True)]
        return totals

    @staticmethod
    def _tie_break(cycle: PodCycle, tied: Sequence[tuple[Domain, GroupOutcome]], positions: Sequence[int]) -> int:
        """Which of the equally best placements (their positions among the feasible ones) to take."""
        if len(tied) == 1:
            return positions[0]
        if cycle.hints is not None:  # `phalanx verify`: the placement the real scheduler's nodes are in
            index = cycle.cluster.index
            for (domain, outcome), position in zip(tied, positions, strict=True):
                hinted = (index.get(cycle.hints.get(pod.key, "")) for pod, _ in outcome.placed)
                if any(node is not None and bool(domain.nodes[node]) for node in hinted):
                    return position
        if cycle.tie_break == "first":
            return positions[0]
        return positions[int(cycle.rng.integers(len(tied)))]


class TopologyReport(TypedDict):
    """The report's `topologyConstraints` block."""

    podGroups: int
    placementPhase: bool
    notes: list[str]


def constraint_report(groups: Iterable[PodGroup], *, placement_phase: bool, gang: bool) -> TopologyReport | None:
    """For the report: how many PodGroups ask for a topology domain, whether the profile honours that, and a
    line saying so when it does not (None when no group asks)."""
    keys = sorted(group.key for group in groups if group.topology_key is not None)
    if not keys:
        return None
    notes: list[str] = []
    if not placement_phase:
        few = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        why = "TopologyAwareWorkloadScheduling is off (alpha and off by default in v1.37.2; turn it on with " \
              "--feature-gates TopologyAwareWorkloadScheduling=true)" if gang else \
              "GenericWorkload is off, so pods are scheduled one at a time"
        notes.append(f"schedulingConstraints.topology of {len(keys)} PodGroup(s) ({few}) has no effect: {why}")
    return {"podGroups": len(keys), "placementPhase": placement_phase, "notes": notes}

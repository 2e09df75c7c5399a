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
6. No feasible placement: the group is unschedulable with "0/P placements are available, first placement
   status: …" and the first placement's members' results (upstream reports whichever placement it tried
   first; group_status.py), and goes to
   workload-aware preemption, where the Scheduler runs this search again with every possible victim gone
   and chooses victims against the best placement (the PodGroupSchedulingFunc that preemption calls).

A group without the constraint has one placement, every node, and is placed by `schedule_group` directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from phalanx.api.objects import Pod, PodGroup
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.gang import GroupOutcome, schedule_group
from phalanx.scheduler.group_framework import Domain, PlacementOutcome
from phalanx.scheduler.group_status import GroupStatus, placements_failed
from phalanx.scheduler.plugins.node_resources import NodeResourcesFit
from phalanx.scheduler.plugins.topology.placement_scores import (
    NODE_RESOURCES_FIT,
    POD_GROUP_PODS_COUNT,
    fit_score,
    pods_count_scores,
)
from phalanx.scheduler.plugins.topology.placements import PlacementError, generate_placements


class TopologyPlacer:
    """The placement search of one profile (a PlacementPlugin): its NodeResourcesFit resources and its
    placementScore weights."""

    def __init__(self, plugin_args: Mapping[str, Mapping[str, Any]], weights: Mapping[str, int]) -> None:
        self.resources = NodeResourcesFit(dict(plugin_args.get(NODE_RESOURCES_FIT, {}))).resources
        self.weights = dict(weights)

    def applies(self, group: PodGroup) -> bool:
        return group.topology_key is not None

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
            return PlacementOutcome(GroupOutcome(message=str(exc)), error=str(exc))
        if not domains:  # RunPlacementGeneratePlugins: no member is tried, each takes the group's status
            status = GroupStatus(("no feasible placements found",))
            return PlacementOutcome(GroupOutcome(message=status.message, status=status,
                                                 untried=[pod.key for pod in pending]))
        tried: list[tuple[Domain, GroupOutcome]] = []
        for domain in domains:
            # A trial never kept: the next placement starts from the same state.
            with cycle.cluster.trial(), cycle.confined(domain.nodes):
                tried.append((domain, schedule_group(cycle, group, pending, running, inner=inner)))
        feasible = [(domain, outcome) for domain, outcome in tried if outcome.success]
        if not feasible:
            first = tried[0][1]
            first.status = placements_failed(len(domains), first.status or GroupStatus(unschedulable=True))
            first.message = first.status.message
            return PlacementOutcome(first, placements=len(domains))
        scores: dict[str, int] = {}
        if len(feasible) == 1:
            chosen = feasible[0]
        else:
            placed = [[pod for pod, _ in outcome.placed] for _, outcome in feasible]
            totals = self.score(cycle.cluster, [domain for domain, _ in feasible], placed, len(scheduled))
            scores = {domain.name: total for (domain, _), total in zip(feasible, totals, strict=True)}
            best = [i for i, total in enumerate(totals) if total == max(totals)]
            chosen = feasible[self.tie_break(cycle, [feasible[i] for i in best], best)]
        domain, outcome = chosen
        if commit:
            for pod, node in outcome.placed:
                cycle.reserve(pod, node)
        return PlacementOutcome(outcome, domain, len(domains), scores)

    def score(self, cluster: ClusterState, domains: Sequence[Domain], placed: Sequence[Sequence[Pod]],
              bound: int) -> list[int]:
        """PlacementScore (RunPlacementScorePlugins): each feasible placement's total over the profile's placement
        scorers, weighted by their placementScore weights: NodeResourcesFit over the placement's nodes with the
        pods it seats (`placed`), PodGroupPodsCount over those and the `bound` pods already running."""
        totals = [0] * len(domains)
        weight = self.weights.get(NODE_RESOURCES_FIT, 0)
        if weight:
            for i, (domain, pods) in enumerate(zip(domains, placed, strict=True)):
                totals[i] += weight * fit_score(cluster, domain.nodes, pods, self.resources)
        weight = self.weights.get(POD_GROUP_PODS_COUNT, 0)
        if weight:
            counts = pods_count_scores([bound + len(pods) for pods in placed]) if any(
                bound + len(pods) for pods in placed) else [0] * len(placed)
            totals = [total + weight * count for total, count in zip(totals, counts, strict=True)]
        return totals

    @staticmethod
    def tie_break(cycle: PodCycle, tied: Sequence[tuple[Domain, GroupOutcome]], positions: Sequence[int]) -> int:
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

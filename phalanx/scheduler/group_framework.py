"""The PodGroup cycle's extension points beside the gang rule (plugins/gang/), after the workload-aware ones of
kube-scheduler's framework (PlacementGenerate, PlacementScore, PlacementFeasible, PodGroupPostFilter). The group
cycle (group_cycle.py) and the Scheduler call these, never a feature by name; the Scheduler builds the plugins a
profile enables once (plugins/group_registry.py).

- A placement plugin (`PlacementPlugin`; KEP-5732's TopologyPlacement, plugins/topology/): for a group that asks
  for placements it runs PlacementGenerate, the group algorithm (gang.py) confined to each placement, and
  PlacementScore, and keeps the best (schedule_one_podgroup.go podGroupSchedulingPlacementAlgorithm). A group no
  plugin applies to has one placement, every node, and the group algorithm places it directly.
- A tree plugin (`TreePlugin`; KEP-6012's CompositePodGroups, plugins/composite/): groups of groups, queued and
  scheduled as one entry per root. It takes PreEnqueue for the PodGroups it holds, names the entry their members
  are scheduled in, runs that entry's cycle, and answers the driver's events and the other parts' questions about
  its trees. `NoTrees` is the plugin of a profile that schedules no trees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from phalanx.api.objects import CompositePodGroup, Pod, PodGroup
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.framework import BoolArray
from phalanx.scheduler.gang import GroupOutcome


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


class PlacementPlugin(Protocol):
    """PlacementGenerate, the group algorithm in each placement, and PlacementScore, for the groups it applies to."""

    def applies(self, group: PodGroup) -> bool:
        """Whether the group asks for this plugin's placements (a topology constraint)."""
        ...

    def schedule(self, cycle: PodCycle, group: PodGroup, pending: Sequence[Pod], running: int,
                 scheduled: Sequence[tuple[str, int]], *, commit: bool = True, inner: bool = False
                 ) -> PlacementOutcome:
        """Place `group` in its best placement (`running` members counting toward minCount, `scheduled` the bound
        members and their nodes); with `commit`, its placed pods stay reserved. `inner`: a child in a tree."""
        ...


class TreePlugin(Protocol):
    """Groups of groups: PreEnqueue, the queue entry and the cycle of a tree's root, and the tree's bookkeeping."""

    def holds(self, group: PodGroup) -> bool:
        """Whether the PodGroup hangs under a tree this plugin schedules (its PreEnqueue and entry are the tree's)."""
        ...

    def entry(self, group_key: str) -> str | None:
        """The queue entry of the root over PodGroup `group_key` (None: not in a tree, or a tree without a root)."""
        ...

    def owns(self, entry: str) -> bool:
        """Whether a queue entry is a tree root's (its cycle is `run`)."""
        ...

    def pre_enqueue_group(self, group: PodGroup, now: float) -> None:
        """PreEnqueue for a PodGroup it `holds`: gate its members or queue its tree's root."""
        ...

    def run(self, entry: str, now: float) -> None:
        """The cycle of a tree root's queue entry."""
        ...

    def tree_members(self, group_key: str) -> set[str] | None:
        """The pods of every leaf of the tree over PodGroup `group_key` (None: no tree, or no root)."""
        ...

    def leaves(self, root_key: str) -> list[PodGroup] | None:
        """The leaf PodGroups of the tree rooted at `root_key` (None: no such root)."""
        ...

    def group_added(self, group: PodGroup) -> None: ...
    def group_deleted(self, group: PodGroup) -> None: ...
    def add(self, composite: CompositePodGroup, now: float) -> None: ...
    def delete(self, key: str, now: float) -> None: ...


class NoTrees:
    """The tree plugin of a profile that schedules no trees (the CompositePodGroup gate off): every PodGroup is its
    own root, and CompositePodGroups are only kept for the report (the Scheduler's `composite_pod_groups`)."""

    def holds(self, group: PodGroup) -> bool:
        return False

    def entry(self, group_key: str) -> str | None:
        return None

    def owns(self, entry: str) -> bool:
        return False

    def pre_enqueue_group(self, group: PodGroup, now: float) -> None:
        raise AssertionError("no PodGroup is in a tree without a tree plugin")

    def run(self, entry: str, now: float) -> None:
        raise AssertionError("no tree is queued without a tree plugin")

    def tree_members(self, group_key: str) -> set[str] | None:
        return None

    def leaves(self, root_key: str) -> list[PodGroup] | None:
        return None

    def group_added(self, group: PodGroup) -> None:
        pass

    def group_deleted(self, group: PodGroup) -> None:
        pass

    def add(self, composite: CompositePodGroup, now: float) -> None:
        pass

    def delete(self, key: str, now: float) -> None:
        pass

"""The PodGroup cycle's plugins (group_framework.py's extension points) a profile enables, built once per
Scheduler: TopologyPlacement's search with the TopologyAwareWorkloadScheduling gate on, CompositePodGroup trees
with the CompositePodGroup gate on (which needs the other: a tree's groups are placed with that search). The gang
rule (plugins/gang/) comes with GenericWorkload and is not built here."""

from __future__ import annotations

from dataclasses import dataclass

from phalanx.scheduler.group_framework import NoTrees, PlacementPlugin, TreePlugin
from phalanx.scheduler.handle import Handle
from phalanx.scheduler.plugins.composite.tree_cycles import CompositeCycles
from phalanx.scheduler.plugins.topology.topology_placement import TopologyPlacer
from phalanx.scheduler.profiles import Profile


@dataclass(frozen=True, slots=True)
class GroupPlugins:
    placements: tuple[PlacementPlugin, ...]  # the first that applies to a group places it
    trees: TreePlugin


def group_plugins(profile: Profile, scheduler: Handle) -> GroupPlugins:
    """The profile's PodGroup-cycle plugins, for `scheduler` (the tree plugin calls back into it)."""
    if not profile.topology_aware:
        return GroupPlugins((), NoTrees())
    placer = TopologyPlacer(profile.plugin_args, profile.placement_scores)
    trees: TreePlugin = CompositeCycles(scheduler, placer) if profile.composite else NoTrees()
    return GroupPlugins((placer,), trees)

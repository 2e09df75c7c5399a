"""What the report says of CompositePodGroup trees: what kube-scheduler v1.37.2 leaves unchecked in them, and
whether the profile schedules them at all."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypedDict

from phalanx.api.objects import CompositePodGroup, PodGroup
from phalanx.scheduler.plugins.composite.forest import MAX_TREE_DEPTH, Forest, TreeNode, depth, walk


def tree_notes(groups: Sequence[PodGroup], composites: Sequence[CompositePodGroup]) -> list[str]:
    """What kube-scheduler v1.37.2 leaves unchecked in the given trees, one line each: cycles, missing
    parents and roots out of the hierarchy walk's reach (the members never queue), trees deeper than 4
    levels and trees spanning several Workloads (scheduled as any other tree; the API's `Invalid` reason is
    never set)."""
    forest = Forest()
    for composite in composites:
        forest.add(composite)
    for group in groups:
        forest.add_group(group)
    notes: list[str] = []
    orphans = sorted({why for group in groups if group.parent is not None
                      for root, why in [forest.hierarchy_root(f"{group.namespace}/{group.parent}")] if root is None})
    notes.extend(f"PodGroup members will wait: {why}" for why in orphans)
    for composite in composites:
        if composite.parent is not None:
            continue
        tree = forest.tree(composite.key)
        levels = depth(tree)
        if levels > MAX_TREE_DEPTH:
            notes.append(f"CompositePodGroup {composite.key}: its tree is {levels} levels deep (more than "
                         f"{MAX_TREE_DEPTH}); kube-scheduler v1.37.2 schedules it anyway (but for leaves more than "
                         f"{MAX_TREE_DEPTH + 1} levels down: their root is out of its reach)")
        names = {obj.workload_name for obj in _objects(tree) if obj.workload_name}
        if len(names) > 1:
            notes.append(f"CompositePodGroup {composite.key}: its tree names {len(names)} Workloads "
                         f"({', '.join(sorted(names))}); kube-scheduler v1.37.2 schedules it anyway")
    return notes


def _objects(node: TreeNode) -> Iterator[PodGroup | CompositePodGroup]:
    for each in walk(node):
        if each.group is not None:
            yield each.group
        if each.composite is not None:
            yield each.composite


class CompositeReport(TypedDict):
    """The report's `compositePodGroups` block."""

    compositePodGroups: int
    podGroupsWithParent: int
    scheduled: bool
    notes: list[str]


def composite_report(groups: Sequence[PodGroup], composites: Sequence[CompositePodGroup], *, scheduled: bool,
                     topology_aware: bool, gang: bool) -> CompositeReport | None:
    """For the report: the trees in the input, whether the profile schedules them, and a line for each thing
    that leaves out (None without CompositePodGroups or parent links)."""
    children = [group for group in groups if group.parent is not None]
    if not composites and not children:
        return None
    notes: list[str] = []
    if not scheduled:
        missing = [gate for gate, on in (("GenericWorkload", gang), ("TopologyAwareWorkloadScheduling",
                                                                     topology_aware), ("CompositePodGroup", False))
                   if not on]
        notes.append(f"{len(composites)} CompositePodGroup(s) and the parentCompositePodGroupName of {len(children)} "
                     f"PodGroup(s) have no effect: the CompositePodGroup gate needs {', '.join(missing)} on (alpha "
                     "and off by default in v1.37.2); each PodGroup is scheduled on its own")
    else:
        notes.extend(tree_notes(groups, composites))
    return {"compositePodGroups": len(composites), "podGroupsWithParent": len(children), "scheduled": scheduled,
            "notes": notes}

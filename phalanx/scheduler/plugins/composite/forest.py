"""The forest of CompositePodGroups and PodGroups (KEP-6012; workload_forest.go): who is whose child, each
root's tree, and the walks over a tree. Every walk is a loop, never a recursion, so a chain of any length is
only as costly as it is long. The composite cycle (composite.py) and workload-aware preemption (preemption.py)
both read it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from phalanx.api.objects import CompositePodGroup, PodGroup

MAX_TREE_DEPTH = 4  # schedulingv1beta1.WorkloadMaxTreeDepth: TraverseHierarchyUp visits at most this many levels


@dataclass(slots=True)
class TreeNode:
    """One node of a root's tree: a CompositePodGroup with children, or a PodGroup leaf."""

    key: str
    composite: CompositePodGroup | None = None
    group: PodGroup | None = None
    children: list[TreeNode] = field(default_factory=list, repr=False)  # a deep tree's repr stays flat

    def leaves(self) -> Iterable[PodGroup]:
        return (node.group for node in walk(self) if node.group is not None)


class Forest:
    """The CompositePodGroups known and the children of each (workload_forest.go)."""

    def __init__(self) -> None:
        self.composites: dict[str, CompositePodGroup] = {}
        self._child_groups: dict[str, dict[str, PodGroup]] = {}
        self._child_composites: dict[str, dict[str, CompositePodGroup]] = {}
        self._group_parents: dict[str, str] = {}  # PodGroup key -> its parent's key

    @staticmethod
    def _parent_key(obj: PodGroup | CompositePodGroup) -> str | None:
        return f"{obj.namespace}/{obj.parent}" if obj.parent is not None else None

    def add_group(self, group: PodGroup) -> None:
        """A PodGroup appears or changes (a changed parent link moves it: never a child of two)."""
        self.remove_group(group)
        parent = self._parent_key(group)
        if parent is not None:
            self._child_groups.setdefault(parent, {})[group.key] = group
            self._group_parents[group.key] = parent

    def remove_group(self, group: PodGroup) -> None:
        parent = self._group_parents.pop(group.key, None)
        if parent is not None:
            children = self._child_groups.get(parent, {})
            children.pop(group.key, None)
            if not children:
                self._child_groups.pop(parent, None)

    def add(self, composite: CompositePodGroup) -> None:
        """A CompositePodGroup appears or changes (a changed parent link moves it: never a child of two)."""
        self.remove(composite.key)
        self.composites[composite.key] = composite
        parent = self._parent_key(composite)
        if parent is not None:
            self._child_composites.setdefault(parent, {})[composite.key] = composite

    def remove(self, key: str) -> CompositePodGroup | None:
        composite = self.composites.pop(key, None)
        parent = self._parent_key(composite) if composite is not None else None
        if parent is not None:
            children = self._child_composites.get(parent, {})
            children.pop(key, None)
            if not children:
                self._child_composites.pop(parent, None)
        return composite

    def root_of(self, composite_key: str) -> tuple[str | None, str]:
        """The root CompositePodGroup above (or at) `composite_key`, or None and why there is none."""
        return self._walk_up(composite_key, None)

    def _walk_up(self, key: str, limit: int | None) -> tuple[str | None, str]:
        """Follow parents from `key` (at most `limit` of them): the root, or None and why there is none ("" when
        the limit was reached first)."""
        seen: set[str] = set()
        while limit is None or len(seen) < limit:
            if key in seen:
                return None, f"cycle detected in composite pod group hierarchy at {key}"
            seen.add(key)
            composite = self.composites.get(key)
            if composite is None:
                return None, f"waiting for composite pod group {key} to be created"
            if composite.parent is None:
                return key, ""
            key = f"{composite.namespace}/{composite.parent}"
        return None, ""

    def hierarchy_root(self, parent_key: str) -> tuple[str | None, str]:
        """The root over a PodGroup whose parent is `parent_key`, as the GangScheduling PreEnqueue finds it
        (BuildHierarchySnapshotFromPod, then GetRootKeyForGroup in that snapshot): it follows at most
        WorkloadMaxTreeDepth parents, so a root further up is never found and the leaf's pods wait. None
        and why, when there is no root in reach (missing, a loop, too far)."""
        root, why = self._walk_up(parent_key, MAX_TREE_DEPTH)
        if root is not None or why:
            return root, why
        root, why = self.root_of(parent_key)  # the snapshot below the last one reached finds a loop through it
        if root is None and why.startswith("cycle"):
            return None, why
        return None, (f"failed to build hierarchy snapshot: composite pod group {parent_key} has no root within "
                      f"{MAX_TREE_DEPTH} levels up (the API allows trees {MAX_TREE_DEPTH} levels deep)")

    def tree(self, root: str) -> TreeNode:
        """The root's tree (buildPodGroupInfoForCPG); children in the order GetChildGroups sorts them
        (framework/types.go): by creationTimestamp, which the API server keeps in whole seconds (here the
        arrival's), then by name. Built depth first without recursion: a chain of any length is one loop."""
        def order(obj: PodGroup | CompositePodGroup) -> tuple[int, str]:
            return math.floor(obj.arrival), obj.name

        def kids(node: TreeNode) -> Iterator[PodGroup | CompositePodGroup]:
            found: list[PodGroup | CompositePodGroup] = [*self._child_groups.get(node.key, {}).values(),
                                                         *self._child_composites.get(node.key, {}).values()]
            return iter(sorted(found, key=order))

        top = TreeNode(root, composite=self.composites[root])
        seen = {root}
        stack = [(top, kids(top))]
        while stack:
            node, pending = stack[-1]
            kid = next(pending, None)
            if kid is None:
                stack.pop()
            elif isinstance(kid, PodGroup):
                node.children.append(TreeNode(kid.key, group=kid))
            elif kid.key not in seen:
                seen.add(kid.key)
                child = TreeNode(kid.key, composite=kid)
                node.children.append(child)
                stack.append((child, kids(child)))
        return top


def ready(node: TreeNode, members: Mapping[str, set[str]]) -> bool:
    """isCPGTreeReady / isPGReady: a PodGroup has minCount pods (1 for basic), a CompositePodGroup has
    minGroupCount (1 for basic) ready children."""
    done: dict[int, bool] = {}
    for each in reversed(list(walk(node))):  # children before their parent
        if each.group is not None:
            done[id(each)] = len(members.get(each.key, ())) >= each.group.min_count
        else:
            assert each.composite is not None
            done[id(each)] = sum(done[id(child)] for child in each.children) >= each.composite.min_group_count
    return done[id(node)]


def depth(node: TreeNode) -> int:
    """Levels from the node down to its deepest descendant, both counted."""
    levels: dict[int, int] = {}
    for each in reversed(list(walk(node))):
        levels[id(each)] = 1 + max((levels[id(child)] for child in each.children), default=0)
    return levels[id(node)]


def walk(node: TreeNode) -> Iterator[TreeNode]:
    """The node and every node below it, parents first (depth first, children in order)."""
    stack = [node]
    while stack:
        each = stack.pop()
        yield each
        stack.extend(reversed(each.children))

"""The cohort tree and its quota arithmetic, restating Kueue's resource nodes (pkg/cache/scheduler
resource_node.go, clusterqueue_snapshot.go, cohort_snapshot.go).

Every ClusterQueue and every Cohort is a node holding, per (flavor, resource):
- its own quotas: nominal, borrowingLimit, lendingLimit (None = no limit);
- `subtree`: its nominal plus what its children make available to it — each child's subtree minus the part the
  child keeps for itself (its local quota);
- `usage`: for a ClusterQueue, what its admitted workloads use; for a Cohort, the part of its children's usage
  beyond their local quotas.

A node's *local quota* is what it does not lend: subtree − lendingLimit, at least 0, and 0 without a
lendingLimit (then everything unused can be lent). A ClusterQueue can use its local quota plus what its
ancestors have available, each step capped by borrowingLimit. Amounts are ints in Phalanx units; Python's
ints do not saturate, so Kueue's "Unlimited" amounts never arise: a missing limit is simply not applied.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

FlavorResource = tuple[str, str]  # (flavor, resource)


@dataclass(frozen=True, slots=True)
class Limits:
    nominal: int
    borrowing_limit: int | None = None
    lending_limit: int | None = None


@dataclass(eq=False, slots=True)
class Node:
    """A ClusterQueue (no children) or a Cohort in the tree."""

    name: str
    is_cohort: bool
    quotas: dict[FlavorResource, Limits] = field(default_factory=dict)
    parent: Node | None = None
    child_cohorts: list[Node] = field(default_factory=list)
    child_cqs: list[Node] = field(default_factory=list)
    subtree: dict[FlavorResource, int] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)

    def nominal(self, fr: FlavorResource) -> int:
        limits = self.quotas.get(fr)
        return limits.nominal if limits else 0

    def __repr__(self) -> str:
        return f"{'Cohort' if self.is_cohort else 'ClusterQueue'}({self.name})"


# --- Kueue's resource_node.go, restated ---------------------------------------------------------------------

def local_quota(node: Node, fr: FlavorResource) -> int:
    """resourceNode.localQuota: the part of the subtree quota the node does not lend (subtree − lendingLimit,
    at least 0); 0 when it has no lendingLimit, since then all of it is lent to the parent."""
    limits = node.quotas.get(fr)
    if limits is None or limits.lending_limit is None:
        return 0
    return max(0, node.subtree.get(fr, 0) - limits.lending_limit)


def local_available(node: Node, fr: FlavorResource) -> int:
    """LocalAvailable: unused local quota, never negative."""
    return max(0, local_quota(node, fr) - node.usage.get(fr, 0))


def _available(node: Node, fr: FlavorResource) -> int:
    """available: the root has subtree − usage; below it, local availability plus the parent's availability,
    the latter capped by borrowingLimit (what the node stored in the parent, minus what it already uses
    there, plus the limit)."""
    if node.parent is None:
        return node.subtree.get(fr, 0) - node.usage.get(fr, 0)
    parent_available = _available(node.parent, fr)
    limits = node.quotas.get(fr)
    if limits is not None and limits.borrowing_limit is not None:
        lq = local_quota(node, fr)
        stored_in_parent = node.subtree.get(fr, 0) - lq
        used_in_parent = max(0, node.usage.get(fr, 0) - lq)
        parent_available = min(stored_in_parent - used_in_parent + limits.borrowing_limit, parent_available)
    return local_available(node, fr) + parent_available


def available(node: Node, fr: FlavorResource) -> int:
    """ClusterQueueSnapshot.Available: capacity usable now without preempting, at least 0."""
    return max(0, _available(node, fr))


def potential_available(node: Node, fr: FlavorResource) -> int:
    """potentialAvailable: the most the node could use were nothing else admitted — the root's whole subtree,
    or local quota plus the parent's potential, capped by subtree + borrowingLimit."""
    if node.parent is None:
        return node.subtree.get(fr, 0)
    avail = local_quota(node, fr) + potential_available(node.parent, fr)
    limits = node.quotas.get(fr)
    if limits is not None and limits.borrowing_limit is not None:
        avail = min(node.subtree.get(fr, 0) + limits.borrowing_limit, avail)
    return avail


def add_usage(node: Node, fr: FlavorResource, value: int) -> None:
    """addUsage: what does not fit in the node's unused local quota is also usage of its parent."""
    local = local_available(node, fr)
    node.usage[fr] = node.usage.get(fr, 0) + value
    if node.parent is not None and value > local:
        add_usage(node.parent, fr, value - local)


def remove_usage(node: Node, fr: FlavorResource, value: int) -> None:
    """removeUsage: the inverse of add_usage; the parent gives back at most what was stored there."""
    stored_in_parent = node.usage.get(fr, 0) - local_quota(node, fr)
    node.usage[fr] = node.usage.get(fr, 0) - value
    if stored_in_parent <= 0 or node.parent is None:
        return
    remove_usage(node.parent, fr, min(value, stored_in_parent))


def borrowing_with(node: Node, fr: FlavorResource, value: int) -> bool:
    """BorrowingWith: would usage + value exceed the node's own quota (nominal for a ClusterQueue, subtree
    quota for a Cohort)?"""
    own = node.subtree.get(fr, 0) if node.is_cohort else node.nominal(fr)
    return own < node.usage.get(fr, 0) + value


def borrowing(node: Node, fr: FlavorResource) -> bool:
    return borrowing_with(node, fr, 0)


def is_within_nominal(node: Node, frs: Iterable[FlavorResource]) -> bool:
    """IsWithinNominalInResources: usage within the subtree quota for every given flavor-resource."""
    return all(node.usage.get(fr, 0) <= node.subtree.get(fr, 0) for fr in frs)


def quantities_fit_in_quota(node: Node, requests: Mapping[FlavorResource, int],
                            ) -> tuple[bool, dict[FlavorResource, int]]:
    """QuantitiesFitInQuota: whether usage + requests fits the subtree quota, and what remains of each request
    beyond the node's unused local quota (to be found higher up)."""
    fits = True
    remaining: dict[FlavorResource, int] = {}
    for fr, value in requests.items():
        if node.subtree.get(fr, 0) < node.usage.get(fr, 0) + value:
            fits = False
        remaining[fr] = max(0, value - local_available(node, fr))
    return fits, remaining


def path_to_root(node: Node) -> Iterator[Node]:
    """The node's ancestors, parent first (PathParentToRoot)."""
    current = node.parent
    while current is not None:
        yield current
        current = current.parent


def root(node: Node) -> Node:
    while node.parent is not None:
        node = node.parent
    return node


def subtree_cluster_queues(node: Node) -> Iterator[Node]:
    """Every ClusterQueue under a node (SubtreeClusterQueues), or the node itself if it is one."""
    if not node.is_cohort:
        yield node
        return
    yield from node.child_cqs
    for child in node.child_cohorts:
        yield from subtree_cluster_queues(child)


def node_height(node: Node) -> int:
    """getNodeHeight: 1 for a cohort with only ClusterQueues, one more per level of child cohorts."""
    height = min(len(node.child_cohorts) + len(node.child_cqs), 1)
    for child in node.child_cohorts:
        height = max(height, node_height(child) + 1)
    return height


def borrowing_level(cq: Node, fr: FlavorResource, value: int) -> tuple[int, bool]:
    """FindHeightOfLowestSubtreeThatFits (pkg/scheduler/preemption/classical): 0 when the ClusterQueue needs
    not borrow; else the height of the lowest ancestor whose subtree holds the request. The flag says whether
    reclaiming lower in the hierarchy may be possible (that ancestor has a parent)."""
    if not borrowing_with(cq, fr, value) or cq.parent is None:
        return 0, cq.parent is not None
    remaining = value - local_available(cq, fr)
    for ancestor in path_to_root(cq):
        if not borrowing_with(ancestor, fr, remaining):
            return node_height(ancestor), ancestor.parent is not None
        remaining -= local_available(ancestor, fr)
    return node_height(root(cq)), False


# --- the tree -----------------------------------------------------------------------------------------------

class QuotaTree:
    """ClusterQueues and Cohorts linked by cohort names; Cohorts named but not defined exist with no quota
    (Kueue's implicit cohorts). Cohorts in a parent cycle are cut off and reported by `cyclic`: Kueue
    disables every member of such a tree until the cycle is removed."""

    def __init__(self) -> None:
        self.cqs: dict[str, Node] = {}
        self.cohorts: dict[str, Node] = {}
        self.cyclic: set[str] = set()  # cohort names in or under a parent cycle

    def _cohort(self, name: str) -> Node:
        if name not in self.cohorts:
            self.cohorts[name] = Node(name, is_cohort=True)
        return self.cohorts[name]

    def add_cohort(self, name: str, quotas: Mapping[FlavorResource, Limits], parent: str = "") -> Node:
        node = self._cohort(name)
        node.quotas = dict(quotas)
        if parent:
            node.parent = self._cohort(parent)
        return node

    def add_cluster_queue(self, name: str, quotas: Mapping[FlavorResource, Limits], cohort: str = "") -> Node:
        node = Node(name, is_cohort=False, quotas=dict(quotas))
        if cohort:
            node.parent = self._cohort(cohort)
        self.cqs[name] = node
        return node

    def build(self) -> None:
        """Link children to parents, cut parent cycles, compute subtree quotas (updateCohortResourceNode)."""
        for node in self.cohorts.values():
            node.child_cohorts.clear()
            node.child_cqs.clear()
        for name, node in self.cohorts.items():
            seen: list[str] = [name]
            current = node.parent
            while current is not None:
                if current.name in seen:
                    self.cyclic.update(seen[seen.index(current.name):])
                    break
                seen.append(current.name)
                current = current.parent
        for name in self.cyclic:
            self.cohorts[name].parent = None
        cut = set(self.cyclic)
        for node in self.cohorts.values():
            if node.parent is not None:
                node.parent.child_cohorts.append(node)
            if root(node).name in cut:
                self.cyclic.add(node.name)
        for cq in self.cqs.values():
            if cq.parent is not None:
                cq.parent.child_cqs.append(cq)
        for cq in self.cqs.values():
            cq.subtree = {fr: q.nominal for fr, q in cq.quotas.items()}
            cq.usage = {}
        for node in self.cohorts.values():
            if node.parent is None:
                self._update(node)

    def _update(self, cohort: Node) -> None:
        cohort.subtree = {fr: q.nominal for fr, q in cohort.quotas.items()}
        cohort.usage = {}
        for child in cohort.child_cohorts:
            self._update(child)
        for child in [*cohort.child_cohorts, *cohort.child_cqs]:
            for fr, quota in child.subtree.items():
                cohort.subtree[fr] = cohort.subtree.get(fr, 0) + quota - local_quota(child, fr)

    def active(self, cq: str) -> bool:
        """False for a ClusterQueue in a cohort tree with a parent cycle."""
        node = self.cqs[cq]
        return node.parent is None or node.parent.name not in self.cyclic

    def add(self, cq: str, usage: Mapping[FlavorResource, int]) -> None:
        for fr, value in usage.items():
            add_usage(self.cqs[cq], fr, value)

    def remove(self, cq: str, usage: Mapping[FlavorResource, int]) -> None:
        for fr, value in usage.items():
            remove_usage(self.cqs[cq], fr, value)

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

Kueue bounds neither the depth nor the width of the hierarchy, so every walk over it here is a loop (a parent
chain of thousands of cohorts is as good as a flat one), and a parent cycle is found in one pass.
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
class QuotaNode:
    """A ClusterQueue (no children) or a Cohort in the tree: Kueue's resource node, with its place in the tree."""

    name: str
    is_cohort: bool
    quotas: dict[FlavorResource, Limits] = field(default_factory=dict)
    parent: QuotaNode | None = None
    child_cohorts: list[QuotaNode] = field(default_factory=list)
    child_cqs: list[QuotaNode] = field(default_factory=list)
    subtree: dict[FlavorResource, int] = field(default_factory=dict)
    usage: dict[FlavorResource, int] = field(default_factory=dict)
    height: int | None = None  # getNodeHeight, kept by QuotaTree.build for cohorts
    weight: float = 1.0  # fairSharing.weight, read only when fair sharing is on

    def nominal(self, fr: FlavorResource) -> int:
        limits = self.quotas.get(fr)
        return limits.nominal if limits else 0

    def __repr__(self) -> str:
        return f"{'Cohort' if self.is_cohort else 'ClusterQueue'}({self.name})"


# --- Kueue's resource_node.go, restated ---------------------------------------------------------------------

def local_quota(node: QuotaNode, fr: FlavorResource) -> int:
    """resourceNode.localQuota: the part of the subtree quota the node does not lend (subtree − lendingLimit,
    at least 0); 0 when it has no lendingLimit, since then all of it is lent to the parent."""
    limits = node.quotas.get(fr)
    if limits is None or limits.lending_limit is None:
        return 0
    return max(0, node.subtree.get(fr, 0) - limits.lending_limit)


def local_available(node: QuotaNode, fr: FlavorResource) -> int:
    """LocalAvailable: unused local quota, never negative."""
    return max(0, local_quota(node, fr) - node.usage.get(fr, 0))


def _ancestry(node: QuotaNode) -> list[QuotaNode]:
    """The node and its ancestors, root last."""
    chain = [node]
    parent = node.parent
    while parent is not None:
        chain.append(parent)
        parent = parent.parent
    return chain


def _available(node: QuotaNode, fr: FlavorResource) -> int:
    """available: the root has subtree − usage; below it, local availability plus the parent's availability,
    the latter capped by borrowingLimit (what the node stored in the parent, minus what it already uses
    there, plus the limit). Computed from the root down."""
    chain = _ancestry(node)
    top = chain[-1]
    value = top.subtree.get(fr, 0) - top.usage.get(fr, 0)
    for below in reversed(chain[:-1]):
        parent_available = value
        limits = below.quotas.get(fr)
        if limits is not None and limits.borrowing_limit is not None:
            lq = local_quota(below, fr)
            stored_in_parent = below.subtree.get(fr, 0) - lq
            used_in_parent = max(0, below.usage.get(fr, 0) - lq)
            parent_available = min(stored_in_parent - used_in_parent + limits.borrowing_limit, parent_available)
        value = local_available(below, fr) + parent_available
    return value


def available(node: QuotaNode, fr: FlavorResource) -> int:
    """ClusterQueueSnapshot.Available: capacity usable now without preempting, at least 0."""
    return max(0, _available(node, fr))


def potential_available(node: QuotaNode, fr: FlavorResource) -> int:
    """potentialAvailable: the most the node could use were nothing else admitted — the root's whole subtree,
    or local quota plus the parent's potential, capped by subtree + borrowingLimit."""
    chain = _ancestry(node)
    value = chain[-1].subtree.get(fr, 0)
    for below in reversed(chain[:-1]):
        value += local_quota(below, fr)
        limits = below.quotas.get(fr)
        if limits is not None and limits.borrowing_limit is not None:
            value = min(below.subtree.get(fr, 0) + limits.borrowing_limit, value)
    return value


def add_usage(node: QuotaNode, fr: FlavorResource, value: int) -> None:
    """addUsage: what does not fit in the node's unused local quota is also usage of its parent."""
    current: QuotaNode | None = node
    while current is not None:
        local = local_available(current, fr)
        current.usage[fr] = current.usage.get(fr, 0) + value
        if value <= local:
            return
        value -= local
        current = current.parent


def remove_usage(node: QuotaNode, fr: FlavorResource, value: int) -> None:
    """removeUsage: the inverse of add_usage; the parent gives back at most what was stored there."""
    current: QuotaNode | None = node
    while current is not None:
        stored_in_parent = current.usage.get(fr, 0) - local_quota(current, fr)
        current.usage[fr] = current.usage.get(fr, 0) - value
        if stored_in_parent <= 0:
            return
        value = min(value, stored_in_parent)
        current = current.parent


def borrowing_with(node: QuotaNode, fr: FlavorResource, value: int) -> bool:
    """BorrowingWith: would usage + value exceed the node's own quota (nominal for a ClusterQueue, subtree
    quota for a Cohort)?"""
    own = node.subtree.get(fr, 0) if node.is_cohort else node.nominal(fr)
    return own < node.usage.get(fr, 0) + value


def borrowing(node: QuotaNode, fr: FlavorResource) -> bool:
    return borrowing_with(node, fr, 0)


def is_within_nominal(node: QuotaNode, frs: Iterable[FlavorResource]) -> bool:
    """IsWithinNominalInResources: usage within the subtree quota for every given flavor-resource."""
    return all(node.usage.get(fr, 0) <= node.subtree.get(fr, 0) for fr in frs)


def quantities_fit_in_quota(node: QuotaNode, requests: Mapping[FlavorResource, int],
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


def path_to_root(node: QuotaNode) -> Iterator[QuotaNode]:
    """The node's ancestors, parent first (PathParentToRoot)."""
    current = node.parent
    while current is not None:
        yield current
        current = current.parent


def root(node: QuotaNode) -> QuotaNode:
    while node.parent is not None:
        node = node.parent
    return node


def subtree_cluster_queues(node: QuotaNode) -> Iterator[QuotaNode]:
    """Every ClusterQueue under a node (SubtreeClusterQueues), or the node itself if it is one; depth first,
    a cohort's own ClusterQueues before its child cohorts'."""
    if not node.is_cohort:
        yield node
        return
    stack = [node]
    while stack:
        current = stack.pop()
        yield from current.child_cqs
        stack.extend(reversed(current.child_cohorts))


def node_height(node: QuotaNode) -> int:
    """getNodeHeight: 1 for a cohort with only ClusterQueues, one more per level of child cohorts (0 for a
    childless one). QuotaTree.build keeps each cohort's height; other nodes are measured here, bottom up."""
    if node.height is not None:
        return node.height
    heights: dict[int, int] = {}
    stack: list[tuple[QuotaNode, bool]] = [(node, False)]
    while stack:
        current, expanded = stack.pop()
        if not expanded:
            stack.append((current, True))
            stack.extend((child, False) for child in current.child_cohorts)
            continue
        height = min(len(current.child_cohorts) + len(current.child_cqs), 1)
        for child in current.child_cohorts:
            height = max(height, heights[id(child)] + 1)
        heights[id(current)] = height
    return heights[id(node)]


def borrowing_level(cq: QuotaNode, fr: FlavorResource, value: int) -> tuple[int, bool]:
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
        self.cqs: dict[str, QuotaNode] = {}
        self.cohorts: dict[str, QuotaNode] = {}
        self.cyclic: set[str] = set()  # cohort names in or under a parent cycle
        self.cycles: list[list[str]] = []  # each parent cycle, in parent order
        self._cycle_of: dict[str, int] = {}  # a cohort in or under a cycle -> its index in `cycles`
        self._roots: dict[str, QuotaNode] = {}  # cohort name -> the root of its tree (after cycles are cut)

    def _cohort(self, name: str) -> QuotaNode:
        if name not in self.cohorts:
            self.cohorts[name] = QuotaNode(name, is_cohort=True)
        return self.cohorts[name]

    def add_cohort(self, name: str, quotas: Mapping[FlavorResource, Limits], parent: str = "") -> QuotaNode:
        node = self._cohort(name)
        node.quotas = dict(quotas)
        if parent:
            node.parent = self._cohort(parent)
        return node

    def add_cluster_queue(self, name: str, quotas: Mapping[FlavorResource, Limits], cohort: str = "") -> QuotaNode:
        node = QuotaNode(name, is_cohort=False, quotas=dict(quotas))
        if cohort:
            node.parent = self._cohort(cohort)
        self.cqs[name] = node
        return node

    def build(self) -> None:
        """Link children to parents, cut parent cycles, compute subtree quotas (updateCohortResourceNode)."""
        for node in self.cohorts.values():
            node.child_cohorts.clear()
            node.child_cqs.clear()
        self._cut_cycles()
        for node in self.cohorts.values():
            if node.parent is not None:
                node.parent.child_cohorts.append(node)
        self._find_roots()
        for cq in self.cqs.values():
            if cq.parent is not None:
                cq.parent.child_cqs.append(cq)
            cq.subtree = {fr: q.nominal for fr, q in cq.quotas.items()}
            cq.usage = {}
        for node in self.cohorts.values():
            if node.parent is None:
                self._update(node)

    def _cut_cycles(self) -> None:
        """Find every parent cycle in one pass over the cohorts (each is walked up once) and cut it: its
        members lose their parent, so the tree is a forest and walks up it end."""
        done: set[str] = set()
        for node in self.cohorts.values():
            path: dict[str, int] = {}
            current: QuotaNode | None = node
            while current is not None and current.name not in done and current.name not in path:
                path[current.name] = len(path)
                current = current.parent
            if current is not None and current.name in path:
                names = list(path)[path[current.name]:]
                for name in names:
                    self._cycle_of[name] = len(self.cycles)
                self.cycles.append(names)
            done.update(path)
        for cycle in self.cycles:
            for name in cycle:
                self.cohorts[name].parent = None

    def _find_roots(self) -> None:
        """Each cohort's root, and which cohorts hang under a cut cycle (their tree is inactive too)."""
        for node in self.cohorts.values():
            path: list[QuotaNode] = []
            current = node
            while current.name not in self._roots and current.parent is not None:
                path.append(current)
                current = current.parent
            top = self._roots.get(current.name, current)
            for below in [*path, current]:
                self._roots[below.name] = top
                if top.name in self._cycle_of:
                    self._cycle_of[below.name] = self._cycle_of[top.name]
                    self.cyclic.add(below.name)

    def _update(self, top: QuotaNode) -> None:
        """Subtree quotas and heights bottom up under `top` (a root), as updateCohortResourceNode."""
        stack: list[tuple[QuotaNode, bool]] = [(top, False)]
        while stack:
            cohort, expanded = stack.pop()
            if not expanded:
                cohort.subtree = {fr: q.nominal for fr, q in cohort.quotas.items()}
                cohort.usage = {}
                stack.append((cohort, True))
                stack.extend((child, False) for child in cohort.child_cohorts)
                continue
            height = min(len(cohort.child_cohorts) + len(cohort.child_cqs), 1)
            for child in cohort.child_cohorts:
                height = max(height, (child.height or 0) + 1)
            cohort.height = height
            for child in [*cohort.child_cohorts, *cohort.child_cqs]:
                for fr, quota in child.subtree.items():
                    cohort.subtree[fr] = cohort.subtree.get(fr, 0) + quota - local_quota(child, fr)

    def root_of(self, node: QuotaNode) -> QuotaNode:
        """The root of the node's tree (itself for a ClusterQueue without a cohort)."""
        if node.is_cohort:
            return self._roots.get(node.name, node)
        return node if node.parent is None else self._roots.get(node.parent.name, node.parent)

    def active(self, cq: str) -> bool:
        """False for a ClusterQueue in a cohort tree with a parent cycle."""
        node = self.cqs[cq]
        return node.parent is None or node.parent.name not in self.cyclic

    def cycle_reason(self, cq: str) -> str:
        """Why the ClusterQueue is inactive, in Kueue's words, naming the cycle (a long one shortened)."""
        node = self.cqs[cq]
        if node.parent is None or node.parent.name not in self._cycle_of:
            return ""
        names = self.cycles[self._cycle_of[node.parent.name]]
        shown = names if len(names) <= 6 else [*names[:5], f"… ({len(names)} cohorts)"]
        return "cohort has a cycle: " + " → ".join([*shown, names[0]])

    def add(self, cq: str, usage: Mapping[FlavorResource, int]) -> None:
        for fr, value in usage.items():
            add_usage(self.cqs[cq], fr, value)

    def remove(self, cq: str, usage: Mapping[FlavorResource, int]) -> None:
        for fr, value in usage.items():
            remove_usage(self.cqs[cq], fr, value)

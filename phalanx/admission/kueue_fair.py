"""Kueue's fair sharing (Configuration `fairSharing`), restated from Kueue v0.17.0, not ported:

- Dominant resource share (pkg/cache/scheduler/fair_sharing.go): a node of the cohort tree that uses more than its
  subtree quota of some flavor-resource borrows; per resource name, what it borrows over all flavors, times
  1000, over what its parent could lend of that resource (potentialAvailable of the parent, summed over the
  root's flavors). The largest ratio, over the node's fairSharing.weight, is its share; a node with weight 0
  that borrows sorts after every other; a root has share 0.
- Admission order (fair_sharing_iterator.go): every pass, of the heads of the ClusterQueues in one cohort tree
  the next is the winner of a tournament run from the root down: at each cohort, among its child cohorts' winners
  and its own ClusterQueues' heads, a head whose subtree would not borrow on the flavor-resources it asks for
  (FairSharingPrioritizeNonBorrowing, on in v0.17) comes first, then the lower share with the head's usage
  added, then the higher priority (PrioritySortingWithinCohort), then the earlier creation. Shares are computed
  again before each pick, with what the pass admitted so far.
- Preemption (preemption.go fairPreemptions, fairsharing/): candidates in the preemptor's ClusterQueue by
  withinClusterQueue and in the ClusterQueues of its tree that borrow on a contested flavor-resource by
  reclaimWithinCohort, ordered as the classical ones. With the preemptor's usage added, ClusterQueues are
  visited by the highest share from the root down (those not borrowing left out, ties broken by their first
  candidate); in the preemptor's own queue, or when the preemptor stays within its nominal quota
  (FairSharingPreemptWithinNominal, on in v0.17), the first candidate is taken; elsewhere the first candidate
  whose removal passes the strategy, comparing the shares of the two children of the lowest common ancestor on
  each side: LessThanOrEqualToFinalShare (the preemptor's share with its workload at most the target's after
  the removal) or LessThanInitialShare (strictly below the target's before it). A second strategy gets the
  candidates the first refused, one per ClusterQueue. Stops as soon as the preemptor fits, then puts back the
  victims not needed (last first).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from phalanx.admission.kueue_config import LESS_THAN_INITIAL_SHARE, LESS_THAN_OR_EQUAL_TO_FINAL_SHARE
from phalanx.admission.quota import (
    FlavorResource,
    QuotaNode,
    QuotaTree,
    available,
    borrowing,
    path_to_root,
    potential_available,
    root,
)

IN_COHORT_FAIR_SHARING = "InCohortFairSharing"


@dataclass(frozen=True, slots=True)
class DRS:
    weight: float
    ratio: float  # unweighted, per mille of what the parent can lend
    resource: str
    borrowed: tuple[FlavorResource, ...] = ()

    @property
    def borrowing(self) -> bool:
        return bool(self.borrowed)

    def borrowing_on(self, requested: Mapping[FlavorResource, int]) -> bool:
        return any(requested.get(fr, 0) > 0 for fr in self.borrowed)

    @property
    def zero_weight_borrows(self) -> bool:
        return self.weight == 0 and self.ratio != 0

    def precise(self) -> float:
        if self.ratio == 0:
            return 0.0
        if self.weight == 0:
            return math.inf
        return self.ratio / self.weight


NEGATIVE = DRS(1.0, -1.0, "")


def _cmp(a: float, b: float) -> int:
    return (a > b) - (a < b)


def compare(a: DRS, b: DRS) -> int:
    """CompareDRS: lower is preferred for admission, higher for preemption."""
    if a.zero_weight_borrows and b.zero_weight_borrows:
        return _cmp(a.ratio, b.ratio)
    if a.zero_weight_borrows:
        return 1
    if b.zero_weight_borrows:
        return -1
    return _cmp(a.precise(), b.precise())


def lendable(parent: QuotaNode) -> dict[str, int]:
    """calculateLendable: per resource name, what the parent could make available, over the root's flavors."""
    out: dict[str, int] = {}
    for fr in root(parent).subtree:
        out[fr[1]] = out.get(fr[1], 0) + potential_available(parent, fr)
    return out


def share(node: QuotaNode) -> DRS:
    """dominantResourceShare of a ClusterQueue or Cohort, with its current usage."""
    if node.parent is None:
        return DRS(node.weight, 0.0, "")
    borrowed: list[FlavorResource] = []
    by_resource: dict[str, int] = {}
    for fr, quota in node.subtree.items():
        amount = node.usage.get(fr, 0) - quota
        if amount > 0:
            by_resource[fr[1]] = by_resource.get(fr[1], 0) + amount
            borrowed.append(fr)
    if not by_resource:
        return DRS(node.weight, 0.0, "")
    ratio, dominant = 0.0, ""
    lend = lendable(node.parent)
    for name, amount in by_resource.items():
        lr = lend.get(name, 0)
        if lr > 0:
            r = amount * 1000.0 / lr
            if r > ratio or (r == ratio and name < dominant):
                ratio, dominant = r, name
    return DRS(node.weight, ratio, dominant, tuple(borrowed))


# --- admission order ----------------------------------------------------------------------------------------

class Head(Protocol):
    @property
    def node(self) -> QuotaNode: ...
    @property
    def usage(self) -> Mapping[FlavorResource, int]: ...
    @property
    def priority(self) -> int: ...
    @property
    def order(self) -> tuple[float, str]: ...


H = TypeVar("H", bound=Head)


def fair_order(heads: Sequence[H], tree: QuotaTree,
               held: Sequence[tuple[str, Mapping[FlavorResource, int]]] = ()) -> Iterator[H]:
    """The heads in fair-sharing order (makeFairSharingIterator): a head without a cohort as it comes; in a cohort
    tree, each next one the tournament's winner against the tree's usage at that moment (the caller admits
    between picks), counting the usage `held` (ClusterQueue, usage), which the caller may extend meanwhile."""
    left: dict[QuotaNode, H] = {h.node: h for h in heads}
    while left:
        first = next(iter(left.values()))
        if first.node.parent is None:
            del left[first.node]
            yield first
            continue
        top = root(first.node)
        for cq, usage in held:
            tree.add(cq, usage)
        drs = _head_shares(top, left, tree)
        for cq, usage in held:
            tree.remove(cq, usage)
        winner = _tournament(top, left, drs)
        assert winner is not None  # `first` is in this tree
        del left[winner.node]
        yield winner


def _head_shares(top: QuotaNode, left: Mapping[QuotaNode, H], tree: QuotaTree) -> dict[tuple[int, int], DRS]:
    """computeDRS: per (cohort, head), the share the head's child of that cohort would have with the head
    admitted."""
    out: dict[tuple[int, int], DRS] = {}
    for head in left.values():
        node = head.node
        if root(node) is not top:
            continue
        tree.add(node.name, head.usage)
        current = share(node)
        for ancestor in path_to_root(node):
            out[(id(ancestor), id(head))] = current
            current = share(ancestor)
        tree.remove(node.name, head.usage)
    return out


def _tournament(top: QuotaNode, left: Mapping[QuotaNode, H], drs: Mapping[tuple[int, int], DRS]) -> H | None:
    """runTournament, bottom up over the cohorts under `top`."""
    winners: dict[int, H | None] = {}
    stack: list[tuple[QuotaNode, bool]] = [(top, False)]
    while stack:
        cohort, expanded = stack.pop()
        if not expanded:
            stack.append((cohort, True))
            stack.extend((child, False) for child in cohort.child_cohorts)
            continue
        candidates = [w for child in cohort.child_cohorts if (w := winners[id(child)]) is not None]
        candidates += [left[cq] for cq in cohort.child_cqs if cq in left]
        best = candidates[0] if candidates else None
        for current in candidates[1:]:
            assert best is not None
            if _less(current, best, cohort, drs):
                best = current
        winners[id(cohort)] = best
    return winners[id(top)]


def _less(a: H, b: H, cohort: QuotaNode, drs: Mapping[tuple[int, int], DRS]) -> bool:
    a_drs, b_drs = drs[(id(cohort), id(a))], drs[(id(cohort), id(b))]
    a_borrows, b_borrows = a_drs.borrowing_on(a.usage), b_drs.borrowing_on(b.usage)
    if a_borrows != b_borrows:
        return not a_borrows
    c = compare(a_drs, b_drs)
    if c:
        return c < 0
    if a.priority != b.priority:
        return a.priority > b.priority
    return a.order < b.order


# --- preemption ---------------------------------------------------------------------------------------------

class Victim(Protocol):
    @property
    def cq(self) -> str: ...
    @property
    def usage(self) -> dict[FlavorResource, int]: ...


V = TypeVar("V", bound=Victim)


@dataclass(slots=True)
class _Ordering(Generic[V]):
    """TargetClusterQueueOrdering: candidates per ClusterQueue, and the queues and cohorts left out."""

    preemptor: QuotaNode
    tree: QuotaTree
    by_cq: dict[str, list[V]]
    ancestors: set[int]
    key: Callable[[V], tuple[object, ...]]  # CandidatesOrdering, as a sort key
    pruned_cqs: set[int] = field(default_factory=set)
    pruned_cohorts: set[int] = field(default_factory=set)

    def first_key(self, cq: QuotaNode) -> tuple[object, ...]:
        return self.key(self.by_cq[cq.name][0])

    def targets(self) -> Iterator[QuotaNode]:
        if self.preemptor.parent is None:
            while self.by_cq.get(self.preemptor.name):
                yield self.preemptor
            return
        top = root(self.preemptor)
        while id(top) not in self.pruned_cohorts:
            target = self._next(top)
            if target is not None:
                yield target

    def _next(self, cohort: QuotaNode) -> QuotaNode | None:
        highest_cq: QuotaNode | None = None
        highest_cq_drs = NEGATIVE
        for cq in cohort.child_cqs:
            if id(cq) in self.pruned_cqs:
                continue
            drs = share(cq)
            if (not drs.borrowing and cq is not self.preemptor) or not self.by_cq.get(cq.name):
                self.pruned_cqs.add(id(cq))
                continue
            c = compare(drs, highest_cq_drs)
            if c == 0 and highest_cq is not None:
                if self.first_key(cq) < self.first_key(highest_cq):
                    highest_cq = cq
            elif c == 1:
                highest_cq, highest_cq_drs = cq, drs
        highest_cohort: QuotaNode | None = None
        highest_cohort_drs = NEGATIVE
        for child in cohort.child_cohorts:
            if id(child) in self.pruned_cohorts:
                continue
            drs = share(child)
            if not drs.borrowing and id(child) not in self.ancestors:
                self.pruned_cohorts.add(id(child))
            elif compare(drs, highest_cohort_drs) >= 0:
                highest_cohort, highest_cohort_drs = child, drs
        if highest_cohort is None and highest_cq is None:
            self.pruned_cohorts.add(id(cohort))
            return None
        if compare(highest_cohort_drs, highest_cq_drs) >= 0:
            assert highest_cohort is not None
            return self._next(highest_cohort)
        return highest_cq

    def pop(self, cq: QuotaNode) -> V:
        return self.by_cq[cq.name].pop(0)

    def shares(self, target: QuotaNode) -> tuple[DRS, DRS]:
        """ComputeShares: the preemptor's and the target's shares at the children of their lowest common
        ancestor."""
        a, b = _almost_lcas(self.preemptor, target, self.ancestors)
        return share(a), share(b)

    def target_share_without(self, target: QuotaNode, victim: V) -> DRS:
        self.tree.remove(target.name, victim.usage)
        _, b = _almost_lcas(self.preemptor, target, self.ancestors)
        after = share(b)
        self.tree.add(target.name, victim.usage)
        return after


def _almost_lcas(preemptor: QuotaNode, target: QuotaNode, ancestors: set[int]) -> tuple[QuotaNode, QuotaNode]:
    lca = next(a for a in path_to_root(target) if id(a) in ancestors)
    return _below(preemptor, lca), _below(target, lca)


def _below(node: QuotaNode, lca: QuotaNode) -> QuotaNode:
    current = node
    while current.parent is not lca:
        assert current.parent is not None
        current = current.parent
    return current


def fair_targets(preemptor: QuotaNode, requests: Mapping[FlavorResource, int], frs: set[FlavorResource],
                 candidates: Sequence[V], strategies: Sequence[str], tree: QuotaTree,
                 order_key: Callable[[V], tuple[object, ...]]) -> list[tuple[V, str]]:
    """fairPreemptions over candidates already in CandidatesOrdering: the victims and each one's reason
    (InClusterQueue, InCohortReclamation, InCohortFairSharing), or none when the preemptor cannot fit."""
    if not candidates:
        return []
    by_cq: dict[str, list[V]] = {}
    for c in candidates:
        by_cq.setdefault(c.cq, []).append(c)
    ancestors = {id(a) for a in path_to_root(preemptor)}
    tree.add(preemptor.name, requests)
    targets: list[tuple[V, str]] = []

    def fits() -> bool:
        tree.remove(preemptor.name, requests)
        ok = all(value <= available(preemptor, fr) for fr, value in requests.items())
        tree.add(preemptor.name, requests)
        return ok

    def take(victim: V, reason: str) -> bool:
        tree.remove(victim.cq, victim.usage)
        targets.append((victim, reason))
        return fits()

    def ordering(lists: dict[str, list[V]]) -> _Ordering[V]:
        return _Ordering(preemptor, tree, lists, ancestors, order_key)

    within_nominal = not any(borrowing(preemptor, fr) for fr in frs)
    first = _STRATEGIES[strategies[0]]
    retry: list[V] = []
    done = False
    o = ordering(by_cq)
    for cq in o.targets():
        if cq is preemptor:
            if take(o.pop(cq), "InClusterQueue"):
                done = True
                break
            continue
        if within_nominal:
            if take(o.pop(cq), "InCohortReclamation"):
                done = True
                break
            continue
        preemptor_new, target_old = o.shares(cq)
        stop = False
        while o.by_cq.get(cq.name):
            victim = o.pop(cq)
            target_new = o.target_share_without(cq, victim)
            if first(preemptor_new, target_old, target_new):
                stop = take(victim, IN_COHORT_FAIR_SHARING)
                break
            retry.append(victim)
        if stop:
            done = True
            break
    if not done and len(strategies) > 1 and retry:
        lists: dict[str, list[V]] = {}
        for c in retry:
            lists.setdefault(c.cq, []).append(c)
        o = ordering(lists)
        for cq in o.targets():
            preemptor_new, target_old = o.shares(cq)
            if _less_than_initial(preemptor_new, target_old, NEGATIVE) and take(o.pop(cq), IN_COHORT_FAIR_SHARING):
                done = True
                break
            o.pruned_cqs.add(id(cq))
    tree.remove(preemptor.name, requests)
    if not done:
        for victim, _ in targets:
            tree.add(victim.cq, victim.usage)
        return []
    # fillBackWorkloads (allowing borrowing): put back, last removed first, the victims not needed
    for i in range(len(targets) - 2, -1, -1):
        victim = targets[i][0]
        tree.add(victim.cq, victim.usage)
        if all(value <= available(preemptor, fr) for fr, value in requests.items()):
            targets[i] = targets[-1]
            targets.pop()
        else:
            tree.remove(victim.cq, victim.usage)
    for victim, _ in targets:
        tree.add(victim.cq, victim.usage)
    return targets


def _less_than_or_equal_to_final(preemptor_new: DRS, _target_old: DRS, target_new: DRS) -> bool:
    return compare(preemptor_new, target_new) <= 0


def _less_than_initial(preemptor_new: DRS, target_old: DRS, _target_new: DRS) -> bool:
    return compare(preemptor_new, target_old) < 0


_STRATEGIES: dict[str, Callable[[DRS, DRS, DRS], bool]] = {
    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE: _less_than_or_equal_to_final,
    LESS_THAN_INITIAL_SHARE: _less_than_initial,
}

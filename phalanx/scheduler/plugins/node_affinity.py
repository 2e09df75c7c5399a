"""NodeAffinity: nodeSelector and required node affinity as a filter, preferred terms as a score."""

from __future__ import annotations

from collections import Counter

import numpy as np

from phalanx.api.objects import Requirement, SelectorTerm
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import BoolArray, Code, CycleState, IntArray, default_normalize

REASON = "node(s) didn't match Pod's node affinity/selector"


def requirement_mask(req: Requirement, cluster: ClusterState) -> BoolArray:
    labels = cluster.labels
    if req.operator == "In":
        return labels.equals_any(req.key, req.values)
    if req.operator == "NotIn":
        return ~labels.equals_any(req.key, req.values)
    if req.operator == "Exists":
        return labels.has(req.key)
    if req.operator == "DoesNotExist":
        return ~labels.has(req.key)
    numbers = labels.numeric(req.key)
    bound = int(req.values[0])
    with np.errstate(invalid="ignore"):
        return numbers > bound if req.operator == "Gt" else numbers < bound


def _field_mask(req: Requirement, cluster: ClusterState) -> BoolArray:
    mask = np.zeros(len(cluster), dtype=bool)
    for name in req.values:
        if name in cluster.index:
            mask[cluster.index[name]] = True
    return mask if req.operator == "In" else ~mask


def term_mask(term: SelectorTerm, cluster: ClusterState) -> BoolArray:
    """A term's expressions and fields are ANDed; an empty term matches no node."""
    if not term.expressions and not term.fields:
        return np.zeros(len(cluster), dtype=bool)
    mask = np.ones(len(cluster), dtype=bool)
    for req in term.expressions:
        mask &= requirement_mask(req, cluster)
    for req in term.fields:
        mask &= _field_mask(req, cluster)
    return mask


class NodeAffinity:
    name = "NodeAffinity"
    static = True
    node_static = True
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    def filter(self, state: CycleState, cluster: ClusterState) -> BoolArray:
        placement = state.pod.placement
        mask = np.ones(len(cluster), dtype=bool)
        for key, value in placement.node_selector:
            mask &= cluster.labels.equals_any(key, (value,))
        if placement.required_terms is not None:
            any_term = np.zeros(len(cluster), dtype=bool)
            for term in placement.required_terms:
                any_term |= term_mask(term, cluster)
            mask &= any_term
        return mask

    def reasons(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> Counter[str]:
        return Counter({REASON: int(failed.sum())})

    def skips_score(self, state: CycleState, cluster: ClusterState) -> bool:
        """No preferred term: every node scores 0 (PreScore's Skip)."""
        return not state.pod.placement.preferred_terms

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        terms = state.pod.placement.preferred_terms
        total = np.zeros(len(nodes), dtype=np.int64)
        for preferred in terms:
            total += preferred.weight * term_mask(preferred.term, cluster)[nodes]
        return default_normalize(total, reverse=False)

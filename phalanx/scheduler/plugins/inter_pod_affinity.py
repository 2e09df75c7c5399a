"""InterPodAffinity: required and preferred pod affinity and anti-affinity, both ways.

Restates kube-scheduler v1.37's interpodaffinity plugin (filtering.go, scoring.go, plugin.go; the
InterPodAffinityHostnameFastPath gate is alpha and off) on arrays. kube-scheduler counts matching pods per
topology pair (key, value); here the pods a term matches are counted per node with one np.bincount over the
bound pods (cluster/pods.py) and summed per value of the term's topology key with another.

Filter, in this order (a node reports its first failure):
  - the pod's required affinity (satisfyPodAffinity): the node has every term's key, and in each term's
    domain of the node some pod matches *all* the terms; or else no pod anywhere matches them all and the
    pod matches its own terms (the first pod of a group). UnschedulableAndUnresolvable:
    "node(s) didn't match pod affinity rules".
  - the pod's required anti-affinity: no pod matching a term in the node's domain of that term.
    "node(s) didn't match pod anti-affinity rules".
  - existing pods' required anti-affinity (satisfyExistingPodsAntiAffinity): no bound pod whose term matches
    the incoming pod runs in the same domain. "node(s) didn't satisfy existing pods anti-affinity rules".

Score (PreScore + Score + NormalizeScore): per topology pair, + weight for each pod matching a preferred
affinity term of the pod, − weight for a preferred anti-affinity term; and symmetrically for the terms of
bound pods that match the incoming pod (required affinity at hardPodAffinityWeight, default 1; preferred
affinity +weight, preferred anti-affinity −weight). A node scores the sum over its labels, then scores are
scaled min..max to 0..100.

Namespaces: a term's pods are those in its namespaces (by default the pod's own) or, with
`namespaceSelector: {}`, in every namespace. Terminating pods count (as upstream).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from phalanx.api.objects import Pod, PodAffinity, PodAffinityTerm
from phalanx.cluster.state import ClusterState
from phalanx.errors import InputError
from phalanx.scheduler.framework import MAX_NODE_SCORE, BoolArray, Code, CycleState, IntArray

NAME = "InterPodAffinity"
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
_FILTER = NAME + "/filter"


@dataclass(slots=True)
class _Filtered:
    mark: tuple[int, int, int]
    affinity: BoolArray  # failed the pod's required affinity
    anti: BoolArray  # passed that, failed its required anti-affinity
    existing: BoolArray  # passed both, failed an existing pod's required anti-affinity

    @property
    def failed(self) -> BoolArray:
        return self.affinity | self.anti | self.existing


def term_counts(terms: Sequence[PodAffinityTerm], cluster: ClusterState) -> IntArray:
    """On every node, the bound pods that match every one of `terms`."""
    def matches(namespace: str, labels: dict[str, str]) -> bool:
        return all(term.matches(namespace, labels) for term in terms)

    return cluster.pod_index.counts(("terms", tuple(terms)), matches, len(cluster))


def _per_domain(key: str, per_node: IntArray, cluster: ClusterState) -> IntArray:
    """Sum a per-node amount over the values of topology key `key` (nodes without the key count nowhere)."""
    dom = cluster.labels.ids(key)
    has = dom >= 0
    weights = per_node[has]
    return np.bincount(dom[has], weights=weights, minlength=cluster.labels.count(key) + 1).round().astype(np.int64)


def _node_values(key: str, per_domain: IntArray, cluster: ClusterState) -> IntArray:
    """Each node's domain amount for key `key` (0 without the key)."""
    dom = cluster.labels.ids(key)
    return np.where(dom >= 0, per_domain[np.where(dom >= 0, dom, 0)], 0)


def _sparse(per_node: Mapping[int, int], cluster: ClusterState) -> IntArray:
    out = np.zeros(len(cluster), dtype=np.int64)
    if per_node:
        out[np.fromiter(per_node.keys(), dtype=np.int64)] = np.fromiter(per_node.values(), dtype=np.int64)
    return out


class InterPodAffinity:
    name = NAME
    static = False
    node_static = False
    reads_bound_pods = True
    code = Code.UNSCHEDULABLE  # per node: failing the pod's required affinity is UnschedulableAndUnresolvable

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = args or {}
        weight = args.get("hardPodAffinityWeight", 1)
        if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= 100:
            raise InputError("must be an integer from 0 to 100",
                             field="pluginConfig[InterPodAffinity].args.hardPodAffinityWeight")
        self.hard_weight = weight
        ignore = args.get("ignorePreferredTermsOfExistingPods", False)
        if not isinstance(ignore, bool):
            raise InputError("must be true or false",
                             field="pluginConfig[InterPodAffinity].args.ignorePreferredTermsOfExistingPods")
        self.ignore_existing_preferred = ignore

    # --- Filter ---

    @staticmethod
    def requeue_after_assigned_pod_add(pending: Pod, added: Pod) -> bool:
        """isSchedulableAfterAssignedPodChange for an added pod: Queue when it matches all of the pending pod's
        required affinity terms (podMatchesAllAffinityTerms: never with no term); an added pod cannot lift an
        anti-affinity rejection."""
        affinity = pending.placement.pod_affinity
        terms = affinity.required if affinity is not None else ()
        return bool(terms) and all(term.matches(added.namespace, added.labels) for term in terms)

    def skips(self, state: CycleState, cluster: ClusterState) -> bool:
        """PreFilter's Skip: no required term on the pod and no bound pod with pod (anti-)affinity."""
        affinity = state.pod.placement.pod_affinity
        has_required = affinity is not None and bool(affinity.required or affinity.required_anti)
        if has_required:
            return False
        # Every node passes too when no bound pod's required anti-affinity term matches the pod.
        return cluster.affinity_pods == 0 or not any(
            key[0] == "required_anti" for key, _ in cluster.pod_index.terms_matching(state.pod))

    def _filtered(self, state: CycleState, cluster: ClusterState) -> _Filtered:
        mark = (id(cluster), cluster.generation, cluster.version)
        known = state.data.get(_FILTER)
        if isinstance(known, _Filtered) and known.mark == mark:
            return known
        pod = state.pod
        n = len(cluster)
        affinity = pod.placement.pod_affinity or PodAffinity()
        fails_affinity = np.zeros(n, dtype=bool)
        if affinity.required:
            fails_affinity = ~self._affinity_ok(pod, affinity.required, cluster)
        fails_anti = np.zeros(n, dtype=bool)
        for term in affinity.required_anti:
            counts = _per_domain(term.topology_key, term_counts((term,), cluster), cluster)
            fails_anti |= _node_values(term.topology_key, counts, cluster) > 0
        fails_existing = np.zeros(n, dtype=bool)
        if cluster.affinity_pods:
            fails_existing = self._existing_anti(pod, cluster)
        result = _Filtered(mark, fails_affinity, fails_anti & ~fails_affinity,
                           fails_existing & ~fails_anti & ~fails_affinity)
        state.data[_FILTER] = result
        return result

    @staticmethod
    def _affinity_ok(pod: Pod, terms: Sequence[PodAffinityTerm], cluster: ClusterState) -> BoolArray:
        """satisfyPodAffinity (nodeTopologyMatchesAffinity) on every node."""
        matching = term_counts(terms, cluster)
        ok = np.ones(len(cluster), dtype=bool)
        found = np.ones(len(cluster), dtype=bool)
        any_pair = False
        for key in dict.fromkeys(term.topology_key for term in terms):
            per_domain = _per_domain(key, matching, cluster)
            any_pair = any_pair or bool(per_domain.any())
            ok &= cluster.labels.has(key)
            found &= _node_values(key, per_domain, cluster) > 0
        if not any_pair and all(term.matches(pod.namespace, pod.labels) for term in terms):
            return ok  # the first pod of a group that has affinity to itself
        return ok & found

    @staticmethod
    def _existing_anti(pod: Pod, cluster: ClusterState) -> BoolArray:
        """Nodes in a domain where a bound pod's required anti-affinity term matches the incoming pod."""
        bad: dict[str, set[int]] = {}
        for (kind, _, term), per_node in cluster.pod_index.terms_matching(pod):
            if kind != "required_anti":
                continue
            dom = cluster.labels.ids(term.topology_key)
            values = dom[np.fromiter(per_node.keys(), dtype=np.int64)]
            bad.setdefault(term.topology_key, set()).update(int(v) for v in values if v >= 0)
        fails = np.zeros(len(cluster), dtype=bool)
        for key, domains in bad.items():
            if domains:
                fails |= np.isin(cluster.labels.ids(key), np.fromiter(domains, dtype=np.int64))
        return fails

    def filter(self, state: CycleState, cluster: ClusterState) -> BoolArray:
        return ~self._filtered(state, cluster).failed

    def reasons(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> Counter[str]:
        known = self._filtered(state, cluster)
        out: Counter[str] = Counter()
        for reason, nodes in ((REASON_AFFINITY, known.affinity), (REASON_ANTI_AFFINITY, known.anti),
                              (REASON_EXISTING_ANTI_AFFINITY, known.existing)):
            count = int((failed & nodes).sum())
            if count:
                out[reason] = count
        return out

    def unresolvable(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> BoolArray:
        return failed & self._filtered(state, cluster).affinity

    # --- Score ---

    def skips_score(self, state: CycleState, cluster: ClusterState) -> bool:
        affinity = state.pod.placement.pod_affinity
        preferred = affinity is not None and bool(affinity.preferred or affinity.preferred_anti)
        if preferred:
            return False
        if self.ignore_existing_preferred or cluster.affinity_pods == 0:
            return True
        # Every node scores the same (0) too when no bound pod's term that scores matches the pod.
        return not any(self._scores_term(kind) for (kind, _, _), _ in cluster.pod_index.terms_matching(state.pod))

    def _scores_term(self, kind: str) -> bool:
        """Whether an existing pod's term of this kind adds to the score of a pod it matches."""
        return kind != "required_anti" and (kind != "required" or self.hard_weight > 0)

    def _contributions(self, pod: Pod, cluster: ClusterState) -> Iterable[tuple[str, IntArray]]:
        """(topology key, amount per node) for every matching term: the pod's preferred terms against bound
        pods, and bound pods' required-affinity and preferred terms against the pod."""
        affinity = pod.placement.pod_affinity
        if affinity is not None:
            for sign, weighted_terms in ((1, affinity.preferred), (-1, affinity.preferred_anti)):
                for weighted in weighted_terms:
                    counts = term_counts((weighted.term,), cluster)
                    yield weighted.term.topology_key, sign * weighted.weight * counts
        if not cluster.affinity_pods:
            return
        for (kind, weight, term), per_node in cluster.pod_index.terms_matching(pod):
            if not self._scores_term(kind):
                continue
            amount = self.hard_weight if kind == "required" else weight
            sign = -1 if kind == "preferred_anti" else 1
            yield term.topology_key, sign * amount * _sparse(per_node, cluster)

    def raw_scores(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        """Score: the sum over the node's labels of what the pairs (key, value) collected."""
        by_key: dict[str, IntArray] = {}
        for key, per_node in self._contributions(state.pod, cluster):
            if key in by_key:
                by_key[key] = by_key[key] + per_node
            else:
                by_key[key] = per_node
        total = np.zeros(len(nodes), dtype=np.int64)
        for key, per_node in by_key.items():
            total += _node_values(key, _per_domain(key, per_node, cluster), cluster)[nodes]
        return total

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        if self.skips_score(state, cluster):
            return np.zeros(len(nodes), dtype=np.int64)
        return normalize(self.raw_scores(state, cluster, nodes))


def normalize(raw: IntArray) -> IntArray:
    """NormalizeScore: `100 · (s − min)/(max − min)` in floating point, truncated; all 0 when max = min."""
    if raw.size == 0:
        return raw
    lowest, highest = int(raw.min()), int(raw.max())
    if highest == lowest:
        return np.zeros(raw.shape, dtype=np.int64)
    scaled = float(MAX_NODE_SCORE) * ((raw - lowest).astype(np.float64) / float(highest - lowest))
    return scaled.astype(np.int64)

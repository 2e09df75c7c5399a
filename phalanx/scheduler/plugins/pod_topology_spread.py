"""PodTopologySpread: keep pods that match a selector evenly spread over topology domains.

Restates kube-scheduler v1.37's podtopologyspread plugin (filtering.go, scoring.go, common.go) on arrays:
the pods a constraint's selector matches are counted on every node with one np.bincount over the bound
pods (cluster/pods.py), and summed per domain with another over the nodes' value ids for the topology key.

Filter (`whenUnsatisfiable: DoNotSchedule`, calPreFilterState + Filter): domains are the values of the
topology key on the nodes that carry every constraint's key and pass the constraint's inclusion policies
(nodeAffinityPolicy Honor: the pod's nodeSelector and required node affinity; nodeTaintsPolicy Honor: no
untolerated NoSchedule/NoExecute taint). A node passes when `pods in its domain + 1 if the pod matches its
own selector − the smallest domain count ≤ maxSkew`, where the smallest count is 0 while there are fewer
domains than `minDomains`. A node without the key fails as UnschedulableAndUnresolvable. Terminating pods
and pods of other namespaces are not counted; an empty selector (`labelSelector: {}`) counts no pod.

Score (`ScheduleAnyway`, initPreScoreState + PreScore + Score + NormalizeScore): over the nodes being scored,
each constraint adds `count · log(domains + 2) + maxSkew − 1` (domains: among the scored nodes; the count
of a `kubernetes.io/hostname` constraint is the node's own pods), rounded; fewer matching pods is better.

A pod without constraints gets the system defaults (maxSkew 3 by hostname, 5 by zone, ScheduleAnyway) only
with a selector built from the Services, ReplicationControllers, ReplicaSets and StatefulSets that select
it. Phalanx loads none of those, so the defaults have no effect, exactly as upstream for a pod no Service or
controller selects. `selector_for` is where such a source would plug in.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from phalanx.api.objects import LabelSelector, Pod, SpreadConstraint, selector_empty, selector_matches
from phalanx.api.pod_constraints import HOSTNAME_KEY, ZONE_KEY
from phalanx.cluster.state import ClusterState
from phalanx.errors import InputError
from phalanx.scheduler.framework import MAX_NODE_SCORE, BoolArray, Code, CycleState, IntArray
from phalanx.scheduler.plugins.node_affinity import NodeAffinity
from phalanx.scheduler.plugins.taint_toleration import TaintToleration

NAME = "PodTopologySpread"
REASON = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = REASON + " (missing required label)"
MAX_INT32 = 2**31 - 1
SYSTEM_DEFAULTS = (
    SpreadConstraint(max_skew=3, topology_key=HOSTNAME_KEY, when_unsatisfiable="ScheduleAnyway", selector=None),
    SpreadConstraint(max_skew=5, topology_key=ZONE_KEY, when_unsatisfiable="ScheduleAnyway", selector=None),
)
_FILTER = NAME + "/filter"
FloatArray = npt.NDArray[np.float64]


@dataclass(slots=True)
class _Filtered:
    mark: tuple[int, int, int]
    passed: BoolArray
    missing_label: BoolArray  # failed first on a missing topology label (UnschedulableAndUnresolvable)


def _policy_masks(state: CycleState, cluster: ClusterState) -> tuple[BoolArray, BoolArray]:
    """Nodes matching the pod's required node affinity, and nodes with no taint it must tolerate."""
    return NodeAffinity().filter(state, cluster), TaintToleration().filter(state, cluster)


def _eligible(constraint: SpreadConstraint, has_keys: BoolArray, masks: tuple[BoolArray, BoolArray]) -> BoolArray:
    """Nodes whose pods count for the constraint (nodeLabelsMatchSpreadConstraints, matchNodeInclusionPolicies)."""
    eligible = has_keys
    if constraint.node_affinity_policy == "Honor":
        eligible = eligible & masks[0]
    if constraint.node_taints_policy == "Honor":
        eligible = eligible & masks[1]
    return eligible


def matching_counts(constraint: SpreadConstraint, pod: Pod, cluster: ClusterState) -> IntArray:
    """countPodsMatchSelector on every node: the constraint's pods in the pod's namespace, not terminating."""
    selector = constraint.selector
    if selector is None or selector_empty(selector):
        return np.zeros(len(cluster), dtype=np.int64)
    namespace = pod.namespace

    def matches(ns: str, labels: dict[str, str]) -> bool:
        return ns == namespace and selector.matches(labels)

    return cluster.pod_index.counts(("spread", namespace, selector), matches, len(cluster), skip_terminating=True)


def _all_keys(constraints: Sequence[SpreadConstraint], cluster: ClusterState) -> BoolArray:
    has = np.ones(len(cluster), dtype=bool)
    for constraint in constraints:
        has &= cluster.labels.has(constraint.topology_key)
    return has


def _round(values: FloatArray) -> IntArray:
    """Go's math.Round for non-negative values: halves away from zero."""
    floor = np.floor(values)
    return (floor + (values - floor >= 0.5)).astype(np.int64)


class PodTopologySpread:
    name = NAME
    static = False
    node_static = False
    reads_bound_pods = True
    code = Code.UNSCHEDULABLE  # per node: a missing topology label is UnschedulableAndUnresolvable

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = args or {}
        defaulting = str(args.get("defaultingType", "System"))
        if defaulting not in ("System", "List"):
            raise InputError(f"unsupported value {defaulting!r}: one of System, List",
                             field="pluginConfig[PodTopologySpread].args.defaultingType")
        self.system_defaulted = defaulting == "System"
        raw = args.get("defaultConstraints") or []
        if self.system_defaulted and raw:
            raise InputError("must be empty when defaultingType is System",
                             field="pluginConfig[PodTopologySpread].args.defaultConstraints")
        self.defaults: tuple[SpreadConstraint, ...] = SYSTEM_DEFAULTS if self.system_defaulted else tuple(
            self._default(item, i) for i, item in enumerate(raw))
        # Where a pod's default selector would come from (helper.DefaultSelector over Services and
        # controllers): None, as Phalanx loads none of them, and then the defaults never apply.
        self.selector_for: Callable[[Pod], LabelSelector | None] | None = None
        self._default_actions = {c.when_unsatisfiable for c in self.defaults}

    @staticmethod
    def _default(item: Any, i: int) -> SpreadConstraint:
        field = f"pluginConfig[PodTopologySpread].args.defaultConstraints[{i}]"
        if not isinstance(item, Mapping) or item.get("labelSelector") is not None:
            raise InputError("must be an object without labelSelector", field=field)
        when = str(item.get("whenUnsatisfiable", ""))
        skew = item.get("maxSkew")
        if when not in ("DoNotSchedule", "ScheduleAnyway") or not isinstance(skew, int) or skew < 1:
            raise InputError("needs maxSkew ≥ 1 and whenUnsatisfiable DoNotSchedule or ScheduleAnyway",
                             field=field)
        return SpreadConstraint(max_skew=skew, topology_key=str(item.get("topologyKey", "")),
                                when_unsatisfiable="DoNotSchedule" if when == "DoNotSchedule" else "ScheduleAnyway",
                                selector=None)

    def constraints(self, pod: Pod, action: str) -> tuple[SpreadConstraint, ...]:
        """getConstraints / initPreScoreState: the pod's own constraints of one kind, else the defaults."""
        spread = pod.placement.spread
        if spread:
            return tuple(c for c in spread if c.when_unsatisfiable == action)
        wanted = [c for c in self.defaults if c.when_unsatisfiable == action]
        if not wanted or self.selector_for is None:
            return ()
        selector = self.selector_for(pod)
        if selector is None or selector_empty(selector):
            return ()
        return tuple(dataclasses.replace(c, selector=selector) for c in wanted)

    # --- Filter ---

    def requeue_after_assigned_pod_add(self, pending: Pod, added: Pod) -> bool:
        """isSchedulableAfterAssignedPodChange for an added pod: Queue when it is in the pending pod's namespace
        (involvedInTopologySpreading) and its labels match a selector of the pod's DoNotSchedule constraints
        (getConstraints, podLabelsMatchSpreadConstraints)."""
        if added.namespace != pending.namespace:
            return False
        return any(c.selector is not None and c.selector.matches(added.labels)
                   for c in self.constraints(pending, "DoNotSchedule"))

    def _skips(self, pod: Pod, action: str) -> bool:
        spread = pod.placement.spread
        if spread:
            return all(c.when_unsatisfiable != action for c in spread)
        if self.selector_for is None or action not in self._default_actions:
            return True
        return not self.constraints(pod, action)

    def skips(self, state: CycleState, cluster: ClusterState) -> bool:
        """PreFilter's Skip: no DoNotSchedule constraint (every node passes)."""
        return self._skips(state.pod, "DoNotSchedule")

    def _filtered(self, state: CycleState, cluster: ClusterState) -> _Filtered:
        mark = (id(cluster), cluster.generation, cluster.version)
        known = state.data.get(_FILTER)
        if isinstance(known, _Filtered) and known.mark == mark:
            return known
        n = len(cluster)
        passed = np.ones(n, dtype=bool)
        missing = np.zeros(n, dtype=bool)
        constraints = self.constraints(state.pod, "DoNotSchedule")
        if constraints:
            pod = state.pod
            has_keys = _all_keys(constraints, cluster)
            masks = _policy_masks(state, cluster)
            for constraint in constraints:
                dom = cluster.labels.ids(constraint.topology_key)
                size = cluster.labels.count(constraint.topology_key)
                eligible = _eligible(constraint, has_keys, masks)
                counts = matching_counts(constraint, pod, cluster)
                domains = dom[eligible]
                present = np.bincount(domains, minlength=size + 1) > 0
                per_domain = np.bincount(domains, weights=counts[eligible], minlength=size + 1).astype(np.int64)
                domain_count = int(present.sum())
                lowest = int(per_domain[present].min()) if domain_count else MAX_INT32
                if domain_count < constraint.min_domains:
                    lowest = 0
                has = dom >= 0
                missing |= passed & ~has
                passed &= has
                own = 1 if selector_matches(constraint.selector, pod.labels) else 0
                skew = per_domain[np.where(has, dom, 0)] + own - lowest
                passed &= skew <= constraint.max_skew
        result = _Filtered(mark, passed, missing)
        state.data[_FILTER] = result
        return result

    def filter(self, state: CycleState, cluster: ClusterState) -> BoolArray:
        return self._filtered(state, cluster).passed

    def reasons(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> Counter[str]:
        missing = int((failed & self._filtered(state, cluster).missing_label).sum())
        out: Counter[str] = Counter()
        if missing:
            out[REASON_MISSING_LABEL] = missing
        if int(failed.sum()) > missing:
            out[REASON] = int(failed.sum()) - missing
        return out

    def unresolvable(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> BoolArray:
        return failed & self._filtered(state, cluster).missing_label

    # --- Score ---

    def skips_score(self, state: CycleState, cluster: ClusterState) -> bool:
        """PreScore's Skip: no ScheduleAnyway constraint (every node scores 0)."""
        return self._skips(state.pod, "ScheduleAnyway")

    def raw_scores(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> tuple[IntArray, BoolArray]:
        """PreScore + Score: each node's rounded score, and the nodes ignored (missing a topology key)."""
        pod = state.pod
        constraints = self.constraints(pod, "ScheduleAnyway")
        ignored = np.zeros(len(nodes), dtype=bool)
        if not constraints:
            return np.zeros(len(nodes), dtype=np.int64), ignored
        require_all = bool(pod.placement.spread) or not self.system_defaulted
        has_keys = _all_keys(constraints, cluster) if require_all else np.ones(len(cluster), dtype=bool)
        if require_all:
            ignored = ~has_keys[nodes]
        counted = nodes[~ignored]
        masks = _policy_masks(state, cluster)
        score = np.zeros(len(nodes), dtype=np.float64)
        for constraint in constraints:
            key = constraint.topology_key
            dom = cluster.labels.ids(key)
            counts = matching_counts(constraint, pod, cluster)
            if key == HOSTNAME_KEY:
                per_node = counts[nodes]
                size = int(counted.size)
            else:
                size_key = cluster.labels.count(key)
                values = np.where(dom >= 0, dom, size_key)  # a node without the key: the empty value
                scored = np.zeros(size_key + 1, dtype=bool)
                scored[values[counted]] = True
                size = int(scored.sum())
                eligible = _eligible(constraint, has_keys, masks)
                per_domain = np.bincount(values[eligible], weights=counts[eligible], minlength=size_key + 1)
                per_node = np.where(scored, per_domain, 0.0)[values[nodes]]
            weight = float(np.log(float(size + 2)))
            term = per_node * weight + float(constraint.max_skew - 1)
            score = score + np.where(dom[nodes] >= 0, term, 0.0)
        raw = _round(score)
        raw[ignored] = 0
        return raw, ignored

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        if self.skips_score(state, cluster):
            return np.zeros(len(nodes), dtype=np.int64)
        raw, ignored = self.raw_scores(state, cluster, nodes)
        return normalize(raw, ignored)


def normalize(raw: IntArray, ignored: BoolArray) -> IntArray:
    """NormalizeScore: fewer matching pods scores higher, `100·(max + min − s)/max`; ignored nodes score 0."""
    out = np.zeros(raw.shape, dtype=np.int64)
    valid = ~ignored
    if not valid.any():
        return out
    lowest, highest = int(raw[valid].min()), int(raw[valid].max())
    if highest == 0:
        out[valid] = MAX_NODE_SCORE
        return out
    out[valid] = MAX_NODE_SCORE * (highest + lowest - raw[valid]) // highest
    return out

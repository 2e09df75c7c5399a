"""TaintToleration: filter on untolerated NoSchedule/NoExecute taints, score on PreferNoSchedule ones.

Nodes share a handful of distinct taint sets, so each pod checks its tolerations once per set and the
result maps back to nodes through the state's `taint_set` ids.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from phalanx.api.objects import Taint
from phalanx.api.tolerations import first_untolerated
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import BoolArray, Code, CycleState, IntArray, default_normalize

REASON = "node(s) had untolerated taint(s)"


class TaintToleration:
    name = "TaintToleration"
    static = True
    node_static = True
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    def __init__(self) -> None:
        self._sets: object = None  # the cluster's taint sets when `_no_prefer` was worked out, and how many
        self._seen = 0
        self._no_prefer = False

    def _untolerated(self, state: CycleState, cluster: ClusterState) -> list[Taint | None]:
        tolerations = state.pod.placement.tolerations
        return [first_untolerated(taints, tolerations, harmless="PreferNoSchedule") for taints in cluster.taint_sets]

    def filter(self, state: CycleState, cluster: ClusterState) -> BoolArray:
        ok = np.array([t is None for t in self._untolerated(state, cluster)], dtype=bool)
        return ok[cluster.taint_set]

    def reasons(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> Counter[str]:
        # v1.37 names no taint in the reason (taint_toleration.go Filter: "node(s) had untolerated taint(s)").
        return Counter({REASON: int(failed.sum())}) if failed.any() else Counter()

    def skips_score(self, state: CycleState, cluster: ClusterState) -> bool:
        """No node has a PreferNoSchedule taint: every node scores MaxNodeScore, the same for all, which changes
        no choice; the cycle leaves the plugin out."""
        sets = cluster.taint_sets
        if sets is not self._sets or len(sets) != self._seen:  # the list only grows while it is the same list
            self._sets, self._seen = sets, len(sets)
            self._no_prefer = not any(t.effect == "PreferNoSchedule" for taints in sets for t in taints)
        return self._no_prefer

    def score(self, state: CycleState, cluster: ClusterState, nodes: IntArray) -> IntArray:
        prefer = [t for t in state.pod.placement.tolerations if t.effect in ("", "PreferNoSchedule")]
        per_set = np.array([
            sum(1 for taint in taints
                if taint.effect == "PreferNoSchedule" and not any(t.tolerates(taint) for t in prefer))
            for taints in cluster.taint_sets
        ], dtype=np.int64)
        return default_normalize(per_set[cluster.taint_set[nodes]], reverse=True)

"""TopologyPlacement's PlacementGenerate (topologyaware GeneratePlacements): one placement per value of a
PodGroup's (or a CompositePodGroup's) topology label, or only the domain its bound members are in."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from phalanx.cluster.state import ClusterState
from phalanx.scheduler.framework import BoolArray
from phalanx.scheduler.group_framework import Domain


class PlacementError(Exception):
    """The group's bound members give no single domain (kube-scheduler: an error status, SchedulerError)."""


def generate_placements(cluster: ClusterState, key: str, scheduled: Sequence[tuple[str, int]],
                        within: BoolArray | None = None) -> list[Domain]:
    """TopologyPlacement.GeneratePlacements: one Domain per value of node label `key`, by value; only the
    domain of the bound members `scheduled` ((pod key, node) pairs) when there are any. `within`: the
    parent placement's nodes (a CompositePodGroup's domain); a value with no node there is no placement."""
    ids = cluster.labels.ids(key)
    required: int | None = None
    for pod_key, node in scheduled:
        domain = int(ids[node])
        if domain < 0:
            raise PlacementError(f"cannot determine domain for already scheduled pods: no topology domain found "
                                 f"for pod {pod_key} (node {cluster.names[node]} has no label {key})")
        if required is not None and domain != required:
            raise PlacementError("cannot determine domain for already scheduled pods: more than 1 domain found "
                                 f"for pod group: {_value(cluster, key, ids, required)}, "
                                 f"{_value(cluster, key, ids, domain)}")
        required = domain
    values, first = np.unique(ids, return_index=True)
    domains = [Domain(cluster.labels.labels(int(node))[key], ids == value)
               for value, node in zip(values.tolist(), first.tolist(), strict=True)
               if value >= 0 and (required is None or value == required)]
    if within is not None:
        domains = [Domain(d.name, d.nodes & within) for d in domains if bool((d.nodes & within).any())]
    domains.sort(key=lambda d: d.name)
    return domains


def _value(cluster: ClusterState, key: str, ids: npt.NDArray[np.int32], domain: int) -> str:
    """The label value of domain id `domain`."""
    return cluster.labels.labels(int(np.flatnonzero(ids == domain)[0]))[key]


"""What the report says of PodGroups that ask for a topology domain (schedulingConstraints.topology)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypedDict

from phalanx.api.objects import PodGroup


class TopologyReport(TypedDict):
    """The report's `topologyConstraints` block."""

    podGroups: int
    placementPhase: bool
    notes: list[str]


def constraint_report(groups: Iterable[PodGroup], *, placement_phase: bool, gang: bool) -> TopologyReport | None:
    """For the report: how many PodGroups ask for a topology domain, whether the profile honours that, and a
    line saying so when it does not (None when no group asks)."""
    keys = sorted(group.key for group in groups if group.topology_key is not None)
    if not keys:
        return None
    notes: list[str] = []
    if not placement_phase:
        few = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        why = "TopologyAwareWorkloadScheduling is off (alpha and off by default in v1.37.2; turn it on with " \
              "--feature-gates TopologyAwareWorkloadScheduling=true)" if gang else \
              "GenericWorkload is off, so pods are scheduled one at a time"
        notes.append(f"schedulingConstraints.topology of {len(keys)} PodGroup(s) ({few}) has no effect: {why}")
    return {"podGroups": len(keys), "placementPhase": placement_phase, "notes": notes}

"""A pending member's shape: what decides where it fits. Members of one shape fail the same filters on the same
snapshot, so the PodGroup cycle and DynamicResources' PodGroupPostFilter try each shape once."""

from __future__ import annotations

from phalanx.api.objects import Placement, Pod

MemberShape = tuple[tuple[tuple[str, int], ...], Placement, tuple[object, ...]]


def member_shape(pod: Pod) -> MemberShape:
    """What decides where a pod fits: requests, placement, and the claims it names (template or shared)."""
    claims = tuple((c.claim_name, c.template_name) for c in pod.resource_claims)
    return tuple(sorted(pod.requests.items())), pod.placement, claims

"""The PodGroup part of DynamicResources.PodGroupPostFilter (DRAWorkloadResourceClaims): after a failed cycle
of a PodGroup none of whose pods is bound or assumed, one of the group's claims is deallocated or loses the
PodGroup's reservation (`group_post_filter`); the preemption dry run of that same cycle still sees it as it was
(`replay_post_filter`). Both change the DeviceState they are given, journaled as any claim change."""

from __future__ import annotations

from collections.abc import Sequence

from phalanx.api.objects import PodGroup
from phalanx.cluster.devices import ClaimState, DeviceState, group_claim_name


def group_post_filter(devices: DeviceState, group: PodGroup, unavailable: Sequence[str]) -> str | None:
    """The PodGroup part of DynamicResources.PodGroupPostFilter after a failed cycle of a PodGroup none of
    whose pods is bound or assumed (`deallocatePodGroupClaims`, dynamicresources.go); one claim at most, as
    upstream returns after the first change. `unavailable`: the group's allocated claims that some node where
    the members' Filter ran cannot use (the Filter's `unavailableClaims`), in order. The first of them that is
    reserved for nobody or for this PodGroup alone is deallocated (its `reservedFor` cleared). Otherwise the
    first claim of the group's `spec.resourceClaims` that is allocated and reserved for the PodGroup loses that
    reservation and stays allocated (the strategic-merge patch; the resourceclaim controller deallocates only
    on a removal it makes itself). Returns what was done, or None."""
    for key in unavailable:
        state = devices.claims.get(key)
        if state is None or state.allocation is None or state.group != group.key:
            continue
        if not state.in_use or (state.group_reserved == group.key and not state.reserved_for):
            _post_filtered(devices, group.key, state)
            state.group_reserved = None
            state.reserved_for.clear()
            devices.deallocate(state)
            return f"deallocated ResourceClaim {key}"
    for entry in group.resource_claims:
        key = f"{group.namespace}/{group_claim_name(group, entry)}"
        state = devices.claims.get(key)
        if state is None or state.allocation is None or state.group != group.key:
            continue  # a claim from a template must be the PodGroup's own (`resourceclaim.IsForPodGroup`)
        if state.group_reserved == group.key:
            _post_filtered(devices, group.key, state)
            state.group_reserved = None
            return f"unreserved ResourceClaim {key} for PodGroup {group.key}"
    return None


def _post_filtered(devices: DeviceState, group_key: str, state: ClaimState) -> None:
    devices.remember(state)
    record = (state, state.allocation, state.reach, state.group_reserved)
    devices.post_filtered = (group_key, [record])


def replay_post_filter(devices: DeviceState, group_key: str) -> None:
    """Inside a preemption dry run's trial: put back what the PodGroup's PostFilter changed in this same cycle.
    Upstream writes the claim to the API server without updating the plugin's claim cache, so the preemption
    that runs next (DefaultPreemption comes after DynamicResources) still sees it allocated and reserved."""
    if devices.post_filtered is None or devices.post_filtered[0] != group_key or not devices.cluster.journaling:
        return
    for state, allocation, reach, reserved in devices.post_filtered[1]:
        devices.remember(state)
        if state.allocation is None and allocation is not None:
            devices.hold(allocation, 1)
            state.allocation, state.reach = allocation, reach
            devices.version += 1
        state.group_reserved = reserved

"""The PodGroup part of DynamicResources.PodGroupPostFilter (DRAWorkloadResourceClaims): after a failed cycle
of a PodGroup none of whose pods is bound or assumed, the group cycle (`phalanx.scheduler.gang`) runs
`pod_group_post_filter`, which finds the group's claims some node cannot use and has one of them deallocated or
lose the PodGroup's reservation (`group_post_filter`); the preemption dry run of that same cycle still sees it
as it was (`replay_post_filter`). Both change the DeviceState they are given, journaled as any claim change."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from phalanx.api.objects import Pod, PodGroup
from phalanx.cluster.devices import ClaimState, DeviceState, device_state, group_claim_name
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.framework import SkippingFilterPlugin
from phalanx.scheduler.member_shape import MemberShape, member_shape
from phalanx.scheduler.plugins.dra.dynamic_resources import DynamicResources


def pod_group_post_filter(cycle: PodCycle, group: PodGroup, pending: Sequence[Pod]) -> str | None:
    """DynamicResources.PodGroupPostFilter after a failed cycle of a PodGroup that is no tree's and not placed by
    the topology search (upstream skips both; here both run inside trials, never reaching this). With
    DRAWorkloadResourceClaims on and no member bound or assumed (`ScheduledPodsCount`), the group's claims are
    cleaned up one at a time (`group_post_filter`): an allocated claim of the group is unavailable
    when some node where a pending member's DynamicResources Filter ran (every earlier filter passed) cannot use
    it. The members' own claims (the pod-level part, `deallocateOrDeletePodClaims`) are left alone."""
    plugin = next((f for f in cycle.filters if isinstance(f, DynamicResources)), None)
    if plugin is None or not cycle.profile.workload_claims or not group.resource_claims or not pending:
        return None
    cluster = cycle.cluster
    devices = device_state(cluster)
    if group.key not in devices.groups or any(pod.group_key == group.key for pod in cluster.pods.values()):
        return None
    unavailable: list[str] = []
    seen: set[MemberShape] = set()  # members of one shape pass the same earlier filters
    for pod in pending:
        claims = [found for ref in pod.resource_claims
                  if (found := devices.claims.get(devices.claim_key(pod, ref))) is not None
                  and found.group == group.key and found.allocation is not None and found.key not in unavailable]
        shape = member_shape(pod)
        if not claims or shape in seen:
            continue
        seen.add(shape)
        state = cycle.cycle_state(pod)
        ran = np.ones(len(cluster), dtype=bool)
        for other in cycle.filters:
            if other is plugin:
                break
            if not (isinstance(other, SkippingFilterPlugin) and other.skips(state, cluster)):
                ran &= other.filter(state, cluster)
        unavailable.extend(claim.key for claim in claims if bool((ran & ~devices.usable_nodes(claim)).any()))
    return group_post_filter(devices, group, unavailable)



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

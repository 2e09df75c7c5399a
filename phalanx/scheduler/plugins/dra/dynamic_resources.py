"""DynamicResources: the Filter and Reserve of DRA device claims (kube-scheduler's DynamicResources plugin).

Filter: a pod without claims passes everywhere at once. Otherwise a node passes when every claim of the
pod is either allocated already and usable there (its devices are on or reachable from the node, and it
is not being evicted for a NoExecute taint) or can be allocated there now (`DeviceAllocator.feasible`).
Why a node fails is counted once per node: `resourceclaim not available on the node` (a claim allocated
elsewhere, or being deallocated), else `cannot allocate all claims` (untolerated device taints included,
as v1.37 words it).

Preemption, as v1.37.2 does it: failures are UnschedulableAndUnresolvable (`statusUnschedulable`), so a
node the plugin rejects is never a preemption candidate, and in a dry run a victim lifted off its node keeps
its devices (`DeviceState.keep`): `PreFilter` builds the allocator from the claim tracker, not the snapshot,
and `PreFilterExtensions` is nil, so `SelectVictimsOnNode` and the PodGroup dry run
(`PodGroupEvaluator.selectVictimsOnDomain`) free no device. A node that failed an earlier filter (e.g.
`Insufficient cpu`) and has no devices for the pod is therefore no candidate either (the dry run's Filter
pass fails here). Devices come free only when a victim is gone (Unreserve).

Phalanx extension, off by default and in every built-in profile: `preemptForDevices: true` makes a node
short of free devices resolvable and lets a dry run free the devices of the victims it removes (a claim
another pod still reserves stays allocated, as the resourceclaim controller keeps it), so a pod or gang
short of devices preempts lower-priority holders; reprieve puts exactly the same devices back.

Reserve allocates the devices (the same per-node search that decides feasibility, first fitting devices
in slice order) and reserves every claim for the pod; Unreserve releases the reservation and
deallocates a claim once no pod uses it. PodGroupPostFilter (DRAWorkloadResourceClaims): after a failed
PodGroup cycle with no member bound, one of the group's claims is deallocated or loses the PodGroup's
reservation (`post_filter.pod_group_post_filter`, called by the group cycle).

Args: `extendedResources` maps extended resource names to device classes (KEP-5004), e.g.
`{nvidia.com/gpu: gpu.example.com}`, in addition to the classes' own `extendedResourceName`;
`preemptForDevices` as above.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import numpy as np

from phalanx.api.objects import Pod
from phalanx.cluster.devices import device_state
from phalanx.cluster.state import ClusterState
from phalanx.errors import InputError
from phalanx.scheduler.framework import BoolArray, Code, CycleState
from phalanx.scheduler.plugins.dra.device_allocation import device_allocator

NAME = "DynamicResources"
CANNOT_ALLOCATE = "cannot allocate all claims"
NOT_AVAILABLE = "resourceclaim not available on the node"


def extended_resources(args: Mapping[str, Any] | None) -> dict[str, str]:
    """The `extendedResources` argument: extended resource name -> DeviceClass name."""
    raw = (args or {}).get("extendedResources") or {}
    if not isinstance(raw, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        raise InputError("must map extended resource names to DeviceClass names",
                         field=f"pluginConfig[{NAME}].args.extendedResources")
    return dict(raw)


def preempt_for_devices(args: Mapping[str, Any] | None) -> bool:
    """The `preemptForDevices` argument (a Phalanx extension; kube-scheduler v1.37.2 has none)."""
    raw = (args or {}).get("preemptForDevices", False)
    if not isinstance(raw, bool):
        raise InputError("must be true or false", field=f"pluginConfig[{NAME}].args.preemptForDevices")
    return raw


class DynamicResources:
    name = NAME
    static = False
    node_static = False
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        self.extended = extended_resources(args)
        self.frees_devices = preempt_for_devices(args)
        if self.frees_devices:  # only claims allocated out of reach stay unresolvable (`unresolvable`)
            self.code = Code.UNSCHEDULABLE
        self._everywhere: BoolArray = np.ones(0, dtype=bool)

    # --- Filter ---

    def filter(self, state: CycleState, cluster: ClusterState) -> BoolArray:
        if not state.pod.resource_claims:
            if self._everywhere.shape[0] != len(cluster):
                self._everywhere = np.ones(len(cluster), dtype=bool)
                self._everywhere.flags.writeable = False
            return self._everywhere
        return device_allocator(cluster).feasible(state.pod)

    def reasons(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> Counter[str]:
        out: Counter[str] = Counter()
        if not state.pod.resource_claims or not failed.any():
            return out
        devices = device_state(cluster)
        claims = devices.pod_claims(state.pod)
        usable = np.ones(len(cluster), dtype=bool)
        for claim in claims:
            if claim.allocation is not None:
                usable &= devices.usable_nodes(claim)
        unavailable = failed & ~usable
        if unavailable.any():
            out[NOT_AVAILABLE] += int(unavailable.sum())
        # An untolerated device taint makes a device unallocatable like any other reason: v1.37 reports
        # these nodes as `cannot allocate all claims` too (checked against the real kube-scheduler).
        blocked = int((failed & usable).sum())
        if blocked:
            out[CANNOT_ALLOCATE] += blocked
        return out

    def unresolvable(self, state: CycleState, cluster: ClusterState, failed: BoolArray) -> BoolArray:
        """With `preemptForDevices`: the failed nodes where no eviction helps, those that cannot reach an
        allocated claim of the pod (every failed node otherwise: `code` says so)."""
        if not state.pod.resource_claims or not failed.any():
            return np.zeros_like(failed)
        devices = device_state(cluster)
        usable = np.ones(len(cluster), dtype=bool)
        for claim in devices.pod_claims(state.pod):
            if claim.allocation is not None:
                usable &= devices.usable_nodes(claim)
        return failed & ~usable

    # --- Reserve ---

    def reserve(self, state: CycleState, cluster: ClusterState, node: int) -> None:
        if state.pod.resource_claims:
            found = device_allocator(cluster).choose(state.pod, node)
            if found is not None:  # the Filter ran the same search on this node: found unless the state moved
                device_state(cluster).reserve(state.pod, node, found)

    def unreserve(self, pod: Pod, cluster: ClusterState, node: int) -> None:
        if pod.resource_claims:
            device_state(cluster).unreserve(pod)

    def held(self, pod: Pod, cluster: ClusterState) -> object:
        """What a pod lifted off its node by a preemption dry run holds (`PodCycle.lift`). As v1.37.2, the pod's
        claims keep their devices through the dry run (`DeviceState.keep`: the Unreserve that follows leaves
        them); with `preemptForDevices` the dry run may `DeviceState.release` them, and `restore` then takes
        the same devices back."""
        if not pod.resource_claims:
            return {}
        devices = device_state(cluster)
        devices.keep(pod)
        return devices.holding(pod)

    def restore(self, pod: Pod, cluster: ClusterState, node: int, held: object) -> bool:
        if not pod.resource_claims or not isinstance(held, dict):
            return True
        return device_state(cluster).restore(pod, node, held)

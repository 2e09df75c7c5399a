"""DynamicResources: the Filter and Reserve of DRA device claims (kube-scheduler's DynamicResources plugin).

Filter: a pod without claims passes everywhere at once. Otherwise a node passes when every claim of the
pod is either allocated already and usable there (its devices are on or reachable from the node, and it
is not being evicted for a NoExecute taint) or can be allocated there now (`DeviceAllocator.feasible`).
Why a node fails is counted once per node: `resourceclaim not available on the node` (a claim allocated
elsewhere, or being deallocated), else `cannot allocate all claims` (untolerated device taints included,
as v1.37 words it).

Failures are UnschedulableAndUnresolvable: preemption does not free devices in Phalanx, so evicting
pods for a pod short of devices is not attempted.

Reserve allocates the devices (the same per-node search that decides feasibility, first fitting devices
in slice order) and reserves every claim for the pod; Unreserve releases the reservation and
deallocates a claim once no pod uses it. Args: `extendedResources` maps extended resource names to
device classes (KEP-5004), e.g. `{nvidia.com/gpu: gpu.example.com}`, in addition to the classes'
own `extendedResourceName`.
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
from phalanx.scheduler.plugins.device_allocation import device_allocator

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


class DynamicResources:
    name = NAME
    static = False
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        self.extended = extended_resources(args)
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
        return device_state(cluster).holding(pod) if pod.resource_claims else {}

    def restore(self, pod: Pod, cluster: ClusterState, node: int, held: object) -> bool:
        if not pod.resource_claims or not isinstance(held, dict):
            return True
        return device_state(cluster).restore(pod, node, held)

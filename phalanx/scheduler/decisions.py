"""The decision port: what the Scheduler tells its driver to do, and all a driver reads of a round.

`Scheduler.schedule` returns a list of `Decision`s; the simulator (phalanx/sim/simulation.py) and the live
driver (phalanx/live/driver.py) each carry every one out and change none. The union is closed: a driver
dispatches with `match` and one `case` per kind, ending in `case _: assert_never(decision)`, so that mypy
names every driver a new kind is missing from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from phalanx.api.objects import Pod, PodGroup

PreemptorKind = Literal["pod", "podgroup", "compositepodgroup"]  # kube-scheduler's EntityKeyType values


@dataclass(frozen=True, slots=True)
class Bind:
    """Bind the pod to the node. `claims` are the pod's ResourceClaims (`namespace/name`) with the
    `status.allocation` the driver writes before binding (DRA's PreBind); the claims it only reserves
    (allocated already, shared) carry the allocation they have."""

    pod: Pod
    node: str
    claims: tuple[tuple[str, dict[str, object]], ...] = ()


@dataclass(frozen=True, slots=True)
class Unschedulable:
    """The pod's attempt failed: PodScheduled=False with `reason` Unschedulable (no node fits), or
    SchedulerError (the cycle itself failed: a plugin's error, an exception; retried after backoff)."""

    pod: Pod
    message: str
    reason: Literal["Unschedulable", "SchedulerError"] = "Unschedulable"


@dataclass(frozen=True, slots=True)
class Evict:
    """Evict a victim (graceful deletion) so that `preemptor` fits: a pod, a PodGroup or a CompositePodGroup
    (`kind`, as kube-scheduler's preemptor EntityKeyType names them)."""

    pod: Pod
    preemptor: str
    node: str
    message: str
    kind: PreemptorKind = "pod"


@dataclass(frozen=True, slots=True)
class Nominate:
    """Set the preemptor's status.nominatedNodeName: where it expects to land once its victims are gone
    (an empty node clears it: its preemption found no candidate, or its group was rejected)."""

    pod: Pod
    node: str


@dataclass(frozen=True, slots=True)
class Preemption:
    """One preemption decision (a PostFilter or PodGroupPostFilter that chose victims)."""

    preemptor: str
    group: bool
    victims: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GroupCondition:
    """A PodGroup status condition: `PodGroupInitiallyScheduled` True/`Scheduled`, or False with reason
    `Unschedulable` or `SchedulerError` (the group failed validation). Never False once it was True."""

    group: PodGroup
    type: str
    status: bool
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class DeviceTaintEviction:
    """Evict a pod (graceful deletion) whose claim's device has a NoExecute taint the claim does not tolerate
    (KEP-5055's eviction controller); the claim is deallocated once its last pod is gone."""

    pod: Pod
    node: str
    claim: str
    rule: str | None
    message: str


Decision = Bind | Unschedulable | GroupCondition | Evict | Nominate | Preemption | DeviceTaintEviction

"""The device-taint eviction controller (KEP-5055, kube-controller-manager's `devicetainteviction`): the pods
using a claim must go once an allocated device has a NoExecute taint the claim does not tolerate, at once or
after the claim's `tolerationSeconds`. It reads the DeviceState and marks a claim it reports as evicting; each
round of the Scheduler (and each new DeviceTaintRule) runs `evict`, whose decisions the driver carries out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from phalanx.api.dra import DeviceTaint
from phalanx.api.objects import Pod
from phalanx.cluster.devices import ClaimState, DeviceState
from phalanx.scheduler.decisions import DeviceTaintEviction
from phalanx.scheduler.running import RunningPods


@dataclass(frozen=True, slots=True)
class TaintEviction:
    """Pods using `claim` must go: an allocated device has a NoExecute taint the claim does not tolerate."""

    claim: str
    pods: tuple[str, ...]
    device: str
    taint: DeviceTaint
    rule: str | None
    tolerated_for: float | None = None  # tolerationSeconds that ran out, if the claim tolerated it a while


def _due(devices: DeviceState, state: ClaimState) -> tuple[float, int, DeviceTaint, float | None] | None:
    """When the claim's pods must go (the earliest untolerated NoExecute taint on its devices)."""
    best: tuple[float, int, DeviceTaint, float | None] | None = None
    for choice in state.allocation or ():
        for taint in devices.taints(choice.device):
            if taint.effect != "NoExecute":
                continue
            matching = [t for t in choice.tolerations if t.tolerates(taint)]
            if matching and any(t.toleration_seconds is None for t in matching):
                continue
            seconds = max((t.toleration_seconds or 0.0 for t in matching), default=0.0)
            when = (taint.time_added or 0.0) + max(seconds, 0.0)
            if best is None or when < best[0]:
                best = (when, choice.device, taint, seconds if matching else None)
    return best


def evictions(devices: DeviceState, now: float) -> list[TaintEviction]:
    """Claims whose pods must be evicted by `now` (marked so that they are reported once)."""
    out: list[TaintEviction] = []
    for key in sorted(devices.claims):
        state = devices.claims[key]
        if state.allocation is None or state.evicting is not None or not state.reserved_for:
            continue
        due = _due(devices, state)
        if due is None or due[0] > now:
            continue
        _, device, taint, seconds = due
        slice_ = devices.slice_of[device]
        name = f"{slice_.driver}/{slice_.pool}/{devices.devices[device].name}"
        state.evicting = f"device {name} has taint {taint.describe()}"
        devices.version += 1
        out.append(TaintEviction(key, tuple(sorted(state.reserved_for)), name, taint, devices.rule_of.get(taint),
                                 seconds))
    return out


def next_eviction(devices: DeviceState, now: float) -> float | None:
    """The next time a tolerated-for-a-while NoExecute taint runs out for some claim."""
    times = [due[0] for state in devices.claims.values()
             if state.allocation is not None and state.evicting is None and state.reserved_for
             and (due := _due(devices, state)) is not None and due[0] > now]
    return min(times, default=None)


def evict(devices: DeviceState, pods: Mapping[str, Pod], running: RunningPods, now: float
          ) -> list[DeviceTaintEviction]:
    """The pods to evict by `now`, each marked terminating, as decisions whose message names the rule (or slice
    taint), device, taint and claim."""
    out: list[DeviceTaintEviction] = []
    for eviction in evictions(devices, now):
        who = f"DeviceTaintRule {eviction.rule}" if eviction.rule else "a ResourceSlice device taint"
        for key in eviction.pods:
            pod = pods.get(key)
            node = running.node_of.get(key)
            if pod is None or node is None or key in running.terminating:
                continue
            running.mark_terminating(key, who)
            tolerated = "not tolerated" if eviction.tolerated_for is None else \
                f"tolerated for {eviction.tolerated_for:g}s only"
            message = (f"Evicted by {who}: device {eviction.device} has taint {eviction.taint.describe()}, "
                       f"{tolerated} by claim {eviction.claim}")
            out.append(DeviceTaintEviction(pod, devices.cluster.names[node], eviction.claim, eviction.rule, message))
    return out

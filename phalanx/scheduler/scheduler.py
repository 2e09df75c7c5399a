"""The Scheduler: informer-style inputs in, decisions out. It never knows which driver runs it.

A driver (the simulator's clock or a live API server) reports nodes, pods and PodGroups as they appear
and go, and calls `schedule(now)`; the Scheduler runs pod or PodGroup cycles for whatever the queue holds
and returns decisions (Bind, Unschedulable, GroupCondition) for the driver to carry out. Bound pods are
assumed in the Scheduler's ClusterState at once, as kube-scheduler's cache does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from phalanx.api.objects import Node, Pod, PodGroup
from phalanx.cluster.state import ClusterState
from phalanx.scheduler.cycle import PodCycle
from phalanx.scheduler.gang import schedule_group
from phalanx.scheduler.profiles import Profile
from phalanx.scheduler.queue import SchedulingQueue

POD = "pod:"
GROUP = "group:"


@dataclass(frozen=True, slots=True)
class Bind:
    pod: Pod
    node: str


@dataclass(frozen=True, slots=True)
class Unschedulable:
    pod: Pod
    message: str


@dataclass(frozen=True, slots=True)
class GroupCondition:
    """A PodGroup status condition: `PodGroupInitiallyScheduled` True/`Scheduled` or False/`Unschedulable`."""

    group: PodGroup
    type: str
    status: bool
    reason: str
    message: str


Decision = Bind | Unschedulable | GroupCondition


class Scheduler:
    def __init__(self, profile: Profile, nodes: Sequence[Node] = (), seed: int = 0) -> None:
        self.profile = profile
        self.cluster = ClusterState(nodes)
        self.cycle = PodCycle(profile, self.cluster, seed)
        self.queue = SchedulingQueue()
        self.pods: dict[str, Pod] = {}
        self.groups: dict[str, PodGroup] = {}
        self.members: dict[str, set[str]] = defaultdict(set)
        self.messages: dict[str, str] = {}
        self.initially_scheduled: set[str] = set()
        self._out: list[Decision] = []

    # --- events from the driver ------------------------------------------------------------------------

    def add_nodes(self, nodes: Sequence[Node], now: float) -> None:
        self.cluster.add_nodes(nodes)
        self.queue.move_all(now)

    def add_pod(self, pod: Pod, now: float, node: str | None = None) -> None:
        """A new pod: pending (queued, or gated behind its PodGroup) or already bound to `node`."""
        self.pods[pod.key] = pod
        group_key = pod.group_key if self.profile.gang else None
        if group_key is not None:
            self.members[group_key].add(pod.key)
        if node is not None:
            self.cycle.reserve(pod, self.cluster.index[node])
            return
        if group_key is None:
            self.queue.add(POD + pod.key, pod.priority, pod.arrival)
        else:
            self._pre_enqueue(group_key, now)

    def delete_pod(self, key: str, now: float) -> None:
        """A pod finished or was deleted: free its node and let waiting entries retry."""
        pod = self.pods.pop(key, None)
        if pod is None:
            return
        self.messages.pop(key, None)
        group_key = pod.group_key if self.profile.gang else None
        if group_key is not None:
            self.members[group_key].discard(key)
        if key in self.cluster.bound:
            self.cycle.unreserve(key, pod)
            self.queue.move_all(now)
        else:
            self.queue.done(POD + key)

    def add_pod_group(self, group: PodGroup, now: float) -> None:
        """A PodGroup appears or changes (e.g. its minCount): its members pass PreEnqueue again."""
        self.groups[group.key] = group
        if self.profile.gang:
            self._pre_enqueue(group.key, now)
            self.queue.move(GROUP + group.key, now)

    # --- PreEnqueue -----------------------------------------------------------------------------------

    def _pending_members(self, group_key: str) -> list[Pod]:
        pods = [self.pods[k] for k in self.members[group_key] if k not in self.cluster.bound]
        pods.sort(key=lambda p: (-p.priority, p.arrival, p.source.index if p.source else 0, p.key))
        return pods

    def _running_members(self, group_key: str) -> int:
        return sum(1 for k in self.members[group_key] if k in self.cluster.bound)

    def _gate_message(self, group_key: str) -> str | None:
        group = self.groups.get(group_key)
        if group is None:
            return f"waiting for PodGroup {group_key} to be created"
        have = len(self.members[group_key])
        if group.is_gang and have < group.min_count:
            return (f"waiting for pod group {group_key}: {have} of the {group.min_count} pods (minCount) "
                    "exist")
        return None

    def _group_priority(self, group_key: str, pending: Sequence[Pod]) -> int:
        group = self.groups[group_key]
        if group.priority is not None:
            return group.priority
        return max((p.priority for p in pending), default=0)

    def _pre_enqueue(self, group_key: str, now: float) -> None:
        pending = self._pending_members(group_key)
        gate = self._gate_message(group_key)
        if gate is not None:
            for pod in pending:
                self.messages[pod.key] = gate
            self.messages[GROUP + group_key] = gate
            self.queue.done(GROUP + group_key)
            return
        if pending:
            group = self.groups[group_key]
            self.queue.add(GROUP + group_key, self._group_priority(group_key, pending),
                           min(group.arrival, *(p.arrival for p in pending)))

    # --- cycles ---------------------------------------------------------------------------------------

    def schedule(self, now: float) -> list[Decision]:
        """Run cycles for every active entry at time `now`; return what the driver must carry out."""
        self._out = []
        while (key := self.queue.pop(now)) is not None:
            if key.startswith(GROUP):
                self._group_cycle(key[len(GROUP):], key, now)
            else:
                self._pod_cycle(key[len(POD):], key, now)
        return self._out

    def next_retry(self) -> float | None:
        return self.queue.next_backoff()

    def _pod_cycle(self, pod_key: str, entry: str, now: float) -> None:
        pod = self.pods.get(pod_key)
        if pod is None or pod_key in self.cluster.bound:
            self.queue.done(entry)
            return
        result = self.cycle.schedule(pod)
        if result.node is None:
            message = result.message or "no node fits"
            self.messages[pod_key] = message
            self.queue.failed(entry, now)
            self._out.append(Unschedulable(pod, message))
            return
        self.cycle.reserve(pod, result.node)
        self.messages.pop(pod_key, None)
        self.queue.done(entry)
        self._out.append(Bind(pod, self.cluster.names[result.node]))

    def _group_cycle(self, group_key: str, entry: str, now: float) -> None:
        group = self.groups.get(group_key)
        pending = self._pending_members(group_key)
        if group is None or not pending or self._gate_message(group_key) is not None:
            self.queue.done(entry)
            if group is not None:
                self._pre_enqueue(group_key, now)
            return
        outcome = schedule_group(self.cycle, group, pending, self._running_members(group_key))
        for pod, node in outcome.placed:
            self.messages.pop(pod.key, None)
            self._out.append(Bind(pod, self.cluster.names[node]))
        for pod_key, why in outcome.failures.items():
            message = outcome.message if not outcome.success and outcome.message else why
            self.messages[pod_key] = message
            self._out.append(Unschedulable(self.pods[pod_key], message))
        if outcome.success:
            self.messages.pop(GROUP + group_key, None)
            if outcome.failures:
                self.messages[GROUP + group_key] = outcome.message or ""
                self.queue.failed(entry, now)
            else:
                self.queue.done(entry)
            if group_key not in self.initially_scheduled:
                self.initially_scheduled.add(group_key)
                self._out.append(GroupCondition(group, "PodGroupInitiallyScheduled", True, "Scheduled",
                                                f"{len(outcome.placed)} pod(s) bound"))
            return
        message = outcome.message or "pod group could not be placed"
        self.messages[GROUP + group_key] = message
        for pod in pending:  # members that fitted were rolled back: they wait for the same reason
            if pod.key not in outcome.failures:
                self.messages[pod.key] = message
                self._out.append(Unschedulable(pod, message))
        self.queue.failed(entry, now)
        if group_key not in self.initially_scheduled:
            self._out.append(GroupCondition(group, "PodGroupInitiallyScheduled", False, "Unschedulable", message))

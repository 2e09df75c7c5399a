"""Failed pod attempts answered again without the Filter, when nothing they read has changed.

When room for one pod frees up on a full node, kube-scheduler v1.37.2 retries every pod NodeResourcesFit
rejected (isSchedulableAfterAssignedPodDelete queues them all, and SchedulerPopFromBackoffQ pops them while
activeQ is empty): the first takes the room, and every other fails again, one attempt each. Phalanx keeps every
one of those attempts (each counts toward its pod's backoff and restamps its place in the queue, as upstream),
but within one round an attempt whose pod is the same, for every filter and for preemption, as one that already
failed at the very same books gets that failure's result without running the Filter (and its preemption, which
would find no candidate either). So a full node with a thousand pods waiting costs one Filter pass per change,
not one per waiting pod.

The same, for every filter: the Placement, requests, labels, namespace, priority, preemption policy and GPU
request, and no nomination and no DRA claims of its own (a claim's allocation is per pod). The books: the
cluster's resource arrays and labels (ClusterState.generation, .version), the running, terminating and
nominated pods (RunningPods.version), the devices (DeviceState.version). Anything else a Filter reads changes
only through events, between rounds, and the memo is cleared at each round.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Protocol

from phalanx.api.objects import Pod
from phalanx.scheduler.cycle import Result
from phalanx.scheduler.profiles import Profile
from phalanx.scheduler.running import RunningPods


class SchedulerView(Protocol):
    """What FailedPods reads of the Scheduler: its profile and who is nominated (such a pod is never answered
    from another's failure)."""

    @property
    def profile(self) -> Profile: ...
    @property
    def nominated(self) -> Mapping[str, str]: ...
    @property
    def running(self) -> RunningPods: ...


class FailedPods:
    """One round's failed pod attempts, by what the pod is to the filters, with the books they failed at."""

    def __init__(self, scheduler: SchedulerView) -> None:
        self.s = scheduler
        self._known: dict[Hashable, tuple[tuple[int, ...], Result]] = {}
        self._signatures: dict[str, tuple[Pod, Hashable | None]] = {}  # pod key -> (the pod, its signature)
        self.filtered = 0  # failed attempts whose Filter ran
        self.reused = 0  # failed attempts answered from an equivalent pod's

    def clear(self) -> None:
        self._known.clear()

    def forget(self, pod_key: str) -> None:
        self._signatures.pop(pod_key, None)

    def _signature(self, pod: Pod) -> Hashable | None:
        """What the pod is to every filter and to preemption; None for a pod never answered from another's."""
        s = self.s
        if pod.key in s.nominated or s.running.nominated_node(pod.key) is not None:
            return None
        known = self._signatures.get(pod.key)
        if known is not None and known[0] is pod:
            return known[1]
        signature: Hashable | None = None
        if not pod.resource_claims and not (s.profile.gang and pod.group_key is not None):
            # A bare pod's priority is its own (a PodGroup's overrides only a member's, never answered here).
            signature = (pod.placement, tuple(sorted(pod.requests.items())), frozenset(pod.labels.items()),
                         pod.namespace, pod.priority, pod.preemption_policy, pod.gpu, pod.scheduler_name)
        self._signatures[pod.key] = (pod, signature)
        return signature

    def like(self, pod: Pod, books: tuple[int, ...]) -> Result | None:
        """The failure of an equivalent pod at these books, if one failed this round."""
        signature = self._signature(pod)
        known = self._known.get(signature) if signature is not None else None
        if known is None or known[0] != books:
            return None
        self.reused += 1
        return known[1]

    def remember(self, pod: Pod, books: tuple[int, ...], result: Result) -> None:
        """A failure whose Filter ran (and whose preemption found no candidate, or was not tried)."""
        self.filtered += 1
        signature = self._signature(pod)
        if signature is not None:
            self._known[signature] = (books, result)

"""The pod cycle as the Scheduler runs it for a pod's queue entry: the Filter and Score pass (cycle.py's
PodCycle, or an equivalent pod's failure at the same books), then the assumed Bind, or the pod waits with the
Filter's reasons and, under a profile with KAI's consolidation, moves running pods to make room, else preempts
if it may (PostFilter)."""

from __future__ import annotations

from phalanx.api.objects import Pod
from phalanx.scheduler.consolidation import consolidate
from phalanx.scheduler.cycle import Result
from phalanx.scheduler.decisions import Unschedulable
from phalanx.scheduler.handle import Handle


class PodCycles:
    def __init__(self, scheduler: Handle) -> None:
        self.s = scheduler

    def run(self, pod_key: str, entry: str, now: float) -> None:
        pod = self.s.pods.get(pod_key)
        if pod is None or pod_key in self.s.cluster.bound:
            self.s.queue.done(entry)
            return
        like = self.s.failures.like(pod, self._books())
        result = like or self.s.cycle.schedule(pod)
        if result.node is None:
            self._failed(pod, entry, result, now, known=like is not None)
            return
        self.s.bound(pod, result.node, now, reserve=True)
        self.s.messages.pop(pod_key, None)
        self.s.queue.done(entry)
        self.s.assumed[pod_key] = ""
        self.s.out.append(self.s.bind_decision(pod, result.node))

    def _failed(self, pod: Pod, entry: str, result: Result, now: float, *, known: bool) -> None:
        """A pod fits nowhere: it waits with the Filter's reasons, and preempts if it may. `known`: the result is
        an equivalent pod's at these very books (`FailedPods`), so preemption would find no candidate either
        (only its random start is drawn, as the run would)."""
        pod_key = pod.key
        message = result.message or "no node fits"
        self.s.messages[pod_key] = message
        self.s.rejected(entry, {pod_key: result.rejectors})
        self.s.queue.failed(entry, now)
        self.s.out.append(Unschedulable(pod, message))
        priority = self.s.priority_of(pod)
        if self.s.profile.consolidation and not known:
            moves = consolidate(self.s, pod, priority)
            if moves is not None:
                self.s.preempt(pod_key, False, moves, f"pod {pod_key}", reason="Consolidated for")
                return
        if self.s.profile.preemption and self.s.preemptor.eligible(pod, priority, self.s.nominated.get(pod_key),
                                                                   result.unresolvable):
            if known:
                self.s.preemptor.offset(result.unresolvable)
                outcome = None
            else:
                outcome = self.s.preemptor.for_pod(pod, priority, result.unresolvable)
            if outcome is not None:
                self.s.preempt(pod_key, False, outcome, f"pod {pod_key}")
                return
            self.s.clear_nominations([pod])  # preemption.go Preempt: no candidate clears its nominatedNodeName
        if not known:
            self.s.failures.remember(pod, self._books(), result)

    def _books(self) -> tuple[int, ...]:
        """Changes every time something a pod's Filter or preemption reads changes: resources, labels and
        taints, running, terminating and nominated pods, devices."""
        devices = self.s.devices.version if self.s.devices is not None else 0
        return self.s.cluster.generation, self.s.cluster.version, self.s.running.version, devices
